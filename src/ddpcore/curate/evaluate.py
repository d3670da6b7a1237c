"""``ddp select --evaluate``: is the DDP-selected subset a better test set than a random one?

The difficulty-estimation protocol (Proietti et al. 2025, ``zouharvi/translation-difficulty-estimation``;
``zouharvi/subset2evaluate`` ``evaluate.py``) on human scores, for each budget B (a share of the items):
the estimator's top ``ceil(B * n)`` items (highest DDP first: DDP is a difficulty estimate) against
``n_random`` random subsets of the same size and document structure.

Items and inputs
----------------
An item is a segment (``level="segment"``) scored by every system: ``human`` is (n_items, n_systems),
``estimator`` (n_items,), ``doc`` (n_items,) the document code of each item. Items where any system
lacks a human score are left out before anything is computed (counted in ``warnings``: a missing
score is never 0). With ``level="document"`` whole documents are ranked by their maximum estimator
value and taken until ``ceil(B * n_documents)`` documents; random subsets draw the same number of
whole documents (so their segment counts vary, as the selection's would). With ``level="segment"``
random subsets draw the same number of segments uniformly without replacement (subset2evaluate's
``method="random"``). Ties in the ranking are broken by item order (stable; :func:`evaluate_selection`
keeps the profile's row order, i.e. the test set's, as subset2evaluate's stable sort keeps the data
order) with ``ties="input"``; the default ``ties="random"`` breaks them by a seeded random permutation
of the units instead, because a test set's order is not random (WMT files are grouped by domain and
document) and a cut inside a large tie (DDP 0 or 1 hold most segments) would otherwise select by
position. A cut that falls inside a tie is said in ``warnings`` (how many tied units are in).

Measures of a subset I (each for the selection and every random subset)
-----------------------------------------------------------------------
* ``mean_human``: mean of ``human[I, :]``.
* ``share_perfect``: share of ``human[I, :] == perfect`` (``perfect``: default the table's maximum,
  e.g. 0 for MQM, 100 for ESA).
* ``tau_estimator``: Kendall tau-b between ``estimator[I]`` and ``human[I, s]``, averaged over the
  systems s where it is defined (a constant column gives no tau; counted). A useful difficulty
  estimator has a negative tau (harder items get lower scores).
* ``clusters``: subset2evaluate ``eval_subset_clusters``: systems sorted by mean over I (best first);
  walking down, the next system starts a new cluster when its paired differences to the previous
  system are all 0 or the one-sided Wilcoxon test (``alternative="less"``, scipy's defaults, as
  :func:`ddpcore.stats.clustering.wilcoxon_signed_rank`) gives p < ``alpha``; 1 for |I| < 3.
* ``spearman``: Spearman correlation of the systems' means over I with their means over all items
  (subset2evaluate ``eval_subset_correlation``; 0 when one side is constant).

Per measure: the selection's value, the random distribution's mean, sd and 2.5/97.5 % quantiles, and
the selection's percentile ``100 * (#{random < x} + #{random == x} / 2) / n_random`` (equal: within a relative
1e-10, :data:`PERCENTILE_RTOL`, so that rounding does not split a tie of two subsets with the same mean).

Budget for parity with random (subset2evaluate ``eval_clucor_par``)
-------------------------------------------------------------------
For budget B, with the random mean of clusters (of spearman) at B as the target: the smallest prefix
``k >= 5`` of the estimator's ranking whose clusters (spearman) reach the target, as a share of the
budget, ``k / (n * B)`` (< 1: the estimator needs less data than random for the same separation;
the whole ranking when never reached). As subset2evaluate's ``eval_clucor_randnorm``, it is also divided
by the same parity of ``n_parity_random`` (10) random orderings (``..._randnorm``): cluster counts are not
monotone in k, so a random ordering's prefix reaches its own mean early by luck too; a ratio below 1 says
the estimator's ordering gets there sooner than random orderings do. With ``level="document"`` prefixes are whole documents and
``k`` counts segments. Prefixes are scanned every ``parity_step`` items (default: every item up to
2,000 items, else ``ceil(n / 2000)``; recorded).

Random subsets (seeded, regenerable): ``numpy.random.Generator(PCG64(seed)).random((n_random, m))``,
row r ranks the m units (segments or documents) by ``argsort``; subset r is the first k of row r.

Error codes D840-D849; of the score table also D654 (a score that is not a number), D872 and D873.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .._version import __version__
from ..errors import DDPDataError, DDPUsageError

if TYPE_CHECKING:
    import polars as pl

ERROR_CODES = {
    "D840": "bad --evaluate option: budgets outside (0, 1], n_random < 1, unknown level, alpha outside (0, 1)",
    "D841": "the human score column (--human-col) or a key column is missing from the score table",
    "D842": "fewer than 2 systems or 5 items with complete human scores: nothing to evaluate",
    "D843": "--strict-join: score rows without a profile row (or profile rows without scores) were dropped",
    "D844": "a human score or estimator value is not finite",
    "D872": "an --exclude-system name the score table does not have (it would leave every system in)",
    "D873": "a (document, segment, system) key on two score rows (one human score per system and segment)",
}
MEASURES = ("mean_human", "share_perfect", "tau_estimator", "clusters", "spearman")
LEVELS = ("segment", "document")
#: prefixes scanned for parity (every item up to this many items)
PARITY_MAX_PREFIXES = 2000
RNG = "numpy Generator(PCG64(seed)).random((n_random, n_units)); subset r = argsort(row r)[:k]"


@dataclasses.dataclass(frozen=True)
class EvaluateOptions:
    """Settings of :func:`evaluate_selection` (CLI flags of the same names)."""

    budgets: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5)
    n_random: int = 1000
    seed: int = 0
    level: str = "segment"
    alpha: float = 0.05
    perfect: float | None = None
    parity_step: int | None = None
    n_parity_random: int = 10
    ties: str = "random"

    def check(self) -> None:
        if not self.budgets or any(not (0 < b <= 1) for b in self.budgets):
            raise DDPUsageError(f"--budgets {','.join(map(str, self.budgets))}: each budget must be in (0, 1]",
                                code="D840")
        if self.n_random < 1:
            raise DDPUsageError(f"--n-random {self.n_random}: must be at least 1", code="D840")
        if self.level not in LEVELS:
            raise DDPUsageError(f"--unit {self.level}: choose segment or document", code="D840")
        if not 0 < self.alpha < 1:
            raise DDPUsageError(f"--alpha {self.alpha}: must be in (0, 1)", code="D840")
        if self.ties not in ("random", "input"):
            raise DDPUsageError(f"--ties {self.ties}: choose random or input", code="D840")
        if self.n_parity_random < 1:
            raise DDPUsageError(f"n_parity_random {self.n_parity_random}: must be at least 1", code="D840")
        if self.parity_step is not None and self.parity_step < 1:
            raise DDPUsageError(f"parity_step {self.parity_step}: must be at least 1", code="D840")


@dataclasses.dataclass(frozen=True)
class EvaluateResult:
    """One table per budget (``tables``: list of dicts), the average parities, ``warnings`` and the signature."""

    tables: list[dict[str, Any]]
    parity: dict[str, float | None]
    n_items: int
    n_systems: int
    n_documents: int
    warnings: list[str]
    signature: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"budgets": self.tables, "parity_average": self.parity, "n_items": self.n_items,
                "n_systems": self.n_systems, "n_documents": self.n_documents, "warnings": list(self.warnings),
                "signature": self.signature}


# --------------------------------------------------------------------------- measures on many subsets


def _kern() -> Any:
    from .._native import load

    return load("stats_kernels")


def subset_means(human: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """System means over each subset: masks (R, n) float 0/1 -> (R, S)."""
    return (masks @ human) / masks.sum(axis=1, keepdims=True)


def _avg_ranks(x: np.ndarray) -> np.ndarray:
    """Average ranks (1-based, ties share their mean rank, as scipy ``rankdata``) along the rows of
    x (R, S), for the few systems S: rank_i = #{x_j < x_i} + (#{x_j == x_i} + 1) / 2."""
    less = (x[:, None, :] < x[:, :, None]).sum(axis=2)
    equal = (x[:, None, :] == x[:, :, None]).sum(axis=2)
    return less + (equal + 1) / 2.0


def spearman_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman (average ranks) between each row of ``a`` (R, S) and ``b`` (S,) ; 0 where either is constant."""
    ra = _avg_ranks(a)
    rb = _avg_ranks(np.asarray(b, dtype=np.float64)[None, :])[0]
    ra = ra - ra.mean(axis=1, keepdims=True)
    rb = rb - rb.mean()
    den = np.sqrt((ra ** 2).sum(axis=1) * (rb ** 2).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (ra @ rb) / den
    return np.where(den > 0, r, 0.0)


def _padded(masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Masks (R, n) -> (item numbers (R, kmax), valid (R, kmax)): each row's items first, in item order."""
    size = masks.sum(axis=1)
    kmax = int(size.max()) if size.size else 0
    idx = np.argsort(~masks, axis=1, kind="stable")[:, :kmax]
    return idx, np.arange(kmax)[None, :] < size[:, None]


def clusters_rows(human: np.ndarray, masks: np.ndarray, alpha: float = 0.05, block: int = 64) -> np.ndarray:
    """subset2evaluate's cluster count for each subset (masks (R, n) bool) -> (R,) int."""
    from ..stats.clustering import wilcoxon_signed_rank

    r_all = masks.shape[0]
    s = human.shape[1]
    out = np.ones(r_all, dtype=np.int64)
    if s < 2 or r_all == 0:
        return out
    idx, valid = _padded(masks)
    kmax = idx.shape[1]
    block = max(1, min(block, int(2e7 // max(1, kmax * (s - 1)))))  # ~160 MB of differences at most
    for a in range(0, r_all, block):
        ix, ok = idx[a:a + block], valid[a:a + block]
        hs = human[ix]  # (r, kmax, S): the subset's items only
        means = np.where(ok[:, :, None], hs, 0.0).sum(axis=1) / ok.sum(axis=1)[:, None]
        order = np.lexsort((np.broadcast_to(np.arange(s), means.shape), -means), axis=-1)  # best first, stable
        prev, nxt = order[:, :-1], order[:, 1:]
        # dn[r, p, i] = human[item i, next] - human[item i, prev], NaN for padding
        dn = np.take_along_axis(hs, nxt[:, None, :], axis=2) - np.take_along_axis(hs, prev[:, None, :], axis=2)
        dn = np.where(ok[:, :, None], dn, np.nan).transpose(0, 2, 1).reshape(-1, kmax)  # (r * (S-1), kmax)
        _, p = wilcoxon_signed_rank(dn, alternative="less")
        allzero = np.nansum(np.abs(dn), axis=1) == 0
        new = (allzero | (p < alpha)).reshape(ix.shape[0], s - 1)
        out[a:a + block] = 1 + new.sum(axis=1)
    out[masks.sum(axis=1) < 3] = 1
    return out


#: tau_rows uses the O(k V) level form when k > TAU_LEVELS_FACTOR * V (measured crossover ~18 V)
TAU_LEVELS_FACTOR = 20


def _tau_levels(lev: np.ndarray, n_levels: int, hb: np.ndarray) -> np.ndarray:
    """Kendall tau-b of each row of (level codes (r, k) of the estimator, human scores (r, k)) in
    O(k (V + log k)): along each row sorted by human score, for level v the running count of items with
    level v gives, for every item of a higher level, the items of level v scored lower (before its tie
    run of equal scores) and higher (after it); concordant minus discordant is their difference summed.
    Ties count neither way (tau-b); a constant row gives NaN, as scipy."""
    r, k = hb.shape
    o = np.argsort(hb, axis=1, kind="stable")
    hs = np.take_along_axis(hb, o, axis=1)
    ls = np.take_along_axis(lev, o, axis=1).astype(np.int32)
    new_run = np.ones((r, k), dtype=bool)
    new_run[:, 1:] = hs[:, 1:] != hs[:, :-1]
    pos = np.arange(k)[None, :]
    first = np.maximum.accumulate(np.where(new_run, pos, 0), axis=1)  # first position of the item's tie run
    end_run = np.ones((r, k), dtype=bool)
    end_run[:, :-1] = new_run[:, 1:]
    last = np.minimum.accumulate(np.where(end_run, pos, k - 1)[:, ::-1], axis=1)[:, ::-1]
    before, has_before = np.maximum(first - 1, 0), first > 0
    acc = np.zeros((r, k), dtype=np.int64)
    cnt = np.empty((r, n_levels), dtype=np.int64)
    for v in range(n_levels):  # V passes over the block, each vectorised over rows and items
        c = np.cumsum(ls == v, axis=1, dtype=np.int32)
        tot = c[:, -1:]
        cnt[:, v] = tot[:, 0]
        lower = np.where(has_before, np.take_along_axis(c, before, axis=1), 0)
        higher = tot - np.take_along_axis(c, last, axis=1)
        acc += np.where(ls > v, lower - higher, 0)
    s_cd = acc.sum(axis=1).astype(np.float64)
    n0 = k * (k - 1) / 2.0
    n1 = (cnt * (cnt - 1) / 2.0).sum(axis=1)
    n2 = (pos - first).sum(axis=1).astype(np.float64)  # sum over tie runs of len (len - 1) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = s_cd / np.sqrt(n0 - n1) / np.sqrt(n0 - n2)
    tau[(n0 == n1) | (n0 == n2)] = np.nan
    return np.clip(tau, -1.0, 1.0)


def tau_rows(estimator: np.ndarray, human: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean over systems of Kendall tau-b(estimator[I], human[I, s]) for subsets of equal size
    (idx (R, k) item numbers) -> (mean tau (R,), number of systems with a defined tau (R,)).

    Native ``tau_b_rows`` kernel, O(k^2) per row, parallel over the R * S rows; for large subsets of
    an estimator with few distinct values V (DDP counts sentences: k > :data:`TAU_LEVELS_FACTOR` * V)
    the O(k V) :func:`_tau_levels` (2x faster than the kernel at k = 1,000, V = 30; 2.6x slower at
    k = 230). Both are checked against scipy in the tests."""
    r, k = idx.shape
    s = human.shape[1]
    out = np.empty(r * s)
    values, codes = np.unique(estimator, return_inverse=True)
    levels = k > TAU_LEVELS_FACTOR * values.size
    block = max(1, int((4e6 if levels else 2e7) // max(1, k * s)))
    for a in range(0, r, block):  # blocks of subsets keep the (rows, k) copies small
        ib = idx[a:a + block]
        b_ = np.ascontiguousarray(human[ib].transpose(0, 2, 1).reshape(-1, k))
        if levels:
            o = _tau_levels(np.repeat(codes[ib], s, axis=0), values.size, b_)
        else:
            a_ = np.ascontiguousarray(np.repeat(estimator[ib], s, axis=0))  # (r_b * S, k)
            o = np.empty(a_.shape[0])
            _kern().tau_b_rows(a_, b_, o)
        out[a * s:a * s + o.size] = o
    t = out.reshape(r, s)
    ok = ~np.isnan(t)
    with np.errstate(invalid="ignore"):
        mean = np.where(ok.any(axis=1), np.nansum(t, axis=1) / np.maximum(ok.sum(axis=1), 1), np.nan)
    return mean, ok.sum(axis=1)


def _measures(human: np.ndarray, estimator: np.ndarray, masks: np.ndarray, full_means: np.ndarray,
              perfect: float, alpha: float) -> dict[str, np.ndarray]:
    """Every measure for subsets given as masks (R, n) bool."""
    mf = masks.astype(np.float64)
    size = mf.sum(axis=1)
    s = human.shape[1]
    means = subset_means(human, mf)
    out = {"mean_human": means.mean(axis=1),
           "share_perfect": (mf @ (human == perfect).astype(np.float64)).sum(axis=1) / (size * s),
           "spearman": spearman_rows(means, full_means),
           "clusters": clusters_rows(human, masks, alpha).astype(np.float64)}
    tau = np.full(masks.shape[0], np.nan)
    for k in np.unique(size.astype(np.int64)):  # subsets of one size at a time (one size at segment level)
        rows = np.flatnonzero(size == k)
        idx = np.argsort(~masks[rows], axis=1, kind="stable")[:, :int(k)]
        tau[rows], _ = tau_rows(estimator, human, idx)
    out["tau_estimator"] = tau
    return out


# --------------------------------------------------------------------------- subsets


def _ranking_units(estimator: np.ndarray, doc: np.ndarray, level: str,
                   tie_key: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(unit of each item (n,), unit order of the estimator's ranking (m,)): hardest first; ties by
    ``tie_key`` (m,) ascending, else by unit number (stable)."""
    if level == "segment":
        unit, value = np.arange(len(estimator)), estimator
    else:
        m = int(doc.max()) + 1
        value = np.full(m, -np.inf)
        np.maximum.at(value, doc, estimator)
        unit = doc
    if tie_key is None:
        return unit, np.argsort(-value, kind="stable")
    return unit, np.lexsort((tie_key, -value))


def _masks_from_units(unit: np.ndarray, chosen: np.ndarray, m: int) -> np.ndarray:
    """chosen (R, k) unit numbers -> (R, n) item masks."""
    sel = np.zeros((chosen.shape[0], m), dtype=bool)
    np.put_along_axis(sel, chosen, True, axis=1)
    return sel[:, unit]


def random_units(n_random: int, m: int, k: int, seed: int) -> np.ndarray:
    """The (n_random, k) random unit subsets (see module docstring)."""
    u = np.random.Generator(np.random.PCG64(seed)).random((n_random, m))
    return np.argsort(u, axis=1, kind="stable")[:, :k]


#: relative tolerance within which a random subset's value equals the selection's (:func:`_percentile`)
PERCENTILE_RTOL = 1e-10


def _percentile(x: float, dist: np.ndarray) -> float | None:
    """``100 (#below + #equal / 2) / #defined``. Equal: within :data:`PERCENTILE_RTOL` of the largest magnitude,
    because two subsets with the same mean (the same scores in another order, MQM's many ties) get means
    rounded differently by the matrix sums; an exact ``==`` counted such a tie as below or above."""
    d = dist[~np.isnan(dist)]
    if not d.size or np.isnan(x):
        return None
    tol = PERCENTILE_RTOL * max(abs(float(x)), float(np.abs(d).max()))
    equal = np.abs(d - x) <= tol
    return float(100.0 * (np.sum((d < x) & ~equal) + 0.5 * np.sum(equal)) / d.size)


def _summary(x: float, dist: np.ndarray) -> dict[str, Any]:
    d = dist[~np.isnan(dist)]
    f = (lambda v: None if v is None or not np.isfinite(v) else float(v))
    return {"selected": f(x), "random_mean": f(d.mean()) if d.size else None,
            "random_sd": f(d.std(ddof=1)) if d.size > 1 else None,
            "random_q025": f(np.quantile(d, 0.025)) if d.size else None,
            "random_q975": f(np.quantile(d, 0.975)) if d.size else None,
            "percentile": _percentile(x, dist), "n_random_defined": int(d.size)}


def parity_budget(human: np.ndarray, estimator: np.ndarray, doc: np.ndarray, level: str, budget: float,
                  clu_target: float, cor_target: float, full_means: np.ndarray, alpha: float,
                  step: int) -> tuple[float, float, int]:
    """subset2evaluate ``eval_clucor_par`` for one budget -> (clusters parity, spearman parity, step)."""
    n = human.shape[0]
    unit, order = _ranking_units(estimator, doc, level)
    m = order.size
    pos = np.empty(m, dtype=np.int64)
    pos[order] = np.arange(m)
    rank_of_item = pos[unit]  # the ranking position of each item's unit
    # prefixes by units; the prefix's item count is what subset2evaluate's k counts
    cuts = np.arange(1, m + 1)
    items_in = np.bincount(rank_of_item, minlength=m).cumsum()
    keep = items_in >= 5
    cuts, items_in = cuts[keep][::step], items_in[keep][::step]
    if not cuts.size or cuts[-1] != m:
        cuts, items_in = np.r_[cuts, m], np.r_[items_in, n]
    clu_k = cor_k = None
    for a in range(0, cuts.size, 256):
        masks = rank_of_item[None, :] < cuts[a:a + 256, None]
        clu = clusters_rows(human, masks, alpha)
        cor = spearman_rows(subset_means(human, masks.astype(np.float64)), full_means)
        if clu_k is None and (hit := np.flatnonzero(clu >= clu_target)).size:
            clu_k = int(items_in[a + hit[0]])
        if cor_k is None and (hit := np.flatnonzero(cor >= cor_target)).size:
            cor_k = int(items_in[a + hit[0]])
        if clu_k is not None and cor_k is not None:
            break
    clu_k = n if clu_k is None else clu_k
    cor_k = n if cor_k is None else cor_k
    return clu_k / (n * budget), cor_k / (n * budget), step


# --------------------------------------------------------------------------- front ends


def evaluate_arrays(human: npt.ArrayLike, estimator: npt.ArrayLike, doc: npt.ArrayLike | None = None, *,
                    options: EvaluateOptions = EvaluateOptions(), systems: Sequence[str] | None = None,
                    warnings: Sequence[str] = ()) -> EvaluateResult:
    """The protocol on flat arrays: ``human`` (n_items, n_systems) complete scores, ``estimator`` (n_items,)
    difficulty (higher = harder), ``doc`` (n_items,) document codes 0..D-1 (None: one document per item)."""
    options.check()
    h = np.ascontiguousarray(human, dtype=np.float64)
    e = np.ascontiguousarray(estimator, dtype=np.float64)
    if h.ndim != 2 or e.shape != (h.shape[0],):
        raise DDPDataError(f"human must be (n_items, n_systems) and estimator (n_items,); got {h.shape} and {e.shape}",
                           code="D844")
    if not (np.isfinite(h).all() and np.isfinite(e).all()):
        raise DDPDataError("a human score or estimator value is not finite (drop incomplete items first)",
                           code="D844")
    n, s = h.shape
    if s < 2 or n < 5:
        raise DDPDataError(f"{n} item(s) and {s} system(s) with complete human scores: --evaluate needs at least 5 "
                           "items and 2 systems", code="D842")
    d = np.arange(n) if doc is None else np.asarray(doc, dtype=np.int64)
    warns = list(warnings)
    perfect = (float(h.max()) if options.perfect is None else float(options.perfect)) + 0.0  # no -0.0
    full_means = h.mean(axis=0)
    m = n if options.level == "segment" else int(d.max()) + 1
    tie_key = (np.random.Generator(np.random.PCG64([options.seed, 2])).permutation(m)
               if options.ties == "random" else None)
    unit, order = _ranking_units(e, d, options.level, tie_key)
    pos = np.empty(m, dtype=np.int64)
    pos[order] = np.arange(m)
    e_rank = (m - pos[unit]).astype(np.float64)  # the ranking with its tie-break, as a strict estimator
    step = options.parity_step or max(1, math.ceil(m / PARITY_MAX_PREFIXES))
    tables = []
    par_clu, par_cor = [], []
    # random orderings for the parity normalisation: a fake estimator ranking units in a random order
    rng = np.random.Generator(np.random.PCG64([options.seed, 1]))
    random_orderings = [rng.permutation(m).astype(np.float64)[unit] for _ in range(options.n_parity_random)]
    for b in options.budgets:
        k = max(1, math.ceil(b * m - 1e-9))
        sel_mask = _masks_from_units(unit, order[None, :k], m)
        if k < m:
            uval = e if options.level == "segment" else np.maximum.reduceat(e[np.argsort(d, kind="stable")],
                                                                            np.r_[0, np.flatnonzero(np.diff(np.sort(d))) + 1])
            cut = uval[order[k - 1]]
            n_tie, n_in = int(np.sum(uval == cut)), int(np.sum(uval[order[:k]] == cut))
            if n_in < n_tie:
                warns.append(f"budget {b:g}: the cut falls inside a tie: {n_in} of the {n_tie} units with value "
                             f"{cut:g} are in the subset, chosen " + ("at random (seeded, --ties random)" if options.ties == "random"
                                                                 else "by input order (--ties input)"))
        rnd_mask = _masks_from_units(unit, random_units(options.n_random, m, k, options.seed), m)
        sel = _measures(h, e, sel_mask, full_means, perfect, options.alpha)
        rnd = _measures(h, e, rnd_mask, full_means, perfect, options.alpha)
        n_items = int(sel_mask.sum())
        row: dict[str, Any] = {"budget": b, "n_units": k, "n_items": n_items,
                               "n_documents": int(np.unique(d[sel_mask[0]]).size),
                               "random_n_items_mean": float(rnd_mask.sum(axis=1).mean())}
        for name in MEASURES:
            row[name] = _summary(float(sel[name][0]), rnd[name])
        targets = (float(np.nanmean(rnd["clusters"])), float(np.nanmean(rnd["spearman"])))
        pc, pr, _ = parity_budget(h, e_rank, d, options.level, b, *targets, full_means, options.alpha, step)
        # subset2evaluate eval_clucor_randnorm: the same parity of random orderings (their own luck of a
        # non-monotone prefix reaching the target), to divide by
        rp = np.array([parity_budget(h, fake, d, options.level, b, *targets, full_means, options.alpha, step)[:2]
                       for fake in random_orderings])
        rc, rr = float(rp[:, 0].mean()), float(rp[:, 1].mean())
        row.update({"parity_clusters": pc, "parity_spearman": pr, "random_parity_clusters": rc,
                    "random_parity_spearman": rr, "parity_clusters_randnorm": pc / rc,
                    "parity_spearman_randnorm": pr / rr})
        par_clu.append((pc, pc / rc))
        par_cor.append((pr, pr / rr))
        if n_items < 30:
            w = (f"budget {b:g}: the subset has {n_items} items; its cluster count and correlations rest on a thin "
                 "sample")
            warns.append(w)
        tables.append(row)
    sig = {"ddpcore": __version__, "command": "ddp select --evaluate", "budgets": list(options.budgets),
           "n_random": options.n_random, "seed": options.seed, "level": options.level, "alpha": options.alpha,
           "perfect": perfect, "parity_step": step, "n_parity_random": options.n_parity_random,
           "ties": options.ties, "ties_rng": "numpy Generator(PCG64([seed, 2])).permutation(n_units): rank among "
                                             "equal values (--ties random)",
           "rng": RNG, "parity_rng": "numpy Generator(PCG64([seed, 1])).permutation(n_units), n_parity_random times",
           "n_items": n, "n_systems": s,
           "systems": list(systems) if systems is not None else None,
           "definitions": "zouharvi/subset2evaluate evaluate.py (eval_subset_clusters, eval_subset_correlation, "
                          "eval_clucor_par)"}
    pa_c, pa_r = np.array(par_clu), np.array(par_cor)
    parity = {"clusters": float(pa_c[:, 0].mean()), "spearman": float(pa_r[:, 0].mean()),
              "clusters_randnorm": float(pa_c[:, 1].mean()), "spearman_randnorm": float(pa_r[:, 1].mean())}
    return EvaluateResult(tables=tables, parity=parity,
                          n_items=n, n_systems=s, n_documents=int(np.unique(d).size), warnings=warns, signature=sig)


def evaluate_selection(scores: pl.DataFrame, profile: pl.DataFrame, *, human_col: str, ddp_col: str = "ddp",
                       document_col: str = "document_id", segment_col: str = "segment_id", system_col: str = "system",
                       exclude_systems: Sequence[str] = (), strict_join: bool = False,
                       options: EvaluateOptions = EvaluateOptions(), warn: Any = None,
                       name: str = "score table", profile_name: str = "<profile>") -> EvaluateResult:
    """Join a score table (one row per (document, segment, system), column ``human_col``) to a profile
    (``document_col``, ``segment_col``, ``ddp_col``) and run :func:`evaluate_arrays`.

    Dropped rows are counted on ``warn`` and in ``warnings``: score rows without a profile row, items
    where some system has no (or a null) human score, score rows without a system. ``strict_join``: a join
    that drops rows is D843. A (document, segment, system) key on two score rows is D873, an ``exclude_systems``
    name the table does not have D872, a human score that is not a number D654 (``name``: the table in messages).
    The profile (``profile_name`` in messages) is checked as ``ddp select --profile`` checks it: D780 without
    ``ddp_col``, D781 when it holds no DDP values (text, booleans, fractions, NaN, nulls), D635 without the id
    columns, D637 when a (document, segment) key is on two rows (e.g. a per-sentence ``--sentences`` table).
    """
    import polars as pl

    from ..io.profiles import check_ddp_col, check_ddp_values, check_no_null_ddp

    options.check()
    check_ddp_col(profile.columns, ddp_col, profile_name, profile.schema.get(ddp_col))
    missing = [c for c in (document_col, segment_col, ddp_col) if c not in profile.columns]
    if missing:
        raise DDPDataError(f"{profile_name}: column(s) {', '.join(missing)} missing; expected a `ddp profile` segment "
                           f"table (columns: {', '.join(profile.columns[:20])})", code="D635")
    check_ddp_values(profile, ddp_col, profile_name)
    check_no_null_ddp(profile, ddp_col, profile_name)
    pdup = profile.select(pl.struct(document_col, segment_col).is_duplicated().alias("__d"))["__d"]
    if pdup.any():  # each score row would join two DDP values (and the join counts would go negative)
        i = int(pdup.arg_true()[0])
        d, sg = profile[document_col][i], profile[segment_col][i]
        j = int(profile.with_row_index("__i").filter(pl.col(document_col).eq_missing(d)
                                                     & pl.col(segment_col).eq_missing(sg))["__i"][1])
        per_sentence = " (one row per sentence: a `ddp profile --sentences` table)" if "sentence" in profile.columns \
            else ""
        raise DDPDataError(f"{profile_name}, rows {i + 1} and {j + 1}: document {d!r}, segment {sg!r} appears more "
                           f"than once{per_sentence}; use the segment table "
                           "of one `ddp profile` run (one row per segment)", code="D637")
    for c, flag in ((human_col, "--human-col"), (document_col, "--document-col"), (segment_col, "--segment-col"),
                    (system_col, "--system-col")):
        if c not in scores.columns:
            raise DDPDataError(f"{name}: no column {c!r} ({flag}); columns: {', '.join(scores.columns[:16])}",
                               code="D841")
    keys = [document_col, segment_col]
    # segment ids: integers when both sides hold numbers, else compared as text (as ddp select matches ids;
    # a strict integer cast of text ids such as "s1" was an internal error)
    both_num = scores.schema[segment_col].is_numeric() and profile.schema[segment_col].is_numeric()
    seg_t = pl.Int64 if both_num else pl.String
    score = pl.col(human_col)
    if not scores.schema[human_col].is_numeric():
        score = score.cast(pl.Float64, strict=False)
        bad_h = scores.with_row_index("__r").filter(pl.col(human_col).is_not_null() & score.is_null()).head(1)
        if bad_h.height:
            raise DDPDataError(f"{name}, row {bad_h['__r'][0] + 1}, column {human_col!r}: "
                               f"{bad_h[human_col][0]!r} is not a number; give numeric human scores (--human-col)",
                               code="D654")
    sc = scores.select(pl.col(document_col).cast(pl.String), pl.col(segment_col).cast(seg_t),
                       pl.col(system_col).cast(pl.String), score.cast(pl.Float64).alias("__h")).with_row_index("__r")
    pr = profile.select(pl.col(document_col).cast(pl.String), pl.col(segment_col).cast(seg_t),
                        pl.col(ddp_col).cast(pl.Float64).alias("__e")).with_row_index("__row")
    warns: list[str] = []

    def note(msg: str) -> None:
        warns.append(msg)
        if warn is not None:
            warn(msg)

    have = set(sc[system_col].drop_nulls().unique().to_list())
    unknown = [x for x in dict.fromkeys(exclude_systems) if x not in have]
    if unknown:  # a misspelt name would leave the system in, in silence
        raise DDPUsageError(f"--exclude-system {unknown[0]}: not a system of {name} (column {system_col!r}; "
                            f"systems: {', '.join(sorted(have)[:20])}{' ...' if len(have) > 20 else ''})",
                            code="D872")
    n_null_sys = int(sc[system_col].null_count())
    if n_null_sys:  # a score without a system belongs to no column of the (segment, system) matrix
        note(f"{n_null_sys} score row(s) have no system (column {system_col!r} is empty) and are left out")
        sc = sc.filter(pl.col(system_col).is_not_null())
    dup = sc.filter(pl.struct(*keys, system_col).is_duplicated())
    if dup.height:  # one score per (segment, system): the pivot would keep the first of two in silence
        first = dup.row(0, named=True)
        again = dup.filter(pl.col(document_col).eq_missing(first[document_col])
                           & pl.col(segment_col).eq_missing(first[segment_col])
                           & pl.col(system_col).eq_missing(first[system_col]))
        raise DDPDataError(
            f"{name}, rows {again['__r'][0] + 1} and {again['__r'][1] + 1} (1-based, without the header): "
            f"document {first[document_col]!r}, segment {first[segment_col]!r}, system {first[system_col]!r} is "
            f"scored twice ({dup.height} rows share a (document, segment, system) key); keep one human score per "
            "system and segment (e.g. average the ratings first)", code="D873")
    sc = sc.filter(~pl.col(system_col).is_in(list(exclude_systems)))

    items = sc.select(keys).unique()
    joined = items.join(pr, on=keys, how="inner")
    lost, unused = items.height - joined.height, pr.height - joined.height
    if lost or unused:
        msg = (f"join: {lost} scored segment(s) have no profile row and {unused} profile row(s) no scores "
               f"({joined.height} segments joined on {document_col}, {segment_col})")
        if strict_join:
            raise DDPDataError(f"--strict-join: {msg}; profile the same test set the scores are for", code="D843")
        note(msg)
    scored = sc.filter(pl.col("__h").is_not_null() & pl.col("__h").is_not_nan())
    # one column per system under a code, never under its name: a system named like a key or an internal
    # column (document_id, __e, __row...) would collide with it (a duplicate-column error, or the DDP or the
    # row numbers read as that system's scores)
    systems = sorted(scored[system_col].unique().to_list())
    taken = set(keys) | set(joined.columns)
    code = {}
    for k, s in enumerate(systems):
        c = f"__s{k}"
        while c in taken:
            c = "_" + c
        code[s] = c
    wide = scored.with_columns(pl.col(system_col).replace_strict(code, return_dtype=pl.String)).pivot(
        on=system_col, index=keys, values="__h", aggregate_function="first")
    cols = [code[s] for s in systems]
    full = joined.join(wide, on=keys, how="left").sort("__row")  # the profile's (test set's) order
    complete = full.filter(pl.all_horizontal([pl.col(c).is_not_null() for c in cols])) if systems else full
    if complete.height < full.height:
        note(f"{full.height - complete.height} of {full.height} segment(s) lack a human score ({human_col}) for at "
             f"least one of the {len(systems)} systems and are left out (missing scores are never 0)")
    if complete["__e"].null_count():
        raise DDPDataError(f"the profile's {ddp_col} is null for a joined segment", code="D844")
    _, first, inv = np.unique(complete[document_col].to_numpy(), return_index=True, return_inverse=True)
    doc = np.argsort(np.argsort(first, kind="stable"), kind="stable")[inv]  # documents numbered in input order
    res = evaluate_arrays(complete.select(cols).to_numpy(), complete["__e"].to_numpy(), doc, options=options,
                          systems=systems, warnings=warns)
    res.signature.update({"human_col": human_col, "ddp_col": ddp_col, "exclude_systems": list(exclude_systems),
                          "columns": {"document": document_col, "segment": segment_col, "system": system_col}})
    return res


def render_markdown(res: EvaluateResult) -> str:
    """One Markdown table per budget: measure, selected, random mean [2.5, 97.5], percentile."""
    out = [f"{res.n_items} segments, {res.n_documents} documents, {res.n_systems} systems; "
           f"{res.signature['n_random']} random subsets (seed {res.signature['seed']}), level {res.signature['level']}"
           + ("" if res.signature.get("ddp_col", "ddp") == "ddp" else f", selected by {res.signature['ddp_col']}"),
           ""]
    for t in res.tables:
        out += [f"**budget {t['budget']:g}** ({t['n_items']} segments, {t['n_documents']} documents; parity: clusters "
                f"{t['parity_clusters']:.2f} (/random {t['parity_clusters_randnorm']:.2f}), spearman "
                f"{t['parity_spearman']:.2f} (/random {t['parity_spearman_randnorm']:.2f}))", "",
                "| measure | selected | random mean | random 95% | percentile |", "|---|---:|---:|---:|---:|"]
        for name in MEASURES:
            r = t[name]
            fmt = (lambda v: "—" if v is None else f"{v:.3f}")
            out.append(f"| {name} | {fmt(r['selected'])} | {fmt(r['random_mean'])} | "
                       f"[{fmt(r['random_q025'])}, {fmt(r['random_q975'])}] | {fmt(r['percentile'])} |")
        out.append("")
    out.append(f"average parity: clusters {res.parity['clusters']:.2f} (/random {res.parity['clusters_randnorm']:.2f}), "
               f"spearman {res.parity['spearman']:.2f} (/random {res.parity['spearman_randnorm']:.2f})")
    if res.warnings:
        out += [""] + [f"warning: {w}" for w in res.warnings]
    return "\n".join(out)


__all__ = ["ERROR_CODES", "EvaluateOptions", "EvaluateResult", "MEASURES", "clusters_rows", "evaluate_arrays",
           "evaluate_selection", "parity_budget", "random_units", "render_markdown", "spearman_rows", "tau_rows"]
