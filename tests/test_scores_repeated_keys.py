"""A JSON Lines score table naming a key twice in one object (``ddp meta``/``ddp stratify`` read score tables
with a lazy polars scan, which kept the first value in silence, where ``ddp stats`` refused the same file and
Python's json keeps the last). Now D103 naming the line and key, as every other reader."""
from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from ddpcore.errors import DDPDataError
from ddpcore.io.scores import scan_scores

HEAD = '{"document_id": "d", "segment_id": 0, "system": "A", "score": 1.5}\n'


@pytest.mark.parametrize("line", [
    '{"document_id": "d", "segment_id": 1, "system": "A", "score": 2, "score": 3}',
    '{"document_id": "d", "segment_id": 1, "system": "A", "score" : 2, "score" : 3}',  # keys spaced from ':'
    '{"document_id": "d", "segment_id": 1, "system": "A", "score": null, "score": 3}',  # a null: the slow path
])
def test_a_repeated_key_is_d103_naming_line_and_key(tmp_path: Path, line: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(HEAD + line + "\n", encoding="utf-8")
    with pytest.raises(DDPDataError, match=r'^\[D103\] .*s\.jsonl: line 2: the key "score" appears twice'):
        scan_scores(path)


def test_tables_without_repeats_read_as_before(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(HEAD + '{"document_id": "d", "segment_id": 1, "system": "A", "score": null, "note": "a\\":b"}\n'
                    '{"document_id": "d", "segment_id": 2, "system": "A", "score" : 4}\n', encoding="utf-8")
    got = scan_scores(path).collect()
    # what polars reads, written by hand: nulls and a text holding '":' are no repeats
    assert got["score"].to_list() == [1.5, None, 4.0] and got["note"].to_list() == [None, 'a":b', None]


def test_ddp_stratify_refuses_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ddpcore.cli.main import main

    prof = tmp_path / "p.csv"
    pl.DataFrame({"document_id": ["d", "d"], "segment_id": [0, 1], "ddp": [0, 3]}).write_csv(prof)
    scores = tmp_path / "s.jsonl"
    scores.write_text(HEAD + '{"document_id": "d", "segment_id": 1, "system": "A", "score": 2, "score": 9}\n')
    assert main(["stratify", str(prof), str(scores), "--score-col", "score"]) == 3
    assert "[D103]" in capsys.readouterr().err
