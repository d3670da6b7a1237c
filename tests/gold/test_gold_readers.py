"""Gold readers on vendored real excerpts (tests/data/gold, see SOURCE.md) and malformed input."""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import polars as pl
import pytest

from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.io.gold import read_gold


def test_litbank_brat_pair(gold_data: Path) -> None:
    c = read_gold(gold_data / "litbank" / "tsv")
    assert c.formats == ("litbank",)
    assert c.n_documents == 1
    # 271_black_beauty_brat.txt has 78 lines (one sentence per line): `wc -l`
    assert c.sentences.height == 78
    assert set(c.sentences["genre"]) == {"fiction"}
    m = c.mentions
    # MENTION records in the .ann: `grep -c ^MENTION 271_black_beauty_brat.ann`
    assert m.height == 350
    # first span in document order (`sort -k3,3n -k4,4n` of the .ann): `T142 0 3 0 3 My PER PRON`
    first = m.row(0, named=True)
    assert (first["sentence"], first["token_start"], first["token_end"], first["text"], first["mention_type"]) == (
        0, 3, 4, "My", "PRON")
    # every mention's text equals its tokens (the reader checks this against the .txt)
    toks = dict(zip(zip(c.sentences["document_id"], c.sentences["sentence"]), c.sentences["tokens"]))
    for r in m.head(50).iter_rows(named=True):
        assert " ".join(toks[(r["document_id"], r["sentence"])][r["token_start"]:r["token_end"]]) == r["text"]
    assert set(m["mention_type"]) == {"PROP", "NOM", "PRON"}


def test_litbank_conll_matches_brat(gold_data: Path) -> None:
    """The two LitBank forms give the same sentences, spans and chain partition."""
    a = read_gold(gold_data / "litbank" / "tsv")
    b = read_gold(gold_data / "litbank" / "conll")
    assert a.sentences["tokens"].to_list() == b.sentences["tokens"].to_list()
    assert a.sentences["document_id"].to_list() == b.sentences["document_id"].to_list()
    key = ["sentence", "token_start", "token_end"]
    ja = a.mentions.sort(key)
    jb = b.mentions.sort(key)
    assert ja.select(key).to_dicts() == jb.select(key).to_dicts()
    # same partition into chains: chain ids map one to one
    pairs = set(zip(ja["chain_id"], jb["chain_id"]))
    assert len(pairs) == ja["chain_id"].n_unique() == jb["chain_id"].n_unique()
    # the CoNLL form has no POS: its types come from the word-form rule (one-word pronoun list, else a
    # capitalised head -> PROP). Read off the fixture by hand, the rule disagrees with the brat annotation on
    # exactly five of its 350 mentions: the horse names Pet / Darkie, annotated NOM, have capitalised heads
    # (-> PROP); "“ Rob Roy ”", annotated PROP, has the closing quote as its last word (-> NOM).
    assert ja.height == 350  # `grep -c ^MENTION 271_black_beauty_brat.ann`
    differ = ja.with_columns(jb["mention_type"].alias("conll")).filter(pl.col("mention_type") != pl.col("conll"))
    assert sorted(zip(differ["text"], differ["mention_type"], differ["conll"])) == sorted([
        ("Pet", "NOM", "PROP"), ("old Pet", "NOM", "PROP"), ("your little Darkie", "NOM", "PROP"),
        ("Darkie", "NOM", "PROP"), ("\u201c Rob Roy \u201d", "PROP", "NOM"),
    ])


def test_conllu_archive_and_folder(gold_data: Path) -> None:
    gum = read_gold(gold_data / "gum_excerpt.tar.xz")  # LICENSE.txt inside is skipped
    onto = read_gold(gold_data / "ontogum")
    assert gum.formats == onto.formats == ("conllu",)
    assert sorted(gum.sentences["document_id"].unique()) == ["GUM_interview_brotherhood", "GUM_news_worship"]
    assert gum.sentences.height == onto.sentences.height == 9 + 29  # `grep -c sent_id` of the two files
    genres = dict(zip(gum.sentences["document_id"], gum.sentences["genre"]))
    assert genres == {"GUM_interview_brotherhood": "interview", "GUM_news_worship": "news"}
    # raw `# text` is kept as the sentence text
    first = gum.sentences.filter(gum.sentences["document_id"] == "GUM_news_worship").row(0, named=True)
    assert first["text"] == first["text"].strip() and first["n_tokens"] == len(first["tokens"])
    # OntoGUM drops singletons and appositions: fewer mentions than GUM, never more
    assert 0 < onto.mentions.height < gum.mentions.height
    # pronoun mentions are personal pronouns
    prons = {t.lower() for t in gum.mentions.filter(gum.mentions["mention_type"] == "PRON")["text"]}
    assert prons and prons <= {"i", "me", "my", "you", "your", "he", "him", "his", "she", "her", "it", "its",
                               "we", "us", "our", "they", "them", "their", "itself", "themselves", "myself",
                               "yourself", "ourselves", "himself", "herself", "mine", "yours", "ours", "theirs", "hers"}


def test_conll2012_hand_written(gold_data: Path) -> None:
    c = read_gold(gold_data / "conll2012" / "tiny.v4_gold_conll")
    assert c.formats == ("conll2012",)
    assert c.sentences["document_id"].unique(maintain_order=True).to_list() == [
        "nw/test/00/test_0000", "nw/test/00/test_0000#1"]
    assert set(c.sentences["genre"]) == {"nw"}
    part1 = c.sentences.filter(c.sentences["document_id"] == "nw/test/00/test_0000#1")
    assert part1["text"][0] == "The King of ( Spain ) spoke ."  # -LRB-/-RRB- unescaped
    m = {(r["document_id"][-2:], r["sentence"], r["text"]): r["mention_type"] for r in c.mentions.iter_rows(named=True)}
    assert m[("00", 0, "John Smith")] == "PROP"
    assert m[("00", 1, "He")] == "PRON"
    assert m[("00", 2, "The weather")] == "NOM"
    assert m[("00", 5, "The man 's")] == "NOM"  # nested inside "The man 's wife"
    assert m[("00", 5, "The man 's wife")] == "NOM"
    assert m[("#1", 0, "The King of ( Spain )")] == "PROP"  # head = token before "of"
    assert c.mentions.height == 14  # hand count: 10 brackets in part 0, 4 in part 1


def test_same_document_twice_is_an_error(gold_data: Path) -> None:
    with pytest.raises(DDPDataError, match=r"\[D404\].*271_black_beauty_brat.*already read"):
        read_gold([gold_data / "litbank" / "tsv", gold_data / "litbank" / "conll"])


def test_format_filter_and_unknown_extension(gold_data: Path, tmp_path: Path) -> None:
    with pytest.raises(DDPDataError, match=r"\[D405\].*no conll2012 gold documents"):
        read_gold(gold_data / "ontogum", format="conll2012")
    odd = tmp_path / "doc.gold"
    odd.write_text("1\tA\ta\tX\tX\t_\t0\troot\t_\tEntity=(1)\n\n", encoding="utf-8")
    with pytest.raises(DDPUsageError, match=r"\[D402\].*--gold-format"):
        read_gold(odd)
    c = read_gold(odd, format="conllu")
    assert c.mentions.height == 1
    with pytest.raises(DDPUsageError, match="unknown gold format"):
        read_gold(odd, format="brat")


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(DDPDataError, match=r"\[D401\].*not found"):
        read_gold(tmp_path / "nope.conllu")


CONLLU_HEAD = "# newdoc id = d1\n# meta::genre = news\n# text = He left .\n"


def _conllu(misc: list[str]) -> str:
    words = ["He", "left", "."]
    rows = [f"{i + 1}\t{w}\t{w}\tPRON\tPRP\t_\t{2 if i != 1 else 0}\tx\t_\t{m}" for i, (w, m) in enumerate(zip(words, misc))]
    return CONLLU_HEAD + "\n".join(rows) + "\n\n"


def test_conllu_malformed(tmp_path: Path) -> None:
    p = tmp_path / "bad.conllu"
    p.write_text(CONLLU_HEAD + "1\tHe\the\tPRON\n\n", encoding="utf-8")
    with pytest.raises(DDPDataError, match=r"bad.conllu: line 4: .*10 tab-separated columns, got 4"):
        read_gold(p)
    # a close without an open: strict raises naming file and line, lenient drops and warns
    p.write_text(_conllu(["Entity=(1)", "_", "Entity=2)"]), encoding="utf-8")
    with pytest.raises(DDPDataError, match=r"\[D410\].*bad.conllu: line 6, MISC.*closes entity 2"):
        read_gold(p, strict=True)
    c = read_gold(p)
    assert c.mentions.height == 1 and len(c.warnings) == 1 and "line 6" in c.warnings[0]
    # an entity left open at the end of the document
    p.write_text(_conllu(["Entity=(1", "_", "_"]), encoding="utf-8")
    with pytest.raises(DDPDataError, match=r"ends with entity 1 still open"):
        read_gold(p, strict=True)
    # non-UTF-8 bytes name line and column
    p.write_bytes(CONLLU_HEAD.encode() + b"1\tH\xe9\th\tPRON\tPRP\t_\t0\tx\t_\t_\n\n")
    with pytest.raises(DDPDataError, match=r"line 4, byte column 4: invalid UTF-8"):
        read_gold(p)


def test_conll2012_malformed(tmp_path: Path) -> None:
    p = tmp_path / "x_conll"
    head = "#begin document (a/b); part 000\n"
    row = "a/b 0 {i} w NN * - - - - * {c}\n"
    p.write_text(head + row.format(i=0, c="(1") + row.format(i=2, c="1)") + "\n#end document\n")
    with pytest.raises(DDPDataError, match=r"x_conll: line 3, column 3: word number 2, expected 1"):
        read_gold(p)
    p.write_text(head + row.format(i=0, c="(1") + row.format(i=1, c="2)") + "\n#end document\n")
    with pytest.raises(DDPDataError, match=r"\[D409\].*line 3, coref column: '2\)' closes chain 2"):
        read_gold(p, strict=True)
    c = read_gold(p)  # lenient: both the stray close and the unclosed (1 are dropped
    assert c.mentions.height == 0 and len(c.warnings) == 2
    p.write_text(head + "a/b 0 0 w\n")
    with pytest.raises(DDPDataError, match=r"line 2: expected at least 5 columns"):
        read_gold(p)


def test_litbank_malformed(tmp_path: Path) -> None:
    (tmp_path / "d_brat.txt").write_text("Tom ran .\nHe fell .\n", encoding="utf-8")
    ann = tmp_path / "d_brat.ann"
    ann.write_text("MENTION\tT1\t0\t0\t0\t0\tTom\tPER\tPROP\nMENTION\tT2\t1\t0\t1\t0\tShe\tPER\tPRON\n", encoding="utf-8")
    with pytest.raises(DDPDataError, match=r"d_brat.ann: line 2, field 7: mention text 'She' does not match"):
        read_gold(ann)
    ann.write_text("MENTION\tT1\t0\t0\t0\t0\tTom\tPER\tPROP\nMENTION\tT2\t1\t0\t1\t0\tHe\tPER\tPRON\n"
                   "COREF\tT1\tTom-0\nCOREF\tT2\tTom-0\n", encoding="utf-8")
    c = read_gold(ann)
    assert c.mentions["chain_id"].to_list() == ["Tom-0", "Tom-0"]
    (tmp_path / "d_brat.txt").unlink()
    with pytest.raises(DDPDataError, match=r"\[D403\].*d_brat.txt is missing"):
        read_gold(ann)


def test_tar_member_labels_in_errors(tmp_path: Path) -> None:
    arc = tmp_path / "g.tar.gz"
    data = b"1\tHe\n\n"
    with tarfile.open(arc, "w:gz") as tar:
        info = tarfile.TarInfo("sub/a.conllu")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(DDPDataError, match=r"g.tar.gz:sub/a.conllu: line 1"):
        read_gold(arc)


def test_conllu_discontinuous_parts_share_the_chain(tmp_path: Path) -> None:
    """CorefUD marks the parts of a discontinuous mention ``e5[1/2]``, ``e5[2/2]``: both belong to e5."""
    p = tmp_path / "d.conllu"
    p.write_text(_conllu(["Entity=(e5[1/2]-person)", "Entity=(e7)", "Entity=(e5[2/2]-person)"]), encoding="utf-8")
    c = read_gold(p)
    assert c.mentions["chain_id"].to_list() == ["e5", "e7", "e5"]
