"""Cold start (issue 25 §4): a ``ddp`` command imports what its work needs, not every subcommand.

``ddp CMD ...`` builds the parser of CMD alone (:func:`ddpcore.cli.main.build_parser` with the
command's name); these tests check that the one-command parser gives the same help page and the
same option errors as the full parser, and, in fresh interpreters, which modules a command leaves
imported (the expected sets are the modules of the other subcommands and of the parse cache, read
from :data:`ddpcore.cli.main.SUBCOMMANDS`, not hard-coded module counts).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ddpcore.cli import main as cli_main

PROBE = """
import json, sys
from ddpcore.cli.main import main
try:
    rc = main(sys.argv[1:])
except SystemExit as exc:  # --help
    rc = exc.code
print(json.dumps({"rc": rc, "modules": sorted(m for m in sys.modules if m.startswith("ddpcore"))}))
"""


def _modules_after(*argv: str) -> tuple[int, set[str]]:
    """Exit code and the ``ddpcore`` modules imported by ``ddp ARGV`` in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    return res["rc"], set(res["modules"])


def _cli_module(name: str) -> str:
    return f"ddpcore.cli.{name.replace('-', '_')}"


def _sub(parser, name):  # type: ignore[no-untyped-def]
    return cli_main._subparser(parser, name)


@pytest.mark.parametrize("name", cli_main.SUBCOMMANDS)
def test_one_command_parser_same_help(name: str) -> None:
    full = _sub(cli_main.build_parser(), name)
    alone = _sub(cli_main.build_parser(name), name)
    assert alone is not None and alone.prog == f"ddp {name}"
    assert alone.format_help() == full.format_help()


def test_command_of_only_names_a_first_word_subcommand() -> None:
    assert cli_main._command_of(["profile", "x.jsonl"]) == "profile"
    assert cli_main._command_of(["metric-s", "--help"]) == "metric-s"
    for argv in ([], ["-V"], ["--help"], ["prof"], ["nosuch", "profile"], ["-q", "profile"]):
        assert cli_main._command_of(argv) is None


def test_same_errors_as_the_full_parser(capsys: pytest.CaptureFixture[str]) -> None:
    # an unknown option of one subcommand, an unknown subcommand (full parser: lists the choices)
    for argv in (["stats", "--no-such-flag"], ["nosuch"]):
        with pytest.raises(SystemExit) as exc:
            cli_main.main(argv)
        assert exc.value.code == cli_main.EXIT_USAGE
    err = capsys.readouterr().err
    assert "ddp stats: error: [D001] unrecognized arguments: --no-such-flag (see 'ddp stats --help')" in err
    assert "ddp: error: [D001] argument COMMAND: invalid choice: 'nosuch'" in err
    assert "profile" in err.split("invalid choice", 1)[1]  # the choices are listed


def test_stats_help_imports_no_other_command() -> None:
    rc, mods = _modules_after("stats", "tau", "--help")
    assert rc == 0
    others = {_cli_module(n) for n in cli_main.SUBCOMMANDS if n != "stats"} - {"ddpcore.cli.stats_compare"}
    assert not mods & others, sorted(mods & others)
    assert "ddpcore.io.readers" not in mods  # profile's --reader choices


def test_stats_tau_run_imports_no_other_command(tmp_path: Path) -> None:
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(1)
    n_docs, n_sys = 12, 4
    table = pl.DataFrame({
        "document_id": np.repeat(np.arange(n_docs), n_sys * 2),
        "segment_id": 0,
        "system": [f"s{k}" for k in np.tile(np.arange(n_sys), n_docs * 2)],
        "condition": np.tile(np.repeat(["DOC", "MIX"], n_sys), n_docs),
        "score": rng.normal(0, 1, n_docs * n_sys * 2),
    })
    table.write_parquet(tmp_path / "t.parquet")
    rc, mods = _modules_after("stats", "tau", str(tmp_path / "t.parquet"), "--a", "DOC", "--b", "MIX", "-q",
                              "--n-boot", "50", "-o", str(tmp_path / "tau.json"))
    assert rc == 0 and json.loads((tmp_path / "tau.json").read_text())["n_boot"] == 50
    others = {_cli_module(n) for n in cli_main.SUBCOMMANDS if n != "stats"}
    assert not mods & others, sorted(mods & others)


@pytest.mark.slow
def test_profile_no_cache_imports_neither_cache_nor_api(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"document_id": "d", "segment_id": 0, "source": "Mary met John. She liked him."}) + "\n",
                   encoding="utf-8")
    rc, mods = _modules_after("profile", str(src), "-o", str(tmp_path / "out.parquet"), "-q", "--no-cache")
    assert rc == 0 and (tmp_path / "out.parquet").exists()
    assert "ddpcore.cli.profile" in mods and "ddpcore.engines.run" in mods
    unused = {"ddpcore.pipeline.cache", "ddpcore.api"} | {_cli_module(n) for n in cli_main.SUBCOMMANDS
                                                           if n != "profile"}
    assert not mods & unused, sorted(mods & unused)


ALLOC_PROBE = """
import json, os, sys
if sys.argv[1] == "polars-first":
    import polars  # noqa: F401
from ddpcore.cli import main as m
m._set_allocators()
print(json.dumps({k: os.environ.get(k) for k in m.ALLOCATOR_ENV}))
"""


@pytest.mark.parametrize("case", ["fresh", "user-set", "polars-first"])
def test_profile_allocator_settings(case: str) -> None:
    """``ddp profile`` sets the allocator variables of ALLOCATOR_ENV before polars/pyarrow load, and
    never overrides the user's value nor pretends to apply once polars is loaded (it reads them at start)."""
    env = {k: v for k, v in __import__("os").environ.items() if k not in cli_main.ALLOCATOR_ENV}
    if case == "user-set":
        env["ARROW_DEFAULT_MEMORY_POOL"] = "mimalloc"
    out = subprocess.run([sys.executable, "-c", ALLOC_PROBE, case], capture_output=True, text=True, check=True,
                         env=env)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    if case == "polars-first":  # polars writes its own jemalloc defaults; ours are not added
        assert got["ARROW_DEFAULT_MEMORY_POOL"] is None
        assert got["_RJEM_MALLOC_CONF"] != cli_main.ALLOCATOR_ENV["_RJEM_MALLOC_CONF"]
    elif case == "user-set":
        assert got == {**cli_main.ALLOCATOR_ENV, "ARROW_DEFAULT_MEMORY_POOL": "mimalloc"}
    else:
        assert got == cli_main.ALLOCATOR_ENV


BLAS_PROBE = """
import json, os, sys
if sys.argv[1] == "numpy-first":
    import numpy  # noqa: F401
sys.argv = ["ddp", sys.argv[2], "--help"]
from ddpcore.cli import main as m
try:
    m.main()
except SystemExit:
    pass
print(json.dumps(os.environ.get("OPENBLAS_NUM_THREADS")))
"""


@pytest.mark.parametrize(("case", "command", "want"), [
    ("fresh", "profile", "1"), ("fresh", "validate", "1"), ("fresh", "stats", None), ("user-set", "profile", "3"),
    ("numpy-first", "profile", None),
])
def test_parsing_commands_keep_openblas_to_one_thread(case: str, command: str, want: str | None) -> None:
    """A parsing ``ddp`` process sets OPENBLAS_NUM_THREADS=1 before numpy loads (its threads only spin
    beside spaCy's parse); never over the user's value, never for other commands, never once numpy is
    loaded (OpenBLAS read the variable already)."""
    env = {k: v for k, v in __import__("os").environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if case == "user-set":
        env["OPENBLAS_NUM_THREADS"] = "3"
    out = subprocess.run([sys.executable, "-c", BLAS_PROBE, case, command], capture_output=True, text=True,
                         check=True, env=env)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == want


@pytest.mark.spacy_model
def test_openblas_threads_do_not_change_the_output(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The same tables with ddpcore's OPENBLAS_NUM_THREADS=1 and with the user's 2 (the parse runs in BLIS)."""
    import os

    import polars as pl

    src = Path(__file__).parent / "data" / "wmt25_mini.jsonl"
    outs = []
    for threads in (None, "2"):
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
        if threads:
            env["OPENBLAS_NUM_THREADS"] = threads
        seg, anc = tmp_path / f"s{threads}.parquet", tmp_path / f"a{threads}.parquet"
        subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "profile", str(src), "-o", str(seg), "--anchors",
                        str(anc), "-q", "--no-cache", "-j", "1"], check=True, env=env, capture_output=True)
        outs.append((pl.read_parquet(seg), pl.read_parquet(anc)))
    assert outs[0][0].equals(outs[1][0]) and outs[0][1].equals(outs[1][1]) and outs[0][1].height > 0
