"""Bug hunt 9, signature sidecars of text outputs (helper 37).

- Nothing tied ``OUTPUT.signature.json`` to its data file: a sidecar copied from another output (or left from an
  earlier run whose table was then replaced by hand) was used in silence when its column names fitted: ``ddp
  report`` showed the other run's settings, ``ddp select`` recorded its ``profile_signature``. Every writer now
  records ``data`` (size, SHA-256 of the first and last MiB of the finished data file; ddpcore.io.sidecars), and
  the readers compare it: ``report``/``agree`` refuse a sidecar of another file (D932), ``explain`` says it,
  ``select``/``sample``/``stratify``/``meta``/``plot`` say it and record ``sidecar_mismatch``. A sidecar without
  ``data`` (an older ddpcore) is read as before; the stamp is not part of the signature (stripped on read).
- A damaged sidecar (not valid JSON, truncated, not an object) was D103 in report/agree/explain but ignored in
  silence by select, sample, stratify, meta and plot (then a D635 "column 'document_id' missing" for a renamed
  profile, with nothing pointing at the sidecar): now one warning line naming the sidecar, the same everywhere.
- ``ddp report --anchors`` compared the recorded ``input`` names as written: the same file profiled from another
  working folder ('in.jsonl' and 'x/in.jsonl') was D681 "of another run".

Expected stamps are computed here with hashlib from the files' bytes; expected selections with plain loops.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from ddpcore.cli.main import main

MIB = 1 << 20
TEXTS = ["Anna Berg moved to Oslo in May. The city was cold.", "Berg stayed inside for weeks.",
         "Nobody called. It rained every day.", "Anna Berg finally left in June."]
#: a hand-made profile (no spaCy): 3 documents, written with renamed columns (doc, seg, genre, txt)
PROFILE = {"doc": ["d1", "d1", "d1", "d2", "d2", "d3"], "seg": [0, 1, 2, 0, 1, 0],
           "genre": ["news", "news", "news", "social", "social", "news"], "n_sentences": [1, 2, 1, 3, 1, 2],
           "ddp": [0, 2, 7, 0, 3, 1], "first_sentence": [0, 1, 3, 0, 3, 0], "txt": ["a", "b", "c", "d", "e", "f"]}
COLUMNS = {"document": "doc", "segment": "seg", "domain": "genre", "text": "txt"}


def _ddp(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ddpcore.cli.main", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def _stamp(path: Path) -> dict:
    """What the sidecar of ``path`` must record, from its bytes: size and SHA-256 of the first and last MiB."""
    data = path.read_bytes()
    return {"bytes": len(data), "head_sha256": hashlib.sha256(data[:MIB]).hexdigest(),
            "tail_sha256": hashlib.sha256(data[max(0, len(data) - MIB):]).hexdigest(), "span": MIB}


def _side(path: Path) -> dict:
    return json.loads(Path(f"{path}.signature.json").read_text(encoding="utf-8"))


def _write_profile(path: Path, rules: str = "refined") -> Path:
    """The hand-made profile as a ddpcore text output (its stamped sidecar written by write_tables_atomic)."""
    from ddpcore.io.tables import write_tables_atomic

    sig = {"ddpcore": "0.1.0", "rules": rules, "distance": "chained", "pipeline_name": "en_core_web_sm",
           "columns": COLUMNS, "input": "in.jsonl"}
    write_tables_atomic([(pl.DataFrame(PROFILE), path)], sidecar=json.dumps(sig))
    return path


def _input(folder: Path) -> Path:
    """The input the hand-made profile is of: one JSON line per segment, in profile order."""
    rows = [{"doc": d, "seg": s, "txt": t} for d, s, t in zip(PROFILE["doc"], PROFILE["seg"], PROFILE["txt"])]
    path = folder / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _warnings(stderr: str) -> list[str]:
    return [ln.split(": warning: ", 1)[1] for ln in stderr.splitlines() if ": warning: " in ln]


# ------------------------------------------------------------------ every writer records the stamp of its data file


@pytest.fixture(scope="module")
def profiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`ddp profile` text outputs of four segments (segments .csv, anchors .jsonl.gz, documents .tsv)."""
    d = tmp_path_factory.mktemp("profiled")
    rows = [{"document_id": "doc", "segment_id": i, "source": t} for i, t in enumerate(TEXTS)]
    (d / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    r = _ddp(d, "profile", "in.jsonl", "-o", "p.csv", "--anchors", "a.jsonl.gz", "--documents", "docs.tsv", "-q",
             "--no-cache")
    assert r.returncode == 0, r.stderr
    return d


def test_profile_sidecars_record_their_data_files(profiled: Path) -> None:
    for name in ("p.csv", "a.jsonl.gz", "docs.tsv"):
        side = _side(profiled / name)
        assert side["data"] == _stamp(profiled / name), name  # the bytes on disk (compressed for .gz)
        assert side["rules"] == "refined"


def test_sidecar_and_parquet_signatures_of_one_run_compare_equal(profiled: Path, tmp_path: Path) -> None:
    """`ddp merge` writes one signature into every table: the sidecar's, read back, equals the Parquet
    metadata's (the stamp is no part of the signature)."""
    from ddpcore.io.profiles import load_signature, read_signature

    shutil.copy(profiled / "in.jsonl", tmp_path / "in.jsonl")
    r = _ddp(tmp_path, "profile", "in.jsonl", "--shard", "0/1", "-o", "s.parquet", "--anchors", "sa.parquet", "-q")
    assert r.returncode == 0, r.stderr
    r = _ddp(tmp_path, "merge", "s.parquet", "sa.parquet", "-o", "m.csv", "--anchors", "ma.parquet", "-q")
    assert r.returncode == 0, r.stderr
    assert _side(tmp_path / "m.csv")["data"] == _stamp(tmp_path / "m.csv")
    meta = json.loads(pq.read_schema(tmp_path / "ma.parquet").metadata[b"ddpcore.signature"])
    assert read_signature(tmp_path / "m.csv") == meta == read_signature(tmp_path / "ma.parquet")
    assert load_signature(tmp_path / "m.csv")[0] == meta


def test_select_sample_and_result_files_record_their_data_files(tmp_path: Path, capsys) -> None:
    from ddpcore.io.tables import write_tables_atomic

    _input(tmp_path)
    prof = _write_profile(tmp_path / "p.csv")
    assert _side(prof)["data"] == _stamp(prof)  # write_tables_atomic (mix, validate, metric_s, ...)
    write_tables_atomic([(pl.DataFrame({"a": [1]}), tmp_path / "t.json.gz")], sidecar='{"k": 1}')
    assert _side(tmp_path / "t.json.gz") == {"k": 1, "data": _stamp(tmp_path / "t.json.gz")}
    outs = {"select": ["select", str(tmp_path / "in.jsonl"), "--profile", str(prof), "--min-ddp", "2"],
            "sample": ["sample", str(tmp_path / "in.jsonl"), "--profile", str(prof), "--per-bin", "9", "--unit",
                       "segment"]}
    for name, argv in outs.items():
        out = tmp_path / f"{name}.jsonl"
        assert main([*argv, "-o", str(out)]) == 0, capsys.readouterr().err
        assert _side(out)["data"] == _stamp(out), name
    scores = tmp_path / "s.csv"
    pl.DataFrame({"doc": PROFILE["doc"] * 2, "seg": PROFILE["seg"] * 2, "score": [float(i % 4) for i in range(12)],
                  "condition": ["a"] * 6 + ["b"] * 6}).write_csv(scores)
    results = {"tost.json": ["stats", "tost", str(scores), "--a", "a", "--b", "b", "--margin", "0.5",
                             "--document-col", "doc", "--segment-col", "seg"],
               "strat.json": ["stratify", str(prof), str(scores), "--score-col", "score", "--n-boot", "0",
                              "--bins", "0,2,inf"]}
    for name, argv in results.items():
        out = tmp_path / name
        assert main([*argv, "-o", str(out)]) == 0, capsys.readouterr().err
        assert _side(out)["data"] == _stamp(out), name
    data = Path(__file__).parent / "data" / "meta"
    out = tmp_path / "meta.md"
    assert main(["meta", str(data / "profile.tsv"), str(data / "scores.tsv"), "--human-col", "mqm", "--n-boot", "50",
                 "--n-perm", "50", "--spa-perm", "20", "-o", str(out)]) == 0
    assert _side(out)["data"] == _stamp(out)


def test_layout_sidecar_records_the_selected_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--reader lines`: the sidecar of -o (written after the .docs and the aligned files) stamps -o itself."""
    monkeypatch.chdir(tmp_path)
    src = ["John Smith arrived in Paris.", "He liked the city.", "Mary met him there.", "She was happy."]
    Path("src.txt").write_text("\n".join(src) + "\n", encoding="utf-8")
    Path("src.docs").write_text("news\td1\nnews\td1\nnews\td2\nnews\td2\n", encoding="utf-8")
    df = pl.DataFrame({"document_id": ["d1", "d1", "d2", "d2"], "segment_id": [0, 1, 0, 1], "domain": ["news"] * 4,
                       "n_sentences": [1] * 4, "ddp": [0, 1, 0, 1], "first_sentence": [0, 1, 0, 1]})
    sig = {"reader": {"name": "lines", "docs": "src.docs", "txt_mode": "lines"}}
    pq.write_table(df.to_arrow().replace_schema_metadata({b"ddpcore.signature": json.dumps(sig).encode()}),
                   "prof.parquet")
    assert main(["select", "src.txt", "--profile", "prof.parquet", "--min-ddp", "1", "-o", "sel.txt"]) == 0
    assert Path("sel.txt").read_text().splitlines() == [src[1], src[3]]  # the lines of DDP >= 1
    assert _side(tmp_path / "sel.txt")["data"] == _stamp(tmp_path / "sel.txt")


def test_ray_engine_sidecars_record_their_data_files(ray_local, profiled: Path, tmp_path: Path) -> None:
    """The Ray engine wrote the sidecar before the data file: it now stamps the finished file."""
    shutil.copy(profiled / "in.jsonl", tmp_path / "in.jsonl")
    assert main(["profile", str(tmp_path / "in.jsonl"), "--engine", "ray", "-j", "1", "-o", str(tmp_path / "r.csv"),
                 "--anchors", str(tmp_path / "ra.tsv.gz"), "-q"]) == 0
    for name in ("r.csv", "ra.tsv.gz"):
        assert _side(tmp_path / name)["data"] == _stamp(tmp_path / name), name


# ------------------------------------------------------------------ a sidecar of another file


@pytest.fixture()
def copied(tmp_path: Path) -> Path:
    """p.csv with the sidecar of q.csv (another run: rules 'paper', one row fewer) copied over its own."""
    _input(tmp_path)
    _write_profile(tmp_path / "p.csv")
    from ddpcore.io.tables import write_tables_atomic

    q = pl.DataFrame(PROFILE).head(5)
    sig = {"ddpcore": "0.1.0", "rules": "paper", "distance": "nearest", "columns": COLUMNS, "input": "in.jsonl"}
    write_tables_atomic([(q, tmp_path / "q.csv")], sidecar=json.dumps(sig))
    shutil.copy(tmp_path / "q.csv.signature.json", tmp_path / "p.csv.signature.json")
    return tmp_path


def test_select_says_and_records_a_sidecar_of_another_file(copied: Path) -> None:
    r = _ddp(copied, "select", "in.jsonl", "--profile", "p.csv", "--min-ddp", "2", "-o", "out.jsonl")
    assert r.returncode == 0, r.stderr
    warn = _warnings(r.stderr)
    assert len(warn) == 1 and warn[0].startswith("p.csv.signature.json is not the signature of p.csv: it records a "
                                                 "data file of "), r.stderr
    size_q, size_p = (copied / "q.csv").stat().st_size, (copied / "p.csv").stat().st_size
    assert f"{size_q:,} bytes, p.csv has {size_p:,}" in warn[0]
    got = [(d["doc"], d["seg"]) for d in map(json.loads, (copied / "out.jsonl").read_text().splitlines())]
    assert got == [(d, s) for d, s, x in zip(PROFILE["doc"], PROFILE["seg"], PROFILE["ddp"]) if x >= 2]
    recorded = _side(copied / "out.jsonl")["profile_signature"]
    assert recorded["rules"] == "paper" and "is not the signature of p.csv" in recorded["sidecar_mismatch"]


@pytest.mark.parametrize("command", ["report", "agree"])
def test_report_and_agree_refuse_a_sidecar_of_another_file(copied: Path, command: str) -> None:
    if command == "report":
        pytest.importorskip("matplotlib")
        r = _ddp(copied, "report", "p.csv", "-o", "r.html")
    else:
        _write_profile(copied / "p2.csv")  # B: the same table with its own sidecar
        r = _ddp(copied, "agree", "p.csv", "p2.csv")
    assert r.returncode == 3 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"ddp {command}: error: [D932] p.csv.signature.json is not the signature of p.csv")
    assert not (copied / "r.html").exists()
    os.remove(copied / "p.csv.signature.json")  # without it: the renamed columns are not known, but no D932
    r = _ddp(copied, *(["report", "p.csv", "-o", "r.html"] if command == "report" else ["agree", "p.csv", "p2.csv"]))
    assert "[D932]" not in r.stderr


def test_a_table_changed_in_place_with_its_size_kept(tmp_path: Path) -> None:
    """The stamp reads the first and last MiB: a byte changed there is found, one in between is not (the
    documented limit of an O(1) check)."""
    from ddpcore.io.sidecars import read_sidecar, sidecar_text

    path = tmp_path / "big.csv"
    body = b"x,y\n" + b"".join(b"%d,%d\n" % (i, i % 7) for i in range(400_000))  # ~3.3 MB
    assert len(body) > 3 * MIB
    path.write_bytes(body)
    Path(f"{path}.signature.json").write_text(sidecar_text({"rules": "refined"}, path), encoding="utf-8")
    assert read_sidecar(path).mismatch is None and read_sidecar(path).signature == {"rules": "refined"}
    for offset, where in ((10, "first"), (len(body) - 3, "last"), (len(body) // 2, None)):
        changed = bytearray(body)
        changed[offset] = ord("9") if changed[offset] != ord("9") else ord("8")
        path.write_bytes(bytes(changed))
        found = read_sidecar(path)
        if where is None:
            assert found.mismatch is None
        else:
            assert f"the SHA-256 of its {where} 1,048,576 bytes differs" in found.mismatch
    path.write_bytes(body + b"1,1\n")
    assert read_sidecar(path).mismatch.startswith(f"it records a data file of {len(body):,} bytes")


def test_an_older_sidecar_without_the_stamp_is_read_as_before(tmp_path: Path) -> None:
    _input(tmp_path)
    pl.DataFrame(PROFILE).write_csv(tmp_path / "p.csv")
    (tmp_path / "p.csv.signature.json").write_text(json.dumps({"rules": "paper", "columns": COLUMNS}))
    r = _ddp(tmp_path, "select", "in.jsonl", "--profile", "p.csv", "--min-ddp", "2", "-o", "out.jsonl")
    assert r.returncode == 0 and not _warnings(r.stderr), r.stderr
    assert _side(tmp_path / "out.jsonl")["profile_signature"] == {"rules": "paper", "columns": COLUMNS}


@pytest.mark.spacy_model
def test_explain_says_a_sidecar_of_another_file(profiled: Path, tmp_path: Path) -> None:
    """The table rewritten by hand (a column added), its sidecar kept: the re-parse gives the row's own DDP, so
    nothing was said; now one warning that the settings may not be the table's. (A sidecar of another run whose
    table has the very same bytes, e.g. --rules paper and refined agreeing on every row, cannot be told apart.)"""
    for name in ("in.jsonl", "p.csv.signature.json"):
        shutil.copy(profiled / name, tmp_path / name)
    pl.read_csv(profiled / "p.csv").with_columns(checked=pl.lit(1)).write_csv(tmp_path / "p.csv")
    r = _ddp(tmp_path, "explain", "p.csv", "--document", "doc", "--segment", "3")
    assert r.returncode == 0, r.stderr
    warn = _warnings(r.stderr)
    assert len(warn) == 1 and warn[0].startswith("p.csv.signature.json is not the signature of p.csv") \
        and "gives the output's own value" in warn[0], r.stderr


# ------------------------------------------------------------------ a damaged sidecar, said the same way everywhere


DAMAGED = {"invalid": ("{bad", "is not valid JSON"), "truncated": ('{"columns": {"document": "doc"', "is not valid JSON"),
           "list": ("[1, 2]", "is not a ddpcore signature (expected a JSON object)")}


@pytest.mark.parametrize("damage", sorted(DAMAGED))
def test_a_damaged_sidecar_is_one_warning_naming_it_in_every_lenient_reader(tmp_path: Path, damage: str) -> None:
    """select, sample, stratify, meta and plot read the profile without it, and say so first (the same line):
    the renamed columns are then unknown, and the error that follows (D635...) is no longer a riddle."""
    _input(tmp_path)
    pl.DataFrame(PROFILE).write_csv(tmp_path / "p.csv")
    text, what = DAMAGED[damage]
    (tmp_path / "p.csv.signature.json").write_text(text, encoding="utf-8")
    pl.DataFrame({"doc": PROFILE["doc"], "seg": PROFILE["seg"], "score": [1.0] * 6}).write_csv(tmp_path / "s.csv")
    commands = {"select": ["select", "in.jsonl", "--profile", "p.csv", "--min-ddp", "2", "-o", "o.jsonl"],
                "sample": ["sample", "in.jsonl", "--profile", "p.csv", "--per-bin", "2", "-o", "o2.jsonl"],
                "stratify": ["stratify", "p.csv", "s.csv", "--score-col", "score", "--n-boot", "0"],
                "meta": ["meta", "p.csv", "s.csv", "--human-col", "score"]}
    if _has_matplotlib():
        commands["plot"] = ["plot", "p.csv", "--kind", "hist", "-o", "h.png"]
    said = set()
    for name, argv in commands.items():
        r = _ddp(tmp_path, *argv)
        warn = _warnings(r.stderr)
        assert warn and warn[0].startswith(f"p.csv.signature.json {what}") and "read without it" in warn[0], \
            (name, r.stderr)
        said.add(warn[0])
        assert "D999" not in r.stderr and "Traceback" not in r.stderr, (name, r.stderr)
    assert len(said) == 1  # one message, whatever the command


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


# ------------------------------------------------------------------ report: the input profiled from another folder


@pytest.mark.spacy_model
def test_report_same_input_from_another_working_folder(profiled: Path, tmp_path: Path) -> None:
    """`cd x; ddp profile in.jsonl -o p.csv` and `ddp profile x/in.jsonl ... --anchors x/a.csv` from the folder
    above record 'in.jsonl' and 'x/in.jsonl': one input (the same file), not D681; another input still is."""
    pytest.importorskip("matplotlib")
    x = tmp_path / "x"
    x.mkdir()
    shutil.copy(profiled / "in.jsonl", x / "in.jsonl")
    assert _ddp(x, "profile", "in.jsonl", "-o", "p.csv", "-q").returncode == 0
    assert _ddp(tmp_path, "profile", "x/in.jsonl", "-o", "x/q.csv", "--anchors", "x/a.csv", "-q").returncode == 0
    assert _side(x / "a.csv")["input"] == "x/in.jsonl" and _side(x / "p.csv")["input"] == "in.jsonl"
    for cwd, args in ((x, ["p.csv", "--anchors", "a.csv", "-o", "r.html"]),
                      (tmp_path, ["x/p.csv", "--anchors", "x/a.csv", "-o", "x/r2.html"])):
        r = _ddp(cwd, "report", *args)
        assert r.returncode == 0 and "[D681]" not in r.stderr, r.stderr
    rows = (x / "in.jsonl").read_text(encoding="utf-8").splitlines()  # another input: one segment text changed
    (tmp_path / "other.jsonl").write_text("\n".join(rows[:-1] + [rows[-1].replace("June", "July")]) + "\n")
    assert _ddp(tmp_path, "profile", "other.jsonl", "-o", "x/o.csv", "--anchors", "x/oa.csv", "-q").returncode == 0
    r = _ddp(x, "report", "p.csv", "--anchors", "oa.csv", "-o", "r3.html")
    assert r.returncode == 3 and "[D681]" in r.stderr and "'input' differs" in r.stderr, r.stderr
