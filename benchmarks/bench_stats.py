"""Benchmarks of the statistics core (issue 3) against the tools a user would otherwise use.

Problems (fixed seeds; ddpcore and its peer see the same data):

* **bootstrap** -- document bootstrap of system means, 10,000 documents x 10 systems
  (100,000 rows), B = 10,000. ddpcore: ``bootstrap_system_means`` end to end from a polars
  table (loading, unit sums, resampling). Peer: ``scipy.stats.bootstrap`` with a vectorised
  ratio-of-sums statistic over the (documents x systems) sum/count arrays, documents
  paired, ``batch=100``; timed at B = 1,000 and compared per replicate (x10 to B = 10,000).
* **tost** -- paired TOST (margins +-3) over 10,000 groups x 300 pairs (3 M rows).
  ddpcore: ``tost_grouped`` from a polars table. Peers: a loop over statsmodels
  ``ttost_paired`` on 1,000 groups, scaled x10: (a) on pre-split numpy arrays (slicing not
  timed, the most favourable loop), (b) iterating ``table.group_by`` as usually written.
* **alpha** -- Krippendorff's alpha (interval) on 2 coders x 500,000 units = 1,000,000
  continuous ratings (5 % missing). Peer: the ``krippendorff`` package, timed in-process on
  2 x 50 .. 2 x 200 units (it allocates n_units x V x V floats, V = distinct values); at
  2 x 1,000 and 2 x 500,000 it runs in a subprocess under ``ulimit -v`` (4 GB) so that it
  fails there instead of exhausting the shared machine.
* **cold start** -- a fresh ``python -c "from ddpcore.stats.bootstrap import bootstrap_tau; ..."``
  (and ``ddp stats tau``) on a 10,000-row table, B = 10,000, empty Numba cache dir.

Run with pytest-benchmark::

    python -m pytest benchmarks/bench_stats.py --benchmark-enable --benchmark-columns=median,iqr,rounds

or print the comparison table (medians and ratios from one run)::

    python benchmarks/stats_table.py
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from ddpcore.stats import ResampleOptions

REPO = Path(__file__).resolve().parents[1]

# ------------------------------------------------------------------ bootstrap of system means
N_DOCS, N_SYSTEMS, B_DDP, B_SCIPY = 10_000, 10, 10_000, 1_000


def bootstrap_table(n_docs: int = N_DOCS, n_systems: int = N_SYSTEMS, seed: int = 0):
    """One document-level score per (document, system): 10,000 x 10 = 100,000 rows."""
    import polars as pl

    rng = np.random.default_rng(seed)
    doc = np.repeat(np.arange(n_docs), n_systems)
    sys_ = np.tile(np.arange(n_systems), n_docs)
    score = rng.normal(70, 12, doc.size) + 0.4 * sys_ + np.repeat(rng.normal(0, 6, n_docs), n_systems)
    return pl.DataFrame(
        {"document_id": doc, "segment_id": np.zeros(doc.size, dtype=np.int64), "system": [f"sys{k:02d}" for k in sys_], "score": score}
    )


def bootstrap_arrays(table):
    """(n_docs, n_systems) score sums and counts per document: the data scipy resamples."""
    import polars as pl

    wide = table.sort(["document_id", "system"])
    n_docs = wide["document_id"].n_unique()
    sums = wide["score"].to_numpy().reshape(n_docs, -1)
    counts = np.ones_like(sums)
    return sums, counts, pl


def scipy_bootstrap_means(sums: np.ndarray, counts: np.ndarray, n_boot: int = B_SCIPY):
    """scipy.stats.bootstrap of every system's mean (ratio of resampled sums), documents paired.

    The statistic is vectorised numpy (the fastest way to use scipy's bootstrap); ``batch``
    keeps the resample arrays at ~80 MB.
    """
    from scipy import stats

    def statistic(s, c, axis=-1):
        return s.sum(axis=axis) / c.sum(axis=axis)

    return stats.bootstrap(
        (sums.T, counts.T), statistic, n_resamples=n_boot, paired=True, vectorized=True,
        method="percentile", batch=100, rng=1, axis=-1,
    )


def ddp_bootstrap_means(table, n_boot: int = B_DDP):
    from ddpcore.stats.bootstrap import bootstrap_system_means

    return bootstrap_system_means(table, options=ResampleOptions(n_boot=n_boot, seed=1))


# ------------------------------------------------------------------ TOST over groups
N_GROUPS, N_PAIRS, N_LOOP = 10_000, 300, 1_000


def tost_table(n_groups: int = N_GROUPS, n_pairs: int = N_PAIRS, seed: int = 0):
    import polars as pl

    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(n_groups), n_pairs)
    x = rng.normal(80, 12, g.size)
    y = x + rng.normal(0, 6, g.size) + np.repeat(rng.normal(0, 1, n_groups), n_pairs)
    return pl.DataFrame({"group": g, "x": x, "y": y})


def ddp_tost(table):
    from ddpcore.stats.tost import tost_grouped

    return tost_grouped(table, "group", "x", "y", -3.0, 3.0)


def ddp_tost_unsegmented(table):
    """tost_grouped through the factorise + scattered group_moments path (the kernel before
    issue 10's segmented pass; same results), for the before/after row."""
    from ddpcore._native import load

    seg = load("stats_segments")
    real, real_scan = seg.segment_moments, seg.scan_values
    seg.segment_moments, seg.scan_values = (lambda *a: -1), (lambda a, lim: (True, True))
    try:
        return ddp_tost(table)
    finally:
        seg.segment_moments, seg.scan_values = real, real_scan


def statsmodels_loop_presliced(table, n_groups: int = N_LOOP):
    """The favourable loop: groups already split into numpy arrays (slicing not timed)."""
    from statsmodels.stats.weightstats import ttost_paired

    x = table["x"].to_numpy()
    y = table["y"].to_numpy()
    return [ttost_paired(x[i * N_PAIRS:(i + 1) * N_PAIRS], y[i * N_PAIRS:(i + 1) * N_PAIRS], -3.0, 3.0)[0] for i in range(n_groups)]


def statsmodels_loop_groupby(table, n_groups: int = N_LOOP):
    """The loop as usually written: iterate the table's groups, then call statsmodels."""
    import polars as pl
    from statsmodels.stats.weightstats import ttost_paired

    sub = table.filter(pl.col("group") < n_groups)
    return [
        ttost_paired(part["x"].to_numpy(), part["y"].to_numpy(), -3.0, 3.0)[0]
        for _, part in sub.group_by("group", maintain_order=True)
    ]


# ------------------------------------------------------------------ Krippendorff's alpha
N_UNITS_BIG = 500_000  # x 2 coders = 1,000,000 continuous ratings
PACKAGE_SIZES = (50, 100, 200)  # units (x 2 coders) the krippendorff package is timed on in-process
# krippendorff 0.9.0 builds an (n_units x V x V) float64 array (V = distinct values, ~2 per unit
# for continuous scores): 2 x 200 units -> ~0.2 GB, 2 x 1,000 -> 27 GB. Larger sizes only run
# in a capped subprocess (package_alpha_capped).
CAPPED_SIZES = (1_000, N_UNITS_BIG)


def alpha_data(n_units: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=n_units)
    x = truth + rng.normal(size=(2, n_units))
    x[rng.random(x.shape) < 0.05] = np.nan
    return x


def ddp_alpha(x: np.ndarray) -> float:
    from ddpcore.stats.agreement import krippendorff_alpha

    return krippendorff_alpha(x).alpha


def package_alpha(x: np.ndarray) -> float:
    import krippendorff

    return float(krippendorff.alpha(reliability_data=x, level_of_measurement="interval"))


def package_alpha_capped(n_units: int, limit_gb: float = 4.0, timeout: float = 300.0) -> tuple[str, float]:
    """Run the krippendorff package on ``n_units`` x 2 ratings in a subprocess whose address
    space is capped with ``ulimit -v`` (so the shared machine is never exhausted).
    Returns (outcome, seconds)."""
    code = (
        "import sys; sys.path.insert(0, %r); from bench_stats import alpha_data, package_alpha; "
        "print(package_alpha(alpha_data(%d)))" % (str(Path(__file__).parent), n_units)
    )
    kb = int(limit_gb * 1024 * 1024)
    t = time.perf_counter()
    proc = subprocess.run(
        ["bash", "-c", f"ulimit -v {kb}; exec {sys.executable} -c \"{code}\""],
        capture_output=True, text=True, timeout=timeout,
    )
    dt = time.perf_counter() - t
    if proc.returncode == 0:
        return f"ok (alpha={float(proc.stdout.strip()):.4f})", dt
    last = (proc.stderr.strip().splitlines() or ["?"])[-1]
    import re

    need = re.search(r"Unable to allocate ([\d.]+ \w+)", last)
    if need:
        return f"MemoryError, asks for {need.group(1)} (run under a {limit_gb:g} GB cap)", dt
    return f"failed under a {limit_gb:g} GB cap: {last[:80]}", dt


# ------------------------------------------------------------------ cold start
COLD_ROWS = 10_000


def cold_start_table(path: Path) -> Path:
    """10,000-row long table: 100 documents x 10 segments x 5 systems x 2 conditions."""
    import polars as pl

    rng = np.random.default_rng(3)
    rows = 100 * 10 * 5 * 2
    assert rows == COLD_ROWS
    doc = np.repeat(np.arange(100), 100)
    seg = np.tile(np.repeat(np.arange(10), 10), 100)
    sys_ = np.tile(np.repeat(np.arange(5), 2), 1000)
    cond = np.tile(np.array(["DOC", "MIX"]), 5000)
    score = np.clip(np.round(rng.normal(75, 15, rows) + 2 * sys_), 0, 100)
    pl.DataFrame(
        {"document_id": doc, "segment_id": seg, "system": [f"s{k}" for k in sys_], "condition": cond, "score": score}
    ).write_parquet(path)
    return path


def cold_start_seconds(path: Path, how: str = "python", n_boot: int = 10_000) -> float:
    """Wall time of a fresh process running the tau bootstrap on ``path`` (process start included)."""
    env = {**os.environ}
    env.pop("NUMBA_CACHE_DIR", None)
    with tempfile.TemporaryDirectory() as empty_cache:
        env["NUMBA_CACHE_DIR"] = empty_cache  # an empty Numba cache, although no stats kernel uses Numba
        if how == "python":
            cmd = [sys.executable, "-c",
                   "import sys; from ddpcore.stats import ResampleOptions; from ddpcore.stats.bootstrap import bootstrap_tau; "
                   f"r = bootstrap_tau(sys.argv[1], 'DOC', 'MIX', options=ResampleOptions(n_boot={n_boot}, seed=0)); "
                   "print(r.tau)", str(path)]
        else:
            ddp = str(Path(sys.executable).with_name("ddp"))
            cmd = [ddp, "stats", "tau", str(path), "--a", "DOC", "--b", "MIX", "--n-boot", str(n_boot)]
        t = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        dt = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} failed: {proc.stderr[-500:]}")
    return dt


# ------------------------------------------------------------------ pytest-benchmark entries
# (fixtures build the data once; each benchmark times one call)

try:
    import pytest
except ImportError:  # pragma: no cover - the table script does not need pytest
    pytest = None

if pytest is not None:

    @pytest.fixture(scope="module")
    def boot_table():
        return bootstrap_table()

    @pytest.fixture(scope="module")
    def tost_data():
        return tost_table()

    def test_bootstrap_ddpcore(benchmark, boot_table):
        res = benchmark.pedantic(ddp_bootstrap_means, args=(boot_table,), rounds=5, iterations=1)
        assert res.replicates.shape == (B_DDP, N_SYSTEMS)

    def test_bootstrap_scipy_b1000(benchmark, boot_table):
        sums, counts, _ = bootstrap_arrays(boot_table)
        res = benchmark.pedantic(scipy_bootstrap_means, args=(sums, counts), rounds=2, iterations=1)
        assert res.bootstrap_distribution.shape == (N_SYSTEMS, B_SCIPY)

    def test_tost_ddpcore(benchmark, tost_data):
        out = benchmark.pedantic(ddp_tost, args=(tost_data,), rounds=7, iterations=1)
        assert out.height == N_GROUPS

    def test_tost_statsmodels_loop_1000(benchmark, tost_data):
        out = benchmark.pedantic(statsmodels_loop_presliced, args=(tost_data,), rounds=3, iterations=1)
        assert len(out) == N_LOOP

    def test_alpha_ddpcore_1m(benchmark):
        x = alpha_data(N_UNITS_BIG)
        value = benchmark.pedantic(ddp_alpha, args=(x,), rounds=5, iterations=1)
        assert 0.4 < value < 0.6

    def test_alpha_package_2x200(benchmark):
        x = alpha_data(PACKAGE_SIZES[-1])
        value = benchmark.pedantic(package_alpha, args=(x,), rounds=2, iterations=1)
        assert abs(value - ddp_alpha(x)) < 1e-12

    def test_cold_start_python(benchmark, tmp_path):
        path = cold_start_table(tmp_path / "cold.parquet")
        benchmark.pedantic(cold_start_seconds, args=(path,), rounds=3, iterations=1)
