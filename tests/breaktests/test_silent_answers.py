"""Issue 19, "No wrong answer with exit 0": damaged inputs never change the answer in silence.

A property test over every ``ddp stats`` subcommand (tost, tau, cluster, alpha, compare),
``ddp blindness`` and ``ddp stratify``. Hypothesis generates a small, clean score table (and,
for ``stratify``, a ``ddp profile``-shaped segment table written by hand); the command runs on
it once (the *base* run, which must exit 0 with no ``warning`` on stderr), then on damaged
copies of the same table, with the same command line:

(a) a column dropped, (b) a column renamed, (c) ids altered on one side (a document or segment
id changed in some rows of one condition / annotator / system, or, for the join of
``stratify``, in only one of the two inputs; the new id is either a fresh one or one that
already exists), (d) rows duplicated or rows removed.

Each damaged run must either give the same answer as the base run (every value of the JSON
result outside ``signature``, floats to 1e-9), or exit 2 or 3 (usage / bad data; exit 4 is an
internal error and fails), or print a *new* line containing ``warning`` on stderr. Never a
different answer in silence, never a traceback, never exit 1 (no ``--fail-on`` gate is used).

Everything goes through the CLI entry point ``ddpcore.cli.main.main`` in-process (stdout and
stderr redirected), so the test does not depend on where the package's modules live. The
checker is tested on its own (:func:`test_checker_*`): a planted silent change (scores edited)
must be classified ``silent``, and planted outcomes (exit 4, a traceback, exit 1) must fail.

Known silent wrong answers found by this test are listed in ``KNOWN_SILENT`` and run as
``xfail(strict=True)`` cases with their exact reproduction (see the bottom of the file).
"""
from __future__ import annotations

import contextlib
import csv
import fnmatch
import io
import json
import math
import os
import random
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddpcore.cli.main import main

# --------------------------------------------------------------------------------------------
# running the CLI and judging a run
# --------------------------------------------------------------------------------------------

SEED = "7"
N_BOOT = "200"


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


def run_cli(argv: list[str], cwd: Path) -> Run:
    """``ddp ARGV`` in-process with ``cwd`` as working directory; stdout/stderr captured."""
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(argv))
            except SystemExit as exc:  # argparse errors
                code = exc.code if isinstance(exc.code, int) else 2
    finally:
        os.chdir(old)
    return Run(int(code), out.getvalue(), err.getvalue())


def answer(payload):
    """The result without its ``signature`` (settings, file names, join accounting)."""
    if isinstance(payload, dict):
        return {k: answer(v) for k, v in payload.items() if k != "signature"}
    if isinstance(payload, list):
        return [answer(v) for v in payload]
    return payload


def first_difference(a, b, path: str = "$") -> str | None:
    """Where two JSON answers differ (floats to 1e-9 relative), or None when they agree."""
    if isinstance(a, bool) or isinstance(b, bool):
        return None if a is b else f"{path}: {a!r} != {b!r}"
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        fa, fb = float(a), float(b)
        if math.isnan(fa) and math.isnan(fb):
            return None
        return None if math.isclose(fa, fb, rel_tol=1e-9, abs_tol=1e-12) else f"{path}: {a!r} != {b!r}"
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return f"{path}: keys {sorted(set(a) ^ set(b))} differ"
        for k in a:
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{path}: {a!r} != {b!r}"


def warning_lines(err: str) -> set[str]:
    return {line for line in err.splitlines() if "warning" in line.lower()}


#: outcomes of a damaged run that keep the promise
OK = ("same", "refused", "warned")


def judge(base: Run, mutated: Run) -> tuple[str, str]:
    """Classify a damaged run against the base run: (kind, detail).

    kind is ``same`` (same answer), ``refused`` (exit 2/3), ``warned`` (a new warning line),
    or a failure: ``silent`` (another answer, exit 0, no new warning), ``internal`` (exit 4),
    ``traceback``, ``bad-exit`` (any other exit code), ``bad-output`` (exit 0, no JSON).
    """
    if "Traceback (most recent call last)" in mutated.err or "Traceback (most recent call last)" in mutated.out:
        return "traceback", mutated.err[-2000:]
    if mutated.code == 4:
        return "internal", mutated.err.strip()
    if mutated.code in (2, 3):
        return "refused", mutated.err.strip()
    if mutated.code != 0:
        return "bad-exit", f"exit {mutated.code}: {mutated.err.strip()}"
    new = warning_lines(mutated.err) - warning_lines(base.err)
    if new:
        return "warned", sorted(new)[0]
    try:
        got = answer(json.loads(mutated.out))
    except ValueError:
        return "bad-output", mutated.out[:500]
    diff = first_difference(answer(json.loads(base.out)), got)
    if diff is None:
        return "same", ""
    return "silent", diff


# --------------------------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------------------------

@dataclass
class Table:
    columns: list[str]
    rows: list[dict]

    def copy(self) -> "Table":
        return Table(list(self.columns), [dict(r) for r in self.rows])

    def write(self, path: Path) -> None:
        with path.open("w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=self.columns, extrasaction="ignore")
            w.writeheader()
            w.writerows(self.rows)


CONDITIONS = ("DOC", "MIX")


def long_table(rng: random.Random, n_docs: int, segs: list[int], n_systems: int, n_annotators: int,
               *, source_system: bool = False) -> Table:
    """One row per (document, segment, system, annotator, condition); systems 10 points apart."""
    cols = ["document_id", "segment_id", "system", "annotator", "condition", "score"]
    if source_system:
        cols.append("source_system")
    rows = []
    for d in range(n_docs):
        for s in range(segs[d]):
            for k in range(n_systems):
                truth = 40 + 10 * k + rng.gauss(0, 4)
                for a in range(n_annotators):
                    for c in CONDITIONS:
                        row = dict(document_id=f"doc{d}", segment_id=s, system=f"sys{k}", annotator=f"ann{a}",
                                   condition=c, score=round(truth + rng.gauss(0, 2), 1))
                        if source_system:
                            row["source_system"] = f"sys{k}"
                        rows.append(row)
    return Table(cols, rows)


def compare_table(rng: random.Random, n_docs: int, segs: list[int], n_systems: int) -> Table:
    rows = []
    for d in range(n_docs):
        for s in range(segs[d]):
            for k in range(n_systems):
                rows.append(dict(document_id=f"doc{d}", segment_id=s, system=f"sys{k}",
                                 score=round(40 + 6 * k + rng.gauss(0, 5), 2)))
    return Table(["document_id", "segment_id", "system", "score"], rows)


def profile_table(rng: random.Random, n_docs: int, segs: list[int]) -> Table:
    cols = ["document_id", "segment_id", "domain", "n_sentences", "n_tokens", "n_anchors", "ddp", "first_sentence"]
    rows = []
    for d in range(n_docs):
        for s in range(segs[d]):
            rows.append(dict(document_id=f"doc{d}", segment_id=s, domain="news" if d % 2 else "speech",
                             n_sentences=rng.randint(1, 4), n_tokens=rng.randint(5, 60), n_anchors=rng.randint(0, 5),
                             ddp=rng.choice([0, 0, 1, 2, 3, 4, 7, 9, 16, 20]), first_sentence=f"Sentence {d}.{s}."))
    return Table(cols, rows)


def stratify_scores(rng: random.Random, n_docs: int, segs: list[int], n_systems: int) -> Table:
    rows = []
    for d in range(n_docs):
        for s in range(segs[d]):
            for k in range(n_systems):
                rows.append(dict(document_id=f"doc{d}", segment_id=s, system=f"sys{k}",
                                 score=round(60 + 5 * k + rng.gauss(0, 8), 2)))
    return Table(["document_id", "segment_id", "system", "score"], rows)


# --------------------------------------------------------------------------------------------
# damage
# --------------------------------------------------------------------------------------------

def drop_column(t: Table, col: str) -> Table:
    u = t.copy()
    u.columns.remove(col)
    for r in u.rows:
        r.pop(col, None)
    return u


def rename_column(t: Table, col: str) -> Table:
    u = t.copy()
    new = col + "_renamed"
    u.columns[u.columns.index(col)] = new
    for r in u.rows:
        r[new] = r.pop(col)
    return u


def alter_ids(t: Table, id_col: str, side_col: str | None, side, old, new, picks: list[int]) -> Table:
    """Change ``id_col`` from ``old`` to ``new`` in the rows (of one side) that hold ``old``.

    ``picks`` chooses which of those rows (indices modulo their count; empty: all of them).
    """
    u = t.copy()
    hits = [i for i, r in enumerate(u.rows) if r[id_col] == old and (side_col is None or r[side_col] == side)]
    chosen = sorted({hits[p % len(hits)] for p in picks}) if picks else hits
    for i in chosen:
        u.rows[i][id_col] = new
    return u


def duplicate_rows(t: Table, picks: list[int]) -> Table:
    u = t.copy()
    for p in picks:
        u.rows.append(dict(u.rows[p % len(t.rows)]))
    return u


def remove_rows(t: Table, picks: list[int]) -> Table:
    u = t.copy()
    gone = {p % len(t.rows) for p in picks}  # picks in range are row indices
    u.rows = [r for i, r in enumerate(u.rows) if i not in gone]
    return u



@dataclass(frozen=True)
class Damage:
    kind: str  # drop:COL, rename:COL, ids:COL:fresh|existing, dup, remove
    label: str  # what was done, for the failure message
    file: str  # which input file it replaces
    table: Table


@st.composite
def damage_plan(draw, tables: dict[str, Table], side_col: str | None, sides: list,
                id_cols=("document_id", "segment_id")) -> list[Damage]:
    """One damaged copy per kind of damage (drop, rename, ids, duplicate, remove) of one input."""
    plan = []

    def pick_file(label):
        return draw(st.sampled_from(sorted(tables)), label=f"{label}: file") if len(tables) > 1 else next(iter(tables))

    def picks(n):
        return st.lists(st.integers(0, 10 * n), min_size=1, max_size=3)

    f = pick_file("drop")
    col = draw(st.sampled_from(tables[f].columns), label="drop")
    plan.append(Damage(f"drop:{col}", f"drop column {col!r} of {f}", f, drop_column(tables[f], col)))

    f = pick_file("rename")
    col = draw(st.sampled_from(tables[f].columns), label="rename")
    plan.append(Damage(f"rename:{col}", f"rename column {col!r} of {f} to {col + '_renamed'!r}", f,
                       rename_column(tables[f], col)))

    f = pick_file("ids")
    t = tables[f]
    id_col = draw(st.sampled_from(list(id_cols)), label="id column")
    values = sorted({r[id_col] for r in t.rows}, key=str)
    old = draw(st.sampled_from(values), label="old id")
    others = [v for v in values if v != old]
    mode = draw(st.sampled_from(["fresh", "existing"] if others else ["fresh"]), label="new id")
    new = ("doc_x" if id_col == "document_id" else 99) if mode == "fresh" else draw(st.sampled_from(others))
    side = draw(st.sampled_from(sides), label="side") if side_col else None
    some = draw(st.one_of(st.just([]), picks(len(t.rows))), label="which rows")
    where = f" where {side_col} == {side!r}" if side_col else ""
    plan.append(Damage(f"ids:{id_col}:{mode}",
                       f"{f}: {id_col} {old!r} -> {new!r} in {'all' if not some else f'picks {some} of the'} rows"
                       f"{where} holding {old!r}", f, alter_ids(t, id_col, side_col, side, old, new, some)))

    f = pick_file("duplicate")
    dup = draw(picks(len(tables[f].rows)), label="duplicate")
    plan.append(Damage("dup", f"{f}: duplicate rows {sorted({p % len(tables[f].rows) for p in dup})}", f,
                       duplicate_rows(tables[f], dup)))

    # rows removed from one side only (removing whole pairs would leave a valid, smaller table)
    f = pick_file("remove")
    t = tables[f]
    side = draw(st.sampled_from(sides), label="remove: side") if side_col else None
    on_side = [i for i, r in enumerate(t.rows) if side_col is None or r[side_col] == side]
    rem = draw(picks(len(on_side)), label="remove")
    gone = sorted({on_side[p % len(on_side)] for p in rem})
    where = f" (all where {side_col} == {side!r})" if side_col else ""
    plan.append(Damage("remove", f"{f}: remove rows {gone}{where}", f, remove_rows(t, gone)))
    return plan


# --------------------------------------------------------------------------------------------
# the commands
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Command:
    argv: tuple[str, ...]  # ddp arguments; the inputs are t.csv (or p.csv + s.csv for stratify)
    kind: str  # table generator: long (2 annotators), long1 (1 annotator), blind, compare, stratify
    side_col: str | None  # the column that makes the "one side" of an id change
    sides: tuple = ()
    #: damage kinds (fnmatch patterns) left out of the property, with the reason. "exempt": the damaged
    #: table is a valid input of the documented design and its answer rightly differs; "silent": a real
    #: silent path, reproduced by an xfail(strict=True) case of test_known_silent.
    skip: tuple[tuple[str, str], ...] = ()


EXEMPT_REMOVE = ("remove", "exempt: rows removed leave a valid, unbalanced table (this design does not need "
                           "every key in both conditions)")
COMMANDS = {
    "tost": Command(("stats", "tost", "t.csv", "--a", "DOC", "--b", "MIX", "--margin", "3"), "long", "condition",
                    CONDITIONS),
    "tost-independent": Command(
        ("stats", "tost", "t.csv", "--a", "DOC", "--b", "MIX", "--margin", "3", "--independent"), "long",
        "condition", CONDITIONS,
        skip=(("ids:*", "exempt: the independent design does not use the ids"),
              EXEMPT_REMOVE)),
    "tau": Command(("stats", "tau", "t.csv", "--a", "DOC", "--b", "MIX", "--n-boot", N_BOOT, "--seed", SEED),
                   "long", "condition", CONDITIONS,
                   skip=(EXEMPT_REMOVE,)),
    "cluster": Command(("stats", "cluster", "t.csv", "--a", "DOC", "--b", "MIX", "--n-boot", N_BOOT, "--seed", SEED),
                       "long", "condition", CONDITIONS,
                       skip=(EXEMPT_REMOVE,)),
    "cluster-wmt25": Command(
        ("stats", "cluster", "t.csv", "--in", "DOC", "--method", "wmt25", "--min-pairs", "0"), "long", "condition",
        CONDITIONS,
        skip=(("remove", "exempt: the Wilcoxon tests use the shared observations of each pair (documented); the "
                         "thin-pair warning is switched off by --min-pairs 0 on these small tables"),
              ("ids:*", "exempt: as for remove (a changed id leaves some observations without a partner), and "
                        "several rows of one system under one key are averaged (documented)"),
              ("*:annotator", "exempt: without an annotator column the pairing is on (document, segment) with "
                              "the annotators averaged (documented default)"))),
    "alpha": Command(("stats", "alpha", "t.csv", "--in", "DOC"), "long", "annotator", ("ann0", "ann1"),
                     skip=(("remove", "exempt: Krippendorff's alpha takes missing ratings"),
                           ("ids:*:fresh", "exempt: a unit rated by one coder only is a missing rating"))),
    "alpha-condition": Command(("stats", "alpha", "t.csv", "--coder", "condition", "--annotator-col", ""), "long1",
                               "condition", CONDITIONS,
                               skip=(("remove", "exempt: Krippendorff's alpha takes missing ratings"),
                                     ("ids:*:fresh", "exempt: a unit rated by one coder only is a missing rating"))),
    "compare": Command(("stats", "compare", "t.csv", "--baseline", "sys0", "--n-boot", N_BOOT, "--n-ar", N_BOOT,
                        "--seed", SEED), "compare", "system", ("sys0", "sys1", "sys2")),
    "blindness": Command(("blindness", "t.csv", "--margin", "3", "--n-boot", N_BOOT, "--n-boot-cluster", N_BOOT,
                          "--seed", SEED), "blind", "condition", CONDITIONS,
                         skip=(("remove", "exempt: a DOC key without its MIX row is expected under source "
                                          "attribution and only counted (docs/mix-blindness.md)"),
                               ("ids:*:existing", "exempt: several rows per key are averaged (documented: "
                                                  "annotators), and DOC keys left without a MIX row are expected"))),
    "stratify": Command(("stratify", "p.csv", "s.csv", "--score-col", "score", "--by", "system", "--n-boot", N_BOOT,
                         "--seed", SEED), "stratify", None,
                        skip=()),
}


@st.composite
def design(draw, min_docs=3, max_docs=5):
    n_docs = draw(st.integers(min_docs, max_docs), label="documents")
    segs = draw(st.lists(st.integers(1, 3), min_size=n_docs, max_size=n_docs), label="segments per document")
    seed = draw(st.integers(0, 2**32 - 1), label="score seed")
    return n_docs, segs, seed


def make_inputs(kind: str, n_docs: int, segs: list[int], seed: int) -> dict[str, Table]:
    rng = random.Random(seed)
    if kind == "long":
        return {"t.csv": long_table(rng, n_docs, segs, 3, 2)}
    if kind == "long1":
        return {"t.csv": long_table(rng, n_docs, segs, 3, 1)}
    if kind == "blind":
        return {"t.csv": long_table(rng, n_docs, segs, 3, 1, source_system=True)}
    if kind == "compare":
        return {"t.csv": compare_table(rng, n_docs, segs, 3)}
    if kind == "stratify":
        return {"p.csv": profile_table(rng, n_docs, segs), "s.csv": stratify_scores(rng, n_docs, segs, 3)}
    raise ValueError(kind)


def skip_reason(cmd: Command, kind: str) -> str | None:
    for pattern, reason in cmd.skip:
        if fnmatch.fnmatchcase(kind, pattern):
            return reason
    return None


def check_damages(argv, inputs: dict[str, Table], damages: list[Damage]) -> list[str]:
    """Run the base inputs and each damaged input; return the broken promises as messages."""
    with tempfile.TemporaryDirectory(prefix="ddp-silent-") as tmp:
        root = Path(tmp)

        def run_with(files: dict[str, Table]) -> Run:
            for name, t in files.items():
                t.write(root / name)
            return run_cli(list(argv), root)

        base = run_with(inputs)
        assert base.code == 0 and not warning_lines(base.err), \
            f"the base run must be clean: exit {base.code}, stderr {base.err!r}"
        problems = []
        for d in damages:
            got = run_with({**inputs, d.file: d.table})
            kind, detail = judge(base, got)
            if kind not in OK:
                problems.append(f"{kind} [{d.kind}]: {d.label}: {detail}")
        return problems


PROPERTY = settings(max_examples=int(os.environ.get("DDP_SILENT_EXAMPLES", "60")), derandomize=True,
                    deadline=None, database=None, suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("name", sorted(COMMANDS))
@PROPERTY
@given(data=st.data())
def test_no_silent_answer(name, data):
    cmd = COMMANDS[name]
    n_docs, segs, seed = data.draw(design(), label="design")
    inputs = make_inputs(cmd.kind, n_docs, segs, seed)
    plan = data.draw(damage_plan(inputs, cmd.side_col, list(cmd.sides)), label="damage")
    damages = [d for d in plan if skip_reason(cmd, d.kind) is None]
    problems = check_damages(cmd.argv, inputs, damages)
    assert not problems, f"ddp {' '.join(cmd.argv)}:\n" + "\n".join(problems)


# --------------------------------------------------------------------------------------------
# the checker is honest
# --------------------------------------------------------------------------------------------

def _json_run(payload, err: str = "", code: int = 0) -> Run:
    return Run(code, json.dumps(payload), err)


def test_checker_classifies_planted_outcomes():
    base = _json_run({"p": 0.25, "ci": [1.0, 2.0], "verdict": "blind", "signature": {"seed": 0}})
    assert judge(base, _json_run({"p": 0.25, "ci": [1.0, 2.0], "verdict": "blind", "signature": {"x": 1}}))[0] == "same"
    assert judge(base, _json_run({"p": 0.25 + 1e-13, "ci": [1.0, 2.0], "verdict": "blind"}))[0] == "same"
    assert judge(base, _json_run({"p": 0.26, "ci": [1.0, 2.0], "verdict": "blind"}))[0] == "silent"
    assert judge(base, _json_run({"p": 0.25, "ci": [1.0, 2.5], "verdict": "blind"}))[0] == "silent"
    assert judge(base, _json_run({"p": 0.25, "ci": [1.0, 2.0], "verdict": "sensitive"}))[0] == "silent"
    assert judge(base, _json_run({"p": 0.25, "ci": [1.0, 2.0]}))[0] == "silent"  # a key lost
    assert judge(base, _json_run({"p": 0.26}, err="ddp stats: warning: 2 rows dropped\n"))[0] == "warned"
    assert judge(base, Run(3, "", "ddp stats: error: [D306] ...\n"))[0] == "refused"
    assert judge(base, Run(2, "", "ddp stats: error: [D311] ...\n"))[0] == "refused"
    assert judge(base, Run(4, "", "ddp stats: error: [D999] internal error\n"))[0] == "internal"
    assert judge(base, Run(1, "", "gate failed\n"))[0] == "bad-exit"
    assert judge(base, Run(3, "", "Traceback (most recent call last):\n  ...\n"))[0] == "traceback"
    assert judge(base, Run(0, "not json", ""))[0] == "bad-output"
    # a warning the base run printed too is not a new warning
    warned_base = _json_run({"p": 0.25}, err="ddp stats cluster: warning: thin pairs\n")
    assert judge(warned_base, _json_run({"p": 0.3}, err="ddp stats cluster: warning: thin pairs\n"))[0] == "silent"


def _shift_scores(t: Table, system: str, condition: str | None, by: float) -> Table:
    u = t.copy()
    for r in u.rows:
        if r["system"] == system and (condition is None or r.get("condition") == condition):
            r["score"] = round(r["score"] + by, 2)
    return u


@pytest.mark.parametrize("name", ["tost", "tau", "cluster", "alpha", "compare", "blindness", "stratify"])
def test_checker_catches_a_planted_silent_change(name):
    """Scores edited (a valid table, another answer): the checker must call it silent, not same."""
    cmd = COMMANDS[name]
    inputs = make_inputs(cmd.kind, 4, [2, 1, 3, 2], 5)
    f = "s.csv" if name == "stratify" else "t.csv"
    if name == "alpha":  # one annotator's scores only: the coders disagree more
        planted = inputs[f].copy()
        for r in planted.rows:
            if r["annotator"] == "ann0":
                r["score"] = round(r["score"] + (3 if r["segment_id"] % 2 else -3), 2)
    elif name == "tau":  # swap the MIX ranking of two systems
        planted = _shift_scores(inputs[f], "sys0", "MIX", 25.0)
    else:
        planted = _shift_scores(inputs[f], "sys1", "MIX" if cmd.kind in ("long", "blind") else None, 2.5)
    problems = check_damages(cmd.argv, inputs, [Damage("planted", "scores of sys1 shifted", f, planted)])
    assert len(problems) == 1 and problems[0].startswith("silent [planted]"), problems


# --------------------------------------------------------------------------------------------
# silent wrong answers found by the property (exact reproductions, xfail until fixed)
# --------------------------------------------------------------------------------------------

DATA = Path(__file__).resolve().parents[1] / "data" / "silent"


def fixture_tables() -> dict[str, Table]:
    """The files of tests/data/silent (written by ``python tests/breaktests/test_silent_answers.py``)."""
    long = make_inputs("long", 4, [2, 1, 3, 2], 5)["t.csv"]
    long1 = make_inputs("long1", 4, [2, 1, 3, 2], 5)["t.csv"]
    blind = make_inputs("blind", 4, [2, 1, 3, 2], 5)["t.csv"]
    strat = make_inputs("stratify", 5, [2, 1, 3, 2, 3], 3)
    return {
        "long.csv": long,
        "long_dup.csv": duplicate_rows(long, [1, 7, 20]),
        "long_docx.csv": alter_ids(long, "document_id", "condition", "DOC", "doc1", "doc_x", [3]),
        "long_docmerge.csv": alter_ids(long, "document_id", "condition", "DOC", "doc0", "doc1", []),
        "long_twice.csv": alter_ids(long, "document_id", "annotator", "ann0", "doc1", "doc2", []),
        "long1.csv": long1,
        "long1_twice.csv": alter_ids(long1, "document_id", "condition", "DOC", "doc1", "doc2", []),
        "blind.csv": blind,
        "blind_dup.csv": duplicate_rows(blind, [1, 7, 20]),
        "profile.csv": strat["p.csv"],
        "scores.csv": strat["s.csv"],
        "scores_rm.csv": remove_rows(strat["s.csv"], [5]),
    }


def _argv(name: str, **files: str) -> tuple[str, ...]:
    argv = COMMANDS[name].argv
    return tuple(files.get(a, a) for a in argv)


#: id -> (argv on the clean files, argv on the damaged files, what goes wrong)
KNOWN_SILENT = {
    "tost-independent-dup": (_argv("tost-independent", **{"t.csv": "long.csv"}),
                             _argv("tost-independent", **{"t.csv": "long_dup.csv"}),
                             "rows repeated verbatim (same document, segment, system, annotator, condition, score) "
                             "are counted twice by the independent TOST; the paired TOST refuses the same table "
                             "(D307)"),
    "tau-dup": (_argv("tau", **{"t.csv": "long.csv"}), _argv("tau", **{"t.csv": "long_dup.csv"}),
                "rows repeated verbatim are counted twice in the system means, no warning"),
    "tau-document-ids": (_argv("tau", **{"t.csv": "long.csv"}), _argv("tau", **{"t.csv": "long_docx.csv"}),
                         "a document id changed in one DOC row (doc1 -> doc_x: a document present in one "
                         "condition only) changes the bootstrap CI / share_below_tau_min, no warning; "
                         "long_docmerge.csv (doc0 -> doc1 in the DOC rows) changes n_undefined"),
    "cluster-dup": (_argv("cluster", **{"t.csv": "long.csv"}), _argv("cluster", **{"t.csv": "long_dup.csv"}),
                    "rows repeated verbatim are counted twice in the bootstrap system means, no warning"),
    "cluster-document-ids": (_argv("cluster", **{"t.csv": "long.csv"}),
                             _argv("cluster", **{"t.csv": "long_docx.csv"}),
                             "a document id changed in one DOC row splits a document of condition DOC into two "
                             "resampling units (one holding a single system); p-values change, no warning"),
    "cluster-wmt25-dup": (_argv("cluster-wmt25", **{"t.csv": "long.csv"}),
                          _argv("cluster-wmt25", **{"t.csv": "long_dup.csv"}),
                          "rows repeated verbatim are averaged in the Wilcoxon pairs but counted twice in the "
                          "system means that order the systems, no warning"),
    "alpha-coder-rates-twice": (_argv("alpha", **{"t.csv": "long.csv"}), _argv("alpha", **{"t.csv": "long_twice.csv"}),
                                "annotator ann0's doc1 rows relabelled doc2: ann0 now has two different ratings "
                                "of each doc2 unit; alpha changes, no warning"),
    "alpha-condition-twice": (_argv("alpha-condition", **{"t.csv": "long1.csv"}),
                              _argv("alpha-condition", **{"t.csv": "long1_twice.csv"}),
                              "--coder condition: the DOC rows of doc1 relabelled doc2 give coder DOC two "
                              "different ratings of each doc2 unit; alpha changes, no warning"),
    "blindness-dup": (_argv("blindness", **{"t.csv": "blind.csv"}), _argv("blindness", **{"t.csv": "blind_dup.csv"}),
                      "rows repeated verbatim are averaged in the TOST pairs but counted twice in the ranking "
                      "(tau) system means; no warning (a DOC row repeated is not a 'several annotators' case: the "
                      "annotator column is identical)"),
    "stratify-system-missing-segment": (
        _argv("stratify", **{"p.csv": "profile.csv", "s.csv": "scores.csv"}),
        _argv("stratify", **{"p.csv": "profile.csv", "s.csv": "scores_rm.csv"}),
        "one score row removed (sys2 has no score for doc0 segment 1; the other systems have): with --by system "
        "that group silently covers 10 of 11 profile segments; the join check counts profile segments with any "
        "score row, so no warning"),
}


def _repro(argv: tuple[str, ...]) -> str:
    return "cd tests/data/silent && ddp " + " ".join(a if a else "''" for a in argv)


def _run_in_data(argv) -> Run:
    return run_cli(list(argv), DATA)


def test_fixtures_are_current(tmp_path):
    for name, t in fixture_tables().items():
        t.write(tmp_path / name)
        assert (DATA / name).read_bytes() == (tmp_path / name).read_bytes(), \
            f"tests/data/silent/{name} is stale: rerun python tests/breaktests/test_silent_answers.py"


@pytest.mark.parametrize("case", sorted(KNOWN_SILENT))
def test_known_silent(case):
    """Each silent wrong answer once found (issue 19), now closed: refused, warned or the same answer."""
    clean, damaged, what = KNOWN_SILENT[case]
    base = _run_in_data(clean)
    assert base.code == 0 and not warning_lines(base.err), base.err
    kind, detail = judge(base, _run_in_data(damaged))
    assert kind in OK, f"{kind}: {detail} ({what}; reproduce: {_repro(clean)}  vs  {_repro(damaged)})"


if __name__ == "__main__":  # write tests/data/silent
    DATA.mkdir(parents=True, exist_ok=True)
    for _name, _t in fixture_tables().items():
        _t.write(DATA / _name)
    print(f"wrote {len(fixture_tables())} files to {DATA}")
