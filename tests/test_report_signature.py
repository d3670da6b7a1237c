"""``ddp report`` on a profile whose signature is missing or damaged: one line, a data error (exit 3)
naming the file and what to do, never an internal error (D999). Profiles are hand-made like ``ddp profile``
outputs written with --document-col doc --segment-col seg --text-col src (no spaCy)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

pytest.importorskip("matplotlib")

from ddpcore.errors import DDPDataError  # noqa: E402
from ddpcore.report.html import render  # noqa: E402

SIG = {"ddpcore": "0.1.0", "distance": "chained", "rules": "refined", "pipeline_name": "en_core_web_sm",
       "columns": {"document": "doc", "segment": "seg", "text": "src", "domain": "domain"}}


def _profile() -> pl.DataFrame:
    return pl.DataFrame({
        "doc": ["a", "a", "b"], "seg": [0, 1, 0], "domain": ["news", "news", "fiction"],
        "n_sentences": [2, 2, 2], "ddp": [0, 3, 1], "first_sentence": [0, 2, 0],
        "src": ["Alice met Bob. They talked.", "It was late. She left.", "The ship sailed. He slept."]})


def _csv(path: Path, sidecar: str | None) -> Path:
    _profile().write_csv(path)
    if sidecar is not None:
        Path(f"{path}.signature.json").write_text(sidecar, encoding="utf-8")
    return path


def _parquet(path: Path, raw: bytes | None) -> Path:
    t = _profile().to_arrow().replace_schema_metadata(None if raw is None else {b"ddpcore.signature": raw})
    pq.write_table(t, path)
    return path


def _report(profile: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ddpcore.cli.main", "report", profile, "-o", "r.html"], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def _one_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "[D999]" not in proc.stderr
    return lines[0]


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_report_without_signature_names_file_and_remedy(tmp_path: Path, kind: str) -> None:
    """The signature is gone (sidecar not copied / Parquet rewritten without metadata): the table's id columns
    are not the default names, so the report cannot know them: D671 naming the file, the column and the remedy."""
    name = "nosc.csv" if kind == "csv" else "nometa.parquet"
    _csv(tmp_path / name, None) if kind == "csv" else _parquet(tmp_path / name, None)
    proc = _report(name, tmp_path)
    assert proc.returncode == 3, proc.stderr
    line = _one_line(proc)
    assert line.startswith("ddp report: error: [D671]") and f"{name}, column 'document_id'" in line
    assert "regenerate it with `ddp profile`" in line and "doc, seg, domain" in line
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("content, what", [
    ("{bad", "is not valid JSON"),
    ("[1, 2]", "is not a ddpcore signature (expected a JSON object)"),
    ('{"columns": "oops"}', "'columns'"),
    ('{"columns": {"document": ["doc"]}}', "'columns'"),
])
def test_report_damaged_sidecar_is_a_data_error(tmp_path: Path, content: str, what: str) -> None:
    _csv(tmp_path / "b.csv", json.dumps(SIG))
    ok = _report("b.csv", tmp_path)  # with its signature the profile reports
    assert ok.returncode == 0, ok.stderr
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "document <b>a</b>, segment <b>1</b>" in html  # the top segment (ddp 3), found by the recorded names
    (tmp_path / "r.html").unlink()
    Path(f"{tmp_path / 'b.csv'}.signature.json").write_text(content, encoding="utf-8")
    proc = _report("b.csv", tmp_path)
    assert proc.returncode == 3, proc.stderr
    line = _one_line(proc)
    assert "[D103] b.csv.signature.json" in line and what in line and "ddp profile" in line
    assert "--rules" not in line  # explain's advice, not the report's
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("raw, what", [(b"{bad", "not valid JSON"), (b"[1, 2]", "expected a JSON object"),
                                       (b'{"columns": "oops"}', "'columns'")])
def test_report_damaged_parquet_signature_is_a_data_error(tmp_path: Path, raw: bytes, what: str) -> None:
    _parquet(tmp_path / "p.parquet", raw)
    proc = _report("p.parquet", tmp_path)
    assert proc.returncode == 3, proc.stderr
    line = _one_line(proc)
    assert "[D103] p.parquet" in line and what in line and "regenerate the profile with `ddp profile`" in line


def test_render_signature_naming_a_missing_column(tmp_path: Path) -> None:
    """A signature of another file (it names columns this table lacks): D671 says they do not match."""
    p = _csv(tmp_path / "m.csv", json.dumps({**SIG, "columns": {**SIG["columns"], "segment": "segment_nr"}}))
    with pytest.raises(DDPDataError, match=r"\[D671\] .*m\.csv, column 'segment_nr': its signature names "
                                           r"'segment_nr' as the segment id column.*do not match"):
        render(str(p))


def test_report_certify_entry_that_is_not_an_object(tmp_path: Path) -> None:
    """A signature whose 'certify' is not an object is damaged: D103 naming the sidecar (the `ddp explain` table
    of a segment crashed on it before, D999); with a real 'certify' the certified DDP is shown."""
    texts = ["Alice met Bob. She left.", "It was late. He slept."]
    seg = pl.DataFrame({"doc": ["a", "a"], "seg": [0, 1], "domain": ["news", "news"], "n_sentences": [2, 2],
                        "ddp": [0, 3], "ddp_certified": [0, 2], "first_sentence": [0, 2], "src": texts})
    he = texts[1].index("He")
    pl.DataFrame({"doc": ["a"], "seg": [1], "sentence": [3], "kind": ["pronoun"], "label": ["he"], "text": ["He"],
                  "char_start": [he], "char_end": [he + 2], "entity_id": [0], "antecedent_kind": ["entity"],
                  "antecedent_text": ["Bob"], "antecedent_sentence": [0], "reference_sentence": [0],
                  "distance_sentences": [3]}).write_parquet(tmp_path / "anchors.parquet")
    seg.write_csv(tmp_path / "c.csv")
    side = Path(f"{tmp_path / 'c.csv'}.signature.json")
    cmd = [sys.executable, "-m", "ddpcore.cli.main", "report", "c.csv", "--anchors", "anchors.parquet", "-o", "r.html"]
    side.write_text(json.dumps({**SIG, "certify": "oops"}), encoding="utf-8")
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 3 and "[D103] " + side.name in proc.stderr and "'certify' to be an object" in proc.stderr
    assert not (tmp_path / "r.html").exists()
    side.write_text(json.dumps({**SIG, "certify": {"file": "certify-v5.json", "threshold": 0.95}}), encoding="utf-8")
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "DDP = 3 sentence(s)" in html  # the explain table of segment 1 (ddp 3)
    assert "certified DDP = 2" in html
