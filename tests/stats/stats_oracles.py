"""Slow, obviously-correct reference implementations for the statistics tests.

Nothing here is used by the package; each function loops in plain Python/numpy so that
it can be read line by line and checked against the paper's definitions.
"""
from __future__ import annotations

import math

import numpy as np
import polars as pl
from scipy import stats


def synthetic_long_table(
    seed: int = 0,
    n_docs: int = 12,
    n_systems: int = 5,
    conditions: tuple[str, ...] = ("DOC", "MIX"),
    annotators: int = 2,
    max_segments: int = 4,
    integer_scores: bool = False,
) -> pl.DataFrame:
    """Long table (document_id, segment_id, system, annotator, condition, score) with
    a system effect, a document effect and noise; documents have 1..max_segments segments."""
    rng = np.random.default_rng(seed)
    rows = []
    sys_effect = rng.normal(0, 3, n_systems)
    for d in range(n_docs):
        doc_effect = rng.normal(0, 5)
        for s in range(int(rng.integers(1, max_segments + 1))):
            for k in range(n_systems):
                for c in conditions:
                    for a in range(annotators):
                        v = 70 + doc_effect + sys_effect[k] + rng.normal(0, 8)
                        if integer_scores:
                            v = float(np.clip(np.round(v), 0, 100))
                        rows.append((f"doc{d:03d}", s, f"sys{k}", f"ann{a}", c, v))
    return pl.DataFrame(
        rows, schema=["document_id", "segment_id", "system", "annotator", "condition", "score"], orient="row"
    )


def bootstrap_tau_loop(
    df: pl.DataFrame, a: str, b: str, indices: np.ndarray, unit: str = "document", weighting: str = "segment"
) -> np.ndarray:
    """Replicate taus by literally rebuilding each resampled table and recomputing means.

    Units are sorted document ids (or sorted (document_id, segment_id) pairs); draw k of
    replicate r takes unit ``indices[r, k]`` and all of that unit's rows.
    """
    df = df.filter(pl.col("condition").is_in([a, b]))
    keys = ["document_id"] if unit == "document" else ["document_id", "segment_id"]
    units = sorted(set(df.select(keys).iter_rows()))
    rows_of = {u: [] for u in units}
    for row in df.iter_rows(named=True):
        rows_of[tuple(row[k] for k in keys)].append(row)
    systems = sorted(set(df["system"].to_list()))
    out = np.empty(indices.shape[0])
    for r in range(indices.shape[0]):
        sample = [row for k in indices[r] for row in rows_of[units[k]]]
        means = {}
        for cond in (a, b):
            vec = []
            for s in systems:
                if weighting == "segment":
                    vals = [row["score"] for row in sample if row["condition"] == cond and row["system"] == s]
                    vec.append(np.mean(vals) if vals else np.nan)
                else:  # mean over drawn documents (with multiplicity) of the document mean
                    doc_means = []
                    for k in indices[r]:
                        vals = [row["score"] for row in rows_of[units[k]] if row["condition"] == cond and row["system"] == s]
                        if vals:
                            doc_means.append(np.mean(vals))
                    vec.append(np.mean(doc_means) if doc_means else np.nan)
            means[cond] = np.array(vec)
        if np.isnan(means[a]).any() or np.isnan(means[b]).any():
            out[r] = np.nan
        else:
            out[r] = stats.kendalltau(means[a], means[b]).statistic  # scipy 1.17
    return out


def krippendorff_interval_pairs(data: np.ndarray) -> float:
    """Krippendorff's alpha (interval) straight from the pairwise definition.

    D_o = (1/n) sum_u 1/(m_u - 1) sum_{i != j in u} (v_i - v_j)^2 and
    D_e = 1/(n (n - 1)) sum_{i != j over all pairable values} (v_i - v_j)^2.
    """
    values_by_unit = []
    for u in range(data.shape[1]):
        vals = [v for v in data[:, u] if not math.isnan(v)]
        if len(vals) >= 2:
            values_by_unit.append(vals)
    pooled = [v for vals in values_by_unit for v in vals]
    n = len(pooled)
    d_o = 0.0
    for vals in values_by_unit:
        m = len(vals)
        d_o += sum((vi - vj) ** 2 for i, vi in enumerate(vals) for j, vj in enumerate(vals) if i != j) / (m - 1)
    d_o /= n
    d_e = sum((vi - vj) ** 2 for i, vi in enumerate(pooled) for j, vj in enumerate(pooled) if i != j) / (n * (n - 1))
    return 1.0 - d_o / d_e


def percentile_type7(values, q: float) -> float:
    """The q-th percentile (0..100) by Hyndman & Fan (1996) definition 7, by hand: sort, h = (n - 1) q / 100,
    x[floor h] + (h - floor h) (x[floor h + 1] - x[floor h]). (numpy's default "linear" method is this definition.)"""
    x = sorted(float(v) for v in values)
    h = (len(x) - 1) * q / 100.0
    lo = math.floor(h)
    hi = min(lo + 1, len(x) - 1)
    return x[lo] + (h - lo) * (x[hi] - x[lo])
