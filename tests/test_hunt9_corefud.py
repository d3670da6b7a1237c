"""Bug hunt 9: CorefUD gold files as corpora other than GUM write them (``ddp validate GOLD``).

Every file here is synthetic, written from the CoNLL-U and CorefUD 1.x format documentation (entity
brackets in MISC ``Entity=``, ``# global.Entity`` layouts, empty nodes ``5.1`` and ``0.1``, multiword
tokens ``1-2``, discontinuous parts ``e5[1/2]``, ``SplitAnte=`` / ``Bridge=`` beside ``Entity=``).

How the expected values are produced: the mentions are the ones each test writes (listed by hand, or
recorded by the random writer below while it writes the brackets); the sentence texts are the surface
forms the test writes, joined as CoNLL-U's ``SpaceAfter=No`` says; the gold distances come from
:func:`slow_distances`, a plain loop over those written mentions that restates docs/validation.md
"Gold distance": for sentence s, the largest s - (first sentence of the chain) (chained) or s - (latest
earlier sentence of the chain) (nearest) over the chains with a mention in s and one before s.
Nothing expected is computed by ddpcore.
"""
from __future__ import annotations

import gzip
import io
import json
import random
import tarfile
from pathlib import Path
from typing import Any

import pytest
from corefud_helpers import stand_in_validate as _stand_in

from ddpcore.cli.main import main
from ddpcore.errors import DDPDataError
from ddpcore.gold.validate import compute_gold_distances
from ddpcore.io.gold import read_gold


def _w(i: int, form: str, upos: str = "X", xpos: str = "_", head: int = 0, misc: str = "_") -> str:
    return "\t".join([str(i), form, form.lower(), upos, xpos, "_", str(head), "dep", "_", misc])


def _mwt(ids: str, form: str, misc: str = "_") -> str:
    return "\t".join([ids, form, "_", "_", "_", "_", "_", "_", "_", misc])


def _node(nid: str, form: str = "_", misc: str = "_") -> str:
    return "\t".join([nid, form, "_", "PRON", "_", "PronType=Prs", "_", "_", "_", misc])


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _mentions(c: Any) -> list[tuple[Any, ...]]:
    return sorted(c.mentions.select("document_id", "sentence", "token_start", "token_end", "chain_id").rows())


def slow_distances(chains_by_sentence: list[list[str]], mode: str = "chained") -> list[int]:
    """Gold distance of each sentence of one document from the chain ids of its mentions (a slow loop)."""
    out = []
    for s, chains in enumerate(chains_by_sentence):
        best = 0
        for chain in chains:
            earlier = [t for t in range(s) if chain in chains_by_sentence[t]]
            if earlier:
                best = max(best, s - (earlier[0] if mode == "chained" else earlier[-1]))
        out.append(best)
    return out


HEAD = ["# newdoc id = es1", "# global.Entity = eid-etype-head-other"]


# --------------------------------------------------------------------------- a sentence opening with a multiword token


def test_sentence_starting_with_a_multiword_token_keeps_its_surface_form(tmp_path: Path) -> None:
    """Spanish 'Del rey habló.' (Del = de + el). Before: the multiword token was forgotten when its first word
    arrived, so the '# text' was said not to spell the forms (D413) and replaced by 'De el rey habló.'; without a
    '# text' the text was rebuilt as 'De el rey habló.'. Now: the text the file gives."""
    body = [_mwt("1-2", "Del"), _w(1, "De", "ADP", head=3), _w(2, "el", "DET", head=3),
            _w(3, "rey", "NOUN", head=4, misc="Entity=(e1-person-1)"), _w(4, "habló", "VERB", misc="SpaceAfter=No"),
            _w(5, ".", "PUNCT", head=4), ""]
    c = read_gold(_write(tmp_path / "a.conllu", [*HEAD, "# text = Del rey habló.", *body]))
    assert c.warnings == ()
    assert c.sentences["text"].to_list() == ["Del rey habló."]
    assert c.sentences["tokens"].to_list() == [["De", "el", "rey", "habló", "."]]
    assert _mentions(c) == [("es1", 0, 2, 3, "e1")]
    # no '# text': rebuilt from the surface tokens Del / rey / habló(SpaceAfter=No) / .
    c = read_gold(_write(tmp_path / "b.conllu", [*HEAD, *body]))
    assert c.warnings == () and c.sentences["text"].to_list() == ["Del rey habló."]


def test_english_contraction_first_keeps_its_form_without_text(tmp_path: Path) -> None:
    """UD English writes "Don't" as a multiword token (do + n't). Before: rebuilt as "Do n't go." (the
    words), now "Don't go." (the token, as written)."""
    lines = ["# newdoc id = en1", _mwt("1-2", "Don't"), _w(1, "Do", "AUX", "VBP", 3), _w(2, "n't", "PART", "RB", 3),
             _w(3, "go", "VERB", "VB", 0, "SpaceAfter=No"), _w(4, ".", "PUNCT", ".", 3), ""]
    c = read_gold(_write(tmp_path / "en.conllu", lines))
    assert c.sentences["text"].to_list() == ["Don't go."]


# --------------------------------------------------------------------------- a zero mention before the first word


def test_zero_mention_on_an_empty_node_before_the_first_word(tmp_path: Path) -> None:
    """'Vino.' with its dropped subject as empty node 0.1 (CoNLL-U allows ids 0 < x < 1): a zero mention of e1.
    Before: the mention was dropped in silence when word 1 arrived, and sentence 1's gold distance was 0."""
    lines = [*HEAD,
             "# text = Ana llegó.", _w(1, "Ana", "PROPN", head=2, misc="Entity=(e1-person-1)"),
             _w(2, "llegó", "VERB", misc="SpaceAfter=No"), _w(3, ".", "PUNCT", head=2), "",
             "# text = Vino.", _node("0.1", misc="Entity=(e1-person-1)"), _w(1, "Vino", "VERB", misc="SpaceAfter=No"),
             _w(2, ".", "PUNCT", head=1), ""]
    c = read_gold(_write(tmp_path / "z.conllu", lines))
    assert c.warnings == ()
    # written: e1 on 'Ana' (sentence 0, word 0) and on node 0.1 (sentence 1, before word 0: 0..0)
    assert _mentions(c) == [("es1", 0, 0, 1, "e1"), ("es1", 1, 0, 0, "e1")]
    assert c.sentences["tokens"].to_list()[1] == ["Vino", "."]
    chains = [["e1"], ["e1"]]
    got = compute_gold_distances(c)["gold_distance"].to_list()
    assert got == slow_distances(chains) == [0, 1]


def test_a_zero_mention_counts_in_the_full_scope_and_is_antecedent_only_in_the_ddp_scope(tmp_path: Path) -> None:
    """An English dropped subject written as empty node 1.1 with form 'he' (a personal PRON node): DDP can never
    anchor a word that is not in the text, so in the ``ddp`` scope it is antecedent only (docs/validation.md
    "Gold scope"); in the ``full`` scope every mention counts. Before: the node counted as a *he* anchor in the
    ``ddp`` scope too, raising the gold distance the DDP column is judged against (1 instead of 0)."""
    lines = [*HEAD,
             "# text = John arrived.", _w(1, "John", "PROPN", head=2, misc="Entity=(e1-person-1)"),
             _w(2, "arrived", "VERB", misc="SpaceAfter=No"), _w(3, ".", "PUNCT", head=2), "",
             "# text = Then left.", _w(1, "Then", "ADV", head=2), _node("1.1", "he", misc="Entity=(e1-person-1)"),
             _w(2, "left", "VERB", misc="SpaceAfter=No"), _w(3, ".", "PUNCT", head=2), ""]
    c = read_gold(_write(tmp_path / "zero.conllu", lines))
    # written: e1 on 'John' (sentence 0) and on node 1.1 (sentence 1, a zero mention); by hand: full scope
    # distances [0, 1] (the slow loop), ddp scope [0, 0] (sentence 1 has no mention DDP could anchor)
    assert compute_gold_distances(c, gold_scope="full")["gold_distance"].to_list() == slow_distances([["e1"], ["e1"]])
    assert compute_gold_distances(c, gold_scope="ddp")["gold_distance"].to_list() == [0, 0]


# --------------------------------------------------------------------------- refusals that were silences


def test_entity_brackets_on_a_multiword_token_line_are_refused(tmp_path: Path) -> None:
    """Before: 'Entity=' on the range line 2-3 was never read: the mention (and here the chain's only later
    mention) vanished and the gold distance was 0 in silence. Now D450, naming file, line and column."""
    lines = [*HEAD, _w(1, "Ana", "PROPN", misc="Entity=(e1-person-1)"), "",
             _w(1, "vio"), _mwt("2-3", "al", "Entity=(e1-person-1)"), _w(2, "a"), _w(3, "el"), _w(4, "perro"), ""]
    with pytest.raises(DDPDataError, match=r"^\[D450\] .*m\.conllu: line 6, column MISC: the multiword token 2-3 'al' "
                                           r"carries 'Entity=' brackets; CorefUD puts them on the token's words"):
        read_gold(_write(tmp_path / "m.conllu", lines))


def test_superscript_digit_id_is_a_data_error_not_an_internal_one(tmp_path: Path) -> None:
    """'²' is a digit to str.isdigit but not to int(). Before: ValueError, D999 'internal error' at the command
    line. Now D411 for the ID column; a HEAD of '²' is no head, as '_' is."""
    p = _write(tmp_path / "i.conllu", ["# newdoc id = d", "²\tA\ta\tX\t_\t_\t0\tdep\t_\t_", ""])
    with pytest.raises(DDPDataError, match=r"^\[D411\] .*i\.conllu: line 2, column ID: '²' is not a token id"):
        read_gold(p)
    p = _write(tmp_path / "h.conllu", ["# newdoc id = d", "1\tA\ta\tX\t_\t_\t²\tdep\t_\tEntity=(e1)", ""])
    assert _mentions(read_gold(p)) == [("d", 0, 0, 1, "e1")]


def _tar(path: Path, members: dict[str, bytes]) -> Path:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(buf.getvalue())
    return path


DOC_A = "\n".join(["# newdoc id = A", _w(1, "Ana", misc="Entity=(e1)"), "",
                   _w(1, "she", misc="Entity=(e1)"), ""]) + "\n"
DOC_B = "\n".join(["# newdoc id = B", _w(1, "Bo", misc="Entity=(e1)"), "", _w(1, "x"), "",
                   _w(1, "he", misc="Entity=(e1)"), ""]) + "\n"


def test_compressed_gold_member_of_an_archive_is_refused(tmp_path: Path) -> None:
    """Before: b.conllu.gz inside the archive was skipped without a word, and document B with it. Now D451."""
    arc = _tar(tmp_path / "c.tar.gz", {"c/a.conllu": DOC_A.encode(), "c/b.conllu.gz": gzip.compress(DOC_B.encode())})
    with pytest.raises(DDPDataError, match=r"^\[D451\] .*c\.tar\.gz:c/b\.conllu\.gz: a compressed gold file inside an "
                                           r"archive is not read"):
        read_gold(arc)
    # a compressed member that is no gold file (README.md.gz) is still skipped, as other non-gold members are
    arc = _tar(tmp_path / "d.tar.gz", {"c/a.conllu": DOC_A.encode(), "c/README.md.gz": gzip.compress(b"hello")})
    assert read_gold(arc).sentences["document_id"].to_list() == ["A", "A"]
    # the same .gz in a folder is read (documented): both documents
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "a.conllu").write_text(DOC_A, encoding="utf-8")
    (folder / "b.conllu.gz").write_bytes(gzip.compress(DOC_B.encode()))
    c = read_gold(folder)
    assert c.sentences["document_id"].to_list() == ["A", "A", "B", "B", "B"]
    d = compute_gold_distances(c)["gold_distance"].to_list()
    assert d == slow_distances([["e1"], ["e1"]]) + slow_distances([["e1"], [], ["e1"]]) == [0, 1, 0, 0, 2]


def test_byte_order_mark_of_a_file_joined_on(tmp_path: Path) -> None:
    """`cat a.conllu b.conllu` of two files saved with a BOM puts U+FEFF before '# newdoc id = B'. Before: D411
    'a CoNLL-U token line needs 10 tab-separated columns, got 1' about a comment line. Now both documents."""
    p = tmp_path / "joined.conllu"
    p.write_bytes(b"\xef\xbb\xbf" + DOC_A.encode() + b"\xef\xbb\xbf" + DOC_B.encode())
    c = read_gold(p)
    assert c.sentences["document_id"].to_list() == ["A", "A", "B", "B", "B"]
    assert compute_gold_distances(c)["gold_distance"].to_list() == [0, 1, 0, 0, 2]


def test_discontinuous_mention_across_sentences_is_dropped_and_said(tmp_path: Path) -> None:
    """One mention of e5 in two parts, part 2 in the next sentence (a mention spanning sentences, which the
    gold distance cannot hold). Before: read as two mentions, sentence 1 got gold distance 1 from a chain of
    one mention, in silence. Now part 2 is dropped with a D410 repair (an error under strict), as a mention
    spanning sentences is."""
    lines = [*HEAD, _w(1, "the", misc="Entity=(e5[1/2]-person-2"), _w(2, "man", misc="Entity=e5[1/2])"), "",
             _w(1, "who", misc="Entity=(e5[2/2]-person-1)"), _w(2, "left"), ""]
    p = _write(tmp_path / "d.conllu", lines)
    c = read_gold(p)
    assert _mentions(c) == [("es1", 0, 0, 2, "e5")]
    assert compute_gold_distances(c)["gold_distance"].to_list() == slow_distances([["e5"], []]) == [0, 0]
    assert len(c.warnings) == 1 and c.warnings[0].startswith(
        f"[D410] {p}: line 6, MISC: part 2/2 of a discontinuous mention of entity e5 is in sentence 2")
    with pytest.raises(DDPDataError, match=r"^\[D410\] .*part 2/2 of a discontinuous mention"):
        read_gold(p, strict=True)
    # parts in one sentence stay two mentions of the entity (documented), and no repair
    same = [*HEAD, _w(1, "the", misc="Entity=(e5[1/2]-person-2"), _w(2, "man", misc="Entity=e5[1/2])"),
            _w(3, "who", misc="Entity=(e5[2/2]-person-1)"), ""]
    c = read_gold(_write(tmp_path / "s.conllu", same))
    assert c.warnings == () and _mentions(c) == [("es1", 0, 0, 2, "e5"), ("es1", 0, 2, 3, "e5")]


# --------------------------------------------------------------------------- a file without '# newdoc'


def test_file_without_newdoc_is_one_document_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Two documents whose '# newdoc' lines were lost, each numbering its entities from e1: read as one document
    'lost', where Bo's 'he' (sentence 4) chains back to Ana (sentence 0). Before: in silence. Now a note on
    stderr and in the signature's gold.notes, naming the file, the lines and the document."""
    lines = [_w(1, "Ana", misc="Entity=(e1)"), "", _w(1, "she", misc="Entity=(e1)"), "",
             _w(1, "Bo", misc="Entity=(e1)"), "", _w(1, "x"), "", _w(1, "he", misc="Entity=(e1)"), ""]
    p = _write(tmp_path / "lost.conllu", lines)
    c = read_gold(p)
    # chains as written, all e1 in one document: sentences 1, 2 and 4 go back to sentence 0
    assert compute_gold_distances(c)["gold_distance"].to_list() == slow_distances([["e1"], ["e1"], ["e1"], [], ["e1"]])
    note = (f"{p}: lines 1-10 come before any '# newdoc id = ...' line; their 5 sentence(s) are read as one "
            "document 'lost'")
    assert any(n.startswith(note) for n in c.notes)
    _stand_in(monkeypatch)
    code = main(["validate", str(p)])
    cap = capsys.readouterr()
    assert code == 0
    assert f"ddp validate: note: {note}" in cap.err
    assert any(n.startswith(note) for n in json.loads(cap.out)["signature"]["gold"]["notes"])
    # with '# newdoc' lines: no such note
    c = read_gold(_write(tmp_path / "kept.conllu", ["# newdoc id = A", *lines[:4], "# newdoc id = B", *lines[4:]]))
    assert not any("before any '# newdoc" in n for n in c.notes)
    assert compute_gold_distances(c)["gold_distance"].to_list() == [0, 1, 0, 0, 2]


def test_cli_refusals_exit_3_on_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = _write(tmp_path / "m.conllu",
               [*HEAD, _w(1, "x"), _mwt("2-3", "al", "Entity=(e1)"), _w(2, "a"), _w(3, "el"), ""])
    assert main(["validate", str(p)]) == 3
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "[D450]" in err and "m.conllu: line 4" in err
    arc = _tar(tmp_path / "c.tar.gz", {"b.conllu.gz": gzip.compress(DOC_B.encode())})
    assert main(["validate", str(arc)]) == 3
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "[D451]" in err and "c.tar.gz:b.conllu.gz" in err


# --------------------------------------------------------------------------- many CorefUD shapes at once

#: ``# global.Entity`` layouts of CorefUD-style files -> index of the etype field (None: no type)
LAYOUTS = {"eid-etype-head-other": 1, "eid-etype-head-other-infstat-minspan-identity": 1, "GRP-etype": 1,
           "eid-head-etype": 2, "eid": None, "GRP": None}
WORDS = ["Ana", "saw", "the", "dog", "in", "Rome", "and", "it", "ran", "home"]


def _attrs(layout: str, etype: str, rng: random.Random) -> str:
    vals = []
    for f in layout.split("-")[1:]:
        vals.append({"etype": etype, "head": str(rng.randint(1, 3)), "infstat": rng.choice(["new", "giv:act"]),
                     "minspan": "1,2", "identity": rng.choice(["", "Rome"])}.get(f, rng.choice(["", "mention:np"])))
    while vals and vals[-1] == "":  # udapi drops empty trailing fields
        vals.pop()
    return ("-" + "-".join(vals)) if vals else ""


def _random_sentence(rng: random.Random, eids: list[str], layout: str, etypes: dict[str, str]
                     ) -> tuple[list[str], list[tuple[int, int, str]], str]:
    """One sentence: its lines, the mentions written (start, end exclusive, entity) and its surface text.

    Mentions may be zero mentions on an empty node (``k.1``, ``0.1`` included), open or close on an empty
    node, nest or cross (different entities), sit on one word (``(e1)``), share a word with others
    (``(e1(e2)``, ``e2)e1)``, ``e1)(e3``) or be a discontinuous mention in two parts (``e5[1/2]``, each
    part a mention of the entity, as documented); multiword tokens (also as the first token, also not
    the concatenation of their words) and MISC keys around ``Entity=`` are mixed in."""
    n = rng.randint(1, 7)
    words = [rng.choice(WORDS) for _ in range(n)]
    spans: list[tuple[int, int, str, bool, bool]] = []  # start, end, eid, opens on a node, closes on a node
    for _ in range(rng.randint(0, 4)):
        eid = rng.choice(eids)
        if rng.random() < 0.2:
            k = rng.randint(0, n)
            spans.append((k, k, eid, True, True))
            continue
        a = rng.randint(0, n - 1)
        b = rng.randint(a + 1, n)
        # two mentions of one entity may nest, not cross or coincide (the format cannot tell them apart)
        if any(e == eid and (x < a < y < b or a < x < b < y or (x, y) == (a, b)) for x, y, e, *_ in spans):
            continue
        spans.append((a, b, eid, rng.random() < 0.15, rng.random() < 0.15))
    parts = []
    if n >= 3 and rng.random() < 0.3:
        parts = [(0, 1, rng.choice(eids)), (n - 1, n)]
        parts[1] = (n - 1, n, parts[0][2])
    opens: dict[tuple[str, int], list[tuple[int, str]]] = {}
    closes: dict[tuple[str, int], list[tuple[int, str]]] = {}
    singles: dict[tuple[str, int], list[str]] = {}
    for a, b, e, on_node, off_node in spans:
        at = _attrs(layout, etypes[e], rng)
        host_open, host_close = ("n", a) if on_node else ("w", a), ("n", b) if off_node else ("w", b - 1)
        if host_open == host_close:
            singles.setdefault(host_open, []).append(f"({e}{at})")
        else:
            opens.setdefault(host_open, []).append((b - a, f"({e}{at}"))
            closes.setdefault(host_close, []).append((b - a, f"{e})"))
    for i, (a, b, e) in enumerate(parts, 1):
        singles.setdefault(("w", a), []).append(f"({e}[{i}/{len(parts)}]{_attrs(layout, etypes[e], rng)})")

    def entity(host: tuple[str, int]) -> str:  # CorefUD order: closes (shorter first), opens (longer first), singles
        shut = [s for _, s in sorted(closes.get(host, []))]
        began = [s for _, s in sorted(opens.get(host, []), key=lambda t: -t[0])]
        return "".join(shut + began + singles.get(host, []))

    def misc(*keys: str) -> str:
        return "|".join(k for k in keys if k) or "_"

    nodes = {k for a, b, _, on_node, off_node in spans for k in ([a] if on_node else []) + ([b] if off_node else [])}
    mwts, i = {}, 0
    while i < n - 1:
        if rng.random() < 0.25:
            mwts[i] = rng.choice([words[i] + words[i + 1], "del"])
            i += 2
        else:
            i += 1
    lines, surface = [], []
    if 0 in nodes:
        lines.append(_node("0.1", misc=misc("Entity=" + entity(("n", 0)) if entity(("n", 0)) else "")))
    for i in range(n):
        if i in mwts:
            glued = rng.random() < 0.3
            lines.append(_mwt(f"{i + 1}-{i + 2}", mwts[i], misc("SpaceAfter=No" if glued else "")))
            surface.append((mwts[i], glued))
        in_mwt = i in mwts or (i - 1) in mwts
        glued = not in_mwt and rng.random() < 0.3
        ent = entity(("w", i))
        other = rng.choice(["", "Other=x", "Bridge=e9<e8", "SplitAnte=e8<e9"])
        lines.append(_w(i + 1, words[i], head=0 if i == 0 else 1,
                        misc=misc("SpaceAfter=No" if glued else "", "Entity=" + ent if ent else "", other)))
        if not in_mwt:
            surface.append((words[i], glued))
        if (i + 1) in nodes:
            ent = entity(("n", i + 1))
            lines.append(_node(f"{i + 1}.1", misc=misc("Entity=" + ent if ent else "")))
    text = "".join(f + ("" if glued else " ") for f, glued in surface).rstrip()
    comments = ([f"# text = {text}"] if rng.random() < 0.7 else []) + (["# newpar"] if rng.random() < 0.3 else [])
    return comments + lines, [(a, b, e) for a, b, e, *_ in spans] + parts, text


@pytest.mark.parametrize("seed", range(120))
def test_random_corefud_files_read_as_written(tmp_path: Path, seed: int) -> None:
    """Random CorefUD files (layouts, entity ids c1 / 1 / GUM_x_1, one to three documents, the first one
    sometimes without '# newdoc', CRLF, BOM, gzip): the mentions, sentence texts, entity types and gold
    distances (chained and nearest) are the ones written, and nothing is repaired."""
    rng = random.Random(seed)
    layout = rng.choice(list(LAYOUTS))
    lines: list[str] = []
    docs: list[tuple[str, list[list[tuple[int, int, str]]], list[str], dict[str, str]]] = []
    for d in range(rng.randint(1, 3)):
        newdoc = d > 0 or rng.random() < 0.8
        doc_id = f"doc{d}" if newdoc else "f"
        prefix = "" if layout.startswith("GRP") else rng.choice(["e", "c", "GUM_x_"])
        eids = [f"{prefix}{j}" for j in range(1, 6)]
        etypes = {e: rng.choice(["person", "place", ""]) for e in eids}
        head = ([f"# newdoc id = {doc_id}"] if newdoc else []) + ([f"# global.Entity = {layout}"] if d == 0 else [])
        lines += head
        sents, texts = [], []
        for _ in range(rng.randint(1, 6)):
            sl, ments, text = _random_sentence(rng, eids, layout, etypes)
            lines += [*sl, ""]
            sents.append(ments)
            texts.append(text)
        docs.append((doc_id, sents, texts, etypes))
    data = ("\r\n" if rng.random() < 0.3 else "\n").join(lines).encode("utf-8")
    if rng.random() < 0.3:
        data = b"\xef\xbb\xbf" + data
    path = tmp_path / "f.conllu"
    if rng.random() < 0.3:
        path = tmp_path / "f.conllu.gz"
        data = gzip.compress(data)
    path.write_bytes(data)

    c = read_gold(path)
    assert c.warnings == ()
    want = sorted((doc, s, a, b, e) for doc, sents, _, _ in docs for s, ms in enumerate(sents) for a, b, e in ms)
    assert _mentions(c) == want
    assert c.sentences["text"].to_list() == [t for _, _, texts, _ in docs for t in texts]
    at = LAYOUTS[layout]
    want_types = sorted((doc, e, (et[e] or None) if at is not None else None)
                        for doc, sents, _, et in docs for ms in sents for _, _, e in ms)
    assert sorted(c.mentions.select("document_id", "chain_id", "entity_type").rows()) == want_types
    for mode in ("chained", "nearest"):
        want_d = [x for _, sents, _, _ in docs for x in slow_distances([[e for _, _, e in ms] for ms in sents], mode)]
        assert compute_gold_distances(c, distance=mode)["gold_distance"].to_list() == want_d
