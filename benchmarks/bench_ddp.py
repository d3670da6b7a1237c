"""pytest-benchmark suite for DDP (issue 2). Run:

    python -m pytest benchmarks/bench_ddp.py --benchmark-enable --benchmark-columns=median,iqr,rounds

Groups compare ddpcore with the peer a user would otherwise use: the distance kernel vs a
plain-Python dict implementation (same synthetic anchors), ``profile_anchors`` vs bare
``nlp.pipe`` (same texts, same pipeline). The printed table script is ddp_table.py.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ddp_corpus import BUNDLED, python_dict_distances, synthetic_items  # noqa: E402

N_KERNEL = 10_000_000
N_PY = 300_000


@pytest.fixture(scope="module")
def kernels():
    from ddpcore._native import load

    return load("ddp_kernels")


@pytest.fixture(scope="module")
def items_big():
    return synthetic_items(N_KERNEL)


@pytest.fixture(scope="module")
def items_small():
    return synthetic_items(N_PY)


def _kernel(K, it, threads):
    return K.compute_distances(it["offsets"], it["kind"], it["sent"], it["ent"], it["compat"], it["seg"], it["gsent"],
                               it["n_ent"], it["n_seg"], it["n_sent"], False, threads)


@pytest.mark.benchmark(group="distance kernel (per-anchor rate: divide by N)")
@pytest.mark.parametrize("threads", [1, 2])
def test_kernel_10M(benchmark, kernels, items_big, threads):
    benchmark.extra_info["n_anchors"] = len(items_big["kind"])
    benchmark(_kernel, kernels, items_big, threads)


@pytest.mark.benchmark(group="distance kernel (per-anchor rate: divide by N)")
def test_kernel_same_size_as_python(benchmark, kernels, items_small):
    benchmark.extra_info["n_anchors"] = len(items_small["kind"])
    benchmark(_kernel, kernels, items_small, 2)


@pytest.mark.benchmark(group="distance kernel (per-anchor rate: divide by N)")
def test_python_dict_baseline(benchmark, items_small, kernels):
    benchmark.extra_info["n_anchors"] = len(items_small["kind"])
    dist, seg = benchmark.pedantic(python_dict_distances, args=(items_small,), rounds=3, iterations=1)
    ref = _kernel(kernels, items_small, 1)
    assert list(ref[0]) == dist  # the baseline computes the same distances
    assert list(ref[3]) == seg


@pytest.fixture(scope="module")
def wmt25():
    import polars as pl

    return pl.read_ndjson(BUNDLED)


@pytest.fixture(scope="module")
def nlp():
    from ddpcore.anchors.spacy_extract import load_pipeline

    return load_pipeline(None)


@pytest.mark.benchmark(group="parse vs profile (bundled WMT25, 36.8 k words)")
def test_bare_nlp_pipe(benchmark, wmt25, nlp):
    from ddpcore.pipeline.stages import split_units

    texts = split_units(wmt25["source"]).texts
    benchmark.pedantic(lambda: [None for _ in nlp.pipe(texts, batch_size=256)], rounds=3, iterations=1)


@pytest.mark.benchmark(group="parse vs profile (bundled WMT25, 36.8 k words)")
def test_profile_anchors(benchmark, wmt25, nlp):
    from ddpcore.api import profile_anchors

    benchmark.pedantic(profile_anchors, args=(wmt25,), kwargs={"nlp": nlp}, rounds=3, iterations=1)
