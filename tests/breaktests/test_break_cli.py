"""Break tests for the CLI as a whole, ``ddp validate`` and ``ddp agree`` (issue 7).

Every row fails before a spaCy pipeline is loaded, so the table runs in seconds.
"""
from __future__ import annotations

import io
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from ._harness import Case, parametrize, run_case

GOLD = Path(__file__).resolve().parents[1] / "data" / "gold"

# a small but valid CoNLL-U document with one coreference chain
CONLLU = (
    "# newdoc id = d1\n# text = Mary sleeps .\n"
    "1\tMary\tMary\tPROPN\tNNP\t_\t2\tnsubj\t_\tEntity=(e1-person-1)\n"
    "2\tsleeps\tsleep\tVERB\tVBZ\t_\t0\troot\t_\t_\n"
    "3\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\t_\n\n"
)
BAD_CONLLU = "1\tMary\n\n"  # a token line with 2 columns instead of 10


def _tar(members: dict[str, bytes], mode: str = "w:xz") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


_GOOD_TXZ = _tar({"gold/doc.conllu": CONLLU.encode() * 50})

CASES = [
    # ---- the CLI as a whole
    Case("unknown-subcommand", ("nosuch",), 2, r"^ddp: error: \[D001\] argument COMMAND: invalid choice: 'nosuch'"),
    Case("unknown-option", ("validate", "x.conllu", "--bogus"), 2,
         r"^ddp validate: error: \[D001\] unrecognized arguments: --bogus"),
    Case("version", ("--version",), 0, ""),
    Case("version-short", ("-V",), 0, ""),
    # ---- validate: bad archives and formats
    Case("validate-truncated-txz", ("validate", "g.tar.xz"), 3, r"\[D401\] g\.tar\.xz: .*truncated",
         files={"g.tar.xz": _GOOD_TXZ[: len(_GOOD_TXZ) // 2]}),
    Case("validate-not-an-archive", ("validate", "g.tar.xz"), 3, r"\[D401\] g\.tar\.xz: not a readable tar archive",
         files={"g.tar.xz": b"this is not xz data\n" * 10}),
    Case("validate-empty-archive", ("validate", "g.tar.gz"), 3, r"\[D405\] g\.tar\.gz: no gold documents found",
         files={"g.tar.gz": _tar({}, "w:gz")}),
    Case("validate-archive-no-gold-members", ("validate", "g.tar.gz"), 3, r"\[D405\].*no gold documents",
         files={"g.tar.gz": _tar({"README.txt": b"read me\n", "LICENSE": b"MIT\n"}, "w:gz")}),
    Case("validate-bad-member-named", ("validate", "g.tar.gz"), 3, r"\[D411\] g\.tar\.gz:d/bad\.conllu: line 1",
         files={"g.tar.gz": _tar({"README.txt": b"x\n", "d/bad.conllu": BAD_CONLLU.encode()}, "w:gz")}),
    Case("validate-empty-folder", ("validate", "empty/"), 3, r"\[D405\]", files={"empty/": ""}),
    Case("validate-unknown-gold-format", ("validate", "g.conllu", "--gold-format", "brat"), 2,
         r"^ddp validate: error: \[D001\] argument --gold-format: invalid choice: 'brat'", files={"g.conllu": CONLLU}),
    Case("validate-unknown-output-format", ("validate", "g.conllu", "-f", "xml"), 2,
         r"argument -f/--format: invalid choice: 'xml'", files={"g.conllu": CONLLU}),
    # the spellings removed in this release (issue 20): one line naming the new spelling, before the gold is read
    Case("validate-format-as-gold-format-removed", ("validate", "g.gold", "--format", "conllu"), 2,
         r"argument -f/--format: \[D444\] -f/--format is the report format \(json, text\); the gold format is "
         r"--gold-format conllu", files={"g.gold": BAD_CONLLU}),
    Case("validate-restricted-removed", ("validate", "g.gold", "--restricted"), 2,
         r"\[D444\] --restricted was removed; use --gold-scope restricted", files={"g.gold": BAD_CONLLU}),
    Case("validate-output-format-removed", ("validate", "g.gold", "--output-format", "json"), 2,
         r"\[D444\] --output-format was removed; use -f/--format json", files={"g.gold": BAD_CONLLU}),
    # ---- validate: --tail
    Case("validate-tail-zero", ("validate", "g.conllu", "--tail", "0"), 2,
         r"argument --tail: \[D443\] --tail '0': give whole numbers of sentences >= 1", files={"g.conllu": CONLLU}),
    Case("validate-tail-not-a-number", ("validate", "g.conllu", "--tail", "5,1.5"), 2,
         r"argument --tail: \[D443\] --tail '5,1\.5'", files={"g.conllu": CONLLU}),
    Case("validate-tail-empty", ("validate", "g.conllu", "--tail", ","), 2, r"argument --tail: \[D443\]",
         files={"g.conllu": CONLLU}),
    Case("validate-tail-negative", ("validate", "g.conllu", "--tail=-5"), 2, r"argument --tail: \[D443\]",
         files={"g.conllu": CONLLU}),
    Case("validate-gold-format", ("validate", "g.gold", "--gold-format", "conllu"), 3,
         r"\[D411\] g\.gold: line 1", files={"g.gold": BAD_CONLLU}),
    Case("validate-unknown-file-type", ("validate", "g.gold"), 2, r"\[D402\].*pass --gold-format",
         files={"g.gold": CONLLU}),
    Case("validate-long-line", ("validate", "g.conllu"), 3, r"\[D440\] g\.conllu: line 2 is longer than 16 MiB",
         files={"g.conllu": "# c\n" + "x" * (17 * 1024 * 1024)}),
    # ---- validate: outputs are checked before any work
    Case("validate-over-estimates-onto-input", ("validate", "g.csv", "--gold-format", "conllu",
                                                "--over-estimates", "g.csv"), 2,
         r"\[D133\] --over-estimates g\.csv: this is the input file", files={"g.csv": CONLLU}),
    Case("validate-plot-onto-input", ("validate", "g.png", "--gold-format", "conllu", "--plot", "g.png"), 2,
         r"\[D133\] --plot g\.png: this is the input file", files={"g.png": CONLLU}),
    Case("validate-plot-into-input-archive-name", ("validate", "g.tar.xz", "--plot", "g.tar.xz"), 2,
         r"\[D441\] --plot g\.tar\.xz: unknown plot format", files={"g.tar.xz": _GOOD_TXZ}),
    Case("validate-over-estimates-bad-extension", ("validate", "g.conllu", "--over-estimates", "o.xlsx"), 2,
         r"\[D101\] --over-estimates o\.xlsx: unknown output format", files={"g.conllu": CONLLU}),
    Case("validate-over-estimates-missing-folder", ("validate", "g.conllu", "--over-estimates", "no/o.csv"), 2,
         r"\[D130\] --over-estimates no/o\.csv: the folder no does not exist", files={"g.conllu": CONLLU}),
    Case("validate-over-estimates-is-folder", ("validate", "g.conllu", "--over-estimates", "out.csv"), 2,
         r"\[D132\]", files={"g.conllu": CONLLU, "out.csv/": ""}),
    Case("validate-plot-file-as-parent", ("validate", "g.conllu", "--plot", "g.conllu/p.png"), 2,
         r"\[D130\].*g\.conllu is a file, not a folder", files={"g.conllu": CONLLU}),
    # ---- agree
    Case("agree-missing-run", ("agree", "a.parquet", "b.parquet"), 3, r"\[D102\]|\[D4\d\d\].*a\.parquet"),
    Case("agree-one-argument", ("agree", "a.parquet"), 2, r"^ddp agree: error: \[D001\] the following arguments are required: B"),
    Case("agree-same-file-twice-bad-table", ("agree", "a.csv", "a.csv"), 3, r"\[D\d{3}\]",
         files={"a.csv": "x,y\n1,2\n"}),
]


@parametrize(CASES)
def test_break_cli(case: Case, tmp_path: Path) -> None:
    proc = run_case(case, tmp_path)
    if case.id.startswith("version"):
        out = proc.stdout.decode()
        assert out.startswith("ddpcore ") and "spaCy " in out and "default pipeline" in out


def test_broken_pipe_is_quiet(tmp_path: Path) -> None:
    """``ddp info -f json | head -c 0``: the reader is gone before ddp writes; exit 0, nothing on stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "ddpcore.cli.main", "info", "-f", "json"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert err == ""


def test_internal_error_in_a_real_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A bug deep inside ``ddp validate`` (here: the gold reader) becomes D999, exit 4, one line."""
    import ddpcore.gold.validate as validation
    from ddpcore.cli.main import main

    def broken_read_gold(*args, **kwargs):
        return [][0]  # IndexError, as a real bug would raise

    monkeypatch.setattr(validation, "read_gold", broken_read_gold)
    monkeypatch.delenv("DDPCORE_DEBUG", raising=False)
    gold = tmp_path / "g.conllu"
    gold.write_text(CONLLU, encoding="utf-8")
    assert main(["validate", str(gold), "-q"]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("ddp validate: error: [D999] internal error: IndexError: list index out of range")
