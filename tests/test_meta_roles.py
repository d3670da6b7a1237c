"""``ddp meta``: one column given two roles (``--system-col document_id``, ``--document-col system``, a key
as ``--score-col`` or ``--human-col``, the long form's ``--metric-name-col`` as its value column) is the usage
error D311 of ``ddp stats`` (exit 2, one line naming both flags), found before any input is read. It used to
be D999 (polars' DuplicateError, exit 4) or, for a key named as a metric, a run that scored the ids."""
from __future__ import annotations

from pathlib import Path

import pytest

from ddpcore.cli.main import main
from ddpcore.errors import DDPUsageError
from ddpcore.stats.meta import MetaColumns, meta_evaluate

HEAD = "document_id,segment_id,system,mqm,m1\n"


def _inputs(tmp: Path) -> tuple[str, str]:
    prof = ["document_id,segment_id,ddp"] + [f"d{d},{s},{(d * 3 + s) % 9}" for d in range(6) for s in range(3)]
    rows = [f"d{d},{s},{sy},{-(d + s + i) % 7},{(d * s + i) % 5 + 0.5}"
            for d in range(6) for s in range(3) for i, sy in enumerate("ABC")]
    (tmp / "p.csv").write_text("\n".join(prof) + "\n")
    (tmp / "s.csv").write_text(HEAD + "\n".join(rows) + "\n")
    return str(tmp / "p.csv"), str(tmp / "s.csv")


@pytest.mark.parametrize("extra,first,second,column", [
    (["--system-col", "document_id"], "--document-col", "--system-col", "document_id"),
    (["--document-col", "system"], "--document-col", "--system-col", "system"),
    (["--segment-col", "document_id"], "--document-col", "--segment-col", "document_id"),
    (["--score-col", "m1,segment_id"], "--segment-col", "--score-col", "segment_id"),
    (["--metric-name-col", "system", "--score-col", "m1"], "--system-col", "--metric-name-col", "system"),
    (["--metric-name-col", "m1", "--score-col", "m1"], "--metric-name-col", "--score-col", "m1"),
], ids=lambda v: "_".join(v) if isinstance(v, list) else None)
def test_one_column_two_roles_is_d311(tmp_path, capsys, extra, first, second, column):
    prof, sc = _inputs(tmp_path)
    rc = main(["meta", prof, sc, "--human-col", "mqm", "--n-boot", "0", "--n-perm", "0", "--spa-perm", "10", *extra])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert len(err.splitlines()) == 1
    assert err.startswith(f"ddp meta: error: [D311] {first} and {second} both name the column '{column}'; one "
                          f"column cannot have two roles - give each its own column ({first}: ")
    assert f", {second}: " in err


def test_checked_before_any_input_is_read(tmp_path, capsys):
    """The CLI says D311 even when neither input exists (no D102 for the files, no read at all)."""
    rc = main(["meta", str(tmp_path / "none.csv"), str(tmp_path / "none2.csv"), "--human-col", "mqm",
               "--system-col", "document_id"])
    assert rc == 2 and "[D311] --document-col and --system-col both name the column 'document_id'" in \
        capsys.readouterr().err


def test_api_raises_d311_before_reading(tmp_path):
    """meta_evaluate checks the roles first: the frames are not even looked at (None would be D810)."""
    with pytest.raises(DDPUsageError) as ei:
        meta_evaluate(None, None, human_col="document_id", columns=MetaColumns())
    assert ei.value.code == "D311" and "--document-col and --human-col" in str(ei.value)

