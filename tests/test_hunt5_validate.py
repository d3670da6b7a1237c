"""Bug hunt 5: ``ddp validate`` end to end on small hand-made golds, every printed number checked
against an independent computation written here.

How the expected values are produced:

* gold distances: worked out by hand from the definition in docs/validation.md ("Gold distance",
  "Gold scope"); each list is derived in the comment next to it;
* DDP values: given by a stand-in for the spaCy run (``fake_run``: the test chooses DDP and
  ``ddp_certified`` per sentence and the anchors), so the only code under test is the gold reader,
  the gold distances, the metrics and the report (the spaCy run is checked once, at the end, on a
  real parse);
* Pearson r / Spearman rho: ``scipy.stats.pearsonr`` / ``spearmanr``; undefined (``None``) when a side
  is constant or fewer than 2 segments (docs: "null when a side is constant");
* shares and intervals: counts by a plain Python loop over the segments, intervals from statsmodels'
  ``proportion_confint(count, n, method="beta")`` (exact Clopper-Pearson); ``None`` when n = 0;
* mean signed error: ``statistics.fmean`` of DDP - gold.
"""
from __future__ import annotations

import csv
import json
import math
import statistics
import types
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from scipy.stats import pearsonr, spearmanr
from statsmodels.stats.proportion import proportion_confint

import ddpcore.gold.validate as V
from ddpcore.cli.main import main

# --------------------------------------------------------------------------- the independent computation


def ci(count: int, n: int) -> dict[str, Any]:
    """``{count, n, share, ci_low, ci_high}`` by statsmodels (exact Clopper-Pearson), all None at n = 0."""
    if n == 0:
        return {"count": count, "n": 0, "share": None, "ci_low": None, "ci_high": None}
    lo, hi = proportion_confint(count, n, alpha=0.05, method="beta")
    lo = 0.0 if count == 0 else float(lo)
    hi = 1.0 if count == n else float(hi)
    return {"count": count, "n": n, "share": count / n, "ci_low": lo, "ci_high": hi}


def corr(f: Any, x: list[int], y: list[int]) -> float | None:
    if len(x) < 2 or len(set(x)) == 1 or len(set(y)) == 1:
        return None
    return float(f(x, y).statistic)


def expected_column(ddp: list[int], gold: list[int], tails: tuple[int, ...], coverage: bool) -> dict[str, Any]:
    """Every figure of one column, one segment at a time."""
    n = len(ddp)
    pairs = list(zip(ddp, gold))
    out: dict[str, Any] = {
        "n_segments": n,
        "pearson": corr(pearsonr, ddp, gold),
        "spearman": corr(spearmanr, ddp, gold),
        "under": ci(sum(d < g for d, g in pairs), n),
        "exact": ci(sum(d == g for d, g in pairs), n),
        "over": ci(sum(d > g for d, g in pairs), n),
        "mean_signed_error": statistics.fmean(d - g for d, g in pairs) if n else None,
        "tails": [],
    }
    for k in tails:
        both = sum(d >= k and g >= k for d, g in pairs)
        out["tails"].append({"k": k, "precision": ci(both, sum(d >= k for d in ddp)),
                             "recall": ci(both, sum(g >= k for g in gold))})
    if coverage:
        out["coverage"] = ci(sum(g > 0 and d > 0 for d, g in pairs), sum(g > 0 for g in gold))
    return out


def assert_figures(got: Any, want: Any, where: str = "") -> None:
    """Recursive comparison, floats to 1e-9 relative (scipy vs ddpcore's own Pearson differ in the last bits)."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), (where, got, want)
        for key in want:
            assert_figures(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (where, got, want)
        for i, (a, b) in enumerate(zip(got, want)):
            assert_figures(a, b, f"{where}[{i}]")
    elif isinstance(want, float):
        assert got is not None and got == pytest.approx(want, rel=1e-9, abs=1e-12), (where, got, want)
    else:
        assert got == want, (where, got, want)


# --------------------------------------------------------------------------- gold writers and the stand-in run


def tok(form: str, ent: str | None = None, upos: str = "PROPN", xpos: str = "NNP", feats: str = "_") -> tuple:
    return (form, upos, xpos, feats, f"Entity={ent}" if ent else "_")


def sentence(tokens: list[tuple], text: str | None = None) -> str:
    """One CoNLL-U sentence; every token is its own root (head 0), so a mention's head is its first token."""
    lines = [f"# text = {text if text is not None else ' '.join(t[0] for t in tokens)}"]
    for i, (form, upos, xpos, feats, misc) in enumerate(tokens, 1):
        lines.append("\t".join([str(i), form, form.lower(), upos, xpos, feats, "0", "root", "_", misc]))
    return "\n".join(lines) + "\n\n"


def V_(form: str) -> tuple:
    return tok(form, None, "VERB", "VBD")


def P(form: str, ent: str) -> tuple:  # a personal pronoun mention
    return tok(form, ent, "PRON", "PRP")


STORY = (
    "# newdoc id = n1\n# global.Entity = eid-etype-head-other\n# meta::genre = news\n"
    + sentence([tok("John", "(e1-person-1"), tok("Smith", "e1)"), V_("met"), tok("Mary", "(e2-person-1)"), V_(".")])
    + sentence([tok("The", "(e3-abstract-2", "DET", "DT"), tok("weather", "e3)", "NOUN", "NN"), V_("was"), V_("bad"),
                V_("for"), P("her", "(e2-person-1)"), V_(".")])
    + sentence([P("I", "(e4-person-1)"), V_("saw"), P("him", "(e1-person-1)"), V_(".")])
    + sentence([P("It", "(e3-abstract-1)"), V_("rained"), V_(".")])
    + sentence([P("I", "(e4-person-1)"), V_("left"), V_(".")])
    + sentence([tok("Mary", "(e2-person-1)"), V_("laughed"), V_(".")])
    + "# newdoc id = n2\n# meta::genre = news\n"
    + sentence([tok("Paris", "(e5-place-1)"), V_("is"), V_("big"), V_(".")])
    + sentence([tok("Rome", "(e6-place-1)"), V_("is"), V_("old"), V_(".")])
    + sentence([tok("Paris", "(e5-place-1)"), V_("is"), V_("far"), V_(".")])
    + "# newdoc id = f1\n# meta::genre = fiction\n"
    + sentence([tok("Anna", "(e7-person-1)"), V_("slept"), V_(".")])
    + sentence([P("She", "(e7-person-1)"), V_("woke"), V_(".")])
    + sentence([V_("Nothing"), V_("happened"), V_(".")])
    + sentence([P("She", "(e7-person-1)"), V_("ran"), V_(".")])
    + "# newdoc id = u1\n"  # no genre: counted under 'unknown'
    + sentence([tok("Bob", "(e8-person-1)"), V_("sat"), V_(".")])
    + sentence([tok("Bob", "(e8-person-1)"), V_("stood"), V_(".")])
)
ORDER = [("n1", i) for i in range(6)] + [("n2", i) for i in range(3)] + [("f1", i) for i in range(4)] + [("u1", 0), ("u1", 1)]
GENRE_OF = {"n1": "news", "n2": "news", "f1": "fiction", "u1": "unknown"}
# Gold distances by hand (docs/validation.md "Gold distance", "Gold scope"):
# n1: s0 John Smith(e1) Mary(e2); s1 The weather(e3, NOM) her(e2); s2 I(e4) him(e1); s3 It(e3); s4 I(e4); s5 Mary(e2)
#   full chained : s1 her->s0 1; s2 him->s0 2 (I first); s3 It->s1 2; s4 I->s2 2; s5 Mary->s0 5   = 0 1 2 2 2 5
#   full nearest : the same but s5 Mary -> previous e2 mention s1: 4                            = 0 1 2 2 2 4
#   restricted   : NOM "The weather" removed, so s3's It is e3's first kept mention: 0           = 0 1 2 0 2 5 / nearest 0 1 2 0 2 4
#   ddp          : I (1st person) removed, so s4 has nothing; weather is an antecedent only       = 0 1 2 2 0 5 / nearest 0 1 2 2 0 4
# n2: Paris s0, Rome s1, Paris s2: every scope and mode                                          = 0 0 2
# f1: Anna s0, She s1, -, She s3: chained 0 1 0 3, nearest 0 1 0 2 (same in every scope)
# u1: Bob s0, Bob s1                                                                             = 0 1
GOLD = {
    ("chained", "full"): [0, 1, 2, 2, 2, 5, 0, 0, 2, 0, 1, 0, 3, 0, 1],
    ("nearest", "full"): [0, 1, 2, 2, 2, 4, 0, 0, 2, 0, 1, 0, 2, 0, 1],
    ("chained", "restricted"): [0, 1, 2, 0, 2, 5, 0, 0, 2, 0, 1, 0, 3, 0, 1],
    ("nearest", "restricted"): [0, 1, 2, 0, 2, 4, 0, 0, 2, 0, 1, 0, 2, 0, 1],
    ("chained", "ddp"): [0, 1, 2, 2, 0, 5, 0, 0, 2, 0, 1, 0, 3, 0, 1],
    ("nearest", "ddp"): [0, 1, 2, 2, 0, 4, 0, 0, 2, 0, 1, 0, 2, 0, 1],
}
# DDP chosen for the stand-in run (in ORDER)
DDP = [0, 1, 3, 1, 0, 5, 0, 0, 2, 0, 1, 1, 3, 0, 1]
CERT = [0, 1, 0, 0, 0, 5, 0, 0, 2, 0, 0, 0, 3, 0, 1]
ANCHOR_SCHEMA = {"document_id": pl.String, "segment_id": pl.Int64, "anchor_index": pl.Int64, "kind": pl.String,
                 "label": pl.String, "text": pl.String, "antecedent_kind": pl.String, "antecedent_text": pl.String,
                 "antecedent_sentence": pl.Int64, "distance_sentences": pl.Int64, "distance_certified": pl.Int64}
# same-string name re-mentions (set aside by --set-aside same-string-names): n1 s5 Mary->Mary 5, n2 s2
# Paris->Paris 2, u1 s1 Bob->Bob 1 (both columns: the certified distance is the same); f1 s3 She->Anna 3 is
# a pronoun (kept); n1 s2: him->John Smith 3 (kept)
ANCHORS = [
    {"document_id": "n1", "segment_id": 5, "kind": "entity", "label": "PERSON", "text": "Mary", "antecedent_kind": "entity",
     "antecedent_text": "Mary", "antecedent_sentence": 0, "distance_sentences": 5, "distance_certified": 5},
    {"document_id": "n2", "segment_id": 2, "kind": "entity", "label": "GPE", "text": "Paris", "antecedent_kind": "entity",
     "antecedent_text": "Paris", "antecedent_sentence": 0, "distance_sentences": 2, "distance_certified": 2},
    {"document_id": "u1", "segment_id": 1, "kind": "entity", "label": "PERSON", "text": "Bob", "antecedent_kind": "entity",
     "antecedent_text": "Bob", "antecedent_sentence": 0, "distance_sentences": 1, "distance_certified": 1},
    {"document_id": "f1", "segment_id": 3, "kind": "pronoun", "label": "FEM_SG", "text": "She", "antecedent_kind": "entity",
     "antecedent_text": "Anna", "antecedent_sentence": 0, "distance_sentences": 3, "distance_certified": 3},
    {"document_id": "n1", "segment_id": 2, "kind": "pronoun", "label": "MASC_SG", "text": "him",
     "antecedent_kind": "entity", "antecedent_text": "John Smith", "antecedent_sentence": 0, "distance_sentences": 3,
     "distance_certified": 0},
]
ASIDE = {("n1", 5), ("n2", 2), ("u1", 1)}


def fake_run(monkeypatch: pytest.MonkeyPatch, ddp: dict | None = None, cert: dict | None = None,
             anchors: list[dict] | None = None, calls: list | None = None) -> None:
    """Replace the spaCy run of ``ddp validate`` by given DDP values (``(document, sentence) -> value``)."""
    ddp = dict(zip(ORDER, DDP)) if ddp is None else ddp
    cert = dict(zip(ORDER, CERT)) if cert is None else cert
    anchors = ANCHORS if anchors is None else anchors

    def profile_gold(corpus: Any, **kw: Any) -> tuple[Any, dict[str, float]]:
        if calls is not None:
            calls.append(kw)
        s = corpus.sentences
        keys = list(zip(s["document_id"].to_list(), s["sentence"].to_list()))
        seg = {"document_id": [k[0] for k in keys], "segment_id": [k[1] for k in keys], "ddp": [ddp[k] for k in keys]}
        if cert:
            seg["ddp_certified"] = [cert[k] for k in keys]
        rows = [{**{c: None for c in ANCHOR_SCHEMA}, "anchor_index": i, **a} for i, a in enumerate(anchors)]
        run = types.SimpleNamespace(segments=pl.DataFrame(seg), anchors=pl.DataFrame(rows, schema=ANCHOR_SCHEMA),
                                    signature={"stand_in": True})
        return run, {"words": 1.0, "seconds": 1.0, "words_per_second": 1.0}

    monkeypatch.setattr(V, "profile_gold", profile_gold)


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["validate", *args])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def expected_report(gold: list[int], tails: tuple[int, ...], keep: set | None = None,
                    ddp: list[int] = DDP, cert: list[int] = CERT) -> dict[str, Any]:
    """``columns`` of the report: per column, overall and per genre, over the kept segments."""
    out: dict[str, Any] = {}
    for col, values, aside in (("ddp", ddp, keep), ("ddp_certified", cert, keep)):
        rows = [(k, v, g) for k, v, g in zip(ORDER, values, gold) if not aside or k not in aside]
        genres = sorted({GENRE_OF[k[0]] for k, _, _ in rows} | {GENRE_OF[k[0]] for k in ORDER})
        out[col] = {
            "overall": expected_column([v for _, v, _ in rows], [g for _, _, g in rows], tails, col == "ddp_certified"),
            "by_genre": {ge: expected_column([v for k, v, _ in rows if GENRE_OF[k[0]] == ge],
                                             [g for k, _, g in rows if GENRE_OF[k[0]] == ge], tails,
                                             col == "ddp_certified") for ge in genres},
        }
        undefined = []
        for ge in [*genres, None]:
            sel = [(v, g) for k, v, g in rows if ge is None or GENRE_OF[k[0]] == ge]
            undefined += expected_undefined(col, ge, [v for v, _ in sel], [g for _, g in sel], tails)
        out[col]["undefined"] = undefined
    return out


def expected_undefined(col: str, genre: str | None, ddp: list[int], gold: list[int],
                       tails: tuple[int, ...]) -> list[dict[str, Any]]:
    """The undefined figures and their reasons, from the definitions (docs/validation.md "Metrics")."""
    out = []
    if len(ddp) < 2 or len(set(ddp)) == 1 or len(set(gold)) == 1:
        why = (f"fewer than 2 segments ({len(ddp)})" if len(ddp) < 2 else
               f"{col} is {ddp[0]} in every segment" if len(set(ddp)) == 1 else
               f"the gold distance is {gold[0]} in every segment")
        out += [{"genre": genre, "figure": f, "reason": why} for f in ("pearson", "spearman")]
    if not ddp:
        out += [{"genre": genre, "figure": f, "reason": "no segment"}
                for f in ("under", "exact", "over", "mean_signed_error")]
    for k in tails:
        if not any(d >= k for d in ddp):
            out.append({"genre": genre, "figure": f"precision@{k}", "reason": f"no segment has {col} >= {k}"})
        if not any(g >= k for g in gold):
            out.append({"genre": genre, "figure": f"recall@{k}", "reason": f"no segment has gold distance >= {k}"})
    if col == "ddp_certified" and not any(g > 0 for g in gold):
        out.append({"genre": genre, "figure": "coverage", "reason": "no segment has gold distance > 0"})
    return out


def flat(col: dict[str, Any]) -> dict[str, Any]:
    """The top-level (pre-``columns``) figures of the ddp column, from the expected column figures."""
    return {"n_segments": col["n_segments"], "pearson": col["pearson"], "spearman": col["spearman"],
            "share_under": col["under"]["share"], "share_exact": col["exact"]["share"],
            "share_over": col["over"]["share"], "mean_signed_error": col["mean_signed_error"]}


# --------------------------------------------------------------------------- the figures, every option


@pytest.mark.parametrize("distance", ["chained", "nearest"])
@pytest.mark.parametrize("scope", ["full", "restricted", "ddp"])
def test_every_figure_matches_the_independent_computation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str], distance: str,
                                                          scope: str) -> None:
    gold_file = tmp_path / "story.conllu"
    gold_file.write_text(STORY, encoding="utf-8")
    calls: list = []
    fake_run(monkeypatch, calls=calls)
    code, out, _ = run_cli(capsys, str(gold_file), "--distance", distance, "--gold-scope", scope, "--tail", "4,2")
    assert code == 0
    d = json.loads(out)
    gold = GOLD[(distance, scope)]
    want = expected_report(gold, (2, 4))
    assert d["tails"] == [2, 4]
    assert_figures(d["columns"], want, "columns")
    assert_figures(d["overall"], flat(want["ddp"]["overall"]), "overall")
    assert_figures(d["by_genre"], {g: flat(m) for g, m in want["ddp"]["by_genre"].items()}, "by_genre")
    assert calls[0]["distance"] == distance  # --distance reaches the DDP run too
    sig = d["signature"]["gold"]
    assert (sig["scope"], sig["distance"], sig["tails"], sig["documents"], sig["sentences"]) == (scope, distance, [2, 4], 4, 15)
    # the over-estimates are the segments with DDP > gold, in corpus order
    over = [k for k, v, g in zip(ORDER, DDP, gold) if v > g]
    assert d["n_over_estimates"] == len(over)
    assert sum(c["n_segments"] for c in d["over_estimate_causes"]) == len(over)
    assert sum(c["excess_sentences"] for c in d["over_estimate_causes"]) == sum(v - g for v, g in zip(DDP, gold) if v > g)


def test_set_aside_counts_and_figures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    gold_file = tmp_path / "story.conllu"
    gold_file.write_text(STORY, encoding="utf-8")
    fake_run(monkeypatch)
    code, out, err = run_cli(capsys, str(gold_file), "--set-aside", "same-string-names", "--tail", "2,4")
    assert code == 0
    d = json.loads(out)
    gold = GOLD[("chained", "full")]
    # by hand: ddp set aside n1 s5 (Mary, 5), n2 s2 (Paris, 2), u1 s1 (Bob, 1): 3 of 15; ddp_certified the same three
    # (their certified distance is the value: 5, 2, 1); f1 s3 (She) and n1 s2 (him) are pronouns: kept
    assert d["set_aside"] == {"rule": "same-string-names", "segments": {"ddp": 3, "ddp_certified": 3}, "of": 15}
    assert "set aside (same-string-names): 3 for ddp, 3 for ddp_certified of 15 segments" in err
    want = expected_report(gold, (2, 4), keep=ASIDE)
    assert_figures(d["columns"], want, "columns")
    assert_figures(d["overall"], flat(want["ddp"]["overall"]), "overall")
    over = [k for k, v, g in zip(ORDER, DDP, gold) if v > g and k not in ASIDE]
    assert d["n_over_estimates"] == len(over)


# --------------------------------------------------------------------------- text report = JSON report

_PCT = r"\s*(—|\d+\.\d)(?: \[\s*(\d+\.\d),\s*(\d+\.\d)\])?"


def _pct_ok(cell: tuple[str, str, str], p: dict[str, Any]) -> None:
    share, lo, hi = cell
    if p["share"] is None:
        assert share == "—", (cell, p)
        return
    assert float(share) == pytest.approx(100 * p["share"], abs=0.051), (cell, p)
    assert float(lo) == pytest.approx(100 * p["ci_low"], abs=0.051), (cell, p)
    assert float(hi) == pytest.approx(100 * p["ci_high"], abs=0.051), (cell, p)


def _num_ok(cell: str, x: float | None, digits: int) -> None:
    if x is None:
        assert cell == "—"
    else:
        assert float(cell) == pytest.approx(x, abs=0.51 * 10 ** -digits), (cell, x)


def check_text_against_json(text: str, d: dict[str, Any]) -> None:
    """Every figure of ``-f text`` agrees with the JSON report (to the digits printed)."""
    import re

    lines = text.splitlines()
    for col, rep in d["columns"].items():
        rows = dict(rep["by_genre"])
        if len(rows) != 1:
            rows["overall"] = rep["overall"]
        start = lines.index(next(line for line in lines if line.startswith(f"column {col} (")))
        for line in lines[start + 3:start + 3 + len(rows)]:
            m = re.fullmatch(r"(\S+)\s+(\d+)\s+(—|-?\d\.\d{3})\s+(—|-?\d\.\d{3})\s+" + _PCT + r"\s+" + _PCT + r"\s+"
                             + _PCT + r"\s+(—|-?\d+\.\d\d)", line)
            assert m, line
            g = m.group(1)
            fig = rows.pop(g)
            assert int(m.group(2)) == fig["n_segments"]
            _num_ok(m.group(3), fig["pearson"], 3)
            _num_ok(m.group(4), fig["spearman"], 3)
            for i, what in enumerate(("under", "exact", "over")):
                _pct_ok(m.groups()[4 + 3 * i:7 + 3 * i], fig[what])
            _num_ok(m.group(14), fig["mean_signed_error"], 2)
        assert not rows
        start = lines.index(next(line for line in lines if line.startswith(f"column {col} tails")))
        rows = dict(rep["by_genre"])
        if len(rows) != 1:
            rows["overall"] = rep["overall"]
        for line in lines[start + 3:start + 3 + len(rows)]:
            g = line.split()[0]
            fig = rows.pop(g)
            cells = re.findall(_PCT + r" /(\d+)", line[len(g):])
            want = [p for t in fig["tails"] for p in (t["precision"], t["recall"])] + (
                [fig["coverage"]] if "coverage" in fig else [])
            assert len(cells) == len(want), line
            for cell, p in zip(cells, want):
                _pct_ok(cell[:3], p)
                assert int(cell[3]) == p["n"]
        assert not rows


@pytest.mark.parametrize("extra", [[], ["--set-aside", "same-string-names"], ["--gold-scope", "ddp", "--distance", "nearest"]])
def test_text_report_agrees_with_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str], extra: list[str]) -> None:
    gold_file = tmp_path / "story.conllu"
    gold_file.write_text(STORY, encoding="utf-8")
    fake_run(monkeypatch)
    code, out, _ = run_cli(capsys, str(gold_file), "--tail", "2,4", *extra)
    assert code == 0
    d = json.loads(out)
    code, text, _ = run_cli(capsys, str(gold_file), "--tail", "2,4", "-f", "text", *extra)
    assert code == 0
    check_text_against_json(text, d)
    assert f"{d['n_over_estimates']} segments" in text if d["n_over_estimates"] else "over-estimates" not in text


# --------------------------------------------------------------------------- options reach the run and the outputs


def test_extraction_options_reach_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    gold_file = tmp_path / "story.conllu"
    gold_file.write_text(STORY, encoding="utf-8")
    calls: list = []
    fake_run(monkeypatch, calls=calls)
    code, _, _ = run_cli(capsys, str(gold_file), "--rules", "paper", "-j", "1", "--batch-size", "7",
                         "--pipeline", "fast", "--distance", "nearest", "-q")
    assert code == 0
    kw = calls[0]
    assert (kw["n_process"], kw["batch_size"], kw["pipeline"], kw["distance"]) == (1, 7, "fast", "nearest")
    assert getattr(kw["rules"], "name", kw["rules"]) == "paper"


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl", ".parquet", ".csv.gz"])
def test_over_estimates_file_agrees_with_the_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str], suffix: str) -> None:
    gold_file = tmp_path / "story.conllu"
    gold_file.write_text(STORY, encoding="utf-8")
    fake_run(monkeypatch)
    dest = tmp_path / f"over{suffix}"
    code, out, _ = run_cli(capsys, str(gold_file), "--over-estimates", str(dest), "-q")
    assert code == 0
    d = json.loads(out)
    if suffix == ".parquet":
        table = pl.read_parquet(dest)
    elif suffix == ".jsonl":
        table = pl.read_ndjson(dest)
    else:
        table = pl.read_csv(dest, separator="\t" if suffix == ".tsv" else ",")
    gold = GOLD[("chained", "full")]
    # by hand: DDP > gold at n1 s2 (3 > 2) and f1 s2 (1 > 0)
    want = [(k[0], k[1], v, g) for k, v, g in zip(ORDER, DDP, gold) if v > g]
    assert want == [("n1", 2, 3, 2), ("f1", 2, 1, 0)]
    got = list(zip(table["document_id"], table["sentence"], table["ddp"], table["gold_distance"]))
    assert got == want and d["n_over_estimates"] == len(want)
    # the responsible anchor of n1 s2 is "him" (distance 3 = its DDP)
    assert table.filter(pl.col("document_id") == "n1")["anchor_text"].to_list() == ["him"]


def test_plot_is_written_with_the_signature(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    gold_file = tmp_path / "story.conllu"
    gold_file.write_text(STORY, encoding="utf-8")
    fake_run(monkeypatch)
    dest = tmp_path / "scatter.svg"
    code, _, _ = run_cli(capsys, str(gold_file), "--plot", str(dest), "-q")
    assert code == 0
    svg = dest.read_text(encoding="utf-8")
    assert "ddpcore.signature" in svg or "stand_in" in svg
    # the legend: n and r per genre (r of the ddp column by genre; fiction DDP 0 1 1 3 vs gold 0 1 0 3: scipy)
    r = pearsonr([0, 1, 1, 3], [0, 1, 0, 3]).statistic
    assert f"fiction (n=4, r={r:.2f})" in svg


def test_strict_turns_a_repair_into_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    broken = STORY.replace("Entity=(e5-place-1)", "Entity=(e5-place-1", 1)  # n2's first Paris left open
    gold_file = tmp_path / "story.conllu"
    gold_file.write_text(broken, encoding="utf-8")
    fake_run(monkeypatch)
    code, out, err = run_cli(capsys, str(gold_file))
    assert code == 0 and "1 unbalanced gold coreference bracket(s) repaired" in err
    assert json.loads(out)["signature"]["gold"]["repaired_brackets"] == 1
    code, out, err = run_cli(capsys, str(gold_file), "--strict")
    assert code == 3 and out == "" and err.count("\n") == 1
    assert "[D410]" in err and "story.conllu" in err and "entity e5 still open" in err


# --------------------------------------------------------------------------- a '# text' that is not the sentence


@pytest.mark.parametrize("text, column", [
    ("", 9),                        # '# text = ' (empty): was D111 naming an internal '<table>, row 2, column source'
    ("Rain fell .", 10),            # another sentence: was measured in silence in place of the annotated one
    ("The weather was bad", 29),    # a word left out: they part just after the text ends
])
def test_text_that_does_not_spell_the_forms_is_d413(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str], text: str, column: int) -> None:
    """A repair, as an unbalanced bracket is: the sentence's text is rebuilt from the forms the gold annotates
    and the first such '# text' is named with the count (a user's whole validation is not refused for one bad
    line of a gold, which the UD validator would flag); --strict makes it the error D413."""
    from ddpcore.io.gold import read_gold

    gold = ("# newdoc id = a\n# meta::genre = news\n"
            + sentence([tok("Anna", "(e1-person-1)"), V_("slept"), V_(".")])
            + sentence([tok("The"), tok("weather"), V_("was"), V_("bad"), V_(".")], text=text)
            + sentence([P("She", "(e1-person-1)"), V_("woke"), V_(".")]))
    gold_file = tmp_path / "g.conllu"
    gold_file.write_text(gold, encoding="utf-8")
    fake_run(monkeypatch, ddp={("a", i): 0 for i in range(3)}, cert={("a", i): 0 for i in range(3)}, anchors=[])
    # line 8 is the second sentence's '# text' line (lines 1-2 document, 3-6 sentence 1, 7 blank); the column is
    # that of the first character that differs ("# text = " is 9 characters: column 10 is the text's first, an
    # empty text is reported just after "# text ="; "The weather was bad" fills columns 10-28)
    code, out, err = run_cli(capsys, str(gold_file), "--strict")
    assert (code, out) == (3, "") and err.count("\n") == 1, err
    assert f"[D413] {gold_file}: line 8, column {column}: " in err and "Traceback" not in err
    code, out, err = run_cli(capsys, str(gold_file))
    assert code == 0 and f"[D413] {gold_file}: line 8, column {column}: " in err, err
    assert "1 such sentence(s) in this file, whose text is rebuilt from the word forms" in err
    assert "in 1 gold file(s) a sentence's '# text' does not spell its word forms" in err
    assert "bracket" not in err  # no bracket was repaired
    gold_sig = json.loads(out)["signature"]["gold"]
    assert (gold_sig["rebuilt_texts"], gold_sig["repaired_brackets"]) == (1, 0)
    corpus = read_gold(gold_file)
    # what DDP reads for sentence 1: its forms, spaced as the token lines say (no SpaceAfter=No: one space each)
    assert corpus.sentences.filter(pl.col("sentence") == 1)["text"].item() == "The weather was bad ."
    assert [w for w in corpus.warnings if w.startswith("[D413]")] and len(corpus.warnings) == 1


def test_text_with_other_white_space_and_multiword_tokens_is_fine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # the text is the surface forms: "didn't" is the multiword token 2-3, its words "did" "n't" are not spelled
    lines = ["# newdoc id = a", "# text = I  didn't\tgo.",
             "1\tI\ti\tPRON\tPRP\t_\t0\troot\t_\tEntity=(e1-person-1)",
             "2-3\tdidn't\t_\t_\t_\t_\t_\t_\t_\t_",
             "2\tdid\tdo\tAUX\tVBD\t_\t0\troot\t_\t_", "3\tn't\tnot\tPART\tRB\t_\t0\troot\t_\t_",
             "4\tgo\tgo\tVERB\tVB\t_\t0\troot\t_\tSpaceAfter=No", "5\t.\t.\tPUNCT\t.\t_\t0\troot\t_\t_", "", ""]
    gold_file = tmp_path / "g.conllu"
    gold_file.write_text("\n".join(lines), encoding="utf-8")
    fake_run(monkeypatch, ddp={("a", 0): 0}, cert={("a", 0): 0}, anchors=[])
    code, out, err = run_cli(capsys, str(gold_file), "-q")
    assert code == 0, err


# --------------------------------------------------------------------------- edge cases: undefined figures are said


def _one_doc(tmp_path: Path, sentences: list[str], genre: str | None = "news") -> Path:
    head = "# newdoc id = a\n# global.Entity = eid-etype-head-other\n" + (f"# meta::genre = {genre}\n" if genre else "")
    path = tmp_path / "g.conllu"
    path.write_text(head + "".join(sentences), encoding="utf-8")
    return path


def _undefined_of(d: dict[str, Any], col: str) -> set[tuple[Any, str, str]]:
    return {(u["genre"], u["figure"], u["reason"]) for u in d["columns"][col]["undefined"]}


def test_no_coreference_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    # no Entity= at all: every gold distance is 0; DDP 0 1 (an unlinked "He": DDP's default distance 1)
    path = _one_doc(tmp_path, [sentence([tok("John"), V_("ran")]), sentence([tok("He", None, "PRON", "PRP"), V_("left")])])
    fake_run(monkeypatch, ddp={("a", 0): 0, ("a", 1): 1}, cert={("a", 0): 0, ("a", 1): 0}, anchors=[])
    code, out, err = run_cli(capsys, str(path), "--gold-scope", "ddp", "--tail", "1")
    assert code == 0
    d = json.loads(out)
    for col, ddp in (("ddp", [0, 1]), ("ddp_certified", [0, 0])):
        want = expected_column(ddp, [0, 0], (1,), col == "ddp_certified")
        assert_figures(d["columns"][col]["overall"], want, col)
        assert want["pearson"] is None and d["columns"][col]["overall"]["pearson"] is None
    # the gold is 0 everywhere: r and rho undefined (ddp_certified: both sides constant, the DDP side is named
    # first), recall@1 undefined; coverage undefined (no gold-positive segment)
    assert _undefined_of(d, "ddp") >= {(None, "pearson", "the gold distance is 0 in every segment"),
                                       (None, "recall@1", "no segment has gold distance >= 1")}
    assert _undefined_of(d, "ddp_certified") >= {(None, "pearson", "ddp_certified is 0 in every segment"),
                                                 (None, "coverage", "no segment has gold distance > 0"),
                                                 (None, "precision@1", "no segment has ddp_certified >= 1")}
    # ... and said on stderr (it was not: a bare null / "—")
    assert ("note: undefined figures of ddp (null in the report, — in the text): pearson, spearman in genre news, "
            "overall (the gold distance is 0 in every segment)") in err
    assert "coverage in genre news, overall (no segment has gold distance > 0)" in err
    # -q: recorded in the report only
    code, out, err = run_cli(capsys, str(path), "--gold-scope", "ddp", "--tail", "1", "-q")
    assert code == 0 and "undefined" not in err and json.loads(out)["columns"]["ddp"]["undefined"]


def test_one_sentence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    path = _one_doc(tmp_path, [sentence([tok("John", "(e1-person-1)"), V_("ran")])])
    fake_run(monkeypatch, ddp={("a", 0): 0}, cert={("a", 0): 0}, anchors=[])
    code, out, err = run_cli(capsys, str(path))
    assert code == 0
    d = json.loads(out)
    # one segment, DDP 0 = gold 0: exact 1 of 1, interval [0.025^(1/1), 1] = [0.025, 1] (statsmodels)
    assert_figures(d["columns"]["ddp"]["overall"], expected_column([0], [0], (5, 15), False))
    assert d["columns"]["ddp"]["overall"]["exact"]["ci_low"] == pytest.approx(0.025)
    assert (None, "pearson", "fewer than 2 segments (1)") in _undefined_of(d, "ddp")
    assert "pearson, spearman in genre news, overall (fewer than 2 segments (1))" in err


def test_every_segment_the_same_ddp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    # Ann s0, she s1, she s2: gold (chained) 0 1 2; DDP 1 1 1 (constant: r undefined); certified 0 1 2 (r = 1)
    path = _one_doc(tmp_path, [sentence([tok("Ann", "(e1-person-1)"), V_("ran")]),
                               sentence([P("She", "(e1-person-1)"), V_("sat")]),
                               sentence([P("She", "(e1-person-1)"), V_("left")])])
    fake_run(monkeypatch, ddp={("a", i): 1 for i in range(3)}, cert={("a", i): i for i in range(3)}, anchors=[])
    code, out, err = run_cli(capsys, str(path), "--tail", "2", "-f", "text")
    assert code == 0
    # text: the ddp row shows "—" for r and rho, the certified row 1.000; under 1/3 exact 1/3 over 1/3, mean 0.00
    row = next(line for line in out.splitlines() if line.startswith("news"))
    assert row.split()[:4] == ["news", "3", "—", "—"] and row.split()[-1] == "0.00"
    assert "pearson, spearman in genre news, overall (ddp is 1 in every segment)" in err


def test_no_gold_positive_segment_leaves_coverage_undefined(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    # two one-sentence chains: every gold distance 0, so coverage (of gold > 0) has n = 0: null / "—", never 0
    path = _one_doc(tmp_path, [sentence([tok("Ann", "(e1-person-1)"), V_("ran")]),
                               sentence([tok("Bob", "(e2-person-1)"), V_("sat")])])
    fake_run(monkeypatch, ddp={("a", 0): 0, ("a", 1): 1}, cert={("a", 0): 0, ("a", 1): 1}, anchors=[])
    code, out, err = run_cli(capsys, str(path))
    d = json.loads(out)
    assert d["columns"]["ddp_certified"]["overall"]["coverage"] == {"count": 0, "n": 0, "share": None, "ci_low": None,
                                                                     "ci_high": None}
    assert "coverage in genre news, overall (no segment has gold distance > 0)" in err


def test_a_genre_left_without_segments_is_undefined_not_zero() -> None:
    # Python API (compare_with_gold with a run's tables): every 'fiction' segment is a same-string name set aside,
    # so the fiction row has no segment; its shares and mean were 0.0 in the flat by_genre (the columns had null)
    gold = pl.DataFrame({"document_id": ["a", "a", "b"], "sentence": [0, 1, 1], "genre": ["news", "news", "fiction"],
                         "gold_distance": [0, 1, 0], "gold_chain_id": [None, "c", None],
                         "gold_reference_sentence": [-1, 0, -1]}, schema_overrides={"gold_chain_id": pl.String})
    seg = pl.DataFrame({"document_id": ["a", "a", "b"], "segment_id": [0, 1, 1], "ddp": [0, 1, 1],
                        "ddp_certified": [0, 1, 1]})
    anchors = pl.DataFrame([{"document_id": "b", "segment_id": 1, "anchor_index": 0, "kind": "entity", "label": "GPE",
                             "text": "Rome", "antecedent_kind": "entity", "antecedent_text": "Rome",
                             "antecedent_sentence": 0, "distance_sentences": 1, "distance_certified": 1}])
    res = V.compare_with_gold(gold, seg, anchors, set_aside="same-string-names")
    fiction = res.by_genre["fiction"]
    assert fiction.n_segments == 0
    assert (fiction.share_under, fiction.share_exact, fiction.share_over, fiction.mean_signed_error) == (None,) * 4
    assert V.compute_gold_metrics([], []).share_exact is None
    text = V.format_validation_text(V.ValidationResult(res.overall, res.by_genre, res.segments, res.over_estimates,
                                                       res.over_estimate_causes))
    assert next(line for line in text.splitlines() if line.startswith("fiction")).split()[1:] == ["0"] + ["—"] * 6
    figs = {(u["figure"], u["reason"]) for u in res.columns["ddp"].undefined if u["genre"] == "fiction"}
    assert {("over", "no segment"), ("mean_signed_error", "no segment")} <= figs


# --------------------------------------------------------------------------- genre metadata missing / partial


def test_missing_genre_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    gold_file = tmp_path / "story.conllu"
    gold_file.write_text(STORY, encoding="utf-8")
    fake_run(monkeypatch)
    code, out, err = run_cli(capsys, str(gold_file), "-q")
    d = json.loads(out)
    assert "unknown" in d["by_genre"] and d["by_genre"]["unknown"]["n_segments"] == 2
    note = f"{gold_file}: 1 of 4 document(s) ('u1') have no '# meta::genre' line; their sentences are reported under genre 'unknown'"
    assert f"ddp validate: note: {note}" in err and note in d["signature"]["gold"]["notes"]
    # CoNLL-2012: a document name without its genre part
    conll = tmp_path / "mine.v4_gold_conll"
    conll.write_text("#begin document (mydoc); part 000\nmydoc 0 0 John NNP * - - - - * (0)\nmydoc 0 1 ran VBD * - - - - * -\n"
                     "\nmydoc 0 0 He PRP * - - - - * (0)\nmydoc 0 1 left VBD * - - - - * -\n\n#end document\n",
                     encoding="utf-8")
    fake_run(monkeypatch, ddp={("mydoc", 0): 0, ("mydoc", 1): 1}, cert={("mydoc", 0): 0, ("mydoc", 1): 1}, anchors=[])
    code, out, err = run_cli(capsys, str(conll), "-q")
    assert code == 0 and list(json.loads(out)["by_genre"]) == ["unknown"]
    assert "1 of 1 document(s) ('mydoc') have a document name without a genre part" in err


def test_unicode_and_a_long_document(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    # 3,000 sentences; Zoë (e1) in every 100th; gold (chained) = s for s = 100, 200, ... and 0 elsewhere
    n = 3000
    body = "".join(sentence([tok("Zoë", "(e1-person-1)"), V_("ran")]) if i % 100 == 0 else
                   sentence([V_("Ça"), V_("va"), V_("…")]) for i in range(n))
    path = _one_doc(tmp_path, [body], genre="ñews ü")
    gold = [i if i % 100 == 0 else 0 for i in range(n)]
    ddp = [g + (1 if i % 250 == 1 else 0) for i, g in enumerate(gold)]  # 12 over-estimates by one sentence
    fake_run(monkeypatch, ddp={("a", i): v for i, v in enumerate(ddp)}, cert={("a", i): 0 for i in range(n)}, anchors=[])
    code, out, err = run_cli(capsys, str(path), "--tail", "100,2500", "-q")
    assert code == 0
    d = json.loads(out)
    assert list(d["by_genre"]) == ["ñews ü"]
    assert_figures(d["columns"]["ddp"]["overall"], expected_column(ddp, gold, (100, 2500), False))
    assert d["columns"]["ddp"]["overall"]["over"]["count"] == 12


# --------------------------------------------------------------------------- other gold formats


def test_litbank_tsv_and_conll2012(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    # LitBank TSV: "Anna slept ." / "She woke ." / "Nothing happened ." / "She ran ." (one chain E1)
    #   chained 0 1 0 3, nearest 0 1 0 2; genre 'fiction' (LitBank has none: documented)
    lit = tmp_path / "lit"
    lit.mkdir()
    (lit / "s_brat.txt").write_text("Anna slept .\nShe woke .\nNothing happened .\nShe ran .\n", encoding="utf-8")
    (lit / "s_brat.ann").write_text(
        "MENTION\tT1\t0\t0\t0\t0\tAnna\tPER\tPROP\nMENTION\tT2\t1\t0\t1\t0\tShe\tPER\tPRON\n"
        "MENTION\tT3\t3\t0\t3\t0\tShe\tPER\tPRON\nCOREF\tT1\tE1\nCOREF\tT2\tE1\nCOREF\tT3\tE1\n", encoding="utf-8")
    ddp = [0, 1, 1, 2]
    fake_run(monkeypatch, ddp={("s_brat", i): v for i, v in enumerate(ddp)},
             cert={("s_brat", i): 0 for i in range(4)}, anchors=[])
    for distance, gold in (("chained", [0, 1, 0, 3]), ("nearest", [0, 1, 0, 2])):
        code, out, err = run_cli(capsys, str(lit), "--distance", distance, "--tail", "2", "-q")
        assert code == 0, err
        d = json.loads(out)
        assert list(d["by_genre"]) == ["fiction"]
        assert_figures(d["columns"]["ddp"]["overall"], expected_column(ddp, gold, (2,), False))
    # CoNLL-2012: two parts of one OntoNotes name are two documents (part 1 named 'name#1'), genre 'bc'
    #   part 0: John(0) s0, he(0) s1, -(s2), John(0) s3 -> chained 0 1 0 3; part 1: Mary(1) s0, she(1) s1 -> 0 1
    rows = ["#begin document (bc/x/00/x_0000); part 000"]
    for words in (["John", "ran"], ["He", "sat"], ["Rain", "fell"], ["John", "left"]):
        for i, w in enumerate(words):
            coref = "(0)" if w in ("John", "He") else "-"
            pos = {"John": "NNP", "He": "PRP"}.get(w, "VBD")
            rows.append(f"bc/x/00/x_0000 0 {i} {w} {pos} * - - - - * {coref}")
        rows.append("")
    rows += ["#end document", "#begin document (bc/x/00/x_0000); part 001"]
    for words in (["Mary", "sang"], ["She", "left"]):
        for i, w in enumerate(words):
            rows.append(f"bc/x/00/x_0000 1 {i} {w} {'NNP' if w == 'Mary' else 'PRP' if w == 'She' else 'VBD'} * - - - - * "
                        + ("(1)" if w in ("Mary", "She") else "-"))
        rows.append("")
    rows.append("#end document")
    conll = tmp_path / "x.v4_gold_conll"
    conll.write_text("\n".join(rows) + "\n", encoding="utf-8")
    keys = [("bc/x/00/x_0000", i) for i in range(4)] + [("bc/x/00/x_0000#1", 0), ("bc/x/00/x_0000#1", 1)]
    ddp = [0, 1, 0, 1, 0, 1]
    fake_run(monkeypatch, ddp=dict(zip(keys, ddp)), cert=dict(zip(keys, [0] * 6)), anchors=[])
    code, out, err = run_cli(capsys, str(conll), "--tail", "2", "-q")
    assert code == 0, err
    d = json.loads(out)
    assert list(d["by_genre"]) == ["bc"] and d["signature"]["gold"]["documents"] == 2
    assert_figures(d["columns"]["ddp"]["overall"], expected_column(ddp, [0, 1, 0, 3, 0, 1], (2,), False))


# --------------------------------------------------------------------------- a real spaCy run


@pytest.mark.spacy_model
def test_real_run_figures_match_the_independent_computation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The story profiled by the default pipeline: gold distances as worked out above, every figure recomputed
    here from the run's own DDP per gold sentence; the CLI's text report agrees with the JSON."""
    gold_file = tmp_path / "story.conllu"
    gold_file.write_text(STORY, encoding="utf-8")
    res = V.validate([gold_file], tails=(2, 4), gold_scope="ddp")
    seg = res.segments
    assert list(zip(seg["document_id"], seg["sentence"])) == ORDER
    gold = GOLD[("chained", "ddp")]
    assert seg["gold_distance"].to_list() == gold
    ddp, cert = seg["ddp"].to_list(), seg["ddp_certified"].to_list()
    assert all(c <= v for c, v in zip(cert, ddp))  # ddp_certified <= ddp (docs)
    d = json.loads(json.dumps(res.to_dict()))
    want = expected_report(gold, (2, 4), ddp=ddp, cert=cert)
    assert_figures(d["columns"], want, "columns")
    assert_figures(d["overall"], flat(want["ddp"]["overall"]), "overall")
    code, text, _ = run_cli(capsys, str(gold_file), "--tail", "2,4", "--gold-scope", "ddp", "-f", "text", "-q")
    assert code == 0
    check_text_against_json(text, d)


def test_over_estimate_without_antecedent_names_no_sentence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    # an unlinked "It" (DDP's default distance 1, antecedent kind 'none', antecedent sentence -1) in f1 s2,
    # where gold is 0: the text report said "-> none None (s-1)", a sentence that does not exist
    gold_file = tmp_path / "story.conllu"
    gold_file.write_text(STORY, encoding="utf-8")
    anchors = [*ANCHORS, {"document_id": "f1", "segment_id": 2, "kind": "pronoun", "label": "NEUT_SG", "text": "It",
                          "antecedent_kind": "none", "antecedent_text": None, "antecedent_sentence": -1,
                          "distance_sentences": 1, "distance_certified": 0}]
    fake_run(monkeypatch, anchors=anchors)
    code, out, _ = run_cli(capsys, str(gold_file), "-f", "text", "-q")
    assert code == 0
    assert "  f1 s2: ddp 1 > gold 0; pronoun 'It' [NEUT_SG] -> no antecedent" in out and "(s-1)" not in out
    assert "  n1 s2: ddp 3 > gold 2; pronoun 'him' [MASC_SG] -> entity 'John Smith' (s0)" in out
