"""The Python API speaks the CLI's vocabulary (issue 23): every keyword of ``profile_anchors`` and
every field of ``ProfileOptions`` is the long flag of ``ddp profile`` with ``-`` for ``_``, except the
few that only make sense in Python (listed here, each with why); ``help(ddpcore.profile)`` shows the
real signature; and the old column keywords (``document=``...) are gone, not silently ignored."""
from __future__ import annotations

import argparse
import dataclasses
import inspect

import pytest

import ddpcore
from ddpcore.api import ProfileOptions, profile_anchors, summarize
from ddpcore.cli.main import build_parser

#: Python-only names: a loaded spaCy pipeline, the options object itself, the input's name when the
#: input is a table (a path names itself on the CLI), gold alignment (``ddp validate`` sets it) and
#: the distance kernel's threads (the CLI takes them from -j)
PYTHON_ONLY = {"source", "nlp", "options", "source_name", "sentence_unit", "n_threads"}


def _profile_flags() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    flags = set()
    for action in sub.choices["profile"]._actions:
        flags.update(o[2:].replace("-", "_") for o in action.option_strings if o.startswith("--"))
    return flags


def test_every_keyword_is_a_profile_flag():
    names = set(inspect.signature(profile_anchors).parameters) | {f.name for f in dataclasses.fields(ProfileOptions)}
    missing = sorted(names - PYTHON_ONLY - _profile_flags())
    assert not missing, f"keywords with no `ddp profile` flag of the same name: {missing}"


def test_help_shows_the_real_signature():
    shown = inspect.signature(ddpcore.profile)
    assert list(shown.parameters) == list(inspect.signature(profile_anchors).parameters)
    assert "kwargs" not in str(shown)
    assert "document_col" in inspect.signature(summarize).parameters


@pytest.mark.parametrize("old", ["document", "segment", "text", "domain", "distance", "reader"])
def test_old_keywords_fail_loudly(old):
    with pytest.raises(TypeError, match=old):
        profile_anchors("unused.jsonl", **{old: "x"})


def test_options_must_be_profile_options():
    with pytest.raises(TypeError, match="ProfileOptions"):
        profile_anchors("unused.jsonl", options={"distance": "nearest"})  # type: ignore[arg-type]
