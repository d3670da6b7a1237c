"""``ddp stats alpha`` says when what it measures is thinner than the table (issue 19): units with fewer
than two ratings (they do not count), and document-level units whose coders averaged different segments.
Expected counts come from plain loops over the rows."""
from __future__ import annotations

import json
import random
from collections import defaultdict

import polars as pl
import pytest

from ddpcore.cli.main import main
from ddpcore.stats import reliability_matrix


def table(move: bool) -> pl.DataFrame:
    rng = random.Random(1)
    rows = []
    for doc, nseg in (("doc0", 1), ("doc1", 3)):
        for seg in range(nseg):
            for system in ("sys0", "sys1", "sys2"):
                base = rng.uniform(20, 80)
                for ann in ("ann0", "ann1"):
                    rows.append(dict(document_id=doc, segment_id=seg, system=system, annotator=ann, condition="DOC",
                                     score=round(base + rng.gauss(0, 3), 1)))
    if move:  # one rating of ann0 filed under another (existing) document: an id typo on one side
        for r in rows:
            if (r["document_id"], r["segment_id"], r["system"], r["annotator"]) == ("doc1", 2, "sys0", "ann0"):
                r["document_id"] = "doc0"
    return pl.DataFrame(rows)


def loop_counts(rows: list[dict]) -> tuple[int, int, int, int]:
    """(units with < 2 ratings, segment units, document units with differing segment sets, document units)."""
    seg_units: dict[tuple, set] = defaultdict(set)
    doc_sets: dict[tuple, dict] = defaultdict(lambda: defaultdict(set))
    for r in rows:
        seg_units[(r["document_id"], r["segment_id"], r["system"])].add(r["annotator"])
        doc_sets[(r["document_id"], r["system"])][r["annotator"]].add(r["segment_id"])
    thin = sum(1 for coders in seg_units.values() if len(coders) < 2)
    differ = sum(1 for per in doc_sets.values() if len({frozenset(v) for v in per.values()}) > 1)
    return thin, len(seg_units), differ, len(doc_sets)


@pytest.mark.parametrize("move", [False, True])
def test_warnings_count_what_the_loops_count(tmp_path, capsys, move) -> None:  # type: ignore[no-untyped-def]
    df = table(move)
    thin, n_seg, differ, n_doc = loop_counts(df.to_dicts())
    assert (thin > 0, differ > 0) == (move, move)
    path = tmp_path / "t.csv"
    df.write_csv(path)
    assert main(["stats", "alpha", str(path), "--in", "DOC"]) == 0
    out, err = capsys.readouterr()
    res = json.loads(out)
    if move:
        want = f"{thin} of {n_seg} units have fewer than two ratings"
        assert want in err and any(want in w for w in res["warnings"])
    else:
        assert "warning" not in err and "warnings" not in res
    rd = reliability_matrix(df, unit=["document_id", "system"], coder="annotator", score="score")
    if move:
        assert rd.warnings and rd.warnings[0].startswith(f"{differ} of {n_doc} units were rated on different segments")
    else:
        assert rd.warnings == ()
