"""Round-14 hunt: text outputs and signatures, leftovers of earlier hunts.

1. ``-f text`` wrote a name's control characters as ``repr`` does but a backslash as it is, so a system named
   ``a\\tb`` (backslash, t) and one named ``a<TAB>b`` printed alike: two systems looked like one. Now a backslash
   is doubled in a text table (docs/cli.md, Conventions); a name without a backslash or a control character is
   unchanged.
2. Warnings and notes on stderr naming data (a cache entry, a column, a file) were printed raw: a name holding a
   line break split the one-line message. Now they go through one helper (``one_line``: control characters
   as ``repr`` writes them) and JSON keeps the name verbatim.
3. ``select --top-share`` said "the 3-th highest": English ordinals now.
4. ``select --evaluate -o REPORT`` wrote no signature sidecar, unlike every other result file (``ddp stats *``,
   ``stratify``, ``meta``, ``blindness``), and its Markdown signature code span was ended by a backtick in a name.
5. ``TostResult`` had no ``warnings``: a Python caller of ``tost_paired``/``tost_ind`` was not told of the pairs
   ``nan_policy="omit"`` dropped or of a sample too small for a test, which ``ddp stats tost`` says.

Expected strings are written out by hand (a backslash in the data is ``\\\\`` in these Python literals); the ordinal
table is written by hand; counts come from numpy over the inputs built here, never from ddpcore.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

from ddpcore.cli.main import main

sys.path.insert(0, str(Path(__file__).parent))


# --------------------------------------------------------------------------- 1. backslashes in -f text


def test_text_cell_doubles_a_backslash_so_backslash_t_and_tab_differ() -> None:
    from ddpcore.io.tables import one_line, text_cell

    # by hand: the 4 characters a \ t b -> "a\\tb" (5 characters); a TAB b -> "a\tb" (4 characters)
    assert text_cell("a\\tb") == "a\\\\tb"
    assert text_cell("a\tb") == "a\\tb"
    assert text_cell("a\\tb") != text_cell("a\tb")
    assert text_cell("C:\\x\n") == "C:\\\\x\\n"
    # ordinary names unchanged (the same object's text)
    for name in ("plain", "宋体系统", "e\u0301te", "a/b", "x y", "", "🙂"):
        assert text_cell(name) == name
    # a whole stderr message keeps its own backslashes; only control characters are escaped
    assert one_line("use `tr '\\r' '\\n'`: a\nb") == "use `tr '\\r' '\\n'`: a\\nb"


def _long(path: Path, names: list[str]) -> None:
    """6 documents x 5 segments x every name; system k scores about 2k (well apart)."""
    rng = np.random.default_rng(1)
    rows = [dict(document_id=f"d{d}", segment_id=s, system=name, condition="A", score=float(2 * k + rng.normal(0, .3)))
            for d in range(6) for s in range(5) for k, name in enumerate(names)]
    pl.DataFrame(rows).write_parquet(path)


def test_stats_cluster_text_tells_a_backslash_t_from_a_tab(tmp_path, capsys) -> None:
    """Before: both rows read 'a\\tb'. Now 'a\\\\tb' (the backslash name) and 'a\\tb' (the tab name)."""
    _long(tmp_path / "long.parquet", ["a\\tb", "a\tb", "plain"])
    assert main(["stats", "cluster", str(tmp_path / "long.parquet"), "--in", "A", "--n-boot", "100",
                 "-f", "text"]) == 0
    out = capsys.readouterr().out
    rows = [ln.split()[2] for ln in out.splitlines() if re.match(r"\s+\d+\s+\d+-\d+\s", ln)]
    assert sorted(rows) == sorted(["a\\\\tb", "a\\tb", "plain"])  # three different names, as in the data
    assert "\t" not in out


def test_stats_compare_text_tells_a_backslash_t_from_a_tab(tmp_path, capsys) -> None:
    rng = np.random.default_rng(2)
    names = ["base", "a\\tb", "a\tb"]
    rows = [dict(document_id=f"d{d}", segment_id=s, system=n, score=float(k + rng.normal(0, .2)))
            for d in range(5) for s in range(4) for k, n in enumerate(names)]
    pl.DataFrame(rows).write_parquet(tmp_path / "t.parquet")
    assert main(["stats", "compare", str(tmp_path / "t.parquet"), "--baseline", "base", "--score-col", "score",
                 "--n-boot", "50", "--n-ar", "50", "-f", "text"]) == 0
    out = capsys.readouterr().out
    firsts = [ln.split()[0] for ln in out.splitlines() if ln.startswith("a")]
    assert sorted(firsts) == sorted(["a\\\\tb", "a\\tb"])


# --------------------------------------------------------------------------- 2. one line per warning


def test_cache_clear_warning_naming_a_file_with_a_line_break_is_one_line(tmp_path, capsys) -> None:
    from test_cache import FAKE_INFO, FakeParser, cache_folder

    from ddpcore.pipeline import cache as C

    C.CachedParse(FakeParser(), tmp_path)(["a b"])
    stray = tmp_path / cache_folder(FAKE_INFO) / "my\nnotes.txt"
    stray.write_text("x")
    assert main(["cache", "clear", "--cache", str(tmp_path), "-f", "json"]) == 0
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ddp cache clear: warning: kept 1 entry")
    assert lines[0].endswith(f"{cache_folder(FAKE_INFO)}/my\\nnotes.txt")
    assert json.loads(captured.out)["kept"] == [str(stray)]  # verbatim in JSON
    assert stray.exists()


def _evaluate_inputs(tmp_path: Path, doc_col: str = "document_id", systems=("A", "B", "C")) -> tuple[Path, Path]:
    rng = np.random.default_rng(0)
    prof = pl.DataFrame({doc_col: [f"d{i // 5}" for i in range(40)], "segment_id": [i % 5 for i in range(40)],
                         "ddp": rng.integers(0, 4, 40).astype(float)})
    prof.write_parquet(tmp_path / "prof.parquet")
    rows = [{doc_col: f"d{i // 5}", "segment_id": i % 5, "system": s, "mqm": float(rng.normal())}
            for i in range(45) for s in systems]  # 5 scored segments (d8) without a profile row
    pl.DataFrame(rows).write_parquet(tmp_path / "scores.parquet")
    return tmp_path / "scores.parquet", tmp_path / "prof.parquet"


def test_select_evaluate_warning_naming_a_column_with_a_line_break_is_one_line(tmp_path, capsys) -> None:
    col = "doc\nid"
    scores, prof = _evaluate_inputs(tmp_path, col)
    out = tmp_path / "r.json"
    assert main(["select", str(scores), "--profile", str(prof), "--evaluate", "--document-col", col,
                 "--human-col", "mqm", "--n-random", "5", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    join = [ln for ln in err.splitlines() if "join:" in ln]
    # by hand: 45 scored segments, 40 profile rows -> 5 without a profile row
    assert join == ["ddp select --evaluate: warning: join: 5 scored segment(s) have no profile row and 0 profile "
                    "row(s) no scores (40 segments joined on doc\\nid, segment_id)"]
    assert all(ln.startswith(("ddp select --evaluate: ", "  ")) for ln in err.splitlines())
    warnings = json.loads(out.read_text())["warnings"]
    assert warnings[0].endswith("joined on doc\nid, segment_id)")  # verbatim in the report


def test_library_stderr_warnings_are_one_line(capsys) -> None:
    from ddpcore.engines.base import warner
    from ddpcore.pipeline.cache import stderr_warn

    stderr_warn("ddp profile")("parse cache shard /tmp/x\ny is corrupted")
    warner(None)("file a\nb.txt: note")
    assert capsys.readouterr().err.splitlines() == [
        "ddp profile: warning: parse cache shard /tmp/x\\ny is corrupted",
        "ddp profile: warning: file a\\nb.txt: note"]


# --------------------------------------------------------------------------- 3. ordinals


def test_ordinal_against_a_table_written_by_hand() -> None:
    from ddpcore.curate.select import ordinal

    table = {1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 5: "5th", 9: "9th", 10: "10th", 11: "11th", 12: "12th",
             13: "13th", 14: "14th", 20: "20th", 21: "21st", 22: "22nd", 23: "23rd", 24: "24th", 100: "100th",
             101: "101st", 102: "102nd", 103: "103rd", 111: "111th", 112: "112th", 113: "113th", 121: "121st",
             1000: "1000th", 1001: "1001st", 1011: "1011th", 1012: "1012th", 1013: "1013th", 1022: "1022nd"}
    assert {n: ordinal(n) for n in table} == table


def _profile(rows: list[dict], path: Path) -> Path:
    df = pl.DataFrame(rows)
    t = df.to_arrow().replace_schema_metadata({b"ddpcore.signature": json.dumps(
        {"columns": {"document": "document_id", "segment": "segment_id", "text": "source", "domain": "domain"}}
    ).encode()})
    pq.write_table(t, path)
    return path


def test_top_share_note_says_3rd_not_3_th(tmp_path, capsys) -> None:
    """10 segments, DDP 9, 7, 5, 5, 5, 0 x 5; --top-share 0.3 asks ceil(3) = 3 units, the 3rd highest has DDP 5
    and 3 segments share it, so 5 are kept."""
    ddps = [9, 7, 5, 5, 5] + [0] * 5
    rows = [{"document_id": "a", "segment_id": i, "domain": "news", "source": f"Text {i}.", "ddp": d,
             "ddp_certified": 0, "first_sentence": i, "n_sentences": 1, "n_tokens": 3, "n_anchors": 1}
            for i, d in enumerate(ddps)]
    prof = _profile(rows, tmp_path / "p.parquet")
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({k: r[k] for k in ("document_id", "segment_id", "domain", "source")}) + "\n"
                           for r in rows))
    out = tmp_path / "o.jsonl"
    assert main(["select", str(src), "--profile", str(prof), "--top-share", "0.3", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "the 3rd highest has DDP 5, and 3 segments share that value, so 5 (50.0%) are kept" in err
    assert "-th" not in err


# --------------------------------------------------------------------------- 4. the --evaluate report's sidecar


@pytest.mark.parametrize("ext", [".md", ".txt", ".json"])
def test_select_evaluate_report_file_has_its_signature_sidecar(tmp_path, capsys, ext) -> None:
    from ddpcore.io.sidecars import read_sidecar

    scores, prof = _evaluate_inputs(tmp_path, systems=("A", "B`x", "C"))
    out = tmp_path / f"report{ext}"
    assert main(["select", str(scores), "--profile", str(prof), "--evaluate", "--human-col", "mqm",
                 "--n-random", "5", "-o", str(out)]) == 0
    assert f"wrote {out} and {out}.signature.json" in capsys.readouterr().err
    side = read_sidecar(out)
    assert side is not None and side.damaged is None and side.mismatch is None
    assert side.signature["command"] == "ddp select --evaluate" and side.signature["systems"] == ["A", "B`x", "C"]
    text = out.read_text()
    if ext == ".json":
        assert json.loads(text)["signature"] == side.signature
    else:  # the code span holds the whole signature: a fence longer than the backtick inside it
        last = text.rstrip("\n").splitlines()[-1]
        assert last.startswith("Signature: ``") and last.endswith("``")
        assert json.loads(last[len("Signature: ``"):-2].strip()) == side.signature


def test_select_evaluate_refuses_a_sidecar_that_is_an_input_before_any_work(tmp_path, capsys) -> None:
    scores, prof = _evaluate_inputs(tmp_path)
    out = tmp_path / "r.md"
    side = Path(str(out) + ".signature.json")
    side.symlink_to(scores)  # the report's sidecar would overwrite the scores
    before = scores.read_bytes()
    assert main(["select", str(scores), "--profile", str(prof), "--evaluate", "--human-col", "mqm",
                 "--n-random", "5", "-o", str(out)]) == 2
    assert "[D133]" in capsys.readouterr().err
    assert scores.read_bytes() == before and not out.exists()


# --------------------------------------------------------------------------- 5. TostResult.warnings


def test_tost_result_warnings_say_the_omitted_pairs_and_a_too_small_sample() -> None:
    from ddpcore.stats import tost_ind, tost_paired

    x = np.array([1.0, 2.0, np.nan, 4.0, 5.0])
    y = np.array([1.1, np.nan, 3.0, 4.2, 4.9])
    res = tost_paired(x, y, -1, 1, nan_policy="omit")
    n_nan = int((np.isnan(x) | np.isnan(y)).sum())  # numpy: 2 pairs hold a NaN
    assert res.n_omitted == n_nan == 2 and res.n == 3
    assert res.warnings == ("2 pair(s) with a NaN dropped (nan_policy='omit'); the test rests on the other 3",)
    assert res.to_dict()["warnings"] == list(res.warnings)

    ind = tost_ind(x, y, -1, 1, nan_policy="omit", equal_var=False)
    assert ind.n_omitted == int(np.isnan(x).sum() + np.isnan(y).sum()) == 2 and ind.n == 8
    assert ind.warnings == ("2 value(s) with a NaN dropped (nan_policy='omit'); the test rests on the other 8",)

    one = tost_paired([1.0], [1.5], -1, 1)  # one pair: no test (status too_few, p = 1)
    assert one.status == "too_few" and one.p_value == 1.0 and not one.equivalent
    assert len(one.warnings) == 1 and one.warnings[0].startswith("too few observations for a test (n = 1)")

    assert tost_paired([1.0, 2.0, 3.0], [1.1, 2.1, 2.9], -1, 1).warnings == ()


def test_stats_tost_json_warnings_unchanged_by_the_new_field(tmp_path, capsys) -> None:
    """The CLI's scalar JSON keeps no 'warnings' key when nothing was said; a dropped row is said once."""
    rng = np.random.default_rng(3)
    rows = [dict(document_id=f"d{d}", segment_id=s, condition=c, score=float(rng.normal()))
            for d in range(4) for s in range(5) for c in ("A", "B")]
    pl.DataFrame(rows).write_parquet(tmp_path / "t.parquet")
    assert main(["stats", "tost", str(tmp_path / "t.parquet"), "--a", "A", "--b", "B", "--margin", "1"]) in (0, 1)
    captured = capsys.readouterr()
    assert "warnings" not in json.loads(captured.out) and captured.err == ""
    rows[0]["score"] = None
    pl.DataFrame(rows).write_parquet(tmp_path / "t.parquet")
    assert main(["stats", "tost", str(tmp_path / "t.parquet"), "--a", "A", "--b", "B", "--margin", "1",
                 "--nan-policy", "omit", "--unpaired", "drop"]) in (0, 1)
    captured = capsys.readouterr()
    payload = json.loads(captured.out)
    # by hand: the null score's row is dropped, then its partner has none
    assert [w.split(" (")[0] for w in payload["warnings"]] == [
        "1 row(s) with a missing", "1 row(s) without a partner in the other condition dropped"]
    assert captured.err.count("warning:") == 2  # each said once
