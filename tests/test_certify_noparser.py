"""``ddp_certified`` on a pipeline without a dependency parser (``--pipeline fast``, issue 21).

The default certification model (certify-v5.json) weighs the parse features (``role``,
``antecedent_role``); without a parser every role is ``other`` and that model certified almost
nothing (summed ddp_certified 65 against 6,532 on the first 40 bundled segments, measured before
this change). A parser-free pipeline now gets the shipped parser-free model
(certify-v5-noparser.json, trained by ``scripts/train_certify.py --pipeline fast``), said on
stderr and recorded in the signature; a model trained with the parse that the user names
explicitly is kept, warned about and marked ``parse_features: "absent"``.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import polars as pl
import pytest

import ddpcore
import ddpcore.data
from ddpcore.anchors.certify import FEATURES
from ddpcore.anchors.certify_model import (DATA_DIR, DEFAULT_CERTIFY_MODEL, NOPARSER_CERTIFY_MODEL,
                                           load_certify_model)
from ddpcore.anchors.rules import get_rules
from ddpcore.cli.main import main

WMT25 = Path(ddpcore.data.__file__).with_name("wmt25_en_source.jsonl")


def test_the_parser_free_model_loads_and_says_how_it_was_trained():
    m = load_certify_model(DATA_DIR / NOPARSER_CERTIFY_MODEL, FEATURES)
    assert m.trained_with_parser is False
    assert m.recipe["pipeline"] == "fast"
    d = load_certify_model(DATA_DIR / DEFAULT_CERTIFY_MODEL, FEATURES)
    assert d.trained_with_parser is True
    # trained without a parser, the role features are constant: their weights are zero
    roles = [i for i, f in enumerate(FEATURES) if f.startswith(("role=", "antecedent_role="))]
    assert roles, "the feature list has parse roles"
    assert all(m.weights[i] == 0.0 for i in roles)
    assert any(d.weights[i] != 0.0 for i in roles)


def test_for_pipeline_replaces_only_the_default_model():
    rules = get_rules(None)
    assert rules.certify_model == DEFAULT_CERTIFY_MODEL
    assert rules.for_pipeline(True) is rules
    assert rules.for_pipeline(False).certify_model == NOPARSER_CERTIFY_MODEL
    custom = dataclasses.replace(rules, certify_model=str(DATA_DIR / DEFAULT_CERTIFY_MODEL))
    assert custom.for_pipeline(False) is custom
    none = dataclasses.replace(rules, certify_model="")
    assert none.for_pipeline(False) is none and none.certify_note(False) is None


def test_signature_records_the_replacement_and_a_missing_parse():
    rules = get_rules(None)
    with_parser = rules.certify_info(has_parser=True)
    assert with_parser["file"] == DEFAULT_CERTIFY_MODEL and with_parser["pipeline_has_parser"] is True
    assert "replaces" not in with_parser and "parse_features" not in with_parser
    assert rules.certify_note(True) is None
    swapped = rules.certify_info(has_parser=False)
    assert swapped["file"] == NOPARSER_CERTIFY_MODEL and swapped["replaces"] == DEFAULT_CERTIFY_MODEL
    assert swapped["trained_with_parser"] is False and "parse_features" not in swapped
    assert NOPARSER_CERTIFY_MODEL in rules.certify_note(False)
    custom = dataclasses.replace(rules, certify_model=str(DATA_DIR / DEFAULT_CERTIFY_MODEL))
    absent = custom.certify_info(has_parser=False)
    assert absent["parse_features"] == "absent" and absent["file"] == DEFAULT_CERTIFY_MODEL
    assert "trained with one" in custom.certify_note(False)
    noparse = dataclasses.replace(rules, certify_model=NOPARSER_CERTIFY_MODEL)
    assert noparse.certify_note(False) is None  # the right model for the pipeline: nothing to say


@pytest.fixture(scope="module")
def first_segments() -> pl.DataFrame:
    return pl.read_ndjson(WMT25).head(40)


def test_fast_pipeline_certifies_with_the_parser_free_model(first_segments):
    with pytest.warns(UserWarning, match="no dependency parser.*certify-v5-noparser.json"):
        fast = ddpcore.profile_anchors(first_segments, pipeline="fast")
    default = ddpcore.profile_anchors(first_segments)
    assert fast.signature["certify"]["file"] == NOPARSER_CERTIFY_MODEL
    assert default.signature["certify"]["file"] == DEFAULT_CERTIFY_MODEL
    f, d = int(fast.segments["ddp_certified"].sum()), int(default.segments["ddp_certified"].sum())
    # before: 65 against 6,532 (a layout-3 parse-trained model on constant roles); the parser-free model
    # certifies comparably (measured with layout 4: 5,347 against 5,688), never above ddp
    assert f >= 0.5 * d
    assert (fast.segments["ddp_certified"] <= fast.segments["ddp"]).all()


def test_explicit_parse_model_on_fast_warns_and_records_absent(first_segments):
    rules = dataclasses.replace(get_rules(None), certify_model=str(DATA_DIR / DEFAULT_CERTIFY_MODEL))
    with pytest.warns(UserWarning, match="trained with one"):
        run = ddpcore.profile_anchors(first_segments.head(5), pipeline="fast", rules=rules)
    assert run.signature["certify"]["parse_features"] == "absent"


def test_cli_says_it_on_stderr_and_in_the_signature(tmp_path, capsys, first_segments):
    src = tmp_path / "in.jsonl"
    first_segments.head(5).write_ndjson(src)
    out = tmp_path / "out.csv"
    assert main(["profile", str(src), "--pipeline", "fast", "-o", str(out), "-q"]) == 0
    err = capsys.readouterr().err
    assert "ddp profile: warning: the pipeline has no dependency parser" in err
    sig = json.loads(Path(f"{out}.signature.json").read_text())
    sig = sig.get("signature", sig)
    assert sig["certify"]["file"] == NOPARSER_CERTIFY_MODEL and sig["certify"]["replaces"] == DEFAULT_CERTIFY_MODEL
