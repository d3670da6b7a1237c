"""Bug hunt 13: ``ddp validate`` figures against independent references (the metric layer and the
report, no spaCy: the DDP values are given).

How the expected values are produced (never by the code under test):

* counts of under / exact / over, tail precision / recall and coverage: a plain per-segment loop over
  Python ints written here from the definitions (docs/validation.md "Metrics");
* the 95 % intervals: statsmodels ``proportion_confint(count, n, method="beta")`` (exact
  Clopper-Pearson), with the bound 0 at count = 0 and 1 at count = n; ``None`` when n = 0;
* Pearson r / Spearman rho: ``scipy.stats.pearsonr`` / ``spearmanr``, ``None`` when a side is constant
  or fewer than 2 segments;
* the mean signed error: ``statistics.fmean``.

Defects fixed (each test below fails without its fix):

* a NaN / infinite DDP or gold value (a null of a table) fell in none of under / exact / over, made the
  mean NaN (``NaN`` in the JSON) and r "not a number", exit 0: now D690;
* ``compare_with_gold`` with a gold table holding a null gold distance counted it nowhere (as above), a
  null genre crashed (TypeError) or, all null, gave a genre row of 0 segments beside an overall of all of
  them; a segment given twice in the DDP table was counted twice: now D691 / D692 naming the row;
* ``--tail`` with a k beyond the float range (310 digits) was D999 (OverflowError), one with more digits
  than Python's int() takes (4,300) an uncoded "invalid _tails value"; a k above 2**53 compared rounded;
* ``tails=5`` / ``tails="5,15"`` in Python: a TypeError / a D443 naming '5' as not a number.
"""
from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from test_hunt5_validate import assert_figures, expected_column  # the loop of the validate figures (one copy)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ddpcore.gold.validate as V
from ddpcore.cli.main import main
from ddpcore.cli.validate import _tails
from ddpcore.errors import DDPDataError, DDPUsageError

# --------------------------------------------------------------------------- the tables under test


def tables(keys: list[tuple[str, int]], genres: list[str], gold: list[int], ddp: list[int],
           cert: list[int] | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A gold table (as compute_gold_distances gives it) and a DDP segment table for the same sentences."""
    g = pl.DataFrame({"document_id": [k[0] for k in keys], "sentence": [k[1] for k in keys], "genre": genres,
                      "gold_distance": gold, "gold_chain_id": [None if v == 0 else "c" for v in gold],
                      "gold_reference_sentence": [-1 if v == 0 else s - v for (_, s), v in zip(keys, gold)]},
                     schema={"document_id": pl.String, "sentence": pl.Int64, "genre": pl.String,
                             "gold_distance": pl.Int64, "gold_chain_id": pl.String, "gold_reference_sentence": pl.Int64})
    seg: dict[str, Any] = {"document_id": [k[0] for k in keys], "segment_id": [k[1] for k in keys], "ddp": ddp}
    if cert is not None:
        seg["ddp_certified"] = cert
    return g, pl.DataFrame(seg, schema_overrides={"ddp": pl.Int64, "segment_id": pl.Int64})


# --------------------------------------------------------------------------- NaN / infinity: D690


@pytest.mark.parametrize("ddp, gold, where", [
    ([1.0, float("nan"), 2.0], [1, 2, 2], "ddp[1] is nan"),
    ([1, 2, 3], [1, float("nan"), 2], "gold[1] is nan"),
    ([1, 2, float("inf")], [1, 2, 2], "ddp[2] is inf"),
    ([0, 1], [float("-inf"), 1], "gold[0] is -inf"),
])
def test_a_value_that_is_not_a_number_is_d690(ddp: list[float], gold: list[float], where: str) -> None:
    # before: exit 0 with under + exact + over = 2 of 3 segments (the NaN row in none of them), a NaN mean and
    # r / rho null for "not a number"
    with pytest.raises(DDPDataError, match=r"\[D690\] " + where.replace("[", r"\[").replace("]", r"\]")):
        V.compute_column_metrics(ddp, gold, column="ddp_certified")
    with pytest.raises(DDPDataError, match=r"\[D690\]"):
        V.compute_gold_metrics(ddp, gold)


# --------------------------------------------------------------------------- compare_with_gold input tables: D691 / D692


KEYS = [("a", 0), ("a", 1), ("a", 2), ("b", 0)]


def test_null_gold_distance_is_d691_not_counted_nowhere() -> None:
    g, seg = tables(KEYS, ["news"] * 4, [0, 1, 2, 0], [0, 1, 3, 3])
    g = g.with_columns(pl.Series("gold_distance", [0, 1, None, 0], dtype=pl.Int64))
    # before: n_segments 4 with under 0 + exact 2 + over 1 (the null row nowhere), mean_signed_error NaN, exit 0
    with pytest.raises(DDPDataError) as err:
        V.compare_with_gold(g, seg)
    assert err.value.code == "D691"
    assert "column 'gold_distance', row 2 (document 'a', sentence 2): None" in str(err.value)
    g = g.with_columns(pl.Series("gold_distance", [0, -1, 2, 0], dtype=pl.Int64))
    with pytest.raises(DDPDataError, match=r"\[D691\] gold table, column 'gold_distance', row 1 .*: -1 is not"):
        V.compare_with_gold(g, seg)
    with pytest.raises(DDPDataError, match=r"\[D691\] gold table lacks column\(s\) genre"):
        V.compare_with_gold(g.drop("genre"), seg)


@pytest.mark.parametrize("genres, row", [(["news", None, "news", "x"], 1), ([None] * 4, 0)])
def test_null_genre_is_d691(genres: list[str | None], row: int) -> None:
    # before: a null genre beside named ones was a TypeError (sorting None with str: D999 in a CLI); all null gave
    # by_genre {None: 0 segments} beside an overall of 4 (the genre rows did not add up to the overall)
    g, seg = tables(KEYS, ["news"] * 4, [0, 1, 2, 0], [0, 1, 3, 3])
    g = g.with_columns(pl.Series("genre", genres, dtype=pl.String))
    with pytest.raises(DDPDataError) as err:
        V.compare_with_gold(g, seg)
    assert err.value.code == "D691" and f"column 'genre', row {row} " in str(err.value)


def test_a_repeated_segment_is_d692_not_counted_twice() -> None:
    g, seg = tables(KEYS, ["news"] * 4, [0, 1, 2, 0], [0, 1, 3, 3])
    # before: the join doubled every gold sentence: n_segments 8 for 4 gold sentences, exit 0
    with pytest.raises(DDPDataError) as err:
        V.compare_with_gold(g, pl.concat([seg, seg.head(1)]))
    assert err.value.code == "D692"
    assert "DDP segment table, row 0: document 'a', segment_id 0 appears 2 times (rows 0, 4)" in str(err.value)
    with pytest.raises(DDPDataError, match=r"\[D692\] gold table, row 1: document 'a', sentence 1 appears 2 times"):
        V.compare_with_gold(pl.concat([g, g[1]]), seg)
    # the tables as they come are fine, and count each sentence once
    assert V.compare_with_gold(g, seg).columns["ddp"].overall.n_segments == 4


# --------------------------------------------------------------------------- tail thresholds


def test_a_threshold_beyond_any_float_compares_exactly() -> None:
    big = 2 ** 53  # exactly a float64; 2**53 + 1 is not (it rounds to 2**53)
    ddp = [0, big, 3, big]
    gold = [big, big, 0, 2]
    tails = (2, big, big + 1, 10 ** 400)
    m = V.compute_column_metrics(ddp, gold, column="ddp_certified", tails=tails)
    got = {"n_segments": m.n_segments, "pearson": m.pearson, "spearman": m.spearman, "under": m.under.to_dict(),
           "exact": m.exact.to_dict(), "over": m.over.to_dict(), "mean_signed_error": m.mean_signed_error,
           "tails": [t.to_dict() for t in m.tails], "coverage": m.coverage.to_dict()}
    want = expected_column(ddp, gold, tails, True)
    # by the loop over Python ints: at k = 2**53 + 1 and 10**400 no segment on either side (n = 0, undefined);
    # before: 2**53 + 1 was compared as 2**53 (precision 1 of 2, recall 1 of 2) and 10**400 an OverflowError
    assert want["tails"][2]["precision"]["n"] == 0 and want["tails"][1]["precision"]["n"] == 2
    assert_figures(got, want)
    reasons = {(u["figure"], u["reason"]) for u in V.undefined_figures(ddp, gold, m)}
    assert (f"precision@{10 ** 400}", f"no segment has ddp_certified >= {10 ** 400}") in reasons


@pytest.mark.parametrize("tails, shown", [(5, "tails=5"), ("5,15", "tails='5,15'"), (b"5", "tails=b'5'")])
def test_tails_that_are_not_a_sequence_are_d443(tails: Any, shown: str) -> None:
    # before: tails=5 was a TypeError ('int' object is not iterable); "5,15" said "tail threshold '5' is not a
    # whole number", which it looks like
    with pytest.raises(DDPUsageError, match=r"\[D443\] " + shown + " is not a sequence of tail thresholds"):
        V.check_tails(tails)
    assert V.check_tails(np.array([15, 5, 5])) == (5, 15)  # an array is a sequence


def test_tail_option_with_more_digits_than_int_takes_is_d443(capsys: pytest.CaptureFixture[str]) -> None:
    text = "1" + "0" * 5000
    with pytest.raises(Exception) as err:  # argparse.ArgumentTypeError; before: a ValueError (no code)
        _tails(text)
    assert type(err.value).__name__ == "ArgumentTypeError" and str(err.value).startswith("[D443] --tail ")
    with pytest.raises(SystemExit) as stop:
        main(["validate", "nowhere.conllu", "--tail", text])
    err_text = capsys.readouterr().err
    assert stop.value.code == 2 and "[D443]" in err_text and "invalid _tails value" not in err_text
    assert _tails("1" + "0" * 400) == (10 ** 400,)


# --------------------------------------------------------------------------- the CLI, with a stand-in for the spaCy run

GOLD_DOC = (
    "# newdoc id = d\n# global.Entity = eid-etype-head-other\n# meta::genre = news\n"
    "# text = Anna slept .\n1\tAnna\tanna\tPROPN\tNNP\t_\t0\troot\t_\tEntity=(e1-person-1)\n"
    "2\tslept\tsleep\tVERB\tVBD\t_\t0\troot\t_\t_\n3\t.\t.\tPUNCT\t.\t_\t0\troot\t_\t_\n\n"
    "# text = Rain fell .\n1\tRain\train\tNOUN\tNN\t_\t0\troot\t_\t_\n"
    "2\tfell\tfall\tVERB\tVBD\t_\t0\troot\t_\t_\n3\t.\t.\tPUNCT\t.\t_\t0\troot\t_\t_\n\n"
    "# text = She woke .\n1\tShe\tshe\tPRON\tPRP\t_\t0\troot\t_\tEntity=(e1-person-1)\n"
    "2\twoke\twake\tVERB\tVBD\t_\t0\troot\t_\t_\n3\t.\t.\tPUNCT\t.\t_\t0\troot\t_\t_\n\n"
)
# gold distance (chained, by hand): Anna s0 -> 0; s1 no mention -> 0; She s2 -> back to Anna s0: 2
GOLD_OF_DOC = [0, 0, 2]


def stand_in(monkeypatch: pytest.MonkeyPatch, ddp: list[int], cert: list[int]) -> None:
    def profile_gold(corpus: Any, **kw: Any) -> tuple[Any, dict[str, float]]:
        s = corpus.sentences
        seg = pl.DataFrame({"document_id": s["document_id"].to_list(), "segment_id": s["sentence"].to_list(),
                            "ddp": ddp, "ddp_certified": cert})
        return types.SimpleNamespace(segments=seg, anchors=None, signature={"stand_in": True}), {
            "words": 9.0, "seconds": 1.0, "words_per_second": 9.0}

    monkeypatch.setattr(V, "profile_gold", profile_gold)


def test_cli_tail_beyond_the_float_range(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    gold_file = tmp_path / "g.conllu"
    gold_file.write_text(GOLD_DOC, encoding="utf-8")
    ddp, cert = [0, 1, 2], [0, 0, 2]
    stand_in(monkeypatch, ddp, cert)
    huge = 10 ** 309  # float(10**309) overflows: before, exit 4 with D999 (OverflowError)
    code = main(["validate", str(gold_file), "--tail", f"2,{huge}"])
    out, err = capsys.readouterr()
    assert code == 0, err
    d = json.loads(out)
    assert d["tails"] == [2, huge] and d["signature"]["gold"]["tails"] == [2, huge]  # recorded as computed
    for col, values in (("ddp", ddp), ("ddp_certified", cert)):
        want = expected_column(values, GOLD_OF_DOC, (2, huge), col == "ddp_certified")
        assert_figures(d["columns"][col]["overall"], want, col)
    assert f"precision@{huge}" in err  # the undefined tail is said


# --------------------------------------------------------------------------- compare_with_gold against the loop


@st.composite
def segment_tables(draw: Any) -> tuple[list[tuple[str, int]], list[str], list[int], list[int], list[int]]:
    n = draw(st.integers(1, 40))
    docs = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n))
    keys, seen = [], {}
    for doc in docs:  # sentence numbers per document: 0, 1, 2, ...
        keys.append((doc, seen.get(doc, 0)))
        seen[doc] = seen.get(doc, 0) + 1
    genre_of = {d: draw(st.sampled_from(["news", "fiction", "overall"])) for d in "abc"}
    gold = draw(st.lists(st.integers(0, 8), min_size=n, max_size=n))
    ddp = draw(st.lists(st.integers(0, 8), min_size=n, max_size=n))
    cert = [min(v, c) for v, c in zip(ddp, draw(st.lists(st.integers(0, 8), min_size=n, max_size=n)))]
    return keys, [genre_of[k[0]] for k in keys], gold, ddp, cert


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(segment_tables(), st.lists(st.integers(1, 9), min_size=1, max_size=3))
def test_compare_with_gold_against_the_loop(data: Any, tails: list[int]) -> None:
    keys, genres, gold, ddp, cert = data
    g, seg = tables(keys, genres, gold, ddp, cert)
    res = V.compare_with_gold(g, seg, tails=tails)
    ks = tuple(sorted(set(tails)))
    d = json.loads(json.dumps(res.to_dict(), allow_nan=False))  # the JSON report, as the CLI prints it
    for col, values in (("ddp", ddp), ("ddp_certified", cert)):
        rep = d["columns"][col]
        assert_figures(rep["overall"], expected_column(values, gold, ks, col == "ddp_certified"), f"{col}.overall")
        want_genres = sorted(set(genres))
        assert list(rep["by_genre"]) == want_genres
        for ge in want_genres:
            sel = [i for i, x in enumerate(genres) if x == ge]
            assert_figures(rep["by_genre"][ge], expected_column([values[i] for i in sel], [gold[i] for i in sel], ks,
                                                                col == "ddp_certified"), f"{col}.{ge}")
        # every count of the genre rows adds up to the overall count
        for what in ("under", "exact", "over"):
            assert sum(m[what]["count"] for m in rep["by_genre"].values()) == rep["overall"][what]["count"]
        for i, _ in enumerate(ks):
            for what in ("precision", "recall"):
                assert sum(m["tails"][i][what]["n"] for m in rep["by_genre"].values()) == \
                    rep["overall"]["tails"][i][what]["n"]
    # the over-estimates are exactly the segments with DDP > gold, in gold order, with error = DDP - gold
    over = res.over_estimates
    want = [(k[0], k[1], v, gv, v - gv) for k, v, gv in zip(keys, ddp, gold) if v > gv]
    assert list(zip(over["document_id"], over["sentence"], over["ddp"], over["gold_distance"], over["error"])) == want
    assert d["n_over_estimates"] == len(want)
    # the text report: one row per genre (and the total, labelled "(overall)" beside a genre named "overall")
    # with its n
    text = V.format_validation_text(res)
    block = text.split("column ddp (")[1].splitlines()[3:]
    rows = {line.split()[0]: int(line.split()[1]) for line in block[:len(set(genres)) + (len(set(genres)) != 1)]}
    want_rows = {ge: genres.count(ge) for ge in set(genres)}
    if len(set(genres)) != 1:
        want_rows["(overall)" if "overall" in want_rows else "overall"] = len(genres)
    assert rows == want_rows


# --------------------------------------------------------------------------- the shared GUM gold


@pytest.mark.shared_data
def test_gum_gold_figures_against_the_loop(shared_data: Path) -> None:
    """The real gold distances of GUM (ddp scope, 14,597 sentences, 23 genres) against a synthetic DDP (the gold
    distance moved by a seeded offset): every genre's figures and the overall ones by the loop."""
    from ddpcore.io.gold import read_gold

    corpus = read_gold(shared_data / "gum-coref" / "gum_dep_conllu_with_coref.tar.xz")
    g = V.compute_gold_distances(corpus, gold_scope="ddp")
    gold = g["gold_distance"].to_list()
    rng = np.random.default_rng(13)
    ddp = [max(0, v + int(o)) for v, o in zip(gold, rng.integers(-2, 3, len(gold)))]
    cert = [v if i % 3 else 0 for i, v in enumerate(ddp)]
    seg = pl.DataFrame({"document_id": g["document_id"], "segment_id": g["sentence"], "ddp": ddp,
                        "ddp_certified": cert})
    res = V.compare_with_gold(g, seg, tails=(5, 15))
    genres = g["genre"].to_list()
    for col, values in (("ddp", ddp), ("ddp_certified", cert)):
        rep = res.columns[col].to_dict()
        assert_figures(rep["overall"], expected_column(values, gold, (5, 15), col == "ddp_certified"))
        assert sum(m["n_segments"] for m in rep["by_genre"].values()) == len(gold)
        for ge in sorted(set(genres)):
            sel = [i for i, x in enumerate(genres) if x == ge]
            assert_figures(rep["by_genre"][ge], expected_column([values[i] for i in sel], [gold[i] for i in sel],
                                                                (5, 15), col == "ddp_certified"), f"{col}.{ge}")
    assert res.over_estimates.height == sum(v > gv for v, gv in zip(ddp, gold))
