"""``-f``/``-o`` mean one thing for every command that prints one result (cli._common.check_result_output,
as ``ddp meta``): a format the command prints can be written to a file with its natural extension (.txt =
text, .md = markdown, .tex = latex; .json, .tsv as before), with the signature sidecar, and holds exactly
what ``-f FORMAT`` prints on stdout. Before, ``ddp stats tau -o r.txt`` was D101 and ``ddp stats compare
-o r.md`` / ``-o r.tex`` were D101 although compare prints markdown and latex. The combinations accepted
before are unchanged; a folder refusing new files is D131 before the work (it failed after it)."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

import ddpcore.io.scores as scores_mod
from ddpcore.cli._common import check_result_output
from ddpcore.cli.main import build_parser, main
from ddpcore.errors import DDPUsageError


def _long(path: Path) -> str:
    rows = ["document_id,segment_id,system,condition,score"]
    for d in range(5):
        for s in range(3):
            for i, sy in enumerate(("s1", "s2", "s3", "s4")):
                for c, off in (("DOC", 0.0), ("MIX", 0.3)):
                    rows.append(f"d{d},{s},{sy},{c},{70 + 5 * i + off + ((d * 7 + s * 3 + i) % 5)}")
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def _wide(path: Path) -> str:
    rows = ["document_id,segment_id,system,comet"]
    for d in range(4):
        for s in range(3):
            for sy, off in (("base", 0.0), ("A", 0.1), ("B", -0.05)):
                rows.append(f"d{d},{s},{sy},{0.5 + off + 0.01 * ((d * 7 + s * 3) % 5)}")
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def _run(capsys, argv):
    rc = main(argv)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_stats_writes_text_to_a_txt_file(tmp_path, capsys):
    base = ["stats", "tau", _long(tmp_path / "t.csv"), "--a", "DOC", "--b", "MIX", "--n-boot", "30"]
    rc, stdout_text, _ = _run(capsys, [*base, "-f", "text"])
    assert rc == 0
    for extra in (["-o", str(tmp_path / "r.txt")], ["-f", "text", "-o", str(tmp_path / "r2.txt")]):
        rc, out, err = _run(capsys, [*base, *extra])  # was D101
        assert rc == 0 and out == "", err
    assert (tmp_path / "r.txt").read_text() == stdout_text == (tmp_path / "r2.txt").read_text()
    sig = json.loads((tmp_path / "r.txt.signature.json").read_text())
    assert sig["method"] == "bootstrap_tau" and sig["n_boot"] == 30
    # the text file is not JSON: -f json with -o r.txt is the D880 of a disagreeing -f
    rc, _, err = _run(capsys, [*base, "-f", "json", "-o", str(tmp_path / "x.txt")])
    assert rc == 2 and err.strip().endswith("[D880] -o " + str(tmp_path / "x.txt") + ": a .txt file cannot hold "
                                            "-f json; use -f text, another extension, or -o - (stdout) for json")
    # unchanged: the D880 of ddp stats for a .json file and -f text, and .md is not a format of tau
    rc, _, err = _run(capsys, [*base, "-f", "text", "-o", "r.json"])
    assert rc == 2 and "[D880] -o r.json: a .json file cannot hold -f text; use -f json, another extension, " \
                       "or -o - (stdout) for text" in err
    rc, _, err = _run(capsys, [*base, "-o", str(tmp_path / "r.md")])
    assert rc == 2 and "[D101]" in err and ".json, .tsv, .txt" in err
    assert not (tmp_path / "x.txt").exists() and not (tmp_path / "r.md").exists()


@pytest.mark.parametrize("fmt,ext", [("markdown", ".md"), ("latex", ".tex"), ("text", ".txt")])
def test_compare_writes_each_printable_format_under_its_extension(tmp_path, capsys, fmt, ext):
    base = ["stats", "compare", _wide(tmp_path / "w.csv"), "--baseline", "base", "--score-col", "comet",
            "--n-boot", "30", "--n-ar", "30"]
    rc, stdout_text, _ = _run(capsys, [*base, "-f", fmt])
    assert rc == 0
    out = tmp_path / f"r{ext}"
    rc, so, err = _run(capsys, [*base, "-o", str(out)])  # markdown/latex: was D101
    assert rc == 0 and so == "" and f"wrote {out} and {out}.signature.json" in err
    assert out.read_text() == stdout_text
    rc, _, err = _run(capsys, [*base, "-o", str(tmp_path / "r.csv")])  # unchanged: a .csv result is D101
    assert rc == 2 and "[D101]" in err
    rc, _, err = _run(capsys, [*base, "-o", str(tmp_path / f"r{ext}.gz")])  # a result file is not compressed
    assert rc == 2 and "[D880]" in err and "drop the .gz" in err


def test_blindness_accepts_the_formats_it_prints(tmp_path):
    """blindness prints json, text and markdown: .txt and .md files too (were D101; .json only), .tsv not."""
    parser = build_parser()
    for name, fmt in (("r.json", "json"), ("r.txt", "text"), ("r.md", "markdown")):
        args = parser.parse_args(["blindness", "t.csv", "--margin", "1", "-o", str(tmp_path / name)])
        target = check_result_output(args, [args.table], file_formats=("json",))  # as cli/blindness.py calls it
        assert (target.format, args.output_format) == (fmt, fmt)
        assert target.sidecar == tmp_path / f"{name}.signature.json"
    args = parser.parse_args(["blindness", "t.csv", "--margin", "1", "-o", str(tmp_path / "r.tsv")])
    with pytest.raises(DDPUsageError) as ei:
        check_result_output(args, [args.table], file_formats=("json",))
    assert ei.value.code == "D101" and ".json, .txt, .md" in str(ei.value)


def test_folder_refusing_new_files_is_d131_before_the_input_is_read(tmp_path, capsys, monkeypatch):
    refusing = tmp_path / "out"
    refusing.mkdir()
    real = tempfile.mkstemp

    def mkstemp(*a, **k):  # out/ refuses new files although the access check passes (root on /proc)
        if Path(k.get("dir") or ".").resolve() == refusing.resolve():
            raise PermissionError(13, "Permission denied")
        return real(*a, **k)

    def no_read(*a, **k):
        raise AssertionError("the input was read before -o was found unusable")

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    monkeypatch.setattr(scores_mod, "read_score_input", no_read)
    rc, _, err = _run(capsys, ["stats", "tau", _long(tmp_path / "t.csv"), "--a", "DOC", "--b", "MIX", "--n-boot",
                               "30", "-o", str(refusing / "r.json")])
    assert rc == 2 and f"[D131] -o/--output {refusing / 'r.json'}: cannot create files in {refusing}" in err, err
