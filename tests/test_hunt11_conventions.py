"""Conventions every command keeps (hunt 11, helper 44): outputs never over an input's signature sidecar,
byte-reproducible ``.gz`` outputs, gates that never pass in silence and record their verdict in every
format, and two ``--*-col`` flags naming one column refused with one line (not D999).

Small synthetic tables only (no spaCy): tests/data/meta for ``ddp meta`` and ``ddp stratify``, long tables
built here for ``ddp stats`` and ``ddp mix``."""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats as sps

from ddpcore.cli.main import main

DATA = Path(__file__).resolve().parent / "data" / "meta"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _leftovers(folder: Path) -> list[str]:
    """Temporary files (``.NAME.XXXXXXXX.tmp``) a refused run must not leave."""
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# --------------------------------------------------------------------------- an input's sidecar is an input


def test_output_on_an_input_signature_sidecar_is_refused(tmp_path, capsys, monkeypatch):
    """`ddp stratify prof.tsv scores.tsv -o prof.tsv.signature.json` overwrote the profile's signature (the
    settings and column names every later reader of the profile uses) with exit 0; now D133 before any work."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(DATA / "profile.tsv", "prof.tsv")
    shutil.copy(DATA / "scores.tsv", "scores.tsv")
    side = Path("prof.tsv.signature.json")
    side.write_text(json.dumps({"columns": {"document": "document_id", "segment": "segment_id"}}), encoding="utf-8")
    before = side.read_bytes()
    for out in ("prof.tsv.signature.json", "./prof.tsv.signature.json"):
        code, stdout, err = _run(capsys, "stratify", "prof.tsv", "scores.tsv", "--score-col", "good", "--n-boot", "20",
                                 "-o", out)
        assert code == 2, err
        assert "[D133]" in err and err.count("\n") == 1
        assert stdout == ""
    assert side.read_bytes() == before  # the input's sidecar untouched
    assert _leftovers(tmp_path) == []
    assert not Path("prof.tsv.signature.json.signature.json").exists()


def test_output_on_an_input_sidecar_through_a_symlink(tmp_path):
    """The same refusal through a symlink to the sidecar (same device and inode), in the shared check."""
    from ddpcore.errors import DDPUsageError
    from ddpcore.io.outputs import check_outputs

    prof = tmp_path / "prof.csv"
    prof.write_text("document_id,segment_id,ddp\nd,0,1\n", encoding="utf-8")
    (tmp_path / "prof.csv.signature.json").write_text("{}", encoding="utf-8")
    link = tmp_path / "other.json"
    link.symlink_to(tmp_path / "prof.csv.signature.json")
    with pytest.raises(DDPUsageError) as exc:
        check_outputs([("-o/--output", link)], inputs=[prof])
    assert exc.value.code == "D133"
    # no sidecar beside the input: nothing more is claimed
    (tmp_path / "prof.csv.signature.json").unlink()
    link.unlink()
    assert check_outputs([("-o/--output", tmp_path / "prof.csv.signature.json")], inputs=[prof])


# --------------------------------------------------------------------------- .gz outputs: the same bytes


def _gzip_header(path: Path) -> tuple[int, bytes]:
    """(FLG, MTIME) of a gzip member, read by hand from RFC 1952 (bytes 3 and 4..7)."""
    head = path.read_bytes()[:10]
    assert head[:2] == b"\x1f\x8b"
    return head[3], head[4:8]


def _mix_table(path: Path) -> None:
    rows = [dict(document_id=f"d{d}", segment_id=s, system=f"s{k}", text=f"s{k} d{d} seg {s}")
            for d in range(3) for s in range(3) for k in range(3)]
    pl.DataFrame(rows).write_csv(path)


def test_gz_outputs_carry_no_name_or_time(tmp_path, capsys, monkeypatch):
    """A `.gz` output's header held the temporary file's name (`.mix.csv.gz.XXXXXXXX.tmp`, restored by
    `gunzip -N`) and the time of writing, so the same seed never gave the same bytes twice; now neither
    (as `gzip -n`): FNAME flag (0x08) clear and MTIME 0 (RFC 1952)."""
    monkeypatch.chdir(tmp_path)
    _mix_table(tmp_path / "sys.csv")
    code, _, err = _run(capsys, "mix", "sys.csv", "-o", "mix.csv.gz", "--seed", "5")
    assert code == 0, err
    for name in ("mix.csv.gz", "mix.assignment.csv.gz"):
        flg, mtime = _gzip_header(tmp_path / name)
        assert flg & 0x08 == 0 and mtime == b"\0\0\0\0", name
        assert gzip.decompress((tmp_path / name).read_bytes())  # still a valid gzip file
    first = (tmp_path / "mix.csv.gz").read_bytes()
    assert _run(capsys, "mix", "sys.csv", "-o", "mix2.csv.gz", "--seed", "5")[0] == 0
    assert (tmp_path / "mix2.csv.gz").read_bytes() == first
    # the rows equal the uncompressed output's
    assert _run(capsys, "mix", "sys.csv", "-o", "mix3.csv", "--seed", "5")[0] == 0
    assert gzip.decompress(first) == (tmp_path / "mix3.csv").read_bytes()


def test_gz_sample_and_sink_headers(tmp_path, capsys, monkeypatch):
    """The same for the verbatim copy of `ddp sample/select` and the streaming sink of `ddp profile`/`merge`."""
    from ddpcore.io.sinks import Sink

    monkeypatch.chdir(tmp_path)
    prof = pl.read_csv(DATA / "profile.tsv", separator="\t").with_columns(n_sentences=pl.lit(1),
                                                                           first_sentence=pl.lit(0))
    prof.write_csv("prof.tsv", separator="\t")
    data = prof.select("document_id", "segment_id", "domain").with_columns(source=pl.lit("x"))
    Path("in.jsonl.gz").write_bytes(gzip.compress(data.write_ndjson().encode()))
    code, _, err = _run(capsys, "sample", "in.jsonl.gz", "--profile", "prof.tsv", "--per-bin", "2", "--bins", "0,5,100",
                        "-o", "s.jsonl.gz")
    assert code == 0, err
    flg, mtime = _gzip_header(tmp_path / "s.jsonl.gz")
    assert flg & 0x08 == 0 and mtime == b"\0\0\0\0"

    sink = Sink(tmp_path / "part.csv.gz", "csv", gzip_=True, metadata={})
    sink.write(pl.DataFrame({"a": [1, 2]}))
    sink.close()
    flg, mtime = _gzip_header(tmp_path / "part.csv.gz")
    assert flg & 0x08 == 0 and mtime == b"\0\0\0\0"
    assert gzip.decompress((tmp_path / "part.csv.gz").read_bytes()) == b"a\n1\n2\n"


# --------------------------------------------------------------------------- a gate that tests nothing says so


def test_meta_gate_with_no_bin_at_its_ddp_is_not_a_silent_pass(capsys):
    """`--fail-on local:pearson.item:15 --bins 0,5,15`: no bin starts at DDP >= 15 (the last is [5, 15)), so the
    gate tested nothing and passed with nothing said; it now says so on stderr and in signature.gate.notes."""
    bins = [0.0, 5.0, 15.0]
    # independent: the bins are [0, 5) and [5, 15); the gate looks at bins after the first with lower edge >= 15
    assert not [lo for lo in bins[1:-1] if lo >= 15]
    base = ["meta", str(DATA / "profile.tsv"), str(DATA / "scores.tsv"), "--human-col", "mqm", "--n-boot", "100",
            "--n-perm", "100", "--spa-perm", "50"]
    code, out, err = _run(capsys, *base, "--bins", "0,5,15", "--fail-on", "local:pearson.item:15")
    assert code == 0
    assert "--fail-on: local:pearson.item:15: no bin" in err and "nothing was tested" in err
    gate = json.loads(out)["signature"]["gate"]
    assert gate["passed"] is True and any("nothing was tested" in n for n in gate["notes"])
    # a bin at DDP >= 15 is tested as before (the planted drop of the fixture fails the gate)
    code, out, err = _run(capsys, *base, "--fail-on", "local:pearson.item:15")
    assert code == 1 and "nothing was tested" not in err


# --------------------------------------------------------------------------- the verdict in every format


def _ranked_table(path: Path, reverse_b: bool) -> list[float]:
    """4 systems 10 points apart in every document (a resample of documents keeps the order); condition B the
    same order, or the reverse. Returns Kendall's tau of the two system rankings (scipy)."""
    rng = np.random.default_rng(3)
    rows, means = [], {"A": [], "B": []}
    for i in range(4):
        for cond in ("A", "B"):
            rank = (3 - i) if (cond == "B" and reverse_b) else i
            vals = [10.0 * rank + rng.uniform(0, 1) for _ in range(5 * 2)]
            means[cond].append(float(np.mean(vals)))
            for k, v in enumerate(vals):
                rows.append(dict(document_id=f"d{k // 2}", segment_id=k % 2, system=f"s{i}", condition=cond, score=v))
    pl.DataFrame(rows).write_csv(path)
    return [float(sps.kendalltau(means["A"], means["B"]).statistic)]


@pytest.mark.parametrize("reverse,expected", [(False, "passed"), (True, "FAILED")])
def test_stats_gate_verdict_in_text_and_tsv(tmp_path, capsys, reverse, expected):
    """`ddp stats tau --fail-on different -f text|tsv` (and `-o FILE.tsv`) said the verdict on stderr only: the
    text and TSV results (JSON has `passed`) did not record whether the gate passed; now one line each."""
    table = tmp_path / "t.csv"
    (tau,) = _ranked_table(table, reverse)
    # independent: every replicate has the same ranking, so the CI of tau is [tau, tau]; the gate fails when
    # its lower bound (tau) is below --tau-min 0.5
    assert (tau < 0.5) == (expected == "FAILED")
    base = ["stats", "tau", str(table), "--a", "A", "--b", "B", "--n-boot", "200", "--tau-min", "0.5",
            "--fail-on", "different"]
    for fmt, line in (("text", f"gate --fail-on different: {expected}"),
                      ("tsv", f"# gate --fail-on different: {expected}")):
        code, out, err = _run(capsys, *base, "-f", fmt)
        assert code == (1 if expected == "FAILED" else 0), err
        assert out.rstrip("\n").splitlines()[-1] == line
        assert ("gate different failed" in err) == (expected == "FAILED")
    out_file = tmp_path / "r.tsv"
    code, out, _ = _run(capsys, *base, "-o", str(out_file))
    assert out == "" and out_file.read_text(encoding="utf-8").rstrip("\n").splitlines()[-1] == \
        f"# gate --fail-on different: {expected}"


def test_compare_tsv_and_mix_text_record_the_gate(tmp_path, capsys, monkeypatch):
    """`ddp stats compare -f tsv --fail-on` and `ddp mix -f text --fail-on` recorded no verdict either."""
    monkeypatch.chdir(tmp_path)
    rows = [dict(document_id=f"d{d}", segment_id=s, system=f"s{i}", score=10.0 * i + 0.1 * ((d * 7 + s) % 5))
            for d in range(8) for s in range(2) for i in range(3)]
    pl.DataFrame(rows).write_csv("w.csv")
    # independent: s0 and s1 are 20 and 10 points below s2 in every document, so both are significantly worse
    code, out, err = _run(capsys, "stats", "compare", "w.csv", "--baseline", "s2", "--n-boot", "200", "--test",
                          "bootstrap", "-f", "tsv", "--fail-on", "worse")
    assert code == 1 and out.rstrip("\n").splitlines()[-1] == "# gate --fail-on worse: FAILED"
    _mix_table(tmp_path / "sys.csv")
    # independent: 3 segments per document and a pool of 3 systems: every document is long enough (feasible);
    # a pool of 4 is not (3 < 4)
    code, out, _ = _run(capsys, "mix", "sys.csv", "-o", "m.csv", "-f", "text", "--fail-on", "infeasible")
    assert code == 0 and out.rstrip("\n").splitlines()[-1] == "gate --fail-on infeasible: passed"
    rows4 = pl.read_csv("sys.csv")
    pl.concat([rows4, rows4.filter(pl.col("system") == "s0").with_columns(system=pl.lit("s3"))]).write_csv("sys4.csv")
    code, out, err = _run(capsys, "mix", "sys4.csv", "-o", "m4.csv", "-f", "text", "--fail-on", "infeasible")
    assert code == 1 and out.rstrip("\n").splitlines()[-1] == "gate --fail-on infeasible: FAILED"
    assert Path("m4.csv").exists() and Path("m4.assignment.csv").exists()  # the outputs are written all the same


# --------------------------------------------------------------------------- one column, two roles


@pytest.mark.parametrize("argv", [
    ["mix", "sys.csv", "-o", "m.csv", "--text-col", "system"],
    ["mix", "sys.csv", "-o", "m.csv", "--segment-col", "document_id"],
    ["stats", "compare", "sys.csv", "--baseline", "s0", "--score-col", "segment_id", "--segment-col", "document_id"],
    ["stats", "compare", "sys.csv", "--baseline", "s0", "--corpus-metric", "chrf", "--hypothesis-col", "text",
     "--reference-col", "text2", "--segment-col", "document_id"],
    ["sample", "in.jsonl", "--profile", "prof.tsv", "--per-bin", "1", "--segment-col", "document_id", "-o", "s.jsonl"],
    ["select", "in.jsonl", "--profile", "prof.tsv", "--min-ddp", "1", "--segment-col", "document_id", "-o", "s.jsonl"],
])
def test_two_column_flags_naming_one_column(tmp_path, capsys, monkeypatch, argv):
    """Two `--*-col` flags naming one column were D999 (polars DuplicateError) in mix, stats compare, sample and
    select; now one D972 line, exit 2, nothing written."""
    monkeypatch.chdir(tmp_path)
    _mix_table(tmp_path / "sys.csv")
    pl.read_csv("sys.csv").with_columns(text2=pl.col("text")).write_csv("sys.csv")
    prof = pl.read_csv(DATA / "profile.tsv", separator="\t").with_columns(n_sentences=pl.lit(1),
                                                                           first_sentence=pl.lit(0))
    prof.write_csv("prof.tsv", separator="\t")
    prof.select("document_id", "segment_id").with_columns(source=pl.lit("x")).write_ndjson("in.jsonl")
    before = sorted(p.name for p in tmp_path.iterdir())
    code, out, err = _run(capsys, *argv)
    assert code == 2, err
    assert err.startswith(f"ddp {argv[0]}") and "[D972]" in err and err.count("\n") == 1
    assert "D999" not in err and out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == before
