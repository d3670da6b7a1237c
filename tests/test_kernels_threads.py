"""Threads that never cost (issue 25 §1): the OpenMP wait policy ddpcore sets, and every OpenMP kernel
bit-identical across thread counts.

* Wait policy: GNU OpenMP prints the settings it started with when ``OMP_DISPLAY_ENV=VERBOSE`` (an
  independent witness of what the runtime read); a fresh interpreter imports ``ddpcore._native``.
  Passive shows as ``GOMP_SPINCOUNT = '0'``; the runtime's own default (variable unset) shows
  ``OMP_WAIT_POLICY = 'PASSIVE'`` too but spins 300,000 times before sleeping
  (``GOMP_SPINCOUNT = '300000'``, libgomp 12-14).
* ``resample_sums_pcg64`` (chunks of 128 draws, rows prefetched when the values exceed 1 MiB,
  partial sums carried across chunks): expected sums are rebuilt from numpy's own
  ``PCG64(seed).random_raw`` words (numpy 2.x), mapped with Python integers (``raw * n // 2**64``),
  and summed in draw order by ``numpy.cumsum`` (sequential left-to-right, so the oracle has the
  kernel's association and the comparison is exact).
* The other parallel kernels (``resample_sums_indices``, ``tau_b_rows``, ``ratio_pair_sum``,
  ``sign_flip_sums``, ``compute_distances``) give the same bits for 1, 2 and 3 threads and for the
  default (0), and each also matches a slow loop on a small case.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpcore._native import load

SK = load("stats_kernels")
CL = load("stats_cluster")
DK = load("ddp_kernels")


def _env(**changes: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMP_")}
    for k, v in changes.items():
        if v is not None:
            env[k] = v
    return env


def _display(code: str, **changes: str | None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env=_env(OMP_DISPLAY_ENV="VERBOSE", **changes))


CHECK = ("import os, ddpcore._native as n; from ddpcore._native import load; load('stats_kernels'); "
         "print(n.WAIT_POLICY); print(os.environ.get('OMP_WAIT_POLICY'))")


def test_runtime_starts_passive_unless_the_user_chose() -> None:
    out = _display(CHECK)
    assert "GOMP_SPINCOUNT = '0'" in out.stderr
    policy, env_after = out.stdout.splitlines()
    assert policy == "passive (ddpcore default)"
    assert env_after == "None"  # the user's environment is left as it was (children inherit it)


def test_user_wait_policy_is_kept() -> None:
    out = _display(CHECK, OMP_WAIT_POLICY="active")
    assert "OMP_WAIT_POLICY = 'ACTIVE'" in out.stderr
    assert out.stdout.splitlines() == ["active (OMP_WAIT_POLICY)", "active"]


def test_runtime_loaded_first_is_reported() -> None:
    code = "import ctypes; ctypes.CDLL('libgomp.so.1'); " + CHECK
    out = _display(code)
    assert "GOMP_SPINCOUNT = '300000'" in out.stderr  # the runtime's default: spin, then sleep
    assert out.stdout.splitlines()[0] == "runtime default (OpenMP already loaded)"


# --------------------------------------------------------------------------- resampling kernel


def _pcg_args(seed: int) -> tuple[int, int, int, int]:
    s = np.random.PCG64(seed).state["state"]
    return s["state"] >> 64, s["state"] & (2**64 - 1), s["inc"] >> 64, s["inc"] & (2**64 - 1)


def _oracle_sums(values: np.ndarray, n_rep: int, seed: int) -> np.ndarray:
    n_units = values.shape[0]
    raw = np.random.PCG64(seed).random_raw(n_rep * n_units)
    idx = np.array([int(w) * n_units >> 64 for w in raw], dtype=np.int64).reshape(n_rep, n_units)
    out = np.empty((n_rep, values.shape[1]))
    for r in range(n_rep):
        out[r] = np.cumsum(values[idx[r]], axis=0)[-1]  # sequential, in draw order
    return out


def _kernel_sums(values: np.ndarray, n_rep: int, seed: int, threads: int) -> np.ndarray:
    out = np.full((n_rep, values.shape[1]), np.nan)
    SK.resample_sums_pcg64(*_pcg_args(seed), np.ascontiguousarray(values), out, values.shape[0], threads)
    return out


@pytest.mark.parametrize(("n_units", "n_cols", "n_rep"), [
    (70_000, 2, 3),   # 1.1 MiB of values: the prefetching path; odd n_rep (a single last replicate)
    (300, 18, 5),     # 300 draws = 2 chunks of 128 + 44; 18 columns = a 16-column block + 2 carried
    (5, 4, 4),        # fewer draws than one chunk
    (129, 34, 2),     # one draw past a chunk; 34 columns = 2 blocks of 16 + 2
])
def test_resample_sums_pcg64_against_numpy_words(n_units: int, n_cols: int, n_rep: int) -> None:
    rng = np.random.default_rng(n_units)
    values = rng.normal(size=(n_units, n_cols)) * 10.0 ** rng.integers(-3, 4, size=(n_units, 1))
    expected = _oracle_sums(values, n_rep, seed=n_units + 7)
    for threads in (1, 2, 3, 0):
        got = _kernel_sums(values, n_rep, n_units + 7, threads)
        assert np.array_equal(got, expected), threads


@settings(max_examples=40, deadline=None)
@given(n_units=st.integers(1, 400), half_cols=st.integers(1, 12), n_rep=st.integers(1, 9), seed=st.integers(0, 2**32))
def test_resample_sums_pcg64_threads_and_oracle(n_units: int, half_cols: int, n_rep: int, seed: int) -> None:
    values = np.random.default_rng(seed).normal(size=(n_units, 2 * half_cols))
    expected = _oracle_sums(values, n_rep, seed)
    for threads in (1, 2, 4):
        assert np.array_equal(_kernel_sums(values, n_rep, seed, threads), expected)


# --------------------------------------------------------------------------- the other kernels


def _same_for_all_threads(run) -> np.ndarray:  # type: ignore[no-untyped-def]
    first = run(1)
    for threads in (2, 3, 0):
        other = run(threads)
        for a, b in zip(first if isinstance(first, tuple) else (first,), other if isinstance(other, tuple) else (other,)):
            assert np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True), threads
    return first


def test_resample_sums_indices() -> None:
    rng = np.random.default_rng(1)
    values = rng.normal(size=(50, 6))
    idx = rng.integers(0, 50, size=(37, 50))

    def run(t: int) -> np.ndarray:
        out = np.empty((37, 6))
        SK.resample_sums_indices(idx, values, out, t)
        return out

    got = _same_for_all_threads(run)
    assert np.array_equal(got, np.stack([np.cumsum(values[i], axis=0)[-1] for i in idx]))


def test_tau_b_rows() -> None:
    from scipy.stats import kendalltau

    rng = np.random.default_rng(2)
    a = np.round(rng.normal(size=(1_000, 7)), 1)  # ties
    b = a + np.round(rng.normal(size=(1_000, 7)), 1)

    def run(t: int) -> np.ndarray:
        out = np.empty(1_000)
        SK.tau_b_rows(a, b, out, t)
        return out

    got = _same_for_all_threads(run)
    # scipy 1.x kendalltau (tau-b), row by row
    ref = np.array([kendalltau(a[r], b[r]).statistic for r in range(0, 1_000, 97)])
    assert np.allclose(got[::97], ref, rtol=0, atol=1e-12)


def test_ratio_pair_sum() -> None:
    v = np.sort(np.random.default_rng(3).normal(size=600)) + 3.0
    c = np.random.default_rng(4).integers(1, 5, size=600).astype(float)
    got = _same_for_all_threads(lambda t: np.array(SK.ratio_pair_sum(v, c, t)))
    d = (v[:, None] - v[None, :]) / (v[:, None] + v[None, :])
    assert np.isclose(float(got), float((c[:, None] * c[None, :] * d * d).sum()), rtol=1e-12)


def test_sign_flip_sums() -> None:
    rng = np.random.default_rng(5)
    flip = rng.integers(0, 2, size=(45, 30)).astype(np.uint8)
    d = rng.normal(size=(30, 11))

    def run(t: int) -> np.ndarray:
        out = np.empty((45, 11))
        CL.sign_flip_sums(flip, d, out, t)
        return out

    got = _same_for_all_threads(run)
    signed = (2.0 * flip - 1.0)[:, :, None] * d[None, :, :]
    assert np.array_equal(got, np.cumsum(signed, axis=1)[:, -1, :])


def test_compute_distances() -> None:
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "benchmarks"))
    from _ddp_corpus import synthetic_items

    it = synthetic_items(60_000, items_per_doc=500)
    args = (it["offsets"], it["kind"], it["sent"], it["ent"], it["compat"], it["seg"], it["gsent"], it["n_ent"],
            it["n_seg"], it["n_sent"])
    for nearest in (False, True):
        _same_for_all_threads(lambda t: DK.compute_distances(*args, nearest, t))


# --------------------------------------------------------------------------- thread-count plumbing


def _cluster_table():  # type: ignore[no-untyped-def]
    import polars as pl

    rng = np.random.default_rng(6)
    n_doc, n_seg, n_sys = 30, 4, 5
    doc = np.repeat(np.arange(n_doc), n_seg * n_sys)
    seg = np.tile(np.repeat(np.arange(n_seg), n_sys), n_doc)
    sys_ = np.tile(np.arange(n_sys), n_doc * n_seg)
    return pl.DataFrame({"document_id": doc, "segment_id": seg, "system": [f"s{k}" for k in sys_],
                         "score": np.round(rng.normal(70, 10, doc.size) + 2 * sys_)})


@pytest.mark.parametrize("method", ["permutation", "bootstrap"])
def test_cluster_systems_passes_threads_to_the_kernels(method: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import ddpcore.stats.bootstrap as bs
    import ddpcore.stats.clustering as clu
    from ddpcore.stats import ResampleOptions

    seen: list[int] = []
    real_flip, real_sums = CL.sign_flip_sums, SK.resample_sums_pcg64

    class Recorder:
        def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
            return getattr(CL, name)

        @staticmethod
        def sign_flip_sums(*a):  # type: ignore[no-untyped-def]
            seen.append(a[3])
            return real_flip(*a)

    class SumsRecorder:
        def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
            return getattr(SK, name)

        @staticmethod
        def resample_sums_pcg64(*a):  # type: ignore[no-untyped-def]
            seen.append(a[-1])
            return real_sums(*a)

    monkeypatch.setattr(clu, "_kernel", lambda: Recorder())
    real_load = bs.load
    monkeypatch.setattr(bs, "load", lambda name: SumsRecorder() if name == "stats_kernels" else real_load(name))
    t = _cluster_table()
    results = [clu.cluster_systems(t, method=method, options=ResampleOptions(n_boot=200, seed=3, threads=th))
               for th in (1, 2, None)]
    assert seen and set(seen) == {1, 2, 0}
    for r in results[1:]:
        assert np.array_equal(r.p_values, results[0].p_values, equal_nan=True)


def test_ddp_info_reports_the_wait_policy() -> None:
    out = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "info"], capture_output=True, text=True,
                         check=True, env=_env(OMP_WAIT_POLICY="active"))
    assert "wait policy active (OMP_WAIT_POLICY)" in out.stdout
