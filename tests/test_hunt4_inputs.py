"""Inputs that gave a different answer in silence, or an error that did not say why: a JSON key written twice
on one line, a CSV text column of digits, texts of zero-width characters, a profile given as input, CoNLL-U
entity brackets without ``# global.Entity``."""
from __future__ import annotations

import json
import random
from pathlib import Path

import polars as pl
import pytest

from ddpcore.cli.main import main
from ddpcore.errors import DDPDataError

from tests.test_hunt_inputs import DOCS, SEGS, TEXTS, _err_line  # noqa: F401  (the same fixtures and helper)


def _run(command: str, src: Path, tmp_path: Path, *extra: str) -> int:
    if command == "profile":
        return main(["profile", str(src), "-o", str(tmp_path / "out.csv"), "-q", *extra])
    return main(["explain", str(src), "--document", "d1", "--segment", "0", *extra])


# ---------------------------------------------------------------- a JSON key written twice in one object


def _rows() -> list[dict]:
    return [{"document_id": d, "segment_id": s, "source": t} for d, s, t in zip(DOCS, SEGS, TEXTS)]


def _jsonl(rows: list[dict], repeat: int | None = None, value: str = "Mary left. She smiled.") -> str:
    lines = [json.dumps(r) for r in rows]
    if repeat is not None:  # the line's "source" written a second time, with another text
        lines[repeat] = lines[repeat][:-1] + f', "source": {json.dumps(value)}}}'
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("command", ["profile", "explain"])
@pytest.mark.parametrize("nulls", [False, True])
def test_jsonl_key_written_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str,
                                            nulls: bool) -> None:
    """Was: exit 0 both ways, `ddp profile` with the first text (polars) and `ddp explain` with the last
    (Python's json): two commands, two answers for one segment."""
    rows = _rows()
    if nulls:  # a null value: the numpy path of the check (not the block-level count)
        rows = [{**r, "domain": None} for r in rows]
    src = tmp_path / "x.jsonl"
    src.write_text(_jsonl(rows, repeat=1))
    assert _run(command, src, tmp_path) == 3
    line = _err_line(capsys)
    assert "[D103]" in line and "x.jsonl: line 2: the key \"source\" appears twice" in line, line


def test_json_array_key_written_twice_names_the_element(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = _rows()
    text = json.dumps(rows, indent=1).replace('"source": "The cat sat."', '"source": "The cat sat.", "source": "x"')
    src = tmp_path / "x.json"
    src.write_text(text)
    assert _run("profile", src, tmp_path) == 3
    line = _err_line(capsys)
    assert "[D103]" in line and "x.json: array element 3 (line 12): the key \"source\" appears twice" in line, line


def test_wmt25_document_with_a_key_written_twice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "w.jsonl"
    src.write_text('{"doc_id": "d1", "domain": "news", "src_text": "A.\\n\\nB.", "src_text": "C."}\n')
    assert main(["profile", str(src), "--reader", "wmt25", "-o", str(tmp_path / "o.csv"), "-q"]) == 3
    assert "w.jsonl: line 1: the key \"src_text\" appears twice" in _err_line(capsys)


def test_jsonl_colons_in_texts_and_spaced_keys_still_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No false alarm: '\":' inside texts, keys with a space before the colon, null values, missing keys."""
    texts = ['He said "yes": she smiled.', '{"source": 1} is JSON.', 'A \\": b.']
    lines = [
        json.dumps({"document_id": "d1", "segment_id": 0, "source": texts[0], "domain": None}),
        '{"document_id" : "d1", "segment_id" :1, "source":' + json.dumps(texts[1]) + "}",
        json.dumps({"document_id": "d2", "segment_id": 0, "source": texts[2], "domain": "news"}),
    ]
    src = tmp_path / "x.jsonl"
    src.write_text("\n".join(lines) + "\n")
    assert _run("profile", src, tmp_path) == 0, capsys.readouterr().err
    assert pl.read_csv(tmp_path / "out.csv")["source"].to_list() == texts


def test_repeated_key_check_misses_no_repeat() -> None:
    """:func:`_maybe_repeated_keys` against the truth on random lines: keys with and without spaces before the
    colon, escaped keys, null values, missing keys, texts holding '\":'. It may send a block to the line-by-line
    parser for nothing; it must never let a repeated key through."""
    from ddpcore.io.tables import _maybe_repeated_keys

    rng = random.Random(4)
    cols = ["document_id", "segment_id", "source", "domain", "x y", "é"]
    texts = ['He said "yes": ok', '"source": fake', 'a\\": b', ': null, "x": 1', "plain", '{"source": 1}', "\\\\", '": x']
    caught = 0
    for _ in range(1500):
        lines, truth = [], False
        for _ in range(rng.randint(1, 5)):
            keys = rng.sample(cols, rng.randint(1, len(cols)))
            if rng.random() < 0.1:
                keys.append(rng.choice(keys))
                truth = True
            rng.shuffle(keys)
            parts = []
            for k in keys:
                v = rng.choice([None, rng.choice(texts)]) if k != "segment_id" else rng.choice([None, 1])
                name = json.dumps(k, ensure_ascii=rng.random() < 0.3)
                if k == "source" and rng.random() < 0.05:
                    name = '"sour\\u0063e"'
                parts.append(name + rng.choice([": ", ":", " : ", ":\t"]) + json.dumps(v, ensure_ascii=False))
            lines.append("{" + rng.choice([", ", ","]).join(parts) + "}")
        data = ("\n".join(lines) + "\n").encode()
        try:
            df = pl.read_ndjson(data, infer_schema_length=None)
        except Exception:  # polars refuses the block: it is parsed line by line anyway
            continue
        if truth:
            assert _maybe_repeated_keys(data, df), data
            caught += 1
    assert caught > 100


# ---------------------------------------------------------------- a text column of digits


@pytest.mark.parametrize("command", ["profile", "explain"])
@pytest.mark.parametrize("suffix,sep", [(".csv", ","), (".tsv", "\t"), (".csv.gz", ",")])
def test_csv_text_column_of_numbers_is_text(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str,
                                            suffix: str, sep: str) -> None:
    """Was: [D111] x.csv, column 'source': expected text, found Int64 (or Float64, with "1.50" read as 1.5)."""
    import gzip

    body = sep.join(["document_id", "segment_id", "source"]) + "\n" + "".join(
        sep.join(r) + "\n" for r in [("d1", "0", "123"), ("d1", "1", "1.50"), ("d2", "0", "007")])
    src = tmp_path / f"x{suffix}"
    src.write_bytes(gzip.compress(body.encode()) if suffix.endswith(".gz") else body.encode())
    assert _run(command, src, tmp_path) == 0, capsys.readouterr().err
    if command == "profile":
        out = pl.read_csv(tmp_path / "out.csv", schema_overrides={"source": pl.String})
        assert out["source"].to_list() == ["123", "1.50", "007"]
        capsys.readouterr()  # the output read back by explain: its text column is text too
        assert main(["explain", str(tmp_path / "out.csv"), "--document", "d1", "--segment", "1"]) == 0
    assert "DDP = 0 sentence(s)" in capsys.readouterr().out


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_number_text_column_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str) -> None:
    """JSON numbers (or a numeric Parquet column) are not text as written: the D111 says so and what to do."""
    df = pl.DataFrame({"document_id": ["d1", "d1"], "segment_id": [0, 1], "source": [123, 456]})
    src = tmp_path / f"x{suffix}"
    df.write_ndjson(src) if suffix == ".jsonl" else df.write_parquet(src)
    assert _run("profile", src, tmp_path) == 3
    line = _err_line(capsys)
    assert "[D111]" in line and "row 1, column 'source': expected text, found Int64 values (e.g. 123)" in line
    assert "write such texts as strings" in line


# ---------------------------------------------------------------- text of zero-width characters


ZW = ["\u200b", "\u200c\u200d", "\ufeff", "\u2060 ", " \u200b\t"]


@pytest.mark.parametrize("blank", ZW)
@pytest.mark.parametrize("command", ["profile", "explain"])
def test_zero_width_text_is_empty_text(tmp_path: Path, capsys: pytest.CaptureFixture[str], blank: str,
                                       command: str) -> None:
    """Was: exit 0, the invisible text profiled as a segment of one sentence."""
    rows = _rows()
    rows[2]["source"] = blank
    src = tmp_path / "x.jsonl"
    src.write_text(_jsonl(rows))
    assert _run(command, src, tmp_path) == 3
    line = _err_line(capsys)
    assert "[D111]" in line and "row 3, column 'source': empty source text (document 'd2', segment 0" in line, line
    assert "invisible characters such as U+" in line


def test_zero_width_line_of_a_line_source_is_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "s.txt").write_text("John came.\n\u200b\nThe cat sat.\n")
    (tmp_path / "s.docs").write_text("d1\nd1\nd2\n")
    assert main(["profile", str(tmp_path / "s.txt"), "--reader", "lines", "-o", str(tmp_path / "o.csv"), "-q"]) == 3
    line = _err_line(capsys)
    assert "[D111]" in line and "s.txt, line 2: empty source text" in line and "U+200B" in line


def test_zero_width_line_is_no_sentence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Was: DDP 2 for 'Mary came.\\n<U+200B>\\nShe smiled.' (the invisible line parsed as a sentence between the
    two), where a line of spaces gives 1."""
    rows = [{"document_id": "d1", "segment_id": 0, "source": "Mary came.\n\u200b\nShe smiled."},
            {"document_id": "d2", "segment_id": 0, "source": "Mary came.\n \nShe smiled."}]
    src = tmp_path / "x.jsonl"
    src.write_text(_jsonl(rows))
    assert _run("profile", src, tmp_path) == 0, capsys.readouterr().err
    out = pl.read_csv(tmp_path / "out.csv")
    assert out["ddp"].to_list() == [1, 1] and out["n_sentences"].to_list() == [2, 2]


def test_zero_width_lines_of_a_txt_folder_are_blank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A line of zero-width characters separates paragraphs as a line of spaces does; a paragraph of them is
    no segment; a document of them is empty (D121)."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("Mary came.\n\u200b\nShe smiled.\n\n\u200b\ufeff\n")
    assert _run("profile", folder, tmp_path) == 0, capsys.readouterr().err
    assert pl.read_csv(tmp_path / "out.csv")["source"].to_list() == ["Mary came.", "She smiled."]
    (folder / "b.txt").write_text("\u200b\n")
    assert _run("profile", folder, tmp_path) == 3
    assert "[D121]" in _err_line(capsys)


# ---------------------------------------------------------------- a profile given as input


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_replaced_columns_are_recorded_in_the_signature(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         suffix: str) -> None:
    """Was: said on stderr only; the output's signature did not say its input's DDP columns were replaced."""
    from ddpcore.io.profiles import load_signature

    src = tmp_path / "x.jsonl"
    src.write_text(_jsonl(_rows()))
    first = tmp_path / f"p{suffix}"
    assert main(["profile", str(src), "-o", str(first), "-q"]) == 0
    assert load_signature(first)[0].get("replaced_columns") is None
    capsys.readouterr()
    again = tmp_path / f"p2{suffix}"
    assert main(["profile", str(first), "-o", str(again), "-q"]) == 0
    assert "recorded as 'replaced_columns' in the output's signature" in capsys.readouterr().err
    assert load_signature(again)[0]["replaced_columns"] == ["n_sentences", "n_tokens", "n_anchors", "ddp",
                                                            "ddp_certified", "first_sentence"]


def test_replaced_columns_in_the_api_signature(tmp_path: Path) -> None:
    import ddpcore

    table = pl.DataFrame({"document_id": DOCS, "segment_id": SEGS, "source": TEXTS, "ddp": [9, 9, 9]})
    with pytest.warns(UserWarning, match="already has the column"):
        res = ddpcore.profile_anchors(table)
    assert res.signature["replaced_columns"] == ["ddp"]
    assert res.segments["ddp"].to_list() == [1, 1, 0]


# ---------------------------------------------------------------- CoNLL-U entity brackets without global.Entity


def _conllu(header: str) -> str:
    return (f"# newdoc id = d1\n{header}# text = Mary left .\n"
            "1\tMary\tMary\tPROPN\tNNP\t_\t2\tnsubj\t_\tEntity=(e1-person-1)\n"
            "2\tleft\tleave\tVERB\tVBD\t_\t0\troot\t_\t_\n3\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\t_\n\n"
            "# text = She smiled .\n1\tShe\tshe\tPRON\tPRP\t_\t2\tnsubj\t_\tEntity=(e1-person-1)\n"
            "2\tsmiled\tsmile\tVERB\tVBD\t_\t0\troot\t_\t_\n3\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\t_\n\n")


@pytest.mark.parametrize("strict", [False, True])
def test_conllu_without_global_entity_reads_corefud_default_and_says_so(tmp_path: Path, strict: bool) -> None:
    """Was: entity types read as null (no layout), in silence."""
    from ddpcore.io.gold import read_gold

    p = tmp_path / "g.conllu"
    p.write_text(_conllu(""), encoding="utf-8")
    c = read_gold(p, strict=strict)
    assert c.mentions["entity_type"].to_list() == ["person", "person"]
    assert c.mentions["chain_id"].to_list() == ["e1", "e1"]
    assert len(c.notes) == 1 and "g.conllu: line 3:" in c.notes[0] and "eid-etype-head-other" in c.notes[0]
    assert c.warnings == ()
    p.write_text(_conllu("# global.Entity = eid-etype-head-other\n"), encoding="utf-8")
    c2 = read_gold(p, strict=strict)
    assert c2.notes == () and c2.mentions.equals(c.mentions)


def test_conllu_brackets_without_attributes_need_no_layout(tmp_path: Path) -> None:
    from ddpcore.io.gold import read_gold

    p = tmp_path / "g.conllu"
    p.write_text(_conllu("").replace("(e1-person-1)", "(e1)"), encoding="utf-8")
    c = read_gold(p)
    assert c.notes == () and c.mentions["entity_type"].to_list() == [None, None]


def test_conllu_layout_not_starting_with_the_id_is_refused(tmp_path: Path) -> None:
    """The UD GUM 2.8/2.9 layout 'entity-GRP-...' names the type first: read as CorefUD 1.x, every mention of a
    type would fall in one chain."""
    from ddpcore.io.gold import read_gold

    p = tmp_path / "g.conllu"
    p.write_text(_conllu("# global.Entity = entity-GRP-infstat\n").replace("(e1-person-1)", "(person-1-new)"),
                 encoding="utf-8")
    with pytest.raises(DDPDataError, match=r"\[D410\] .*g.conllu: line 2: '# global.Entity = entity-GRP-infstat' "
                                           r"does not start with the entity id"):
        read_gold(p)


# ---------------------------------------------------------------- CSV/TSV and Parquet readers


@pytest.mark.parametrize("suffix,sep", [(".csv", ","), (".tsv", "\t")])
def test_csv_decimal_ids_stay_as_written(tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str,
                                         sep: str) -> None:
    """Was: document ids read as decimals, so '2.5' and '2.50' became one document 2.5 (its segments profiled
    together) and '1' came out as '1.0'."""
    src = tmp_path / f"x{suffix}"
    src.write_text(sep.join(["document_id", "segment_id", "source"]) + "\n"
                   + "".join(sep.join(r) + "\n" for r in [("1", "0", "Mary came."), ("2.5", "0", "John left."),
                                                          ("2.50", "1", "She smiled.")]))
    assert _run("profile", src, tmp_path) == 0, capsys.readouterr().err
    out = pl.read_csv(tmp_path / "out.csv", schema_overrides={"document_id": pl.String})
    assert out["document_id"].to_list() == ["1", "2.5", "2.50"]
    assert out["first_sentence"].to_list() == [0, 0, 0]  # three documents, each starting at sentence 0
    capsys.readouterr()
    assert main(["explain", str(tmp_path / "out.csv"), "--document", "2.50", "--segment", "1"]) == 0
    assert "document '2.50', segment '1'" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["profile", "explain"])
def test_parquet_column_named_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               command: str) -> None:
    """Was: [D999] internal error: DuplicateError (profile); 'not a readable Parquet file' (explain)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = tmp_path / "x.parquet"
    pq.write_table(pa.table([pa.array(["d1", "d1"]), pa.array([0, 1]), pa.array(["Mary came.", "She smiled."]),
                             pa.array(["x", "y"])], names=["document_id", "segment_id", "source", "source"]), src)
    assert _run(command, src, tmp_path) == 3
    line = _err_line(capsys)
    assert "[D103]" in line and "x.parquet: the schema names the column 'source' twice (fields 3 and 4)" in line


@pytest.mark.parametrize("name,reader", [("x.csv", None), ("x.jsonl", None), ("x.txt", "lines")])
def test_carriage_return_line_ends_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                               reader: str | None) -> None:
    """Was: 'the table has no rows' (CSV: read as its header alone), an invalid-JSON message, or (a line-aligned
    source with its .docs file) the whole file profiled as ONE segment."""
    src = tmp_path / name
    if name.endswith(".csv"):
        src.write_bytes(b"document_id,segment_id,source\rd1,0,Mary came.\rd1,1,She smiled.\r")
    elif name.endswith(".jsonl"):
        src.write_bytes(_jsonl(_rows()).replace("\n", "\r").encode())
    else:
        src.write_bytes(b"Mary came.\rShe smiled.\r")
        (tmp_path / "x.docs").write_bytes(b"d1\rd1\r")
    extra = ["--reader", reader] if reader else []
    assert _run("profile", src, tmp_path, *extra) == 3
    line = _err_line(capsys)
    assert "[D103]" in line and f"{name}: line 1, byte column" in line and "carriage return alone" in line, line


@pytest.mark.parametrize("command", ["profile", "explain"])
@pytest.mark.parametrize("first", ["sep=,", "sep=;\r", "\ufeffSEP=,"])
def test_spreadsheet_separator_line_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str,
                                             first: str) -> None:
    """Was: '[D103] x.csv: line 2, byte column 1: 3 fields where the header has 2; quote fields that hold a
    comma...', which sends the user to the wrong place."""
    src = tmp_path / "x.csv"
    src.write_text(first + "\ndocument_id,segment_id,source\nd1,0,Mary came.\n", encoding="utf-8")
    assert _run(command, src, tmp_path) == 3
    line = _err_line(capsys)
    assert "[D103]" in line and "x.csv: line 1: 'sep=" in line.replace("SEP", "sep") and "separator hint" in line


def test_header_of_another_separator_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "x.csv"
    src.write_text("document_id;segment_id;source\nd1;0;Mary came.\n")
    assert _run("profile", src, tmp_path) == 3
    line = _err_line(capsys)
    assert "[D110]" in line and "the header is one column holding ';'-separated names" in line


def test_binary_text_column_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = tmp_path / "x.parquet"
    pq.write_table(pa.table({"document_id": ["d1"], "segment_id": [0], "source": pa.array([b"Mary came."])}), src)
    assert _run("profile", src, tmp_path) == 3
    line = _err_line(capsys)
    assert "[D111]" in line and "found Binary values" in line and "store the texts as a string column" in line
