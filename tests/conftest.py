from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
SHARED_DATA = REPO.parent / "shared" / "data"
sys.path.insert(0, str(TESTS))  # tests/oracles/ (the slow reference implementations) importable as `oracles`


def pytest_collection_modifyitems(config, items):
    if SHARED_DATA.is_dir():
        return
    skip = pytest.mark.skip(reason=f"shared data folder {SHARED_DATA} is absent (only present on the dev machines)")
    for item in items:
        if "shared_data" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _temp_parse_cache(tmp_path_factory, monkeypatch):
    """Every test gets a fresh parse cache folder: tests never write to the user's cache
    and never see each other's parses (a test that needs a cache of its own sets DDPCORE_CACHE)."""
    monkeypatch.setenv("DDPCORE_CACHE", str(tmp_path_factory.mktemp("ddpcore-cache")))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return SHARED_DATA


@pytest.fixture(scope="session")
def nlp():
    from ddpcore.anchors.spacy_extract import load_pipeline

    return load_pipeline(None)


@pytest.fixture(scope="module")
def ray_local():
    """A local Ray with one CPU for the tests of one module (skips when Ray is not installed)."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'ddpcore[ray]')")
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
