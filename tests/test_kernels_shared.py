"""Kernel code shared through .pxd files (issue 20): each shared piece exists once, and the kernels
that cimport it still give numpy's answers.

* ``kinds.pxd``: item kinds and group bits, checked against ``ddpcore.anchors.rules``.
* ``pcg64.pxd``: the one PCG64 generator of ``stats_kernels`` and ``stats_compare``. Expected words
  come from ``numpy.random.PCG64(seed)`` (``advance`` + ``random_raw``), an independent
  implementation; the consumers' draws are rebuilt from those words with Python integers
  (``raw * n // 2**64``) and slow loops, on integer-valued data so every sum is exact.
* ``threads.pxd``: one OpenMP default thread count for every module.
* ``hashsets.pxd``: the set/map builders; ``extract_items``' use of them is covered by
  tests/test_extract_items.py, ``item_attributes``' by tests/test_antecedent.py.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from ddpcore._native import load
from ddpcore.anchors import rules as R

SK = load("stats_kernels")
SC = load("stats_compare")
CL = load("stats_cluster")
NATIVE = Path(SK.__file__).parent


def _sources() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(NATIVE.glob("*.p[xy][dx]"))}


def _pcg_args(seed: int) -> tuple[int, int, int, int]:
    st = np.random.PCG64(seed).state["state"]
    return st["state"] >> 64, st["state"] & (2**64 - 1), st["inc"] >> 64, st["inc"] & (2**64 - 1)


def _numpy_words(seed: int, skip: int, n: int) -> np.ndarray:
    g = np.random.PCG64(seed)
    g.advance(skip)
    return g.random_raw(n)


def _below(words: np.ndarray, n: int) -> np.ndarray:
    """floor(word * n / 2**64) with Python integers (the kernels' Lemire mapping, no rejection)."""
    return np.array([int(w) * n >> 64 for w in words], dtype=np.int64)


# ----------------------------------------------------------------------------- one of each piece


def test_each_shared_piece_is_defined_once():
    src = _sources()
    assert {"kinds.pxd", "hashsets.pxd", "pcg64.pxd", "threads.pxd"} <= set(src)

    def where(pattern: str) -> list[str]:
        return [name for name, text in src.items() if re.search(pattern, text)]

    assert where(r"0x2360ED051FC65DA4") == ["pcg64.pxd"]  # the PCG64 multiplier: one generator
    assert where(r"state \* \w+ \+ g->inc|g->state \* ") == ["pcg64.pxd"]
    assert where(r"omp_get_max_threads") == ["threads.pxd"]
    assert where(r"unordered_set\[uint64_t\] _?set_of\(") == ["hashsets.pxd"]
    assert where(r"(DEF|=)\s*KIND_\w+\s*=|KIND_ENTITY\s*=\s*0") == ["kinds.pxd"]


def test_kind_codes_and_group_bits_match_the_rules():
    text = _sources()["kinds.pxd"]
    consts = {k: int(v) for k, v in re.findall(r"^\s+(\w+) = (\d+)$", text, flags=re.M)}
    assert consts == {
        "KIND_ENTITY": R.KIND_NAMES.index("entity"), "KIND_PRONOUN": R.KIND_NAMES.index("pronoun"),
        "KIND_NOUN": R.KIND_NAMES.index("noun"),
        "MASC_SG": R.MASC_SG, "FEM_SG": R.FEM_SG, "NEUT_SG": R.NEUT_SG, "PL": R.PL,
    }


# ----------------------------------------------------------------------------- the one PCG64


@pytest.mark.parametrize("seed", [0, 1, 12345, 2**63 + 7])
@pytest.mark.parametrize("skip", [0, 1, 999, 2**40 + 3])
def test_both_modules_give_numpys_pcg64_stream(seed, skip):
    want = _numpy_words(seed, skip, 300)
    for fn in (SK.pcg64_raw, SC.pcg64_words):
        got = np.empty(300, np.uint64)
        fn(*_pcg_args(seed), skip, got)
        np.testing.assert_array_equal(got, want, err_msg=fn.__name__)


@pytest.mark.parametrize("threads", [1, 2])
def test_resample_sums_pcg64_draws_numpys_words(threads):
    # replicate r: words r*n_draws ... of the stream, unit = floor(word * n_units / 2**64)
    rng = np.random.default_rng(5)
    n_units, n_cols, n_rep, n_draws, seed = 37, 4, 5, 41, 77
    v = rng.integers(-9, 10, size=(n_units, n_cols)).astype(np.float64)
    idx = _below(_numpy_words(seed, 0, n_rep * n_draws), n_units).reshape(n_rep, n_draws)
    want = np.array([[sum(v[u, j] for u in idx[r]) for j in range(n_cols)] for r in range(n_rep)])
    got = np.empty((n_rep, n_cols))
    SK.resample_sums_pcg64(*_pcg_args(seed), v, got, n_draws, threads)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("threads", [1, 2])
def test_bootstrap_sums_chunked_draws_numpys_words(threads):
    # replicate r: words r*n_units ... ; out[r, k] = sum_u multiplicity(r, u) * d[u, k]
    rng = np.random.default_rng(6)
    n_units, n_rep, seed = 70, 35, 4242
    d = rng.integers(-9, 10, size=(n_units, 16)).astype(np.float64)
    dc = np.ascontiguousarray(np.stack([d[:, :8], d[:, 8:]]))
    idx = _below(_numpy_words(seed, 0, n_rep * n_units), n_units).reshape(n_rep, n_units)
    want = np.array([[sum(d[u, k] for u in idx[r]) for k in range(16)] for r in range(n_rep)])
    got = np.empty((n_rep, 16))
    SC.bootstrap_sums_chunked(*_pcg_args(seed), dc, got, None, threads)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("threads", [1, 2])
def test_ar_masks_are_numpys_words(threads):
    # trial t: words t*n_words ...; bit u % 64 of word u // 64 set = unit u keeps its sign
    rng = np.random.default_rng(7)
    n_units, n_cols, n_trials, seed = 130, 3, 200, 99
    n_words = (n_units + 63) // 64
    d = rng.integers(-5, 6, size=(n_units, n_cols)).astype(np.float64)
    obs = np.abs(d.sum(axis=0))
    words = _numpy_words(seed, 0, n_trials * n_words).reshape(n_trials, n_words)
    want = np.zeros(n_cols, np.int64)
    for t in range(n_trials):
        sign = np.array([1.0 if (int(words[t, u // 64]) >> (u % 64)) & 1 else -1.0 for u in range(n_units)])
        want += np.abs(sum(sign[u] * d[u] for u in range(n_units))) > obs
    got = np.empty(n_cols, np.int64)
    SC.ar_exceed_pcg64(*_pcg_args(seed), n_trials, d, obs, got, threads)
    np.testing.assert_array_equal(got, want)
    dc = np.zeros((1, n_units, 8))
    dc[0, :, :n_cols] = d
    obs8 = np.zeros(8)
    obs8[:n_cols] = obs
    got8 = np.empty(8, np.int64)
    SC.ar_exceed_chunked(*_pcg_args(seed), n_trials, dc, obs8, got8, None, threads)
    np.testing.assert_array_equal(got8[:n_cols], want)


# ----------------------------------------------------------------------------- threads


def test_one_default_thread_count():
    assert SK.max_threads() == SC.max_threads() >= 1


def test_default_threads_give_the_same_results():
    # num_threads=0 resolves to OpenMP's default (threads.pxd); results never depend on it
    rng = np.random.default_rng(8)
    d = np.round(rng.normal(size=(12, 30)), 1)
    outs = []
    for nt in (0, 1, 2):
        o = [np.empty(12), np.empty(12), np.empty(12, np.int64), np.empty(12, np.int64), np.empty(12, np.uint8)]
        CL.signed_rank_rows(d, *o, nt)
        outs.append(o)
    for o in outs[1:]:
        for a, b in zip(outs[0], o):
            np.testing.assert_array_equal(a, b)
