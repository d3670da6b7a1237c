"""Gold readers on CorefUD / CoNLL-2012 constructs a researcher's own gold may hold (synthetic files
written by the CorefUD 1.x CoNLL-U specification): empty nodes, multiword tokens, the MISC
``Entity=`` key, compressed and corrupt inputs, and a hand-checked end-to-end gold distance."""
from __future__ import annotations

import gzip
import io
import lzma
import tarfile
import zipfile
from pathlib import Path

import pytest

from ddpcore.errors import DDPDataError, DDPUsageError
from ddpcore.io.gold import read_gold

HEAD = "# newdoc id = d\n# global.Entity = eid-etype-head-other\n"


def _w(i: int | str, form: str, upos: str, xpos: str, head: int | str, misc: str = "_", feats: str = "_") -> str:
    return "\t".join([str(i), form, form.lower(), upos, xpos, feats, str(head), "dep", "_", misc])


def _rows(c):  # type: ignore[no-untyped-def]
    return c.mentions.select("sentence", "token_start", "token_end", "chain_id", "mention_type", "text",
                             "head_token", "head_text").rows()


def _write(tmp_path: Path, lines: list[str], name: str = "g.conllu") -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


# --------------------------------------------------------------------------- empty nodes


ZERO = [
    "# text = Mary came.",
    _w(1, "Mary", "PROPN", "NNP", 2, "Entity=(e1-person-1)"), _w(2, "came", "VERB", "VBD", 0, "SpaceAfter=No"),
    _w(3, ".", "PUNCT", ".", 2), "",
    # a zero subject (CorefUD empty node after word 1): a mention of e1 with no word of its own
    "# text = Then left.",
    _w(1, "Then", "ADV", "RB", 2),
    "1.1\t_\t#PersPron\tPRON\tPRP\tPronType=Prs\t_\t_\t2:nsubj\tEntity=(e1-person-1)",
    _w(2, "left", "VERB", "VBD", 0, "SpaceAfter=No"), _w(3, ".", "PUNCT", ".", 2), "",
    # a mention opened on an empty node and closed on a word: it starts at the next word
    "# text = Saw big dogs.",
    _w(1, "Saw", "VERB", "VBD", 0),
    "1.1\t_\t_\tDET\tDT\t_\t_\t_\t3:det\tEntity=(e2-animal-2",
    _w(2, "big", "ADJ", "JJ", 3), _w(3, "dogs", "NOUN", "NNS", 1, "Entity=e2)|SpaceAfter=No"),
    _w(4, ".", "PUNCT", ".", 1), "",
]


def test_zero_mention_on_empty_node_is_kept(tmp_path: Path) -> None:
    """Before: the zero mention was dropped without a word. Now: a zero-length mention at its position."""
    c = read_gold(_write(tmp_path, [*HEAD.rstrip("\n").split("\n"), *ZERO]))
    assert c.warnings == ()
    rows = _rows(c)
    assert (1, 1, 1, "e1", "PRON", "", None, "_") in rows
    # the sentences keep their words only (empty nodes are not tokens): offsets unchanged
    assert c.sentences["tokens"].to_list()[1] == ["Then", "left", "."]
    from ddpcore.gold.validate import compute_gold_distances

    # sentence 1 refers back to Mary (sentence 0) through its zero subject
    assert compute_gold_distances(c)["gold_distance"].to_list() == [0, 1, 0]


def test_mention_opened_on_empty_node(tmp_path: Path) -> None:
    """Before: 'closes entity e2, which is not open' and the mention dropped. Now: words 1-2 of sentence 2."""
    c = read_gold(_write(tmp_path, [*HEAD.rstrip("\n").split("\n"), *ZERO]))
    assert c.warnings == ()
    assert (2, 1, 3, "e2", "NOM", "big dogs", 2, "dogs") in _rows(c)


def test_empty_node_out_of_place_is_an_error(tmp_path: Path) -> None:
    lines = [*HEAD.rstrip("\n").split("\n"), _w(1, "A", "DET", "DT", 2),
             "3.1\t_\t_\t_\t_\t_\t_\t_\t_\tEntity=(e1-x-1)", _w(2, "dog", "NOUN", "NN", 0), ""]
    with pytest.raises(DDPDataError, match=r"\[D411\].*g.conllu: line 4, column ID: token id 3.1, expected 1.N"):
        read_gold(_write(tmp_path, lines))


# --------------------------------------------------------------------------- multiword tokens


def test_text_rebuilt_from_multiword_token_forms(tmp_path: Path) -> None:
    """No ``# text``: the sentence text is the surface tokens (the MWT form), not its words."""
    lines = [
        "# newdoc id = d", "# global.Entity = eid-etype-head-other",
        _w(1, "Mary", "PROPN", "NNP", 4, "Entity=(e1-person-1)"),
        "2-3\tdidn't\t_\t_\t_\t_\t_\t_\t_\t_",
        _w(2, "did", "AUX", "VBD", 4), _w(3, "n't", "PART", "RB", 4),
        _w(4, "see", "VERB", "VB", 0), _w(5, "John", "PROPN", "NNP", 4, "Entity=(e2-person-1)|SpaceAfter=No"),
        _w(6, ".", "PUNCT", ".", 4), "",
    ]
    c = read_gold(_write(tmp_path, lines))
    assert c.sentences["text"].to_list() == ["Mary didn't see John."]  # before: "Mary did n't see John."
    assert c.sentences["tokens"].to_list() == [["Mary", "did", "n't", "see", "John", "."]]
    assert [r[:4] for r in _rows(c)] == [(0, 0, 1, "e1"), (0, 4, 5, "e2")]


def test_multiword_token_out_of_place_is_an_error(tmp_path: Path) -> None:
    lines = [*HEAD.rstrip("\n").split("\n"), _w(1, "A", "DET", "DT", 2), "3-4\tx\t_\t_\t_\t_\t_\t_\t_\t_",
             _w(2, "dog", "NOUN", "NN", 0), ""]
    with pytest.raises(DDPDataError, match=r"\[D411\].*g.conllu: line 4, column ID: token id 3-4, expected 2-N"):
        read_gold(_write(tmp_path, lines))


# --------------------------------------------------------------------------- the Entity= key


def test_only_the_entity_key_is_read(tmp_path: Path) -> None:
    """Before: ``MyEntity=(e9...)`` was read as the entity and ``Entity=(e1...)`` ignored."""
    lines = [*HEAD.rstrip("\n").split("\n"), _w(1, "He", "PRON", "PRP", 2, "MyEntity=(e9-x-1)|Entity=(e1-person-1)"),
             _w(2, "left", "VERB", "VBD", 0), ""]
    c = read_gold(_write(tmp_path, lines))
    assert c.mentions["chain_id"].to_list() == ["e1"]


@pytest.mark.parametrize("misc", ["Entity=(-person-1)", "Entity=)"])
def test_entity_without_id_is_an_error(tmp_path: Path, misc: str) -> None:
    """Before: ``(-person-1)`` made a mention of chain '' and ``)`` a warning about entity ''."""
    lines = [*HEAD.rstrip("\n").split("\n"), _w(1, "He", "PRON", "PRP", 0, misc), ""]
    with pytest.raises(DDPDataError, match=r"\[D410\].*g.conllu: line 3, MISC: empty entity bracket"):
        read_gold(_write(tmp_path, lines))


def test_discontinuous_part_markers_pair_their_brackets(tmp_path: Path) -> None:
    """``e5[1/2]`` and ``e5[2/2]`` are parts of one mention of e5; a plain ``e5`` mention nested in
    part 1 closes on its own bracket, not on the part's."""
    lines = [*HEAD.rstrip("\n").split("\n"),
             _w(1, "the", "DET", "DT", 2, "Entity=(e5[1/2]-person-2"), _w(2, "man", "NOUN", "NN", 0, "Entity=(e5-person-1"),
             _w(3, "x", "X", "X", 2, "Entity=e5)e5[1/2])"),
             _w(4, "who", "PRON", "WP", 2, "Entity=(e5[2/2]-person-1)"), ""]
    c = read_gold(_write(tmp_path, lines))
    assert c.warnings == ()
    assert sorted(r[1:4] for r in _rows(c)) == [(0, 3, "e5"), (1, 3, "e5"), (3, 4, "e5")]


# --------------------------------------------------------------------------- compressed input


STORY = [
    "# newdoc id = doc1", "# global.Entity = eid-etype-head-other", "# meta::genre = news",
    "# text = Anna Berg founded Vela in Oslo.",
    _w(1, "Anna", "PROPN", "NNP", 3, "Entity=(e1-person-1"), _w(2, "Berg", "PROPN", "NNP", 1, "Entity=e1)"),
    _w(3, "founded", "VERB", "VBD", 0), _w(4, "Vela", "PROPN", "NNP", 3, "Entity=(e2-organization-1)"),
    _w(5, "in", "ADP", "IN", 6), _w(6, "Oslo", "PROPN", "NNP", 3, "Entity=(e3-place-1)|SpaceAfter=No"),
    _w(7, ".", "PUNCT", ".", 3), "",
    "# text = The weather was cold.",
    _w(1, "The", "DET", "DT", 2), _w(2, "weather", "NOUN", "NN", 4), _w(3, "was", "AUX", "VBD", 4),
    _w(4, "cold", "ADJ", "JJ", 0, "SpaceAfter=No"), _w(5, ".", "PUNCT", ".", 4), "",
    "# text = She sold it.",
    _w(1, "She", "PRON", "PRP", 2, "Entity=(e1-person-1)"), _w(2, "sold", "VERB", "VBD", 0),
    _w(3, "it", "PRON", "PRP", 2, "Entity=(e2-organization-1)|SpaceAfter=No"), _w(4, ".", "PUNCT", ".", 2), "",
    # entity ids start again in the next document
    "# newdoc id = doc2", "# global.Entity = eid-etype-head-other", "# meta::genre = news",
    "# text = Tom Reed lives in Rome.",
    _w(1, "Tom", "PROPN", "NNP", 3, "Entity=(e1-person-1"), _w(2, "Reed", "PROPN", "NNP", 1, "Entity=e1)"),
    _w(3, "lives", "VERB", "VBZ", 0), _w(4, "in", "ADP", "IN", 5),
    _w(5, "Rome", "PROPN", "NNP", 3, "Entity=(e2-place-1)|SpaceAfter=No"), _w(6, ".", "PUNCT", ".", 3), "",
    "# text = He likes Rome.",
    _w(1, "He", "PRON", "PRP", 2, "Entity=(e1-person-1)"), _w(2, "likes", "VERB", "VBZ", 0),
    _w(3, "Rome", "PROPN", "NNP", 2, "Entity=(e2-place-1)|SpaceAfter=No"), _w(4, ".", "PUNCT", ".", 2),
]


def test_story_gold_distances_by_hand(tmp_path: Path) -> None:
    """doc1: 'She' / 'it' (sentence 2) go back to Anna Berg / Vela (sentence 0): 2; doc2: 'He' /
    'Rome' (sentence 1) to sentence 0: 1. Nearest is the same (sentence 1 of doc1 has no mention).
    Written with a BOM, CRLF line ends and no final blank line."""
    from ddpcore.gold.validate import compute_gold_distances

    p = tmp_path / "story.conllu"
    p.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(STORY).encode("utf-8"))
    c = read_gold(p)
    assert c.warnings == ()
    assert c.sentences["document_id"].to_list() == ["doc1"] * 3 + ["doc2"] * 2
    assert c.sentences["text"].to_list()[0] == "Anna Berg founded Vela in Oslo."
    assert compute_gold_distances(c)["gold_distance"].to_list() == [0, 0, 2, 0, 1]
    assert compute_gold_distances(c, distance="nearest")["gold_distance"].to_list() == [0, 0, 2, 0, 1]


def test_gzip_compressed_conllu_is_read(tmp_path: Path) -> None:
    """Before: D402 'cannot tell the gold format' (and with --gold-format, D104 'invalid UTF-8')."""
    p = tmp_path / "story.conllu.gz"
    p.write_bytes(gzip.compress("\n".join(STORY).encode("utf-8")))
    c = read_gold(p)
    assert c.formats == ("conllu",)
    assert c.sentences.height == 5 and c.mentions.height == 9
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "story.conllu.xz").write_bytes(lzma.compress("\n".join(STORY).encode("utf-8")))
    assert read_gold(folder).mentions.height == 9


def test_zip_archive_is_a_clear_error(tmp_path: Path) -> None:
    """Before: D402 'pass --gold-format', which then failed with D104 'invalid UTF-8'."""
    z = tmp_path / "CorefUD.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("story.conllu", "\n".join(STORY))
    with pytest.raises(DDPUsageError, match=r"\[D402\].*CorefUD.zip: zip archives are not read; unzip it"):
        read_gold(z)


def test_corrupt_tar_xz_is_a_data_error(tmp_path: Path) -> None:
    """Before: lzma.LZMAError escaped (D999 'internal error' at the command line)."""
    import random

    rng = random.Random(0)  # text that does not compress away: the corruption lands inside member data
    words = [f"# text = {' '.join(rng.choice('abcdefghij') * rng.randint(1, 8) for _ in range(12))}" for _ in range(3000)]
    data = "\n".join(words).encode("utf-8")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tar:
        info = tarfile.TarInfo("g/story.conllu")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    raw = bytearray(buf.getvalue())
    mid = len(raw) // 2
    for k in range(mid, mid + 50):
        raw[k] ^= 0x55
    arc = tmp_path / "g.tar.xz"
    arc.write_bytes(bytes(raw))
    with pytest.raises(DDPDataError, match=r"\[D401\].*g.tar.xz: cannot read") as err:
        read_gold(arc)
    assert "\n" not in str(err.value)


def test_unreadable_archive_error_is_one_line(tmp_path: Path) -> None:
    """Before: tarfile's 'file could not be opened successfully' spread the error over five lines."""
    arc = tmp_path / "g.tar.xz"
    arc.write_bytes(b"\xfd7zXZ\x00 not really xz" * 10)
    with pytest.raises(DDPDataError, match=r"\[D401\].*g.tar.xz: not a readable tar archive") as err:
        read_gold(arc)
    assert "\n" not in str(err.value)


def test_empty_etype_is_untyped(tmp_path: Path) -> None:
    """CorefUD corpora without entity types still declare ``eid-etype-head-other`` and write
    ``(e1--1)``. Before: entity_type '' (a typed gold), so the ``ddp`` scope counted a PROP 'Monday'
    that the untyped rule leaves antecedent-only. Now: entity_type null."""
    from ddpcore.gold.validate import scope_gold_mentions

    lines = [*HEAD.rstrip("\n").split("\n"),
             _w(1, "Monday", "PROPN", "NNP", 2, "Entity=(e1--1-)"), _w(2, "came", "VERB", "VBD", 0), "",
             _w(1, "Monday", "PROPN", "NNP", 2, "Entity=(e1--1)"), _w(2, "went", "VERB", "VBD", 0), ""]
    c = read_gold(_write(tmp_path, lines))
    assert c.mentions["entity_type"].to_list() == [None, None]
    assert scope_gold_mentions(c.mentions, "ddp")["counted"].to_list() == [False, False]


def test_missing_sentence_break_says_so(tmp_path: Path) -> None:
    lines = [*HEAD.rstrip("\n").split("\n"), _w(1, "He", "PRON", "PRP", 2), _w(2, "left", "VERB", "VBD", 0),
             "# sent_id = 2", _w(1, "She", "PRON", "PRP", 2), _w(2, "came", "VERB", "VBD", 0), ""]
    with pytest.raises(DDPDataError, match=r"\[D411\].*g.conllu: line 6, column ID: token id 1, expected 3; "
                                           r"is the blank line ending the sentence before it missing\?"):
        read_gold(_write(tmp_path, lines))
