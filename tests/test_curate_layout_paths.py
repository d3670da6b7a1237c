"""``ddp select``/``ddp sample`` with ``--reader lines``: every file the run writes (the output, its
``.docs``, its signature sidecar, the filtered ``--outputs`` files of ``--outputs-to``) is checked before
any work, and the reader recorded in the profile's signature is the default ``--reader``.

Hand-made profiles (no spaCy). The expectations are computed here from the lines written by the test:
DDPs 0, 1, 0, 1 on the four lines, so ``--min-ddp 1`` keeps lines 2 and 4.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from ddpcore.cli.main import main

SRC = ["John Smith arrived in Paris.", "He liked the city.", "Mary met him there.", "She was happy."]
DOCS = ["news\td1", "news\td1", "news\td2", "news\td2"]
DDP = [0, 1, 0, 1]
COLUMNS = {"document": "document_id", "segment": "segment_id", "text": "source", "domain": "domain"}


def write_lines_profile(path: Path, reader: dict | None) -> Path:
    """The segment table `ddp profile src.txt --reader lines` writes, by hand: ids d1/0, d1/1, d2/0, d2/1."""
    df = pl.DataFrame({"document_id": ["d1", "d1", "d2", "d2"], "segment_id": [0, 1, 0, 1],
                       "domain": ["news"] * 4, "n_sentences": [1, 1, 1, 1], "ddp": DDP,
                       "first_sentence": [0, 1, 0, 1]})
    sig = {"columns": COLUMNS, **({"reader": reader} if reader is not None else {})}
    t = df.to_arrow().replace_schema_metadata({b"ddpcore.signature": json.dumps(sig).encode()})
    pq.write_table(t, path)
    return path


@pytest.fixture()
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src.txt").write_text("\n".join(SRC) + "\n", encoding="utf-8")
    (tmp_path / "src.docs").write_text("\n".join(DOCS) + "\n", encoding="utf-8")
    write_lines_profile(tmp_path / "prof.parquet", {"name": "lines", "docs": "src.docs", "txt_mode": "lines"})
    (tmp_path / "outs").mkdir()
    return tmp_path


def listing(root: Path) -> dict[str, bytes | None]:
    """Every file and folder under ``root`` with its bytes (None for folders)."""
    out: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root)] = None
        for f in filenames:
            p = os.path.join(dirpath, f)
            out[os.path.relpath(p, root)] = Path(p).read_bytes()
    return out


COMMANDS = {"select": ["select", "--min-ddp", "1"], "sample": ["sample", "--per-bin", "1"]}


def run(capfd: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, list[str]]:
    code = main(argv)
    err = [ln for ln in capfd.readouterr().err.splitlines() if ln.strip()]
    return code, err


def command(name: str, *rest: str) -> list[str]:
    cmd, *crit = COMMANDS[name]
    return [cmd, "src.txt", "--reader", "lines", "--profile", "prof.parquet", *crit, *rest]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_outputs_to_cannot_overwrite_the_input(layout: Path, capfd: pytest.CaptureFixture[str], name: str) -> None:
    # outs/src.txt is a copy of the source: --outputs-to . would write its filtered lines over src.txt
    (layout / "outs" / "src.txt").write_bytes((layout / "src.txt").read_bytes())
    before = listing(layout)
    code, err = run(capfd, command(name, "--outputs", "outs", "--outputs-to", ".", "-o", "sel.txt"))
    assert code == 2 and len(err) == 1 and "[D133]" in err[0], err
    assert "src.txt" in err[0] and "outs/src.txt" in err[0]
    assert listing(layout) == before  # the input has its 4 lines, nothing was written


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_two_outputs_on_one_path_before_any_work(layout: Path, capfd: pytest.CaptureFixture[str], name: str) -> None:
    (layout / "outs" / "sysA.txt").write_bytes((layout / "src.txt").read_bytes())
    (layout / "outs" / "sel.txt").write_text("o1\no2\no3\no4\n", encoding="utf-8")  # its copy would be ./sel.txt = -o
    before = listing(layout)
    code, err = run(capfd, command(name, "--outputs", "outs", "--outputs-to", ".", "-o", "sel.txt"))
    assert code == 2 and len(err) == 1 and "[D134]" in err[0] and "sel.txt" in err[0], err
    assert listing(layout) == before
    if name == "select":  # elsewhere, every file is filtered by the same lines, into folders made for them
        code, err = run(capfd, command(name, "--outputs", "outs", "--outputs-to", "new/deeper", "-o", "sel.txt"))
        assert code == 0, err
        kept = [i for i, d in enumerate(DDP) if d >= 1]  # lines 2 and 4
        assert (layout / "sel.txt").read_text().splitlines() == [SRC[i] for i in kept]
        assert (layout / "sel.docs").read_text().splitlines() == [DOCS[i] for i in kept]
        assert (layout / "new/deeper/sysA.txt").read_text().splitlines() == [SRC[i] for i in kept]
        assert (layout / "new/deeper/sel.txt").read_text().splitlines() == [f"o{i + 1}" for i in kept]
        assert (layout / "src.txt").read_text().splitlines() == SRC


@pytest.mark.parametrize("folder", ["sel.docs", "sel.outputs/sysA.txt", "sel.txt.signature.json"])
def test_a_second_path_that_is_a_folder_is_refused_before_any_work(layout: Path, capfd: pytest.CaptureFixture[str],
                                                                   folder: str) -> None:
    (layout / "outs" / "sysA.txt").write_bytes((layout / "src.txt").read_bytes())
    (layout / folder).mkdir(parents=True)
    before = listing(layout)
    code, err = run(capfd, command("select", "--outputs", "outs", "-o", "sel.txt"))
    assert code == 2 and len(err) == 1 and "[D132]" in err[0] and folder in err[0], err
    assert listing(layout) == before  # no output, no stray sidecar


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_reader_defaults_to_the_profiles_signature(layout: Path, capfd: pytest.CaptureFixture[str], name: str) -> None:
    cmd, *crit = COMMANDS[name]
    if name == "sample":
        crit = ["--bins", "0,1,inf", "--per-bin", "5"]  # both documents (max DDP 1) in [1, inf): every line kept
    code, err = run(capfd, [cmd, "src.txt", "--profile", "prof.parquet", *crit, "-o", "zz.txt"])
    assert code == 0, err
    kept = [i for i, d in enumerate(DDP) if d >= 1] if name == "select" else [0, 1, 2, 3]
    assert (layout / "zz.txt").read_text().splitlines() == [SRC[i] for i in kept]
    assert (layout / "zz.docs").read_text().splitlines() == [DOCS[i] for i in kept]
    notes = [ln for ln in err if "--reader lines" in ln]
    assert len(notes) == 1 and notes[0].startswith(f"ddp {cmd}: note:") and "prof.parquet" in notes[0], err
    sig = json.loads((layout / "zz.txt.signature.json").read_text())
    assert sig["reader"]["name"] == "lines"
    # an error of a run that took the recorded reader says so, in its one line
    code, err = run(capfd, [cmd, "src.txt", "--profile", "prof.parquet", *crit, "-o", "zz.jsonl"])
    assert code == 2 and len(err) == 1 and "[D634]" in err[0] and "--reader lines, as recorded" in err[0], err
    # a --reader given on the command line wins (as in ddp explain): src.txt is no table
    code, err = run(capfd, [cmd, "src.txt", "--reader", "table", "--profile", "prof.parquet", *crit, "-o", "t.txt"])
    assert code == 2 and len(err) == 1 and "[D101]" in err[0] and "as recorded" not in err[0], err


def test_a_table_profile_keeps_the_table_reader(tmp_path: Path, capfd: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """No reader in the signature (a table profile): --reader table, no note; the output records it."""
    monkeypatch.chdir(tmp_path)
    write_lines_profile(tmp_path / "p.parquet", None)
    rows = [{"document_id": d, "segment_id": s, "source": t}
            for (d, s), t in zip([("d1", 0), ("d1", 1), ("d2", 0), ("d2", 1)], SRC)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code, err = run(capfd, ["select", "in.jsonl", "--profile", "p.parquet", "--min-ddp", "1", "-o", "o.jsonl"])
    assert code == 0 and not [ln for ln in err if "note" in ln], err
    assert [json.loads(x)["source"] for x in (tmp_path / "o.jsonl").read_text().splitlines()] == [SRC[1], SRC[3]]
    assert json.loads((tmp_path / "o.jsonl.signature.json").read_text())["reader"] == {"name": "table"}
