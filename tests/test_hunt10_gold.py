"""Bug hunt 10 (helper 43): CorefUD gold reading, parse-cache trust, Unicode forms. Each test fails without its fix.

1. ``SplitAnte=e1<e3,e2<e3`` (a plural *they* whose antecedent is split: John ... Mary ... they) was ignored:
   the *they* sentence got gold distance 0. Now the kept mentions of the parts are antecedents of the whole
   (chained: back to the earliest part; nearest: to the latest earlier one); ``Bridge=`` is counted and said
   (bridging is no coreference). Both said once per file (notes) and counted in the signature.
2. UPOS ``PRON`` + ``PronType=Prs`` was a personal pronoun only when XPOS is ``_``: a treebank with its own
   XPOS tag set (German ``PPER``) typed *He* NOM, so the ``ddp`` scope made it an antecedent only.
3. A ``# text`` line with no token line after it (before a ``# newdoc``) was dropped without a word.
4. With HEAD ``_`` (no dependencies) every word of a span was a head and the first one was taken: *His mother*
   was a PRON mention with head *His*, counted by the ``ddp`` scope. Now the head comes from the tags (the last
   word before the first ADP/VERB/...), said once per file.
5. A closing bracket with attributes (``e1-person)``, CorefUD 0.x / udapi's documented chunk form) gave two D410
   warnings for one problem and lost the mention. Now it closes its entity, said once per file.
6. A parse-cache shard of an older ddpcore (no ``folder`` stamp) was trusted in silence; now a run served from
   such shards says so once and lists them (``cache.unstamped``).
7. A Latin ligature (``Oﬃce``, U+FB03, PDF-extracted text) made a re-mention of ``Office Depot`` a new entity:
   the DDP of the re-mention was 0 instead of 2, with no warning. The text view now reads ligatures as their
   letters (NFKC of U+FB00-FB06 only), said and recorded (``normalised_text``), offsets mapped back.

Every gold file is synthetic, written here. Expected gold distances come from :func:`slow_distances`, a plain
loop over the chains the test writes (a split-antecedent whole listed, by hand, in the sentences of its parts as
an antecedent only); other expected values are written by hand next to the assertion, with how.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
from corefud_helpers import stand_in_validate as _stand_in
from test_cache import FAKE_INFO, FakeParser, fake_arrays, same_arrays
from test_cache import cache_folder as _folder

import ddpcore
from ddpcore.cli.main import main
from ddpcore.gold.validate import compute_gold_distances
from ddpcore.io.gold import read_gold
from ddpcore.io.segments import SegmentColumns, normalised_text, text_view
from ddpcore.pipeline import cache as C
from ddpcore.schema import NORMALISED_TEXT


def _w(i: int, form: str, upos: str = "X", xpos: str = "_", head: int | str = 0, misc: str = "_",
       feats: str = "_") -> str:
    return "\t".join([str(i), form, form.lower(), upos, xpos, feats, str(head), "dep", "_", misc])


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def slow_distances(counted: list[list[str]], mode: str = "chained", antecedent_only: list[list[str]] | None = None
                   ) -> list[int]:
    """Gold distance of each sentence (a slow loop): ``counted[s]`` the chains with a counted mention in s,
    ``antecedent_only[s]`` chains present in s as antecedents only. For sentence s, the largest s - (first
    sentence of the chain) (chained) or s - (latest earlier sentence of the chain) (nearest)."""
    ante = antecedent_only or [[] for _ in counted]
    out = []
    for s, chains in enumerate(counted):
        best = 0
        for chain in chains:
            earlier = [t for t in range(s) if chain in counted[t] or chain in ante[t]]
            if earlier:
                best = max(best, s - (earlier[0] if mode == "chained" else earlier[-1]))
        out.append(best)
    return out


HEAD = ["# newdoc id = d1", "# global.Entity = eid-etype-head-other"]


# --------------------------------------------------------------------------- 1. SplitAnte / Bridge

def _split_file(tmp_path: Path) -> Path:
    """s0 John (e1), s1 Mary (e2), s2 the house (e4), s3 'They' (e3 = e1 + e2) and the door (e5, Bridge e4<e5)."""
    return _write(tmp_path / "split.conllu", HEAD + [
        "# text = John slept.", _w(1, "John", "PROPN", "NNP", 2, "Entity=(e1-person-1)"), _w(2, "slept", "VERB", "VBD"),
        _w(3, ".", "PUNCT", ".", 2), "",
        "# text = Mary ran.", _w(1, "Mary", "PROPN", "NNP", 2, "Entity=(e2-person-1)"), _w(2, "ran", "VERB", "VBD"),
        _w(3, ".", "PUNCT", ".", 2), "",
        "# text = The house stood.", _w(1, "The", "DET", "DT", 2, "Entity=(e4-object-2"),
        _w(2, "house", "NOUN", "NN", 3, "Entity=e4)"), _w(3, "stood", "VERB", "VBD"), _w(4, ".", "PUNCT", ".", 3), "",
        "# text = They opened the door.",
        _w(1, "They", "PRON", "PRP", 2, "Entity=(e3-person-1)|SplitAnte=e1<e3,e2<e3", "PronType=Prs"),
        _w(2, "opened", "VERB", "VBD"), _w(3, "the", "DET", "DT", 4, "Bridge=e4<e5:part|Entity=(e5-object-2"),
        _w(4, "door", "NOUN", "NN", 2, "Entity=e5)"), _w(5, ".", "PUNCT", ".", 2), ""])


@pytest.mark.parametrize("mode", ["chained", "nearest"])
def test_a_split_antecedent_counts_back_to_its_parts(tmp_path: Path, mode: str) -> None:
    c = read_gold(_split_file(tmp_path))
    assert c.split_antecedents == (("d1", "e3", "e1"), ("d1", "e3", "e2"))
    assert c.bridges_ignored == 1
    # by hand: e3 counted in s3; e3's parts e1 (s0) and e2 (s1) are antecedents only of e3; e5 (the door) is
    # no mention of e4 (bridging): chained 3 - 0 = 3, nearest 3 - 1 = 2 (was 0: SplitAnte ignored)
    counted = [["e1"], ["e2"], ["e4"], ["e3", "e5"]]
    ante = [["e3"], ["e3"], [], []]
    want = slow_distances(counted, mode, ante)
    assert want == ([0, 0, 0, 3] if mode == "chained" else [0, 0, 0, 2])
    for scope in ("full", "ddp"):  # John/Mary PROP person and 'They' a DDP pronoun: the same in the ddp scope
        assert compute_gold_distances(c, distance=mode, gold_scope=scope)["gold_distance"].to_list() == want
    notes = " ".join(c.notes)
    assert "2 split-antecedent link(s) (SplitAnte)" in notes and "1 bridging link(s) (Bridge) ignored" in notes


def test_split_antecedents_and_bridges_are_said_and_recorded_by_validate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    p = _split_file(tmp_path)
    _stand_in(monkeypatch)
    assert main(["validate", str(p)]) == 0
    cap = capsys.readouterr()
    gold = json.loads(cap.out)["signature"]["gold"]
    assert gold["split_antecedents"] == 2 and gold["bridges_ignored"] == 1  # as written in _split_file
    assert cap.err.count("(SplitAnte)") == 1 and cap.err.count("(Bridge) ignored") == 1
    assert any("SplitAnte" in n for n in gold["notes"])


def test_a_bad_split_antecedent_item_is_a_repair_naming_its_line(tmp_path: Path) -> None:
    p = _write(tmp_path / "bad.conllu", HEAD + [_w(1, "They", misc="Entity=(e3)|SplitAnte=e1"), ""])
    c = read_gold(p)
    assert any("[D410]" in w and "line 3" in w and "'e1'" in w for w in c.warnings)
    assert c.split_antecedents == ()


# --------------------------------------------------------------------------- 2. non-PTB XPOS

def test_a_personal_pronoun_with_a_treebanks_own_xpos_is_a_pronoun(tmp_path: Path) -> None:
    p = _write(tmp_path / "de.conllu", HEAD + [
        _w(1, "Peter", "PROPN", "NE", 2, "Entity=(e1-person-1)"), _w(2, "schlief", "VERB", "VVFIN"), "",
        _w(1, "Er", "PRON", "PPER", 2, "Entity=(e1-person-1)", "Case=Nom|Person=3|PronType=Prs"),
        _w(2, "lief", "VERB", "VVFIN"), ""])
    c = read_gold(p)
    # by hand: UPOS PRON + PronType=Prs is a personal pronoun whatever the XPOS (was NOM with XPOS PPER)
    assert c.mentions.select("text", "mention_type").rows() == [("Peter", "PROP"), ("Er", "PRON")]
    # PTB XPOS as before: PRP / PRP$ are PRON
    p = _write(tmp_path / "en.conllu", HEAD + [
        _w(1, "He", "PRON", "PRP", 2, "Entity=(e1-person-1)", "PronType=Prs"), _w(2, "ran", "VERB", "VBD"), "",
        _w(1, "his", "PRON", "PRP$", 2, "Entity=(e1-person-1)", "Poss=Yes|PronType=Prs"),
        _w(2, "dog", "NOUN", "NN"), ""])
    assert read_gold(p).mentions["mention_type"].to_list() == ["PRON", "PRON"]


# --------------------------------------------------------------------------- 3. a '# text' with no tokens

def test_a_text_line_with_no_token_lines_is_said(tmp_path: Path) -> None:
    p = _write(tmp_path / "pre.conllu", ["# text = Lost one.", *HEAD, "# text = Kept", _w(1, "Kept"), ""])
    c = read_gold(p)
    assert c.sentences.select("document_id", "text").rows() == [("d1", "Kept")]
    assert any(n.startswith(f"{p}: line 1: 1 '# text' line(s) with no token line") for n in c.notes)
    clean = read_gold(_write(tmp_path / "ok.conllu", [*HEAD, "# text = Kept", _w(1, "Kept"), ""]))
    assert not any("'# text' line(s)" in n for n in clean.notes)


# --------------------------------------------------------------------------- 4. HEAD '_'

def test_without_dependencies_a_mentions_head_comes_from_its_tags(tmp_path: Path) -> None:
    # s0 "His mother came." (e1 = His mother), s1 "It rained.", s2 "His mother ran." (e1 again); no e2 for 'His'
    rows = HEAD + [
        _w(1, "His", "PRON", "PRP$", "_", "Entity=(e1-person", "Poss=Yes|PronType=Prs"),
        _w(2, "mother", "NOUN", "NN", "_", "Entity=e1)"), _w(3, "came", "VERB", "VBD", "_"), "",
        _w(1, "It", "PRON", "PRP", "_", feats="PronType=Prs"), _w(2, "rained", "VERB", "VBD", "_"), "",
        _w(1, "His", "PRON", "PRP$", "_", "Entity=(e1-person", "Poss=Yes|PronType=Prs"),
        _w(2, "mother", "NOUN", "NN", "_", "Entity=e1)"), _w(3, "ran", "VERB", "VBD", "_"), ""]
    c = read_gold(_write(tmp_path / "nohead.conllu", rows))
    # by hand: the head of "His mother" is "mother" (NOUN): NOM (was PRON, head "His")
    assert c.mentions.select("head_text", "mention_type").rows() == [("mother", "NOM"), ("mother", "NOM")]
    # ddp scope: a NOM mention is an antecedent only -> nothing counted; full: s2 back to s0
    assert compute_gold_distances(c, gold_scope="ddp")["gold_distance"].to_list() == slow_distances([[], [], []])
    assert compute_gold_distances(c)["gold_distance"].to_list() == slow_distances([["e1"], [], ["e1"]])
    assert sum("HEAD '_'" in n for n in c.notes) == 1
    # the same file with dependencies (mother <- His, root came): the same heads, no note
    dep = [r.replace("\t_\tdep", "\t2\tdep", 1) if r.startswith("1\tHis") else r.replace("\t_\tdep", "\t0\tdep", 1)
           for r in rows]
    c2 = read_gold(_write(tmp_path / "dep.conllu", dep))
    assert c2.mentions.select("head_text", "mention_type").rows() == [("mother", "NOM"), ("mother", "NOM")]
    assert not any("HEAD '_'" in n for n in c2.notes)
    # the bracket's CorefUD head field (the head word's position in the mention) is the gold's own head: by hand,
    # word 4 of "The University of Oxford" is "Oxford"; without the field the tags give "University"
    uni = [_w(1, "The", "DET", "DT", "_", "Entity=(e1-organization{}"), _w(2, "University", "PROPN", "NNP", "_"),
           _w(3, "of", "ADP", "IN", "_"), _w(4, "Oxford", "PROPN", "NNP", "_", "Entity=e1)"), ""]
    for field, head in (("-4", "Oxford"), ("", "University")):
        rows = HEAD + [r.replace("{}", field) for r in uni]
        got = read_gold(_write(tmp_path / f"uni{field}.conllu", rows)).mentions["head_text"].to_list()
        assert got == [head]


# --------------------------------------------------------------------------- 5. closing brackets with attributes

def test_a_closing_bracket_with_attributes_closes_its_entity_with_one_note(tmp_path: Path) -> None:
    p = _write(tmp_path / "close.conllu", HEAD + [
        _w(1, "A", "DET", "DT", 2, "Entity=(e2-person-1"),
        _w(2, "woman", "NOUN", "NN", 3, "Entity=e2-person-1)"), _w(3, "came", "VERB", "VBD"), "",
        _w(1, "She", "PRON", "PRP", 2, "Entity=(e2-person-1)", "PronType=Prs"),
        _w(2, "ran", "VERB", "VBD"), ""])
    c = read_gold(p)
    assert c.warnings == ()  # was two D410 warnings (a close of an unknown entity, then e2 left open)
    assert c.mentions.select("sentence", "token_start", "token_end", "chain_id").rows() == [
        (0, 0, 2, "e2"), (1, 0, 1, "e2")]  # as written: "A woman" and "She"
    assert sum("closing bracket(s) carry attributes" in n for n in c.notes) == 1
    assert read_gold(p, strict=True).mentions.height == 2  # a format variant, no repair: not an error


# --------------------------------------------------------------------------- 6. unstamped parse-cache shards

def _unstamp(shard: Path) -> None:
    """Rewrite a shard as an older ddpcore wrote it: the same columns, metadata without ``folder``."""
    t = pq.read_table(shard)
    meta = json.loads(t.schema.metadata[C.SHARD_META_KEY])
    del meta["folder"]
    pq.write_table(t.replace_schema_metadata({C.SHARD_META_KEY: json.dumps(meta).encode()}), shard)


def test_unstamped_shards_served_are_said_once_and_recorded(tmp_path: Path) -> None:
    texts = ["alpha beta", "gamma delta epsilon"]
    C.CachedParse(FakeParser(), tmp_path)(texts[:1])
    C.CachedParse(FakeParser(), tmp_path)(texts[1:])
    shards = sorted((tmp_path / _folder(FAKE_INFO)).glob("*.parquet"))
    assert len(shards) == 2
    for s in shards:
        _unstamp(s)
    seen: list[str] = []
    parser = FakeParser()
    run = C.CachedParse(parser, tmp_path, warn=seen.append)
    assert same_arrays(run(texts), fake_arrays(texts)) and parser.calls == []  # trusted: served
    assert len(seen) == 1 and "2 shard(s) written by an older ddpcore" in seen[0]  # one warning for both
    assert run.signature()["cache"]["unstamped"] == sorted(s.name for s in shards)
    # stamped shards: nothing said, nothing recorded
    quiet: list[str] = []
    fresh = tmp_path / "fresh"
    C.CachedParse(FakeParser(), fresh)(texts)
    run = C.CachedParse(FakeParser(), fresh, warn=quiet.append)
    run(texts)
    assert quiet == [] and "unstamped" not in run.signature()["cache"]


def test_ray_signature_merges_unstamped_shards_of_every_actor() -> None:
    from ddpcore.engines import ray_engine as R
    from ddpcore.engines.base import RunOptions

    o = RunOptions(cols=SegmentColumns(), parse_wrapper=lambda p: p)
    done = {0: {"cache_hits": 1, "cache_misses": 0, "cache_dir": "/c", "cache_unstamped": ["b", "a"]},
            1: {"cache_hits": 2, "cache_misses": 1, "cache_dir": "/c", "cache_unstamped": ["a"]}}
    # by hand: hits 1+2, misses 0+1, the names of both actors, sorted, each once (was: no "unstamped" key)
    assert R._cache_entry(o, done)["cache"] == {"hits": 3, "misses": 1, "dir": "/c", "unstamped": ["a", "b"]}


# --------------------------------------------------------------------------- 7. ligatures

LIG = "\ufb03"  # LATIN SMALL LIGATURE FFI


def test_text_view_reads_a_ligature_as_its_letters_and_maps_offsets_back() -> None:
    given = [f"The O{LIG}ce Depot", "plain Office", "m\u00b2 \u2460 \u210c"]
    v = text_view(pl.Series("source", given))
    # by hand: U+FB03 -> "ffi"; superscript two, circled one and blackletter H are kept (they say something else)
    assert v is not None and v.texts.to_list() == ["The Office Depot", "plain Office", "m\u00b2 \u2460 \u210c"]
    assert v.changed.tolist() == [True, False, False]
    n = len("The Office Depot")
    rows = np.zeros(n, dtype=np.int64)
    start, end = v.to_given(rows, np.arange(n)), v.to_given(rows, np.arange(n) + 1, end=True)
    # by hand: view characters 5, 6, 7 ("f", "f", "i") all come from the given character 5 (the ligature)
    want = list("The O") + [LIG, LIG, LIG] + list("ce Depot")
    assert [given[0][s:e] for s, e in zip(start, end)] == want
    df = pl.DataFrame({"document_id": ["a", "a"], "segment_id": [0, 1], "source": given[1::-1]}).with_row_index("__row")
    assert normalised_text(df, SegmentColumns()) == {"segments": 1, "forms": {"ligature": 1}, "document": "a",
                                                     "segment": 1, "char": "U+FB03", "row": 2}


@pytest.mark.spacy_model
def test_a_name_spelled_with_a_ligature_is_the_same_name(nlp: Any) -> None:
    clean = ["The Office Depot opened a store in Boston.", "It rained all day.", "Later, Office Depot closed the store."]
    lig = [clean[0].replace("ffi", LIG), *clean[1:]]

    def run(texts: list[str]) -> Any:
        frame = pl.DataFrame({"document_id": ["d"] * 3, "segment_id": [0, 1, 2], "source": texts})
        return ddpcore.profile_anchors(frame, nlp=nlp)

    ref, got = run(clean), run(lig)
    # by hand: "Office Depot" in segments 0 and 2 -> the re-mention's DDP is 2 (was 0 with the ligature)
    assert ref.segments["ddp"][2] == 2 and got.segments["ddp"].to_list() == ref.segments["ddp"].to_list()
    for r in got.anchors.iter_rows(named=True):  # offsets index the text as given
        assert lig[r["segment_id"]][r["char_start"]:r["char_end"]] == r["text"]
    assert got.signature[NORMALISED_TEXT]["forms"] == {"ligature": 1}
