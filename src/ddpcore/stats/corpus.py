"""Corpus-level BLEU, chrF and TER in ``ddp stats compare``: sufficient statistics, resampled by segment or document.

A corpus metric is not a mean of segment scores: BLEU, chrF and TER are computed from the *sums* of
per-segment sufficient statistics (sacrebleu's design). :func:`sufficient_stats` gets those from
sacrebleu (``metric._extract_corpus_statistics``: the same tokenisation and n-gram counts as
``sacrebleu -m bleu chrf ter``); :func:`corpus_score` turns summed statistics into the score for
any number of rows at once (the formulas of sacrebleu 2.x ``compute_bleu`` with ``exp`` smoothing,
``CHRF._compute_f_score`` and ``TER._compute_score_from_stats``, vectorised);
:func:`compare_corpus` is the paired bootstrap and approximate randomization of
:mod:`ddpcore.stats.compare` on those statistics.

Statistics per metric (columns of the (n_segments, k) matrix)
------------------------------------------------------------
* ``bleu`` (k = 10): hyp length, ref length, matches of 1..4-grams, totals of 1..4-grams.
* ``chrf`` (k = 18): per character n-gram order 1..6, (hyp count, ref count, matches).
* ``ter`` (k = 2): edits, reference length.

Resampling (the same generators as :mod:`ddpcore.stats.compare`, so a run is regenerable)
--------------------------------------------------------------------------------------
Units are segments (``unit="segment"``, sacrebleu's setting) or documents (``unit="document"``:
the statistics of a document's segments are summed first, then whole documents are drawn or
swapped, which sacrebleu cannot). Bootstrap replicate b sums the statistics of the drawn units
(``counts[b, u]`` times unit u) and scores every system; ``p_bs = (#{|d_b| - mean|d| > |diff|} + 1)
/ (B + 1)``. AR trial t builds pseudo-systems ``keep @ baseline + ~keep @ system`` and the reverse;
``p_ar = (#{|score(A_t) - score(B_t)| > |diff|} + 1) / (T + 1)``. Given sacrebleu's own draws
(``indices`` = its ``rng.choice`` matrix, ``ar_keep`` = its ``pos_sel``) the p-values are
sacrebleu's ``--paired-bs`` / ``--paired-ar`` ones (checked in tests/stats/test_corpus.py).
As in :mod:`ddpcore.stats.compare`, a system equal to the baseline on every unit gets p = 1; so does a
test whose every replicate / trial ties too (the observed difference 0 and every resampled one 0, e.g. BLEU 0
for both systems), where sacrebleu's strictly-greater count would give its floor 1/(B+1), "significant".

Error codes D835-D839 and D950-D952 (with D390, D392, D393, D396, D399 of :mod:`ddpcore.stats.compare`).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .._version import __version__
from .. import schema
from ..errors import DDPDataError, DDPUsageError
from .compare import ComparisonArrays

CorpusMetric = Literal["bleu", "chrf", "ter"]
CORPUS_METRICS = ("bleu", "chrf", "ter")
#: TER: lower is better
LOWER_IS_BETTER = frozenset({"ter"})
#: number of sufficient statistics per metric
N_STATS = {"bleu": 10, "chrf": 18, "ter": 2}

ERROR_CODES = {
    "D835": "corpus metrics need sacrebleu (pip install sacrebleu), or an unknown corpus metric name",
    "D836": "sufficient statistics of the wrong shape for the metric, or negative/non-finite",
    "D837": "a hypothesis or reference text is missing (null) for a (document, segment, system)",
    "D838": "indices / ar_keep of the wrong shape or range",
    "D320": "--reference-col: the reference columns repeat, or one of them is the --hypothesis-col",
    "D950": "a system's reference text of a segment differs from the baseline's (--reference-col): systems are "
            "compared against one reference",
    "D951": "the hypothesis or reference column holds numbers or other non-text values (--hypothesis-col, "
            "--reference-col)",
    "D952": "a --score-col is named like a --corpus-metric (bleu, chrf, ter): the two results would share a name",
}
_MY_LOG_ZERO = -9999999999.0  # sacrebleu my_log(0)


def _check_metric(metric: str) -> str:
    if metric not in CORPUS_METRICS:
        raise DDPUsageError(f"unknown corpus metric {metric!r}; choose from {', '.join(CORPUS_METRICS)} "
                            "(--corpus-metric)", code="D835")
    return metric


def check_corpus_metrics(metrics: Sequence[str]) -> list[str]:
    """``metrics`` checked (``--corpus-metric``): every name is one of :data:`CORPUS_METRICS`, else D835
    naming it (usage, exit 2); at least one name."""
    if isinstance(metrics, str) or not len(metrics):
        raise DDPUsageError(f"corpus metrics: give a list of names from {', '.join(CORPUS_METRICS)} "
                            f"(--corpus-metric), got {metrics!r}", code="D835")
    return [_check_metric(m) for m in metrics]


def check_corpus_flags(corpus: Sequence[str], score_cols: Sequence[str], lower_is_better: Sequence[str]) -> list[str]:
    """``ddp stats compare``'s corpus-metric flags, checked before any work: ``corpus`` (``--corpus-metric``) known
    names (D835); no ``score_cols`` (``--score-col``) of the same name (D952: one result table per name, one would
    silently replace the other); ``lower_is_better`` naming a corpus metric only for TER, which already has that
    direction (D390: BLEU and chrF are higher-is-better by definition), and naming something else only with
    ``score_cols`` (D390). Returns the ``lower_is_better`` names left for the ``score_cols`` metrics."""
    check_corpus_metrics(corpus)
    both = [m for m in score_cols if m in corpus]
    if both:
        raise DDPUsageError(f"--score-col {both[0]} and --corpus-metric {both[0]}: both results would be called "
                            f"{both[0]!r}; compare the score column under another name (rename the column) or leave "
                            "one of the flags out", code="D952")
    fixed = [m for m in lower_is_better if m in corpus and m not in LOWER_IS_BETTER]
    if fixed:
        raise DDPUsageError(f"--lower-is-better {fixed[0]}: the corpus metric {fixed[0]} is higher-is-better by "
                            "definition (only ter is lower-is-better, already set); leave it out of --lower-is-better",
                            code="D390")
    rest = [m for m in lower_is_better if m not in corpus]
    if rest and not score_cols:
        raise DDPUsageError(f"--lower-is-better names {rest}, which are neither metric columns (no --score-col given) "
                            f"nor corpus metrics ({list(corpus)})", code="D390")
    return rest


#: BLEU's tokenizer unless ``--tokenize`` names another (sacrebleu's default without a target language)
DEFAULT_TOKENIZE = "13a"
#: sacrebleu's BLEU tokenizer for a target language that 13a does not split into words (sacrebleu picks it from
#: ``trg_lang``; WMT's BLEU for these languages uses it)
LANGUAGE_TOKENIZE = {"zh": "zh", "ja": "ja-mecab", "ko": "ko-mecab"}


def check_tokenize(tokenize: str) -> str:
    """``tokenize`` (``--tokenize``) if sacrebleu's BLEU can use it here: a name it knows (D953, usage) whose
    dependencies are installed and whose model needs no download (D953 with sacrebleu's reason)."""
    _sacrebleu_metric("bleu", tokenize)
    return tokenize


def _sacrebleu_metric(metric: str, tokenize: str = DEFAULT_TOKENIZE) -> Any:
    _check_metric(metric)
    try:
        from sacrebleu.metrics import BLEU, CHRF, TER
    except ImportError:  # pragma: no cover - sacrebleu is installed with the test extras
        raise DDPUsageError("corpus metrics need sacrebleu for their tokenisation and n-gram counts: "
                            "pip install 'sacrebleu>=2'", code="D835") from None
    if metric != "bleu":  # chrF counts characters; TER keeps its defaults (--tokenize is BLEU's)
        return {"chrf": CHRF, "ter": TER}[metric]()
    try:
        return BLEU(tokenize=tokenize)
    except KeyError:
        from sacrebleu.metrics.bleu import _TOKENIZERS

        raise DDPUsageError(f"--tokenize {tokenize}: not a sacrebleu BLEU tokenizer; use one of "
                            f"{', '.join(sorted(_TOKENIZERS))}", code="D953") from None
    except Exception as exc:  # a tokenizer whose extra package is missing, or whose model would be downloaded
        first = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        raise DDPUsageError(f"--tokenize {tokenize}: sacrebleu cannot use this tokenizer here ({first}); install "
                            "what it needs (e.g. pip install 'sacrebleu[ja]' for ja-mecab, 'sacrebleu[ko]' for "
                            "ko-mecab) or choose another", code="D953") from None


def sufficient_stats(hypotheses: Sequence[str], references: Sequence[str] | Sequence[Sequence[str]],
                     metric: CorpusMetric, tokenize: str = DEFAULT_TOKENIZE) -> npt.NDArray[np.float64]:
    """Per-segment sufficient statistics, shape (n_segments, ``N_STATS[metric]``), float64
    (sacrebleu 2.x ``_extract_corpus_statistics(hypotheses, [references])``, default settings; BLEU with the
    ``tokenize`` tokenizer). ``references``: one reference per segment, or several reference streams (a
    sequence of such sequences, sacrebleu's multi-reference layout: BLEU clips n-gram counts by the largest
    count in any reference and takes the closest reference length, chrF the best-scoring reference, TER the
    fewest edits over the average reference length)."""
    m = _sacrebleu_metric(metric, tokenize)
    streams = [list(references)] if not len(references) or isinstance(references[0], str) else \
        [list(r) for r in references]
    for r in streams:
        if len(hypotheses) != len(r):
            raise DDPDataError(f"{len(hypotheses)} hypotheses but {len(r)} references", code="D836")
    if not len(hypotheses):
        return np.zeros((0, N_STATS[metric]))
    st = np.asarray(m._extract_corpus_statistics(list(hypotheses), streams), dtype=np.float64)
    return st.reshape(len(hypotheses), N_STATS[metric])


def corpus_score(stats: npt.ArrayLike, metric: CorpusMetric) -> npt.NDArray[np.float64]:
    """Score(s) from summed statistics, shape ``stats.shape[:-1]`` (0-100; TER in % edits)."""
    _check_metric(metric)
    st = np.asarray(stats, dtype=np.float64)
    if st.shape[-1:] != (N_STATS[metric],) or not np.isfinite(st).all() or (st < 0).any():
        raise DDPDataError(f"{metric} statistics must be finite, non-negative, with last axis "
                           f"{N_STATS[metric]}; got shape {st.shape}", code="D836")
    if metric == "bleu":
        return _bleu(st)
    if metric == "chrf":
        return _chrf(st)
    return _ter(st)


def _bleu(st: np.ndarray) -> np.ndarray:
    """sacrebleu ``BLEU.compute_bleu(smooth_method="exp", effective_order=False, max_ngram_order=4)``."""
    sys_len, ref_len = np.floor(st[..., 0]), np.floor(st[..., 1])  # int() in sacrebleu
    correct, total = st[..., 2:6], st[..., 6:10]
    with np.errstate(divide="ignore", invalid="ignore"):
        bp = np.where(sys_len < ref_len, np.where(sys_len > 0, np.exp(1.0 - ref_len / sys_len), 0.0), 1.0)
        # the loop stops at the first order with total 0: that order and later ones keep precision 0
        alive = np.cumprod(total > 0, axis=-1).astype(bool)
        zero = alive & (correct == 0)
        smooth = np.cumsum(zero, axis=-1)  # smooth_mteval doubles at each zero-match order
        prec = np.where(zero, 100.0 / (np.power(2.0, smooth) * total),
                        np.where(alive, 100.0 * correct / total, 0.0))
        logs = np.where(prec > 0, np.log(np.where(prec > 0, prec, 1.0)), _MY_LOG_ZERO)
    s = ((logs[..., 0] + logs[..., 1]) + logs[..., 2]) + logs[..., 3]  # python sum() order
    score = bp * np.exp(s / 4.0)
    return np.where((correct > 0).any(axis=-1), score, 0.0)


def _bleu_exact(row: np.ndarray) -> float:
    """One BLEU score from summed statistics (10,), with sacrebleu's scalar arithmetic: ``math.log`` /
    ``math.exp`` and the builtin ``sum`` (numpy's SIMD ``log``/``exp`` can differ from them in the last bit),
    so a reported corpus score is sacrebleu's to the last bit. One call per system, never per replicate."""
    import math

    sys_len, ref_len = int(row[0]), int(row[1])
    correct, total = [float(x) for x in row[2:6]], [float(x) for x in row[6:10]]
    bp = 1.0
    if sys_len < ref_len:
        bp = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
    if not any(correct):
        return 0.0
    precisions = [0.0] * 4
    smooth = 1.0
    for n in range(4):
        if total[n] == 0:
            break
        if correct[n] == 0:
            smooth *= 2
            precisions[n] = 100. / (smooth * total[n])
        else:
            precisions[n] = 100. * correct[n] / total[n]
    return bp * math.exp(sum([math.log(p) if p != 0.0 else _MY_LOG_ZERO for p in precisions]) / 4)


def _chrf(st: np.ndarray, beta: float = 2.0, order: int = 6) -> np.ndarray:
    """sacrebleu ``CHRF._compute_f_score`` (char_order 6, word_order 0, beta 2, eps_smoothing False)."""
    factor = beta ** 2
    n_hyp, n_ref, n_match = st[..., 0::3], st[..., 1::3], st[..., 2::3]
    with np.errstate(divide="ignore", invalid="ignore"):
        prec = np.where(n_hyp > 0, n_match / n_hyp, 1e-16)
        rec = np.where(n_ref > 0, n_match / n_ref, 1e-16)
    eff = (n_hyp > 0) & (n_ref > 0)
    avg_prec = np.zeros(st.shape[:-1])
    avg_rec = np.zeros(st.shape[:-1])
    for i in range(order):  # six orders: python's left-to-right sum, vectorised over rows
        avg_prec = avg_prec + np.where(eff[..., i], prec[..., i], 0.0)
        avg_rec = avg_rec + np.where(eff[..., i], rec[..., i], 0.0)
    n_eff = eff.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        avg_prec = np.where(n_eff > 0, avg_prec / n_eff, 0.0)
        avg_rec = np.where(n_eff > 0, avg_rec / n_eff, 0.0)
        score = (1 + factor) * avg_prec * avg_rec
        score = score / ((factor * avg_prec) + avg_rec)
    return np.where((avg_prec + avg_rec) != 0, 100 * score, 0.0)


def _ter(st: np.ndarray) -> np.ndarray:
    edits, ref = st[..., 0], st[..., 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(ref > 0, edits / ref, np.where(edits > 0, 1.0, 0.0))
    return 100 * r


# --------------------------------------------------------------------------- resampling


@dataclasses.dataclass(frozen=True)
class CorpusComparison(ComparisonArrays):
    """:func:`compare_corpus` for one metric (``metric``); arrays of shape (n_systems,), baseline = row
    ``baseline``."""

    metric: str = ""
    #: (n_systems,) bool: the system's stats differ from the baseline's, yet its score equals the baseline's in
    #: the data and in every bootstrap replicate and every AR trial that ran (e.g. BLEU 0 for both); its
    #: p-values are 1, as for an identical system (sacrebleu: the floor 1/(B+1), "significant")
    tied: np.ndarray | None = None


def _unit_stats(stats: np.ndarray, unit_codes: npt.ArrayLike | None) -> np.ndarray:
    """(S, n_seg, k) -> (S, n_units, k): segments summed per unit code (0..U-1); None = segments."""
    if unit_codes is None:
        return stats
    codes = np.asarray(unit_codes, dtype=np.int64)
    if codes.shape != (stats.shape[1],) or (codes.size and codes.min() < 0):
        raise DDPDataError(f"unit_codes must be (n_segments,) non-negative ints, got {codes.shape}", code="D838")
    n_units = int(codes.max()) + 1 if codes.size else 0
    out = np.zeros((stats.shape[0], n_units, stats.shape[2]))
    np.add.at(out, (slice(None), codes), stats)
    return out


def _counts(idx: np.ndarray, n_units: int) -> np.ndarray:
    """(rows, n_units) draw counts of an index block (rows, n_draws)."""
    rows = idx.shape[0]
    flat = (np.arange(rows, dtype=np.int64)[:, None] * n_units + idx).ravel()
    return np.bincount(flat, minlength=rows * n_units).reshape(rows, n_units).astype(np.float64)


def compare_corpus(stats: npt.ArrayLike, metric: CorpusMetric, *, baseline: int = 0,
                   unit_codes: npt.ArrayLike | None = None, n_boot: int = 1000, n_ar: int = 10_000, seed: int = 0,
                   test: str = "both", confidence: float = 0.95, indices: npt.ArrayLike | None = None,
                   ar_keep: npt.ArrayLike | None = None, block_rows: int = 256) -> CorpusComparison:
    """Every system against ``baseline`` on a corpus metric.

    Parameters
    ----------
    stats : (n_systems, n_segments, k) sufficient statistics (:func:`sufficient_stats`), segments
        aligned across systems.
    unit_codes : (n_segments,) document code of each segment (0..U-1) to resample documents; None =
        segments are the units.
    indices : (n_boot, n_units) bootstrap draws (default: :func:`ddpcore.stats.bootstrap.resample_indices`).
    ar_keep : (n_ar, n_units) bool, True = the unit keeps its side (default:
        :func:`ddpcore.stats.compare.ar_swap_matrix` with ``seed``).
    """
    from .bootstrap import resample_indices
    from .compare import _order_stat_ci, ar_swap_matrix

    st = np.asarray(stats, dtype=np.float64)
    if st.ndim != 3 or st.shape[2] != N_STATS[_check_metric(metric)]:
        raise DDPDataError(f"{metric} stats must have shape (n_systems, n_segments, {N_STATS[metric]}), got "
                           f"{st.shape}", code="D836")
    us = _unit_stats(st, unit_codes)
    n_sys, n_units, k = us.shape
    full = corpus_score(us.sum(axis=1), metric)
    diff = full - full[baseline]
    flat = us.transpose(1, 0, 2).reshape(n_units, n_sys * k)
    p_bs = p_ar = None
    idx = np.asarray(indices, dtype=np.int64) if indices is not None else resample_indices(n_boot, n_units, seed)
    if idx.ndim != 2 or idx.shape[1] != n_units or (idx.size and (idx.min() < 0 or idx.max() >= n_units)):
        raise DDPDataError(f"indices must be (n_boot, {n_units}) unit numbers, got {idx.shape}", code="D838")
    reps = np.empty((n_sys, idx.shape[0]))
    for a in range(0, idx.shape[0], block_rows):
        c = _counts(idx[a:a + block_rows], n_units)
        reps[:, a:a + block_rows] = corpus_score((c @ flat).reshape(-1, n_sys, k), metric).T
    mean, lo, hi = _order_stat_ci(reps, confidence)
    d = reps - reps[baseline]
    _, dlo, dhi = _order_stat_ci(d, confidence)
    same = np.all(us == us[baseline], axis=(1, 2))
    # a tie in the data and in every replicate / trial (identical stats, or a metric constant on them such as
    # BLEU 0 for both): nothing can exceed the observed 0, so sacrebleu's count gives its floor 1/(B+1); p = 1
    tied = np.zeros(n_sys, dtype=bool)  # ties that are not identical stats, for the caller's warning
    if test in ("bootstrap", "both"):
        bs_tied = same | ((diff == 0) & np.all(d == 0, axis=1))
        tied |= bs_tied
        a_b = np.abs(d)
        p_bs = (np.sum(a_b - a_b.mean(axis=1, keepdims=True) > np.abs(diff)[:, None], axis=1) + 1.0) / (d.shape[1] + 1)
        p_bs[bs_tied] = 1.0
        p_bs[baseline] = np.nan
    if test in ("ar", "both"):
        keep = np.asarray(ar_keep, dtype=bool) if ar_keep is not None else ar_swap_matrix(n_ar, n_units, seed)
        if keep.ndim != 2 or keep.shape[1] != n_units:
            raise DDPDataError(f"ar_keep must be (n_ar, {n_units}) bool, got {keep.shape}", code="D838")
        bl = us[baseline]
        exceed = np.zeros(n_sys)
        moved = np.zeros(n_sys, dtype=bool)  # some trial's pseudo-systems score apart
        for a in range(0, keep.shape[0], block_rows):
            kb = keep[a:a + block_rows].astype(np.float64)
            nb = 1.0 - kb
            sa = np.einsum("tu,uk->tk", kb, bl)[:, None, :] + np.einsum("tu,suk->tsk", nb, us)
            sb = np.einsum("tu,uk->tk", nb, bl)[:, None, :] + np.einsum("tu,suk->tsk", kb, us)
            stat = np.abs(corpus_score(sa, metric) - corpus_score(sb, metric))
            exceed += np.sum(stat > np.abs(diff)[None, :], axis=0)
            moved |= np.any(stat != 0, axis=0)
        p_ar = (exceed + 1.0) / (keep.shape[0] + 1)
        ar_tied = same | ((diff == 0) & ~moved)
        p_ar[ar_tied] = 1.0
        p_ar[baseline] = np.nan
        tied |= ar_tied
    tied[baseline] = False
    if metric == "bleu":  # reported: sacrebleu's scalar score to the last bit (the tests above stay on ``full``,
        # the same vectorised arithmetic as every replicate and trial, so the all-keep trial ties it exactly)
        full = np.array([_bleu_exact(row) for row in us.sum(axis=1)])  # one per system
        diff = full - full[baseline]
    return CorpusComparison(metric=metric, score=full, boot_mean=mean, ci_low=lo, ci_high=hi, diff=diff,
                            diff_ci_low=dlo, diff_ci_high=dhi, p_bootstrap=p_bs, p_ar=p_ar, tied=tied & ~same)


# --------------------------------------------------------------------------- table front end


@dataclasses.dataclass(frozen=True)
class CorpusColumns:
    """Column names of the long table of :func:`compare_corpus_table` (``ddp stats compare``:
    ``--hypothesis-col``, ``--reference-col``, ``--document-col``, ``--segment-col``, ``--system-col``).
    ``reference``: one column, or a tuple of columns for multi-reference scoring (one reference per column)."""

    hypothesis: str = "hypothesis"
    reference: str | tuple[str, ...] = "reference"
    document: str = schema.DOCUMENT_ID
    segment: str = schema.SEGMENT_ID
    system: str = schema.SYSTEM

    @property
    def references(self) -> tuple[str, ...]:
        """The reference columns, in order (one or more)."""
        return (self.reference,) if isinstance(self.reference, str) else tuple(self.reference)

    def flags(self) -> tuple[tuple[str, str], ...]:
        return (("--hypothesis-col", self.hypothesis), *(("--reference-col", r) for r in self.references),
                ("--document-col", self.document), ("--segment-col", self.segment), ("--system-col", self.system))


@dataclasses.dataclass(frozen=True)
class CorpusTest:
    """How :func:`compare_corpus_table` tests every system against the baseline. Resampling: the ``unit``
    (documents or segments), ``n_boot`` bootstrap replicates, ``n_ar`` approximate-randomization trials and
    their ``seed``; the ``test`` run (bootstrap, AR or both); the decision: the multiple-test ``correction``
    (:func:`ddpcore.stats.compare.adjust_pvalues`), the interval ``confidence`` and the level ``alpha``."""

    unit: Literal["document", "segment"] = "document"
    n_boot: int = 1000
    n_ar: int = 10_000
    seed: int = 0
    test: Literal["bootstrap", "ar", "both"] = "both"
    correction: str = "holm"
    confidence: float = 0.95
    alpha: float = 0.05

    def __post_init__(self) -> None:  # checked when made, before the texts are scored (D390, D311)
        from .budget import check_seed
        from .compare import _check_count, _check_options

        _check_options(self.test, self.correction, self.confidence, self.alpha, self.unit)
        _check_count(self.n_boot, "n_boot", "--n-boot")
        _check_count(self.n_ar, "n_ar", "--n-ar")
        check_seed(self.seed)


def _corpus_frame(table: Any, cols: CorpusColumns, exclude_systems: Sequence[str]) -> tuple[Any, str]:
    """Step 1: the table (a frame or a path) and its name for messages. Its five columns are checked (D837; a
    text column holding numbers D951, null ids D399), the excluded systems left out, the system as text, and a
    text for every segment (D837). A CSV/TSV file's texts and ids are read as written (a hypothesis ``2.50``
    stays text, not the number 2.5). Column ``__row`` is the row's number in the table (0-based, before
    exclusions) for messages."""
    import polars as pl

    from ._frames import as_frame
    from ._table import table_source

    from ..io.tables import check_distinct_columns

    check_distinct_columns([f for f in cols.flags() if f[0] in ("--document-col", "--segment-col", "--system-col")])
    is_path = isinstance(table, (str, bytes)) or hasattr(table, "__fspath__")
    source = str(table) if is_path else table_source(table)
    if is_path:
        from ..io.tables import read_table

        df = read_table(table, text_columns=(cols.hypothesis, *cols.references),
                        key_columns=(cols.document, cols.segment))
    else:
        df = as_frame(table)
    for flag, c in cols.flags():
        if c not in df.columns:
            raise DDPDataError(f"column {c!r} ({flag}) is not in the table (columns: {', '.join(df.columns[:12])})",
                               code="D837")
    from .columns import check_key_types

    check_key_types(df, [cols.document, cols.segment, cols.system], source, "--document-col/--segment-col/--system-col")
    df = df.with_row_index("__row")
    if not cols.references or len(set(cols.references)) != len(cols.references) or cols.hypothesis in cols.references:
        raise DDPUsageError(f"--reference-col {', '.join(cols.references) or '(none)'}: give one or more distinct "
                            f"reference columns, none of them the --hypothesis-col {cols.hypothesis!r}", code="D320")
    for flag, c in (("--hypothesis-col", cols.hypothesis), *(("--reference-col", r) for r in cols.references)):
        dtype = df.schema[c]
        if dtype in (pl.Categorical, pl.Enum):
            df = df.with_columns(pl.col(c).cast(pl.String))
        elif dtype not in (pl.String, pl.Null):
            i = int(df[c].is_not_null().arg_max() or 0)
            raise DDPDataError(f"{source}, row {i + 1}, column {c!r} ({flag}): value {df[c][i]!r} is not a text "
                               f"(column type {dtype}); corpus metrics compare texts: store the column as strings",
                               code="D951")
    for c in (cols.document, cols.segment, cols.system):
        missing = df[c].is_null()  # null, or NaN in a float column (a NaN id is no key), as ddpcore.stats.compare
        if df[c].dtype.is_float():
            missing = missing | df[c].is_nan().fill_null(False)
        if missing.any():
            row = int(missing.arg_true()[0]) + 1
            raise DDPDataError(f"{source}, row {row}: null (or NaN) value in column '{c}'; every row needs a {c}",
                               code="D399")
    df = df.with_columns(pl.col(cols.system).cast(pl.String))
    if exclude_systems:
        from .bootstrap import _check_excluded_systems

        _check_excluded_systems(df[cols.system].unique().to_list(), exclude_systems, source)
    df = df.filter(~pl.col(cols.system).is_in([str(s) for s in exclude_systems]))
    texts = (cols.hypothesis, *cols.references)
    miss = df.filter(pl.any_horizontal(pl.col(c).is_null() for c in texts))
    if miss.height:
        r = miss.row(0, named=True)
        which = next(c for c in texts if r[c] is None)
        raise DDPDataError(f"{source}, row {r['__row'] + 1}, column {which!r}: no text for document "
                           f"{r[cols.document]!r}, segment {r[cols.segment]!r}, system {r[cols.system]!r}: corpus "
                           "metrics need both texts of every segment (an empty text in a CSV/TSV file is written \"\")",
                           code="D837")
    return df, source


def _system_stats(df: Any, baseline: str, metrics: Sequence[str], cols: CorpusColumns, source: str = "<table>",
                  unit: str = "segment", tokenize: str = DEFAULT_TOKENIZE
                  ) -> tuple[list[str], Any, dict[str, np.ndarray], np.ndarray | None]:
    """Step 2: the systems (baseline first; D392, also when it is the only one), the segment keys in sorted
    (document, segment) order -- the order of :func:`ddpcore.stats.compare.unit_keys`, ids compared as
    they are (numbers numerically) -- and per metric the sufficient statistics (n_systems, n_segments, k),
    one sacrebleu call per system and metric; with ``unit="document"`` also each segment's document code
    (else None). Every system has exactly the baseline's segments, once each (D396 duplicate row, D393
    unpaired, either way), and every system's reference of a segment is the baseline's (D950)."""
    import polars as pl

    from ._table import factorize
    from .compare import _check_paired

    systems = sorted(df[cols.system].unique().to_list())
    if baseline not in systems:
        raise DDPDataError(f"{source}: baseline {baseline!r} is not a system of the table ({', '.join(systems[:10])})",
                           code="D392")
    if len(systems) < 2:
        raise DDPDataError(f"{source}: only the baseline {baseline!r} is in the table; nothing to compare it with",
                           code="D392")
    systems = [baseline] + [s for s in systems if s != baseline]
    on = [cols.document, cols.segment]
    item_code, keys = factorize(df, on)
    n_seg, n_sys = keys.height, len(systems)
    code_of = {s: i for i, s in enumerate(systems)}
    sys_code = df[cols.system].replace_strict(code_of, return_dtype=pl.Int64).to_numpy()
    cell = item_code * n_sys + sys_code
    present = np.bincount(cell, minlength=n_seg * n_sys)
    if (present > 1).any():
        i = int(np.flatnonzero(cell == int(np.flatnonzero(present > 1)[0]))[1])
        r = df.row(i, named=True)
        raise DDPDataError(f"{source}, row {r['__row'] + 1}: duplicate row for system {r[cols.system]!r}, document "
                           f"{r[cols.document]!r}, segment {r[cols.segment]!r}; each system needs one text per "
                           "(document, segment)", code="D396")
    _check_paired(cell, n_seg, systems, keys, source, baseline, cols.document, cols.segment, None)
    order = np.argsort(sys_code * n_seg + item_code)  # system-major: system i's segments are rows i*n .. (i+1)*n
    texts = df.select(cols.hypothesis, *cols.references)[order]
    hyp = texts[cols.hypothesis]
    refs: list[list[str]] = []
    for c in cols.references:
        ref = texts[c]
        ref0 = ref.slice(0, n_seg)
        for i in range(1, n_sys):  # one vectorised comparison per system
            differs = ref.slice(i * n_seg, n_seg) != ref0
            if differs.any():
                k = int(differs.arg_true()[0])
                key = keys.row(k, named=True)
                raise DDPDataError(
                    f"{source}: document {key[cols.document]!r}, segment {key[cols.segment]!r}: system {systems[i]!r} "
                    f"has reference {ref[i * n_seg + k][:60]!r} but the baseline {baseline!r} has {ref0[k][:60]!r} "
                    f"({int(differs.sum())} such segment(s)); the systems must be scored against the same reference "
                    f"({c}, --reference-col)", code="D950")
        refs.append(ref0.to_list())
    stats_all: dict[str, np.ndarray] = {m: np.zeros((n_sys, n_seg, N_STATS[m])) for m in metrics}
    for i in range(n_sys):
        h = hyp.slice(i * n_seg, n_seg).to_list()
        for m in metrics:
            stats_all[m][i] = sufficient_stats(h, refs, m, tokenize)  # type: ignore[arg-type]
    codes = factorize(keys, [cols.document])[0] if unit == "document" else None
    return systems, keys, stats_all, codes


def _metric_comparison(m: str, r: CorpusComparison, systems: list[str], how: CorpusTest) -> Any:
    """Step 3: one metric's :class:`~ddpcore.stats.compare.MetricComparison`: p-values adjusted over the
    non-baseline systems, the decisive p (the larger of the tests run) and the verdict at ``alpha``."""
    from .compare import MetricComparison, adjust_pvalues

    low = m in LOWER_IS_BETTER
    adj = {}
    for name, p in (("bs", r.p_bootstrap), ("ar", r.p_ar)):
        if p is not None:
            a = np.full_like(p, np.nan)
            a[1:] = adjust_pvalues(p[1:], how.correction)
            adj[name] = a
    p_dec = np.full(len(systems), np.nan)
    if adj:
        p_dec[1:] = np.max(np.vstack([a[1:] for a in adj.values()]), axis=0)  # the baseline has none
    sig = np.r_[False, p_dec[1:] < how.alpha]
    better = (r.diff < 0) if low else (r.diff > 0)
    verdict = ["baseline"] + ["better" if sig[i] and better[i] else "worse" if sig[i] else "n.s."
                              for i in range(1, len(systems))]
    return MetricComparison(metric=m, lower_is_better=low, systems=systems, score=r.score, boot_mean=r.boot_mean,
                            ci_low=r.ci_low, ci_high=r.ci_high, diff=r.diff, diff_ci_low=r.diff_ci_low,
                            diff_ci_high=r.diff_ci_high, p_bootstrap=r.p_bootstrap, p_bootstrap_adj=adj.get("bs"),
                            p_ar=r.p_ar, p_ar_adj=adj.get("ar"), p_value=p_dec, significant=sig,
                            verdict=verdict)


def compare_corpus_table(table: Any, baseline: str, metrics: Sequence[str], *,
                         columns: CorpusColumns = CorpusColumns(), how: CorpusTest = CorpusTest(),
                         exclude_systems: str | Sequence[str] = (), tokenize: str = DEFAULT_TOKENIZE) -> Any:
    """``ddp stats compare --corpus-metric``: a long table with one row per (document, segment, system)
    and the hypothesis and reference texts (``columns``) -> a :class:`ddpcore.stats.compare.CompareResult`
    with one comparison per corpus metric (rendered like the segment-mean metrics), tested as ``how`` says.
    ``tokenize``: BLEU's sacrebleu tokenizer (``--tokenize``; D953 when sacrebleu cannot use it here).
    ``exclude_systems``: a name or a sequence of names (``--exclude-system``)."""
    from .compare import CompareResult

    metrics = check_corpus_metrics(metrics)
    if "bleu" in metrics:
        check_tokenize(tokenize)  # before the texts are read
    exclude_systems = [exclude_systems] if isinstance(exclude_systems, str) else exclude_systems  # one name
    df, source = _corpus_frame(table, columns, exclude_systems)
    systems, keys, stats_all, codes = _system_stats(df, baseline, metrics, columns, source, how.unit, tokenize)
    n_seg = keys.height
    n_units = int(codes.max()) + 1 if codes is not None and codes.size else n_seg
    from .bootstrap import _refuse_one_unit
    from .compare import _resampling_warnings

    _refuse_one_unit(n_units, keys.select(columns.document) if how.unit == "document" else keys, how.unit, source,
                    "the corpus-metric bootstrap and approximate randomization of every system",
                    "use --unit segment or a table with more documents" if how.unit == "document" else
                    "use a table with more segments",
                    consequence="every swap mirrors it: the CIs would collapse to the point estimates and the "
                                "p-values to their floor 1/(B+1)")
    comps = {}
    tie_notes = []
    for m in metrics:
        r = compare_corpus(stats_all[m], m, unit_codes=codes, n_boot=how.n_boot, n_ar=how.n_ar, seed=how.seed,  # type: ignore[arg-type]
                           test=how.test, confidence=how.confidence)
        comps[m] = _metric_comparison(m, r, systems, how)
        if r.tied is not None and r.tied.any():
            names = [systems[i] for i in np.flatnonzero(r.tied)]
            tie_notes.append(f"{m}: {len(names)} system(s) ({', '.join(names[:10])}) score exactly the baseline's "
                             f"{r.score[0]:g} in the data and in every replicate/trial although their texts differ: "
                             "p = 1, n.s. (sacrebleu counts nothing above the observed 0 and prints 1/(B+1))")
    import sacrebleu

    sig_d = {"ddpcore": __version__, "method": "corpus-metric paired bootstrap + AR on sufficient statistics",
             "metrics": list(metrics), "sacrebleu": sacrebleu.__version__, "tokenize": (f"BLEU {tokenize}; chrF and TER sacrebleu defaults" if tokenize != DEFAULT_TOKENIZE
                                       else "sacrebleu defaults (13a)"),
             "unit": how.unit, "n_units": n_units, "n_boot": how.n_boot, "n_ar": how.n_ar, "seed": how.seed,
             "test": how.test, "correction": how.correction, "confidence": how.confidence, "alpha": how.alpha,
             "baseline": baseline, "n_references": len(columns.references),
             "p_ties": "p = 1 when the system equals the baseline on every unit, or its score equals the baseline's "
                       "in the data and in every bootstrap replicate (bootstrap p) or AR trial (AR p); sacrebleu: "
                       "1/(B+1), 1/(T+1)",
             "columns": {"hypothesis": columns.hypothesis, "reference": ",".join(columns.references),
                         "document": columns.document, "segment": columns.segment, "system": columns.system}}
    line = "|".join(f"{k}:{sig_d[k]}" for k in ("ddpcore", "sacrebleu", "n_references", "unit", "n_boot", "n_ar", "seed", "correction",
                                                 "test", "confidence", "alpha"))
    if "bleu" in metrics and tokenize != DEFAULT_TOKENIZE:  # (without tok: BLEU's 13a)
        line += f"|tok:{tokenize}"

    return CompareResult(baseline=baseline, metrics=list(metrics), comparisons=comps, unit=how.unit, n_units=n_units,
                         n_segments=n_seg, test=how.test, n_boot=how.n_boot, n_ar=how.n_ar, seed=how.seed,
                         correction=how.correction, confidence=how.confidence, alpha=how.alpha, signature=sig_d,
                         signature_line=line,
                         warnings=_resampling_warnings(how.n_boot, how.n_ar if how.test != "bootstrap" else None, how.test,
                                                      how.correction, len(systems) - 1, float(how.alpha),
                                                      float(how.confidence)) + tuple(tie_notes))


__all__ = ["CORPUS_METRICS", "ERROR_CODES", "N_STATS", "CorpusColumns", "CorpusComparison", "CorpusTest",
           "check_corpus_flags", "check_corpus_metrics", "compare_corpus", "compare_corpus_table", "corpus_score", "sufficient_stats"]
