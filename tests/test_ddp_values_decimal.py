"""A DDP column stored as decimals is checked like floats: 2.5 is D781 (it passed as an integer type before)."""
from __future__ import annotations

from decimal import Decimal

import polars as pl
import pytest

from ddpcore.errors import DDPDataError
from ddpcore.io.profiles import check_ddp_values


def test_decimal_fraction_is_d781() -> None:
    df = pl.DataFrame({"ddp": pl.Series([Decimal("1"), Decimal("2.5"), None], dtype=pl.Decimal(10, 1))})
    with pytest.raises(DDPDataError) as e:
        check_ddp_values(df, "ddp", "p.parquet")
    assert e.value.code == "D781" and "p.parquet, row 2:" in str(e.value)


def test_decimal_whole_numbers_pass() -> None:
    df = pl.DataFrame({"ddp": pl.Series([Decimal("1"), Decimal("20"), None], dtype=pl.Decimal(10, 1))})
    check_ddp_values(df, "ddp", "p.parquet")  # no error: whole numbers >= 0 and a null
