"""Hunt 9: small said-and-recorded gaps (helper 38). Each test fails without its fix:

1. ``--engine ray``: a corrupted or foreign parse-cache shard found by an actor was said on stderr but missing
   from the run's signature (``cache.corrupted``/``cache.foreign``), which the local engine records.
2. ``ddp select``/``ddp sample`` said ``ddp: note:`` (not ``ddp select: note:``) when they finished an earlier
   run's interrupted output commit.
3. ``ddp stats tau`` D310 (a system without scores under one condition) named no input file.
4. ``stage_input(..., workdir=None)`` of a non-Parquet input built its in-memory staged input with the rows in
   the ``index`` field and no ``frame``: ``n_rows`` and ``read_rows`` raised AttributeError.
5. The planned parse-unit count (progress totals: ``ddp profile --progress``, the API's progress bar) split
   texts at ``\\n`` only, while the parse also breaks a line at a lone carriage return: 220 % progress.
6. ``ddp stratify --reader ...`` named its scores ``<scores>`` in errors (D652, D711) and ``<table>`` in the
   signature; ``build_mix(frame, name=...)`` said ``<table>`` in D110, and D503 (null ids) named no file.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.io.segments import SegmentColumns
from ddpcore.schema import BLANK_CHARS

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
MINI = DATA / "wmt25_mini.jsonl"
TOY = DATA / "mtme" / "toy"
COLS = SegmentColumns("document_id", "segment_id", "source", "domain")


def _ddp(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ddpcore.cli.main", *args], capture_output=True, text=True,
                          timeout=600, cwd=cwd)


def _signature(path: Path) -> dict:
    return json.loads(pq.read_schema(path).metadata[b"ddpcore.signature"])


def _tiny(tmp_path: Path, n: int = 3) -> Path:
    src = tmp_path / "tiny.jsonl"
    src.write_text("".join(MINI.read_text("utf-8").splitlines(keepends=True)[:n]), encoding="utf-8")
    return src


# ---------------------------------------------------------------- 1. Ray: corrupted / foreign cache shards


@pytest.mark.spacy_model
@pytest.mark.slow
def test_ray_run_records_corrupted_and_foreign_cache_shards_in_its_signature(ray_local, tmp_path):
    """A cache holding a damaged shard and a shard copied by hand from another configuration's folder: the Ray
    run says both (as before) and now records them under ``cache`` as the local engine does (was: neither)."""
    from test_cache import FakeParser

    from ddpcore.engines import ray_engine as RE
    from ddpcore.engines.run import profile_to_files
    from ddpcore.io.outputs import check_outputs
    from ddpcore.pipeline import cache as C

    src = _tiny(tmp_path)
    cache = tmp_path / "cache"
    profile_to_files(src, {"segments": check_outputs([("-o", tmp_path / "fill.parquet")], [src])[0]}, cols=COLS,
                     parse_wrapper=C.cache_wrapper(cache))
    (folder,) = [p for p, _ in C.cache_folders(cache)]
    (good,) = C.shard_files(folder)
    data = bytearray(good.read_bytes())
    data[len(data) // 3:len(data) // 3 + 64] = b"\x00" * 64  # damaged: unreadable, or its checksum fails
    good.write_bytes(bytes(data))
    C.CachedParse(FakeParser(), cache)(["alpha beta"])  # another configuration's folder, with one shard
    (other,) = [p for p, _ in C.cache_folders(cache) if p != folder]
    (theirs,) = C.shard_files(other)
    foreign = folder / theirs.name
    foreign.write_bytes(theirs.read_bytes())  # copied by hand into this configuration's folder
    out = tmp_path / "ray.parquet"
    said: list[str] = []
    RE.profile_ray(src, {"segments": check_outputs([("-o", out)], [src])[0]}, cols=COLS, n_process=1,
                   source_name=str(src), parse_wrapper=C.cache_wrapper(cache), warn=said.append)
    entry = _signature(out)["cache"]
    # the names are those of the two files this test damaged and copied (what the local engine records)
    assert entry["corrupted"] == [good.name]  # was: no "corrupted" key
    assert entry["foreign"] == [foreign.name]  # was: no "foreign" key
    assert entry["dir"] == str(cache) and entry["hits"] == 0 and entry["misses"] > 0
    assert any("is corrupted" in w and good.name in w for w in said)
    assert any("another pipeline configuration" in w and foreign.name in w for w in said)


def test_ray_cache_entry_unions_what_every_batch_found():
    """The driver's side (no Ray): the markers of two actors' batches, one name found by both."""
    from ddpcore.engines import ray_engine as RE
    from ddpcore.engines.base import RunOptions

    done = {0: {"cache_hits": 1, "cache_misses": 2, "cache_dir": "/c", "cache_corrupted": ["b", "a"]},
            1: {"cache_hits": 3, "cache_misses": 0, "cache_dir": "/c", "cache_corrupted": ["a"],
                "cache_foreign": ["f"]},
            2: {"cache_hits": 0, "cache_misses": 1, "cache_dir": "/c"}}
    entry = RE._cache_entry(RunOptions(cols=COLS, parse_wrapper=lambda p: p), done)["cache"]
    # by hand: hits 1+3+0, misses 2+0+1, corrupted {"a","b"} sorted, foreign {"f"}
    assert entry == {"hits": 4, "misses": 3, "dir": "/c", "corrupted": ["a", "b"], "foreign": ["f"]}
    clean = RE._cache_entry(RunOptions(cols=COLS, parse_wrapper=lambda p: p), {2: done[2]})["cache"]
    assert "corrupted" not in clean and "foreign" not in clean


# ---------------------------------------------------------------- 2. select/sample: the note's prefix


@pytest.fixture(scope="module")
def tiny_profile(tmp_path_factory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("tiny")
    src = _tiny(d)
    prof = d / "prof.parquet"
    r = _ddp("profile", str(src), "-o", str(prof), "-q", "-j", "1", "--no-cache")
    assert r.returncode == 0, r.stderr
    return src, prof


def _pending_commit(dest: Path) -> Path:
    """The journal a run killed while putting ``dest`` in place leaves (as OutputSet.commit writes it)."""
    tmp = dest.parent / f".{dest.name}.pending.tmp"
    tmp.write_text("the interrupted run's output\n", encoding="utf-8")
    journal = dest.parent / f".{dest.name}.ddp-select.json"
    journal.write_text(json.dumps({"pid": 1, "entries": [{"tmp": str(tmp.resolve()), "dest": str(dest.resolve()),
                                                          "backup": None}]}), encoding="utf-8")
    return journal


@pytest.mark.spacy_model
@pytest.mark.parametrize("command,extra", [("select", ("--min-ddp", "0")), ("sample", ("--per-bin", "1"))])
def test_select_and_sample_name_themselves_in_the_recovery_note(tiny_profile, tmp_path, command, extra):
    src, prof = tiny_profile
    out = tmp_path / "out.jsonl"
    journal = _pending_commit(out)
    r = _ddp(command, str(src), "--profile", str(prof), "-o", str(out), *extra)
    assert r.returncode == 0, r.stderr
    (line,) = [ln for ln in r.stderr.splitlines() if "an earlier run was stopped" in ln]
    assert line.startswith(f"ddp {command}: note: an earlier run was stopped"), line  # was: "ddp: note:"
    assert not journal.exists()


# ---------------------------------------------------------------- 3. stats tau D310 names the input


def test_stats_tau_d310_names_the_input_and_the_fix(tmp_path):
    rows = [{"document_id": f"d{d}", "segment_id": s, "system": sy, "condition": c, "score": float(d + s + 2 * "ABC".index(sy))}
            for d in range(3) for s in range(2) for sy in "ABC" for c in "xy" if not (sy == "C" and c == "y")]
    path = tmp_path / "scores.csv"
    pl.DataFrame(rows).write_csv(path)
    r = _ddp("stats", "tau", str(path), "--a", "x", "--b", "y", "--n-boot", "20")
    assert r.returncode == 3, r.stderr
    (line,) = [ln for ln in r.stderr.splitlines() if ln]
    # was: "[D310] system(s) ['C'] have no scores under condition 'y'; ..." (no file)
    assert line.startswith(f"ddp stats tau: error: [D310] {path}: system(s) ['C'] have no scores under condition "
                           "'y'"), line
    assert "--exclude-system C" in line
    r = _ddp("stats", "tau", str(path), "--a", "x", "--b", "y", "--n-boot", "100", "--exclude-system", "C")
    assert r.returncode == 0, r.stderr


# ---------------------------------------------------------------- 4. stage_input without a work folder


def test_stage_input_in_memory_holds_its_rows(tmp_path):
    from ddpcore.engines.ray_plan import plan_batches
    from ddpcore.io.sources import stage_input

    src = tmp_path / "in.jsonl"
    src.write_text(MINI.read_text("utf-8"), encoding="utf-8")
    st = stage_input(src, COLS, None, chunk_rows=4)  # a non-Parquet input, no work folder: kept in memory
    want = pl.read_ndjson(MINI)  # the rows as polars reads the file (independent of ddpcore's readers)
    assert st.index is None and st.n_rows == want.height == 20  # was: AttributeError (ids frame in `index`)
    rows = np.array([0, 3, 7, 19])
    got = st.read_rows(rows)  # was: AttributeError ('NoneType' object has no attribute 'with_row_index')
    assert got["__row"].to_list() == rows.tolist()
    for col in ("document_id", "segment_id", "source", "domain"):
        assert got[col].to_list() == want[col].gather(rows).to_list()
    plan = plan_batches(st, 1500)
    assert plan.n_segments == 20


# ---------------------------------------------------------------- 5. unit counts as the parse counts them


def _slow_units(text: str | None) -> int:
    """Parse units by hand: lines broken at CR LF, LF or a lone CR, kept when not blank."""
    if text is None:
        return 0
    return sum(1 for line in re.split(r"\r\n|\n|\r", text) if line.strip(BLANK_CHARS))


TEXTS = ["a\rb", "a\r\nb", "a\r\rb\n\nc", "x", "\r", " \u200b\r y", "line one\rline two\rthree", None, "\r\n\r\n",
         "e\u0301\r\u200b", "John came home.\rHe was tired.\rHe slept."]


def test_unit_counts_break_lines_at_a_lone_carriage_return():
    from ddpcore.io.sources import unit_counts
    from ddpcore.pipeline.stages import view_units

    texts = pl.Series("t", TEXTS, dtype=pl.String)
    want = [_slow_units(t) for t in TEXTS]
    assert unit_counts(texts).tolist() == want  # was [1, 2, 2, 1, 0, 1, 1, 0, 0, 1, 1]
    # and what the parse receives
    assert np.bincount(view_units(texts).seg__unit, minlength=len(TEXTS)).tolist() == want


def _cr_input(tmp_path: Path) -> tuple[Path, int]:
    rows = [{"document_id": "d1", "segment_id": i, "source": "John came home.\rHe was tired.\rHe slept.", "domain": "x"}
            for i in range(3)] + [{"document_id": "d2", "segment_id": 0, "source": "Mary left.\nShe was late.",
                                   "domain": "x"}]
    src = tmp_path / "cr.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return src, sum(_slow_units(r["source"]) for r in rows)


@pytest.mark.spacy_model
def test_profile_progress_ends_at_the_number_of_segments(tmp_path):
    src, _ = _cr_input(tmp_path)
    r = _ddp("profile", str(src), "-o", str(tmp_path / "out.parquet"), "--progress", "plain", "-j", "1",
             "--no-cache")
    assert r.returncode == 0, r.stderr
    last = [ln for ln in r.stderr.splitlines() if ln.startswith("profile: ")][-1]
    assert last.startswith("profile: 4/4 segments (100.0 %)"), last  # was "8/4 segments (220.0 %)"


@pytest.mark.spacy_model
def test_api_progress_bar_total_is_the_units_parsed(tmp_path, monkeypatch):
    import tqdm.auto

    import ddpcore
    from ddpcore.api import ProfileOptions

    seen: dict[str, int] = {}

    class Bar:
        def __init__(self, total=None, **kwargs):
            seen["total"], seen["n"] = total, 0

        def update(self, n):
            seen["n"] += n

        def close(self):
            pass

    monkeypatch.setattr(tqdm.auto, "tqdm", Bar)
    src, n_units = _cr_input(tmp_path)
    with pytest.warns(UserWarning, match="carriage return"):
        ddpcore.profile(pl.read_ndjson(src), cache=False, options=ProfileOptions(progress=True))
    assert n_units == 11  # 3 x 3 lines + 2 lines (by hand)
    assert seen == {"total": n_units, "n": n_units}  # was total 5


# ---------------------------------------------------------------- 6. file names, not <table>/<scores>


def test_stratify_with_a_score_reader_names_the_scores(tmp_path):
    """A profile of the toy mt-metrics-eval tree, made by hand (no spaCy): the ids stratify joins on."""
    from ddpcore.cli.stratify import stratify_files
    from ddpcore.io.scores import read_score_input

    scores = read_score_input(TOY, "mtme", conditions=["mqm"], layout="wide")
    prof = scores.select("document_id", "segment_id").unique(maintain_order=True).with_columns(
        pl.lit("x").alias("domain"), pl.lit(1).alias("ddp"), pl.lit(1).alias("n_sentences"))
    ppath = tmp_path / "prof.parquet"
    prof.write_parquet(ppath)
    with pytest.raises(DDPUsageError) as e:
        stratify_files(ppath, scores, "mqm", document_col="bogus", n_boot=20)
    # was "[D652] <scores>: join column 'bogus' missing"
    assert str(e.value).startswith(f"[D652] {TOY} (--reader mtme): join column 'bogus' missing"), str(e.value)
    res = stratify_files(ppath, scores, "mqm", n_boot=20, allow_partial_join=True)
    assert res["signature"]["scores"] == f"{TOY} (--reader mtme)"  # was "<table>"


def test_mix_names_its_input_in_d110_and_d503(tmp_path):
    from ddpcore.curate.mix import build_mix

    rows = [{"document_id": f"d{d}", "segment_id": s, "system": None if (d, s, sy) == (1, 1, "C") else sy,
             "text": "t"} for d in range(2) for s in range(2) for sy in "ABC"]
    frame = pl.DataFrame(rows)
    with pytest.raises(DDPDataError, match=r"^\[D110\] my\.csv, column 'sys': required column is missing"):
        build_mix(frame, name="my.csv", system="sys")  # was "[D110] <table>, column 'sys'"
    path = tmp_path / "outputs.csv"
    frame.write_csv(path)
    r = _ddp("mix", str(path), "-o", str(tmp_path / "mix.csv"))
    assert r.returncode == 3, r.stderr
    (line,) = [ln for ln in r.stderr.splitlines() if ln]
    # row 12 (1-based data row): the 12th row built above, document d1 segment 1 system C
    assert f"[D503] {path}, column 'system' (--system-col): 1 null value(s), the first at row 12" in line, line
