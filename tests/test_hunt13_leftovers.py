"""Leftovers other hunts noticed (helper 50): each test fails without its fix.

1. ``stats.bootstrap.unit_keys(exclude_systems=...)``: a misspelt system was kept in silence; now D704, as
   ``bootstrap_tau`` (and a table without a system column is D301, not an exclusion that did nothing).
2. ``stratify(gap="A,B")`` was D655 "got A,,,B" and ``gap="AB"`` silently meant A and B; ``on="doc,seg"``
   was split into characters (D652 "join column d"). A str is now read as ``--gap``/``--on`` read it.
3. ``ddp sample``/``ddp select`` with ``-o -`` and a text summary: the note said a thin bin / ties were
   "recorded ... in the signature", but that mode writes no signature. The note now says so.
4. ``ddp select``/``ddp sample --text-col document_id`` (or ``--domain-col``): accepted without a word; now D972.
   D114 (profile/explain) names the two flags, in the wording of D972.
5. ``metric_human_consistency``: ids compared as text (``1`` and ``1.0`` two items; None/NaN ids merged into one
   item "None"/"nan"). Now numbers compare as numbers; a missing id or numbers mixed with text is D555.
6. ``metric_human_consistency(metric_range=("0", "100"))``: a bare TypeError; now D554.
7. ``--reader wmt24 --lp en-hi`` on data without en-hi: D309 "the table has no rows"; now D821 naming the pairs.
8. ``stats cluster --by-domain`` without the ``--domain-col`` column: D352's "available columns" left out a column
   named ``domain`` (and showed the canonical names, not the table's).
9. ``ddp validate -f text``: genres padded to 14 characters and not escaped; a long or odd genre broke the table.
10. Gate and warning lines on stderr printed names raw: a system named with a line break spread the line over two.
11. docs/metric-s.md did not list the ``--mapping paper`` aliases 次要, no issue(s), issue, failed, passed.

Expected values come from plain Python loops, the files read with the standard library, or hand arithmetic
written beside them -- never from the code under test.
"""
from __future__ import annotations

import json
import unicodedata
from collections import defaultdict
from fractions import Fraction
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from ddpcore.cli.main import main
from ddpcore.errors import DDPDataError, DDPUsageError

ROOT = Path(__file__).resolve().parents[1]
WMT24_MINI = ROOT / "tests" / "data" / "stats-real" / "wmt24-genmt-mini"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


# --------------------------------------------------------------------------- 1. unit_keys exclude_systems


def _ratings() -> pl.DataFrame:
    # system C is rated in document d3 only, so excluding it removes the unit d3
    rows = [("d1", "A", 1.0), ("d1", "B", 2.0), ("d2", "A", 3.0), ("d2", "B", 4.0), ("d3", "C", 5.0)]
    return pl.DataFrame({"document_id": [r[0] for r in rows], "system": [r[1] for r in rows],
                         "score": [r[2] for r in rows]})


def test_unit_keys_refuses_a_misspelt_excluded_system() -> None:
    from ddpcore.stats.bootstrap import unit_keys

    with pytest.raises(DDPDataError) as e:
        unit_keys(_ratings(), exclude_systems=["Cc"])  # before: the units of every system, in silence
    assert e.value.code == "D704" and "'Cc'" in str(e.value) and "systems: A, B, C" in str(e.value)
    with pytest.raises(DDPDataError) as e:  # nothing to exclude systems from
        unit_keys(_ratings().drop("system"), exclude_systems=["C"])
    assert e.value.code == "D301"


def test_unit_keys_excluding_a_real_system() -> None:
    from ddpcore.stats.bootstrap import unit_keys

    df = _ratings()
    # slow loop: the documents of the rows whose system is not C, in sorted order
    want = sorted({d for d, s in zip(df["document_id"], df["system"]) if s != "C"})
    assert unit_keys(df, exclude_systems="C")["document_id"].to_list() == want == ["d1", "d2"]


# --------------------------------------------------------------------------- 2. stratify gap= / on= as str


def _stratify_frames() -> tuple[pl.DataFrame, pl.DataFrame]:
    docs = ["d1", "d2", "d3", "d4"]
    ddp = [0, 1, 6, 2]  # per segment position, the same in every document
    prof = pl.DataFrame({"document_id": [d for d in docs for _ in ddp], "segment_id": [s for _ in docs for s in range(4)],
                         "ddp": [v for _ in docs for v in ddp]})
    rng = np.random.default_rng(3)
    a = rng.integers(0, 100, prof.height).astype(float)
    b = rng.integers(0, 100, prof.height).astype(float)
    scores = pl.DataFrame({"doc": prof["document_id"].to_list() * 2, "seg": prof["segment_id"].to_list() * 2,
                           "system": ["A"] * prof.height + ["B"] * prof.height, "score": np.r_[a, b]})
    return prof, scores


def _slow_gap_means(prof: pl.DataFrame, scores: pl.DataFrame, edges: list[float]) -> list[tuple[int, float]]:
    """(n, mean of A - B) per bin [e_i, e_i+1), by a loop over the rows."""
    ddp = {(d, s): v for d, s, v in prof.select("document_id", "segment_id", "ddp").iter_rows()}
    by: dict[tuple[str, int], dict[str, float]] = defaultdict(dict)
    for d, s, sy, sc in scores.iter_rows():
        by[(d, s)][sy] = sc
    out = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        diffs = [v["A"] - v["B"] for k, v in by.items() if lo <= ddp[k] < hi]
        out.append((len(diffs), sum(diffs) / len(diffs) if diffs else float("nan")))
    return out


def test_stratify_takes_gap_and_on_as_the_flags_take_them() -> None:
    from ddpcore.stats.stratify import stratify

    prof, scores = _stratify_frames()
    edges = [0.0, 1.0, 5.0, float("inf")]
    res = stratify(prof, scores, "score", by="system", gap="A,B", on="doc,seg", bins=edges, n_boot=0)
    assert res["signature"]["gap"] == {"col": "system", "a": "A", "b": "B"}
    assert res["signature"]["join"]["matched_score_rows"] == scores.height  # every row joined (32)
    (gap,) = res["gaps"]
    got = [(b["n"], b["mean"]) for b in gap["bins"]]
    want = _slow_gap_means(prof, scores, edges)
    assert [n for n, _ in got] == [n for n, _ in want] == [4, 8, 4]
    assert np.allclose([m for _, m in got], [m for _, m in want], rtol=0, atol=1e-12)
    # the P=S form as one str, too
    res2 = stratify(prof, scores, "score", by="system", on="document_id=doc,segment_id=seg", bins=edges, n_boot=0)
    assert [p["scores"] for p in res2["signature"]["join"]["on"]] == ["doc", "seg"]


def test_stratify_gap_of_two_characters_is_not_two_values() -> None:
    from ddpcore.stats.stratify import stratify

    prof, scores = _stratify_frames()
    with pytest.raises(DDPUsageError) as e:  # before: read as ("A", "B"), exit 0
        stratify(prof, scores.rename({"doc": "document_id", "seg": "segment_id"}), "score", by=["system"],
                 gap="AB", n_boot=0)
    assert e.value.code == "D655" and "got AB" in str(e.value)


def test_stratify_files_takes_str_gap_and_on(tmp_path: Path) -> None:
    from ddpcore.cli.stratify import stratify_files

    prof, scores = _stratify_frames()
    prof.write_parquet(tmp_path / "p.parquet")
    res = stratify_files(tmp_path / "p.parquet", scores, "score", by=["system"], gap="A,B", on="doc,seg", n_boot=0)
    assert res["signature"]["gap"]["a"] == "A" and res["signature"]["gap"]["b"] == "B"


# --------------------------------------------------------------------------- 3. and 4. sample / select


def _curation_files(tmp_path: Path) -> tuple[Path, Path]:
    src = tmp_path / "in.jsonl"
    rows = [("d1", 0, "Alice met Bob."), ("d1", 1, "It rained."), ("d1", 2, "She left."), ("d2", 0, "A cat sat."),
            ("d2", 1, "It slept.")]
    src.write_text("".join(json.dumps({"document_id": d, "segment_id": s, "source": t, "domain": "news"}) + "\n"
                           for d, s, t in rows), encoding="utf-8")
    prof = tmp_path / "p.parquet"  # a hand-made profile: DDP 0,0,2 / 0,1
    pl.DataFrame({"document_id": [r[0] for r in rows], "segment_id": [r[1] for r in rows], "ddp": [0, 0, 2, 0, 1],
                  "first_sentence": [0, 1, 2, 0, 1], "n_sentences": [1] * 5}).write_parquet(prof)
    return src, prof


def test_sample_to_stdout_text_says_nothing_is_recorded(tmp_path: Path, capsys) -> None:
    src, prof = _curation_files(tmp_path)
    code, out, err = _run(capsys, "sample", str(src), "--profile", str(prof), "--per-bin", "5", "-o", "-", "-f", "text")
    assert code == 0 and len(out.splitlines()) == 5  # both documents (max DDP 2 and 1, bin [1, 5)), all 5 rows
    note = next(ln for ln in err.splitlines() if ln.startswith("ddp sample: note:"))
    assert "recorded as" not in note  # before: 'recorded as "filled": false in the signature'
    assert '"filled": false is not recorded: -o - writes no signature' in note
    # with a file the note is true: the sidecar holds "filled": false for the thin bins
    code, _, err = _run(capsys, "sample", str(src), "--profile", str(prof), "--per-bin", "5", "-o",
                        str(tmp_path / "s.jsonl"))
    assert code == 0 and 'recorded as "filled": false in the signature' in err
    sidecar = json.loads((tmp_path / "s.jsonl.signature.json").read_text(encoding="utf-8"))
    text = json.dumps(sidecar)
    assert '"filled": false' in text


def test_select_to_stdout_text_says_top_share_is_not_recorded(tmp_path: Path, capsys) -> None:
    src, prof = _curation_files(tmp_path)
    # ceil(0.5 * 5) = 3 segments asked; the 3rd highest DDP is 0, shared by 3 segments: all 5 kept (hand count)
    code, out, err = _run(capsys, "select", str(src), "--profile", str(prof), "--top-share", "0.5", "--unit",
                          "segment", "-o", "-")
    assert code == 0 and len(out.splitlines()) == 5
    note = next(ln for ln in err.splitlines() if ln.startswith("ddp select: note:"))
    assert "recorded as top_share" not in note and "top_share is not recorded: -o - writes no signature" in note
    code, _, err = _run(capsys, "select", str(src), "--profile", str(prof), "--top-share", "0.5", "--unit",
                        "segment", "-o", "-", "-f", "json")
    assert code == 0 and "recorded as top_share in the signature" in err  # -f json prints the signature


@pytest.mark.parametrize("command,extra", [("select", ["--min-ddp", "1"]), ("sample", ["--per-bin", "1"])])
@pytest.mark.parametrize("flag", ["--text-col", "--domain-col"])
def test_select_and_sample_refuse_a_role_column_named_twice(tmp_path: Path, capsys, command, extra, flag) -> None:
    src, prof = _curation_files(tmp_path)
    code, _, err = _run(capsys, command, str(src), "--profile", str(prof), flag, "document_id", *extra, "-o",
                        str(tmp_path / "o.jsonl"))
    assert code == 2, err  # before: exit 0, the document ids read as the text / the domain
    assert f"[D972] --document-col and {flag} both name the column 'document_id'" in err
    assert not (tmp_path / "o.jsonl").exists()


def test_d114_names_the_two_flags() -> None:
    from ddpcore.io.segments import read_segments
    from ddpcore.schema import SegmentColumns

    df = pl.DataFrame({"document_id": ["d"], "segment_id": [0], "source": ["x"], "domain": ["n"]})
    with pytest.raises(DDPUsageError) as e:
        read_segments(df, SegmentColumns(domain="segment_id"))
    assert e.value.code == "D114"
    assert "--segment-col and --domain-col both name the column 'segment_id'" in str(e.value)


# --------------------------------------------------------------------------- 5. and 6. consistency


def _slow_consistency(item, system, metric, human, t=Fraction(5, 100)):
    """Segment-level consistency by a loop: items grouped by Python equality (1 == 1.0), scores on 0-100."""
    groups: dict = defaultdict(list)
    for i, s, m, h in zip(item, system, metric, human):
        groups[i].append((Fraction(m) / 100, Fraction(h) / 100))
    ok = n = 0
    for rows in groups.values():
        for a in range(len(rows)):
            for b in range(a + 1, len(rows)):
                dm, dh = rows[a][0] - rows[b][0], rows[a][1] - rows[b][1]
                tie_m, tie_h = abs(dm) < t, abs(dh) < t
                ok += (tie_m and tie_h) or (not tie_m and not tie_h and (dm > 0) == (dh > 0))
                n += 1
    return n, Fraction(ok, n)


def test_consistency_numeric_ids_equal_as_numbers_are_one_item() -> None:
    from ddpcore.stats.metric_s import metric_human_consistency

    item = [1, 1.0, np.int64(2), 2.0, 3, 3]
    system = ["A", "B", "A", "B", "A", "B"]
    metric = [80, 60, 50, 70, 40, 90]
    human = [80, 60, 70, 50, 40, 90]
    n, share = _slow_consistency(item, system, metric, human)
    assert (n, share) == (3, Fraction(2, 3))
    r = metric_human_consistency(item, system, metric, human)  # before: 1 pair ("1" and "1.0" two items), share 1.0
    assert r.n_segment_pairs == n and r.segment_consistency == pytest.approx(float(share), abs=1e-12)
    assert r.warnings == ()  # before: "systems are scored on different items"
    # the same for system ids: 1 and 1.0 are one system (one system pair, not three)
    r = metric_human_consistency(["x", "x", "y", "y"], [1, 2, 1.0, 2.0], [80, 60, 50, 70], [80, 60, 50, 70])
    assert r.n_system_pairs == 1


@pytest.mark.parametrize("bad", [None, float("nan")])
def test_consistency_missing_id_is_d555(bad) -> None:
    from ddpcore.stats.metric_s import metric_human_consistency

    with pytest.raises(DDPDataError) as e:  # before: the missing ids merged into one item "None"/"nan"
        metric_human_consistency(["d1", "d1", bad, bad], ["A", "B", "A", "B"], [1, 2, 3, 4], [1, 2, 3, 4])
    assert e.value.code == "D555" and "item id at position 2 is missing" in str(e.value)
    with pytest.raises(DDPDataError) as e:
        metric_human_consistency(["d1", "d1"], ["A", bad], [1, 2], [1, 2])
    assert e.value.code == "D555" and "system id at position 1" in str(e.value)


def test_consistency_numbers_mixed_with_text_is_d555() -> None:
    from ddpcore.stats.metric_s import metric_human_consistency

    with pytest.raises(DDPDataError) as e:  # before: 1 and "1" silently one item
        metric_human_consistency([1, "1"], ["A", "B"], [1, 2], [1, 2])
    assert e.value.code == "D555" and "mix numbers (position 0: 1)" in str(e.value)


@pytest.mark.parametrize("rng", [("0", "100"), (0,), "0-100", (0, True), (5, 5)])
def test_consistency_bad_range_is_d554(rng) -> None:
    from ddpcore.stats.metric_s import metric_human_consistency

    with pytest.raises(DDPUsageError) as e:  # before: TypeError / ValueError (D999 from a script's view)
        metric_human_consistency(["d", "d"], ["A", "B"], [1, 2], [1, 2], human_range=rng)
    assert e.value.code == "D554" and "human_range" in str(e.value)
    with pytest.raises(DDPUsageError) as e:
        metric_human_consistency(["d", "d"], ["A", "B"], [1, 2], [1, 2], tie_threshold="x")
    assert e.value.code == "D554"


# --------------------------------------------------------------------------- 7. wmt24 --lp


def _mini_pairs() -> set[str]:
    """The (source, target) 3-letter codes of the mini fixture's wave-2 rows, read with the standard library
    (fields 5 and 6 of the header-less Appraise export; the fixture's SOURCE.md: en-cs rows only)."""
    import csv
    import gzip
    import io

    text = gzip.decompress((WMT24_MINI / "esa_generalMT2024_wave2.csv.gz").read_bytes()).decode("utf-8")
    pairs = {(row[4], row[5]) for row in csv.reader(io.StringIO(text)) if len(row) > 5}
    return pairs


def test_wmt24_absent_language_pair_names_those_present(capsys) -> None:
    assert ("eng", "ces") in _mini_pairs() and not any(t == "hin" for _, t in _mini_pairs())
    for lp in ("en-hi", "en-cs,en-hi"):  # before: D309 "no rows", and en-hi dropped in silence with en-cs
        code, _, err = _run(capsys, "stats", "alpha", str(WMT24_MINI), "--reader", "wmt24", "--waves", "2", "--lp", lp)
        assert code == 3, err
        assert "[D821]" in err and "no language pair en-hi in wave(s) 2 (has en-cs)" in err


# --------------------------------------------------------------------------- 8. cluster --by-domain D352


def test_cluster_missing_domain_column_lists_the_tables_columns() -> None:
    from ddpcore.stats import TableColumns
    from ddpcore.stats.clustering import cluster_systems

    rng = np.random.default_rng(0)
    rows = [{"document_id": f"d{d}", "segment_id": s, "sys": y, "score": float(rng.integers(0, 100)),
             "domain": "news", "genre2": "g"} for d in range(4) for s in range(3) for y in "ABC"]
    df = pl.DataFrame(rows)
    with pytest.raises(DDPDataError) as e:
        cluster_systems(df, "wmt24", by_domain=True, columns=TableColumns(system="sys", domain="genre"))
    assert e.value.code == "D352"
    listed = str(e.value).split("available columns: ")[1].split(", ")
    assert sorted(listed) == sorted(df.columns)  # before: no 'domain', and 'system' for the table's 'sys'


# --------------------------------------------------------------------------- 9. validate -f text genres


def _width(text: str) -> int:
    """Terminal columns, by a loop: wide/full-width 2, combining 0, else 1."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def test_validate_text_keeps_long_and_odd_genres_aligned() -> None:
    from ddpcore.gold.validate import ColumnReport, _column_tables, compute_column_metrics

    x, y = np.array([0.0, 1, 2, 3, 4, 5]), np.array([0.0, 1, 1, 3, 5, 5])
    genres = ["a very long genre name\tx", "新闻报道新闻报道"]
    per = {genres[0]: compute_column_metrics(x[:3], y[:3]), genres[1]: compute_column_metrics(x[3:], y[3:])}
    lines = _column_tables("ddp", ColumnReport(overall=compute_column_metrics(x, y), by_genre=per), (5,))
    assert not any("\t" in ln or "\n" in ln for ln in lines)
    head = lines[1]
    end_n = _width(head[: head.index(" n ") + 2])  # the 'n' column is right-aligned: ends under the header's n
    rows = [ln for ln in lines[3:6]]
    assert rows[0].startswith("a very long genre name\\tx ")  # escaped as -f text writes names
    for ln, n in zip(rows, (3, 3, 6)):
        cut = next(k for k in range(len(ln) + 1) if _width(ln[:k]) == end_n)
        assert ln[:cut].endswith(f" {n}"), (ln, head)  # before: the long genre's row was shifted
    # names that fit keep the layout of before: 14 columns
    per = {"news": compute_column_metrics(x[:3], y[:3]), "fiction": compute_column_metrics(x[3:], y[3:])}
    lines = _column_tables("ddp", ColumnReport(overall=compute_column_metrics(x, y), by_genre=per), (5,))
    assert lines[3].startswith("news" + " " * 10 + "      3")


# --------------------------------------------------------------------------- 10. one stderr line per gate/warning


def test_gate_line_with_a_line_break_in_a_system_name_stays_one_line(tmp_path: Path, capsys) -> None:
    rng = np.random.default_rng(1)
    rows = []
    for d in range(6):
        for s in range(4):
            b = float(rng.normal(50, 5))
            rows.append({"document_id": f"d{d}", "segment_id": s, "system": "base", "score": b})
            rows.append({"document_id": f"d{d}", "segment_id": s, "system": "bad\nsys", "score": b - 10.0})
    pl.DataFrame(rows).write_csv(tmp_path / "c.csv")
    code, out, err = _run(capsys, "stats", "compare", str(tmp_path / "c.csv"), "--baseline", "base", "--fail-on",
                          "worse", "--n-boot", "200", "--n-ar", "200", "-f", "json")
    assert code == 1
    gate = [ln for ln in err.splitlines() if "--fail-on worse" in ln]
    assert len(gate) == 1 and "bad\\nsys (score -10" in gate[0]  # before: 'bad' / 'sys (score ...' on two lines
    assert not any(ln.startswith("sys ") for ln in err.splitlines())
    assert any(r["system"] == "bad\nsys" for r in json.loads(out)["results"]["score"]["systems"])  # JSON: verbatim


# --------------------------------------------------------------------------- 11. docs: paper aliases


def test_metric_s_doc_lists_the_paper_aliases() -> None:
    from ddpcore.stats.metric_s import metric_s

    doc = (ROOT / "docs" / "metric-s.md").read_text(encoding="utf-8")
    table = "\n".join(ln for ln in doc.splitlines() if ln.startswith("| "))
    for alias in ("次要", "no issue", "no issues", "issue", "failed", "passed"):
        assert alias in table, alias
    # and they are what the doc says: 次要 is minor (-2 in accuracy), "passed" a correct checkpoint, "failed" -5,
    # "no issues" no deduction, "issue" a fluency issue (-2). Hand: accuracy 60 - 2 - 5 = 53, fluency 20 - 2 = 18.
    (row,) = metric_s([{"id": "r", "accuracy_items": [{"severity": "次要"}, {"severity": "no issues"}],
                        "checkpoint_items": [{"result": "passed"}, {"result": "failed"}],
                        "fluency_items": [{"severity": "issue"}], "appropriateness_items": []}], mapping="paper")
    assert (row.accuracy, row.fluency, row.appropriateness, row.n_unknown_labels) == (53.0, 18.0, 20.0, 0)
