"""``ddp metric-s`` like the other commands: a missing input or a folder is D102 (exit 3; was D551, exit 2);
a UTF-8 byte-order mark at the start of the file is skipped (the first judgement was an error row "not a
JSON object"); ``-o -`` is stdout (was D135); ``-o`` in a folder that refuses new files is D131 before
anything is read or scored (was after the scoring); a file that is not UTF-8 names the line and column."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import ddpcore.stats.metric_s as ms
from ddpcore.cli.main import main

LINES = ['{"id": "a", "accuracy_items": [{"问题严重程度": "普通"}], "checkpoint_items": [], "fluency_items": [], '
         '"appropriateness_items": []}',
         '{"id": "b", "accuracy_items": [], "checkpoint_items": [{"判断结果": "错误"}], "fluency_items": '
         '[{"问题严重程度": "有问题"}], "appropriateness_items": []}']


def _run(capsys, argv):
    rc = main(argv)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_missing_file_and_folder_are_d102_exit_3(tmp_path, capsys):
    rc, out, err = _run(capsys, ["metric-s", str(tmp_path / "nope.jsonl")])
    assert (rc, out) == (3, "") and err == f"ddp metric-s: error: [D102] {tmp_path / 'nope.jsonl'}: file not found; " \
                                           "check the path\n"
    rc, out, err = _run(capsys, ["metric-s", str(tmp_path)])
    assert (rc, out) == (3, "") and err == f"ddp metric-s: error: [D102] {tmp_path}: is a folder, expected a JSONL " \
                                           "file\n"


def test_bom_at_the_start_is_skipped(tmp_path, capsys):
    plain, bom = tmp_path / "j.jsonl", tmp_path / "bom.jsonl"
    plain.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    bom.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    rc, want, _ = _run(capsys, ["metric-s", str(plain)])
    assert rc == 0
    rc, got, err = _run(capsys, ["metric-s", str(bom)])
    assert rc == 0 and "error rows" not in err, err
    rows = json.loads(got)["rows"]
    assert rows == json.loads(want)["rows"]
    assert [(r["id"], r["status"], r["total"]) for r in rows] == [("a", "ok", 95.0), ("b", "ok", 93.0)]


def test_dash_output_is_stdout(tmp_path, capsys):
    j = tmp_path / "j.jsonl"
    j.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    for fmt in ("json", "tsv", "text"):
        rc, want, _ = _run(capsys, ["metric-s", str(j), "-f", fmt])
        assert rc == 0
        rc, got, err = _run(capsys, ["metric-s", str(j), "-f", fmt, "-o", "-"])  # was D135
        assert rc == 0 and got == want, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j.jsonl"]


def test_output_folder_refusing_files_is_d131_before_reading(tmp_path, capsys, monkeypatch):
    j = tmp_path / "j.jsonl"
    j.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    refusing = tmp_path / "out"
    refusing.mkdir()
    real = tempfile.mkstemp

    def mkstemp(*a, **k):  # out/ refuses new files although the access check passes (root on /proc)
        if Path(k.get("dir") or ".").resolve() == refusing.resolve():
            raise FileNotFoundError(2, "No such file or directory")
        return real(*a, **k)

    def no_read(*a, **k):
        raise AssertionError("the judgements were read before -o was found unusable")

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    monkeypatch.setattr(ms, "read_judgements_lines", no_read)
    rc, out, err = _run(capsys, ["metric-s", str(j), "-o", str(refusing / "s.tsv")])
    assert (rc, out) == (2, "")
    assert err.startswith(f"ddp metric-s: error: [D131] -o/--output {refusing / 's.tsv'}: cannot create files in "
                          f"{refusing}"), err
    assert list(refusing.iterdir()) == []


def test_not_utf8_names_line_and_column(tmp_path, capsys):
    j = tmp_path / "j.jsonl"
    j.write_bytes(LINES[0].encode() + b"\n" + b'{"id": "\xe9"}\n')
    rc, out, err = _run(capsys, ["metric-s", str(j)])
    assert (rc, out) == (3, "")
    assert err.startswith(f"ddp metric-s: error: [D551] {j}: line 2, byte column 9: not UTF-8 text (byte 0xe9)"), err


def test_a_repeated_id_is_d556_naming_both_lines(tmp_path, capsys):
    """A judgement file with one item twice (a judge run appended again) counted that item twice in every
    mean, exit 0. It is now D556 naming the file, both lines and the id column."""
    path = tmp_path / "j.jsonl"
    path.write_text("\n".join([LINES[0], LINES[1], "", LINES[0]]) + "\n", encoding="utf-8")
    rc, out, err = _run(capsys, ["metric-s", str(path)])
    assert (rc, out) == (3, "")
    assert err.startswith(f"ddp metric-s: error: [D556] {path}: line 4, column id: 'a' is the id of line 1 too;")
    assert err.count("\n") == 1
    # records without an id are numbered by position and never collide with each other
    rows = ms.metric_s([{"accuracy_items": [], "fluency_items": [], "appropriateness_items": [],
                         "checkpoint_items": []}] * 2)
    assert [r.id for r in rows] == ["1", "2"]
