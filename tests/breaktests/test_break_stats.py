"""Break tests of ``ddp stats`` (issue 7): hostile tables and options, one row each.

Every row runs ``ddp stats ...`` in a fresh folder and checks the harness promises (exit code,
one stderr line matching the pattern, no traceback, inputs unchanged, no stray files). The
tables are small CSVs built below; ``BIG`` (300 documents x 8 systems) is large enough that
10**9 replicates cannot be done in the time limit.
"""
from __future__ import annotations

import random

from ._harness import Case, parametrize, run_case

HEADER = "document_id,segment_id,system,annotator,condition,score\n"


def _table(n_docs: int = 6, n_sys: int = 3, n_seg: int = 2, conds: tuple[str, ...] = ("A", "B"),
           score=None, seed: int = 0) -> str:  # type: ignore[no-untyped-def]
    rng = random.Random(seed)
    rows = [HEADER.rstrip("\n")]
    for c in conds:
        for d in range(n_docs):
            for g in range(n_seg):
                for s in range(n_sys):
                    v = score(c, d, g, s) if score else round(50 + 10 * s + rng.gauss(0, 5), 2)
                    rows.append(f"d{d},{g},sys{s},ann{g % 2},{c},{v}")
    return "\n".join(rows) + "\n"


T = _table()
BIG = _table(n_docs=300, n_sys=8, n_seg=1)
HUGE = _table(score=lambda c, d, g, s: 1e308 if (d + s) % 2 else -1e308)
HUGE_ONE = _table(score=lambda c, d, g, s: 1e308 if (c, d, g, s) == ("B", 2, 1, 1) else 50 + s)
NAN = _table(score=lambda c, d, g, s: "NaN")
ONE_SYS = _table(n_sys=1)
ONE_DOC = _table(n_docs=1)
ONE_PAIR = HEADER + "d0,0,s0,a0,A,1\nd0,0,s0,a0,B,2\n"
# the gate row: B = A + 10 on every item (zero variance: the 90% CI is [-10, -10]), so paired TOST
# within +-3 fails by a clear margin
SHIFTED = _table(score=lambda c, d, g, s: 50 + s + d + g + (10 if c == "B" else 0) + 0.1 * ((d * 7 + g * 3 + s) % 5))

#: deterministic limits for the budget rows (the defaults depend on the machine)
BUDGET = {"DDPCORE_MAX_MEMORY": "4G", "DDPCORE_MAX_SECONDS": "30"}

CASES = [
    # ---- 1. resampling budget: refused before allocating / after timing the first block
    Case("tau-huge-n-boot-memory", ("stats", "tau", "t.csv", "--a", "A", "--b", "B", "--n-boot", "1000000000"),
         2, r"\[D362\] bootstrap_tau .*n_boot=1,000,000,000 needs about .*GiB of memory.*lower --n-boot to at most",
         files={"t.csv": T}, env=BUDGET, timeout=60),
    Case("tau-huge-n-boot-max-memory-flag", ("stats", "tau", "t.csv", "--a", "A", "--b", "B", "--n-boot", "100000000",
                                             "--max-memory", "100M"),
         2, r"\[D362\].*over the limit of 100\.0 MiB", files={"t.csv": T}, timeout=60),
    Case("cluster-bootstrap-huge-n-boot-time", ("stats", "cluster", "big.csv", "--in", "A", "--n-boot", "1000000000"),
         2, r"\[D363\] cluster_systems\(method='bootstrap'\) with n_boot=1,000,000,000 would take about .* per "
            r"replicate, measured on the first .*lower --n-boot to about", files={"big.csv": BIG}, env=BUDGET,
         timeout=60),
    Case("cluster-permutation-huge-n-boot-time", ("stats", "cluster", "big.csv", "--in", "A", "--method", "permutation",
                                                  "--n-boot", "1000000000", "--no-pair-annotator"),
         2, r"\[D363\] cluster_systems\(method='permutation'\).*would take about", files={"big.csv": BIG},
         env=BUDGET, timeout=60),
    Case("cluster-permutation-max-seconds-flag", ("stats", "cluster", "big.csv", "--in", "A", "--method",
                                                  "permutation", "--n-boot", "100000000", "--max-seconds", "1",
                                                  "--no-pair-annotator"),
         2, r"\[D363\].*over the limit of 1\.0 s", files={"big.csv": BIG}, timeout=60),
    # the Wilcoxon methods do not resample: --n-boot is ignored and the run is quick
    Case("cluster-wmt25-huge-n-boot-ignored", ("stats", "cluster", "t.csv", "--in", "A", "--method", "wmt25",
                                               "--n-boot", "1000000000"), 0, "", files={"t.csv": T}, timeout=60),
    Case("cluster-wmt24-huge-n-boot-ignored", ("stats", "cluster", "t.csv", "--in", "A", "--method", "wmt24",
                                               "--n-boot", "1000000000"), 0, "", files={"t.csv": T}, timeout=60),
    Case("tau-negative-n-boot", ("stats", "tau", "t.csv", "--a", "A", "--b", "B", "--n-boot", "-5"),
         2, r"\[D311\] n_boot must be at least 1, got -5 \(--n-boot\)", files={"t.csv": T}),
    Case("cluster-negative-n-boot", ("stats", "cluster", "t.csv", "--in", "A", "--n-boot", "-5"),
         2, r"\[D351\] n_boot must be an integer >= 1", files={"t.csv": T}),
    Case("tau-zero-n-boot", ("stats", "tau", "t.csv", "--a", "A", "--b", "B", "--n-boot", "0"),
         2, r"\[D311\] n_boot must be at least 1", files={"t.csv": T}),
    Case("tau-negative-seed", ("stats", "tau", "t.csv", "--a", "A", "--b", "B", "--seed", "-1"),
         2, r"\[D311\] seed must be an integer in \[0, 2\*\*128\), got -1 \(--seed\)", files={"t.csv": T}),
    Case("cluster-seed-too-large", ("stats", "cluster", "t.csv", "--in", "A", "--seed", str(2**130)),
         2, r"\[D311\] seed must be an integer", files={"t.csv": T}),
    Case("permutation-negative-seed", ("stats", "cluster", "t.csv", "--in", "A", "--method", "permutation",
                                       "--seed", "-3"), 2, r"\[D311\] seed", files={"t.csv": T}),
    Case("bad-max-memory", ("stats", "tau", "t.csv", "--a", "A", "--b", "B", "--max-memory", "lots"),
         2, r"\[D311\] memory limit must be a size such as 8G", files={"t.csv": T}),
    Case("negative-max-seconds", ("stats", "cluster", "t.csv", "--in", "A", "--max-seconds", "-1"),
         2, r"\[D311\] time limit must be >= 0", files={"t.csv": T}),
    # ---- 2. finite but huge scores: refused, never inf / nan with exit 0
    Case("tost-1e308", ("stats", "tost", "h.csv", "--a", "A", "--b", "B", "--margin", "3"),
         3, r"\[D360\] h\.csv, row 1, column 'score': score -1e\+308 is too large in magnitude.*rescale",
         files={"h.csv": HUGE}),
    Case("tost-independent-1e308", ("stats", "tost", "h.csv", "--a", "A", "--b", "B", "--margin", "3",
                                    "--independent"), 3, r"\[D360\]", files={"h.csv": HUGE}),
    Case("alpha-1e308", ("stats", "alpha", "h.csv", "--in", "A"), 3, r"\[D360\]", files={"h.csv": HUGE}),
    Case("alpha-coder-condition-1e308", ("stats", "alpha", "h.csv", "--coder", "condition"), 3, r"\[D360\]",
         files={"h.csv": HUGE}),
    Case("tau-1e308-one-row", ("stats", "tau", "h.csv", "--a", "A", "--b", "B"),
         # data row 53 = 36 rows of condition A + (d2, segment 1, sys1) = 2 * 6 + 1 * 3 + 1 = 16th row of B, 1-based
         3, r"\[D360\] h\.csv, row 53, column 'score': score 1e\+308", files={"h.csv": HUGE_ONE}),
    Case("cluster-1e308", ("stats", "cluster", "h.csv", "--in", "A", "--method", "wmt25"), 3, r"\[D360\]",
         files={"h.csv": HUGE}),
    # ---- 3. mixed conditions where one is assumed
    Case("alpha-mixed-conditions", ("stats", "alpha", "t.csv"),
         2, r"\[D361\] the table holds 2 conditions \('A', 'B'\).*choose one with --in COND", files={"t.csv": T}),
    Case("cluster-mixed-conditions", ("stats", "cluster", "t.csv"),
         2, r"^(?!.*condition_value).*\[D361\].*'A', 'B'.*--in COND", files={"t.csv": T}),
    Case("alpha-unknown-condition", ("stats", "alpha", "t.csv", "--in", "C"),
         3, r"\[D305\] condition 'C' has no rows; conditions in the table: A, B", files={"t.csv": T}),
    # ---- 4. consistent CLI: deprecated aliases warn (one line each), gates say what failed
    Case("deprecated-column-alias", ("stats", "cluster", "t.csv", "--in", "A", "--method", "wmt25",
                                     "--document", "document_id"),
         0, r"warning: --document is deprecated .*use --document-col", files={"t.csv": T}),
    Case("deprecated-alias-bad-column", ("stats", "tau", "t.csv", "--a", "A", "--b", "B", "--score", "points"),
         3, r"\[D301\].*score column 'points' is missing.*--score-col", files={"t.csv": T}, allow_warnings=True),
    Case("tost-gate-fails-one-line", ("stats", "tost", "s.csv", "--a", "A", "--b", "B", "--margin", "3",
                                      "--fail-on", "not-equivalent"),
         1, r"^ddp stats tost: gate not-equivalent failed: 90% CI of mean\(A - B\) \[-10\.000, -10\.000\] "
            r"not inside \(-3, 3\)$", files={"s.csv": SHIFTED}),
    Case("alpha-gate-fails-one-line", ("stats", "alpha", "s.csv", "--coder", "condition", "--min-alpha", "0.99",
                                       "--fail-on", "below-min"),
         1, r"gate below-min failed: alpha -?\d\.\d{3} is below --min-alpha 0\.99", files={"s.csv": SHIFTED}),
    # ---- other hostile inputs
    Case("empty-table", ("stats", "tau", "e.csv", "--a", "A", "--b", "B"), 3, r"\[D309\].*no rows",
         files={"e.csv": HEADER}),
    Case("all-nan-scores", ("stats", "tost", "n.csv", "--a", "A", "--b", "B", "--margin", "3"),
         3, r"\[D302\] n\.csv, row 1, column 'score': 72 missing", files={"n.csv": NAN}),
    Case("all-nan-scores-omitted", ("stats", "alpha", "n.csv", "--in", "A", "--nan-policy", "omit"),
         3, r"\[D309\].*every score is missing", files={"n.csv": NAN}),
    Case("one-system-tau", ("stats", "tau", "o.csv", "--a", "A", "--b", "B"), 3, r"\[D310\].*at least 2 systems",
         files={"o.csv": ONE_SYS}),
    Case("one-system-cluster", ("stats", "cluster", "o.csv", "--in", "A", "--method", "permutation"),
         3, r"\[D354\].*at least 2 systems", files={"o.csv": ONE_SYS}),
    Case("one-document-tau", ("stats", "tau", "o.csv", "--a", "A", "--b", "B"), 3, r"\[D364\].*single resampling document", files={"o.csv": ONE_DOC}),
    Case("one-document-alpha", ("stats", "alpha", "o.csv", "--in", "A"), 3, r"\[D314\]",
         files={"o.csv": ONE_DOC}),
    Case("one-pair-tost", ("stats", "tost", "p.csv", "--a", "A", "--b", "B", "--margin", "3"),
         3, r"\[D364\] TOST of A vs B with n = 1 is undefined", files={"p.csv": ONE_PAIR}),
    Case("same-condition-twice", ("stats", "tau", "t.csv", "--a", "A", "--b", "A"), 2, r"\[D311\].*must differ",
         files={"t.csv": T}),
    Case("missing-table", ("stats", "alpha", "nope.csv", "--in", "A"), 3, r"nope\.csv", files={}),
]


@parametrize(CASES)
def test_break_stats(case: Case, tmp_path) -> None:  # type: ignore[no-untyped-def]
    proc = run_case(case, tmp_path)
    if case.exit == 0:
        assert proc.stdout.strip(), "a successful run prints its result"
