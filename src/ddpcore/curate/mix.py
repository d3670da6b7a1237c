"""MIX documents: the counterfactual condition of the ESA blindness study (seed 001, Appendix A.2).

For a source document with segments ``s_1 .. s_n`` and a pool of ``m`` systems, the MIX
document whose *nominal* system is ``N`` keeps the ``n`` source segments in their order and
fills every position with one pooled system's translation of that segment. One MIX document
is written per (document, pooled system).

Constraints (per MIX document; ``K = m - 1`` non-nominal systems):

* **feasible** (``n >= m``): every pooled system contributes at least one segment and the
  nominal system exactly one (at most one, and at least one by the coverage rule). So the
  ``n - 1`` other positions hold the ``K`` non-nominal systems, each at least once.
  This is the reading of A.2: "every system in the pool contributes at least one segment ...
  and each segment prefers a system other than the one used at the same position under DOC".
* **infeasible** (``n < m``): coverage cannot hold. The ``n`` positions get ``n`` *distinct*
  non-nominal systems (the nominal system is never used), and the MIX document is reported
  in :attr:`MixResult.infeasible` -- the constraint is never relaxed silently.

Algorithm (vectorised over all MIX documents; no Python loop over documents or segments).
Documents are in sorted id order, pooled systems in code-point order, segments in their
document order. One ``numpy.random.Generator(PCG64(seed))`` draws, in this order:

1. ``keys``: ``(J, K)`` uniforms, ``J = n_documents * m``; ``perm = argsort(keys, axis=1)``
   is a random permutation of the ``K`` non-nominal systems per MIX document (the coverage
   block).
2. default: ``u`` (one uniform per non-nominal position) and ``fill`` (integers in
   ``[0, K)``, one per position). Within each MIX document the positions are ranked by
   ``u``; the positions of rank ``r < min(K, L)`` take ``perm[r]`` (coverage at random
   positions), the others ``fill`` (uniform over the non-nominal systems).
   ``forbid_adjacent_repeat``: ``t`` (block offset in ``[0, L - b]``) and ``steps`` (integers
   in ``[1, K - 1]``). Positions ``t .. t + b - 1`` hold ``perm[0 .. b - 1]`` (``b = min(K,
   L)``); positions after the block continue a walk ``k_{i} = (k_{i-1} + step_i) mod K`` from
   its last system, positions before it walk backwards from its first system. A step is never
   0 mod K, so two adjacent non-nominal positions never share a system; the ``K`` coverage
   systems form one contiguous run at a random offset (the price of an exact, rejection-free
   construction). Needs ``K >= 2`` (a pool of at least 3 systems).
3. ``q``: the nominal system's position, uniform in ``[0, n)``; the ``L = n - 1``
   non-nominal positions are laid around it (feasible MIX documents only; the draw is made
   for every MIX document so that the stream does not depend on which ones are feasible).

Non-nominal index ``k`` maps to pooled system ``k + (k >= nominal)``. Inserting the
nominal system cannot create an adjacent repeat. The same input, pool and seed give the same
assignment, and the CLI writes byte-identical files.
"""
from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..errors import DDPDataError, DDPUsageError
from ..stats import budget as _budget
from ..signature import json_safe, signature

if TYPE_CHECKING:
    import polars as pl

#: the generator description recorded in signatures
RNG_DESCRIPTION = "numpy Generator(PCG64(seed)); draws: perm keys (J,K), then u+fill or t+steps, then q"
SOURCE_SYSTEM = "source_system"
FEASIBLE = "feasible"
POSITION = "position"

#: CLI flag of each column role (for messages)
FLAGS = {"document": "--document-col", "segment": "--segment-col", "system": "--system-col", "text": "--text-col"}


@dataclasses.dataclass(frozen=True)
class Assignment:
    """Raw assignment arrays of :func:`assign_sources`.

    ``source`` has shape ``(sum_j n_j,)``: the pooled-system index at every position of every
    MIX document, MIX documents in order (document, nominal system), positions in document
    order. ``n_segments`` ``(n_documents,)``, ``nominal`` and ``feasible`` ``(J,)`` with
    ``J = n_documents * n_pool``.
    """

    source: npt.NDArray[np.int64]
    nominal: npt.NDArray[np.int64]
    feasible: npt.NDArray[np.bool_]
    n_segments: npt.NDArray[np.int64]
    n_pool: int


def assign_sources(
    n_segments: npt.ArrayLike,
    n_pool: int,
    seed: int,
    *,
    forbid_adjacent_repeat: bool = False,
) -> Assignment:
    """Draw the source system of every position of every MIX document (module docstring).

    Parameters
    ----------
    n_segments : array_like of int, shape (n_documents,)
        Segments per document (each >= 1).
    n_pool : int
        Pooled systems ``m >= 2`` (``>= 3`` with ``forbid_adjacent_repeat``).
    seed : int
        Seed of ``numpy.random.PCG64`` (an integer in [0, 2**128)).
    """
    n_doc = np.asarray(n_segments, dtype=np.int64).reshape(-1)
    m = int(n_pool)
    if m < 2:
        raise DDPDataError(f"the pool has {m} system(s); a MIX document needs at least 2 pooled systems", code="D500")
    if forbid_adjacent_repeat and m < 3:
        raise DDPUsageError(
            f"--forbid-adjacent-repeat needs a pool of at least 3 systems (got {m}): with 2 the other system "
            "would have to fill adjacent positions", code="D505")
    if n_doc.size and n_doc.min() < 1:
        raise DDPDataError("every document needs at least one segment", code="D502")
    seed = _budget.check_seed(seed)
    rng = np.random.Generator(np.random.PCG64(seed))
    K = m - 1
    J = n_doc.size * m
    n_j = np.repeat(n_doc, m)
    nominal = np.tile(np.arange(m, dtype=np.int64), n_doc.size)
    feasible = n_j >= m
    L = np.where(feasible, n_j - 1, n_j)
    b = np.minimum(L, K)  # coverage block length
    perm = np.argsort(rng.random((J, K)), axis=1, kind="stable").astype(np.int64)
    total = int(L.sum())
    grp = np.repeat(np.arange(J, dtype=np.int64), L)
    starts = np.cumsum(L) - L
    i = np.arange(total, dtype=np.int64) - starts[grp]  # index within the MIX document's non-nominal positions
    if not forbid_adjacent_repeat:
        u = rng.random(total)
        fill = rng.integers(0, K, size=total, dtype=np.int64)
        order = np.lexsort((u, grp))
        rank = np.empty(total, dtype=np.int64)
        rank[order] = i  # i is 0..L-1 within each group, and order keeps the groups in place
        cover = rank < b[grp]
        k = np.where(cover, perm[grp, np.minimum(rank, K - 1)], fill)
    else:
        t = rng.integers(0, L - b + 1, dtype=np.int64) if J else np.zeros(0, dtype=np.int64)
        steps = rng.integers(1, K, size=total, dtype=np.int64)  # in [1, K-1]: never 0 mod K
        cs = np.cumsum(steps)
        tg, bg, sg = t[grp], b[grp], starts[grp]
        in_block = (i >= tg) & (i < tg + bg)
        after = i >= tg + bg
        before = i < tg
        k = np.empty(total, dtype=np.int64)
        k[in_block] = perm[grp[in_block], (i - tg)[in_block]]
        if after.any():
            a_end = (sg + tg + bg - 1)[after]  # last block position (global index)
            walk = cs[after] - cs[a_end]
            k[after] = (perm[grp[after], (bg - 1)[after]] + walk) % K
        if before.any():
            g_t = (sg + tg - 1)[before]  # position just before the block (global index)
            walk = cs[g_t] - cs[before] + steps[before]
            k[before] = (perm[grp[before], 0] - walk) % K
    q = rng.integers(0, n_j, dtype=np.int64) if J else np.zeros(0, dtype=np.int64)
    nonnom = k + (k >= nominal[grp])  # pooled-system index
    # lay the non-nominal positions around the nominal one
    n_total = int(n_j.sum())
    fgrp = np.repeat(np.arange(J, dtype=np.int64), n_j)
    fstart = np.cumsum(n_j) - n_j
    p = np.arange(n_total, dtype=np.int64) - fstart[fgrp]
    feas = feasible[fgrp]
    qg = q[fgrp]
    src_pos = starts[fgrp] + np.where(feas & (p > qg), p - 1, p)
    is_nominal = feas & (p == qg)
    source = np.where(is_nominal, nominal[fgrp], nonnom[np.minimum(src_pos, max(total - 1, 0))] if total else 0)
    return Assignment(source.astype(np.int64), nominal, feasible, n_doc, m)


def check_assignment(a: Assignment, *, forbid_adjacent_repeat: bool = False) -> npt.NDArray[np.bool_]:
    """Whether every MIX document meets its constraints, shape ``(J,)`` (vectorised; used by the tests).

    Feasible: every pooled system at least once, the nominal exactly once. Infeasible: all
    positions distinct and none nominal. With ``forbid_adjacent_repeat``: no two adjacent
    positions share a system.
    """
    m = a.n_pool
    n_j = np.repeat(a.n_segments, m)
    J = n_j.size
    fgrp = np.repeat(np.arange(J), n_j)
    counts = np.zeros((J, m), dtype=np.int64)
    np.add.at(counts, (fgrp, a.source), 1)
    nom = counts[np.arange(J), a.nominal]
    ok_feasible = (counts >= 1).all(axis=1) & (nom == 1)
    ok_short = (counts <= 1).all(axis=1) & (nom == 0)
    ok = np.where(a.feasible, ok_feasible, ok_short) & (a.feasible == (n_j >= m))
    if forbid_adjacent_repeat and a.source.size > 1:
        same = (a.source[1:] == a.source[:-1]) & (fgrp[1:] == fgrp[:-1])
        bad = np.zeros(J, dtype=bool)
        bad[fgrp[1:][same]] = True
        ok &= ~bad
    return ok


# --------------------------------------------------------------------------- tables


@dataclasses.dataclass(frozen=True)
class MixResult:
    """MIX documents built from a long table of system outputs.

    ``mix``: one row per (document, nominal system, segment): the document, segment and
    system (= nominal) columns under the input's names, ``text`` (under the text column's
    name) and ``source_system`` (and the ``carry`` columns after the segment id).
    ``assignment``: (document, system, segment, [carry columns,] source_system, position,
    feasible). ``infeasible``: one row per MIX document shorter than the pool
    (document, system, n_segments, n_pool). Rows are in sorted document order, then nominal
    system (code-point order), then segment order.
    """

    mix: pl.DataFrame
    assignment: pl.DataFrame
    infeasible: pl.DataFrame
    pool: list[str]
    n_documents: int
    n_segments: int
    seed: int
    forbid_adjacent_repeat: bool
    signature: dict[str, Any]
    #: pooled outputs that are empty or white space only (a system that gave nothing), and the first of them
    n_empty_outputs: int = 0
    first_empty_output: str | None = None
    #: pooled systems every output of which is empty (e.g. WMT24's ``ONLINE-empty`` baseline)
    empty_systems: tuple[str, ...] = ()

    def summary(self) -> dict[str, Any]:
        """JSON-safe summary (what the CLI prints)."""
        inf = self.infeasible
        docs = inf.select(inf.columns[0]).unique(maintain_order=True).to_series().to_list() if inf.height else []
        return json_safe({
            "n_documents": self.n_documents, "n_segments": self.n_segments, "pool": self.pool,
            "n_pool": len(self.pool), "n_mix_documents": self.n_documents * len(self.pool),
            "n_mix_rows": self.mix.height, "n_infeasible": inf.height,
            "infeasible_documents": docs, "seed": self.seed,
            "forbid_adjacent_repeat": self.forbid_adjacent_repeat, "n_empty_outputs": self.n_empty_outputs,
            "first_empty_output": self.first_empty_output, "empty_systems": list(self.empty_systems),
            "signature": self.signature,
        })

    def empty_note(self) -> str | None:
        """What to say of the empty outputs in the pool (None when there are none)."""
        if not self.n_empty_outputs:
            return None
        every = (f"; every output of {', '.join(map(repr, self.empty_systems))} is empty"
                 if self.empty_systems else "")
        return (f"{self.n_empty_outputs} pooled output(s) are empty or white space only (first: "
                f"{self.first_empty_output}{every}); they go into MIX documents as they are, as into the DOC ones: "
                "give the system's translation, or leave the system out with --pool/--exclude-system")


def _segment_positions(df: pl.DataFrame, document: str, segment: str) -> pl.DataFrame:
    """(document, segment) -> 0-based position: integer ids numerically, other ids in input order."""
    import polars as pl

    keys = df.select(document, segment).with_row_index("__row").group_by(document, segment).agg(
        pl.col("__row").min())
    if keys[segment].dtype.is_integer():
        keys = keys.sort(document, segment)
    else:
        keys = keys.sort(document, "__row")
    return keys.with_columns(pl.int_range(pl.len()).over(document).cast(pl.Int64).alias(POSITION)).drop("__row")


def build_mix(
    outputs: Any,
    *,
    seed: int = 0,
    pool: Sequence[str] | None = None,
    exclude_systems: Sequence[str] = (),
    forbid_adjacent_repeat: bool = False,
    document: str = "document_id",
    segment: str = "segment_id",
    system: str = "system",
    text: str = "text",
    carry: Sequence[str] = (),
    name: str | None = None,
) -> MixResult:
    """Build every MIX document of a long table of system outputs (module docstring).

    Parameters
    ----------
    outputs
        Path or frame with one row per (document, segment, system): document id, segment id,
        system name and the system's translation (column names selectable).
    seed
        Seed of the assignment generator.
    pool
        Pooled systems (default: every system in ``outputs``); each must have an output for
        every segment of every document (D502 names the first missing one).
    exclude_systems
        Systems left out of the pool (the default pool or ``pool``; e.g. the human reference
        ``refA``). Each must occur in the system column (D704 names the systems there): a typo
        never leaves the system in the pool.
    forbid_adjacent_repeat
        No two adjacent segments of a MIX document from the same system (pool >= 3).
    carry
        Per-segment columns of ``outputs`` written beside the segment id in the MIX and
        assignment tables (e.g. ``line_id`` of the WMT24 layout); one value per (document,
        segment) (D503 otherwise).
    name
        How messages name ``outputs`` (default: its path, or ``<table>``).
    """
    import polars as pl

    from ..io.tables import check_distinct_columns, read_table, require_columns

    cols = {"document": document, "segment": segment, "system": system, "text": text}
    check_distinct_columns([(FLAGS[k], v) for k, v in cols.items()])
    df = read_table(outputs)
    source = name or (str(outputs) if isinstance(outputs, str) or hasattr(outputs, "__fspath__") else "<table>")
    require_columns(df, list(cols.values()), source, flags={v: FLAGS[k] for k, v in cols.items()})
    carry = [c for c in dict.fromkeys(carry) if c not in cols.values()]
    require_columns(df, carry, source)
    seg_extra = df.select(document, segment, *carry).unique(maintain_order=True) if carry else None
    df = df.select(document, segment, pl.col(system).cast(pl.String), pl.col(text).cast(pl.String))
    for role in ("document", "segment", "system"):
        nulls = df[cols[role]].null_count()
        if nulls:
            row = int(df[cols[role]].is_null().arg_max() or 0) + 1
            raise DDPDataError(f"{source}, column '{cols[role]}' ({FLAGS[role]}): {nulls} null value(s), the first at "
                               f"row {row}; every row needs a document id, a segment id and a system (fill them, or drop those rows)",
                               code="D503")
    present = sorted(df[system].unique().to_list())
    # a single name given as a str is that one system, not its characters
    exclude_systems = [exclude_systems] if isinstance(exclude_systems, str) else exclude_systems
    pool = [pool] if isinstance(pool, str) else pool
    excl = list(dict.fromkeys(str(s) for s in exclude_systems))
    absent = [s for s in excl if s not in present]
    if absent:  # a typo must not leave the system in the pool in silence (the same rule as ddp blindness)
        raise DDPDataError(
            f"{source}: --exclude-system {', '.join(map(repr, absent))}: no such system in the table (column "
            f"'{system}', {FLAGS['system']}); systems: {', '.join(present)}", code="D704")
    pool_list = sorted(dict.fromkeys(str(s) for s in pool)) if pool else present
    unknown = [s for s in pool_list if s not in present]  # a typo in --pool: said with D502 below
    not_there = (f"; --pool {', '.join(map(repr, unknown))}: no such system in the table (column '{system}', "
                 f"{FLAGS['system']}); systems: {', '.join(present[:20]) or 'none'}") if unknown else ""
    pool_list = [s for s in pool_list if s not in excl]
    if len(pool_list) < 2:
        raise DDPDataError(
            f"{source}: the pool has {len(pool_list)} system(s) ({', '.join(pool_list) or 'none'}); a MIX document "
            f"needs at least 2 pooled systems (systems in the table: {', '.join(present[:20]) or 'none'}){not_there}; "
            "name 2 or more with --pool, or exclude fewer with --exclude-system", code="D500")
    full = df
    df = df.filter(pl.col(system).is_in(pool_list))
    dup = df.group_by(document, segment, system).len().filter(pl.col("len") > 1)
    if dup.height:
        r = dup.sort(document, segment, system).row(0, named=True)
        rows = full.with_row_index("__row", offset=1).filter(
            (pl.col(document) == r[document]) & (pl.col(segment) == r[segment]) & (pl.col(system) == r[system]))
        raise DDPDataError(
            f"{source}, rows {', '.join(map(str, rows['__row'].to_list()[:5]))}: document '{r[document]}', segment "
            f"{r[segment]!r}: system '{r[system]}' has {r['len']} outputs; keep one row per (document, segment, "
            "system)", code="D503")
    pos = _segment_positions(df, document, segment) if df.height else None
    if pos is None:
        raise DDPDataError(f"{source}: no outputs of the pooled systems ({', '.join(pool_list)}){not_there}",
                           code="D502")
    m = len(pool_list)
    sys_idx = pl.DataFrame({system: pool_list, "__sys": np.arange(m, dtype=np.int64)})
    grid = pos.join(sys_idx, how="cross")
    have = df.filter(pl.col(text).is_not_null())
    missing = grid.join(have.select(document, segment, system), on=[document, segment, system], how="anti")
    if missing.height:
        r = missing.sort(document, POSITION, system).row(0, named=True)
        raise DDPDataError(
            f"{source}: document '{r[document]}', segment {r[segment]!r}: no output of pooled system '{r[system]}' "
            f"({missing.height} missing output(s) in total){not_there}; give every pooled system's translation of "
            "every segment, or leave the system out with --pool", code="D502")
    # documents in sorted order; positions in document order
    doc_keys = pos.select(document).unique().sort(document)
    n_seg = pos.group_by(document).len().join(doc_keys.with_row_index("__d"), on=document).sort("__d")
    a = assign_sources(n_seg["len"].to_numpy(), m, seed, forbid_adjacent_repeat=forbid_adjacent_repeat)
    # text lookup: (document, position, system) -> text, in the order (document, position, system index)
    texts = (have.join(pos, on=[document, segment]).join(sys_idx, on=system)
             .join(doc_keys.with_row_index("__d"), on=document)
             .sort("__d", POSITION, "__sys"))
    text_arr = texts[text]
    seg_ids = texts.filter(pl.col("__sys") == 0)[segment]
    n_docs = n_seg.height
    J = n_docs * m
    n_j = np.repeat(a.n_segments, m)
    fgrp = np.repeat(np.arange(J), n_j)
    doc_of = fgrp // m
    nominal = a.nominal[fgrp]
    seg_start = np.cumsum(a.n_segments) - a.n_segments  # first global segment of each document
    p = np.arange(n_j.sum()) - (np.cumsum(n_j) - n_j)[fgrp]
    gseg = seg_start[doc_of] + p
    take = pl.Series(gseg * m + a.source)
    doc_names = doc_keys[document].gather(pl.Series(doc_of))
    pool_s = pl.Series(pool_list)
    mix = pl.DataFrame({
        document: doc_names,
        segment: seg_ids.gather(pl.Series(gseg)),
        system: pool_s.gather(pl.Series(nominal)),
        text: text_arr.gather(take),
        SOURCE_SYSTEM: pool_s.gather(pl.Series(a.source)),
    })
    assignment = mix.select(document, system, segment, SOURCE_SYSTEM).with_columns(
        pl.Series(POSITION, p.astype(np.int64)), pl.Series(FEASIBLE, a.feasible[fgrp]))
    if seg_extra is not None:  # per-segment columns (e.g. line_id of --reader wmt24) beside the segment id
        seg_extra = seg_extra.join(pos.select(document, segment), on=[document, segment], how="semi")
        if seg_extra.select(document, segment).is_duplicated().any():
            r = seg_extra.filter(seg_extra.select(document, segment).is_duplicated()).row(0, named=True)
            raise DDPDataError(
                f"{source}: document '{r[document]}', segment {r[segment]!r}: the systems' rows disagree on "
                f"{', '.join(map(repr, carry))}; a segment has one value there", code="D503")
        order = [document, segment, *carry]
        mix = mix.join(seg_extra, on=[document, segment], how="left", maintain_order="left")
        mix = mix.select(*order, *[c for c in mix.columns if c not in order])
        assignment = assignment.join(seg_extra, on=[document, segment], how="left", maintain_order="left")
        assignment = assignment.select(document, system, segment, *carry,
                                       *[c for c in assignment.columns if c not in (document, system, segment, *carry)])
    bad = np.flatnonzero(~a.feasible)
    infeasible = pl.DataFrame({
        document: doc_keys[document].gather(pl.Series(bad // m)),
        system: pool_s.gather(pl.Series(bad % m)),
        "n_segments": a.n_segments[bad // m],
        "n_pool": np.full(bad.size, m, dtype=np.int64),
    })
    blank = have.with_row_index("__row").filter(pl.col(text).str.strip_chars().str.len_chars() == 0)
    first_blank, all_blank = None, ()
    if blank.height:
        r = blank.row(0, named=True)
        first_blank = f"document '{r[document]}', segment {r[segment]!r}, system '{r[system]}'"
        per = blank.group_by(system).len().join(have.group_by(system).len(), on=system, suffix="_all")
        all_blank = tuple(sorted(per.filter(pl.col("len") == pl.col("len_all"))[system].to_list()))
    sig = signature("mix", seed=int(seed), pool=pool_list, exclude_systems=excl,
                    forbid_adjacent_repeat=bool(forbid_adjacent_repeat),
                    generator=RNG_DESCRIPTION, columns={"document": document, "segment": segment,
                                                        "system": system, "text": text},
                    **({"empty_outputs": blank.height} if blank.height else {}),
                    **({"empty_systems": list(all_blank)} if all_blank else {}))
    res = MixResult(mix, assignment, infeasible, pool_list, n_docs, int(a.n_segments.sum()), int(seed),
                    bool(forbid_adjacent_repeat), sig, blank.height, first_blank, all_blank)
    if blank.height:
        warnings.warn(res.empty_note() or "", UserWarning, stacklevel=2)
    return res
