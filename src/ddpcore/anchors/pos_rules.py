"""spaCy's attribute ruler, compiled: POS without running the ``attribute_ruler`` component.

In en_core_web_sm the tagger sets only the fine-grained TAG; the ``attribute_ruler`` then sets
POS from the TAG (the tag map, one pattern per tag) plus ~120 token-specific patterns
("something"/NN -> PRON, "that"/WDT -> PRON, "is"/VBZ -> AUX ...). Running it costs about as
much as the parser, so the ``fast`` preset disables it and ddpcore applies the ruler's *own*
patterns, read from the loaded pipeline at load time, with a Cython kernel over the flat
token arrays (:mod:`ddpcore._native.pos_kernel`). A pipeline with other patterns gets its own
mapping; nothing is copied by hand.

What the compiler expresses (everything else is reported, see below):

* token conditions on the string attributes ``ORTH``/``TEXT``, ``LOWER``, ``NORM``, ``TAG``
  and ``DEP`` and on the lexical flags ``IS_*``/``LIKE_*`` (not ``IS_SENT_START``), each a
  value, ``{"IN": [...]}`` or ``{"NOT_IN": [...]}`` (several predicates on one attribute all
  have to hold);
* fixed-length token sequences (no ``OP``), with the ruler's ``index`` (negative counts from
  the end) choosing the token that gets the attributes;
* outputs ``POS``, ``TAG`` and ``DEP``: the attributes DDP reads. Outputs DDP never reads
  (``MORPH``, ``LEMMA``, ``NORM``, extension attributes ``_``) are left out.

**Policy for patterns the compiler cannot express** (``REGEX``, ``FUZZY``, comparison
predicates, ``OP`` quantifiers, conditions on ``LEMMA``/``POS``/``ENT_TYPE``/... , an output
such as ``ENT_TYPE`` that DDP reads but the kernel does not set): a rule that sets none of
POS/TAG/DEP cannot change what DDP reads, so it is skipped and counted in
:attr:`PosRules.skipped`; any other is a :class:`~ddpcore.errors.DDPUsageError` ``[D210]`` at
load time naming the pattern, never a silent drop (en_core_web_sm 3.8.0 has three such
patterns, all REGEX on LOWER setting only LEMMA/MORPH, so none is an error).

Arrays of :class:`PosRules` (``n_rules`` rules in ruler order = precedence, ``n_seq`` token
sequences, ``n_cond`` conditions, ``n_groups`` dispatch groups):

* ``seq_rule``/``seq_len``/``seq_target`` int32 ``(n_seq,)``: the rule of each sequence, its
  length in tokens and the offset of the token that gets the attributes;
  ``seq_cond_start`` int64 ``(n_seq+1,)``: its conditions ``cond_*[start:stop]``;
* ``cond_offset``/``cond_attr`` int32 ``(n_cond,)``: token offset in the sequence and column
  of :attr:`PosRules.attrs`; ``cond_negate`` uint8 (1: NOT_IN); ``cond_value_start`` int64
  ``(n_cond+1,)`` into ``cond_values`` uint64 (sorted within each condition);
* dispatch: ``dispatch_slot_attr`` int32 (the columns looked up at every token, one hash table
  each); group ``g`` = (``dispatch_group_slot[g]``, ``dispatch_group_value[g]``) lists the
  sequences ``dispatch_group_seq[dispatch_group_seq_start[g]:...]`` whose first-token
  condition can hold; ``always_seq`` int32: sequences without such a condition;
* ``rule_pos`` int32 / ``rule_tag``, ``rule_dep`` uint64 ``(n_rules,)`` with ``rule_sets_*``
  uint8 flags.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import DDPUsageError

#: bump when what the compiled rules compute changes (part of the parse-cache fingerprint)
POS_RULES_VERSION = 1
#: string attributes a condition may read (``TEXT`` is ``ORTH``)
STRING_ATTRS = ("ORTH", "LOWER", "NORM", "TAG", "DEP")
#: outputs the kernel sets
APPLIED_OUTPUTS = ("POS", "TAG", "DEP")
#: outputs DDP never reads: rules that set only these are skipped, their parts left out
IGNORED_OUTPUTS = ("MORPH", "LEMMA", "NORM", "_")
#: dispatch preference of a first-token condition (most selective columns first)
_DISPATCH_ORDER = {"ORTH": 0, "LOWER": 0, "NORM": 1, "TAG": 2, "DEP": 3}


def _is_flag(attr: str) -> bool:
    return (attr.startswith("IS_") or attr.startswith("LIKE_")) and attr != "IS_SENT_START"


@dataclass(frozen=True)
class PosRules:
    """An attribute ruler compiled for :func:`apply_pos_rules` (layout: module docstring).

    ``attrs``: the token attribute columns the conditions read (``Doc.to_array`` names, in
    column order); ``n_rules``: rules in the ruler; ``applied``: rules that set POS/TAG/DEP;
    ``skipped``: indices of rules that set none of them and use something the compiler cannot
    express; ``digest``: BLAKE2b of the patterns (what the rules were compiled from).
    """

    attrs: tuple[str, ...]
    seq_rule: np.ndarray
    seq_len: np.ndarray
    seq_target: np.ndarray
    seq_cond_start: np.ndarray
    cond_offset: np.ndarray
    cond_attr: np.ndarray
    cond_negate: np.ndarray
    cond_value_start: np.ndarray
    cond_values: np.ndarray
    dispatch_slot_attr: np.ndarray
    dispatch_group_slot: np.ndarray
    dispatch_group_value: np.ndarray
    dispatch_group_seq_start: np.ndarray
    dispatch_group_seq: np.ndarray
    always_seq: np.ndarray
    rule_pos: np.ndarray
    rule_sets_pos: np.ndarray
    rule_tag: np.ndarray
    rule_sets_tag: np.ndarray
    rule_dep: np.ndarray
    rule_sets_dep: np.ndarray
    n_rules: int
    applied: int
    skipped: tuple[int, ...] = field(default=())
    digest: str = ""

    def info(self) -> dict[str, Any]:
        """What a run signature records about the compiled rules."""
        return {"version": POS_RULES_VERSION, "rules": self.n_rules, "applied": self.applied,
                "skipped": len(self.skipped), "digest": self.digest}


class _Unsupported(Exception):
    pass


def _as_ids(values: Sequence[Any], attr: str, hashes: Callable[[Sequence[str]], np.ndarray]) -> list[int]:
    out: list[int] = []
    strings = []
    for v in values:
        if isinstance(v, bool):
            if not _is_flag(attr):
                raise _Unsupported(f"a boolean value for {attr}")
            out.append(int(v))
        elif isinstance(v, int):
            out.append(int(v))  # already a StringStore id (the Matcher accepts both)
        elif isinstance(v, str) and not _is_flag(attr):
            strings.append(v)
        else:
            raise _Unsupported(f"the value {v!r} for {attr}")
    if strings:
        out.extend(int(h) for h in hashes(strings))
    return out


def _conditions(spec: Any, hashes: Callable[[Sequence[str]], np.ndarray]) -> list[tuple[str, bool, list[int]]]:
    """(attribute, negate, values) of one token pattern; raises :class:`_Unsupported`."""
    if not isinstance(spec, dict):
        raise _Unsupported(f"a token pattern that is not a dict ({spec!r})")
    out = []
    for key, value in spec.items():
        attr = str(key).upper()
        if attr == "OP":
            raise _Unsupported(f"the operator OP {value!r}")
        attr = "ORTH" if attr == "TEXT" else attr
        if attr not in STRING_ATTRS and not _is_flag(attr):
            raise _Unsupported(f"a condition on {attr}")
        if isinstance(value, dict):
            for pred, arg in value.items():
                if pred not in ("IN", "NOT_IN"):
                    raise _Unsupported(f"{pred} on {attr}")
                if not isinstance(arg, (list, tuple)):
                    raise _Unsupported(f"{pred} on {attr} with a non-list value")
                out.append((attr, pred == "NOT_IN", _as_ids(arg, attr, hashes)))
        else:
            out.append((attr, False, _as_ids([value], attr, hashes)))
    return out


def _unexpressible(patterns: Sequence[dict[str, Any]], r: int, why: str, source: str) -> DDPUsageError:
    """D210 for rule ``r``, which sets an output DDP reads but uses ``why``."""
    shown = json.dumps(patterns[r].get("patterns"), ensure_ascii=False, default=str)
    if len(shown) > 160:
        shown = shown[:157] + "..."
    return DDPUsageError(
        f"{source}: pattern {r} {shown} sets {', '.join(sorted(_outputs(patterns[r])))} but uses {why}, which "
        "ddpcore's compiled attribute rules cannot express; use --pipeline default (runs the attribute ruler) "
        "or remove the pattern from the pipeline", code="D210")


def _rule_sequences(patterns: Sequence[dict[str, Any]], r: int, hashes: Callable[[Sequence[str]], np.ndarray],
                    source: str) -> tuple[bool, list[tuple[int, list[Any]]] | None]:
    """Step 1 for rule ``r``: ``(sets_something_ddp_reads, sequences)``; ``sequences`` is None for a rule
    the compiler cannot express that sets nothing DDP reads (skipped). D210 for one that does."""
    outputs = _outputs(patterns[r])
    relevant = [a for a in outputs if a not in IGNORED_OUTPUTS]
    unsupported = [a for a in relevant if a not in APPLIED_OUTPUTS]
    if unsupported:
        raise _unexpressible(patterns, r, f"the output {unsupported[0]} (read by DDP, not set by the compiled rules)",
                             source)
    try:
        return bool(relevant), _sequences(patterns[r], hashes)
    except _Unsupported as exc:
        if relevant:
            raise _unexpressible(patterns, r, str(exc), source) from None
        return False, None


class _RuleOutputs:
    """Step 2: the POS id / TAG / DEP hash each rule sets (``rule_*`` of :class:`PosRules`) and whether it
    sets it (``rule_sets_*``), filled one rule at a time."""

    def __init__(self, n_rules: int) -> None:
        self.pos = np.full(n_rules, -1, dtype=np.int32)
        self.tag = np.zeros(n_rules, dtype=np.uint64)
        self.dep = np.zeros(n_rules, dtype=np.uint64)
        self.sets = {k: np.zeros(n_rules, dtype=np.uint8) for k in APPLIED_OUTPUTS}

    def add(self, r: int, rule: dict[str, Any], pos_id: Callable[[str], int],
            hashes: Callable[[Sequence[str]], np.ndarray]) -> None:
        values = {str(k).upper(): v for k, v in rule["attrs"].items()}
        if "POS" in values:
            self.pos[r] = int(values["POS"]) if isinstance(values["POS"], int) else pos_id(str(values["POS"]))
            self.sets["POS"][r] = 1
        for name, table in (("TAG", self.tag), ("DEP", self.dep)):
            if name in values:
                v = values[name]
                table[r] = np.uint64(v) if isinstance(v, int) else hashes([str(v)])[0]
                self.sets[name][r] = 1

    def fields(self) -> dict[str, np.ndarray]:
        return {"rule_pos": self.pos, "rule_sets_pos": self.sets["POS"], "rule_tag": self.tag,
                "rule_sets_tag": self.sets["TAG"], "rule_dep": self.dep, "rule_sets_dep": self.sets["DEP"]}


class _SequenceTable:
    """Step 3: the sequence and condition arrays of :class:`PosRules` (``attrs``, ``seq_*``, ``cond_*``),
    one sequence at a time, and the positive first-token conditions of each sequence (for dispatch)."""

    def __init__(self) -> None:
        self.attrs: list[str] = []
        self.seq_rule: list[int] = []
        self.seq_len: list[int] = []
        self.seq_target: list[int] = []
        self.seq_cond_start = [0]
        self.cond_offset: list[int] = []
        self.cond_attr: list[int] = []
        self.cond_negate: list[int] = []
        self.cond_value_start = [0]
        self.cond_values: list[int] = []
        self.first_conds: list[list[tuple[str, list[int]]]] = []

    def add(self, r: int, target: int, toks: list[Any]) -> None:
        self.seq_rule.append(r)
        self.seq_len.append(len(toks))
        self.seq_target.append(target)
        firsts = []
        for off, conds in enumerate(toks):
            for attr, negate, ids in conds:
                if attr not in self.attrs:
                    self.attrs.append(attr)
                self.cond_offset.append(off)
                self.cond_attr.append(self.attrs.index(attr))
                self.cond_negate.append(int(negate))
                self.cond_values.extend(sorted(set(ids)))
                self.cond_value_start.append(len(self.cond_values))
                if off == 0 and not negate:
                    firsts.append((attr, sorted(set(ids))))
        self.seq_cond_start.append(len(self.cond_offset))
        self.first_conds.append(firsts)

    def fields(self) -> dict[str, Any]:
        i32 = np.int32
        return {
            "attrs": tuple(self.attrs),
            "seq_rule": np.asarray(self.seq_rule, i32), "seq_len": np.asarray(self.seq_len, i32),
            "seq_target": np.asarray(self.seq_target, i32), "seq_cond_start": np.asarray(self.seq_cond_start, np.int64),
            "cond_offset": np.asarray(self.cond_offset, i32), "cond_attr": np.asarray(self.cond_attr, i32),
            "cond_negate": np.asarray(self.cond_negate, np.uint8),
            "cond_value_start": np.asarray(self.cond_value_start, np.int64),
            "cond_values": np.asarray(self.cond_values, np.uint64),
        }


def _dispatch(first_conds: list[list[tuple[str, list[int]]]], attrs: list[str]) -> dict[str, np.ndarray]:
    """Step 4: each sequence under its most selective positive first-token condition (``dispatch_*``), or
    in ``always_seq`` when it has none."""
    slots: list[str] = []
    groups: dict[tuple[int, int], list[int]] = {}
    always = []
    for s, firsts in enumerate(first_conds):
        if not firsts:
            always.append(s)
            continue
        attr, ids = min(firsts, key=lambda c: (_DISPATCH_ORDER.get(c[0], 4), len(c[1])))
        if attr not in slots:
            slots.append(attr)
        for v in ids:
            groups.setdefault((slots.index(attr), v), []).append(s)
    keys = sorted(groups)
    i32 = np.int32
    return {
        "dispatch_slot_attr": np.asarray([attrs.index(a) for a in slots], i32),
        "dispatch_group_slot": np.asarray([k[0] for k in keys], i32),
        "dispatch_group_value": np.asarray([k[1] for k in keys], np.uint64),
        "dispatch_group_seq_start": np.cumsum([0] + [len(groups[k]) for k in keys]).astype(np.int64),
        "dispatch_group_seq": np.asarray([s for k in keys for s in groups[k]], i32),
        "always_seq": np.asarray(always, i32),
    }


def compile_pos_rules(
    patterns: Sequence[dict[str, Any]],
    *,
    pos_id: Callable[[str], int],
    hashes: Callable[[Sequence[str]], np.ndarray],
    source: str = "attribute_ruler",
) -> PosRules:
    """Compile attribute-ruler ``patterns`` (``AttributeRuler.patterns``: dicts with
    ``patterns``, ``attrs``, ``index``, in ruler order) into :class:`PosRules`.

    ``pos_id(name)``: universal POS id of a POS name; ``hashes(words)``: uint64 StringStore ids
    (:func:`ddpcore.anchors.spacy_extract.pos_id` / ``string_hashes``). ``source`` names the
    pipeline in errors. Raises ``DDPUsageError`` [D210] for a rule that sets POS, TAG or DEP
    (or an attribute DDP reads that the kernel cannot set) with a pattern the compiler cannot
    express.
    """
    n_rules = len(patterns)
    outputs = _RuleOutputs(n_rules)
    table = _SequenceTable()
    skipped: list[int] = []
    applied = 0
    for r, rule in enumerate(patterns):
        relevant, seqs = _rule_sequences(patterns, r, hashes, source)
        if seqs is None:
            skipped.append(r)
            continue
        if not relevant:
            continue  # sets only what DDP never reads
        applied += 1
        outputs.add(r, rule, pos_id, hashes)
        for target, toks in seqs:
            table.add(r, target, toks)
    digest = hashlib.blake2b(json.dumps(list(patterns), sort_keys=True, default=str).encode(),
                             digest_size=8).hexdigest()
    return PosRules(**table.fields(), **_dispatch(table.first_conds, table.attrs), **outputs.fields(),
                    n_rules=n_rules, applied=applied, skipped=tuple(skipped), digest=digest)


def _sequences(rule: dict[str, Any], hashes: Callable[[Sequence[str]], np.ndarray]) -> list[tuple[int, list[Any]]]:
    """(target offset, conditions of each token) of every sequence of ``rule``."""
    seqs = []
    index = int(rule.get("index", 0) or 0)
    for seq in rule.get("patterns") or []:
        if not isinstance(seq, (list, tuple)) or not seq:
            raise _Unsupported(f"the sequence {seq!r}")
        target = index if index >= 0 else len(seq) + index
        if not 0 <= target < len(seq):
            raise _Unsupported(f"index {index} outside a {len(seq)}-token sequence")
        seqs.append((target, [_conditions(spec, hashes) for spec in seq]))
    return seqs


def _outputs(rule: dict[str, Any]) -> list[str]:
    return [str(k).upper() for k in (rule.get("attrs") or {})]


def apply_pos_rules(
    rules: PosRules,
    values__tok_attr: np.ndarray,
    n_tokens__unit: np.ndarray,
    pos: np.ndarray,
    tag: np.ndarray,
    dep: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """POS (int32), TAG and DEP (uint64) of every token after ``rules``.

    ``values__tok_attr``: uint64 ``(n_tok, len(rules.attrs))``, the columns ``rules.attrs``
    (``Doc.to_array``); ``n_tokens__unit``: int64 ``(n_units,)`` tokens per parse unit (a
    pattern never spans two units); ``pos`` int32, ``tag``/``dep`` uint64 ``(n_tok,)``: the
    values before the rules. Returns new arrays; raises ``ValueError`` on inconsistent shapes.
    """
    from .._native import load

    values__tok_attr = np.ascontiguousarray(values__tok_attr, dtype=np.uint64)
    n_tok = int(pos.shape[0])
    if values__tok_attr.ndim != 2 or values__tok_attr.shape != (n_tok, len(rules.attrs)):
        raise ValueError(f"values__tok_attr must have shape ({n_tok}, {len(rules.attrs)}), "
                         f"got {values__tok_attr.shape}")
    n_tokens__unit = np.ascontiguousarray(n_tokens__unit, dtype=np.int64)
    if int(n_tokens__unit.sum()) != n_tok or (n_tokens__unit < 0).any():
        raise ValueError(f"n_tokens__unit must be non-negative and sum to n_tok = {n_tok}")
    if tag.shape != (n_tok,) or dep.shape != (n_tok,):
        raise ValueError("pos, tag and dep must have one value per token")
    return load("pos_kernel").apply_ruler(
        values__tok_attr, n_tokens__unit, np.ascontiguousarray(pos, dtype=np.int32),
        np.ascontiguousarray(tag, dtype=np.uint64), np.ascontiguousarray(dep, dtype=np.uint64), rules)
