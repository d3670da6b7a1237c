"""Shared paths for the gold-validation tests."""
from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GOLD_DATA = REPO / "tests" / "data" / "gold"
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture
def gold_data() -> Path:
    return GOLD_DATA


def require_shared(*parts: str) -> Path:
    """Path under ../shared/data, or skip the test with the reason when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not available: {path} is absent")
    return path
