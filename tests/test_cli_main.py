"""The ``ddp`` entry point as a whole: internal errors, broken pipes, interrupts, --version, info, config."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ddpcore.cli import info as cli_info
from ddpcore.cli import main as cli_main
from ddpcore.cli.main import main


def _boom(args):  # a command whose implementation has a bug
    return {}["missing"]


@pytest.fixture
def broken_info(monkeypatch: pytest.MonkeyPatch):
    """``ddp info`` with a genuine unexpected exception inside the command."""
    monkeypatch.setattr(cli_info, "collect", lambda: _boom(None))
    monkeypatch.delenv("DDPCORE_DEBUG", raising=False)


def test_internal_error_is_one_line_exit_4(broken_info, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info"]) == 4
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("ddp info: error: [D999] internal error: KeyError: 'missing'")
    assert "please report; rerun with DDPCORE_DEBUG=1 for the traceback" in lines[0]
    assert "Traceback" not in err


def test_internal_error_traceback_with_debug(broken_info, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DDPCORE_DEBUG", "1")
    assert main(["info"]) == 4
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "_boom" in err
    assert err.strip().splitlines()[-1].startswith("ddp info: error: [D999]")


def test_multiline_exception_message_stays_one_line(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    def bad() -> dict:
        raise RuntimeError("first\nsecond\n\nthird")

    monkeypatch.setattr(cli_info, "collect", bad)
    monkeypatch.delenv("DDPCORE_DEBUG", raising=False)
    assert main(["info"]) == 4
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "RuntimeError: first second third" in lines[0]


def test_keyboard_interrupt_exit_130(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted() -> dict:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_info, "collect", interrupted)
    assert main(["info"]) == 130
    assert capsys.readouterr().err.strip() == "ddp info: interrupted"


def test_broken_pipe_not_on_stdout_is_internal(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A BrokenPipeError that is not about stdout (here stdout is captured) is a bug, not a quiet exit."""
    def pipe() -> dict:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(cli_info, "collect", pipe)
    assert main(["info"]) == 4
    assert "[D999] internal error: BrokenPipeError" in capsys.readouterr().err


def test_domain_errors_keep_their_exit_codes(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from ddpcore.errors import DDPDataError, DDPNativeError, DDPUsageError

    for exc, code in ((DDPUsageError("bad option", code="D950"), 2), (DDPDataError("bad row", code="D111"), 3),
                      (DDPNativeError("kernels missing", code="D901"), 4)):
        def raiser(exc=exc) -> dict:
            raise exc

        monkeypatch.setattr(cli_info, "collect", raiser)
        assert main(["info"]) == code
        err = capsys.readouterr().err
        assert err.startswith(f"ddp info: error: [{exc.code}]") and err.count("\n") == 1


def _closed_pipe_run(code: str) -> subprocess.CompletedProcess[bytes]:
    """Run ``code`` (which calls ddp's main) with a stdout pipe that the reader closes after 10 bytes."""
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(10)
    proc.stdout.close()
    err = proc.stderr.read()
    return subprocess.CompletedProcess(proc.args, proc.wait(timeout=60), b"", err)


def test_broken_pipe_on_stdout_is_quiet_exit_0() -> None:
    # a large output (10 MB) written to a pipe whose reader went away, as in `ddp info | head -c 10`
    code = ("import sys\nimport ddpcore.cli.info as i\nfrom ddpcore.cli.main import main\n"
            "i.format_text = lambda d: 'x' * 10_000_000\nsys.exit(main(['info']))")
    res = _closed_pipe_run(code)
    assert res.returncode == 0 and res.stderr == b"", res.stderr.decode()


def test_argparse_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, where in ((["nosuch"], "ddp: error: [D001] argument COMMAND: invalid choice: 'nosuch'"),
                        (["info", "--bogus"], "ddp info: error: [D001] unrecognized arguments: --bogus"),
                        (["agree", "a.parquet"], "ddp agree: error: [D001] the following arguments are required: B")):
        with pytest.raises(SystemExit) as ex:
            main(argv)
        assert ex.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(where), err
        assert "--help" in err


@pytest.mark.parametrize("command", __import__("ddpcore.cli.main", fromlist=["SUBCOMMANDS"]).SUBCOMMANDS)
def test_every_usage_error_carries_a_code(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Every command's argparse errors start with a [Dnnn] code (D001 when the option's own check gave none),
    so that a user can search for it like any other error."""
    with pytest.raises(SystemExit) as ex:
        main([command, "--no-such-option-xyz"])
    assert ex.value.code == 2
    err = capsys.readouterr().err
    # (a command with required arguments names those first)
    assert err.startswith(f"ddp {command}: error: [D001] ") and err.count("\n") == 1, err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    import ddpcore

    for flag in ("--version", "-V"):
        with pytest.raises(SystemExit) as ex:
            main([flag])
        assert ex.value.code == 0
        out = capsys.readouterr().out
        assert out.splitlines()[0] == f"ddpcore {ddpcore.__version__}"
        assert f"spaCy {cli_info.dist_version('spacy')}" in out
        pipe = cli_info.pipeline_info(cli_info.default_pipeline())
        assert pipe["installed"] and pipe["version"] and f"{pipe['version']}" in out.splitlines()[2]
        assert out.splitlines()[2].startswith("default pipeline en_core_web_sm")


def test_version_does_not_import_spacy_or_numpy() -> None:
    code = ("import sys\nfrom ddpcore.cli.main import main\n"
            "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('spacy', 'numpy', 'polars') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_default_pipeline_constant_matches_extractor() -> None:
    from ddpcore.anchors.spacy_extract import DEFAULT_PIPELINE

    assert cli_info.DEFAULT_PIPELINE_PACKAGE == DEFAULT_PIPELINE


def test_info_json(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import numpy
    import polars
    import pyarrow
    import spacy

    monkeypatch.setenv("DDPCORE_CACHE", str(tmp_path / "c"))
    assert main(["info", "-f", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    v = d["versions"]
    assert v["numpy"] == numpy.__version__ and v["polars"] == polars.__version__
    assert v["pyarrow"] == pyarrow.__version__ and v["spacy"] == spacy.__version__
    assert v["python"] == ".".join(map(str, sys.version_info[:3]))
    installed = {p["package"] for p in d["installed_pipelines"]}
    assert set(spacy.util.get_installed_models()) == installed and cli_info.default_pipeline() in installed
    k = d["kernels"]
    assert all(m["built"] for m in k["modules"].values())
    assert isinstance(k["openmp"], bool) and k["openmp_max_threads"] >= 1
    assert d["cache_dir"] == str(tmp_path / "c") and d["cache_dir_source"] == "$DDPCORE_CACHE"
    assert not (tmp_path / "c").exists()  # info reports, never creates
    # the shipped certification models, as the files say (read here with json, not the loader)
    from ddpcore.anchors.certify_model import DATA_DIR, DEFAULT_CERTIFY_MODEL, NOPARSER_CERTIFY_MODEL

    got = {m["file"]: m for m in d["certify_models"]}
    assert set(got) == {DEFAULT_CERTIFY_MODEL, NOPARSER_CERTIFY_MODEL}
    for name, m in got.items():
        raw = (DATA_DIR / name).read_bytes()
        doc = json.loads(raw)
        assert (m["version"], m["threshold"], m["threshold_name"], m["threshold_long"]) == (
            doc["version"], doc["threshold"], doc["threshold_name"], doc["threshold_long"])
        import hashlib

        assert m["sha256"] == hashlib.sha256(raw).hexdigest()
    assert got[NOPARSER_CERTIFY_MODEL]["trained_with_parser"] is False


def test_info_names_a_damaged_certification_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A shipped model that cannot be read is reported with its code, and info still exits 0."""
    from ddpcore.anchors import certify_model as cm

    bad = tmp_path / "data"
    bad.mkdir()
    (bad / cm.DEFAULT_CERTIFY_MODEL).write_text("{not json")
    monkeypatch.setattr(cm, "DATA_DIR", bad)
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert f"{cm.DEFAULT_CERTIFY_MODEL} (default): CANNOT BE USED: [D251]" in out
    assert f"{cm.NOPARSER_CERTIFY_MODEL} (pipelines without a parser): CANNOT BE USED: [D250]" in out


def test_info_openmp_matches_build() -> None:
    """OpenMP is detected from the compiled module itself: its import table names the runtime."""
    from ddpcore._native import stats_kernels

    k = cli_info.kernel_info()
    blob = Path(stats_kernels.__file__).read_bytes()
    assert k["modules"]["stats_kernels"]["openmp"] == (b"GOMP_" in blob or b"__kmpc_fork_call" in blob)
    if not k["openmp"]:
        assert stats_kernels.max_threads() == 1  # a build without OpenMP has one thread


def test_info_names_the_meta_walks(capsys: pytest.CaptureFixture[str]) -> None:
    """``ddp info`` says which arithmetic ddp meta's replicate walks use here (what ``auto`` resolves to)."""
    from ddpcore._native import load

    path = load("stats_meta").block_path()
    assert cli_info.kernel_info()["meta_walks"] == path
    assert main(["info"]) == 0
    want = "32-bit trees with AVX2" if path == "i32-avx2" else "32-bit trees (no AVX2 on this CPU)"
    assert f"ddp meta replicate walks: {want}" in capsys.readouterr().out


def test_info_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    for needle in ("ddpcore", "python", "numpy", "polars", "pyarrow", "spacy", "installed spaCy pipelines",
                   "OpenMP:", "cache:", "certification models (ddp_certified):", "(pronouns) /"):
        assert needle in out


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"DDPCORE_CACHE": "/x/ddp", "XDG_CACHE_HOME": "/y"}, "/x/ddp"),
        ({"XDG_CACHE_HOME": "/y"}, "/y/ddpcore"),
        ({"XDG_CACHE_HOME": "relative"}, "~/.cache/ddpcore"),  # XDG: relative values are ignored
        ({}, "~/.cache/ddpcore"),
    ],
)
def test_cache_dir_rule(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: str) -> None:
    from ddpcore.config import cache_dir

    monkeypatch.delenv("DDPCORE_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert cache_dir() == Path(expected).expanduser()


def test_help_epilog_lists_exit_codes() -> None:
    text = cli_main.build_parser().format_help()
    for code in ("0 ", "1 ", "2 ", "3 ", "4 ", "130"):
        assert f"\n  {code}" in text
    assert "[D999]" in text and "DDPCORE_DEBUG=1" in text
