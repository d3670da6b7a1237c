"""Shared by the ``ddp stats cluster`` oracles (tests/stats/test_cluster.py, test_hunt12_cluster.py)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence


def tools_py_clusters(order: Sequence[str], p: Mapping[tuple[str, str], float], alpha: float) -> list[list[str]]:
    """WMT24 humeval/tools.py ``get_clusters`` as a loop: ``order`` the systems best first, ``p[(a, b)]`` the
    p-value of each ordered pair; a system joins the cluster above while a pair reaching it is not significant."""
    labels, until, last = [], -1, 1
    for i in range(len(order)):
        if until <= i:
            until = -1
        for j in range(i + 1, len(order)):
            if p[(order[i], order[j])] > alpha:
                until = max(j, until)
        labels.append(last)
        if until == -1:
            last += 1
    return [[s for s, lab in zip(order, labels) if lab == c] for c in sorted(set(labels))]
