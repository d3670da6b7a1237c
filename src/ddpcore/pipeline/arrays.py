"""The arrays that flow between the pipeline stages of one batch (flat numpy arrays whose names carry
their axes: ``x__tok`` per token, ``x__seg`` per segment...), and the check every stage applies to its inputs."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..io.segments import DOC_ORDINAL
from ..schema import SegmentColumns

if TYPE_CHECKING:
    import polars as pl

#: batch-local document ordinal column (0..n_docs-1, non-decreasing over the batch); an input column of
#: this name is refused when the input is read (D265, ddpcore.io.segments.RESERVED_COLUMNS)
DOC = DOC_ORDINAL


@dataclass(frozen=True)
class Batch:
    """Whole documents: ``frame`` has ``ROW``, ``DOC`` and the input columns, rows sorted
    by document then segment; ``cols`` names the input columns."""

    frame: pl.DataFrame
    cols: SegmentColumns

    @property
    def n_segments(self) -> int:
        return self.frame.height

    @property
    def seg_doc(self) -> np.ndarray:
        """(n_seg,) int64 batch-local document ordinal of each segment (non-decreasing)."""
        return self.frame[DOC].to_numpy().astype(np.int64)


@dataclass(frozen=True)
class Units:
    """Parse units: the stripped non-empty lines of every segment (a line break ends a sentence).

    ``seg__unit`` (n_units,) int64 segment ordinal in the batch; ``offset__unit`` (n_units,)
    int64 character offset of the unit in its segment text; ``texts`` the unit strings. With ``view``
    (:class:`ddpcore.io.segments.TextView`) the units are lines of the segments' views and the offsets index
    the views; token offsets are mapped back to the texts as given (``number_sentences``).
    """

    seg__unit: np.ndarray
    offset__unit: np.ndarray
    texts: list[str]
    view: Any = None


@dataclass(frozen=True)
class TokenIndex:
    """Where every token sits: segment, characters, sentence (all (n_tok,) int64 unless noted).

    ``seg__tok``; ``char__tok``/``char_end__tok`` offsets in the segment text; ``head__tok``
    absolute head index; ``unit_start__tok`` (uint8) 1 at the first token of a unit;
    ``sent_flag__tok`` (uint8) 1 at a sentence start; ``sent__tok`` document-level sentence;
    ``gsent__tok`` batch-level sentence (or segment ordinal for the segment unit);
    ``n_sent__seg`` (n_seg,); ``seg__sent``/``sent_in_doc__sent`` (n_sentences,);
    ``first_sentence__seg`` (n_seg,) document-level index of a segment's first sentence.
    """

    seg__tok: np.ndarray
    char__tok: np.ndarray
    char_end__tok: np.ndarray
    head__tok: np.ndarray
    unit_start__tok: np.ndarray
    sent_flag__tok: np.ndarray
    sent__tok: np.ndarray
    gsent__tok: np.ndarray
    n_sent__seg: np.ndarray
    seg__sent: np.ndarray
    sent_in_doc__sent: np.ndarray
    first_sentence__seg: np.ndarray
    n_sentences: int


@dataclass(frozen=True)
class Entities:
    """``entity__item`` (n_items,) int64 batch-level entity id (-1: not an entity mention);
    ``n_entities``; ``doc_offsets`` (n_docs+1,) item offsets of each document."""

    entity__item: np.ndarray
    n_entities: int
    doc_offsets: np.ndarray


@dataclass(frozen=True)
class Distances:
    """Kernel output: ``distance__item`` (sentences, -1 first mention / not an anchor),
    ``antecedent__item`` / ``reference__item`` (item index or -1), ``ddp__seg`` (n_seg,),
    ``ddp__sent`` (n_sentences,)."""

    distance__item: np.ndarray
    antecedent__item: np.ndarray
    reference__item: np.ndarray
    ddp__seg: np.ndarray
    ddp__sent: np.ndarray


def check_array(owner: str, name: str, value: Any, dtype: type[np.generic]) -> int:
    """Check one 1-d, C-contiguous array of ``dtype``; return its length."""
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{owner}.{name} must be a numpy array of {np.dtype(dtype)}, got {type(value).__name__}")
    if value.dtype != dtype:
        raise TypeError(f"{owner}.{name} must have dtype {np.dtype(dtype)}, got {value.dtype}")
    if value.ndim != 1:
        raise ValueError(f"{owner}.{name} must be 1-d, got shape {value.shape}")
    if not value.flags.c_contiguous:
        raise ValueError(f"{owner}.{name} must be C-contiguous (np.ascontiguousarray)")
    return int(value.shape[0])
