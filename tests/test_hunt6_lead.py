"""Fixes of the lead's round-6 hunt: segments without a domain never merge with a domain named "(none)"."""
from __future__ import annotations

import polars as pl
import pytest
from pathlib import Path

import ddpcore
from ddpcore.report.html import domain_top_segments


def _table() -> pl.DataFrame:
    # by hand: documents a, b have the domain "(none)" (a real name); c, d have none (null).
    return pl.DataFrame({"document_id": ["a", "b", "c", "d", "e"], "segment_id": [0, 0, 0, 0, 0],
                         "domain": ["(none)", "(none)", None, None, "news"], "ddp": [1, 2, 7, 9, 0]})


def test_summary_keeps_a_domain_named_none_apart_from_segments_without_one():
    s = ddpcore.summarize(_table())
    # the real domain "(none)" (a, b: max 2), the segments without a domain labelled "((none))" (c, d: max 9),
    # news, then the total; no two rows share a name
    assert s["group"].to_list() == ["((none))", "(none)", "news", "all"]
    by = {r["group"]: r for r in s.iter_rows(named=True)}
    assert (by["(none)"]["segments"], by["(none)"]["max_ddp"]) == (2, 2)
    assert (by["((none))"]["segments"], by["((none))"]["max_ddp"]) == (2, 9)
    assert by["all"]["segments"] == 5


def test_summary_labels_missing_domains_none_when_no_domain_has_that_name():
    s = ddpcore.summarize(_table().with_columns(pl.col("domain").replace("(none)", "fiction")))
    assert s["group"].to_list() == ["(none)", "fiction", "news", "all"]


def test_report_top_segments_keep_a_domain_named_none_apart():
    df = _table().with_columns(pl.Series("source", ["x."] * 5))
    page = domain_top_segments(df, None, {"columns": {}}, k=5, shown=0)
    assert '<h3 id="domain-(none)">(none)</h3>' in page and '<h3 id="domain-((none))">((none))</h3>' in page
    # each heading is followed by its own segments only: "(none)" holds a and b, "((none))" c and d
    real = page.split('<h3 id="domain-(none)">')[1].split("<h3")[0]
    missing = page.split('<h3 id="domain-((none))">')[1].split("<h3")[0]
    assert "<b>a</b>" in real and "<b>b</b>" in real and "<b>c</b>" not in real
    assert "<b>c</b>" in missing and "<b>d</b>" in missing and "<b>a</b>" not in missing


def test_select_evaluate_checks_its_report_path_as_every_output(tmp_path):
    """-o of `select --evaluate` gets the shared output checks before any work (the inputs here do not even
    exist): a missing folder is D130 naming what to do, an existing folder named like a report D132."""
    import subprocess
    import sys

    def run(out):
        return subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "select", "--evaluate", str(tmp_path / "s.csv"),
                               "--profile", str(tmp_path / "p.parquet"), "-o", str(out)], capture_output=True, text=True)

    r = run(tmp_path / "missing" / "r.md")
    assert r.returncode == 2 and "[D130]" in r.stderr and "mkdir -p" in r.stderr
    (tmp_path / "dir.md").mkdir()
    r = run(tmp_path / "dir.md")
    assert r.returncode == 2 and "[D132]" in r.stderr


def test_plot_groups_keep_a_domain_named_none_apart():
    """`ddp plot --by domain` series: the real domain "(none)" (a, b) and the rows without one (c, d) are two
    series, "(none)" and "((none))", each with its own DDP values."""
    from ddpcore.report.plots import _groups_of

    groups = dict(_groups_of(_table(), "domain"))
    assert sorted(groups) == ["((none))", "(none)", "news"]
    assert groups["(none)"].tolist() == [1.0, 2.0] and groups["((none))"].tolist() == [7.0, 9.0]


def test_blindness_says_the_tau_bootstraps_warnings(tmp_path, capsys):
    """100 document resamples leave fewer than one replicate in each 0.5 % tail of a 99 % tau CI: `ddp stats
    tau` warns (bootstrap_tau's warnings), blindness dropped it. Now a "tau: ..." warning, recorded in the
    JSON's warnings and counted in the signature; --strict: D930, exit 3."""
    import json

    from ddpcore.cli.main import main
    from ddpcore.stats.blindness import simulate_scores

    path = tmp_path / "scores.csv"
    simulate_scores(n_documents=12, n_segments=3, n_systems=6, seed=0, system_sd=1.0).write_csv(path)
    args = ["blindness", str(path), "--margin", "1", "--n-boot", "100", "--n-boot-cluster", "200",
            "--attribute", "nominal", "--confidence", "0.99"]
    assert main(args) == 0
    out = capsys.readouterr()
    res = json.loads(out.out)
    tau = [w for w in res["warnings"] if w.startswith("tau: ")]
    assert len(tau) == 1 and "100 replicate(s)" in tau[0] and "--n-boot" in tau[0]
    assert f"ddp blindness: warning: {tau[0]}" in out.err.splitlines()
    assert res["signature"]["n_warnings"] == len(res["warnings"])
    assert main([*args, "--strict"]) == 3
    err = capsys.readouterr().err
    assert "[D930] tau: " in err


def _mtme_profile(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    toy = Path(__file__).parent / "data" / "mtme" / "toy"
    prof = tmp_path / "mt.parquet"
    r = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "profile", f"{toy}/en-de", "--reader", "mtme",
                        "-o", str(prof), "-q"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return toy, prof


def test_select_writes_back_rows_of_an_mt_metrics_eval_test_set(tmp_path):
    """`ddp select --reader mtme` (the help offers the folder, FOLDER/LP and sources/LP.txt) stopped with D102
    (FOLDER/LP), D633 or D101. Now each form writes the kept source lines and their documents/LP.docs lines
    (the line layout), and --outputs filters the system outputs by the same lines. Expected lines: the rows of
    the profile with ddp >= 1, read from the toy's own files (independent of the selection code)."""
    import subprocess
    import sys

    toy, prof = _mtme_profile(tmp_path)
    p = pl.read_parquet(prof)
    keep = sorted(p.filter(pl.col("ddp") >= 1)["line_id"].to_list())
    assert 0 < len(keep) < p.height
    src = (toy / "sources" / "en-de.txt").read_text(encoding="utf-8").splitlines()
    docs = (toy / "documents" / "en-de.docs").read_text(encoding="utf-8").splitlines()
    sysa = (toy / "system-outputs" / "en-de" / "sysA.txt").read_text(encoding="utf-8").splitlines()
    for k, given in enumerate((f"{toy}/en-de", str(toy), f"{toy}/sources/en-de.txt")):
        out = tmp_path / f"sel{k}.txt"
        extra = ["--outputs", str(toy / "system-outputs" / "en-de")] if k == 0 else []
        r = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "select", given, "--reader", "mtme", "--profile",
                            str(prof), "--min-ddp", "1", "-o", str(out), *extra], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert out.read_text(encoding="utf-8").splitlines() == [src[i] for i in keep]
        assert out.with_suffix(".docs").read_text(encoding="utf-8").splitlines() == [docs[i] for i in keep]
        if extra:
            got = (tmp_path / "sel0.outputs" / "sysA.txt").read_text(encoding="utf-8").splitlines()
            assert got == [sysa[i] for i in keep]


def test_select_mtme_refuses_docs_and_names_a_missing_pair(tmp_path):
    import subprocess
    import sys

    toy, prof = _mtme_profile(tmp_path)

    def run(*args):
        return subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "select", *args, "--profile", str(prof),
                               "--min-ddp", "1", "-o", str(tmp_path / "s.txt")], capture_output=True, text=True)

    r = run(f"{toy}/en-de", "--reader", "mtme", "--docs", str(tmp_path / "x.docs"))
    assert r.returncode == 2 and "[D601]" in r.stderr
    r = run(f"{toy}/fr-xx", "--reader", "mtme")
    assert r.returncode == 3 and "[D821]" in r.stderr and "no language pair fr-xx" in r.stderr
    assert not (tmp_path / "s.txt").exists()


def test_the_input_digest_of_an_mt_metrics_eval_set_covers_its_documents(tmp_path):
    """The input digest of --shard (what `ddp merge` compares, D176) and of --resume covered only the input
    path's own bytes: for --reader mtme that is sources/LP.txt (FOLDER/LP) or nothing at all (the test-set
    folder holds no .txt of its own), never documents/LP.docs, so shards profiled before and after a document
    was renamed merged in silence. Now it is the digest of both files: it changes with the .docs, and the
    three spellings of one test set give one digest."""
    import json
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    import pyarrow.parquet as pq

    from ddpcore.engines.run import INPUT_DIGEST, input_digest

    toy = tmp_path / "toy"
    shutil.copytree(Path(__file__).parent / "data" / "mtme" / "toy", toy)
    docs = toy / "documents" / "en-de.docs"

    def digest(given: str, k: int) -> str:
        out = tmp_path / f"s{k}.parquet"
        r = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "profile", given, "--reader", "mtme",
                            "--shard", "0/1", "-o", str(out), "-q"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return json.loads(pq.read_metadata(out).metadata[b"ddpcore.signature"])[INPUT_DIGEST]

    forms = (str(toy), f"{toy}/en-de", f"{toy}/sources/en-de.txt")
    before = {digest(g, k) for k, g in enumerate(forms)}
    # by hand: the SHA-256 over the two files (names and sizes between), as input_digest computes it for a
    # source with its .docs
    assert before == {input_digest(toy / "sources" / "en-de.txt", docs)}
    docs.write_text(docs.read_text(encoding="utf-8").replace("doc-b", "doc-c"), encoding="utf-8")
    after = {digest(g, k + 3) for k, g in enumerate(forms)}
    assert len(after) == 1 and after != before


def test_lines_docs_with_a_space_where_other_lines_have_a_tab_is_d604(tmp_path):
    """`--reader lines`: a .docs line 'social doc-b' among 'news<TAB>doc-a' lines became the document id
    'social doc-b' without a domain, in silence (mt-metrics-eval .docs may use spaces). Now D604 naming the
    line; a file of bare ids (no tab anywhere) with spaces stays valid."""
    import subprocess
    import sys

    src = tmp_path / "s.txt"
    src.write_text("Anna came.\nShe left.\nBob sat.\n", encoding="utf-8")

    def run(docs_text):
        docs = tmp_path / "s.docs"
        docs.write_text(docs_text, encoding="utf-8")
        return subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "profile", str(src), "--reader", "lines",
                               "-o", str(tmp_path / "p.parquet"), "-q"], capture_output=True, text=True)

    r = run("news\tdoc-a\nnews\tdoc-a\nsocial doc-b\n")
    assert r.returncode == 3 and "[D604]" in r.stderr and "line 3" in r.stderr and "'social doc-b'" in r.stderr
    r = run("doc a\ndoc a\ndoc b\n")  # bare ids only: ids with a space are ids
    assert r.returncode == 0, r.stderr
    assert pl.read_parquet(tmp_path / "p.parquet")["document_id"].to_list() == ["doc a", "doc a", "doc b"]


def test_explain_names_its_input_in_the_invisible_characters_warning(tmp_path):
    """`ddp explain` said '<table>' where `ddp profile` names the file."""
    import subprocess
    import sys

    src = tmp_path / "zw.jsonl"
    src.write_text('{"document_id":"d1","segment_id":0,"source":"John Smith came."}\n'
                   '{"document_id":"d1","segment_id":1,"source":"\\u200bHe left."}\n', encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "explain", str(src), "--document", "d1", "--segment",
                        "1"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    warn = [ln for ln in r.stderr.splitlines() if "invisible characters" in ln]
    assert len(warn) == 1 and f"{src}, column 'source'" in warn[0] and "<table>" not in warn[0]


def _compare(*args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "stats", "compare", *args], capture_output=True,
                          text=True)


def test_corpus_bleu_takes_a_tokenizer_and_matches_sacrebleu(tmp_path):
    """--tokenize zh: corpus BLEU equals sacrebleu's BLEU(tokenize="zh").corpus_score on the same texts (the
    expected values come from sacrebleu itself); with 13a (the default) the Chinese scores differ."""
    import json

    sacrebleu = pytest.importorskip("sacrebleu")
    refs = ["我们今天去公园散步。", "他喜欢读书和写字。", "天气很好，阳光明媚。", "这个问题很难回答。"] * 3
    hyps = {"base": ["我们今天去公园。", "他喜欢读书写字。", "天气很好。", "这个问题很难。"] * 3,
            "sys": ["我们今天去公园散步。", "他喜欢看书和写字。", "天气很好，阳光很好。", "这问题很难回答。"] * 3}
    rows = [{"document_id": f"d{i // 2}", "segment_id": i % 2, "system": s, "hypothesis": h[i], "reference": refs[i]}
            for s, h in hyps.items() for i in range(len(refs))]
    path = tmp_path / "zh.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    for tok in ("zh", "13a"):
        r = _compare(str(path), "--baseline", "base", "--corpus-metric", "bleu", "--tokenize", tok,
                     "--n-boot", "50", "--n-ar", "50", "-f", "json")
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        scores = {row["system"]: row["score"] for row in out["results"]["bleu"]["systems"]}
        want = {s: sacrebleu.metrics.BLEU(tokenize=tok).corpus_score(h, [refs]).score for s, h in hyps.items()}
        assert scores == want  # to the last bit, as docs/stats-compare.md promises for the reported score
        assert ("tok:zh" in out["signature_line"]) == (tok == "zh")
    assert sacrebleu.metrics.BLEU(tokenize="zh").corpus_score(hyps["sys"], [refs]).score != \
        sacrebleu.metrics.BLEU(tokenize="13a").corpus_score(hyps["sys"], [refs]).score


def test_tokenize_is_refused_where_nothing_uses_it_or_sacrebleu_cannot(tmp_path):
    toy = Path(__file__).parent / "data" / "mtme" / "toy"
    r = _compare(f"{toy}/en-de", "--reader", "mtme", "--baseline", "sysA", "--corpus-metric", "chrf", "--tokenize", "zh")
    assert r.returncode == 2 and "[D953]" in r.stderr and "--corpus-metric bleu" in r.stderr
    r = _compare(f"{toy}/en-de", "--reader", "mtme", "--baseline", "sysA", "--corpus-metric", "bleu", "--tokenize", "xx")
    assert r.returncode == 2 and "[D953]" in r.stderr and "13a" in r.stderr


def test_mtme_chinese_target_warns_about_13a_and_records_it(tmp_path):
    """An mt-metrics-eval en-zh set scored with corpus BLEU and no --tokenize: 13a does not split Chinese into
    words; said on stderr and recorded (tokenize_note); --tokenize zh (or 13a) silences it."""
    import json
    import os
    import shutil

    pytest.importorskip("sacrebleu")
    toy = tmp_path / "toy"
    shutil.copytree(Path(__file__).parent / "data" / "mtme" / "toy", toy)
    for root, dirs, files in os.walk(toy, topdown=False):  # the same test set, as the language pair en-zh
        for name in files + dirs:
            if "en-de" in name:
                os.rename(Path(root) / name, Path(root) / name.replace("en-de", "en-zh"))
    args = [f"{toy}/en-zh", "--reader", "mtme", "--baseline", "sysA", "--corpus-metric", "bleu", "--n-boot", "50",
            "--n-ar", "50", "-f", "json"]
    r = _compare(*args)
    assert r.returncode == 0, r.stderr
    sig = json.loads(r.stdout)["signature"]
    note = (sig.get("corpus") or sig)["tokenize_note"]
    assert "13a" in note and "--tokenize zh" in note and f"warning: {note}" in r.stderr
    for tok in ("zh", "13a"):
        r = _compare(*args, "--tokenize", tok)
        assert r.returncode == 0 and "tokenize_note" not in r.stdout and "--tokenize zh" not in r.stderr


def test_corpus_metrics_say_the_budget_flags_they_do_not_apply(tmp_path):
    """--threads / --max-seconds / --max-memory were accepted and silently ignored by the corpus-metric path."""
    import json

    pytest.importorskip("sacrebleu")
    toy = Path(__file__).parent / "data" / "mtme" / "toy"
    r = _compare(f"{toy}/en-de", "--reader", "mtme", "--baseline", "sysA", "--corpus-metric", "chrf", "--n-boot", "50",
                 "--n-ar", "50", "--threads", "1", "--max-seconds", "30", "-f", "json")
    assert r.returncode == 0, r.stderr
    sig = json.loads(r.stdout)["signature"]
    assert (sig.get("corpus") or sig)["ignored_options"] == ["--threads", "--max-seconds"]
    assert any("--threads, --max-seconds: not applied to the corpus metrics (chrf)" in ln for ln in r.stderr.splitlines())
    r = _compare(f"{toy}/en-de", "--reader", "mtme", "--baseline", "sysA", "--corpus-metric", "chrf", "--n-boot", "50",
                 "--n-ar", "50", "-f", "json")
    assert r.returncode == 0 and "ignored_options" not in r.stdout and "not applied" not in r.stderr
