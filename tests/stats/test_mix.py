"""``ddpcore.curate.mix`` and ``ddp mix``: MIX constraints, determinism, infeasible documents, the CLI."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpcore.cli.main import main
from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.curate.mix import assign_sources, build_mix, check_assignment


def outputs_table(lengths: dict[str, int], systems: list[str]) -> pl.DataFrame:
    rows = [dict(document_id=d, segment_id=s, system=sy, text=f"{d}|{s}|{sy}")
            for d, n in lengths.items() for s in range(n) for sy in systems]
    return pl.DataFrame(rows)


# --------------------------------------------------------------------------- properties


@settings(max_examples=150, deadline=None)
@given(lengths=st.lists(st.integers(1, 25), min_size=1, max_size=12), m=st.integers(2, 9),
       seed=st.integers(0, 2**64), forbid=st.booleans())
def test_constraints_hold_for_every_document_and_pool(lengths: list[int], m: int, seed: int, forbid: bool) -> None:
    if forbid and m < 3:
        with pytest.raises(DDPUsageError, match="D505"):
            assign_sources(lengths, m, seed, forbid_adjacent_repeat=True)
        return
    a = assign_sources(lengths, m, seed, forbid_adjacent_repeat=forbid)
    n_j = np.repeat(lengths, m)
    assert a.source.size == n_j.sum()
    assert ((a.source >= 0) & (a.source < m)).all()
    np.testing.assert_array_equal(a.feasible, n_j >= m)  # infeasible = shorter than the pool, reported
    assert check_assignment(a, forbid_adjacent_repeat=forbid).all()
    # determinism per seed
    b = assign_sources(lengths, m, seed, forbid_adjacent_repeat=forbid)
    np.testing.assert_array_equal(a.source, b.source)


def test_check_assignment_detects_violations() -> None:
    a = assign_sources([5, 5], 3, 0, forbid_adjacent_repeat=True)
    src = a.source.copy()
    src[0] = a.nominal[0]  # nominal twice (or moved) in the first MIX document
    bad = type(a)(src, a.nominal, a.feasible, a.n_segments, a.n_pool)
    ok = check_assignment(bad, forbid_adjacent_repeat=True)
    assert not ok.all()


def test_seed_changes_assignment_and_same_seed_is_identical() -> None:
    df = outputs_table({"a": 12, "b": 7, "c": 30}, ["X", "Y", "Z", "W"])
    r1, r2, r3 = build_mix(df, seed=5), build_mix(df, seed=5), build_mix(df, seed=6)
    assert r1.mix.equals(r2.mix) and r1.assignment.equals(r2.assignment)
    assert not r1.mix.equals(r3.mix)


def test_mix_rows_are_the_source_systems_translations() -> None:
    df = outputs_table({"a": 6, "b": 2}, ["X", "Y", "Z"])
    r = build_mix(df, seed=0)
    assert r.mix.columns == ["document_id", "segment_id", "system", "text", "source_system"]
    expect = r.mix.select(pl.format("{}|{}|{}", "document_id", "segment_id", "source_system"))
    assert r.mix["text"].to_list() == expect.to_series().to_list()
    # segments keep their order within every MIX document
    assert r.mix.group_by("document_id", "system", maintain_order=True).agg(
        pl.col("segment_id").diff().drop_nulls().min()).filter(pl.col("segment_id") <= 0).height == 0
    assert r.mix.height == (6 + 2) * 3
    # b has 2 segments < 3 systems: reported once per nominal system
    assert r.infeasible["document_id"].to_list() == ["b", "b", "b"]
    assert r.summary()["infeasible_documents"] == ["b"]


def test_preference_for_other_systems_distribution() -> None:
    """Nominal exactly once per feasible MIX document; the other positions spread over the others."""
    a = assign_sources([40] * 200, 5, 1)
    src = a.source.reshape(200 * 5, 40)
    nominal_count = (src == a.nominal[:, None]).sum(axis=1)
    assert (nominal_count == 1).all()
    # nominal position uniform over 40 positions: chi-square-ish sanity (every position used)
    pos = np.argmax(src == a.nominal[:, None], axis=1)
    assert np.unique(pos).size == 40


def test_string_segment_ids_keep_input_order() -> None:
    df = pl.DataFrame({"doc": ["d"] * 6, "seg": ["z", "z", "a", "a", "m", "m"], "sys": ["X", "Y"] * 3,
                       "tgt": [f"t{i}" for i in range(6)]})
    r = build_mix(df, seed=0, document="doc", segment="seg", system="sys", text="tgt")
    assert r.mix.filter(pl.col("sys") == "X")["seg"].to_list() == ["z", "a", "m"]


def test_pool_and_exclude() -> None:
    df = outputs_table({"a": 5}, ["X", "Y", "Z", "refA"])
    assert build_mix(df, seed=0, exclude_systems=["refA"]).pool == ["X", "Y", "Z"]
    assert build_mix(df, seed=0, pool=["Z", "X"]).pool == ["X", "Z"]
    assert set(build_mix(df, seed=0, pool=["Z", "X"]).mix["source_system"]) <= {"X", "Z"}


# --------------------------------------------------------------------------- bad input


def test_pool_of_one_system() -> None:
    with pytest.raises(DDPDataError, match=r"D500.*1 system"):
        build_mix(outputs_table({"a": 3}, ["X"]), seed=0)


def test_document_missing_a_pooled_system() -> None:
    df = outputs_table({"a": 3, "b": 4}, ["X", "Y"]).filter(
        ~((pl.col("document_id") == "b") & (pl.col("segment_id") == 2) & (pl.col("system") == "Y")))
    with pytest.raises(DDPDataError, match=r"D502.*document 'b', segment 2.*'Y'"):
        build_mix(df, seed=0)


def test_pool_names_an_absent_system() -> None:
    with pytest.raises(DDPDataError, match=r"D502.*'Q'"):
        build_mix(outputs_table({"a": 3}, ["X", "Y"]), seed=0, pool=["X", "Q"])


def test_duplicate_output() -> None:
    df = outputs_table({"a": 3}, ["X", "Y"])
    with pytest.raises(DDPDataError, match=r"D503.*document 'a', segment 0.*'X'"):
        build_mix(pl.concat([df, df.head(1)]), seed=0)


# --------------------------------------------------------------------------- CLI


def test_cli_byte_identical_per_seed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "out.csv"
    outputs_table({"a": 9, "b": 4, "c": 2}, ["X", "Y", "Z"]).write_csv(src)
    digests = []
    for k in range(2):
        mix, asg = tmp_path / f"mix{k}.parquet", tmp_path / f"asg{k}.csv"
        assert main(["mix", str(src), "--seed", "7", "-o", str(mix), "--assignment", str(asg)]) == 0
        digests.append((mix.read_bytes(), asg.read_bytes()))
        summary = json.loads(capsys.readouterr().out)
        assert summary["signature"]["seed"] == 7 and summary["n_infeasible"] == 3
        assert (tmp_path / f"asg{k}.csv.signature.json").exists()
    assert digests[0] == digests[1]
    meta = pl.read_parquet_schema(tmp_path / "mix0.parquet")  # readable
    assert "source_system" in meta


def test_cli_fail_on_infeasible(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "out.csv"
    outputs_table({"a": 9, "b": 2}, ["X", "Y", "Z"]).write_csv(src)
    code = main(["mix", str(src), "--seed", "0", "-o", str(tmp_path / "m.csv"), "--assignment",
                 str(tmp_path / "a.csv"), "--fail-on", "infeasible"])
    assert code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "gate infeasible failed" in err[0] and "(b)" in err[0]


def test_wmt24_layout_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "o").mkdir()
    docs = ["canary\tcanary"] + [f"news\td{i // 3}" for i in range(9)]
    (tmp_path / "x.docs").write_text("\n".join(docs) + "\n")
    for s in ("A", "B", "en-cs.refA"):
        (tmp_path / "o" / f"{s}.txt").write_text("\n".join(f"{s}{i}" for i in range(10)) + "\n")
    code = main(["mix", "--reader", "wmt24", "--docs", str(tmp_path / "x.docs"), "--outputs", str(tmp_path / "o"),
                 "--seed", "1", "-o", str(tmp_path / "m.jsonl"), "--assignment", str(tmp_path / "a.parquet")])
    assert code == 0
    mix = pl.read_ndjson(tmp_path / "m.jsonl")
    assert sorted(mix["system"].unique()) == ["A", "B", "refA"]
    assert mix.height == 9 * 3 and 0 not in mix["line_id"].to_list()  # canary (line 0) dropped
    # segment_id = position within the document (as ddp profile --reader wmt24), line_id = the line of the files
    assert (mix["segment_id"] == (mix["line_id"] - 1) % 3).all()
    assert (mix["text"] == mix["source_system"].str.replace("refA", "en-cs.refA") + mix["line_id"].cast(pl.String)).all()


@pytest.mark.shared_data
def test_real_wmt25_enko(shared_data: Path) -> None:
    hyp = shared_data / "wmt25-genmt" / "wmt25_en-ko_KR_hypotheses_Algharb_Laniqo.jsonl"
    r = build_mix(hyp, seed=0, document="doc", segment="seg_idx", text="tgt")
    assert r.pool == ["Algharb", "Laniqo"] and r.n_documents == 87 and r.n_segments == 332
    a = r.assignment
    # two systems: every document with >= 2 segments has the nominal exactly once
    feas = a.filter(pl.col("feasible")).group_by("doc", "system").agg(
        (pl.col("source_system") == pl.col("system")).sum().alias("k"))
    assert (feas["k"] == 1).all()


@pytest.mark.shared_data
def test_real_wmt24_enhi_constraints(shared_data: Path) -> None:
    from ddpcore.io.wmt_outputs import read_wmt_outputs

    w = shared_data / "wmt24-genmt"
    outs = read_wmt_outputs(w / "wmt24_en.docs", w / "wmt24_system_outputs_en-cs_en-hi_en-ja_en-zh.tar.xz", lp="en-hi")
    with pytest.warns(UserWarning, match="every output of 'ONLINE-empty' is empty"):  # a WMT24 baseline
        r = build_mix(outs, seed=0, exclude_systems=["refA"], forbid_adjacent_repeat=True)
    assert r.n_empty_outputs == 1019 and r.empty_systems == ("ONLINE-empty",)  # 997 + 22 (polars count, by hand)
    assert r.n_documents == 170 and r.n_segments == 997 and "refA" not in r.pool
    a = r.assignment
    per = a.group_by("document_id", "system").agg(
        pl.col("source_system").n_unique().alias("k"), pl.len().alias("n"),
        (pl.col("source_system") == pl.col("system")).sum().alias("nom"), pl.col("feasible").first())
    feas = per.filter(pl.col("feasible"))
    assert (feas["k"] == len(r.pool)).all() and (feas["nom"] == 1).all()
    short = per.filter(~pl.col("feasible"))
    assert (short["k"] == short["n"]).all() and (short["nom"] == 0).all()
    assert short.height == r.infeasible.height
    adj = a.with_columns(pl.col("source_system").shift(1).over("document_id", "system").alias("prev"))
    assert adj.filter(pl.col("prev") == pl.col("source_system")).height == 0


def test_empty_outputs_are_said_and_recorded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An empty or blank translation (a system that gave nothing) went into MIX documents without a word. It
    is still used (it is that system's output, in DOC as in MIX) but said on stderr, in the summary and in the
    signature."""
    df = outputs_table({"a": 4, "b": 3}, ["X", "Y", "Z"]).with_columns(
        pl.when((pl.col("document_id") == "a") & (pl.col("segment_id") == 2) & (pl.col("system") == "Y"))
        .then(pl.lit("")).when((pl.col("document_id") == "b") & (pl.col("segment_id") == 0) & (pl.col("system") == "Z"))
        .then(pl.lit(" \t")).otherwise(pl.col("text")).alias("text"))
    with pytest.warns(UserWarning, match=r"2 pooled output\(s\) are empty .*first: document 'a', segment 2, system 'Y'"):
        r = build_mix(df, seed=0)
    assert r.n_empty_outputs == 2 and r.signature["empty_outputs"] == 2
    assert r.summary()["n_empty_outputs"] == 2
    assert r.mix.filter(pl.col("text").str.strip_chars() == "").height == 2  # both used, once each
    clean = build_mix(outputs_table({"a": 4}, ["X", "Y"]), seed=0)
    assert clean.n_empty_outputs == 0 and "empty_outputs" not in clean.signature
    src = tmp_path / "out.csv"
    df.write_csv(src)
    assert main(["mix", str(src), "--seed", "0", "-o", str(tmp_path / "m.csv"), "--assignment",
                 str(tmp_path / "a.csv")]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["n_empty_outputs"] == 2
    assert [ln for ln in cap.err.splitlines() if "empty" in ln] == [
        "ddp mix: warning: 2 pooled output(s) are empty or white space only (first: document 'a', segment 2, system "
        "'Y'); they go into MIX documents as they are, as into the DOC ones: give the system's translation, or leave "
        "the system out with --pool/--exclude-system"]
    assert json.loads((tmp_path / "m.csv.signature.json").read_text())["empty_outputs"] == 2
    # a system that gave nothing at all is named
    dead = outputs_table({"a": 4, "b": 3}, ["X", "Y", "ONLINE-empty"]).with_columns(
        pl.when(pl.col("system") == "ONLINE-empty").then(pl.lit("")).otherwise(pl.col("text")).alias("text"))
    with pytest.warns(UserWarning, match=r"7 pooled output\(s\) .*; every output of 'ONLINE-empty' is empty\)"):
        r = build_mix(dead, seed=0)
    assert r.empty_systems == ("ONLINE-empty",) and r.signature["empty_systems"] == ["ONLINE-empty"]
