"""pytest-benchmark suite of the parse cache (issue 8 section 3). Run:

    python -m pytest benchmarks/bench_cache.py --benchmark-enable --benchmark-columns=median,iqr,rounds

A fully cached ``profile_anchors`` (every line served by the cache, no spaCy pipeline) against
the same call that parses (``cache=False``), on the bundled WMT25 source; and the cache's own
per-batch work (hash, look up, read and reassemble) on LitBank paragraphs when ../shared/data
is present. The whole-process table (first run vs cached re-run of ``ddp profile``) is
``benchmarks/cache_table.py``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ddp_corpus import BUNDLED, NOVELS, litbank_segments  # noqa: E402


@pytest.fixture(scope="module")
def nlp():
    from ddpcore.anchors.spacy_extract import load_pipeline

    return load_pipeline(None)


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory):
    from ddpcore import profile_anchors

    root = tmp_path_factory.mktemp("parse-cache")
    profile_anchors(BUNDLED, cache=root)
    return root


@pytest.mark.benchmark(group="wmt25-profile")
def test_profile_fully_cached(benchmark, warm_cache):
    from ddpcore import profile_anchors

    res = benchmark(profile_anchors, BUNDLED, cache=warm_cache, rules="paper")
    assert res.signature["cache"]["misses"] == 0


@pytest.mark.benchmark(group="wmt25-profile")
def test_profile_parsing(benchmark, nlp):
    from ddpcore import profile_anchors

    res = benchmark.pedantic(profile_anchors, args=(BUNDLED,), kwargs={"cache": False, "rules": "paper", "nlp": nlp},
                             rounds=2, iterations=1)
    assert "cache" not in res.signature


@pytest.mark.shared_data
@pytest.mark.benchmark(group="cache-lookup")
def test_cached_parse_lookup_litbank(benchmark, nlp, tmp_path):
    if not NOVELS.exists():
        pytest.skip("LitBank novels absent")
    from ddpcore.pipeline.cache import CachedParse
    from ddpcore.pipeline.parse import Parser
    from ddpcore.pipeline.stages import split_units

    df, _ = litbank_segments(40_000)
    texts = split_units(df["source"]).texts
    with Parser(nlp=nlp) as parser:
        CachedParse(parser, tmp_path)(texts)

    def lookup():
        run = CachedParse(Parser(), tmp_path)
        toks = run(texts)
        assert run.misses == 0
        return toks

    benchmark(lookup)
