"""The parse cache (issue 8 section 3): keys, gathering, hits/misses, corruption, concurrency, CLI."""
from __future__ import annotations

import json
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddpcore.anchors.spacy_extract import TokenArrays
from ddpcore.pipeline import cache as C

REPO = Path(__file__).resolve().parents[1]
MINI = REPO / "tests" / "data" / "wmt25_mini.jsonl"
FIELDS = C.TOKEN_FIELDS


# ----------------------------------------------------------------------------- helpers


def mmh3_x64_128(data: bytes, seed: int = 0) -> tuple[int, int]:
    """Pure-Python MurmurHash3_x64_128 (the reference algorithm), the oracle of the kernel."""
    M = (1 << 64) - 1

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (64 - r))) & M

    def fmix(k: int) -> int:
        k ^= k >> 33
        k = (k * 0xFF51AFD7ED558CCD) & M
        k ^= k >> 33
        k = (k * 0xC4CEB9FE1A85EC53) & M
        return k ^ (k >> 33)

    c1, c2 = 0x87C37B91114253D5, 0x4CF5AD432745937F
    h1 = h2 = seed
    n = len(data)
    for i in range(n // 16):
        k1 = int.from_bytes(data[16 * i:16 * i + 8], "little")
        k2 = int.from_bytes(data[16 * i + 8:16 * i + 16], "little")
        h1 ^= (rotl((k1 * c1) & M, 31) * c2) & M
        h1 = (rotl(h1, 27) + h2) & M
        h1 = (h1 * 5 + 0x52DCE729) & M
        h2 ^= (rotl((k2 * c2) & M, 33) * c1) & M
        h2 = (rotl(h2, 31) + h1) & M
        h2 = (h2 * 5 + 0x38495AB5) & M
    tail = data[16 * (n // 16):]
    if len(tail) > 8:
        k2 = int.from_bytes(tail[8:], "little")
        h2 ^= (rotl((k2 * c2) & M, 33) * c1) & M
    if len(tail) > 0:
        k1 = int.from_bytes(tail[:8], "little")
        h1 ^= (rotl((k1 * c1) & M, 31) * c2) & M
    h1 ^= n
    h2 ^= n
    h1 = (h1 + h2) & M
    h2 = (h2 + h1) & M
    h1, h2 = fmix(h1), fmix(h2)
    h1 = (h1 + h2) & M
    h2 = (h2 + h1) & M
    return h1, h2


def fake_arrays(texts: list[str]) -> TokenArrays:
    """Deterministic stand-in for a parse: one token per whitespace word, attributes derived
    from the word and its position (so a unit's tokens identify the unit)."""
    cols: dict[str, list[int]] = {f: [] for f in FIELDS}
    counts = []
    for t in texts:
        pos = 0
        words = t.split()
        for j, w in enumerate(words):
            start = t.index(w, pos)
            pos = start + len(w)
            h = C.unit_keys([w])[0]
            cols["lower"].append(int(h[0]))
            cols["pos"].append(len(w) % 17)
            cols["tag"].append(int(h[1]))
            cols["dep"].append(int(h[0]) ^ j)
            cols["head"].append(-j % 3 - 1)
            cols["iob"].append(1 + j % 3)
            cols["enttype"].append(int(h[1]) >> 3)
            cols["sent_start"].append(1 if j == 0 else -1)
            cols["idx"].append(start)
            cols["end"].append(pos)
        counts.append(len(words))
    return TokenArrays(**{f: np.array(cols[f], dtype=C.TOKEN_DTYPES[f]) for f in FIELDS},
                       n_tokens__unit=np.array(counts, dtype=np.int64))


FAKE_INFO = {"spacy": "0.fake", "pipeline": "default", "pipeline_name": "xx_fake", "pipeline_version": "1.0",
             "components": ["tok2vec", "ner"], "excluded": [], "has_parser": True}


class FakeParser:
    """Stands in for :class:`ddpcore.pipeline.parse.Parser`: records what it is asked to parse."""

    pipeline = None
    loaded = True  # the fingerprint comes from info(), not from an installed package

    def __init__(self, info: dict | None = None) -> None:
        self.calls: list[list[str]] = []
        self._info = dict(info or FAKE_INFO)

    def info(self) -> dict:
        return self._info

    def provide_info(self, info: dict) -> None:
        self._info = dict(info)

    def parse(self, texts, progress=None) -> TokenArrays:
        self.calls.append(list(texts))
        if progress:
            progress(len(texts))
        return fake_arrays(list(texts))


OTHER_INFO = {**FAKE_INFO, "components": ["tok2vec", "senter"], "has_parser": False}


class OtherParser(FakeParser):
    """Another pipeline configuration: other components, other parses (POS shifted by one)."""

    def __init__(self) -> None:
        super().__init__(OTHER_INFO)

    def parse(self, texts, progress=None) -> TokenArrays:
        toks = super().parse(texts, progress)
        return TokenArrays(**{f: getattr(toks, f) + (1 if f == "pos" else 0) for f in C.TOKEN_FIELDS},
                           n_tokens__unit=toks.n_tokens__unit)


def cache_folder(info: dict) -> str:
    """The cache folder name of a pipeline configuration ``info``."""
    return C.fingerprint_id(C.fingerprint_from_info(info))


def same_arrays(a: TokenArrays, b: TokenArrays) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in (*FIELDS, "n_tokens__unit")) and all(
        getattr(a, f).dtype == getattr(b, f).dtype for f in FIELDS)


def shard_files(root: Path) -> list[Path]:
    return sorted(root.rglob(f"*{C.SHARD_SUFFIX}"))


# ------------------------------------------------------------------------------- keys


def test_unit_keys_match_reference_vectors():
    keys = C.unit_keys(["foo", "", "héllo wörld, this is longer than sixteen bytes"])
    assert keys.shape == (3, 2) and keys.dtype == np.uint64
    # published MurmurHash3_x64_128 vectors (seed 0): "foo" -> 6145f501578671e2877dba2be487af7e
    assert keys[0].tobytes() == bytes.fromhex("6145f501578671e2877dba2be487af7e")
    assert keys[1].tolist() == [0, 0]
    assert tuple(int(x) for x in keys[2]) == mmh3_x64_128("héllo wörld, this is longer than sixteen bytes".encode())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=20))
def test_unit_keys_equal_the_python_oracle(texts):
    keys = C.unit_keys(texts)
    assert [tuple(int(x) for x in k) for k in keys] == [mmh3_x64_128(t.encode()) for t in texts]


# -------------------------------------------------------------------------- gathering


@st.composite
def parts_and_picks(draw):
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        texts = draw(st.lists(st.text(alphabet="ab c\u00e9", max_size=12), min_size=1, max_size=6))
        parts.append(fake_arrays(texts))
    picks = draw(st.lists(st.tuples(st.integers(0, len(parts) - 1), st.integers(0, 10)), max_size=15))
    picks = [(p, r % len(parts[p].n_tokens__unit)) for p, r in picks]
    return parts, picks


@settings(max_examples=80, deadline=None)
@given(parts_and_picks())
def test_gather_units_equals_concatenated_slices(data):
    parts, picks = data
    got = C.gather_units(parts, np.array([p for p, _ in picks], np.int64), np.array([r for _, r in picks], np.int64))
    expect: dict[str, list] = {f: [] for f in FIELDS}
    for p, r in picks:  # the oracle: slice each unit's tokens and concatenate
        start = int(parts[p].n_tokens__unit[:r].sum())
        stop = start + int(parts[p].n_tokens__unit[r])
        for f in FIELDS:
            expect[f].extend(getattr(parts[p], f)[start:stop].tolist())
    assert got.n_tokens__unit.tolist() == [int(parts[p].n_tokens__unit[r]) for p, r in picks]
    for f in FIELDS:
        assert getattr(got, f).tolist() == expect[f], f
        assert getattr(got, f).dtype == C.TOKEN_DTYPES[f]


# ------------------------------------------------------------ hits and misses (no spaCy)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([f"unit {i} text {'x' * (i % 5)}" for i in range(25)]), min_size=1, max_size=40),
       st.lists(st.booleans(), min_size=25, max_size=25))
def test_partial_hits_reassemble_in_input_order(texts, cached_mask):
    pool = [f"unit {i} text {'x' * (i % 5)}" for i in range(25)]
    first = [t for t, m in zip(pool, cached_mask) if m]
    with tempfile.TemporaryDirectory() as tmp:
        warm = C.CachedParse(FakeParser(), Path(tmp))
        if first:
            warm(first)
        parser = FakeParser()
        run = C.CachedParse(parser, Path(tmp))
        got = run(texts)
        assert same_arrays(got, fake_arrays(texts))
        cached = set(first)
        assert run.hits == sum(t in cached for t in texts)
        assert run.misses == len(texts) - run.hits
        parsed = [t for call in parser.calls for t in call]
        # only the misses were parsed, each distinct text once, in order of first appearance
        assert parsed == list(dict.fromkeys(t for t in texts if t not in cached))
        # a third run serves everything
        again = C.CachedParse(FakeParser(), Path(tmp))
        assert same_arrays(again(texts), fake_arrays(texts)) and again.misses == 0


def test_progress_counts_every_unit(tmp_path):
    seen: list[int] = []
    C.CachedParse(FakeParser(), tmp_path)(["a b", "c"])
    C.CachedParse(FakeParser(), tmp_path)(["a b", "d", "d", "c"], seen.append)
    assert sum(seen) == 4


def test_store_and_read_shard_roundtrip(tmp_path):
    toks = fake_arrays(["one two", "three", "four five six"])
    keys = C.unit_keys(["one two", "three", "four five six"])
    path = C.write_shard(tmp_path, keys, toks)
    k2, t2 = C.read_shard(path)
    assert np.array_equal(k2, keys) and same_arrays(t2, toks)
    assert not list(tmp_path.glob(".*.tmp"))  # no temp file left


# ---------------------------------------------------------------------- fingerprints


def test_fingerprint_changes_with_pipeline_version_components_and_spacy():
    base = C.fingerprint_from_info(FAKE_INFO)
    ids = {C.fingerprint_id(base)}
    for change in ({"pipeline_version": "1.1"}, {"components": ["tok2vec"]}, {"spacy": "0.fake2"},
                   {"pipeline_name": "xx_other"}):
        ids.add(C.fingerprint_id(C.fingerprint_from_info({**FAKE_INFO, **change})))
    ids.add(C.fingerprint_id({**base, "format": C.CACHE_FORMAT + 1}))
    assert len(ids) == 6
    # the preset name alone ("sm" vs "default") does not change it
    assert C.fingerprint_id(C.fingerprint_from_info({**FAKE_INFO, "pipeline": "sm"})) == C.fingerprint_id(base)


def test_static_fingerprint_of_a_pipeline_folder_follows_its_meta(tmp_path):
    meta = {"lang": "en", "name": "core_web_sm", "version": "3.8.0",
            "pipeline": ["tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "ner"],
            "components": ["tok2vec", "tagger", "parser", "senter", "attribute_ruler", "lemmatizer", "ner"]}
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    fp = C.static_fingerprint(str(tmp_path))
    assert fp["components"] == ["tok2vec", "tagger", "parser", "attribute_ruler", "ner"]
    assert fp["pipeline_name"] == "en_core_web_sm" and fp["pipeline_version"] == "3.8.0"
    (tmp_path / "meta.json").write_text(json.dumps({**meta, "version": "3.8.1"}))
    assert C.fingerprint_id(C.static_fingerprint(str(tmp_path))) != C.fingerprint_id(fp)
    assert C.static_fingerprint(str(tmp_path / "missing")) is None


@pytest.mark.spacy_model
@pytest.mark.parametrize("preset", ["default", "fast"])
def test_static_fingerprint_equals_the_loaded_pipelines(preset, nlp):
    from ddpcore.anchors.spacy_extract import load_pipeline, pipeline_info

    loaded = nlp if preset == "default" else load_pipeline(preset)
    assert C.static_fingerprint(preset) == C.fingerprint_from_info(pipeline_info(loaded, preset))


# -------------------------------------------------------------- corruption, bad folders


def _fill(root: Path, texts: list[str]) -> None:
    C.CachedParse(FakeParser(), root)(texts)


def test_checksum_mismatch_is_reported_once_and_reparsed(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    texts = ["alpha beta", "gamma", "delta epsilon zeta"]
    _fill(tmp_path, texts)
    (shard,) = shard_files(tmp_path)
    t = pq.read_table(shard)
    bad = pa.array([[9] * len(v) for v in t["pos"].to_pylist()], type=t.schema.field("pos").type)
    pq.write_table(t.set_column(t.schema.get_field_index("pos"), "pos", bad), shard)  # same metadata, other data
    warnings_seen: list[str] = []
    parser = FakeParser()
    run = C.CachedParse(parser, tmp_path, warn=warnings_seen.append)
    assert same_arrays(run(texts), fake_arrays(texts))
    assert same_arrays(run(texts), fake_arrays(texts))  # second batch: no second warning
    assert len(warnings_seen) == 1 and "checksum mismatch" in warnings_seen[0] and "\n" not in warnings_seen[0]
    assert parser.calls == [texts] and run.hits == 3 and run.misses == 3
    assert not shard.exists()


def test_unreadable_shard_is_reported_and_reparsed(tmp_path):
    texts = ["one", "two three"]
    _fill(tmp_path, texts)
    (shard,) = shard_files(tmp_path)
    shard.write_bytes(shard.read_bytes()[:100])  # truncated
    warnings_seen: list[str] = []
    run = C.CachedParse(FakeParser(), tmp_path, warn=warnings_seen.append)
    assert same_arrays(run(texts), fake_arrays(texts))
    assert len(warnings_seen) == 1 and "corrupted" in warnings_seen[0] and run.misses == 2


@pytest.mark.parametrize("where", ["under a file", "a file", "uri under a file"])
def test_a_cache_that_cannot_be_read_is_one_coded_error(tmp_path, where):
    """A file where the cache folder (or a folder above it) should be: [D870] naming the path, nothing parsed."""
    from ddpcore.errors import DDPDataError

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    root = {"under a file": blocker / "cache", "a file": blocker}.get(where)
    root = root if root is not None else C.storage_path((blocker / "cache").as_uri())
    parser = FakeParser()
    run = C.CachedParse(parser, root, warn=pytest.fail)
    with pytest.raises(DDPDataError, match=r"^\[D870\] .*file.*: cannot read the parse cache \(a file is where its "
                                           r"folder should be\); give a folder") as err:
        run(["a b", "c"])
    assert str(root) in str(err.value) and parser.calls == []


def _immutable(folder: Path, on: bool) -> bool:
    """``chattr +i`` / ``-i`` on ``folder``: no new file in it, even for root (False where unsupported)."""
    r = subprocess.run(["chattr", "+i" if on else "-i", str(folder)], capture_output=True)
    return r.returncode == 0


def test_a_cache_that_cannot_be_written_is_read_and_said_in_the_signature(tmp_path):
    """A read-only cache folder (``chattr +i``: root cannot create files in it either): its parses are
    used, the new parses are not stored, one warning, and the signature records why (``not_written``)."""
    _fill(tmp_path, ["a b"])
    (folder,) = [p for p, _ in C.cache_folders(tmp_path)]
    before = sorted(p.name for p in folder.iterdir())
    if not _immutable(folder, True):
        pytest.skip("chattr +i is not supported here (needs CAP_LINUX_IMMUTABLE and ext4/xfs/btrfs)")
    try:
        seen: list[str] = []
        parser = FakeParser()
        run = C.CachedParse(parser, tmp_path, warn=seen.append)
        assert same_arrays(run(["a b", "c"]), fake_arrays(["a b", "c"]))
        assert same_arrays(run(["c"]), fake_arrays(["c"]))  # not stored: parsed again, no second warning
        run.flush()
    finally:
        _immutable(folder, False)
    assert parser.calls == [["c"], ["c"]] and sorted(p.name for p in folder.iterdir()) == before
    assert len(seen) == 1 and "cannot write the parse cache" in seen[0] and "are not stored" in seen[0]
    sig = run.signature()["cache"]
    assert sig["hits"] == 1 and sig["misses"] == 2 and sig["dir"] == str(tmp_path)
    assert sig["not_written"] == "Operation not permitted"


def test_a_cache_folder_that_cannot_be_created_runs_without_cache(tmp_path):
    """A cache root where no folder can be created (``chattr +i``): one warning, every unit parsed,
    the signature says the cache was not used and why."""
    root = tmp_path / "ro"
    root.mkdir()
    if not _immutable(root, True):
        pytest.skip("chattr +i is not supported here (needs CAP_LINUX_IMMUTABLE and ext4/xfs/btrfs)")
    try:
        seen: list[str] = []
        run = C.CachedParse(FakeParser(), root, warn=seen.append)
        assert same_arrays(run(["a b", "c"]), fake_arrays(["a b", "c"]))
        assert same_arrays(run(["a b"]), fake_arrays(["a b"]))
    finally:
        _immutable(root, False)
    assert len(seen) == 1 and "running without the cache" in seen[0]
    assert run.signature() == {"cache": {"hits": 0, "misses": 3, "dir": None, "not_written": "Operation not permitted"}}
    assert list(root.iterdir()) == []


def test_a_failed_shard_write_keeps_the_cache_readable(tmp_path, monkeypatch):
    """A shard write that fails mid-run (a full disk: ENOSPC): later hits are still served from the
    shards already there; nothing more is written; the reason is in the signature."""
    _fill(tmp_path, ["a b"])
    seen: list[str] = []
    parser = FakeParser()
    run = C.CachedParse(parser, tmp_path, warn=seen.append)

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(C, "write_shard", full)
    assert same_arrays(run(["c"]), fake_arrays(["c"]))
    assert same_arrays(run(["a b", "c"]), fake_arrays(["a b", "c"]))
    assert parser.calls == [["c"], ["c"]] and len(seen) == 1 and "are not stored" in seen[0]
    assert run.signature()["cache"] == {"hits": 1, "misses": 2, "dir": str(tmp_path),
                                        "not_written": "No space left on device"}


# ------------------------------------------------------------------------ concurrency


def _refuse(message: str) -> None:
    raise AssertionError(message)


def _writer(root: str, texts: list[str], rounds: int) -> None:
    """Each round a new run on the shared cache: it reads what the other writer stored so far (a shard
    seen before its last byte would fail its checksum: a warning, raised here) and stores its misses."""
    for r in range(rounds):
        some = texts[r::rounds]
        assert same_arrays(C.CachedParse(FakeParser(), C.storage_path(root), warn=_refuse)(some), fake_arrays(some))


@pytest.mark.parametrize("as_uri", [False, True], ids=["path", "file-uri"])
def test_concurrent_writers_leave_a_readable_cache(tmp_path, as_uri):
    """Two processes filling one cache folder at once, given as a path or as a file:// URI (the code path of
    s3:// and gs://: pyarrow.fs streams and moves): no lock, yet no reader ever sees a partial shard, no
    temporary file stays, every shard passes its checksum and a later run finds every unit."""
    root = tmp_path.as_uri() if as_uri else str(tmp_path)
    texts = [f"shared line {i} " + "word " * (i % 50) for i in range(300)]
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(root, texts[k * 100:k * 100 + 200], 20)) for k in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    shards = shard_files(tmp_path)
    assert len(shards) >= 40 and not list(tmp_path.rglob(".*.tmp"))
    for s in shards:
        C.read_shard(s)  # every shard complete and verified
    run = C.CachedParse(FakeParser(), C.storage_path(root), warn=pytest.fail)
    assert same_arrays(run(texts[:300]), fake_arrays(texts[:300])) and run.misses == 0


# ------------------------------------------------------------- ddp cache info / clear


def test_cache_info_and_clear(tmp_path, capsys):
    from ddpcore.cli.main import main

    _fill(tmp_path, ["a b c", "d e"])
    _fill(tmp_path, ["f"])
    assert main(["cache", "info", "--cache", str(tmp_path), "-f", "json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["units"] == 3 and info["shards"] == 2 and info["bytes"] > 0
    (pl_,) = info["pipelines"]
    assert pl_["pipeline_name"] == "xx_fake" and pl_["units"] == 3
    assert main(["cache", "info", "--cache", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "3 cached lines in 2 shards" in text and "xx_fake 1.0" in text
    assert main(["cache", "clear", "--cache", str(tmp_path), "--pipeline", "nope"]) == 2
    assert "[D181]" in capsys.readouterr().err
    (tmp_path / "unrelated").mkdir()
    assert main(["cache", "clear", "--cache", str(tmp_path), "--pipeline", "xx_fake"]) == 0
    assert "removed 1 pipeline folder" in capsys.readouterr().out
    assert shard_files(tmp_path) == [] and (tmp_path / "unrelated").is_dir()
    assert main(["cache", "info", "--cache", str(tmp_path / "unrelated" / "x"), "-f", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["exists"] is False
    (tmp_path / "f.txt").write_text("x")
    assert main(["cache", "info", "--cache", str(tmp_path / "f.txt")]) == 2
    err = capsys.readouterr().err
    assert "[D180]" in err and err.count("\n") == 1


def test_cache_info_uses_the_environment(tmp_path, monkeypatch, capsys):
    from ddpcore.cli.main import main

    monkeypatch.setenv("DDPCORE_CACHE", str(tmp_path / "envcache"))
    _fill(tmp_path / "envcache", ["x y"])
    assert main(["cache", "info", "-f", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dir"] == str(tmp_path / "envcache") and out["units"] == 1 and out["source"] == "$DDPCORE_CACHE"
    assert main(["cache", "clear"]) == 0 and shard_files(tmp_path / "envcache") == []


# ------------------------------------------------------------- real runs (spaCy, small)


def _profile(source, cache, rules):
    from ddpcore import profile_anchors

    return profile_anchors(source, cache=cache, rules=rules)


def same_file(a, b) -> None:
    assert a.segments.equals(b.segments) and a.anchors.equals(b.anchors) and a.sentences.equals(b.sentences)


@pytest.mark.spacy_model
def test_cached_and_uncached_runs_are_identical_for_both_rule_sets(tmp_path):
    cache = tmp_path / "c"
    first = _profile(MINI, cache, "refined")
    n_units = first.signature["cache"]["misses"]
    assert first.signature["cache"] == {"hits": 0, "misses": n_units, "dir": str(cache)} and n_units > 20
    for rules in ("refined", "paper"):
        cached = _profile(MINI, cache, rules)
        assert cached.signature["cache"] == {"hits": n_units, "misses": 0, "dir": str(cache)}
        plain = _profile(MINI, False, rules)
        assert "cache" not in plain.signature
        same_file(cached, plain)
        assert {k: v for k, v in cached.signature.items() if k != "cache"} == plain.signature


@pytest.mark.spacy_model
def test_a_corpus_sharing_half_its_documents(tmp_path):
    df = pl.read_ndjson(MINI)
    docs = df["document_id"].unique(maintain_order=True).to_list()
    half = df.filter(pl.col("document_id").is_in(docs[: len(docs) // 2]))
    cache = tmp_path / "c"
    served = _profile(half, cache, "paper").signature["cache"]["misses"]
    both = _profile(df, cache, "paper")
    assert both.signature["cache"]["hits"] == served and both.signature["cache"]["misses"] > 0
    same_file(both, _profile(df, False, "paper"))


def _ddp(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ddpcore.cli.main", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=600)


@pytest.mark.spacy_model
def test_ddp_profile_fully_cached_loads_no_pipeline(tmp_path):
    cache = tmp_path / "c"
    out1, out2 = tmp_path / "a.parquet", tmp_path / "b.parquet"
    r = _ddp("profile", str(MINI), "-o", str(out1), "-q", "-j", "1", "--cache", str(cache))
    assert r.returncode == 0, r.stderr
    probe = ("import json, sys\nfrom ddpcore.cli.main import main\nrc = main(sys.argv[1:])\n"
             "mods = [m for m in sys.modules if m == 'spacy' or m.startswith(('spacy.', 'en_core_web', 'thinc'))]\n"
             "print(json.dumps({'rc': rc, 'mods': mods}), file=sys.stderr)\n")
    r = subprocess.run([sys.executable, "-c", probe, "profile", str(MINI), "-o", str(out2), "-q", "-j", "2",
                        "--rules", "paper", "--cache", str(cache)], capture_output=True, text=True, timeout=600)
    report = json.loads(r.stderr.strip().splitlines()[-1])
    assert report == {"rc": 0, "mods": []}, r.stderr
    sig = json.loads(__import__("pyarrow.parquet").parquet.read_schema(out2).metadata[b"ddpcore.signature"])
    assert sig["cache"]["misses"] == 0 and sig["cache"]["hits"] > 0
    assert sig["pipeline_name"] == "en_core_web_sm" and sig["has_parser"] is True
    # the same output as a run that parses
    r = _ddp("profile", str(MINI), "-o", str(tmp_path / "c.parquet"), "-q", "-j", "1", "--rules", "paper",
             "--no-cache")
    assert r.returncode == 0, r.stderr
    assert pl.read_parquet(out2).equals(pl.read_parquet(tmp_path / "c.parquet"))
    assert "cache" not in json.loads(
        __import__("pyarrow.parquet").parquet.read_schema(tmp_path / "c.parquet").metadata[b"ddpcore.signature"])


@pytest.mark.spacy_model
def test_ddp_profile_corrupted_cache_and_unwritable_cache(tmp_path):
    cache = tmp_path / "c"
    ref = tmp_path / "ref.parquet"
    assert _ddp("profile", str(MINI), "-o", str(ref), "-q", "-j", "1", "--cache", str(cache)).returncode == 0
    (shard,) = shard_files(cache)
    data = bytearray(shard.read_bytes())
    data[len(data) // 3:len(data) // 3 + 64] = b"\x00" * 64
    shard.write_bytes(bytes(data))
    out = tmp_path / "out.parquet"
    r = _ddp("profile", str(MINI), "-o", str(out), "-q", "-j", "1", "--cache", str(cache))
    assert r.returncode == 0, r.stderr
    warn = [ln for ln in r.stderr.splitlines() if "warning" in ln]
    assert len(warn) == 1 and warn[0].startswith("ddp profile: warning: parse cache shard") and "corrupted" in warn[0]
    assert pl.read_parquet(out).equals(pl.read_parquet(ref))
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    r = _ddp("profile", str(MINI), "-o", str(out), "-q", "-j", "1", "--cache", str(blocker / "sub"))
    assert r.returncode == 3, r.stderr
    (line,) = [ln for ln in r.stderr.splitlines() if ln]
    assert "[D870]" in line and f"{blocker / 'sub'}: cannot read the parse cache" in line


def test_json_files_without_checksum_are_not_trusted_and_rewritten(tmp_path):
    """info.json/strings.json of a cache written before checksums: ignored without a warning (the
    details come from the parser), then written again with their checksum."""
    _fill(tmp_path, ["a b"])
    (folder,) = [p for p, _ in C.cache_folders(tmp_path)]
    info = json.loads((folder / C.INFO_FILE).read_text())
    info.pop(C.JSON_CHECKSUM_KEY)
    (folder / C.INFO_FILE).write_text(json.dumps({**info, "has_parser": False}))  # untrusted: never read
    assert C.read_checked_json(folder / C.INFO_FILE) == (None, "legacy")
    parser = FakeParser()
    run = C.CachedParse(parser, tmp_path, warn=pytest.fail)
    assert same_arrays(run(["a b"]), fake_arrays(["a b"])) and run.hits == 1
    assert parser.info()["has_parser"] is True
    run.flush()
    assert C.read_checked_json(folder / C.INFO_FILE) == (FAKE_INFO, "ok")
    (folder / C.INFO_FILE).write_text("{not json")
    assert C.read_checked_json(folder / C.INFO_FILE) == (None, "corrupted")
    assert C.read_checked_json(folder / "absent.json") == (None, "missing")
