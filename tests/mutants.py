"""Mutant list and runner: does the suite catch small, realistic bugs in the kernels and statistics?

Each mutant is one small source edit (``file``, exact ``old`` text that must occur exactly once,
``new`` text) and the test files/node ids expected to catch it. The runner applies the mutants one at
a time **in a private copy of the repository** (a git worktree, by default ``/tmp/mutants-wt``), never
in the shared tree: it rebuilds the changed extension when a ``.pyx`` is edited
(``setup.py build_ext --inplace`` in the copy), runs the expected tests with the copy first on
``PYTHONPATH`` (it prints ``ddpcore.__file__`` to prove which tree is imported), restores the source and
the compiled artifacts, and prints a table. A mutant whose ``old`` text is not found exactly once is a
hard error (exit 2): re-anchor it after a refactoring instead of letting it silently disappear.

Usage (from the repository root; pytest does not collect this file)::

    .venv/bin/python tests/mutants.py --list                # the mutants
    .venv/bin/python tests/mutants.py --check               # every 'old' text applies (no tests run)
    .venv/bin/python tests/mutants.py --sync                # fast-forward the copy to main, then run all
    .venv/bin/python tests/mutants.py --only M05 M07        # a few
    .venv/bin/python tests/mutants.py --full                # each surviving mutant also against the whole suite

A mutant whose tests run out of time (``--timeout``, or a test failing only by a timeout) is
reported as ``TIMEOUT`` and counted apart from the kills: a hang is not a caught bug.
Exit status: 0 all mutants caught, 1 a survivor, a timeout or a mutant whose tests errored, 2 a mutant that no
longer applies or a broken set-up. A kernel mutant costs one rebuild of its module (minutes on a loaded
2-core machine); the Python mutants cost only their tests.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_COPY = Path("/tmp/mutants-wt")
NATIVE = "src/ddpcore/_native"


@dataclass(frozen=True)
class Mutant:
    id: str
    what: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]
    notes: str = field(default="")


K = "src/ddpcore/_native/ddp_kernels.pyx"
SK = "src/ddpcore/_native/stats_kernels.pyx"

MUTANTS: tuple[Mutant, ...] = (
    # ---- the four of issue 12 -------------------------------------------------------------------
    Mutant("M01", "distance off by one (entity re-mention, compute_distances)", K,
           "r = a if nearest else first[e]\n                    d = sent[i] - sent[r]\n",
           "r = a if nearest else first[e]\n                    d = sent[i] - sent[r] + 1\n",
           ("tests/test_kernels.py", "tests/test_profile.py")),
    Mutant("M02", "segment DDP max -> min (compute_distances)", K,
           "if d > dseg[seg[i]]:",
           "if dseg[seg[i]] == 0 or d < dseg[seg[i]]:",
           ("tests/test_kernels.py", "tests/test_profile.py")),
    Mutant("M03", "TOST p = min instead of max of the one-sided p's", "src/ddpcore/stats/tost.py",
           "p_value = np.maximum(p_lower, p_upper)",
           "p_value = np.minimum(p_lower, p_upper)",
           ("tests/stats/test_tost.py",)),
    Mutant("M04", "bootstrap replicate SD std(ddof=1) -> std()", "src/ddpcore/stats/bootstrap.py",
           "float(reps[ok].std(ddof=1))",
           "float(reps[ok].std())",
           ("tests/test_mutant_killers.py",)),
    # ---- kernels --------------------------------------------------------------------------------
    Mutant("M05", "chained vs nearest reference swapped for entity re-mentions", K,
           "r = a if nearest else first[e]",
           "r = first[e] if nearest else a",
           ("tests/test_kernels.py", "tests/test_profile.py")),
    Mutant("M06", "pronoun group bit wrong (FEM_SG antecedent filed under NEUT_SG)", K,
           "cand[2] = i",
           "cand[4] = i",
           ("tests/test_kernels.py", "tests/test_profile.py")),
    Mutant("M07", "entity key does not drop a leading 'the'", "src/ddpcore/anchors/rules.py",
           'drop_leading: tuple[str, ...] = ("the",)',
           "drop_leading: tuple[str, ...] = ()",
           ("tests/test_profile.py", "tests/test_mutant_killers.py")),
    Mutant("M08", "tau-b tie correction dropped in the bootstrap kernel (tau-a)", SK,
           "tau = <double>con_minus_dis / sqrt(<double>(tot - xtie)) / sqrt(<double>(tot - ytie))",
           "tau = <double>con_minus_dis / <double>tot",
           ("tests/stats/test_bootstrap.py", "tests/test_mutant_killers.py")),
    # ---- statistics -----------------------------------------------------------------------------
    Mutant("M09", "Kendall tau-b tie correction dropped (correlation.kendall_tau_b)",
           "src/ddpcore/stats/correlation.py",
           "tau = con_minus_dis / np.sqrt(tot - xtie) / np.sqrt(tot - ytie)",
           "tau = con_minus_dis / tot",
           ("tests/stats/test_correlation.py",)),
    Mutant("M10", "Holm step-down multiplier m - j + 1 -> m - j", "src/ddpcore/stats/compare.py",
           "scaled = np.minimum(1.0, (m - np.arange(m)) * v[order])",
           "scaled = np.minimum(1.0, (m - 1 - np.arange(m)) * v[order])",
           ("tests/stats/test_compare.py",)),
    Mutant("M11", "Krippendorff alpha: (n - 1) factor of the expected disagreement dropped",
           "src/ddpcore/stats/agreement.py",
           "alpha = 1.0 - (n - 1.0) * within / total",
           "alpha = 1.0 - n * within / total",
           ("tests/stats/test_agreement.py", "tests/stats/test_alpha_ordinal.py")),
    Mutant("M12", "bootstrap order-statistic CI index off by one (compare)", "src/ddpcore/stats/compare.py",
           "return srt.mean(axis=-1), srt[..., k], srt[..., b - 1 - k]",
           "return srt.mean(axis=-1), srt[..., k + 1], srt[..., b - 1 - k]",
           ("tests/stats/test_compare.py",)),
    Mutant("M13", "compare approximate randomisation without +1 smoothing", "src/ddpcore/stats/compare.py",
           "((counts_ar + 1.0) / (t + 1.0))",
           "(counts_ar / t)",
           ("tests/stats/test_compare.py",)),
    Mutant("M14", "cluster bootstrap p-value one-tailed (factor 2 dropped)", "src/ddpcore/stats/clustering.py",
           "2.0 * np.minimum(le, ge) / valid",
           "1.0 * np.minimum(le, ge) / valid",
           ("tests/stats/test_cluster.py",)),
    Mutant("M15", "lowess robustness weights scaled by 4 x median instead of 6 x", "src/ddpcore/stats/lowess.py",
           "r / (6.0 * med)",
           "r / (4.0 * med)",
           ("tests/stats/test_lowess.py",)),
    # ---- issue 19: boundaries the suite let through ---------------------------------------------
    Mutant("M16", "spearman refuses exactly 2 pairs (n < 2 -> n <= 2)", "src/ddpcore/stats/correlation.py",
           "    if n < 2:\n        raise DDPDataError(f\"spearman needs",
           "    if n <= 2:\n        raise DDPDataError(f\"spearman needs",
           ("tests/test_mutant_killers.py",)),
    Mutant("M17", "tost_n_needed accepts power = 1.0", "src/ddpcore/stats/power.py",
           "    if not 0.0 < power < 1.0:\n        raise DDPUsageError(f\"power must be in (0, 1), got {power}\", "
           "code=\"D520\")\n    if not low < true_diff < high:",
           "    if not 0.0 < power <= 1.0:\n        raise DDPUsageError(f\"power must be in (0, 1), got {power}\", "
           "code=\"D520\")\n    if not low < true_diff < high:",
           ("tests/test_mutant_killers.py",)),
    Mutant("M18", "annotation timing accepts max_gap = 0", "src/ddpcore/stats/timing.py",
           "if not max_gap > 0:",
           "if not max_gap >= 0:",
           ("tests/test_mutant_killers.py",)),
)


# --------------------------------------------------------------------------------------------- runner

def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, quiet: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=env, text=True,
                          stdout=subprocess.PIPE if quiet else None, stderr=subprocess.STDOUT if quiet else None)


def _env(copy: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(copy / "src")
    env.pop("DDPCORE_DEBUG", None)
    return env


def ensure_copy(copy: Path, sync: bool) -> None:
    """Create the private worktree (detached at main's HEAD) or fast-forward it; it must be clean."""
    if not copy.exists():
        r = _run(["git", "worktree", "add", "--detach", str(copy), "HEAD"], REPO)
        if r.returncode:
            sys.exit(f"mutants: git worktree add failed:\n{r.stdout}")
        # reuse the shared tree's compiled kernels when its .pyx files match the copy's (saves a full build)
        same = _run(["git", "diff", "--quiet", "HEAD", "--", NATIVE], REPO).returncode == 0
        if same:
            for pattern in ("*.cpp", "*.so"):
                for f in sorted((REPO / NATIVE).glob(pattern)):
                    shutil.copy2(f, copy / NATIVE / f.name)
                    os.utime(copy / NATIVE / f.name)
    dirty = _run(["git", "status", "--porcelain", "--untracked-files=no"], copy).stdout.strip()
    if dirty:
        sys.exit(f"mutants: the copy {copy} has modified tracked files (an interrupted run?):\n{dirty}\n"
                 f"fix with: git -C {copy} checkout -- . ")
    if sync:
        head = _run(["git", "rev-parse", "HEAD"], REPO).stdout.strip()
        r = _run(["git", "merge", "--ff-only", head], copy)
        if r.returncode:
            sys.exit(f"mutants: cannot fast-forward {copy} to main's HEAD {head}:\n{r.stdout}")
    print(f"copy: {copy} at {_run(['git', 'log', '-1', '--format=%h %s'], copy).stdout.strip()[:100]}")


def build(copy: Path, python: str) -> tuple[bool, float, str]:
    t0 = time.monotonic()
    r = _run([python, "setup.py", "build_ext", "--inplace"], copy, env=_env(copy))
    return r.returncode == 0, time.monotonic() - t0, r.stdout


def check_import(copy: Path, python: str) -> None:
    code = "import ddpcore, ddpcore._native.ddp_kernels as k; print(ddpcore.__file__); print(k.__file__)"
    r = _run([python, "-c", code], copy, env=_env(copy))
    lines = r.stdout.strip().splitlines()
    print("ddpcore.__file__ in the copy:", " | ".join(lines))
    if r.returncode or not all(line.startswith(str(copy)) for line in lines):
        sys.exit("mutants: the copy's ddpcore (or its kernels) is not the one imported; aborting")


def check_applies(copy: Path, mutants: list[Mutant]) -> list[str]:
    errors = []
    for m in mutants:
        path = copy / m.file
        if not path.exists():
            errors.append(f"{m.id}: {m.file} does not exist")
            continue
        n = path.read_text(encoding="utf-8").count(m.old)
        if n != 1:
            errors.append(f"{m.id}: 'old' text found {n} times in {m.file} (must be exactly 1): {m.old!r}")
    return errors


def _artifacts(copy: Path, pyx: str) -> list[Path]:
    stem = Path(pyx).stem
    out = list((copy / NATIVE).glob(f"{stem}.cpp")) + list((copy / NATIVE).glob(f"{stem}.cpython-*.so"))
    out += list((copy / "build").glob(f"lib.*/ddpcore/_native/{stem}.cpython-*.so"))
    return out


def run_one(copy: Path, python: str, m: Mutant, full: bool, timeout: float) -> dict:
    path = copy / m.file
    original = path.read_text(encoding="utf-8")
    if original.count(m.old) != 1:
        raise SystemExit(f"mutants: {m.id}: 'old' text not found exactly once in {m.file}")
    is_pyx = m.file.endswith(".pyx")
    backup = Path(copy / ".mutant-backup")
    saved: list[tuple[Path, Path]] = []
    row = {"id": m.id, "what": m.what, "tests": " ".join(m.tests), "status": "?", "detail": "", "seconds": 0.0}
    t0 = time.monotonic()
    try:
        if is_pyx:
            backup.mkdir(exist_ok=True)
            for i, a in enumerate(_artifacts(copy, m.file)):
                dst = backup / f"{i}-{a.name}"
                shutil.copy2(a, dst)
                saved.append((a, dst))
        path.write_text(original.replace(m.old, m.new), encoding="utf-8")
        if is_pyx:
            # the edited .pyx must be newer than its .cpp/.so, or cythonize and build_ext skip it
            newest = max(a.stat().st_mtime for a, _ in saved) if saved else 0.0
            stamp = max(time.time(), newest + 2)
            os.utime(path, (stamp, stamp))
            ok, secs, log = build(copy, python)
            if not ok:
                row.update(status="BUILD-FAILED", detail=log.strip().splitlines()[-1][:80] if log.strip() else "")
                return row
            # prove the mutant was compiled: Cython copies each source line into the generated .cpp
            cpp = (copy / m.file).with_suffix(".cpp").read_text(encoding="utf-8", errors="replace")
            probe = m.new.strip().splitlines()[-1].strip()
            if probe not in cpp:
                row.update(status="NOT-BUILT", detail=f"{probe!r} not in the generated .cpp")
                return row
        cmd = [python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-o", "addopts=--benchmark-disable",
               *m.tests]
        try:
            r = subprocess.run(cmd, cwd=copy, env=_env(copy), text=True, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=timeout)
            rc, out = r.returncode, r.stdout
        except subprocess.TimeoutExpired:
            rc, out = 124, f"timeout after {timeout:g} s"
        last = out.strip().splitlines()[-1] if out.strip() else ""
        failed = [ln.split(" - ")[0].replace("FAILED ", "") for ln in out.splitlines() if ln.startswith("FAILED ")]
        if rc == 124 or (rc == 1 and _only_timeouts(out)):
            # a hang is not a kill: the tests did not show a wrong answer, they ran out of time
            row.update(status="TIMEOUT", detail=(failed[0] + ": timed out" if failed else last)[:90])
        elif rc == 1:
            row.update(status="caught", detail=(failed[0] if failed else last)[:90])
        elif rc == 0:
            row.update(status="SURVIVED", detail=last[:90])
            if full:
                r = _run([python, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider"], copy, env=_env(copy))
                tail = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
                row["detail"] += f"; full suite rc={r.returncode}: {tail[:60]}"
        else:
            row.update(status=f"ERROR rc={rc}", detail=last[:90])
        return row
    finally:
        path.write_text(original, encoding="utf-8")
        if saved:
            for a, dst in saved:
                shutil.copy2(dst, a)
            # restored artifacts newer than the restored .pyx (so nothing is rebuilt), never in the future
            now = time.time()
            os.utime(path, (now - 10, now - 10))
            for a, _ in saved:
                os.utime(a, (now, now))
            shutil.rmtree(backup, ignore_errors=True)
        row["seconds"] = round(time.monotonic() - t0, 1)


#: how a test that ran out of time shows in pytest's output (subprocess timeouts of the break-test
#: harness, pytest-timeout): such a failure is a TIMEOUT, not a kill
_TIMEOUT_MARKS = ("subprocess.TimeoutExpired", "TimeoutExpired:", "Failed: Timeout")


def _only_timeouts(out: str) -> bool:
    """True when every failure in a pytest run's output is a timeout (see :data:`_TIMEOUT_MARKS`)."""
    blocks = out.split("\n_____")[1:] or [out]  # one block per failure report ("_____ test_x _____")
    return all(any(m in b for m in _TIMEOUT_MARKS) for b in blocks)


def _summary(rows: list[dict]) -> tuple[str, list[str]]:
    """'k/n caught' plus survivors and timeouts counted apart (a timeout is not a kill), and the
    ids not caught."""
    caught = [r["id"] for r in rows if r["status"] == "caught"]
    timeouts = [r["id"] for r in rows if r["status"] == "TIMEOUT"]
    others = [r["id"] for r in rows if r["status"] not in ("caught", "TIMEOUT")]
    text = f"{len(caught)}/{len(rows)} caught"
    if others:
        text += f"; survived or errored: {' '.join(others)}"
    if timeouts:
        text += f"; timeout (survived, not a kill): {' '.join(timeouts)}"
    return text, others + timeouts


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(f"mutants: signal {signum}")  # so run_one's finally restores the copy


def main(argv: list[str] | None = None) -> int:
    import signal

    signal.signal(signal.SIGTERM, _terminate)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copy", type=Path, default=DEFAULT_COPY, help="private worktree (created when missing)")
    ap.add_argument("--python", default=str(REPO / ".venv/bin/python"))
    ap.add_argument("--only", nargs="*", default=None, help="mutant ids")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--check", action="store_true", help="only check that every mutant applies")
    ap.add_argument("--sync", action="store_true", help="fast-forward the copy to main's HEAD first")
    ap.add_argument("--full", action="store_true", help="run the whole suite against each survivor")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per mutant's test run")
    args = ap.parse_args(argv)
    chosen = [m for m in MUTANTS if args.only is None or m.id in args.only]
    if args.list:
        for m in chosen:
            print(f"{m.id}  {m.what}\n      {m.file}: {m.old!r} -> {m.new!r}\n      expected: {' '.join(m.tests)}")
        return 0
    copy = args.copy.resolve()
    if copy == REPO or REPO in copy.parents:
        sys.exit("mutants: the copy must not be the shared tree")
    ensure_copy(copy, args.sync)
    errors = check_applies(copy, chosen)
    for e in errors:
        print("DOES NOT APPLY:", e, file=sys.stderr)
    if errors:
        return 2
    print(f"all {len(chosen)} mutants apply")
    if args.check:
        return 0
    ok, secs, log = build(copy, args.python)  # no-op when up to date; needed after --sync
    print(f"build_ext --inplace in the copy: {'ok' if ok else 'FAILED'} ({secs:.0f} s)")
    if not ok:
        print(log[-3000:])
        return 2
    check_import(copy, args.python)
    rows = []
    for m in chosen:
        print(f"-- {m.id} {m.what} ...", flush=True)
        row = run_one(copy, args.python, m, args.full, args.timeout)
        print(f"   {row['status']} ({row['seconds']} s) {row['detail']}", flush=True)
        rows.append(row)
    print("\n| mutant | edit | expected tests | result | first failing test / last line | s |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['id']} | {r['what']} | {r['tests']} | {r['status']} | {r['detail']} | {r['seconds']} |")
    text, survivors = _summary(rows)
    print("\n" + text)
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
