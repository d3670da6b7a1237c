"""``ddp profile --progress plain``: words/s move while a batch parses (issue 23 §4), and the total
is still the exact token count of the run (the batch markers' sum)."""
from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.spacy_model


def test_plain_progress_counts_words_while_chunks_parse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import polars as pl

    from ddpcore.cli.main import main
    from ddpcore.engines import run as run_mod

    seen: list[tuple[float, int]] = []  # (segments done, words counted) at every advance
    made: list[run_mod.Progress] = []
    real = run_mod.Progress

    class Recording(real):  # type: ignore[misc, valid-type]
        def __init__(self, *a, **k):  # type: ignore[no-untyped-def]
            super().__init__(*a, **k)
            made.append(self)

        def advance(self, segments: float) -> None:
            super().advance(segments)
            seen.append((self.done, self.words))

    monkeypatch.setattr(run_mod, "Progress", Recording)
    out = tmp_path / "ddp.parquet"
    assert main(["profile", "-o", str(out), "--progress", "plain", "--no-cache", "-j", "1"]) == 0
    (prog,) = made
    assert len(seen) >= 2, "expected several parsed chunks in the bundled source"
    # before the batch finished (the first chunk), words were already counted - the planted bug
    # (words only from the batch marker) leaves them at 0 here
    assert seen[0][0] < prog.total and seen[0][1] > 0
    counted = [w for _, w in seen]
    assert counted == sorted(counted)
    # the total equals the run's tokens (sum of the segment table's n_tokens)
    assert prog.words == int(pl.read_parquet(out)["n_tokens"].sum())
