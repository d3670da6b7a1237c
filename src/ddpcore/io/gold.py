"""Gold coreference readers: LitBank (brat TSV and CoNLL forms), CoNLL-U with ``Entity=``
brackets (GUM, OntoGUM, CorefUD) and the CoNLL-2012 ``*_conll`` layout (OntoNotes).

CorefUD's ``SplitAnte=e1<e3,e2<e3`` (entity e3, a plural *they*, is made of e1 and e2) is kept
(:attr:`GoldCorpus.split_antecedents`: the gold distance counts a mention of e3 back to its parts'
mentions); ``Bridge=`` links are counted (:attr:`GoldCorpus.bridges_ignored`) and not used (bridging
is no coreference); both said once per file in :attr:`GoldCorpus.notes`.

Every reader returns the same :class:`GoldCorpus`: one row per gold sentence (kept exactly
as the gold gives it, never re-split) and one row per gold mention. Inputs may be files,
folders (searched recursively) or tar archives (``.tar``, ``.tar.gz``, ``.tgz``,
``.tar.xz``, ``.tar.bz2``), which are read member by member with :mod:`tarfile` and never
extracted to disk.

Mention types are mapped to the LitBank inventory:

* ``PRON``: personal/possessive/reflexive pronoun (head XPOS ``PRP``/``PRP$``; UPOS ``PRON``
  with ``PronType=Prs``, whatever the XPOS: a treebank's own tag set, German ``PPER``, is no PTB tag). Other pronouns (demonstrative, relative,
  indefinite) are ``NOM``, as in LitBank, whose ``PRON`` mentions are personal pronouns.
* ``PROP``: head is a proper noun (XPOS ``NNP``/``NNPS`` or UPOS ``PROPN``).
* ``NOM``: everything else.

LitBank's brat TSV form carries the type; CoNLL-U uses the dependency head of the span (the
first token whose head lies outside the span; in a sentence without dependencies, HEAD ``_``, the word the
bracket's CorefUD ``head`` field names, else the last word before the first ADP, VERB, AUX, SCONJ, relative
pronoun, comma or colon, said once per file); CoNLL-2012 has no dependencies, so the head is
the last token before the first preposition, verb, wh-word, comma or colon of the span. LitBank's
CoNLL form has no POS column at all: there the type comes from word forms (a closed pronoun
list; a capitalised head that is not a sentence-initial function word is ``PROP``).

Every mention also records its head token (``head_token``, ``head_text``), found by the rule of
its format above; LitBank (both forms, no dependencies or POS) takes the word-form head: the last
token before the first comma, colon, semicolon, ``of``, ``who``, ``which``... of the span. The
DDP-scope gold (:mod:`ddpcore.gold.validate`) reads the person of a pronoun from it.
"""
from __future__ import annotations

import io
import os
import re
import tarfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, Literal

from ..errors import DDPDataError, DDPUsageError
from ..schema import DOCUMENT_ID, SENTENCE, TEXT

if TYPE_CHECKING:
    import polars as pl

GoldFormat = Literal["litbank", "conllu", "conll2012"]

# ---- gold column names (sentences and mentions tables)
GENRE = "genre"
TOKENS = "tokens"
N_TOKENS = "n_tokens"
SOURCE_FILE = "source_file"  # file (or "archive:member") the sentence was read from
TOKEN_START = "token_start"  # 0-based index of the mention's first token within its sentence
TOKEN_END = "token_end"  # exclusive end (token_start + length)
CHAIN_ID = "chain_id"  # coreference chain, unique within its document
MENTION_TYPE = "mention_type"  # PROP | NOM | PRON
ENTITY_TYPE = "entity_type"  # corpus entity type (LitBank PER/LOC..., GUM person/place...) or null
HEAD_TOKEN = "head_token"  # 0-based index (within the sentence) of the mention's head token
HEAD_TEXT = "head_text"  # word form of the head token, as in the gold
MENTION_TYPES = ("PROP", "NOM", "PRON")

#: genre given to LitBank documents (the corpus is all fiction and has no genre metadata)
LITBANK_GENRE = "fiction"
UNKNOWN_GENRE = "unknown"

_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.xz", ".txz", ".tar.bz2", ".tbz2")


@dataclass(frozen=True)
class GoldCorpus:
    """Gold sentences and mentions of one or more documents.

    Attributes
    ----------
    sentences : polars.DataFrame
        One row per gold sentence: ``document_id`` (str), ``sentence`` (int32, 0-based index
        within the document), ``genre`` (str), ``text`` (str; the raw sentence text where the
        format gives one, CoNLL-U ``# text``, else the tokens joined by single spaces),
        ``tokens`` (list[str]), ``n_tokens`` (int32), ``source_file`` (str).
    mentions : polars.DataFrame
        One row per gold mention: ``document_id``, ``sentence`` (sentence the mention starts
        in), ``token_start``/``token_end`` (int32, token offsets within that sentence, end
        exclusive), ``chain_id`` (str; a mention outside every chain gets its own chain),
        ``mention_type`` (``PROP``/``NOM``/``PRON``), ``entity_type`` (str or null), ``text``,
        ``head_token`` (int32, index of the head token within the sentence) and ``head_text``.
    formats : tuple[str, ...]
        The formats that were read, in order of first use.
    warnings : tuple[str, ...]
        Repairs made to unbalanced coreference brackets in lenient mode (``strict=False``), each
        naming file and line; the affected mention is dropped.
    notes : tuple[str, ...]
        How a file was read where it did not say (a CoNLL-U file whose entity brackets carry attributes
        but which has no ``# global.Entity`` line is read with CorefUD's default layout), each naming the
        file and line; also under ``strict`` (they are no repair).
    genre_notes : tuple[str, ...]
        One note per file whose documents (some or all) give no genre (CoNLL-U without
        ``# meta::genre``, a CoNLL-2012 name without its genre part): their sentences have genre
        ``unknown``; ``ddp validate`` says them with the ``notes``.
    split_antecedents : tuple[tuple[str, str, str], ...]
        CorefUD ``SplitAnte=`` links as ``(document_id, chain_id, part_chain_id)``: the entity
        ``chain_id`` (a plural *they*) is made of the entity ``part_chain_id`` and others; the gold
        distance counts a mention of the whole back to its parts' mentions.
    bridges_ignored : int
        CorefUD ``Bridge=`` links read and not used (bridging is no coreference); said in ``notes``.
    """

    sentences: pl.DataFrame
    mentions: pl.DataFrame
    formats: tuple[str, ...] = field(default=())
    warnings: tuple[str, ...] = field(default=())
    notes: tuple[str, ...] = field(default=())
    genre_notes: tuple[str, ...] = field(default=())
    split_antecedents: tuple[tuple[str, str, str], ...] = field(default=())
    bridges_ignored: int = 0

    @property
    def n_documents(self) -> int:
        return int(self.sentences.get_column(DOCUMENT_ID).n_unique())

    def to_dict(self) -> dict[str, Any]:
        """Counts per genre (documents, sentences, tokens, mentions by type, chains)."""
        import polars as pl

        by_genre = (
            self.sentences.group_by(GENRE)
            .agg(
                pl.col(DOCUMENT_ID).n_unique().alias("documents"),
                pl.len().alias("sentences"),
                pl.col(N_TOKENS).sum().alias("tokens"),
            )
            .sort(GENRE)
        )
        m = self.mentions.join(self.sentences.select(DOCUMENT_ID, SENTENCE, GENRE), on=[DOCUMENT_ID, SENTENCE])
        counts = m.group_by(GENRE).agg(
            pl.len().alias("mentions"),
            *[(pl.col(MENTION_TYPE) == t).sum().alias(f"mentions_{t}") for t in MENTION_TYPES],
            pl.struct(DOCUMENT_ID, CHAIN_ID).n_unique().alias("chains"),
        )
        table = by_genre.join(counts, on=GENRE, how="left").fill_null(0)
        return {
            "formats": list(self.formats),
            "documents": self.n_documents,
            "sentences": self.sentences.height,
            "mentions": self.mentions.height,
            "by_genre": table.to_dicts(),
        }


# --------------------------------------------------------------------------- input discovery


@dataclass(frozen=True)
class _Member:
    """One readable file: on disk or inside an archive.

    ``open`` returns a binary stream; readers consume members line by line (:class:`_Lines`), so
    a large member is never held in memory whole. Members of a tar archive are opened only while
    the archive is streamed (:func:`_read_tar_jobs`), in the archive's own order.
    """

    name: str  # path inside its container (used for extension and pairing)
    label: str  # how error messages name it
    open: Callable[[], IO[bytes]]
    archive: Path | None = None  # the tar archive holding the member, if any

    def read(self) -> bytes:
        with self.open() as fh:
            return fh.read()


#: longest line a gold file may have (a CoNLL token line, a brat sentence); bounds memory
MAX_LINE_BYTES = 16 * 1024 * 1024


class _Lines:
    """The decoded lines of a member, streamed; ``count`` = lines read so far (1-based line numbers)."""

    def __init__(self, member: _Member) -> None:
        self.member = member
        self.count = 0

    def __iter__(self) -> Iterator[str]:
        label = self.member.label
        pending = b""
        first = True
        with self.member.open() as fh:
            while True:
                try:
                    chunk = fh.read(_BLOCK)
                except (tarfile.TarError, OSError, EOFError, *_decompress_errors()) as exc:
                    raise DDPDataError(f"{label}: cannot read past line {self.count} ({exc}); is the file or "
                                       "archive truncated?", code="D401") from None
                if not chunk:
                    if pending:
                        yield from self._decode(pending, first, final=True)
                    return
                data = pending + chunk if pending else chunk
                cut = data.rfind(b"\n") + 1
                block, pending = data[:cut], data[cut:]
                if len(pending) > MAX_LINE_BYTES:
                    lineno = self.count + block.count(b"\n") + 1
                    raise DDPDataError(
                        f"{label}: line {lineno} is longer than "
                        f"{MAX_LINE_BYTES // (1024 * 1024)} MiB; this is not a gold coreference file "
                        "(check the file or pass --gold-format)",
                        code="D440",
                    )
                if block:
                    yield from self._decode(block, first, final=False)
                    first = False

    def _decode(self, block: bytes, first: bool, *, final: bool) -> Iterator[str]:
        bom = 3 if first and block.startswith(b"\xef\xbb\xbf") else 0
        try:
            text = block[bom:].decode("utf-8")
        except UnicodeDecodeError as exc:
            pos = bom + exc.start
            line = self.count + block.count(b"\n", 0, pos) + 1
            col = pos - (block.rfind(b"\n", 0, pos) + 1) + 1
            raise DDPDataError(
                f"{self.member.label}: line {line}, byte column {col}: invalid UTF-8 byte 0x{block[pos]:02x}; "
                "re-encode the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)",
                code="D104",
            ) from None
        lines = text.split("\n")
        if not final:
            lines.pop()  # the block ends with a newline: the last piece is empty
        for line in lines:
            self.count += 1
            yield line[:-1] if line.endswith("\r") else line


#: bytes read from a member at a time
_BLOCK = 1 << 20


def _is_tar_name(name: str) -> bool:
    low = name.lower()
    return any(low.endswith(s) for s in _TAR_SUFFIXES)


def _open_tar(path: Path) -> tarfile.TarFile:
    try:
        return tarfile.open(path, "r:*")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise DDPDataError(f"{path}: not a readable tar archive ({_one_line(exc)})", code="D401") from None


def _unreadable_archive(path: Path, exc: BaseException) -> DDPDataError:
    return DDPDataError(f"{path}: cannot read the archive ({_one_line(exc)}); is it truncated?", code="D401")


def _one_line(exc: BaseException) -> str:
    """An exception's message on one line (tarfile lists the methods it tried on separate lines)."""
    return " ".join(str(exc).split())


def _no_stream() -> IO[bytes]:  # pragma: no cover - tar members are opened by _read_tar_jobs only
    raise RuntimeError("a tar member is read only while its archive is streamed")


def _iter_members(path: Path) -> Iterator[_Member]:
    """Every file under ``path``, by name only: nothing is read here.

    A tar archive is listed from its headers (one pass, constant memory: member data is skipped,
    not kept); its members are read later in one streaming pass over the archive.
    """
    if path.is_dir():
        for p in sorted(path.rglob("*")):
            if p.is_file():
                yield from _iter_members(p)
        return
    if not path.exists():
        raise DDPDataError(f"{path}: gold file or folder not found; check the path", code="D401")
    if _is_tar_name(path.name):
        names: list[str] = []
        with _open_tar(path) as tar:
            try:
                for info in tar:
                    if info.isfile():
                        names.append(info.name)
            except (tarfile.TarError, OSError, EOFError, *_decompress_errors()) as exc:
                raise _unreadable_archive(path, exc) from None
        for name in sorted(set(names)):
            packed = _compressed_suffix(name)
            if packed is not None and _detect(name[: -len(packed)]) is not None:  # else skipped in silence
                raise DDPDataError(
                    f"{path}:{name}: a compressed gold file inside an archive is not read; put the "
                    "uncompressed file in the archive (the archive itself may be compressed, e.g. .tar.gz) "
                    "or pass the file or its folder", code="D451")
            yield _Member(name, f"{path}:{name}", _no_stream, archive=path)
        return
    compressed = _compressed_suffix(path.name)
    if compressed is not None:  # x.conllu.gz: read as x.conllu, decompressed while streamed
        yield _Member(path.name[: -len(compressed)], str(path), lambda p=path, c=compressed: _open_compressed(p, c))
        return
    yield _Member(path.name, str(path), lambda p=path: _open_file(p))


#: single compressed gold files (not tar archives), by suffix
_COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz")


def _compressed_suffix(name: str) -> str | None:
    low = name.lower()
    return next((s for s in _COMPRESSED_SUFFIXES if low.endswith(s)), None)


def _open_compressed(path: Path, suffix: str) -> IO[bytes]:
    import bz2
    import gzip
    import lzma

    opener = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}[suffix]
    return opener(_open_file(path), "rb")  # type: ignore[no-any-return]


def zlib_error() -> type[BaseException]:
    """``zlib.error``, imported when first needed."""
    import zlib

    return zlib.error


def _decompress_errors() -> tuple[type[BaseException], ...]:
    """What a corrupt compressed stream raises besides OSError/EOFError: zlib (gzip) and lzma (xz)
    errors are neither, so a corrupt ``.tar.xz`` would otherwise escape as an internal error."""
    import lzma
    import zlib

    return (zlib.error, lzma.LZMAError)


def _open_file(path: Path) -> IO[bytes]:
    try:
        return open(path, "rb")
    except OSError as exc:
        raise DDPDataError(f"{path}: cannot read file ({exc.strerror}); check permissions", code="D401") from None


def _is_conll2012_name(name: str) -> bool:
    low = name.lower()
    return low.endswith(".conll") or low.endswith("_conll")


@dataclass(frozen=True)
class GoldReader:
    """One gold format of :func:`read_gold`.

    ``claims(name)``: the member name (lower case) is a file of this format (detection; the
    first reader of :data:`GOLD_READERS` that claims a name wins); ``reads_when_forced(name)``:
    the format, when forced (``format=``), also reads that member; ``parse(member, txt, problem)``
    parses one member (``txt``: the sentence file of a LitBank brat ``.ann``, else ``None``).
    """

    format: str
    claims: Callable[[str], bool]
    reads_when_forced: Callable[[str], bool]
    parse: Callable[[_Member, _Member | None, _Problem], list[_Doc]]


def _parse_litbank(member: _Member, txt: _Member | None, problem: _Problem) -> list[_Doc]:
    """LitBank brat (an ``.ann`` with its ``.txt``) or LitBank CoNLL (``*_brat.conll``)."""
    if txt is not None:
        return _read_litbank_brat(member, txt)
    return _read_conll2012(member, problem, litbank=True)


#: the gold readers by format, in detection order (``*_brat.conll`` is LitBank before it is CoNLL-2012)
GOLD_READERS: dict[str, GoldReader] = {
    r.format: r for r in (
        GoldReader("litbank", lambda low: low.endswith((".ann", "_brat.conll")), _is_conll2012_name, _parse_litbank),
        GoldReader("conllu", lambda low: low.endswith(".conllu"), lambda low: False,
                   lambda member, txt, problem: _read_conllu(member, problem)),
        GoldReader("conll2012", _is_conll2012_name, _is_conll2012_name,
                   lambda member, txt, problem: _read_conll2012(member, problem, litbank=False)),
    )
}
FORMATS: tuple[str, ...] = tuple(GOLD_READERS)


def _detect(name: str) -> str | None:
    """Format of one member from its name (``None``: not a gold file)."""
    low = name.lower()
    return next((r.format for r in GOLD_READERS.values() if r.claims(low)), None)


# --------------------------------------------------------------------------- public entry point


def read_gold(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    format: str | None = None,
    strict: bool = False,
) -> GoldCorpus:
    """Read gold coreference from files, folders or tar archives.

    Parameters
    ----------
    paths : path or sequence of paths
        Files, folders (searched recursively) or tar archives. Files that are not gold files of
        the chosen format inside folders and archives (README, LICENSE...) are skipped.
    format : ``"litbank" | "conllu" | "conll2012"``, optional
        Forces the format. Default: detected per file from its name (``.conllu`` → conllu;
        ``.ann`` + ``.txt`` → LitBank brat TSV; ``*_brat.conll`` → LitBank CoNLL;
        other ``.conll`` / ``*_conll`` → CoNLL-2012).
    strict : bool
        Unbalanced coreference brackets (a close without an open, a mention left open at the
        end of its sentence or document, a mention spanning two sentences) raise
        :class:`DDPDataError` when true. When false (default; released corpora contain a few
        such slips, e.g. OntoGUM ``GENTLE_poetry_road``) the mention is dropped and the repair
        is listed in :attr:`GoldCorpus.warnings`.

    Raises
    ------
    DDPUsageError
        Unknown format, or a single file whose format cannot be told from its name.
    DDPDataError
        Missing files, no gold documents found, malformed lines (message names file and line),
        or the same document id read twice.
    """
    if format is not None and format not in FORMATS:
        raise DDPUsageError(f"unknown gold format '{format}'; choose one of {', '.join(FORMATS)}", code="D402")
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if not paths:
        raise DDPUsageError("no gold files given", code="D402")

    found = _Found(strict)
    for raw in paths:
        found.read_path(Path(raw), format)
    return found.corpus()


class _Found:
    """The rows :func:`read_gold` has read so far: sentences, mentions, where each document came from
    (D404 for a document read twice), the formats used and the repairs (``problem``: D409/D410 under
    ``strict``, else a warning)."""

    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.sent_rows: list[dict[str, Any]] = []
        self.mention_rows: list[dict[str, Any]] = []
        self.seen_docs: dict[str, str] = {}
        self.warnings: list[str] = []
        self.notes: list[str] = []
        self.genre_notes: list[str] = []
        self.formats: list[str] = []
        self.split_antecedents: list[tuple[str, str, str]] = []
        self.bridges_ignored = 0

    def problem(self, message: str, code: str) -> None:
        if code == NOTE:  # how a file was read where it did not say: no repair, never an error
            if message not in self.notes:
                self.notes.append(message)
            return
        if code == GENRE_NOTE:  # documents without a genre: reported under 'unknown'
            if message not in self.genre_notes:
                self.genre_notes.append(message)
            return
        if self.strict:
            raise DDPDataError(message, code=code)
        self.warnings.append(f"[{code}] {message}")

    def read_path(self, path: Path, format: str | None) -> None:
        """Every gold member of one file, folder or archive (D405 when it holds none)."""
        members = list(_iter_members(path))
        single_file = path.is_file() and not _is_tar_name(path.name)
        jobs = _plan(path, members, format, single_file)
        results = _run_jobs(jobs, self.problem)
        found = 0
        for (member, fmt, _txt), docs in zip(jobs, results):
            for doc_id, sents, ments in docs:
                if doc_id in self.seen_docs:
                    raise DDPDataError(
                        f"{member.label}: document '{doc_id}' was already read from {self.seen_docs[doc_id]}; "
                        "give each document once (e.g. not both LitBank forms)",
                        code="D404",
                    )
                self.seen_docs[doc_id] = member.label
                if sents:  # CoNLL-U SplitAnte / Bridge links ride on the first sentence row (_Conllu.finish_doc)
                    self.split_antecedents.extend((doc_id, whole, part) for whole, part in sents[0].pop("_split", ()))
                    self.bridges_ignored += sents[0].pop("_bridges", 0)
                self.sent_rows.extend(sents)
                self.mention_rows.extend(ments)
                found += 1
            if fmt not in self.formats:
                self.formats.append(fmt)
        if found == 0:
            what = f"{format} " if format else ""
            raise DDPDataError(
                f"{path}: no {what}gold documents found (looked for .conllu, .ann+.txt, .conll, *_conll); "
                "check the path or pass --gold-format",
                code="D405",
            )

    def corpus(self) -> GoldCorpus:
        import polars as pl

        sentences = pl.DataFrame(
            self.sent_rows,
            schema={
                DOCUMENT_ID: pl.String, SENTENCE: pl.Int32, GENRE: pl.String, TEXT: pl.String,
                TOKENS: pl.List(pl.String), N_TOKENS: pl.Int32, SOURCE_FILE: pl.String,
            },
        )
        mentions = pl.DataFrame(
            self.mention_rows,
            schema={
                DOCUMENT_ID: pl.String, SENTENCE: pl.Int32, TOKEN_START: pl.Int32, TOKEN_END: pl.Int32,
                CHAIN_ID: pl.String, MENTION_TYPE: pl.String, ENTITY_TYPE: pl.String, TEXT: pl.String,
                HEAD_TOKEN: pl.Int32, HEAD_TEXT: pl.String,
            },
        )
        return GoldCorpus(sentences=sentences, mentions=mentions, formats=tuple(self.formats),
                          warnings=tuple(self.warnings), notes=tuple(self.notes),
                          genre_notes=tuple(self.genre_notes), split_antecedents=tuple(self.split_antecedents),
                          bridges_ignored=self.bridges_ignored)


_Job = tuple["_Member", str, "_Member | None"]  # member, format, LitBank brat sentence file


def _plan(path: Path, members: list[_Member], format: str | None, single_file: bool) -> list[_Job]:
    """Choose the gold members and their formats by name alone, before any member is read."""
    by_name = {m.name: m for m in members}
    jobs: list[_Job] = []
    for member in members:
        fmt = _detect(member.name)
        if format is not None:
            if single_file:
                fmt = format
            elif fmt is None or (fmt != format and not GOLD_READERS[format].reads_when_forced(member.name.lower())):
                continue
            else:
                fmt = format
        if fmt is None:
            if single_file and member.name.lower().endswith(".zip"):
                raise DDPUsageError(
                    f"{member.label}: zip archives are not read; unzip it and pass the folder "
                    "(or pack it as .tar.gz / .tar.xz)",
                    code="D402",
                )
            if single_file:
                raise DDPUsageError(
                    f"{member.label}: cannot tell the gold format from the file name; "
                    "pass --gold-format litbank|conllu|conll2012",
                    code="D402",
                )
            continue
        low = member.name.lower()
        txt: _Member | None = None
        if fmt == "litbank" and not _is_conll2012_name(low):
            if not low.endswith(".ann"):
                if single_file and low.endswith(".txt"):
                    continue  # the .txt half of a brat pair is read with its .ann
                raise DDPDataError(f"{member.label}: LitBank brat input must be an .ann file with its .txt", code="D403")
            txt_name = member.name[:-4] + ".txt"
            if single_file:
                txt_path = path.with_suffix(".txt")
                txt = _Member(txt_path.name, str(txt_path), lambda p=txt_path: _open_file(p)) if txt_path.exists() else None
            else:
                txt = by_name.get(txt_name)
            if txt is None:
                raise DDPDataError(f"{member.label}: the matching sentence file {txt_name} is missing", code="D403")
        jobs.append((member, fmt, txt))
    return jobs


def _parse(member: _Member, fmt: str, txt: _Member | None, problem: _Problem) -> list[_Doc]:
    return GOLD_READERS[fmt].parse(member, txt, problem)


def _run_jobs(jobs: list[_Job], problem: _Problem) -> list[list[_Doc]]:
    """Parse every job; results in job order. Files are opened directly; each tar archive is
    streamed once, in its own order (seeking back in a compressed stream restarts decompression)."""
    results: list[list[_Doc] | None] = [None] * len(jobs)
    by_archive: dict[Path, list[int]] = {}
    for i, (member, fmt, txt) in enumerate(jobs):
        if member.archive is None:
            results[i] = _parse(member, fmt, txt, problem)
        else:
            by_archive.setdefault(member.archive, []).append(i)
    for archive, idx in by_archive.items():
        for i, docs in _read_tar_jobs(archive, [jobs[i] for i in idx], problem):
            results[idx[i]] = docs
    return [r if r is not None else [] for r in results]


def _read_tar_jobs(archive: Path, jobs: list[_Job], problem: _Problem) -> Iterator[tuple[int, list[_Doc]]]:
    """Stream ``archive`` once and parse the members of ``jobs`` as they pass; skip every other
    member unread. The two halves of a LitBank brat pair are small: the first one seen is kept in
    memory until the second arrives."""
    main = {job[0].name: i for i, job in enumerate(jobs)}
    partner = {job[2].name: i for i, job in enumerate(jobs) if job[2] is not None}
    held: dict[str, bytes] = {}
    done: set[int] = set()
    with _open_tar(archive) as tar:
        try:
            for info in tar:
                name = info.name
                if not info.isfile() or (name not in main and name not in partner):
                    continue
                fh = tar.extractfile(info)
                if fh is None:  # pragma: no cover - isfile() members always have data
                    continue
                label = f"{archive}:{name}"
                i = main.get(name)
                if i is not None and i not in done and jobs[i][2] is None:
                    member = _Member(name, label, lambda fh=fh: fh, archive=archive)
                    done.add(i)
                    yield i, _parse(member, jobs[i][1], None, problem)
                    continue
                held[name] = fh.read()  # one half of a brat pair
                for j in ([main[name]] if name in main else []) + ([partner[name]] if name in partner else []):
                    ann, fmt, txt = jobs[j]
                    if j in done or txt is None or ann.name not in held or txt.name not in held:
                        continue
                    a_bytes, t_bytes = held.pop(ann.name), held.pop(txt.name)
                    done.add(j)
                    yield j, _parse(
                        _Member(ann.name, ann.label, lambda b=a_bytes: io.BytesIO(b), archive=archive),
                        fmt,
                        _Member(txt.name, txt.label, lambda b=t_bytes: io.BytesIO(b), archive=archive),
                        problem,
                    )
        except (tarfile.TarError, OSError, EOFError, *_decompress_errors()) as exc:
            raise _unreadable_archive(archive, exc) from None
    missing = [jobs[i][0].label for i in range(len(jobs)) if i not in done]
    if missing:  # listed in the headers but gone on the second pass: the archive changed underneath us
        raise DDPDataError(f"{missing[0]}: could not be read from the archive; is it being rewritten?", code="D401")


# --------------------------------------------------------------------------- shared helpers

_Doc = tuple[str, list[dict[str, Any]], list[dict[str, Any]]]
#: ``problem(message, code)``: a repair (D409/D410: an error under ``strict``), or with ``code=NOTE`` a note on
#: how a file was read (:attr:`GoldCorpus.notes`)
_Problem = Callable[[str, str], None]
NOTE = "note"
GENRE_NOTE = "genre-note"  # ``problem`` code of a genre fallback (:attr:`GoldCorpus.genre_notes`)
#: CorefUD's layout of an entity bracket when a file does not give one (``# global.Entity``); the one layout
#: of every CorefUD 1.x release and what udapi writes
COREFUD_DEFAULT_ENTITY = "eid-etype-head-other"

_PERSONAL_PRONOUNS = frozenset(
    """i me my mine myself you your yours yourself yourselves he him his himself she her hers herself
    it its itself we us our ours ourselves they them their theirs themselves themself thee thou thy
    thine thyself ye 'em yeh yer""".split()
)
# capitalised only because they start the sentence: never a proper-name head
_FUNCTION_WORDS = frozenset(
    """the a an this that these those some any no every each all both either neither one another
    other such what which who whom whose there here if when while as but and or nor so yet for""".split()
)


def _text_lines(member: _Member) -> list[str]:
    """All lines of a small member (brat files); large CoNLL files go through :class:`_Lines`."""
    return list(_Lines(member))


def _sentence_row(doc_id: str, index: int, genre: str, tokens: list[str], label: str, text: str | None = None) -> dict[str, Any]:
    return {
        DOCUMENT_ID: doc_id, SENTENCE: index, GENRE: genre, TEXT: text if text is not None else " ".join(tokens),
        TOKENS: tokens, N_TOKENS: len(tokens), SOURCE_FILE: label,
    }


def _mention_row(
    doc_id: str, sent: int, start: int, end: int, chain: str, mtype: str, etype: str | None, tokens: list[str], head: int
) -> dict[str, Any]:
    """One mention; ``head`` is the head token's index within the sentence (``start <= head < end``)."""
    return {
        DOCUMENT_ID: doc_id, SENTENCE: sent, TOKEN_START: start, TOKEN_END: end, CHAIN_ID: chain,
        MENTION_TYPE: mtype, ENTITY_TYPE: etype, TEXT: " ".join(tokens[start:end]),
        HEAD_TOKEN: head, HEAD_TEXT: tokens[head],
    }


def _type_from_tags(xpos: str, upos: str = "_", feats: str = "_") -> str:
    # UPOS PRON + PronType=Prs whatever the XPOS: a treebank's own tag set (German PPER, Czech PP...) is no PTB tag
    if xpos in ("PRP", "PRP$") or (upos == "PRON" and "PronType=Prs" in feats):
        return "PRON"
    if xpos in ("NNP", "NNPS") or upos == "PROPN":
        return "PROP"
    return "NOM"


def _head_from_words(words: list[str]) -> int:
    """Head of a span without POS or dependencies (LitBank): the last token before the first comma,
    semicolon, colon or post-modifier word (of, who, which, that, whom, whose, in, at, with, from, on)."""
    for i, w in enumerate(words):
        if i > 0 and (w in (",", ";", ":") or w.lower() in ("of", "who", "which", "that", "whom", "whose", "in", "at", "with", "from", "on")):
            return i - 1
    return len(words) - 1


def _type_from_words(words: list[str], sentence_initial: bool) -> str:
    """Mention type when no POS tags exist (LitBank CoNLL): closed pronoun list + capitalisation."""
    if len(words) == 1 and words[0].lower() in _PERSONAL_PRONOUNS:
        return "PRON"
    head_i = _head_from_words(words)
    head = words[head_i]
    if head[:1].isupper() and head.lower() not in _PERSONAL_PRONOUNS:
        if head_i == 0 and sentence_initial and head.lower() in _FUNCTION_WORDS:
            return "NOM"
        return "PROP"
    return "NOM"


# --------------------------------------------------------------------------- LitBank brat TSV


def _read_litbank_brat(ann: _Member, txt: _Member) -> list[_Doc]:
    doc_id = Path(ann.name).name[:-4]
    lines = _text_lines(txt)
    while lines and not lines[-1].strip():  # blank lines (or lines of spaces) at the end hold no sentence
        lines.pop()
    for lineno, line in enumerate(lines, 1):
        if not line.strip():  # a sentence without tokens: the .ann's sentence numbers count it
            raise DDPDataError(
                f"{txt.label}: line {lineno} is blank; every line of a LitBank .txt is one sentence of tokens "
                "(blank lines only at the end): remove the line and lower the .ann's sentence numbers after it",
                code="D412",
            )
    sentences = [line.split(" ") for line in lines]
    sent_rows = [_sentence_row(doc_id, i, LITBANK_GENRE, toks, txt.label) for i, toks in enumerate(sentences)]
    spans: dict[str, tuple[int, int, int, str, str, int]] = {}
    chains: dict[str, str] = {}
    for lineno, line in enumerate(_text_lines(ann), 1):
        if not line.strip():
            continue
        parts = line.split("\t")
        kind = parts[0]
        if kind == "MENTION":
            if len(parts) != 9:
                raise DDPDataError(
                    f"{ann.label}: line {lineno}: a MENTION record needs 9 tab-separated fields "
                    f"(MENTION id start_sent start_tok end_sent end_tok text entity_type mention_type), got {len(parts)}",
                    code="D406",
                )
            tid, etype, mtype = parts[1], parts[7], parts[8]
            try:
                s0, t0, s1, t1 = (int(x) for x in parts[2:6])
            except ValueError:
                raise DDPDataError(f"{ann.label}: line {lineno}: sentence/token indices (fields 3-6) must be integers", code="D406") from None
            if mtype not in MENTION_TYPES:
                raise DDPDataError(f"{ann.label}: line {lineno}, field 9: mention type '{mtype}' is not PROP, NOM or PRON", code="D406")
            if not (0 <= s0 < len(sentences)) or s1 != s0 or not (0 <= t0 <= t1 < len(sentences[s0])):
                raise DDPDataError(
                    f"{ann.label}: line {lineno}: span sentence {s0} tokens {t0}-{t1} (to sentence {s1}) is outside "
                    f"{txt.label} ({len(sentences)} sentences) or crosses a sentence boundary",
                    code="D407",
                )
            if " ".join(sentences[s0][t0 : t1 + 1]) != parts[6]:
                raise DDPDataError(
                    f"{ann.label}: line {lineno}, field 7: mention text {parts[6]!r} does not match tokens {t0}-{t1} "
                    f"of sentence {s0} in {txt.label}; are the .ann and .txt from the same document?",
                    code="D407",
                )
            spans[tid] = (s0, t0, t1 + 1, mtype, etype, lineno)
        elif kind == "COREF":
            if len(parts) != 3:
                raise DDPDataError(f"{ann.label}: line {lineno}: a COREF record needs 3 tab-separated fields (COREF id chain)", code="D406")
            chains[parts[1]] = parts[2]
        elif kind in ("APPOS", "COP"):
            continue  # not identity links
        else:
            raise DDPDataError(f"{ann.label}: line {lineno}: unknown record type '{kind}' (expected MENTION, COREF, APPOS, COP)", code="D406")
    for tid in chains:
        if tid not in spans:
            raise DDPDataError(f"{ann.label}: COREF refers to mention '{tid}', which has no MENTION record", code="D406")
    mention_rows = []
    for tid, (s, a, b, mtype, etype, _line) in sorted(spans.items(), key=lambda kv: kv[1][:3]):
        chain = chains.get(tid, f"_singleton_{tid}")
        mention_rows.append(_mention_row(doc_id, s, a, b, chain, mtype, etype, sentences[s],
                                         a + _head_from_words(sentences[s][a:b])))
    return [(doc_id, sent_rows, mention_rows)]


# --------------------------------------------------------------------------- CoNLL-2012 / LitBank CoNLL

_BEGIN_RE = re.compile(r"^#begin document \((.*)\);?\s*(?:part\s+(\S+))?")
_CONLL_BRACKETS = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}"}
_HEAD_STOP_POS = ("IN", "TO", "WDT", "WP", "WP$", "WRB", ",", ":", "-LRB-", "VB", "MD")


def _conll_head(pos: list[str]) -> int:
    for i in range(1, len(pos)):
        if pos[i].startswith(_HEAD_STOP_POS):
            return i - 1
    return len(pos) - 1


class _Conll2012:
    """A CoNLL-2012 (or LitBank CoNLL) reader of one member: documents (``#begin``/``#end document``),
    sentences (blank lines), token lines and their coreference brackets, one line at a time."""

    def __init__(self, member: _Member, problem: _Problem, litbank: bool) -> None:
        self.member, self.problem, self.litbank = member, problem, litbank
        self.docs: list[_Doc] = []
        self.state: dict[str, Any] = {}  # the open document: id, genre, rows, words/pos/brackets of its sentence

    def start(self, name: str, part: str | None, lineno: int) -> None:
        try:
            part_no = int(part) if part is not None else 0
        except ValueError:
            raise DDPDataError(f"{self.member.label}: line {lineno}: document part '{part}' is not an integer", code="D408") from None
        doc_id = name if (self.litbank or part_no == 0) else f"{name}#{part_no}"
        if self.litbank:
            genre = LITBANK_GENRE
        else:
            genre = name.split("/")[0] if "/" in name else UNKNOWN_GENRE
        self.state.update(doc_id=doc_id, genre=genre, sents=[], ments=[], words=[], pos=[], open={}, begin=lineno,
                          no_genre=not self.litbank and "/" not in name)

    def flush_sentence(self, lineno: int) -> None:
        state, label = self.state, self.member.label
        words, pos = state["words"], state["pos"]
        if not words:
            return
        for eid in state["open"]:
            self.problem(
                f"{label}: line {lineno}: sentence ends with chain '{eid}' still open (missing '{eid})'); "
                "mention dropped",
                "D409",
            )
        state["open"] = {}
        idx = len(state["sents"])
        state["sents"].append(_sentence_row(state["doc_id"], idx, state["genre"], words, label))
        if state.get("no_genre") and idx == 0:  # read by _note_unknown_genre, then dropped
            state["sents"][0]["_no_genre"] = True
        no_pos = all(p in ("_", "-", "") for p in pos)
        for chain, a, b in state.pop("pending", []):
            if no_pos:
                head = a + _head_from_words(words[a:b])
                mtype = _type_from_words(words[a:b], a == 0)
            else:
                head = a + _conll_head(pos[a:b])
                mtype = _type_from_tags(pos[head])
            state["ments"].append(_mention_row(state["doc_id"], idx, a, b, chain, mtype, None, words, head))
        state["words"], state["pos"] = [], []

    def finish(self, lineno: int) -> None:
        self.flush_sentence(lineno)
        if self.state["sents"]:
            self.docs.append((self.state["doc_id"], self.state["sents"], self.state["ments"]))
        self.state.clear()

    def line(self, line: str, lineno: int, default_name: str) -> None:
        """One line: a document boundary, a comment, a sentence break or a token line."""
        if line.startswith("#begin document"):
            if self.state:
                self.finish(lineno)
            m = _BEGIN_RE.match(line)
            if m is None:
                raise DDPDataError(f"{self.member.label}: line {lineno}: expected '#begin document (NAME); part N'", code="D408")
            self.start(m.group(1), m.group(2), lineno)
        elif line.startswith("#end document"):
            if self.state:
                self.finish(lineno)
        elif line.startswith("#"):
            pass
        elif not line.strip():
            if self.state:
                self.flush_sentence(lineno)
        else:
            if not self.state:
                self.start(default_name, None, lineno)
            self.token(line, lineno)

    def token(self, line: str, lineno: int) -> None:
        """A token line: its word, POS and coreference column (at least 5 columns, numbered in order)."""
        label, state = self.member.label, self.state
        cols = line.split("\t") if "\t" in line else line.split()
        if len(cols) < 5:
            raise DDPDataError(
                f"{label}: line {lineno}: expected at least 5 columns (document part word_number word ... coref), "
                f"got {len(cols)}",
                code="D408",
            )
        try:
            word_no = int(cols[2])
        except ValueError:
            raise DDPDataError(f"{label}: line {lineno}, column 3: word number '{cols[2]}' is not an integer", code="D408") from None
        if word_no != len(state["words"]):
            raise DDPDataError(
                f"{label}: line {lineno}, column 3: word number {word_no}, expected {len(state['words'])}; "
                "is a blank line (sentence break) missing?",
                code="D408",
            )
        word = cols[3]
        word = _CONLL_BRACKETS.get(word, word)
        if word.startswith("/") and len(word) == 2:
            word = word[1]
        state["words"].append(word)
        state["pos"].append(cols[4] if len(cols) >= 12 else "_")
        coref = cols[-1].strip() if len(cols) >= 12 else ""
        if len(cols) < 12 and _COREF_LIKE.fullmatch(cols[-1].strip()):
            # a simplified layout whose last column is a coreference column: not read (it would give a gold
            # without mentions, and every distance 0, in silence)
            raise DDPDataError(
                f"{label}: line {lineno}: the last column '{cols[-1].strip()}' looks like a coreference column, but "
                f"a CoNLL-2012 token line has at least 12 columns (got {len(cols)}), and only then is its last one "
                "read as coreference; write the file in the full CoNLL-2012 layout (document, part, word number, "
                "word, POS, parse, lemma, frame, sense, speaker, entities, ..., coreference)", code="D408")
        if coref not in ("", "-", "_"):
            self.brackets(coref, word_no, lineno)

    def brackets(self, coref: str, tok: int, lineno: int) -> None:
        """The coreference column of token ``tok``: ``(ID``, ``ID)``, ``(ID)`` pieces joined by ``|``."""
        state = self.state
        for piece in coref.split("|"):
            m = re.fullmatch(r"(\()?([^()]+?)(\))?", piece)
            if m is None or not (m.group(1) or m.group(3)):
                raise DDPDataError(
                    f"{self.member.label}: line {lineno}, coref column: cannot parse '{piece}' (expected '(ID', 'ID)' or '(ID)')",
                    code="D409",
                )
            eid = m.group(2)
            if m.group(1) and m.group(3):
                state.setdefault("pending", []).append((eid, tok, tok + 1))
            elif m.group(1):
                state["open"].setdefault(eid, []).append(tok)
            else:
                stack = state["open"].get(eid)
                if not stack:
                    self.problem(f"{self.member.label}: line {lineno}, coref column: '{piece}' closes chain {eid}, which is not open; ignored", "D409")
                    continue
                a = stack.pop()
                if not stack:
                    del state["open"][eid]
                state.setdefault("pending", []).append((eid, a, tok + 1))


#: a CoNLL-2012 coreference cell with at least one bracket: "(12", "12)", "(12)", joined by "|"
_COREF_LIKE = re.compile(r"(?:\(\w+\)?|\w+\))(?:\|(?:\(\w+\)?|\w+\)))*")


def _read_conll2012(member: _Member, problem: _Problem, *, litbank: bool) -> list[_Doc]:
    reader = _Conll2012(member, problem, litbank)
    lines = _Lines(member)  # streamed: a large file is never held whole
    default_name = Path(member.name).name
    for lineno, line in enumerate(lines, 1):
        reader.line(line, lineno, default_name)
    if reader.state:
        reader.finish(lines.count + 1)
    if not reader.docs and lines.count:
        raise DDPDataError(f"{member.label}: no token lines found; is this a CoNLL-2012 file?", code="D408")
    if not litbank:
        _note_unknown_genre(member, problem, reader.docs,
                            "a document name without a genre part (OntoNotes names start with it: 'nw/...')")
    return reader.docs


def _note_unknown_genre(member: _Member, problem: _Problem, docs: list[_Doc], why: str) -> None:
    """A note (stderr and ``gold.notes``) naming the documents of ``member`` whose genre fell back to
    ``unknown`` because the file does not give one (``why``)."""
    lacking = [doc_id for doc_id, sents, _ in docs if sents and sents[0].get("_no_genre")]
    for _, sents, _ in docs:
        for row in sents:
            row.pop("_no_genre", None)
    if lacking:
        shown = ", ".join(repr(d) for d in lacking[:3]) + (", ..." if len(lacking) > 3 else "")
        problem(f"{member.label}: {len(lacking)} of {len(docs)} document(s) ({shown}) have {why}; their "
                f"sentences are reported under genre '{UNKNOWN_GENRE}'", GENRE_NOTE)


# --------------------------------------------------------------------------- CoNLL-U with Entity=

_ENTITY_RE = re.compile(r"(?:^|\|)Entity=([^|]*)")  # the MISC key Entity itself, not e.g. "MyEntity="
_DISCONTINUOUS_RE = re.compile(r"\[(\d+)/(\d+)\]$")
_LINK_RE = re.compile(r"(?:^|\|)(SplitAnte|Bridge)=([^|]*)")  # CorefUD entity links: PART<WHOLE, ANTE<ANAPHOR:rel


def _head_from_tags(forms: list[str], upos: list[str], xpos: list[str], feats: list[str]) -> int:
    """Head of a CoNLL-U span whose sentence has no dependencies (HEAD ``_``): the last word before the first
    ADP, VERB, AUX, SCONJ, relative pronoun, comma, colon, semicolon or bracket (XPOS as CoNLL-2012 when UPOS is
    ``_``); the first word would make "his mother" a pronoun and "the doctor" a determiner."""
    for i in range(1, len(forms)):
        if upos[i] in ("_", ""):
            stop = xpos[i].startswith(_HEAD_STOP_POS)
        else:
            stop = upos[i] in ("ADP", "VERB", "AUX", "SCONJ") or "PronType=Rel" in feats[i]
        if stop or forms[i] in (",", ":", ";", "("):
            return i - 1
    return len(forms) - 1


def _parse_entity(value: str, label: str, lineno: int) -> list[tuple[str, str, str]]:
    """Split a MISC ``Entity=`` value into ``(op, eid, attrs)`` with op ``open|close|single``."""
    out: list[tuple[str, str, str]] = []
    i, n = 0, len(value)
    while i < n:
        if value[i] == "(":
            j = i + 1
            while j < n and value[j] not in "()":
                j += 1
            body = value[i + 1 : j]
            eid, _, attrs = body.partition("-")
            if not eid:
                raise DDPDataError(f"{label}: line {lineno}, MISC: empty entity bracket in 'Entity={value}'", code="D410")
            if j < n and value[j] == ")":
                out.append(("single", eid, attrs))
                i = j + 1
            else:
                out.append(("open", eid, attrs))
                i = j
        else:
            j = value.find(")", i)
            if j < 0:
                raise DDPDataError(
                    f"{label}: line {lineno}, MISC: cannot parse 'Entity={value}' at '{value[i:]}' "
                    "(expected '(ID-...', 'ID)' or '(ID-...)')",
                    code="D410",
                )
            if j == i:  # ")" with no entity id
                raise DDPDataError(f"{label}: line {lineno}, MISC: empty entity bracket in 'Entity={value}'", code="D410")
            out.append(("close", value[i:j], ""))
            i = j + 1
    return out


class _Conllu:
    """A CoNLL-U reader of one member with CorefUD ``Entity=`` brackets in MISC: documents (``newdoc``),
    sentences, token lines and their entity brackets, one line at a time."""

    def __init__(self, member: _Member, problem: _Problem) -> None:
        self.member, self.problem = member, problem
        self.file_stem = Path(member.name).name.rsplit(".", 1)[0]
        self.docs: list[_Doc] = []
        self.doc: dict[str, Any] = {}   # the open document: id, genre, rows, entities still open
        self.sent: dict[str, Any] = {}  # the open sentence: token columns, finished mentions, text
        self.etype_index = -1           # position of "etype" in global.Entity
        self.head_index = -1            # position of "head" (the mention's head word, 1-based) in global.Entity
        self.layout: str | None = None  # the global.Entity layout; None until the file gives one
        self.text_mismatch: str | None = None  # the first '# text' that does not spell its forms (check_text)
        self.n_text_mismatch = 0
        self.headless: list[int] = []     # lines of sentences without HEAD whose multi-word mentions' heads come from tags
        self.attr_closes: list[int] = []  # lines of closing brackets with attributes ('e1-person)', CorefUD 0.x)
        self.stray_texts: list[int] = []  # lines of '# text' comments no token line follows
        self.n_split = self.n_bridges = 0  # SplitAnte / Bridge links of the file

    def new_doc(self, doc_id: str | None = None) -> None:
        """Open a document: ``doc_id`` from its ``# newdoc`` line, or ``None`` for sentences before any (the
        file's stem names that document, and :meth:`finish_doc` says so)."""
        self.doc.clear()
        self.doc.update(doc_id=doc_id or self.file_stem, genre=None, sents=[], ments=[], open={}, raw=[],
                        implicit=doc_id is None, split=[], bridges=0)

    def flush_sentence(self, lineno: int) -> None:
        doc, sent, label = self.doc, self.sent, self.member.label
        if not sent.get("forms"):
            if "text_line" in sent:  # a '# text' whose sentence has no token line: nothing of it is read
                self.stray_texts.append(sent["text_line"][0])
            sent.clear()
            return
        if not doc:
            self.new_doc()
        forms, heads = sent["forms"], sent["heads"]
        idx = len(doc["sents"])
        text = sent.get("text")
        if text is not None and not self.check_text(text, sent):
            text = None  # rebuilt from the forms the gold annotates (said once per file: text_mismatch)
        if text is None:  # rebuilt from the surface tokens: a multiword token's own form, not its words
            text = "".join(f + ("" if noskip else " ") for f, noskip in sent["surface"]).rstrip()
        doc["sents"].append(_sentence_row(doc["doc_id"], idx, "", forms, label, text))
        for eid, a, b, etype, node, hpos in sent["done"]:
            if a == b:  # a zero mention: only empty nodes, no word of the sentence
                form, upos, xpos, feats = node
                row = _mention_row(doc["doc_id"], idx, a, b, eid, _type_from_tags(xpos, upos, feats), etype, [form], 0)
                row[HEAD_TOKEN] = None
                doc["ments"].append(row)
                continue
            span_heads = [k for k in range(a, b) if not (a < heads[k] <= b)]  # heads are 1-based, 0 = root
            h = span_heads[0] if span_heads else a
            if sent.get("headless") and b - a > 1:  # HEAD '_': every word would be a head, the first one taken
                # the bracket's own head field (CorefUD: the head word's position in the mention), else the tags
                h = a + (hpos - 1 if hpos is not None and 0 < hpos <= b - a else
                         _head_from_tags(forms[a:b], sent["upos"][a:b], sent["xpos"][a:b], sent["feats"][a:b]))
                if not self.headless or self.headless[-1] != sent["headless"]:
                    self.headless.append(sent["headless"])
            mtype = _type_from_tags(sent["xpos"][h], sent["upos"][h], sent["feats"][h])
            doc["ments"].append(_mention_row(doc["doc_id"], idx, a, b, eid, mtype, etype, forms, h))
        sent.clear()

    def check_text(self, text: str, sent: dict[str, Any]) -> bool:
        """Whether ``# text`` spells the sentence's surface forms (white space aside). DDP reads the text and
        the gold's mentions are on the forms, so a text that says something else (or nothing) would be
        measured in place of the annotated sentence: such a sentence's text is rebuilt from its forms, and the
        first one of the file is named (line and column where they part) with the count, once, at the end of
        the file (:meth:`note_text_mismatch`; D413, an error under ``--strict``)."""
        forms = _WHITESPACE_RE.sub("", "".join(f for f, _ in sent["surface"]))
        squeezed = _WHITESPACE_RE.sub("", text)
        if squeezed == forms:
            return True
        self.n_text_mismatch += 1
        if self.text_mismatch is None:
            self.text_mismatch = self.describe_text_mismatch(text, sent, squeezed, forms)
        return False

    def note_file(self) -> None:
        """Once per file: how it was read where it did not say (notes: stderr and ``gold.notes``)."""
        label = self.member.label
        if self.attr_closes:
            self.problem(f"{label}: line {self.attr_closes[0]}: {len(self.attr_closes)} closing bracket(s) carry "
                         "attributes ('e1-person)', CorefUD 0.x); each closes the entity named by its first field", NOTE)
        if self.headless:
            self.problem(f"{label}: line {self.headless[0]}: {len(self.headless)} sentence(s) with multi-word mentions "
                         "have no dependencies (HEAD '_'); a mention's head there is the word its bracket's head field "
                         "names, else the last word before the first ADP, VERB, AUX, SCONJ, relative pronoun, comma or "
                         "colon (its type and the gold scope read it)",
                         NOTE)
        if self.stray_texts:
            self.problem(f"{label}: line {self.stray_texts[0]}: {len(self.stray_texts)} '# text' line(s) with no token "
                         "line after them (before a '# newdoc' or the end of the file): not read; give each sentence "
                         "its token lines", NOTE)
        if self.n_split:
            self.problem(f"{label}: {self.n_split} split-antecedent link(s) (SplitAnte): a mention of the whole entity "
                         "(John ... Mary ... they) counts back to its parts' mentions", NOTE)
        if self.n_bridges:
            self.problem(f"{label}: {self.n_bridges} bridging link(s) (Bridge) ignored: bridging (the house ... the "
                         "door) is no coreference and gives no gold distance", NOTE)

    def note_text_mismatch(self) -> None:
        """One D413 repair for the file's sentences whose ``# text`` does not spell their forms."""
        if self.text_mismatch is not None:
            self.problem(f"{self.text_mismatch}; {self.n_text_mismatch} such sentence(s) in this file, whose text "
                         "is rebuilt from the word forms (correct or delete those '# text' lines)", "D413")

    def describe_text_mismatch(self, text: str, sent: dict[str, Any], squeezed: str, forms: str) -> str:
        """Where the ``# text`` of ``sent`` first parts from its forms: file, line and column, both spelled."""
        lineno, line = sent["text_line"]
        first = next((i for i, (a, b) in enumerate(zip(squeezed, forms)) if a != b), min(len(squeezed), len(forms)))
        # the column (1-based) of the first differing character of the text, in the file's line
        at = len(line.rstrip()) - len(text)  # the value ends the line (surrounding blanks stripped)
        seen = -1
        for j, ch in enumerate(text):
            if not ch.isspace():
                seen += 1
                if seen == first:
                    at += j
                    break
        else:
            at += len(text)
        shown = " ".join(f for f, _ in sent["surface"])
        return (f"{self.member.label}: line {lineno}, column {at + 1}: the sentence's '# text' {_clip(text)!r} does "
                f"not spell its word forms {_clip(shown)!r} (DDP reads the text; the gold annotates the forms)")

    def finish_doc(self, lineno: int) -> None:
        doc = self.doc
        for eid, starts in (doc.get("open") or {}).items():
            self.problem(
                f"{self.member.label}: document '{doc['doc_id']}' ends with entity {eid} still open "
                f"(opened in sentence {starts[-1][0] + 1}); mention dropped",
                "D410",
            )
        if doc and doc["sents"] and doc["implicit"]:  # a fallback: documents read as one would share chains
            self.problem(
                f"{self.member.label}: lines 1-{lineno - 1} come before any '# newdoc id = ...' line; their "
                f"{len(doc['sents'])} sentence(s) are read as one document '{doc['doc_id']}' (if they hold several "
                "documents, start each with '# newdoc id = ...': an entity id used in two of them would join their "
                "chains)", NOTE)
        if doc and doc["sents"] and (doc["split"] or doc["bridges"]):  # read by _Found.read_path, then dropped
            doc["sents"][0]["_split"] = doc["split"]
            doc["sents"][0]["_bridges"] = doc["bridges"]
        if doc and doc["sents"]:
            genre = doc["genre"] or UNKNOWN_GENRE
            for row in doc["sents"]:
                row[GENRE] = genre
            if not doc["genre"]:  # read by _note_unknown_genre, then dropped
                doc["sents"][0]["_no_genre"] = True
            self.docs.append((doc["doc_id"], doc["sents"], doc["ments"]))
        doc.clear()

    def line(self, line: str, lineno: int) -> None:
        """One line: a sentence break, a comment (document, entity layout, genre, text) or a token line."""
        line = line.removeprefix("\ufeff")  # the byte-order mark of a file joined on (`cat a.conllu b.conllu`)
        if not line.strip():
            self.flush_sentence(lineno)
        elif line.startswith("#"):
            self.comment(line, lineno)
        else:
            self.token(line, lineno)

    def comment(self, line: str, lineno: int) -> None:
        key, _, val = line[1:].partition("=")
        key, val = key.strip(), val.strip()
        if key in ("newdoc id", "newdoc"):
            self.flush_sentence(lineno)
            self.finish_doc(lineno)
            self.new_doc(val or f"{self.file_stem}-{len(self.docs)}")
        elif key == "global.Entity":
            fields = val.split("-")
            if fields[0] not in ("eid", "GRP"):  # the entity id is read as a bracket's first field
                raise DDPDataError(
                    f"{self.member.label}: line {lineno}: '# global.Entity = {val}' does not start with the entity "
                    "id (eid, or GRP); ddpcore reads the CorefUD 1.x layouts (eid-etype-head-other...), and would "
                    "take the first field for the id: convert the file (e.g. with udapi's corefud blocks) or fix "
                    "the line", code="D410")
            self.layout = val
            self.etype_index = fields.index("etype") if "etype" in fields else -1
            self.head_index = fields.index("head") if "head" in fields else -1
        elif key in ("meta::genre", "genre"):
            if not self.doc:
                self.new_doc()
            self.doc["genre"] = val
        elif key == "text":
            self.sent["text"] = val
            self.sent["text_line"] = (lineno, line)

    def token(self, line: str, lineno: int) -> None:
        """A token line (10 tab-separated columns) and its entities. A multiword token range (``3-4``)
        gives the surface form of the sentence text; an empty node (``5.1``, CorefUD zero mentions and
        ellipsis) is no word of the sentence, but its entity brackets count at its position."""
        label, sent = self.member.label, self.sent
        cols = line.split("\t")
        if len(cols) != 10:
            raise DDPDataError(f"{label}: line {lineno}: a CoNLL-U token line needs 10 tab-separated columns, got {len(cols)}", code="D411")
        tid = cols[0]
        if not tid.isdecimal():  # not isdigit: "²" is a digit int() refuses
            if re.fullmatch(r"\d+-\d+|\d+\.\d+", tid):
                self.range_or_empty(cols, lineno)
                return
            raise DDPDataError(f"{label}: line {lineno}, column ID: '{tid}' is not a token id", code="D411")
        self.open_sentence()
        k = len(sent["forms"])
        if int(tid) != k + 1:
            hint = "; is the blank line ending the sentence before it missing?" if int(tid) == 1 else ""
            raise DDPDataError(f"{label}: line {lineno}, column ID: token id {tid}, expected {k + 1}{hint}", code="D411")
        head = cols[6]
        if not head.isdecimal() and "headless" not in sent:
            sent["headless"] = lineno
        sent["forms"].append(cols[1])
        sent["upos"].append(cols[3])
        sent["xpos"].append(cols[4])
        sent["feats"].append(cols[5])
        sent["heads"].append(int(head) if head.isdecimal() else 0)
        misc = cols[9]
        if int(tid) > sent["mwt_end"]:
            sent["surface"].append((cols[1], "SpaceAfter=No" in misc))
        m = _ENTITY_RE.search(misc)
        if m is not None:
            self.entities(m.group(1), k, k + 1, lineno, None)
        if "SplitAnte=" in misc or "Bridge=" in misc:
            self.links(misc, lineno)

    def range_or_empty(self, cols: list[str], lineno: int) -> None:
        """A multiword token range ``3-4`` (its form is the surface text of its words) or an empty node
        ``5.1`` (no word; its entity brackets count at its position)."""
        sent, tid = self.sent, cols[0]
        self.open_sentence()
        k = len(sent["forms"])
        first = int(re.split(r"[-.]", tid)[0])
        if first != (k + 1 if "-" in tid else k):
            want = f"{k + 1}-N" if "-" in tid else f"{k}.N"
            raise DDPDataError(f"{self.member.label}: line {lineno}, column ID: token id {tid}, expected {want}", code="D411")
        if "-" in tid:
            if _ENTITY_RE.search(cols[9]) is not None:  # never read: its mentions would be lost in silence
                raise DDPDataError(
                    f"{self.member.label}: line {lineno}, column MISC: the multiword token {tid} '{cols[1]}' carries "
                    f"'Entity=' brackets; CorefUD puts them on the token's words (ids {tid.replace('-', ' to ')}): "
                    "move them there", code="D450")
            sent["surface"].append((cols[1], "SpaceAfter=No" in cols[9]))
            sent["mwt_end"] = int(tid.split("-")[1])
            return
        m = _ENTITY_RE.search(cols[9])
        if m is not None:
            self.entities(m.group(1), k, k, lineno, (cols[1], cols[3], cols[4], cols[5]))
        if "SplitAnte=" in cols[9] or "Bridge=" in cols[9]:
            self.links(cols[9], lineno)

    def links(self, misc: str, lineno: int) -> None:
        """CorefUD entity links in MISC: ``SplitAnte=e1<e3,e2<e3`` (entity e3, a plural *they*, is made of e1 and
        e2) is kept for the gold distance; ``Bridge=e1<e3:part`` (bridging, no coreference) is counted, not used."""
        for key, value in _LINK_RE.findall(misc):
            items = [x for x in value.split(",") if x]
            if key == "Bridge":
                self.doc["bridges"] += len(items)
                self.n_bridges += len(items)
                continue
            for item in items:
                part, sep, whole = item.partition("<")
                if not (sep and part and whole) or part == whole:
                    self.problem(f"{self.member.label}: line {lineno}, MISC: cannot read '{item}' of 'SplitAnte={value}' "
                                 "(expected PART<WHOLE, e.g. e1<e3); link ignored", "D410")
                    continue
                self.doc["split"].append((whole, part))
                self.n_split += 1

    def open_sentence(self) -> None:
        if not self.doc:
            self.new_doc()
        if "forms" not in self.sent:  # not "no forms yet": a leading multiword token or 0.1 node opened it
            self.sent.update(forms=[], heads=[], xpos=[], upos=[], feats=[], surface=[], mwt_end=0, done=[])

    def entities(self, value: str, start: int, end: int, lineno: int, node: tuple[str, str, str, str] | None) -> None:
        """The ``Entity=`` brackets of one line: a mention opens, closes (within its sentence) or is one token.

        A word ``k`` opens a mention at ``start = k`` and ends one at ``end = k + 1``; an empty node
        after ``k`` words (``node``: its form and tags) has ``start = end = k``, so a mention holding
        only empty nodes is a zero mention (``token_start == token_end``). Each part of a discontinuous
        mention (CorefUD ``e5[1/2]``) is a mention of its entity; the part marker pairs its brackets."""
        doc, sent, label = self.doc, self.sent, self.member.label
        sidx = len(doc["sents"])
        for op, key, attrs in _parse_entity(value, label, lineno):
            if attrs and self.layout is None:
                self.default_layout(value, lineno)
            part = _DISCONTINUOUS_RE.search(key)
            eid = key[: part.start()] if part else key
            fields = attrs.split("-") if attrs else []
            # an empty etype (CorefUD "(e1--1)": the corpus has no entity types) is no type at all
            etype = (fields[self.etype_index - 1] or None) if 0 < self.etype_index <= len(fields) else None
            hfield = fields[self.head_index - 1] if 0 < self.head_index <= len(fields) else ""
            hpos = int(hfield) if hfield.isdecimal() else None
            if op == "single":
                if part is None or self.part_in_sentence(part, eid, sidx, lineno):
                    self.mention(eid, start, end, etype, node, hpos)
            elif op == "open":
                doc["open"].setdefault(key, []).append((sidx, start, etype, hpos))
            else:
                stack = doc["open"].get(key)
                if not stack and "-" in key and doc["open"].get(key.partition("-")[0]):
                    # 'e1-person)': a closing bracket with the attributes of its opening one (CorefUD 0.x, udapi's
                    # older writers); the id is its first field, as in an opening bracket (said once: note_file)
                    key = key.partition("-")[0]
                    part = _DISCONTINUOUS_RE.search(key)
                    eid = key[: part.start()] if part else key
                    stack = doc["open"][key]
                    self.attr_closes.append(lineno)
                if not stack:
                    self.problem(f"{label}: line {lineno}, MISC: 'Entity=...{key})' closes entity {key}, which is not open; ignored", "D410")
                    continue
                s0, a, et, hp = stack.pop()
                if not stack:
                    del doc["open"][key]
                if s0 != sidx:
                    self.problem(
                        f"{label}: line {lineno}, MISC: a mention of entity {eid} spans sentences "
                        f"{s0 + 1}-{sidx + 1} of document '{doc['doc_id']}'; dropped (gold mentions must lie within one sentence)",
                        "D410",
                    )
                    continue
                if part is None or self.part_in_sentence(part, eid, sidx, lineno):
                    self.mention(eid, a, end, et, node, hp)

    def part_in_sentence(self, part: re.Match[str], eid: str, sidx: int, lineno: int) -> bool:
        """Whether a finished part of a discontinuous mention (``e5[2/2]``) lies in the sentence of its part 1.
        A part in another sentence would be read as a mention of its own, a gold link of one mention to
        itself across sentences: dropped, like a mention spanning sentences (D410)."""
        first = self.doc.setdefault("parts", {})  # entity -> sentence of its latest part 1
        if part.group(1) == "1" or eid not in first:
            first[eid] = sidx
            return True
        if first[eid] == sidx:
            return True
        self.problem(
            f"{self.member.label}: line {lineno}, MISC: part {part.group(1)}/{part.group(2)} of a discontinuous mention "
            f"of entity {eid} is in sentence {sidx + 1} of document '{self.doc['doc_id']}', its part 1 in sentence "
            f"{first[eid] + 1}; part dropped (gold mentions must lie within one sentence)", "D410")
        return False

    def default_layout(self, value: str, lineno: int) -> None:
        """A bracket with attributes and no ``# global.Entity`` line before it: read with CorefUD's default
        layout (:data:`COREFUD_DEFAULT_ENTITY`: the entity type is the 2nd field), and say so (a note)."""
        self.layout = COREFUD_DEFAULT_ENTITY
        self.etype_index = COREFUD_DEFAULT_ENTITY.split("-").index("etype")
        self.head_index = COREFUD_DEFAULT_ENTITY.split("-").index("head")
        self.problem(
            f"{self.member.label}: line {lineno}: 'Entity={value}' has attributes but no '# global.Entity' line "
            f"comes before it; read with CorefUD's default layout {COREFUD_DEFAULT_ENTITY} (the entity type is the "
            "field after the id); put '# global.Entity = ...' after the first '# newdoc' line if the layout differs",
            NOTE)

    def mention(self, eid: str, a: int, b: int, etype: str | None, node: tuple[str, str, str, str] | None,
                hpos: int | None = None) -> None:
        """A finished mention (or one part of a discontinuous mention: each part is a mention of the chain)."""
        self.sent["done"].append((eid, a, b, etype, node, hpos))


_WHITESPACE_RE = re.compile(r"\s+")


def _clip(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _read_conllu(member: _Member, problem: _Problem) -> list[_Doc]:
    reader = _Conllu(member, problem)
    lines = _Lines(member)  # streamed: a large file is never held whole
    for lineno, line in enumerate(lines, 1):
        reader.line(line, lineno)
    reader.flush_sentence(lines.count + 1)
    reader.finish_doc(lines.count + 1)
    reader.note_text_mismatch()
    reader.note_file()
    _note_unknown_genre(member, problem, reader.docs, "no '# meta::genre' line")
    return reader.docs


__all__ = [
    "GoldCorpus", "GoldReader", "GOLD_READERS", "read_gold", "FORMATS", "GENRE", "TOKENS", "N_TOKENS", "SOURCE_FILE",
    "TOKEN_START", "TOKEN_END", "CHAIN_ID", "MENTION_TYPE", "ENTITY_TYPE", "MENTION_TYPES", "HEAD_TOKEN", "HEAD_TEXT",
]
