"""Arrow schemas and column names, defined once.

Units are part of the names where they could be confused: ``*_sentences`` counts
sentences, ``ddp`` is always in sentences.
"""
from __future__ import annotations

from dataclasses import dataclass

# ---- blank text
#: Unicode white space (what ``str.strip()`` and polars ``str.strip_chars()`` remove)
WHITE_SPACE = ("\t\n\v\f\r \x1c\x1d\x1e\x1f\x85\xa0\u1680" + "".join(chr(c) for c in range(0x2000, 0x200B))
               + "\u2028\u2029\u202f\u205f\u3000")
#: characters that show nothing and are not white space: zero-width space, non-joiner and joiner, word joiner,
#: byte-order mark (zero-width no-break space), soft hyphen, direction marks and embeddings, invisible
#: operators, the combining grapheme joiner and the Hangul fillers
INVISIBLE = ("\u00ad\u034f\u115f\u1160\u180e\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
             "\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\u3164\ufeff\uffa0")
#: a text, line or paragraph of only these characters is blank: empty as a segment, no parse unit
BLANK_CHARS = WHITE_SPACE + INVISIBLE


def blank_note(text: str | None) -> str:
    """``; only white space and invisible characters such as U+200B`` for a blank text (:data:`BLANK_CHARS`)
    holding an :data:`INVISIBLE` character, for the empty-text messages (D111): it looks empty in no
    editor; ``""`` for any other text."""
    c = next((c for c in text or "" if c in INVISIBLE), None)
    return "" if c is None else f"; only white space and invisible characters such as U+{ord(c):04X}"


#: signature key of the segments with a line that starts or ends with invisible characters (:data:`INVISIBLE`,
#: after any white space): the parse reads each line without them, as it reads it without its edge white space
#: (``ddpcore.pipeline.stages.split_units``), so "\u200bJohn Smith" is the name "John Smith" and "\u200bHe" a
#: pronoun. ``{"segments": n, "document": id, "segment": id, "char": "U+200B"}`` (the first such segment; a
#: file run adds its ``row``, 1-based)
INVISIBLE_EDGES = "invisible_line_edges"


def invisible_edges_note(name: object, entry: dict, text_col: str) -> str:
    """The stderr line (warning) of an :data:`INVISIBLE_EDGES` entry of input ``name``."""
    row = f", row {entry['row']}" if entry.get("row") is not None else ""
    n = entry["segments"]
    return (f"{name}{row}, column '{text_col}': {n} segment(s) have a line that starts or ends with invisible "
            f"characters such as {entry['char']} (the first: document {entry['document']!r}, segment "
            f"{entry['segment']!r}); each line is parsed without them, as it is without its edge white space, so a "
            "name or pronoun there counts as it would without them (the segment table keeps the text as given; "
            f"recorded as '{INVISIBLE_EDGES}' in the output's signature)")


#: signature key of the segments whose text the parse reads in another form than given
#: (``ddpcore.io.segments.text_view``): an invisible character inside a line, a text not in NFC (``e`` + U+0301),
#: a full-width ASCII character, a carriage return not before a line feed (read as a line break), a Latin ligature.
#: ``{"segments": n, "forms": {"invisible": n, "decomposed": n, "full_width": n, "carriage_return": n},
#: "document": id, "segment": id, "char": "U+0301"}`` (forms present only; the first such segment and its
#: first such character; a file run adds its ``row``, 1-based)
NORMALISED_TEXT = "normalised_text"
_FORM_WORDS = {"invisible": "invisible characters inside a line", "decomposed": "decomposed accents (not NFC)",
               "full_width": "full-width letters", "carriage_return": "a carriage return without a line feed",
               "ligature": "typographic ligatures (U+FB00-FB06)"}


def normalised_text_note(name: object, entry: dict, text_col: str) -> str:
    """The stderr line (warning) of a :data:`NORMALISED_TEXT` entry of input ``name``."""
    row = f", row {entry['row']}" if entry.get("row") is not None else ""
    forms = ", ".join(f"{_FORM_WORDS.get(f, f)} ({n})" for f, n in entry.get("forms", {}).items())
    return (f"{name}{row}, column '{text_col}': {entry['segments']} segment(s) hold {forms} (the first: document "
            f"{entry['document']!r}, segment {entry['segment']!r}, {entry['char']}); they are parsed as a reader sees "
            "them (invisible characters left out, accents composed, full-width letters as ASCII, ligatures as "
            "letters, a lone carriage return as a line break), so a name there counts as it does in its plain form (the segment table keeps "
            f"the text as given and anchor offsets index it; recorded as '{NORMALISED_TEXT}' in the output's "
            "signature)")


# ---- input table (defaults for the --document/--segment/--text/--domain flags)
DOCUMENT_ID = "document_id"
SEGMENT_ID = "segment_id"
SOURCE = "source"
DOMAIN = "domain"

# ---- segment table (one row per input segment)
N_SENTENCES = "n_sentences"
N_TOKENS = "n_tokens"
N_ANCHORS = "n_anchors"
DDP = "ddp"  # max anchor distance over the segment's sentences, in sentences
#: max distance over only the certified anchors of the segment (0 when none), in sentences
DDP_CERTIFIED = "ddp_certified"
FIRST_SENTENCE = "first_sentence"  # document-level index of the segment's first sentence
SEGMENT_COLUMNS = (DOCUMENT_ID, SEGMENT_ID, DOMAIN, N_SENTENCES, N_TOKENS, N_ANCHORS, DDP, DDP_CERTIFIED,
                   FIRST_SENTENCE)
#: the columns of the segment table computed by a run (an input column of one of these names is replaced)
COMPUTED_SEGMENT_COLUMNS = (N_SENTENCES, N_TOKENS, N_ANCHORS, DDP, DDP_CERTIFIED, FIRST_SENTENCE)
#: signature key of the input columns a run replaced with its own values (:func:`replaced_columns`)
REPLACED_COLUMNS = "replaced_columns"


def replaced_columns(columns: object, cols: SegmentColumns) -> list[str]:
    """The input ``columns`` (names) that the segment table replaces with a run's values: the computed columns
    (:data:`COMPUTED_SEGMENT_COLUMNS`) an input has when it is itself a profile, other than the columns ``cols``
    names as its own. A run says them on stderr and records them in its signature (:data:`REPLACED_COLUMNS`)."""
    own = {cols.document, cols.segment, cols.text, cols.domain}
    have = set(columns)  # type: ignore[call-overload]
    return [c for c in COMPUTED_SEGMENT_COLUMNS if c in have and c not in own]


def replaced_note(name: object, replaced: list[str]) -> str:
    """The stderr line of :func:`replaced_columns`."""
    return (f"{name} already has the column(s) {', '.join(replaced)}; the segment table holds this run's values "
            f"in their place (the input's are not carried; recorded as '{REPLACED_COLUMNS}' in the output's signature)")


#: the DDP columns a profile may carry (``--ddp-col`` chooses one)
DDP_COLUMNS = (DDP, DDP_CERTIFIED)

# ---- anchors table (one row per anchor: entity mention or pronoun)
ANCHOR_INDEX = "anchor_index"  # 0-based order of the anchor within its document
SENTENCE = "sentence"  # document-level sentence index (0..K-1)
KIND = "kind"  # "entity" | "pronoun"
LABEL = "label"  # entity label (PERSON, ORG, ...) or pronoun group (MASC_SG, FEM_SG, NEUT_SG, PL)
TEXT = "text"
CHAR_START = "char_start"  # offsets into the segment's source text (code points)
CHAR_END = "char_end"
ENTITY_ID = "entity_id"  # document-level entity id (entities only, -1 for pronouns)
ANTECEDENT_KIND = "antecedent_kind"  # "entity" | "noun" | "none" | "first_mention"
ANTECEDENT_TEXT = "antecedent_text"
ANTECEDENT_SENTENCE = "antecedent_sentence"  # sentence of the linked antecedent mention (-1 if none)
REFERENCE_SENTENCE = "reference_sentence"  # sentence the distance is measured to (-1 if none)
DISTANCE_SENTENCES = "distance_sentences"  # -1: first mention (no distance)
ROLE = "role"  # dependency role of the anchor's head token (ddpcore.pipeline.roles.ROLES)
ANTECEDENT_ROLE = "antecedent_role"  # the same of its antecedent ("none" without one)
N_CANDIDATES = "n_candidates"  # pronouns: gender/number-compatible antecedent candidates in reach; null for names
CERTIFIED = "certified"  # the full distance is certified (bool); distance_certified says what counts
CONFIDENCE = "confidence"  # calibrated P(distance does not exceed gold's); NaN when the anchor measures nothing
DISTANCE_CERTIFIED = "distance_certified"  # the certified part of the distance (partial credit), 0 when none
ANCHOR_COLUMNS = (
    DOCUMENT_ID, SEGMENT_ID, ANCHOR_INDEX, SENTENCE, KIND, LABEL, TEXT, CHAR_START, CHAR_END,
    ENTITY_ID, ANTECEDENT_KIND, ANTECEDENT_TEXT, ANTECEDENT_SENTENCE, REFERENCE_SENTENCE, DISTANCE_SENTENCES,
    ROLE, ANTECEDENT_ROLE, N_CANDIDATES, CERTIFIED, CONFIDENCE, DISTANCE_CERTIFIED,
)

# ---- sentence-level (internal / --sentences output)
SENTENCE_DDP = "sentence_ddp"
SENTENCE_DDP_CERTIFIED = "sentence_ddp_certified"

# ---- document table (ddp profile --documents: one row per document, ddpcore.pipeline.documents)
#: DDP thresholds (sentences) of the document table's ``share_ddp_ge_*`` columns
DOCUMENT_SHARE_THRESHOLDS = (1, 5, 15)
#: the columns of the document table computed by a run (after the document and domain columns)
DOCUMENT_STATS = ("n_segments", "n_sentences", "max_ddp", "mean_ddp",
                  *(f"share_ddp_ge_{t}" for t in DOCUMENT_SHARE_THRESHOLDS))
#: the document table's certified columns (last, when the run has ``ddp_certified``): max and mean of it
DOCUMENT_CERTIFIED_STATS = ("max_ddp_certified", "mean_ddp_certified")

# ---- statistics long tables (defaults for the stats flags)
SYSTEM = "system"
ANNOTATOR = "annotator"
CONDITION = "condition"
SCORE = "score"

# ---- Parquet file metadata
#: key of the JSON signature in every Parquet output's schema metadata (text outputs: a sidecar)
SIGNATURE_KEY = "ddpcore.signature"
#: Parquet schema metadata key naming the table of a profile output (segments, anchors, sentences, documents)
TABLE_KEY = "ddpcore.table"


@dataclass(frozen=True)
class SegmentColumns:
    """Names of the input columns (CLI: --document-col, --segment-col, --text-col, --domain-col)."""

    document: str = "document_id"
    segment: str = "segment_id"
    text: str = "source"
    domain: str = "domain"

    def flags(self) -> dict[str, str]:
        return {
            self.document: "--document-col",
            self.segment: "--segment-col",
            self.text: "--text-col",
            self.domain: "--domain-col",
        }

    def output_clash(self) -> tuple[str, str, str] | None:
        """``(flag, name, table)`` of the first input column these names choose that has the name of a column a
        run writes beside it in one of its tables (the segment table's ``ddp``, the anchors table's ``sentence``,
        the document table's ``n_segments``...): the output would hold that name twice (polars refuses it) or
        lose the input column to the run's own (a text column named ``first_sentence``). None when there is no
        such column. Each role is checked against the tables that carry its column: every role the segment table,
        the document and segment ids the anchors and sentences tables, the document and domain the document
        table."""
        where = {
            "segment table": (COMPUTED_SEGMENT_COLUMNS, (self.document, self.segment, self.text, self.domain)),
            "anchors table": (ANCHOR_COLUMNS[2:], (self.document, self.segment)),
            "sentences table": ((SENTENCE, SENTENCE_DDP, SENTENCE_DDP_CERTIFIED), (self.document, self.segment)),
            "document table": ((*DOCUMENT_STATS, *DOCUMENT_CERTIFIED_STATS), (self.document, self.domain)),
        }
        flags = {self.document: "--document-col", self.segment: "--segment-col", self.text: "--text-col",
                 self.domain: "--domain-col"}
        for table, (written, names) in where.items():
            for name in names:
                if name in written:
                    return flags[name], name, table
        return None
