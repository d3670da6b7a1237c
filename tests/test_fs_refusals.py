"""A folder that passes the access check but whose file system still refuses new files (root-squashed NFS,
/sys as root): D131 naming the folder, exit 2, not D999 (a tester's report: PermissionError on the run lock
of ``ddp profile`` and on the temporary file of select/sample/plot/stratify outputs)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from ddpcore.engines.run import RunLock
from ddpcore.errors import DDPUsageError
from ddpcore.io.tables import atomic_path


def _refuse(*args: object, **kwargs: object) -> None:
    raise PermissionError(13, "Permission denied")


@pytest.mark.parametrize("error", [PermissionError(13, "Permission denied"),
                                   FileNotFoundError(2, "No such file or directory")])  # /proc refuses this way
def test_atomic_path_refused_folder_is_d131(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: OSError) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(DDPUsageError) as err:
        with atomic_path(tmp_path / "out.jsonl"):
            pass
    assert err.value.code == "D131" and str(tmp_path) in str(err.value) and error.strerror in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_run_lock_refused_folder_is_d131(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = os.open

    def refuse_lock(path: object, *args: object, **kwargs: object) -> int:
        if str(path).endswith(".ddp-lock"):
            _refuse()
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", refuse_lock)
    with pytest.raises(DDPUsageError) as err:
        RunLock(tmp_path / "p.parquet").acquire()
    assert err.value.code == "D131" and "-o " + str(tmp_path / "p.parquet") in str(err.value)
