"""Break tests of ``ddp blindness`` (issue 19, "no wrong answer with exit 0"): one row per hostile case.

Rows follow tests/breaktests/_harness.py: exit code, one stderr line matching the pattern on failure
(a run that succeeds may print ``warning:`` lines; the pattern is searched among them), no traceback,
inputs unchanged, no stray files. Every fallback that changes what is measured is a warning on a
successful run and a coded error under ``--strict``; resample counts are checked against the budget.

The score tables are small CSVs built below (deterministic, :mod:`random` with a fixed seed):

* ``_scores(source=True)``: 12 documents x 3 segments x 4 systems, DOC and MIX; each MIX row has a
  nominal system and the ``source_system`` whose translation it holds, and the "metric" scores the
  translation (quality of the source system + segment effect + small noise), so it is blind by
  construction when rows are attributed to their source, and reshuffles the ranking when they are
  attributed nominally (the issue's verdict flip).
* ``source=False``: the same table without the ``source_system`` column.
"""
from __future__ import annotations

import json
import random
import re
from pathlib import Path

from ._harness import Case, parametrize, run_case

SYSTEMS = ("A", "B", "C", "D")
QUALITY = {"A": 40.0, "B": 50.0, "C": 60.0, "D": 70.0}


def _scores(*, source: bool = True, n_docs: int = 12, n_seg: int = 3, systems: tuple[str, ...] = SYSTEMS,
            const: float | None = None, null_source_doc: int | None = None, nan_doc: int | None = None,
            mix_only_doc: bool = False, seed: int = 0) -> str:
    rng = random.Random(seed)
    head = "document_id,segment_id,system,condition,score" + (",source_system" if source else "")
    rows = [head]
    for d in range(n_docs):
        for g in range(n_seg):
            seg_eff = rng.gauss(0, 5)
            for k, sy in enumerate(systems):
                # DOC: the system's own translation
                v = const if const is not None else round(QUALITY[sy] + seg_eff + rng.gauss(0, 1), 3)
                rows.append(f"d{d},{g},{sy},DOC,{v}" + ("," if source else ""))
                # MIX: nominal system sy holds the translation of another system (a derangement)
                src = systems[(k + 1 + (d + g) % (len(systems) - 1)) % len(systems)] if len(systems) > 1 else sy
                w = const if const is not None else round(QUALITY[src] + seg_eff + rng.gauss(0, 1), 3)
                if nan_doc == d:
                    w = "NaN"
                cell = "" if null_source_doc == d else src
                rows.append(f"d{d},{g},{sy},MIX,{w}" + (f",{cell}" if source else ""))
    if mix_only_doc:  # a MIX document nobody scored under DOC
        for g in range(n_seg):
            rows.append(f"dX,{g},A,MIX,55.0" + (",B" if source else ""))
    return "\n".join(rows) + "\n"


SRC = _scores()
NOSRC = _scores(source=False)
CONST = _scores(const=50.0)
BIG = _scores(n_docs=60)
BL = ("blindness", "s.csv", "--margin", "3", "--n-boot", "200", "--n-boot-cluster", "50")
#: deterministic limits for the budget rows (the defaults depend on the machine)
BUDGET = {"DDPCORE_MAX_MEMORY": "4G", "DDPCORE_MAX_SECONDS": "30"}

CASES = [
    # ---- 1. the --attribute auto fallback: said on stderr, fatal with --strict; explicit columns must exist
    Case("attribute-auto-fallback-warns", BL, 0,
         r"^ddp blindness: warning: --attribute auto fell back to nominal: the table has no 'source_system' column",
         files={"s.csv": NOSRC}),
    Case("attribute-auto-fallback-strict", BL + ("--strict",), 3,
         r"^ddp blindness: error: \[D700\] --attribute auto fell back to nominal.*--strict makes this an error",
         files={"s.csv": NOSRC}),
    # --attribute nominal chosen explicitly: no fallback, so --strict has nothing to refuse; the verdict is
    # sensitive (the MIX scores are other systems' translations, so the nominal ranking is reshuffled)
    Case("attribute-nominal-explicit-strict", BL + ("--strict", "--attribute", "nominal", "--fail-on", "sensitive"),
         1, r"^ddp blindness: gate sensitive failed: verdict sensitive", files={"s.csv": NOSRC}),
    Case("attribute-source-column-missing", BL + ("--attribute", "source"), 3,
         r"\[D301\] s\.csv: the source-system column 'source_system' \(--source-system-col\) is missing; "
         r"available columns: document_id, segment_id, system, condition, score$", files={"s.csv": NOSRC}),
    Case("source-system-col-explicit-missing", BL + ("--source-system-col", "src"), 3,
         r"\[D301\].*'src' \(--source-system-col\) is missing; available columns: .*source_system",
         files={"s.csv": SRC}),
    Case("source-system-partly-null-warns", BL, 0,
         r"warning: 12 of 144 MIX rows have no 'source_system' value; they are scored for their system column",
         files={"s.csv": _scores(null_source_doc=4)}),
    Case("source-system-partly-null-strict", BL + ("--strict",), 3, r"\[D700\] 12 of 144 MIX rows have no",
         files={"s.csv": _scores(null_source_doc=4)}),
    Case("spans-col-explicit-missing", BL + ("--spans-col", "spans"), 3,
         r"\[D301\].*error-spans column 'spans' \(--spans-col\) is missing; available columns:",
         files={"s.csv": SRC}),
    Case("seg-explicit-missing", BL + ("--seg", "ISO"), 3,
         r"\[D705\].*no row has condition 'ISO' \(--seg\); condition values found: 'DOC', 'MIX'",
         files={"s.csv": SRC}),
    Case("seg-equals-a", BL + ("--seg", "DOC"), 2, r"\[D510\] --seg 'DOC' must be a condition other than",
         files={"s.csv": SRC}),
    Case("exclude-system-typo", BL + ("--exclude-system", "a"), 3,
         r"\[D704\].*--exclude-system 'a': no such system in the table.*systems: A, B, C, D",
         files={"s.csv": SRC}),
    # ---- 2. every resample count of blindness within the budget, naming its flag
    Case("n-boot-cluster-huge-time", ("blindness", "s.csv", "--margin", "3", "--n-boot", "200",
                                      "--n-boot-cluster", "1000000000"), 2,
         r"\[D363\] blindness clusters DOC \(--n-boot-cluster 1,000,000,000\): .*would take about .*lower "
         r"--n-boot-cluster to about", files={"s.csv": BIG}, env=BUDGET, timeout=60),
    Case("n-boot-cluster-permutation-huge-time", ("blindness", "s.csv", "--margin", "3", "--n-boot", "200",
                                                  "--method", "permutation", "--n-boot-cluster", "1000000000"), 2,
         r"\[D363\] blindness clusters DOC \(--n-boot-cluster .*lower --n-boot-cluster to about",
         files={"s.csv": BIG}, env=BUDGET, timeout=60),
    # a budget the tau stage (--n-boot 50) keeps even on a loaded machine, which the clusters' 1e9 resamples
    # cannot: the message names the clusters' flag and the budget (at 2 s a busy CI machine ran out at tau)
    Case("n-boot-cluster-max-seconds-flag", ("blindness", "s.csv", "--margin", "3", "--n-boot", "50",
                                             "--n-boot-cluster", "1000000000", "--max-seconds", "20"), 2,
         r"\[D363\].*lower --n-boot-cluster.*share of the 20\.0 s battery budget", files={"s.csv": BIG},
         timeout=60),
    Case("n-boot-huge-memory", ("blindness", "s.csv", "--margin", "3", "--n-boot", "1000000000"), 2,
         r"\[D362\] blindness tau \(--n-boot 1,000,000,000\): .*lower --n-boot to at most", files={"s.csv": BIG},
         env=BUDGET, timeout=60),
    Case("n-boot-huge-max-memory-flag", ("blindness", "s.csv", "--margin", "3", "--n-boot", "100000000",
                                         "--max-memory", "100M"), 2, r"\[D362\].*over the limit of 100\.0 MiB",
         files={"s.csv": BIG}, timeout=60),
    Case("n-boot-huge-time", ("blindness", "s.csv", "--margin", "3", "--n-boot", "100000000"), 2,
         r"\[D363\] blindness tau \(--n-boot 100,000,000\).*lower --n-boot to about", files={"s.csv": BIG},
         env=BUDGET, timeout=60),
    Case("n-boot-cluster-zero", BL[:-1] + ("0",), 2, r"\[D311\] n_boot must be at least 1, got 0 \(--n-boot-cluster\)",
         files={"s.csv": SRC}),
    Case("n-boot-cluster-float", BL[:-1] + ("1e9",), 2, r"argument --n-boot-cluster: invalid int value: '1e9'",
         files={"s.csv": SRC}),
    Case("max-seconds-negative", BL + ("--max-seconds", "-1"), 2, r"\[D311\] time limit must be >= 0",
         files={"s.csv": SRC}),
    # the Wilcoxon methods do not resample: --n-boot-cluster is ignored and the run is quick
    Case("n-boot-cluster-wmt25-ignored", ("blindness", "s.csv", "--margin", "3", "--n-boot", "200", "--method",
                                          "wmt25", "--n-boot-cluster", "1000000000"), 0, "", files={"s.csv": SRC},
         env=BUDGET, timeout=60),
    # ---- 3. constant scores: tau undefined, a defined result in every format (not D999), fatal with --strict
    Case("constant-scores-json", BL, 0, r"warning: Kendall tau between the DOC and MIX rankings is undefined "
         r"\(all DOC and all MIX system means are tied\)", files={"s.csv": CONST}),
    Case("constant-scores-text", BL + ("-f", "text"), 0, r"warning: Kendall tau .* is undefined",
         files={"s.csv": CONST}),
    Case("constant-scores-markdown", BL + ("-f", "markdown"), 0, r"warning: Kendall tau .* is undefined",
         files={"s.csv": CONST}),
    Case("constant-scores-gate-blind-passes", BL + ("-f", "text", "--fail-on", "blind"), 0, "",
         files={"s.csv": CONST}, allow_warnings=True),
    Case("constant-scores-strict", BL + ("--strict", "-f", "text"), 3,
         r"\[D702\] Kendall tau between the DOC and MIX rankings is undefined", files={"s.csv": CONST}),
    # ---- 4. other silent paths: NaN scores, unpaired keys, a single system
    Case("nan-scores-raise", BL, 3, r"\[D302\] s\.csv, row \d+, column 'score': 12 missing \(null/NaN\) score",
         files={"s.csv": _scores(nan_doc=2)}),
    Case("nan-scores-omit-warns", BL + ("--nan-policy", "omit"), 0,
         r"warning: 12 row\(s\) with a missing \(null/NaN\) score dropped \(--nan-policy omit\)",
         files={"s.csv": _scores(nan_doc=2)}),
    Case("nan-scores-omit-strict", BL + ("--nan-policy", "omit", "--strict"), 3, r"\[D703\] 12 row\(s\) with a missing",
         files={"s.csv": _scores(nan_doc=2)}),
    Case("unpaired-mix-keys-warn", BL, 0, r"warning: 3 MIX \(document, segment, system\) key\(s\) have no DOC row "
         r"and are left out of the paired TOST \(144 pairs used\)", files={"s.csv": _scores(mix_only_doc=True)}),
    Case("unpaired-mix-keys-strict", BL + ("--strict",), 3, r"\[D703\] 3 MIX \(document, segment, system\) key",
         files={"s.csv": _scores(mix_only_doc=True)}),
    Case("one-system-warns", BL + ("--attribute", "nominal"), 0,
         r"warning: 1 DOC system\(s\): no ranking and no clusters; the verdict rests on the paired TOST alone",
         files={"s.csv": _scores(source=False, systems=("A",))}),
    Case("one-system-strict", BL + ("--attribute", "nominal", "--strict"), 3, r"\[D702\] 1 DOC system\(s\)",
         files={"s.csv": _scores(source=False, systems=("A",))}),
    # the warnings reach the -o file too, which is written once
    Case("fallback-with-output", BL + ("-o", "r.json"), 0, r"warning: --attribute auto fell back",
         files={"s.csv": NOSRC}, outputs=("r.json", "r.json.signature.json")),
]

@parametrize(CASES)
def test_break_blindness(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def _run(tmp_path: Path, argv: tuple[str, ...], table: str) -> tuple[str, str]:
    proc = run_case(Case("inline", argv, 0, "", files={"s.csv": table}), tmp_path)
    return proc.stdout.decode(), proc.stderr.decode()


def test_constant_scores_agree_across_formats(tmp_path: Path) -> None:
    """-f json / text / markdown give the same defined result: tau undefined with its reason, verdict
    inconclusive (not blind: the rankings cannot be compared), no NaN printed."""
    out, err = _run(tmp_path / "j", BL, CONST)
    payload = json.loads(out)
    r = payload["evidence"]["ranking"]
    assert payload["verdict"] == "inconclusive" and r["tau"] is None
    assert r["tau_undefined_reason"] == "all DOC and all MIX system means are tied"
    assert any("undefined" in w for w in payload["warnings"]) and "NaN" not in out
    for fmt, sub in (("text", "t"), ("markdown", "m")):
        out, err2 = _run(tmp_path / sub, BL + ("-f", fmt), CONST)
        assert "undefined (all DOC and all MIX system means are tied)" in out and "inconclusive" in out
        assert not re.search(r"\bnan\b", out, re.I) and err2 == err


def test_fallback_flips_the_verdict_and_says_so(tmp_path: Path) -> None:
    """The issue's case: with source_system the blind-by-construction metric is blind; without the
    column auto falls back to nominal and says sensitive, with the warning on stderr and in the JSON
    (attribute_used, attribute_reason, warnings, signature)."""
    out, err = _run(tmp_path / "s", BL, SRC)
    src = json.loads(out)
    assert src["verdict"] == "blind" and src["attribute_used"] == "source" and err == ""
    assert src["attribute_reason"].startswith("--attribute auto: MIX rows are scored for the system that produced")
    assert src["warnings"] == [] and src["signature"]["attribute"] == "source"
    out, err = _run(tmp_path / "n", BL, NOSRC)
    nom = json.loads(out)
    assert nom["verdict"] == "sensitive" and nom["attribute_used"] == "nominal"
    assert nom["attribute_reason"].startswith("--attribute auto fell back to nominal")
    assert nom["signature"]["attribute"] == "nominal" and nom["signature"]["attribute_requested"] == "auto"
    assert err.splitlines() == [f"ddp blindness: warning: {w}" for w in nom["warnings"]] and len(nom["warnings"]) == 1
