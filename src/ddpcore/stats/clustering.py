"""System clustering: rank MT systems and group them into indistinguishable clusters.

:func:`cluster_systems` orders systems by mean score (best first, ties by name) and runs one
of four pairwise procedures. Every pair is tested in one vectorised pass over flat arrays
(no Python loop over system pairs, segments or resamples on the main path).

``method="bootstrap"`` (the counterfactual-ESA paper, Appendix B.2)
    One seeded index matrix of ``n_boot`` (default 1,000) resamples of the units (documents,
    or (document, segment) pairs with ``unit="segment"``) drawn with replacement and shared
    by all systems (a unit drawn k times contributes all its rows k times). For each
    resample every system's mean over its rows in the resample is recomputed; for a pair
    (i, j) with replicate differences ``delta_b = mean_i - mean_j`` the two-sided p-value is
    ``p = min(1, 2 * min(#{delta_b <= 0}, #{delta_b >= 0}) / B)`` over the B replicates where
    both systems have rows, i.e. the smallest level at which the percentile interval of the
    difference excludes 0. A pair differs when ``p < alpha``. Rank ranges follow the WMT
    count rule and clusters the WMT25 cut (below), with "significantly better" read as
    ``p < alpha`` for the system with the higher mean.

``method="wmt25"`` (wmt-conference/wmt25-general-mt ``humeval/05-compute_clusters.py``)
    Paired differences ``x_i - x_j`` over the observations both systems have; one-sided
    Wilcoxon signed-rank test (``alternative="greater"``, scipy's defaults: zeros dropped,
    no continuity correction, scipy's exact/permutation/normal choice), ``p[i, j] < alpha``
    means i is better than j. Rank range (WMT count rule): best = 1 + the number of systems
    listed above that are significantly better, worst = S - the number listed below that are
    significantly worse. (The WMT25 script walks from the system's position instead; the two
    agree when significance is transitive.) A cluster ends after position c when every
    system up to c has worst rank <= c and every later system has best rank > c, so no range
    crosses a cluster.

``method="wmt24"`` (wmt-conference/wmt24-news-systems ``humeval/tools.py``)
    Two-sided Wilcoxon on paired differences; with ``by_domain=True`` one test per domain
    combined by Stouffer's method ``p = 1 - Phi(sum_k Phi^-1(1 - p_k) / sqrt(K))`` over the
    K domains in which the pair has data, and the system mean is the mean of its per-domain
    means (WMT24's macro average). Below ``p_k = 1e-6`` the upper-tail functions replace ``1 - p``
    (``-Phi^-1(p_k)``; ``Phi(-z)`` for a combined p below 1e-6), and a ``p_k`` that underflowed to 0
    takes its z from ``log p_k``: finite where tools.py's ``Phi^-1(1 - p_k)`` is +inf
    (:func:`_stouffer_z`). Wins/losses: a pair with ``p < alpha`` is a win for the
    system with the higher mean; rank range ``(losses + 1, S - wins)``. Clusters: a cut
    after position c unless some pair (a <= c < b) has ``p > alpha`` (tools.py
    ``get_clusters``).

``method="permutation"`` (google-research/mt-metrics-eval ``PermutationSigDiff`` + ``AssignRanks``)
    Paired sign-flip permutation test of the mean difference: each of ``n_boot`` resamples
    flips the sign of every paired difference with probability 1/2 (one seeded sign matrix
    shared by all pairs); ``p[i, j] = #{perm mean >= observed mean of x_i - x_j} / n_boot``
    (one-sided, no +1, no early stopping; sums within ``100 * eps * sum|d|`` of the observed
    one count as equal, scipy's tolerance rule). Signs are drawn as
    ``default_rng(seed).integers(0, 2, size=(64, n_keys), dtype=int8)`` blocks (the last block
    truncated), keys in sorted order. Greedy ranks in mean order: the rank increases at
    position k when some system since the start of the current rank has ``p[m, k] <= alpha``.
    Clusters are the groups of equal rank; a system's rank range is its cluster's span.

Pairing (``pair_annotator``): observations are rows sharing (document_id, segment_id,
annotator), or (document_id, segment_id) without an annotator column or with
``pair_annotator=False``; repeated rows of one system under one key are averaged. The
default (``None``) pairs on the annotator when the column exists, except for
``method="wmt24"``, which (like WMT24) pairs on segments. In campaigns where each annotator
sees one system per document (ESA WMT23, WMT24) annotator pairs across systems barely
exist: use ``pair_annotator=False`` there. A pair of systems without any shared
observation gets ``p = 1`` (no evidence of a difference); ``n_pairs`` reports the counts.

Thin pairs and rank conflicts: for the paired methods ``min_pairs`` (default
:data:`MIN_PAIRS` = 100) is a floor of paired observations per comparison; the comparisons
below it are listed in ``ClusterResult.pair_floor``, counted in the signature and announced in
``warnings``. Where significance is not transitive a rank range cannot follow the listing
(mean) order; ``rank_conflicts`` names each such pair and a witness system (see
:func:`_rank_conflicts`), also announced in ``warnings``.

Wilcoxon p-values equal ``scipy.stats.wilcoxon(d, alternative=...)`` (scipy 1.17 rules,
checked in tests); a sample with no non-zero difference gets ``p = 1`` (scipy 1.17 gives 1.0 for
several zeros, raises for a single one, and older releases gave NaN).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from ..signature import AsDict
from .. import schema
from ..errors import DDPDataError, DDPUsageError
from . import budget as _budget
from ._table import ROLES as ROLE_COLUMNS
from ._table import (check_key_types, check_single_condition, factorize, group_sums, is_real, json_safe,
                     load_long_table, signature, similar_names_warning, table_source)
from .columns import TableColumns, check_columns, key_missing
from .options import ResampleOptions, check_options

if TYPE_CHECKING:
    import polars as pl

Method = Literal["bootstrap", "wmt25", "wmt24", "permutation"]
Alternative = Literal["two-sided", "greater", "less"]

#: default floor of paired observations per system comparison (``min_pairs``, ``--min-pairs``)
MIN_PAIRS = 100

#: resamples / permutations of the resampling methods when ``options.n_boot`` is None
DEFAULT_N_BOOT = 1000

_COUNT_RULE = ("best = 1 + systems above significantly better, worst = S - systems below significantly worse; "
               "cluster cut where no range crosses")

#: rows of the sign matrix drawn per block by the permutation test; fixed so that a seed
#: gives the same answer whatever the problem size
_PERM_BLOCK = 64


@dataclasses.dataclass(frozen=True)
class ClusterResult:
    """Result of :func:`cluster_systems`.

    ``order`` lists the systems best first; ``p_values[i, j]`` (shape S x S, in ``order``)
    is the p-value of "order[i] is better than order[j]" for the one-sided methods
    (wmt25, permutation) and the symmetric two-sided p-value otherwise; the diagonal is NaN.
    ``n_pairs[i, j]`` counts the paired observations behind a Wilcoxon/permutation test
    (for the bootstrap, which compares unpaired means: the replicates in which both systems have rows;
    :meth:`to_dict` then writes them as ``n_replicates`` and ``n_pairs`` as ``None``).
    """

    method: str
    order: tuple[str, ...]
    means: dict[str, float]
    p_values: npt.NDArray[np.float64]
    n_pairs: npt.NDArray[np.int64]
    rank_ranges: dict[str, tuple[int, int]]
    clusters: tuple[tuple[str, ...], ...]
    alpha: float
    n_rows: int
    signature: dict[str, Any]
    #: paired methods: the pairs-per-comparison floor and the comparisons below it (None: bootstrap)
    pair_floor: dict[str, Any] | None = None
    #: where the rank ranges cannot follow the listing order (non-transitive significance), and why
    rank_conflicts: tuple[dict[str, Any], ...] = ()
    #: one line per fallback/thin sample that changes what is measured (the CLI prints them on stderr)
    warnings: tuple[str, ...] = ()

    def cluster_of(self, system: str) -> int:
        """1-based index of the cluster holding ``system``."""
        for i, members in enumerate(self.clusters, 1):
            if system in members:
                return i
        raise KeyError(system)

    def significant(self, a: str, b: str) -> bool:
        """Whether the test says ``a`` and ``b`` differ (``p < alpha`` in either direction)."""
        i, j = self.order.index(a), self.order.index(b)
        return bool(min(self.p_values[i, j], self.p_values[j, i]) < self.alpha)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict; matrices as nested lists in ``order`` order (NaN -> null)."""
        return json_safe({
            "method": self.method,
            "order": list(self.order),
            "means": self.means,
            "rank_ranges": {k: list(v) for k, v in self.rank_ranges.items()},
            "clusters": [list(c) for c in self.clusters],
            "n_clusters": len(self.clusters),
            "p_values": self.p_values,
            "n_pairs": None if self.method == "bootstrap" else self.n_pairs,
            **({"n_replicates": self.n_pairs} if self.method == "bootstrap" else {}),
            "alpha": self.alpha,
            "n_rows": self.n_rows,
            "pair_floor": self.pair_floor,
            "rank_conflicts": list(self.rank_conflicts),
            "warnings": list(self.warnings),
            "signature": self.signature,
        })


# --------------------------------------------------------------------------- Wilcoxon kernel


_PMF_CACHE: dict[int, npt.NDArray[np.float64]] = {}


def _wilcoxon_pmf(n: int) -> npt.NDArray[np.float64]:
    """Exact null pmf of the signed-rank statistic T+ for n untied non-zero differences.

    Recurrence over k = 1..n: T+_k = T+_{k-1} + k * Bernoulli(1/2), kept as probabilities.
    """
    pmf = _PMF_CACHE.get(n)
    if pmf is None:
        pmf = np.ones(1)
        for k in range(1, n + 1):
            prev = pmf
            pmf = np.zeros(k * (k + 1) // 2 + 1)
            pmf[: len(prev)] = prev * 0.5
            pmf[-len(prev):] += prev * 0.5
        _PMF_CACHE[n] = pmf
    return pmf


def _exact_sf(n: int, k: int) -> float:
    pmf = _wilcoxon_pmf(n)
    if k <= n * (n + 1) / 4:
        return float(pmf[k:].sum())
    return float(1.0 - pmf[:k].sum())


def _exact_cdf(n: int, k: int) -> float:
    pmf = _wilcoxon_pmf(n)
    if k <= n * (n + 1) / 4:
        return float(pmf[: k + 1].sum())
    return float(1.0 - pmf[k + 1:].sum())


def _kernel() -> Any:
    from .._native import load

    return load("stats_cluster")


def _empty_stats(n: int) -> dict[str, np.ndarray]:
    return {"r_plus": np.empty(n), "tie_term": np.empty(n), "n_obs": np.empty(n, dtype=np.int64),
            "n_zero": np.empty(n, dtype=np.int64), "has_ties": np.empty(n, dtype=np.uint8)}


def _signed_rank_rows(d: npt.NDArray[np.float64]) -> dict[str, np.ndarray]:
    """Signed-rank statistics of each row of ``d`` (tests x observations, NaN = absent); native kernel."""
    st = _empty_stats(d.shape[0])
    _kernel().signed_rank_rows(np.ascontiguousarray(d, dtype=np.float64), st["r_plus"], st["tie_term"],
                               st["n_obs"], st["n_zero"], st["has_ties"])
    return st


def _signed_rank_pairs(x: npt.NDArray[np.float64], ii: npt.NDArray[np.int64],
                       jj: npt.NDArray[np.int64]) -> dict[str, np.ndarray]:
    """Signed-rank statistics of ``x[:, i] - x[:, j]`` for every pair (x: keys x systems, NaN = absent)."""
    st = _empty_stats(len(ii))
    _kernel().signed_rank_pairs(np.ascontiguousarray(x, dtype=np.float64), np.ascontiguousarray(ii, dtype=np.int64),
                                np.ascontiguousarray(jj, dtype=np.int64), st["r_plus"], st["tie_term"],
                                st["n_obs"], st["n_zero"], st["has_ties"])
    return st


def _permutation_p(d: npt.NDArray[np.float64], alternative: str) -> float:
    """scipy's exact sign-flip test of T+ over all 2**n sign patterns, n = len(d) <= 13 (no NaN)."""
    from scipy.stats import rankdata

    n = len(d)
    nonzero = d != 0
    ranks = np.zeros(n)
    ranks[nonzero] = rankdata(np.abs(d[nonzero]))  # average ranks of |d|, zeros dropped
    bits = ((np.arange(2 ** n)[:, None] >> np.arange(n)[None, :]) & 1).astype(np.float64)
    null = bits @ ranks
    observed = float(ranks[d > 0].sum())
    gamma = abs(np.finfo(np.float64).eps * 100 * observed)
    p_less = np.count_nonzero(null <= observed + gamma) / null.size
    p_greater = np.count_nonzero(null >= observed - gamma) / null.size
    if alternative == "greater":
        return float(p_greater)
    if alternative == "less":
        return float(p_less)
    return float(min(1.0, 2.0 * min(p_less, p_greater)))


def _wilcoxon_z(st: dict[str, np.ndarray]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """(count of non-zero differences, z of the normal approximation: tie-corrected, no continuity correction)."""
    count = (st["n_obs"] - st["n_zero"]).astype(np.float64)
    mn = count * (count + 1.0) * 0.25
    se = count * (count + 1.0) * (2.0 * count + 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.sqrt((se - st["tie_term"] / 2) / 24)
        z = (st["r_plus"] - mn) / se
    return count, z


#: below this p, ``1 - p`` has lost p's digits (all of them below 2**-53, where WMT24's ``Phi^-1(1 - p)`` is +inf):
#: the Stouffer combination uses the upper-tail functions there (``-ndtri(p)`` = scipy's ``norm.isf(p)``, and
#: ``ndtr(-z)`` for the combined p), and WMT24's tools.py arithmetic (bit for bit) above
_STOUFFER_TAIL = 1e-6


def _stouffer_z(p: npt.NDArray[np.float64], st: dict[str, np.ndarray]) -> npt.NDArray[np.float64]:
    """Phi^-1(1 - p) of two-sided Wilcoxon p-values, finite for every p in (0, 1]: WMT24's ``ndtri(1 - p)`` for
    p >= _STOUFFER_TAIL, ``-ndtri(p)`` below; a p that underflowed to 0 (normal approximation, |z| > 38.4) takes
    its z from its logarithm, ``log 2 + log Phi(-|z|)`` (``ndtri_exp``), so it stays finite and accurate."""
    from scipy import special

    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore"):
        z = special.ndtri(1.0 - p)
    tail = p < _STOUFFER_TAIL
    z[tail] = -special.ndtri(p[tail])
    zero = p <= 0.0
    if zero.any():
        _, zstat = _wilcoxon_z(st)
        z[zero] = -special.ndtri_exp(np.log(2.0) + special.log_ndtr(-np.abs(zstat[zero])))
    return z


def _wilcoxon_p(st: dict[str, np.ndarray], alternatives: tuple[str, ...],
                diffs: Callable[[int], npt.NDArray[np.float64]]) -> list[np.ndarray]:
    """p-values from signed-rank statistics with scipy 1.17's ``method="auto"`` rules:
    n_obs > 50 -> normal approximation (tie-corrected, no continuity correction); n_obs <= 50
    without ties or zeros -> exact null distribution; n_obs <= 13 with ties/zeros -> exact
    sign-flip permutation; otherwise normal. ``diffs(i)`` returns test i's non-NaN differences
    (only called for the few permutation cases). No non-zero difference -> p = 1."""
    from scipy import special

    count, z = _wilcoxon_z(st)
    has_ties = st["has_ties"].astype(bool)
    exact = (st["n_obs"] <= 50) & ~has_ties & (st["n_zero"] == 0) & (count > 0)
    perm = (st["n_obs"] <= 13) & ~exact & (count > 0)
    perm_rows = {int(i): diffs(int(i)) for i in np.flatnonzero(perm)}
    out = []
    for alt in alternatives:
        if alt == "greater":
            p = special.ndtr(-z)
        elif alt == "less":
            p = special.ndtr(z)
        else:
            p = 2 * special.ndtr(-np.abs(z))
        p = np.array(p, dtype=np.float64)
        for i in np.flatnonzero(exact):  # n <= 50 untied: exact null (small, cached per n)
            n, r = int(count[i]), float(st["r_plus"][i])
            if alt == "greater":
                p[i] = _exact_sf(n, int(np.floor(r)))
            elif alt == "less":
                p[i] = _exact_cdf(n, int(np.ceil(r)))
            else:
                p[i] = min(1.0, max(0.0, 2 * min(_exact_sf(n, int(np.floor(r))), _exact_cdf(n, int(np.ceil(r))))))
        for i, d in perm_rows.items():
            p[i] = _permutation_p(d, alt)
        p[count == 0] = 1.0
        out.append(p)
    return out


def wilcoxon_signed_rank(
    d: npt.ArrayLike, alternative: Alternative = "two-sided"
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Wilcoxon signed-rank test of each row of ``d`` at once.

    Parameters
    ----------
    d : array, shape (n_tests, n_obs) or (n_obs,)
        Paired differences; NaN marks an absent observation (rows may have different lengths).
    alternative : "two-sided" | "greater" | "less"

    Returns
    -------
    (r_plus, p_value), each shape (n_tests,) (scalars arrays for 1-d input). ``r_plus`` is the
    sum of the average ranks of the positive differences. p-values follow
    ``scipy.stats.wilcoxon(row[~isnan(row)], alternative=...)`` with its defaults
    (``zero_method="wilcox"``, ``correction=False``, ``method="auto"``); a row without non-zero
    differences gets p = 1 (scipy: NaN).
    """
    if alternative not in ("two-sided", "greater", "less"):
        raise DDPUsageError(f"alternative must be two-sided, greater or less, got {alternative!r}", code="D351")
    arr = np.asarray(d, dtype=np.float64)
    one = arr.ndim == 1
    arr = np.atleast_2d(arr)
    if arr.ndim != 2:
        raise DDPDataError(f"d must be 1-d or 2-d, got shape {arr.shape}", code="D351")
    if np.isinf(arr).any():
        raise DDPDataError("d contains infinite differences; scores must be finite", code="D353")
    st = _signed_rank_rows(arr)
    (p_out,) = _wilcoxon_p(st, (alternative,), lambda i: arr[i][~np.isnan(arr[i])])
    r_out = st["r_plus"]
    if one:
        return r_out[0], p_out[0]
    return r_out, p_out


# --------------------------------------------------------------------------- table preparation


@dataclasses.dataclass
class _Prepared:
    systems: list[str]  # sorted names; code = index
    sys_code: npt.NDArray[np.int64]  # per row
    score: npt.NDArray[np.float64]  # per row
    unit_code: npt.NDArray[np.int64]  # per row: resampling unit (bootstrap)
    n_units: int
    pair_code: npt.NDArray[np.int64]  # per row: pairing key
    n_keys: int
    domain_code: npt.NDArray[np.int64] | None  # per row
    domains: list[str]
    n_rows: int
    pair_annotator: bool


def _prepare(df: pl.DataFrame, *, unit: str, pair_annotator: bool | None, pair_default: bool,
             by_domain: bool, source: str = "<table>", domain_col: str = schema.DOMAIN,
             available: Sequence[str] | None = None) -> _Prepared:
    """Codes of a long table (canonical names, n_rows rows): per-row system, unit, pairing-key
    and domain codes, shape (n_rows,) each. ``pair_annotator=None`` pairs on the annotator when
    the table has one and ``pair_default`` (the method's default) is true. ``available``: the table's
    columns as it names them, for the message of a missing domain column (default: ``df``'s)."""
    if pair_annotator is None:
        pair_annotator = schema.ANNOTATOR in df.columns and pair_default
    if pair_annotator and schema.ANNOTATOR not in df.columns:
        raise DDPDataError("pairing by annotator was requested but the table has no annotator column "
                           "(--annotator-col NAME, or --no-pair-annotator)", code="D352")
    keys = [schema.DOCUMENT_ID, schema.SEGMENT_ID] + ([schema.ANNOTATOR] if pair_annotator else [])
    unit_keys = [schema.DOCUMENT_ID] if unit == "document" else [schema.DOCUMENT_ID, schema.SEGMENT_ID]
    # dense codes in sorted key order (the bootstrap's unit numbering), so row order does not matter
    sys_code, sys_keys = factorize(df, [schema.SYSTEM])
    sys_names = [str(v) for v in sys_keys[schema.SYSTEM].to_list()]
    if len(sys_names) < 2:
        raise DDPDataError(f"clustering needs at least 2 systems, the table has {len(sys_names)} "
                           f"({', '.join(sys_names)}); check the system column (--system-col)", code="D354")
    unit_code, unit_table = factorize(df, unit_keys)
    pair_code, pair_table = factorize(df, keys)
    work = df
    domain_code = None
    domains: list[str] = []
    if by_domain:
        if schema.DOMAIN not in work.columns:
            raise DDPDataError(f"{source}: by_domain needs a domain column, and there is no column '{domain_col}' "
                               "(--domain-col NAME); available columns: " + ", ".join(available or df.columns),
                               code="D352")
        missing = key_missing(work[schema.DOMAIN])  # null, or NaN in a float column (as pandas hands it over)
        if missing is not None:
            # named by its ids: the rows here are one condition's, without omitted scores, so no input row number
            first = work.row(int(missing.arg_true()[0]), named=True)
            ids = ", ".join(f"{c}={first[c]!r}" for c in (schema.DOCUMENT_ID, schema.SEGMENT_ID, schema.SYSTEM))
            raise DDPDataError(f"{source}, column '{domain_col}': {int(missing.sum())} row(s) with a null domain "
                               f"(first: {ids}); every row needs a domain with --by-domain", code="D352")
        check_key_types(work, [schema.DOMAIN], source, "--domain-col")
        _check_one_domain_per_segment(work, source)
        dcode, dkeys = factorize(work, [schema.DOMAIN])
        domains = [str(v) for v in dkeys[schema.DOMAIN].to_list()]
        domain_code = np.asarray(dcode, dtype=np.int64)
    return _Prepared(
        systems=sys_names,
        sys_code=np.asarray(sys_code, dtype=np.int64),
        score=work[schema.SCORE].to_numpy().astype(np.float64),
        unit_code=np.asarray(unit_code, dtype=np.int64),
        n_units=unit_table.height,
        pair_code=np.asarray(pair_code, dtype=np.int64),
        n_keys=pair_table.height,
        domain_code=domain_code,
        domains=domains,
        n_rows=df.height,
        pair_annotator=bool(pair_annotator),
    )


def _check_one_domain_per_segment(df: pl.DataFrame, source: str) -> None:
    """D352 when the rows of one segment (document, segment) carry different domains: ``by_domain`` tests
    each paired observation within its segment's domain, and a label that differs between systems (or
    annotators) would put the systems' scores of one segment into different domains. Vectorised
    (one group-by); the message names the first such segment, its domains and the systems of each."""
    import polars as pl

    seg = [schema.DOCUMENT_ID, schema.SEGMENT_ID]
    per = df.group_by(seg).agg(pl.col(schema.DOMAIN).n_unique().alias("__n"))
    bad = per.filter(pl.col("__n") > 1)
    if bad.height == 0:
        return
    first = bad.sort(seg).row(0, named=True)
    rows = df.filter((pl.col(schema.DOCUMENT_ID) == first[schema.DOCUMENT_ID])
                     & (pl.col(schema.SEGMENT_ID) == first[schema.SEGMENT_ID]))
    by_dom = (rows.group_by(pl.col(schema.DOMAIN).cast(pl.String))
              .agg(pl.col(schema.SYSTEM).cast(pl.String).unique().sort()).sort(schema.DOMAIN))
    desc = "; ".join(f"domain {d!r} for system(s) {', '.join(s)}" for d, s in by_dom.iter_rows())
    raise DDPDataError(
        f"{source}: {bad.height} segment(s) carry different domains on different rows (first: "
        f"document_id={first[schema.DOCUMENT_ID]!r}, segment_id={first[schema.SEGMENT_ID]!r}: {desc}); "
        "--by-domain tests every segment within one domain, so each segment needs the same domain on all its rows: "
        "fix the domain column (--domain-col selects it)", code="D352")


def _system_means(p: _Prepared, macro_domains: bool) -> npt.NDArray[np.float64]:
    s = len(p.systems)
    if macro_domains and p.domain_code is not None:
        nd = len(p.domains)
        cell = p.sys_code * nd + p.domain_code
        sums = group_sums(cell, p.score, s * nd).reshape(s, nd)  # row-order independent: ties are ties
        cnt = np.bincount(cell, minlength=s * nd).reshape(s, nd)
        with np.errstate(invalid="ignore"):
            per_domain = sums / cnt
        return np.nanmean(per_domain, axis=1)
    sums = group_sums(p.sys_code, p.score, s)
    cnt = np.bincount(p.sys_code, minlength=s)
    return sums / cnt


def _paired_matrix(p: _Prepared) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64] | None]:
    """(n_keys x S) matrix of mean scores per pairing key and system (NaN = absent), and the
    domain of each key (the first row's domain) when domains are in use."""
    s = len(p.systems)
    cell = p.pair_code * s + p.sys_code
    sums = group_sums(cell, p.score, p.n_keys * s)
    cnt = np.bincount(cell, minlength=p.n_keys * s)
    with np.errstate(invalid="ignore", divide="ignore"):
        x = (sums / cnt).reshape(p.n_keys, s)
    key_domain = None
    if p.domain_code is not None:
        key_domain = np.full(p.n_keys, -1, dtype=np.int64)
        key_domain[p.pair_code[::-1]] = p.domain_code[::-1]  # first row wins
    return x, key_domain


def _order(means: npt.NDArray[np.float64], names: list[str]) -> npt.NDArray[np.int64]:
    # best first; ties broken by name (names are sorted, so by code)
    return np.lexsort((np.arange(len(names)), -means))


# --------------------------------------------------------------------------- pairwise tests


def _pairs(s: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    i, j = np.triu_indices(s, k=1)
    return i.astype(np.int64), j.astype(np.int64)


def _wilcoxon_matrix(x: npt.NDArray[np.float64], key_domain: npt.NDArray[np.int64] | None,
                     n_domains: int, two_sided: bool, stouffer: bool,
                     forced: list[tuple[int, int, int]] | None = None,
                     tiny: list[tuple[int, int, int, float]] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """p[i, j] for all ordered system pairs from the (keys x S) matrix ``x`` (codes order). With ``stouffer``
    and ``forced`` (a list): the pairs ``(i, j, g)`` whose combined p is 1 only because domain ``g`` has p = 1
    (``ndtri(0) = -inf``, as WMT24's tools.py) while another domain has p < 1 are appended to it; to ``tiny``
    the pairs ``(i, j, g, p)`` whose smallest domain p (domain g) is below 2**-53, where tools.py's z is +inf
    (see :func:`_stouffer_z`)."""
    from scipy import special

    s = x.shape[1]
    ii, jj = _pairs(s)
    p = np.full((s, s), np.nan)
    n = np.zeros((s, s), dtype=np.int64)
    n_tot = np.zeros(len(ii), dtype=np.int64)
    if stouffer:
        zsum = np.zeros(len(ii))
        kdom = np.zeros(len(ii))
        first_one = np.full(len(ii), -1)  # the first domain whose p is 1 (it forces the combination to 1)
        below_one = np.zeros(len(ii), dtype=bool)  # a domain with p < 1
        p_min, g_min = np.ones(len(ii)), np.full(len(ii), -1)  # the smallest domain p of each pair, and its domain
        for g in range(n_domains):  # one kernel call per domain (a handful), never per pair
            xs = np.ascontiguousarray(x[key_domain == g])
            st = _signed_rank_pairs(xs, ii, jj)
            (p2,) = _wilcoxon_p(st, ("two-sided",), lambda k: _pair_diffs(xs, ii[k], jj[k]))
            has = st["n_obs"] > 0
            zsum += np.where(has, _stouffer_z(p2, st), 0.0)  # finite but for p = 1 (-inf: forced to 1 below)
            lower = has & (p2 < p_min)
            p_min, g_min = np.where(lower, p2, p_min), np.where(lower, g, g_min)
            first_one = np.where(has & (p2 >= 1.0) & (first_one < 0), g, first_one)
            below_one |= has & (p2 < 1.0)
            kdom += has
            n_tot += st["n_obs"]
        if forced is not None:
            for k in np.flatnonzero((first_one >= 0) & below_one):  # the pairs concerned (a few), for the note
                forced.append((int(ii[k]), int(jj[k]), int(first_one[k])))
        if tiny is not None:
            for k in np.flatnonzero((first_one < 0) & (p_min < 2.0 ** -53)):
                tiny.append((int(ii[k]), int(jj[k]), int(g_min[k]), float(p_min[k])))
        # a domain with p = 1 (z = -inf) makes the combination 1, whatever the other domains show
        zsum = np.where(first_one >= 0, -np.inf, zsum)
        with np.errstate(invalid="ignore", divide="ignore"):
            zc = zsum / np.sqrt(kdom)
            comb = np.where(kdom > 0, 1.0 - special.ndtr(zc), 1.0)
            comb = np.where((kdom > 0) & (comb < _STOUFFER_TAIL), special.ndtr(-zc), comb)  # 1 - ndtr(z) loses a tiny p
        p[ii, jj] = p[jj, ii] = comb
    else:
        st = _signed_rank_pairs(x, ii, jj)
        n_tot = st["n_obs"]
        alts = ("two-sided",) if two_sided else ("greater", "less")
        ps = _wilcoxon_p(st, alts, lambda k: _pair_diffs(x, ii[k], jj[k]))
        if two_sided:
            p[ii, jj] = p[jj, ii] = ps[0]
        else:
            p[ii, jj], p[jj, ii] = ps
    n[ii, jj] = n[jj, ii] = n_tot
    return p, n


def _pair_diffs(x: npt.NDArray[np.float64], i: int, j: int) -> npt.NDArray[np.float64]:
    d = x[:, i] - x[:, j]
    return d[~np.isnan(d)]


def _permutation_matrix(x: npt.NDArray[np.float64], n_boot: int, seed: int,
                        progress: Any, budget: _budget.Budget, threads: int = 0) -> tuple[np.ndarray, np.ndarray]:
    s = x.shape[1]
    ii, jj = _pairs(s)
    d = x[:, ii] - x[:, jj]  # keys x pairs, NaN where a system is absent
    present = ~np.isnan(d)
    npair = present.sum(axis=0)
    d = np.where(present, d, 0.0)
    observed = d.sum(axis=0)  # sums; the mean's denominator is the same on both sides
    # permutation sums equal to the observed sum up to rounding count as ">=" (scipy's rule)
    gamma = 100 * np.finfo(np.float64).eps * np.abs(d).sum(axis=0)
    rng = np.random.default_rng(seed)
    kernel = _kernel()
    d = np.ascontiguousarray(d)
    ge = np.zeros(len(ii), dtype=np.int64)
    le = np.zeros(len(ii), dtype=np.int64)
    # draw the documented 64-row blocks, but hand the kernel ~16 MB of flips and at most ~32 MB
    # of permutation sums per call; the first chunk is small (~1e8 additions): it times the run
    n_keys, n_pairs = d.shape[0], max(len(ii), 1)
    chunk_blocks = max(1, min((1 << 24) // max(1, _PERM_BLOCK * n_keys), (1 << 22) // (_PERM_BLOCK * n_pairs)))
    pilot_blocks = max(1, min(chunk_blocks, (1 << 27) // max(1, _PERM_BLOCK * n_keys * n_pairs)))
    rows_max = chunk_blocks * _PERM_BLOCK
    budget.check_memory(n_boot, 0.0, fixed=4 * d.nbytes + rows_max * (n_keys + 3 * 8.0 * n_pairs))
    budget.start()
    done = 0
    while done < n_boot:
        blocks = []
        rows = 0
        limit = (pilot_blocks if done == 0 else chunk_blocks) * _PERM_BLOCK
        while rows < limit and done + rows < n_boot:
            take = min(_PERM_BLOCK, n_boot - done - rows)
            blocks.append(rng.integers(0, 2, size=(_PERM_BLOCK, d.shape[0]), dtype=np.int8)[:take])
            rows += take
        flips = np.ascontiguousarray(np.concatenate(blocks).view(np.uint8))
        perm = np.empty((rows, len(ii)))
        kernel.sign_flip_sums(flips, d, perm, threads)
        ge += (perm >= observed - gamma).sum(axis=0)
        le += (perm <= observed + gamma).sum(axis=0)
        done += rows
        if progress is not None:
            progress.update(rows)
        if done == rows:
            budget.check_time(done, n_boot)
    p = np.full((s, s), np.nan)
    n = np.zeros((s, s), dtype=np.int64)
    p[ii, jj] = np.where(npair > 0, ge / n_boot, 1.0)  # i better than j
    p[jj, ii] = np.where(npair > 0, le / n_boot, 1.0)  # j better than i: -perm >= -observed
    n[ii, jj] = n[jj, ii] = npair
    return p, n


def _bootstrap_matrix(pr: _Prepared, n_boot: int, seed: int, indices: npt.ArrayLike | None,
                      progress: Any, budget: _budget.Budget, threads: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided paired-bootstrap p for every pair from one shared set of unit resamples.

    The resamples are those of :func:`ddpcore.stats.bootstrap.resample_sums` (same seed and
    units -> the same draws as ``bootstrap_tau`` / ``bootstrap_system_means``), streamed in
    blocks: only per-pair counters are kept, so memory does not grow with ``n_boot``."""
    from .bootstrap import _block_bytes, _check_indices, iter_resample_sums

    s, u = len(pr.systems), pr.n_units
    cell = pr.unit_code * s + pr.sys_code
    values = np.empty((u, 2 * s))
    values[:, :s] = np.bincount(cell, weights=pr.score, minlength=u * s).reshape(u, s)
    values[:, s:] = np.bincount(cell, minlength=u * s).reshape(u, s)
    ii, jj = _pairs(s)
    sub = max(1, (1 << 22) // max(1, len(ii)))  # rows of (rows x pairs) differences at a time
    n_rep = _check_indices(indices, None, u).shape[0] if indices is not None else int(n_boot)
    budget.check_memory(n_rep, 0.0, fixed=3 * values.nbytes + _block_bytes(values.shape, n_rep, 24.0)
                        + 3 * 8.0 * sub * len(ii))
    le = np.zeros(len(ii), dtype=np.int64)
    ge = np.zeros(len(ii), dtype=np.int64)
    valid = np.zeros(len(ii), dtype=np.int64)
    for _, sums in iter_resample_sums(values, n_boot=None if indices is not None else n_boot, seed=seed,
                                      indices=indices, budget=budget, threads=threads):
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(sums[:, s:] > 0, sums[:, :s] / sums[:, s:], np.nan)  # block x S
        for b in range(0, means.shape[0], sub):  # bounded memory: (sub x pairs) differences
            delta = means[b: b + sub, ii] - means[b: b + sub, jj]
            ok = ~np.isnan(delta)
            le += (ok & (delta <= 0)).sum(axis=0)
            ge += (ok & (delta >= 0)).sum(axis=0)
            valid += ok.sum(axis=0)
        if progress is not None:
            progress.update(sums.shape[0])
    with np.errstate(invalid="ignore", divide="ignore"):
        p2 = np.where(valid > 0, np.minimum(1.0, 2.0 * np.minimum(le, ge) / valid), 1.0)
    p = np.full((s, s), np.nan)
    n = np.zeros((s, s), dtype=np.int64)
    p[ii, jj] = p[jj, ii] = p2
    n[ii, jj] = n[jj, ii] = valid
    return p, n


# --------------------------------------------------------------------------- ranks and clusters


def _ranges_wins_losses(p: np.ndarray, means: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(best, worst) per position from wins/losses; p and means in order."""
    s = len(means)
    sig = p < alpha
    np.fill_diagonal(sig, False)
    higher = means[:, None] > means[None, :]
    wins = (sig & higher).sum(axis=1)
    losses = (sig & ~higher).sum(axis=1)
    return losses + 1, s - wins


def _clusters_straddle(p: np.ndarray, alpha: float, strict_greater: bool) -> list[int]:
    """Cut positions c (cluster ends after c, 0-based) where every pair (a <= c < b) differs.

    ``strict_greater``: a pair joins when ``p > alpha`` (WMT24 get_clusters); otherwise when
    ``p >= alpha`` (i.e. not significant at ``p < alpha``)."""
    s = p.shape[0]
    joined = (p > alpha) if strict_greater else ~(p < alpha)
    np.fill_diagonal(joined, False)
    joined = np.triu(joined, k=1)
    # reach[a] = furthest b joined with a; cut after c if max_{a<=c} reach[a] <= c
    pos = np.arange(s)
    reach = np.where(joined, pos[None, :], -1).max(axis=1)
    reach = np.maximum(reach, pos)
    prefix = np.maximum.accumulate(reach)
    return [int(c) for c in range(s - 1) if prefix[c] <= c]


def _ranges_count(sig: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """WMT rank ranges from ``sig[k, i]`` (position k significantly better than position i):
    best = 1 + number of systems above that are significantly better, worst = S - number of
    systems below that are significantly worse (i.e. the number not significantly worse).

    Counting only systems above (below) keeps every system's own position inside its range;
    a lower-listed system that a one-sided test calls better is reported by
    :func:`_rank_conflicts` instead."""
    s = sig.shape[0]
    upper = np.triu(sig, k=1)  # [k, i]: k above i and significantly better
    return 1 + upper.sum(axis=0), s - upper.sum(axis=1)


def _cuts_from_ranges(best: np.ndarray, worst: np.ndarray) -> list[int]:
    """WMT25 ``does_cluster_end_here``: cluster ends after 0-based position c (c+1 systems
    above) when max worst of the first c+1 <= c+1 and min best of the rest > c+1."""
    s = len(best)
    pre = np.maximum.accumulate(worst)
    suf = np.minimum.accumulate(best[::-1])[::-1]
    return [c for c in range(s - 1) if pre[c] <= c + 1 and suf[c + 1] > c + 1]


def _rank_conflicts(names: list[str], best: np.ndarray, worst: np.ndarray, sig: np.ndarray,
                    n: np.ndarray, one_sided: bool, count: str = "pairs") -> list[dict[str, Any]]:
    """Where the rank ranges cannot follow the listing (mean) order, and why.

    ``order``: system a is listed above b but b has the better best or worst rank; the witness
    c is a system significantly better than a but not than b (best rank), or one that b beats
    significantly and a does not (worst rank): significance is not transitive, typically
    because each comparison rests on different (few) paired observations. ``inverted``: a
    one-sided test calls the lower-listed system b significantly better than a. Vectorised
    over the S x S x S witness cube (S = number of systems). ``count`` names what ``n`` counts
    ("pairs" of observations; "replicates" for the bootstrap)."""
    s = len(names)
    pos = np.arange(s)
    above = pos[:, None] < pos[None, :]  # [i, j]: i listed above j
    order_pairs = above & ((best[None, :] < best[:, None]) | (worst[None, :] < worst[:, None]))
    # best witness for (i, j): k above i, sig[k, i] and not sig[k, j]
    wb = (sig[:, :, None] & ~sig[:, None, :]) & (pos[:, None, None] < pos[None, :, None])  # [k, i, j]
    # worst witness for (i, j): k below j, sig[j, k] and not sig[i, k]
    ww = (sig.T[:, None, :] & ~sig.T[:, :, None]) & (pos[:, None, None] > pos[None, None, :])  # [k, i, j]
    out: list[dict[str, Any]] = []
    for i, j in zip(*np.nonzero(order_pairs)):  # the few conflicting pairs: output formatting only
        a, b = names[i], names[j]
        head = f"{a} (ranks {best[i]}-{worst[i]}) is listed above {b} (ranks {best[j]}-{worst[j]})"
        witness = None
        if best[j] < best[i] and wb[:, i, j].any():
            k = int(np.argmax(wb[:, i, j]))
            witness = names[k]
            why = (f"{witness} is significantly better than {a} (n = {n[k, i]} {count}) but not than {b} "
                   f"(n = {n[k, j]} {count})")
        elif ww[:, i, j].any():
            k = int(np.argmax(ww[:, i, j]))
            witness = names[k]
            why = (f"{b} is significantly better than {witness} (n = {n[j, k]} {count}) but {a} is not "
                   f"(n = {n[i, k]} {count})")
        else:  # e.g. tied means under a two-sided test
            why = "the significant differences of the two systems do not follow their mean order"
        out.append({"kind": "order", "above": a, "below": b, "witness": witness,
                    "reason": f"{head}: {why}; significance is not transitive here"})
    if one_sided:
        for i, j in zip(*np.nonzero(above & sig.T)):  # sig[j, i] with j below i
            a, b = names[i], names[j]
            out.append({"kind": "inverted", "above": a, "below": b, "witness": None,
                        "reason": f"{b} has the lower mean but the one-sided test calls it significantly better "
                                  f"than {a} (n = {n[j, i]} {count}); the ranges count only systems listed above "
                                  f"(below)"})
    # a range that misses the system's own position (wmt24 only: tools.py counts a significant difference between
    # equal means as a loss for both systems, and the listing breaks the tie by name)
    for k in np.flatnonzero((best > pos + 1) | (worst < pos + 1)):
        out.append({"kind": "position", "above": names[k], "below": None, "witness": None,
                    "reason": f"{names[k]} is listed at position {k + 1} but ranked {best[k]}-{worst[k]}: a system "
                              "with the same mean differs from it significantly, and the rule counts that pair as a "
                              "loss for both (WMT24 tools.py; the listing breaks ties in the mean by name)"})
    return out


def _pair_floor(names: list[str], n: np.ndarray, floor: int) -> dict[str, Any]:
    """Comparisons (upper triangle, in order) resting on fewer than ``floor`` paired observations."""
    s = len(names)
    ii, jj = _pairs(s)
    counts = n[ii, jj]
    thin = np.flatnonzero(counts < floor)
    return {
        "min_pairs": int(floor),
        "n_pairs_min": int(counts.min()) if counts.size else None,
        "n_pairs_max": int(counts.max()) if counts.size else None,
        "n_comparisons": int(counts.size),
        "n_below": int(thin.size),
        "below": [[names[ii[t]], names[jj[t]], int(counts[t])] for t in thin],
    }


def _greedy_ranks(p: np.ndarray, alpha: float) -> np.ndarray:
    """mt-metrics-eval ``AssignRanks`` over p in order (p[m, k]: m better than k)."""
    s = p.shape[0]
    ranks = np.zeros(s, dtype=np.int64)
    current, start = 1, 0
    for k in range(s):  # S steps (systems, not pairs); each step is a vector test
        if k > start and np.any(p[start:k, k] <= alpha):
            current += 1
            start = k
        ranks[k] = current
    return ranks


def _groups(order_names: list[str], cuts: list[int]) -> tuple[tuple[str, ...], ...]:
    out, prev = [], 0
    for c in [*cuts, len(order_names) - 1]:
        out.append(tuple(order_names[prev: c + 1]))
        prev = c + 1
    return tuple(g for g in out if g)


# --------------------------------------------------------------------------- per-method strategies


@dataclasses.dataclass(frozen=True)
class _Run:
    """Options of one :func:`cluster_systems` call that the strategies read."""

    n_boot: int
    seed: int
    indices: npt.ArrayLike | None
    by_domain: bool
    progress: Any  # tqdm bar or None
    budget: _budget.Budget
    threads: int = 0  # OpenMP threads of the resampling kernels (0 = their default)
    #: filled by the tests: pairs (system indices, codes order) whose Stouffer p was forced to 1 by one domain
    forced: list[tuple[int, int, str]] = dataclasses.field(default_factory=list)
    #: pairs (system indices, codes order) with a domain p below 2**-53 (tools.py's z is +inf there): (i, j, domain, p)
    tiny: list[tuple[int, int, str, float]] = dataclasses.field(default_factory=list)


#: (best, worst, cuts) from p (S x S, mean order) and means (S,) at level alpha
_Ranker = Callable[[np.ndarray, np.ndarray, float], tuple[np.ndarray, np.ndarray, list[int]]]


@dataclasses.dataclass(frozen=True)
class _Strategy:
    """Everything :func:`cluster_systems` does differently per method.

    ``pvalues(prepared, run)`` -> (p, n), both (S x S) in system-code order; ``ranks`` turns
    the p-values in mean order into rank ranges and cluster cuts; ``test(by_domain)`` is the
    signature's description of the test; ``significance(po, mo, alpha)[k, i]`` is the method's
    "position k is significantly better than position i" (the rank-conflict report reads it);
    ``resampling``: uses ``n_boot``/``seed`` (and
    shows a progress bar); ``pairs``: tests paired observations (``pair_annotator`` applies,
    defaulting to ``pair_annotator_default`` when the table has an annotator column);
    ``bootstrap_units``: resamples ``unit``s and accepts ``indices``; ``by_domain``: supports
    per-domain tests."""

    pvalues: Callable[[_Prepared, _Run], tuple[np.ndarray, np.ndarray]]
    ranks: _Ranker
    significance: Callable[[np.ndarray, np.ndarray, float], np.ndarray]
    test: Callable[[bool], str]
    resampling: bool
    pairs: bool
    pair_annotator_default: bool
    bootstrap_units: bool = False
    by_domain: bool = False
    rank_rule: str = _COUNT_RULE


def _bootstrap_pvalues(pr: _Prepared, run: _Run) -> tuple[np.ndarray, np.ndarray]:
    return _bootstrap_matrix(pr, run.n_boot, run.seed, run.indices, run.progress, run.budget, run.threads)


def _permutation_pvalues(pr: _Prepared, run: _Run) -> tuple[np.ndarray, np.ndarray]:
    x, _ = _paired_matrix(pr)
    return _permutation_matrix(x, run.n_boot, run.seed, run.progress, run.budget, run.threads)


def _wilcoxon_pvalues(two_sided: bool) -> Callable[[_Prepared, _Run], tuple[np.ndarray, np.ndarray]]:
    def pvalues(pr: _Prepared, run: _Run) -> tuple[np.ndarray, np.ndarray]:
        x, kd = _paired_matrix(pr)
        found: list[tuple[int, int, int]] = []
        tiny: list[tuple[int, int, int, float]] = []
        p, n = _wilcoxon_matrix(x, kd, len(pr.domains), two_sided=two_sided, stouffer=two_sided and run.by_domain,
                                forced=found, tiny=tiny)
        run.forced.extend((i, j, str(pr.domains[g])) for i, j, g in found)
        run.tiny.extend((i, j, str(pr.domains[g]), pk) for i, j, g, pk in tiny)
        empty = n == 0
        np.fill_diagonal(empty, False)
        p[empty] = 1.0  # no shared observation: no evidence of a difference
        return p, n
    return pvalues


def _sig_one_sided(po: np.ndarray, mo: np.ndarray, alpha: float) -> np.ndarray:
    """sig[k, i]: the one-sided test says position k is better than position i (p < alpha)."""
    sig = po < alpha
    np.fill_diagonal(sig, False)
    return sig


def _sig_two_sided(po: np.ndarray, mo: np.ndarray, alpha: float) -> np.ndarray:
    """sig[k, i]: the pair differs (two-sided p < alpha) and k has the higher mean."""
    sig = (po < alpha) & (mo[:, None] > mo[None, :])
    np.fill_diagonal(sig, False)
    return sig


def _sig_greedy(po: np.ndarray, mo: np.ndarray, alpha: float) -> np.ndarray:
    """mt-metrics-eval's reading (``AssignRanks``): p <= alpha."""
    sig = po <= alpha
    np.fill_diagonal(sig, False)
    return sig


def _count_ranks(sig_rule: Callable[[np.ndarray, np.ndarray, float], np.ndarray]) -> _Ranker:
    """Rank ranges by the WMT count rule (:func:`_ranges_count`) and clusters by the WMT25 cut
    rule on those ranges (so no range crosses a cluster boundary)."""
    def ranks(po: np.ndarray, mo: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray, list[int]]:
        best, worst = _ranges_count(sig_rule(po, mo, alpha))
        return best, worst, _cuts_from_ranges(best, worst)
    return ranks


def _wmt24_ranks(po: np.ndarray, mo: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray, list[int]]:
    best, worst = _ranges_wins_losses(po, mo, alpha)
    return best, worst, _clusters_straddle(po, alpha, strict_greater=True)


def _greedy_rank_ranges(po: np.ndarray, mo: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray, list[int]]:
    s = po.shape[0]
    ranks = _greedy_ranks(po, alpha)
    cuts = [c for c in range(s - 1) if ranks[c + 1] != ranks[c]]
    best = np.empty(s, dtype=np.int64)
    worst = np.empty(s, dtype=np.int64)
    for r in np.unique(ranks):
        members = np.flatnonzero(ranks == r)
        best[members], worst[members] = members.min() + 1, members.max() + 1
    return best, worst, cuts


#: the clustering methods, in the order the CLI and messages list them
STRATEGIES: dict[str, _Strategy] = {
    "bootstrap": _Strategy(
        pvalues=_bootstrap_pvalues, ranks=_count_ranks(_sig_two_sided), significance=_sig_two_sided,
        test=lambda by_domain: "paired percentile bootstrap of mean differences, two-sided",
        resampling=True, pairs=False, pair_annotator_default=True, bootstrap_units=True),
    "wmt25": _Strategy(
        pvalues=_wilcoxon_pvalues(two_sided=False), ranks=_count_ranks(_sig_one_sided),
        significance=_sig_one_sided,
        test=lambda by_domain: "Wilcoxon signed-rank, one-sided (greater), scipy defaults",
        resampling=False, pairs=True, pair_annotator_default=True),
    "wmt24": _Strategy(
        pvalues=_wilcoxon_pvalues(two_sided=True), ranks=_wmt24_ranks, significance=_sig_two_sided,
        test=lambda by_domain: "Wilcoxon signed-rank, two-sided" + (", Stouffer over domains" if by_domain else ""),
        resampling=False, pairs=True, pair_annotator_default=False, by_domain=True,
        rank_rule="WMT24 tools.py: (1 + losses, S - wins); cut unless a straddling pair has p > alpha"),
    "permutation": _Strategy(
        pvalues=_permutation_pvalues, ranks=_greedy_rank_ranges, significance=_sig_greedy,
        test=lambda by_domain: "paired sign-flip permutation of the mean difference, one-sided",
        resampling=True, pairs=True, pair_annotator_default=True,
        rank_rule="greedy ranks (mt-metrics-eval AssignRanks); range = the rank's span"),
}
METHODS: tuple[str, ...] = tuple(STRATEGIES)


def _strategy(method: str) -> _Strategy:
    """The strategy of ``method``; an unknown method is D351 listing the known ones."""
    try:
        return STRATEGIES[method]
    except (KeyError, TypeError):
        raise DDPUsageError(f"unknown clustering method {method!r}; choose one of {', '.join(METHODS)} (--method)",
                            code="D351") from None


# --------------------------------------------------------------------------- public function


def cluster_systems(
    table: Any,
    method: Method = "bootstrap",
    *,
    alpha: float = 0.05,
    unit: Literal["document", "segment"] = "document",
    by_domain: bool = False,
    pair_annotator: bool | None = None,
    condition_value: str | None = None,
    min_pairs: int | None = None,
    columns: TableColumns | None = None,
    options: ResampleOptions | None = None,
) -> ClusterResult:
    """Rank systems by mean score and cluster them with pairwise significance tests.

    Parameters
    ----------
    table : path or polars/pandas/pyarrow table, one row per annotation (long table)
    method : "bootstrap" | "wmt25" | "wmt24" | "permutation" (see the module docstring and
        :data:`STRATEGIES`)
    alpha : significance level
    unit : bootstrap resampling unit, "document" or "segment"
    by_domain : wmt24 only: per-domain tests combined with Stouffer, macro-averaged means
    pair_annotator : pair observations on the annotator too (None: see module docstring)
    condition_value : keep only rows of this condition (required when the table holds several)
    columns : :class:`~ddpcore.stats.TableColumns` naming the document, segment, system,
        annotator, condition, score and domain columns.
    options : :class:`~ddpcore.stats.ResampleOptions`: ``n_boot`` (default 1,000 resamples for
        the bootstrap, sign-flip permutations for the permutation test; ignored by wmt25/wmt24),
        ``seed`` (of the resamples/permutations), ``indices`` (bootstrap only: explicit resample
        matrix, n_boot x n_units, units in sorted order), ``nan_policy`` (rows with a missing score),
        ``progress`` (a tqdm bar on stderr for the resampling methods) and the budget of the
        resampling methods (see :mod:`ddpcore.stats.budget`): memory is bounded (blocks), an
        estimated run time over ``max_seconds`` (measured on the first block) stops with D363
        before the long part
    min_pairs : paired methods (wmt25, wmt24, permutation): floor of paired observations per
        comparison (default :data:`MIN_PAIRS`; 0 = no floor). Comparisons below it are listed in
        ``pair_floor`` and counted in the signature, with a line in ``warnings``. Not accepted
        for the bootstrap, which compares unpaired means (D351).

    Returns
    -------
    ClusterResult
        ``p_values`` and ``n_pairs`` of shape (S, S) in ``order`` (best first). The bootstrap over a single
        resampling unit is D364 (every pair would get p = 0); too few resamples / permutations for ``alpha``
        (``n_boot * alpha / 2 < 1`` bootstrap, ``n_boot * alpha < 1`` permutation) and rows dropped by
        ``nan_policy="omit"`` are lines in ``warnings`` (the signature records ``nan_policy`` and ``n_omitted``).
    """
    strategy = _strategy(method)
    opts = check_options(options, func="cluster_systems")
    cols = check_columns(columns, func="cluster_systems")
    indices = opts.indices
    n_boot, seed, floor = _check_cluster_args(strategy, opts, alpha, unit, by_domain, min_pairs)
    budget = opts.budget(f"cluster_systems(method={method!r})")
    loaded: dict[str, Any] = {}
    source = table_source(table)
    df, one_sided = _cluster_rows(table, cols, condition_value, opts.nan_policy,
                                  unit=unit if strategy.bootstrap_units else None, counts=loaded)
    pr = _prepare(df, unit=unit, pair_annotator=pair_annotator, pair_default=strategy.pair_annotator_default,
                  by_domain=by_domain, source=source, domain_col=cols.domain, available=loaded.get("columns"))
    if strategy.bootstrap_units:
        from .bootstrap import _refuse_one_unit

        ucols = [schema.DOCUMENT_ID] if unit == "document" else [schema.DOCUMENT_ID, schema.SEGMENT_ID]
        _refuse_one_unit(pr.n_units, df.select(ucols).head(1), unit, source,
                        "the bootstrap p-value of every system pair",
                        "use unit='segment' (--unit segment), a paired test (--method wmt25, wmt24 or permutation) or "
                        "a table with more documents" if unit == "document" else
                        "use a paired test (--method wmt25, wmt24 or permutation) or a table with more segments",
                        consequence="every pair with different means would get p = 0 (significant)")
    notes = _resampling_notes(strategy, method, alpha, indices, n_boot, loaded)
    lone = _one_unit_systems(pr) if strategy.bootstrap_units else []
    notes += _one_unit_note(lone, pr.n_units, unit)
    means = _system_means(pr, macro_domains=by_domain)
    run = _Run(n_boot=n_boot if strategy.resampling else 0, seed=seed if strategy.resampling else 0,
               indices=indices, by_domain=by_domain, progress=None, budget=budget, threads=opts.kernel_threads)
    p, n = _run_pvalues(strategy, pr, run, progress=opts.progress, desc=f"cluster ({method})")
    order = _order(means, pr.systems)
    po = p[np.ix_(order, order)]
    no = n[np.ix_(order, order)]
    mo = means[order]
    names = [pr.systems[k] for k in order]
    best, worst, cuts = strategy.ranks(po, mo, alpha)
    pair_floor = _pair_floor(names, no, floor) if floor is not None else None
    conflicts = _rank_conflicts(names, best, worst, strategy.significance(po, mo, alpha), no,
                                one_sided=strategy.significance is not _sig_two_sided,
                                count="replicates" if strategy.bootstrap_units else "pairs")
    sig = signature(
        method,
        alpha=float(alpha),
        n_boot=int(np.shape(indices)[0]) if indices is not None else (n_boot if strategy.resampling else None),
        seed=seed if strategy.resampling and indices is None else None,
        unit=unit if strategy.bootstrap_units else None,
        by_domain=bool(by_domain),
        pair_annotator=pr.pair_annotator if strategy.pairs else None,
        condition=condition_value,
        test=strategy.test(by_domain),
        rank_rule=strategy.rank_rule,
        min_pairs=floor,
        n_pairs_min=pair_floor["n_pairs_min"] if pair_floor else None,
        n_below_min_pairs=pair_floor["n_below"] if pair_floor else None,
        n_rank_conflicts=len(conflicts),
        n_units_one_condition=one_sided[0] if one_sided else None,
        n_systems_one_unit=len(lone) if strategy.bootstrap_units else None,
        nan_policy=opts.nan_policy,
        n_omitted=int(loaded.get("n_omitted") or 0),
    )
    return ClusterResult(
        method=method,
        order=tuple(names),
        means={nm: float(v) for nm, v in zip(names, mo)},
        p_values=po,
        n_pairs=no,
        rank_ranges={nm: (int(b), int(w)) for nm, b, w in zip(names, best, worst)},
        clusters=_groups(names, cuts),
        alpha=float(alpha),
        n_rows=pr.n_rows,
        signature=sig,
        pair_floor=pair_floor,
        rank_conflicts=tuple(conflicts),
        warnings=tuple(notes + ([one_sided[1]] if one_sided else []) + _cluster_notes(pair_floor, floor,
                                                                                       pr.pair_annotator, conflicts)
                       + [w for w in (similar_names_warning(pr.systems),) if w]
                       + _stouffer_note(run.forced, pr.systems) + _stouffer_tail_note(run.tiny, pr.systems)),
    )


def _one_unit_systems(pr: _Prepared) -> list[str]:
    """Systems whose rows all lie in one resampling unit of a table with several (the bootstrap)."""
    if pr.n_units < 2:
        return []
    cells = np.unique(pr.sys_code * pr.n_units + pr.unit_code)  # (system, unit) pairs present
    per_system = np.bincount(cells // pr.n_units, minlength=len(pr.systems))
    return [pr.systems[k] for k in np.flatnonzero(per_system == 1)]


def _one_unit_note(lone: list[str], n_units: int, unit: str) -> list[str]:
    """A line for the systems rated in a single resampling unit: every replicate that draws the unit gives
    them the same mean, so their comparisons rest on the other system's variation only."""
    if not lone:
        return []
    shown = ", ".join(lone[:5]) + (" ..." if len(lone) > 5 else "")
    return [f"{len(lone)} system(s) have rows in a single {unit} of {n_units} ({shown}): the bootstrap redraws that "
            f"{unit} whole, so their mean is the same in every replicate and each comparison with them rests on the "
            "other system's variation alone (the p-value understates the uncertainty); compare them with a paired "
            "test (--method wmt25, wmt24 or permutation), or rate them on more "
            + ("documents" if unit == "document" else "segments") + " (signature n_systems_one_unit)"]


def _stouffer_note(forced: list[tuple[int, int, str]], systems: Sequence[str]) -> list[str]:
    """A line for the pairs whose Stouffer combination a single domain with p = 1 forced to 1."""
    if not forced:
        return []
    shown = ", ".join(f"{systems[i]} vs {systems[j]} (domain {g})" for i, j, g in forced[:4])
    return [f"--by-domain: in {len(forced)} system pair(s) ({shown}{', ...' if len(forced) > 4 else ''}) one domain "
            "has p = 1 (every difference there zero, or exactly balanced), which makes the Stouffer combination 1 "
            "whatever the other domains show, as WMT24's tools.py does; compare those pairs without --by-domain, or "
            "per domain"]


def _stouffer_tail_note(tiny: list[tuple[int, int, str, float]], systems: Sequence[str]) -> list[str]:
    """A line for the pairs whose Stouffer combination differs from WMT24's tools.py: a domain p below 2**-53,
    where tools.py's ``Phi^-1(1 - p)`` is +inf (and its combined p 0, whatever the other domains show)."""
    if not tiny:
        return []
    shown = ", ".join(f"{systems[i]} vs {systems[j]} (domain {g}: p = {pk:.3g})" for i, j, g, pk in tiny[:4])
    return [f"--by-domain: in {len(tiny)} system pair(s) ({shown}{', ...' if len(tiny) > 4 else ''}) a domain's p is "
            "below 1.1e-16, where WMT24's tools.py takes Phi^-1(1 - p) = +inf and combines to p = 0 whatever the other "
            "domains show; ddpcore uses Phi^-1 of the upper tail (finite; from log p where p underflows to 0), so "
            "those combined p-values differ from tools.py's"]


def _resampling_notes(strategy: _Strategy, method: str, alpha: float, indices: Any, n_boot: int,
                      loaded: dict[str, Any]) -> list[str]:
    """Warning lines about the rows and replicates behind a clustering: rows dropped for a missing score
    (nan_policy="omit"), and too few resamples / permutations to give a p-value below ``alpha`` other than
    "no replicate crossed" (``n_boot * alpha / 2 < 1`` for the two-sided bootstrap, ``n_boot * alpha < 1``
    for the one-sided permutation test)."""
    from .bootstrap import _thin_replicates

    notes = []
    n_omitted = int(loaded.get("n_omitted") or 0)
    if n_omitted:
        notes.append(f"{n_omitted} row(s) with a missing (null/NaN) score dropped (nan_policy='omit', --nan-policy "
                     f"omit; first: row {loaded.get('first_omitted_row')})")
    if strategy.resampling:
        n_rep = int(np.shape(indices)[0]) if indices is not None else int(n_boot)
        two_sided = strategy.significance is _sig_two_sided
        what = f"the {'bootstrap' if method == 'bootstrap' else 'permutation'} p-value of each system pair"
        thin = _thin_replicates(n_rep, float(alpha) / (2 if two_sided else 1), what, DEFAULT_N_BOOT,
                               consequence=f"a pair can then be significant at alpha {float(alpha):g} only when no "
                                           "replicate crosses the observed difference, which few replicates make "
                                           "likely by chance")
        if thin:
            notes.append(thin)
    return notes


def _check_cluster_args(strategy: _Strategy, opts: ResampleOptions, alpha: float, unit: str, by_domain: bool,
                        min_pairs: int | None) -> tuple[int, int, int | None]:
    """The checked ``(n_boot, seed, pair floor)`` of a :func:`cluster_systems` call (D351 otherwise);
    ``n_boot``/``seed`` are only checked where the method resamples with its own generator."""
    n_boot, seed, indices = opts.n_boot_or(DEFAULT_N_BOOT), opts.seed, opts.indices
    if unit not in ("document", "segment"):
        raise DDPUsageError(f"unit must be 'document' or 'segment', got {unit!r} (--unit)", code="D351")
    if not is_real(alpha) or not 0.0 < float(alpha) < 1.0:
        raise DDPUsageError(f"alpha must be a number in (0, 1), got {alpha!r} (--alpha)", code="D351")
    if strategy.resampling and indices is None:
        if isinstance(n_boot, bool) or not hasattr(n_boot, "__index__") or int(n_boot) < 1:
            raise DDPUsageError(f"n_boot must be an integer >= 1, got {n_boot!r} (--n-boot)", code="D351")
        seed = _budget.check_seed(seed)
    if min_pairs is not None:
        if not strategy.pairs:
            paired = ", ".join(repr(m) for m, st in STRATEGIES.items() if st.pairs)
            raise DDPUsageError(f"min_pairs (a floor of paired observations per comparison) applies to "
                                f"method={paired} only; the bootstrap compares unpaired means (--min-pairs)",
                                code="D351")
        if isinstance(min_pairs, bool) or not hasattr(min_pairs, "__index__") or int(min_pairs) < 0:
            raise DDPUsageError(f"min_pairs must be an integer >= 0, got {min_pairs!r} (--min-pairs; 0 = no floor)",
                                code="D351")
    floor = (MIN_PAIRS if min_pairs is None else int(min_pairs)) if strategy.pairs else None
    if by_domain and not strategy.by_domain:
        with_domains = ", ".join(repr(m) for m, st in STRATEGIES.items() if st.by_domain)
        raise DDPUsageError(f"by_domain (Stouffer over domains) applies to method={with_domains} only (--by-domain)",
                            code="D351")
    if indices is not None and not strategy.bootstrap_units:
        with_indices = ", ".join(repr(m) for m, st in STRATEGIES.items() if st.bootstrap_units)
        raise DDPUsageError(f"indices apply to method={with_indices} only", code="D351")
    return int(n_boot) if strategy.resampling else n_boot, int(seed) if strategy.resampling else seed, floor


def _cluster_rows(table: Any, cols: TableColumns, condition_value: str | None, nan_policy: str,
                  unit: str | None = None,
                  counts: dict[str, Any] | None = None) -> tuple[pl.DataFrame, tuple[int, str] | None]:
    """The long table's rows of ``condition_value`` (or its single condition), canonical column names.

    Loading refuses a rating repeated (D307, :func:`~ddpcore.stats._table.check_unique_ratings`). With
    ``unit`` (the bootstrap's resampling unit) and other conditions in the table, the units of
    ``condition_value`` that have no row under any other condition are counted: ``(count, warning
    line)``, else ``None``."""
    import polars as pl

    df = load_long_table(table, columns=cols, required=("document", "segment", "system", "score"),
                         nan_policy=nan_policy, counts=counts)  # type: ignore[arg-type]
    if counts is not None:  # the columns as the table names them (a role's column renamed back), for messages
        given = {canon: c for role, canon in ROLE_COLUMNS.items() if (c := getattr(cols, role)) is not None}
        counts["columns"] = [given.get(c, c) for c in df.columns]
    if cols.domain != schema.DOMAIN:
        # the chosen column under the name loading gave it (a role column, e.g. --domain-col document_id, is copied,
        # not renamed away); a column that merely carries the name 'domain' is not the domain column
        loaded = {c: canon for role, canon in ROLE_COLUMNS.items() if (c := getattr(cols, role)) is not None}
        src = loaded.get(cols.domain, cols.domain)
        if src in df.columns:
            df = df.with_columns(pl.col(src).alias(schema.DOMAIN))
        elif schema.DOMAIN in df.columns:
            df = df.drop(schema.DOMAIN)
    if schema.CONDITION in df.columns:
        present = df[schema.CONDITION].cast(pl.String).unique().sort().to_list()
        if condition_value is not None:
            if str(condition_value) not in present:
                raise DDPDataError(f"condition {condition_value!r} has no rows; conditions in the table: "
                                   f"{', '.join(map(str, present))}", code="D305")
            one_sided = _one_sided_units(df, str(condition_value), present, unit) if unit else None
            df = df.filter(pl.col(schema.CONDITION).cast(pl.String) == str(condition_value))
            return df, one_sided
        check_single_condition(df, "--in COND")
    elif condition_value is not None:
        raise DDPDataError(f"condition_value={condition_value!r} given but the table has no condition column "
                           f"'{cols.condition}' ({cols.flag('condition')} NAME)", code="D301")
    return df, None


def _one_sided_units(df: pl.DataFrame, cond: str, present: list[str], unit: str) -> tuple[int, str] | None:
    """Units (documents, or (document, segment)) of ``cond`` without a row under the table's other
    conditions: ``(count, warning line)``, or ``None`` when there are none (or no other condition).

    The bootstrap clusters each condition on its own units, so such units are kept; but a comparison
    of two conditions' clusterings (``ddp stats cluster --a --b``) then resamples different material,
    and a document id changed in some rows of one condition (a typo) splits one resampling unit in
    two. The warning names the first unit and its row count."""
    import polars as pl

    others = [c for c in present if c != cond]
    if not others:
        return None
    ucols = [schema.DOCUMENT_ID] if unit == "document" else [schema.DOCUMENT_ID, schema.SEGMENT_ID]
    is_cond = pl.col(schema.CONDITION).cast(pl.String) == cond
    mine = df.filter(is_cond).group_by(ucols, maintain_order=True).len("__n")
    theirs = df.filter(~is_cond).select(ucols).unique()
    lonely = mine.join(theirs, on=ucols, how="anti", maintain_order="left")
    if lonely.height == 0:
        return None
    first = lonely.sort(ucols).row(0, named=True)
    key = ", ".join(f"{c}={first[c]!r}" for c in ucols)
    shown = ", ".join(map(repr, others[:3])) + (" ..." if len(others) > 3 else "")
    return lonely.height, (
        f"{lonely.height} of {mine.height} {unit}s of condition {cond!r} have no row under the other "
        f"condition(s) of the table ({shown}) (first: {key}, {first['__n']} row(s)); they are kept as "
        f"{cond!r}'s own resampling units, so a comparison with {shown} rests on different {unit}s: check the "
        f"{'document' if unit == 'document' else 'document/segment'} ids if both conditions score the same "
        f"{unit}s (signature n_units_one_condition)")


def _run_pvalues(strategy: _Strategy, pr: _Prepared, run: _Run, *, progress: bool,
                 desc: str) -> tuple[np.ndarray, np.ndarray]:
    """The strategy's (S x S) p-values and pair counts, with a tqdm bar when asked and it resamples."""
    bar = None
    if progress and strategy.resampling:
        from tqdm import tqdm

        bar = tqdm(total=int(np.shape(run.indices)[0]) if run.indices is not None else int(run.n_boot),
                   desc=desc, unit="resample", leave=False)
    try:
        return strategy.pvalues(pr, dataclasses.replace(run, progress=bar))
    finally:
        if bar is not None:
            bar.close()


def _cluster_notes(pair_floor: dict[str, Any] | None, floor: int | None, pair_annotator: bool,
                   conflicts: list[dict[str, Any]]) -> list[str]:
    """The warning lines of a clustering: comparisons under the pair floor, rank-range conflicts."""
    notes: list[str] = []
    if pair_floor is not None and pair_floor["n_below"]:
        keys = "document, segment and annotator" if pair_annotator else "document and segment"
        hint = (" (--no-pair-annotator when each annotator saw one system "
                "per document)" if pair_annotator else "")
        notes.append(f"{pair_floor['n_below']} of {pair_floor['n_comparisons']} system comparisons rest on "
                     f"fewer than {floor} paired observations (min {pair_floor['n_pairs_min']}, pairing on "
                     f"{keys}): their tests are weak and may disagree with each other; pair on more "
                     f"observations{hint}, or set the floor with --min-pairs (listed in pair_floor)")
    if conflicts:
        notes.append(f"{len(conflicts)} rank-range conflict(s) with the listing (mean) order, e.g. "
                     f"{conflicts[0]['reason']} (all in rank_conflicts). Expected, not an error, when pairwise "
                     "tests disagree (few observations per comparison): read each system's rank range, not its "
                     "position in the list")
    return notes



# --------------------------------------------------------------------------- comparing two clusterings


@dataclasses.dataclass(frozen=True)
class ClusterComparisonResult(AsDict):
    """How the clusters of two conditions (e.g. DOC vs MIX) relate, over their common systems.

    ``cluster_a[s]`` / ``cluster_b[s]`` are 1-based cluster indices (best cluster = 1);
    ``same_clusters`` is True when both put the common systems into the same clusters in the
    same order (best cluster first; a reversed ranking with mirror-symmetric cluster sizes is
    *not* the same); ``moved`` lists systems whose cluster index differs,
    ``n_same_index``/``n_adjacent_index`` count systems at the same index or one index apart (the
    paper's "identical or adjacent ranks").
    """

    condition_a: str | None
    condition_b: str | None
    systems: tuple[str, ...]
    cluster_a: dict[str, int]
    cluster_b: dict[str, int]
    n_clusters_a: int
    n_clusters_b: int
    same_clusters: bool
    moved: tuple[str, ...]
    n_same_index: int
    n_adjacent_index: int
    only_in_a: tuple[str, ...]
    only_in_b: tuple[str, ...]
    #: systems clustered under one condition only (left out of the comparison); the CLI prints them
    warnings: tuple[str, ...] = ()


def compare_clusters(a: ClusterResult, b: ClusterResult) -> ClusterComparisonResult:
    """Compare two :class:`ClusterResult` (same method, two conditions) system by system."""
    common = tuple(s for s in a.order if s in set(b.order))
    ca = {s: a.cluster_of(s) for s in common}
    cb = {s: b.cluster_of(s) for s in common}
    part_a = [frozenset(s for s in c if s in ca) for c in a.clusters]
    part_b = [frozenset(s for s in c if s in cb) for c in b.clusters]
    moved = tuple(s for s in common if ca[s] != cb[s])
    only_a = tuple(s for s in a.order if s not in ca)
    only_b = tuple(s for s in b.order if s not in cb)
    name_a, name_b = a.signature.get("condition"), b.signature.get("condition")
    warnings = tuple(
        f"{len(only)} system(s) clustered under condition {here!r} only, not under {there!r}: "
        f"{', '.join(only[:10])}{' ...' if len(only) > 10 else ''}; the comparison covers the {len(common)} common "
        f"system(s) and leaves these out ({field})"
        for only, here, there, field in ((only_a, name_a, name_b, "only_in_a"), (only_b, name_b, name_a, "only_in_b"))
        if only)
    return ClusterComparisonResult(
        condition_a=a.signature.get("condition"),
        condition_b=b.signature.get("condition"),
        systems=common,
        cluster_a=ca,
        cluster_b=cb,
        n_clusters_a=len(a.clusters),
        n_clusters_b=len(b.clusters),
        same_clusters=[c for c in part_a if c] == [c for c in part_b if c],
        moved=moved,
        n_same_index=sum(ca[s] == cb[s] for s in common),
        n_adjacent_index=sum(abs(ca[s] - cb[s]) <= 1 for s in common),
        only_in_a=only_a,
        only_in_b=only_b,
        warnings=warnings,
    )
