"""Hunt 8: items earlier hunts noticed and left alone, now fixed. Each test fails without its fix.

1. A parse-cache shard copied by hand from one pipeline configuration's folder into another's was served
   (another configuration's parses, exit 0). A shard now records the folder it was written in; one that
   names another folder is said, recorded (``cache.foreign``), removed and its lines parsed again.
2. An intact ``info.json`` of another configuration copied into a pipeline folder was ignored in silence
   (and rewritten). One whose fingerprint names another folder of the cache is now said and recorded.
   (``--resume`` keeps no ``info.json``: its journal is checked by D170, and a resumed run's cache is this one.)
3. ``[D302]`` named ``<table>`` for scores read with ``--reader mtme`` (and the other score readers): a
   reader's table now keeps the name of what was read, and the message gives the row's ids.
4. ``[D781]`` (a profile's DDP column holds no DDP values: null, fractions, text) exited 2, a usage error,
   even when no option was given (the default ``ddp`` column); the same values are D260/D910 (exit 3)
   elsewhere. It is bad data: exit 3.
5. ``ddp stats tost`` errors said ``ddp stats: error:`` where its warnings say ``ddp stats tost: warning:``,
   and the score readers' notes said ``ddp: note:``; ``ddp cache info`` errors ``ddp cache:``. One prefix now.
6. ``by=`` on a float column with NaN: ``summarize`` and ``znormalize`` gave other groups for a pandas
   frame (NaN handed over as null) than for the same polars or pyarrow table (NaN kept). NaN is now one
   group with the nulls in every container.
"""
from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
from test_cache import FAKE_INFO, OTHER_INFO, FakeParser, OtherParser, fake_arrays, same_arrays
from test_cache import cache_folder as _folder

from ddpcore.cli.main import main
from ddpcore.pipeline import cache as C

REPO = Path(__file__).resolve().parents[1]
MINI = REPO / "tests" / "data" / "wmt25_mini.jsonl"
TOY = REPO / "tests" / "data" / "mtme" / "toy"



def _ddp(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ddpcore.cli.main", *args], capture_output=True, text=True,
                          timeout=600)


def _sig(path: Path) -> dict:
    return json.loads(pq.read_schema(path).metadata[b"ddpcore.signature"])


# ------------------------------------------------------------------ 1. a shard copied across folders


def test_a_shard_copied_into_another_configurations_folder_is_not_served(tmp_path):
    texts = ["alpha beta", "gamma delta epsilon"]
    C.CachedParse(FakeParser(), tmp_path)(texts)  # the default configuration's parses of both lines
    other = OtherParser()
    C.CachedParse(other, tmp_path)(["zeta"])  # the other configuration's folder exists (marked)
    (src,) = sorted((tmp_path / _folder(FAKE_INFO)).glob("*.parquet"))
    dst = tmp_path / _folder(OTHER_INFO) / src.name
    shutil.copy2(src, dst)  # by hand: one shard of the default folder into the other configuration's

    seen: list[str] = []
    other = OtherParser()
    run = C.CachedParse(other, tmp_path, warn=seen.append)
    got = run(texts)
    # the other configuration's own parses (the POS shifted), never the copied shard's
    assert same_arrays(got, OtherParser().parse(texts)) and not same_arrays(got, fake_arrays(texts))
    assert other.calls == [texts]
    assert len(seen) == 1 and src.name in seen[0] and _folder(FAKE_INFO) in seen[0] and "copied" in seen[0]
    sig = run.signature()["cache"]
    assert sig["foreign"] == [src.name] and sig["hits"] == 0 and sig["misses"] == 2
    assert not dst.exists() and src.exists()  # removed from the wrong folder only
    # the next run is served its own (newly stored) parses, silently
    again: list[str] = []
    other = OtherParser()
    run = C.CachedParse(other, tmp_path, warn=again.append)
    assert same_arrays(run(texts), OtherParser().parse(texts)) and other.calls == [] and again == []


def test_shards_record_their_folder_and_same_folder_shards_stay_served(tmp_path):
    C.CachedParse(FakeParser(), tmp_path)(["a b"])
    (shard,) = sorted((tmp_path / _folder(FAKE_INFO)).glob("*.parquet"))
    meta = json.loads(pq.read_schema(shard).metadata[C.SHARD_META_KEY])
    assert meta["folder"] == _folder(FAKE_INFO)
    seen: list[str] = []
    parser = FakeParser()
    run = C.CachedParse(parser, tmp_path, warn=seen.append)
    assert same_arrays(run(["a b"]), fake_arrays(["a b"])) and parser.calls == [] and seen == []
    assert "foreign" not in run.signature()["cache"]


@pytest.mark.spacy_model
def test_cli_shard_copied_from_the_default_folder_into_fast_gives_the_uncached_answer(tmp_path):
    cache = tmp_path / "cache"
    ref = tmp_path / "ref.parquet"
    r = _ddp("profile", str(MINI), "-o", str(ref), "-q", "-j", "1", "--pipeline", "fast", "--no-cache")
    assert r.returncode == 0, r.stderr
    r = _ddp("profile", str(MINI), "-o", str(tmp_path / "d.parquet"), "-q", "-j", "1", "--cache", str(cache))
    assert r.returncode == 0, r.stderr
    first = tmp_path / "first.jsonl"
    first.write_text(MINI.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    r = _ddp("profile", str(first), "-o", str(tmp_path / "f0.parquet"), "-q", "-j", "1", "--pipeline", "fast",
             "--cache", str(cache))
    assert r.returncode == 0, r.stderr
    default, fast = C.pipeline_folder(None), C.pipeline_folder("fast")
    (shard,) = sorted((cache / default).glob("*.parquet"))
    shutil.copy2(shard, cache / fast / shard.name)
    out = tmp_path / "out.parquet"
    r = _ddp("profile", str(MINI), "-o", str(out), "-q", "-j", "1", "--pipeline", "fast", "--cache", str(cache))
    assert r.returncode == 0, r.stderr
    # the default pipeline's parses give another DDP on this file: served, the output was not the fast one's
    assert pl.read_parquet(out).equals(pl.read_parquet(ref))
    assert not pl.read_parquet(tmp_path / "d.parquet")["ddp"].equals(pl.read_parquet(ref)["ddp"])
    assert _sig(out)["cache"]["foreign"] == [shard.name]
    warn = [ln for ln in r.stderr.splitlines() if "parse cache shard" in ln]
    assert len(warn) == 1 and warn[0].startswith("ddp profile: warning: ") and default in warn[0]


# ------------------------------------------------------------------ 2. info.json of another folder


def test_info_json_copied_from_another_folder_is_said_recorded_and_rewritten(tmp_path):
    C.CachedParse(FakeParser(), tmp_path)(["a b"])
    other_run = C.CachedParse(OtherParser(), tmp_path)
    other_run(["c"])
    other_run.flush()
    mine, theirs = tmp_path / _folder(OTHER_INFO), tmp_path / _folder(FAKE_INFO)
    shutil.copy2(theirs / C.INFO_FILE, mine / C.INFO_FILE)  # intact (its checksum holds), another folder's
    seen: list[str] = []
    parser = OtherParser()
    run = C.CachedParse(parser, tmp_path, warn=seen.append)
    assert same_arrays(run(["c"]), OtherParser().parse(["c"]))
    assert parser.info()["components"] == OTHER_INFO["components"]  # its own details, not the copied ones
    assert len(seen) == 1 and str(mine / C.INFO_FILE) in seen[0] and theirs.name in seen[0]
    assert run.signature()["cache"]["foreign"] == [C.INFO_FILE]
    run.flush()
    info, status = C.read_checked_json(mine / C.INFO_FILE)
    assert status == "ok" and _folder(info) == mine.name and info["components"] == OTHER_INFO["components"]
    again: list[str] = []
    C.CachedParse(OtherParser(), tmp_path, warn=again.append)(["c"])
    assert again == []


def test_info_json_of_this_folder_with_another_fingerprint_stays_silent(tmp_path):
    """A pipeline whose loaded details differ from its package's meta.json (as the stand-in parsers of the
    cache tests): its fingerprint names no folder of the cache, nothing was copied, nothing is said."""
    C.CachedParse(FakeParser(), tmp_path)(["a b"])
    folder = tmp_path / _folder(FAKE_INFO)
    info, _ = C.read_checked_json(folder / C.INFO_FILE)
    C.write_checked_json(folder / C.INFO_FILE, {**info, "spacy": "0.other"})  # same folder, other fingerprint
    seen: list[str] = []
    run = C.CachedParse(FakeParser(), tmp_path, warn=seen.append)
    run(["a b"])
    assert seen == [] and "foreign" not in run.signature()["cache"]


# ------------------------------------------------------------------ 3. D302 names the reader's input


def _first_missing_mqm() -> tuple[str, int, str]:
    """(document, segment, system) of the first 'None' score of the toy test set's mqm file, read from the
    files by hand: a seg.score file holds each system's block of one line per source line, in order; the
    .docs file gives each line's document, and the segment is the line's 0-based position in it."""
    docs = [ln.split()[1] for ln in (TOY / "documents" / "en-de.docs").read_text().splitlines()]
    position = [docs[:i].count(d) for i, d in enumerate(docs)]
    lines = [ln.split() for ln in (TOY / "human-scores" / "en-de.mqm.seg.score").read_text().splitlines()]
    seen: dict[str, int] = {}
    for system, score in lines:
        j = seen.get(system, 0)
        seen[system] = j + 1
        if score == "None":
            return docs[j], position[j], system
    raise AssertionError("no None score in the toy test set")


def test_d302_of_a_reader_table_names_what_was_read_and_the_row(capsys):
    document, segment, system = _first_missing_mqm()
    assert main(["stats", "alpha", str(TOY), "--reader", "mtme"]) == 3
    err = [ln for ln in capsys.readouterr().err.splitlines() if "error:" in ln]
    assert len(err) == 1 and "<table>" not in err[0]
    assert err[0].startswith(f"ddp stats alpha: error: [D302] {TOY} (--reader mtme), row ")
    assert f"(the first: document {document!r}, segment {segment}, system {system!r}, condition 'mqm')" in err[0]


def test_d302_from_the_python_readers_table_names_it_too():
    from ddpcore.errors import DDPDataError
    from ddpcore.io.scores import read_score_input
    from ddpcore.stats import load_long_table

    table = read_score_input(str(TOY), "mtme")
    with pytest.raises(DDPDataError, match=r"\[D302\] ") as e:
        load_long_table(table)
    assert str(e.value).startswith(f"[D302] {TOY} (--reader mtme), row ") and "<table>" not in str(e.value)
    with pytest.raises(DDPDataError, match=r"\[D302\] <table>, row "):  # a frame of the caller's own: as before
        load_long_table(table.clone())


# ------------------------------------------------------------------ 4. D781 is bad data (exit 3)


def _profile_with_null_ddp(tmp_path: Path) -> tuple[Path, Path]:
    rows = [json.loads(ln) for ln in MINI.read_text(encoding="utf-8").splitlines()]
    prof = pl.DataFrame({"document_id": [r["document_id"] for r in rows], "segment_id": [r["segment_id"] for r in rows],
                         "domain": [r["domain"] for r in rows], "n_sentences": [1] * len(rows),
                         "first_sentence": list(range(len(rows))),
                         "ddp": pl.Series([None if i == 3 else i % 4 for i in range(len(rows))], dtype=pl.Int64)})
    p = tmp_path / "p.parquet"
    prof.write_parquet(p)
    return MINI, p


def test_d781_on_the_default_ddp_column_is_bad_data_exit_3(tmp_path, capsys):
    src, p = _profile_with_null_ddp(tmp_path)
    # no --ddp-col given: nothing about the command line is wrong, the file is (docs/errors.md: 3 = bad data)
    rc = main(["select", str(src), "--profile", str(p), "--min-ddp", "1", "-o", str(tmp_path / "x.jsonl")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 3 and len(err) == 1 and "[D781]" in err[0] and "row 4" in err[0]
    assert not (tmp_path / "x.jsonl").exists()


def test_d781_raises_the_data_error_class():
    from ddpcore.errors import DDPDataError
    from ddpcore.io.profiles import check_ddp_col, check_ddp_values, check_no_null_ddp

    for call in (lambda: check_ddp_values(pl.DataFrame({"ddp": [1.0, 2.5]}), "ddp", "p.parquet"),
                 lambda: check_no_null_ddp(pl.DataFrame({"ddp": [1, None]}), "ddp", "p.parquet"),
                 lambda: check_ddp_col(["ddp"], "ddp", "p.parquet", pl.String)):
        with pytest.raises(DDPDataError) as e:
            call()
        assert e.value.code == "D781"


# ------------------------------------------------------------------ 5. one prefix per command


def test_stats_errors_warnings_and_notes_share_the_subcommand_prefix(tmp_path, capsys):
    rows = ["document_id,segment_id,system,condition,score"]
    for d in range(4):
        for s in range(3):
            rows.append(f"d{d},{s},A,x,{d + s}")
            rows.append(f"d{d},{s},A,y,{'' if (d, s) == (1, 2) else d + s + 0.5}")
    t = tmp_path / "t.csv"
    t.write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert main(["stats", "tost", str(t), "--a", "x", "--b", "y", "--margin", "1"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"ddp stats tost: error: [D302] {t}, row 12"), err
    main(["stats", "tost", str(t), "--a", "x", "--b", "y", "--margin", "1", "--nan-policy", "omit", "--unpaired", "drop",
          "-f", "json"])
    warn = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert warn and all(ln.startswith("ddp stats tost: warning: ") for ln in warn), warn
    main(["stats", "alpha", str(TOY), "--reader", "mtme", "--nan-policy", "omit"])
    notes = [ln for ln in capsys.readouterr().err.splitlines() if "note:" in ln]
    assert notes and all(ln.startswith("ddp stats alpha: note: ") for ln in notes), notes
    assert main(["cache", "info", "--cache", str(t)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ddp cache info: error: [D180]"), err


# ------------------------------------------------------------------ 6. NaN groups, whatever the container

G = [1.0, 1.0, 1.0, None, None, None, 2.0, 2.0, 2.0, float("nan"), 1.0, float("nan")]


def _containers(df: pl.DataFrame) -> dict:
    return {"polars": df, "pandas": df.to_pandas(), "pyarrow": df.to_arrow()}


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def test_summarize_by_a_float_column_with_nan_is_one_group_in_every_container():
    import ddpcore

    ddp = list(range(len(G)))
    seg = pl.DataFrame({"document_id": [f"d{i}" for i in range(len(G))], "segment_id": [0] * len(G),
                        "ddp": ddp, "domain": G}, schema_overrides={"domain": pl.Float64})
    assert seg["domain"].null_count() == 3 and int(seg["domain"].is_nan().sum()) == 2
    # by hand: a missing group value (null or NaN) is one group, "(none)"; means with numpy
    want = {}
    for label, keep in (("(none)", [_missing(g) for g in G]), ("1.0", [g == 1.0 for g in G]),
                        ("2.0", [g == 2.0 for g in G]), ("all", [True] * len(G))):
        vals = np.array([d for d, k in zip(ddp, keep) if k], dtype=float)
        want[label] = (len(vals), float(np.mean(vals)))
    for kind, t in _containers(seg).items():
        got = ddpcore.summarize(t, by="domain")
        assert {r["group"]: (r["segments"], r["mean_ddp"]) for r in got.iter_rows(named=True)} == want, kind


def test_znormalize_by_a_float_column_with_nan_is_one_group_in_every_container():
    from scipy.stats import zscore

    from ddpcore.stats import znormalize

    score = np.random.default_rng(7).normal(size=len(G))
    df = pl.DataFrame({"g": G, "score": score}, schema_overrides={"g": pl.Float64})
    # scipy per group (ddof 0), the missing values (null and NaN) one group
    key = ["none" if _missing(g) else g for g in G]
    want = np.empty(len(G))
    for k in set(key):
        idx = [i for i, x in enumerate(key) if x == k]
        want[idx] = zscore(score[idx])
    for kind, t in _containers(df).items():
        got = znormalize(t, by="g")
        np.testing.assert_allclose(got["score"].to_numpy(), want, rtol=1e-12, err_msg=kind)
        assert got["g"].null_count() + int(got["g"].fill_null(0.0).is_nan().sum()) == 5, kind  # groups unchanged
