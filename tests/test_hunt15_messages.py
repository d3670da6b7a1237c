"""Round-15 hunt (helper 56): one-line messages and small consistency gaps.

1. Error lines (``<command>: error: [Dnnn] ...``) squashed every run of white space into one space, so an error
   naming a column or system that holds a line break, a tab or two spaces showed another name ('sc\\nore' as
   'sc ore'); argparse's errors too (an unknown argument 'a<LF>b' read as two, 'a b'), and the Python warnings a
   command raised. Now they are written as the warning lines are (``ddpcore.io.tables.one_line``: control
   characters as ``repr`` writes them, other characters, spaces included, as they are). A D999 line still
   squashes the exception's own text (a Python error laid out over lines is not a name from the data:
   tests/test_cli_main.py::test_multiline_exception_message_stays_one_line).
2. The ``wrote PATH`` lines on stderr (stratify, plot, report, meta, every ``ddp stats`` result file) and in the
   printed summaries (select/sample ``wrote OUT``) printed the path raw: a folder named with a line break split
   the line. Now one line, as above.
3. ``ddp agree`` (and ``ddpcore.agree``) read a DDP column of text ("3") as numbers where select, sample,
   stratify, meta, plot and report refuse it (D781, ``io.profiles.check_ddp_col``): one file, two answers.
   Now D781 too, naming the flag that named the column (``--b-ddp-col`` for the second run).
4. ``ddp stratify -f tsv`` named nowhere on stdout which DDP column was binned; ``ddp meta -f tsv`` and every
   ``ddp stats -f tsv`` carry a ``# signature: {...}`` comment line. Stratify's TSV now ends with one (its
   ``ddp_col`` names the column), on stdout as in a file.
5. ``--help``: a default of 0 (``--seed``) was not shown (0 == False, and the formatter skipped False defaults);
   --seed/--alpha/--confidence/--tau-min/--min-alpha/--title showed argparse's DEST name as metavar; the
   ``--threads`` of stats compare and meta did not say what no value means. And ``select``/``sample
   --txt-mode paragraphs`` was accepted and ignored (those commands cannot read a folder of .txt documents,
   D633): now D601, as ``ddp profile`` says for a file input.

Expected strings are written out by hand (a backslash in the message is ``\\\\`` in these Python literals);
expected figures come from scipy/numpy over the tables built here, never from ddpcore.
"""
from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import scipy.stats

from ddpcore.cli.main import build_parser, main

sys.path.insert(0, str(Path(__file__).parent))


def _err_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.strip()]


def _scores(path: Path) -> None:
    """5 documents x 4 segments x 2 systems (base scores about 0, x about 1)."""
    rng = np.random.default_rng(4)
    rows = [dict(document_id=f"d{d}", segment_id=s, system=n, score=float(k + rng.normal(0, .2)))
            for d in range(5) for s in range(4) for k, n in enumerate(["base", "x"])]
    pl.DataFrame(rows).write_parquet(path)


# --------------------------------------------------------------------------- 1. error lines


def test_error_naming_a_system_with_a_tab_and_two_spaces_shows_that_name(tmp_path, capsys) -> None:
    """Before: "baseline 'no such sys'" (the tab and the double space one space each). Now as written."""
    _scores(tmp_path / "t.parquet")
    assert main(["stats", "compare", str(tmp_path / "t.parquet"), "--baseline", "no\tsuch  sys", "--score-col",
                 "score", "--n-boot", "50"]) == 3
    (line,) = _err_lines(capsys.readouterr().err)
    assert line.startswith("ddp stats compare: error: [D392]")
    assert "baseline 'no\\tsuch  sys' is not in column 'system'" in line


def test_error_naming_a_column_with_a_line_break_shows_that_name(tmp_path, capsys) -> None:
    """Before: "metric column 'sc ore' is missing": a column 'sc ore' may exist, and is not the one named."""
    _scores(tmp_path / "t.parquet")
    assert main(["stats", "compare", str(tmp_path / "t.parquet"), "--baseline", "base", "--score-col", "sc\nore",
                 "--n-boot", "50"]) == 3
    (line,) = _err_lines(capsys.readouterr().err)
    assert "[D391]" in line and "metric column 'sc\\nore' is missing" in line


def test_argparse_error_naming_an_argument_with_a_line_break_shows_one_argument(capsys) -> None:
    """Before: 'unrecognized arguments: a b' (two arguments, it seemed). Now 'a\\nb'."""
    with pytest.raises(SystemExit) as ex:
        main(["info", "a\nb"])
    assert ex.value.code == 2
    (line,) = _err_lines(capsys.readouterr().err)
    assert line.startswith("ddp info: error: [D001] unrecognized arguments: a\\nb (see 'ddp info --help')")


def test_python_warning_lines_escape_as_the_command_warnings_do(capsys) -> None:
    from ddpcore.cli.main import _warnings_as_lines

    with _warnings_as_lines("ddp x"):
        warnings.warn("column 'a\tb  c' of 'p\nq'", UserWarning, stacklevel=1)
    assert capsys.readouterr().err == "ddp x: warning: column 'a\\tb  c' of 'p\\nq'\n"


# --------------------------------------------------------------------------- 2. "wrote PATH" lines


@pytest.fixture
def odd_dir(tmp_path: Path) -> Path:
    d = tmp_path / "out\nput"  # a folder whose name holds a line break
    d.mkdir()
    return d


def _profile_and_scores(tmp_path: Path) -> tuple[Path, Path, pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(7)
    n = 60
    docs, segs = [f"d{i // 6}" for i in range(n)], [i % 6 for i in range(n)]
    prof = pl.DataFrame({"document_id": docs, "segment_id": segs, "ddp": rng.integers(0, 20, n),
                         "ddp_certified": rng.integers(0, 6, n), "first_sentence": segs,
                         "n_sentences": [1] * n})
    prof.write_parquet(tmp_path / "prof.parquet")
    sc = pl.DataFrame({"document_id": docs, "segment_id": segs, "system": ["A"] * n,
                       "score": rng.normal(size=n)})
    sc.write_parquet(tmp_path / "sc.parquet")
    return tmp_path / "prof.parquet", tmp_path / "sc.parquet", prof, sc


def test_stratify_wrote_line_is_one_line(tmp_path, odd_dir, capsys) -> None:
    prof, sc, _, _ = _profile_and_scores(tmp_path)
    out = odd_dir / "r.json"
    assert main(["stratify", str(prof), str(sc), "--score-col", "score", "--n-boot", "0", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    want = f"ddp stratify: wrote {tmp_path}/out\\nput/r.json (1 groups)"
    assert want in err.splitlines(), err
    assert out.exists()


def test_stats_result_file_wrote_line_is_one_line(tmp_path, odd_dir, capsys) -> None:
    _scores(tmp_path / "t.parquet")
    out = odd_dir / "c.json"
    assert main(["stats", "compare", str(tmp_path / "t.parquet"), "--baseline", "base", "--score-col", "score",
                 "--n-boot", "50", "--n-ar", "50", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    want = (f"ddp stats compare: wrote {tmp_path}/out\\nput/c.json and "
            f"{tmp_path}/out\\nput/c.json.signature.json")
    assert want in err.splitlines(), err


def test_plot_wrote_line_is_one_line(tmp_path, odd_dir, capsys) -> None:
    pytest.importorskip("matplotlib")
    prof, _, _, _ = _profile_and_scores(tmp_path)
    out = odd_dir / "h.png"
    assert main(["plot", str(prof), "--kind", "hist", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"ddp plot: wrote {tmp_path}/out\\nput/h.png (hist, 60 segments)" in err.splitlines(), err


def test_select_summary_wrote_line_is_one_line(tmp_path, odd_dir, capsys) -> None:
    src = pl.DataFrame({"document_id": ["d1"] * 4, "segment_id": [0, 1, 2, 3], "source": ["a.", "b.", "c.", "d."]})
    src.write_csv(tmp_path / "in.csv")
    pl.DataFrame({"document_id": ["d1"] * 4, "segment_id": [0, 1, 2, 3], "ddp": [0, 1, 3, 2],
                  "first_sentence": [0, 1, 2, 3], "n_sentences": [1] * 4}).write_parquet(tmp_path / "p.parquet")
    out = odd_dir / "o.csv"
    assert main(["select", str(tmp_path / "in.csv"), "--profile", str(tmp_path / "p.parquet"), "--min-ddp", "1",
                 "-o", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    # by hand: DDP >= 1 keeps segments 1, 2, 3
    assert f"wrote {tmp_path}/out\\nput/o.csv (3 segments); also {tmp_path}/out\\nput/o.csv.signature.json" in lines


# --------------------------------------------------------------------------- 3. agree: a DDP column of text


def _runs(tmp_path: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    a = pl.DataFrame({"document_id": ["d1"] * 5, "segment_id": [0, 1, 2, 3, 4], "domain": ["x"] * 5,
                      "ddp": [0, 1, 3, 2, 7], "ddp_certified": [0, 1, 2, 2, 4]})
    b = a.with_columns(pl.Series("ddp", [0, 2, 3, 2, 5]))
    a.write_parquet(tmp_path / "a.parquet")
    b.write_parquet(tmp_path / "b.parquet")
    b.with_columns(pl.col("ddp").cast(pl.String)).write_parquet(tmp_path / "b_text.parquet")
    return a, b


def test_agree_refuses_a_text_ddp_column_as_select_does(tmp_path, capsys) -> None:
    """Before: exit 0 (the text read as numbers). Now D781 exit 3, as `ddp select --profile` says for it."""
    _runs(tmp_path)
    assert main(["agree", str(tmp_path / "a.parquet"), str(tmp_path / "b_text.parquet")]) == 3
    (line,) = _err_lines(capsys.readouterr().err)
    assert line.startswith("ddp agree: error: [D781] --ddp-col ddp: column 'ddp' of B (") and "holds String" in line
    # the same file as select's profile: the same code
    pl.DataFrame({"document_id": ["d1"] * 5, "segment_id": [0, 1, 2, 3, 4], "source": list("abcde")}).write_csv(
        tmp_path / "in.csv")
    pl.read_parquet(tmp_path / "b_text.parquet").with_columns(first_sentence=pl.col("segment_id"),
                                                             n_sentences=pl.lit(1)).write_parquet(tmp_path / "p.parquet")
    assert main(["select", str(tmp_path / "in.csv"), "--profile", str(tmp_path / "p.parquet"), "--min-ddp", "1",
                 "-o", str(tmp_path / "o.csv")]) == 3
    assert "[D781]" in capsys.readouterr().err


def test_agree_names_the_b_ddp_col_flag(tmp_path, capsys) -> None:
    _runs(tmp_path)
    pl.read_parquet(tmp_path / "b.parquet").with_columns(pl.col("ddp_certified").cast(pl.String)).write_parquet(
        tmp_path / "b2.parquet")
    assert main(["agree", str(tmp_path / "a.parquet"), str(tmp_path / "b2.parquet"), "--b-ddp-col",
                 "ddp_certified"]) == 3
    (line,) = _err_lines(capsys.readouterr().err)
    assert "[D781] --b-ddp-col ddp_certified: column 'ddp_certified' of B (" in line


def test_agree_api_refuses_a_text_ddp_column_and_keeps_numbers(tmp_path) -> None:
    from ddpcore.errors import DDPDataError
    from ddpcore.gold.agree import agree

    a, b = _runs(tmp_path)
    with pytest.raises(DDPDataError, match=r"\[D781\] --ddp-col ddp: column 'ddp' of B holds String"):
        agree(a, b.with_columns(pl.col("ddp").cast(pl.String)))
    with pytest.raises(DDPDataError, match=r"\[D781\]"):
        agree(a.with_columns(pl.col("ddp").cast(pl.String)), b)
    r = agree(a, b)  # numbers as before: Pearson r from scipy over the two columns
    assert r.pearson == pytest.approx(scipy.stats.pearsonr(a["ddp"], b["ddp"]).statistic)


# --------------------------------------------------------------------------- 4. stratify -f tsv signature


def test_stratify_tsv_names_the_ddp_column_on_stdout_and_in_a_file(tmp_path, capsys) -> None:
    prof, sc, p, s = _profile_and_scores(tmp_path)
    base = ["stratify", str(prof), str(sc), "--score-col", "score", "--ddp-col", "ddp_certified", "--n-boot", "0",
            "--bins", "0,2,inf"]
    assert main([*base, "-f", "tsv"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("kind\tn\trho\t")  # the header stays the first line
    assert lines[-1].startswith("# signature: ")
    sig = json.loads(lines[-1][len("# signature: "):])
    assert sig["ddp_col"] == "ddp_certified" and sig["score_col"] == "score"
    rows = pl.read_csv(out.encode(), separator="\t", comment_prefix="#")
    # expected: numpy over the joined table, bins [0, 2) and [2, inf) of ddp_certified
    j = s.join(p, on=["document_id", "segment_id"])
    for low, high in ((0, 2), (2, np.inf)):
        x = j.filter((pl.col("ddp_certified") >= low) & (pl.col("ddp_certified") < high))["score"].to_numpy()
        r = rows.filter(pl.col("low") == low)
        assert int(r["bin_n"][0]) == x.size and float(r["mean"][0]) == pytest.approx(x.mean(), rel=1e-5)
    assert main([*base, "-o", str(tmp_path / "r.tsv")]) == 0
    capsys.readouterr()
    assert (tmp_path / "r.tsv").read_text(encoding="utf-8") == out  # the file holds what stdout showed


# --------------------------------------------------------------------------- 5. --help


from tests.test_cli_vocabulary import PARSERS  # noqa: E402  (every parser of `ddp`, by command name)


def _shown(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.help != argparse.SUPPRESS
            and not isinstance(a, argparse._HelpAction)]


@pytest.mark.parametrize("cmd", sorted(PARSERS))
def test_every_option_that_takes_a_value_has_a_metavar_and_shows_its_default(cmd: str) -> None:
    """A value-taking option shows what it takes (a metavar or its choices, never argparse's DEST), and one
    with a default (not None/False/[]: an option off unless given) says it in its help, 0 included."""
    parser = PARSERS[cmd]
    formatter = parser._get_formatter()
    no_metavar, no_default = [], []
    for a in _shown(parser):
        if a.nargs == 0:
            continue
        if a.metavar is None and a.choices is None:
            no_metavar.append(a.option_strings[-1])
        if a.default is not None and a.default is not False and a.default is not argparse.SUPPRESS \
                and a.default != [] and "default" not in formatter._expand_help(a):
            no_default.append(a.option_strings[-1])
    assert not no_metavar, f"ddp {cmd}: options shown with argparse's DEST as metavar: {no_metavar}"
    assert not no_default, f"ddp {cmd}: options whose default --help does not show: {no_default}"


@pytest.mark.parametrize("cmd", [c for c, p in sorted(PARSERS.items())
                                 if any("--seed" in a.option_strings for a in _shown(p))])
def test_seed_default_zero_is_shown(cmd: str) -> None:
    """Before: `ddp stats tau --help` said '--seed SEED  seed of the resampling generator' (0 == False, skipped)."""
    text = " ".join(PARSERS[cmd].format_help().split())
    assert "--seed N " in text and "(default: 0)" in text.split("--seed N ", 2)[-1].split(" --", 1)[0]


@pytest.mark.parametrize("cmd", ["select", "sample"])
def test_select_sample_txt_mode_paragraphs_is_refused_not_ignored(tmp_path, capsys, cmd: str) -> None:
    """Before: exit 0 and the flag had no effect (a .txt folder cannot be selected from: D633). Now D601."""
    pl.DataFrame({"document_id": ["d1"] * 4, "segment_id": [0, 1, 2, 3], "source": list("abcd")}).write_csv(
        tmp_path / "in.csv")
    pl.DataFrame({"document_id": ["d1"] * 4, "segment_id": [0, 1, 2, 3], "ddp": [0, 1, 3, 2],
                  "first_sentence": [0, 1, 2, 3], "n_sentences": [1] * 4}).write_parquet(tmp_path / "p.parquet")
    what = ["--min-ddp", "1"] if cmd == "select" else ["--per-bin", "1"]
    assert main([cmd, str(tmp_path / "in.csv"), "--profile", str(tmp_path / "p.parquet"), *what,
                 "-o", str(tmp_path / "o.csv"), "--txt-mode", "paragraphs"]) == 2
    (line,) = _err_lines(capsys.readouterr().err)
    assert line.startswith(f"ddp {cmd}: error: [D601] --txt-mode paragraphs: is for a folder of .txt documents")
    assert not (tmp_path / "o.csv").exists()
    # --txt-mode lines (the default) is what these commands read: accepted
    assert main([cmd, str(tmp_path / "in.csv"), "--profile", str(tmp_path / "p.parquet"), *what,
                 "-o", str(tmp_path / "o.csv"), "--txt-mode", "lines"]) == 0
