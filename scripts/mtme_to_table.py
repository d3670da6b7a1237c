"""Convert an mt-metrics-eval (v2) language pair into the wide score table ``ddp meta`` reads.

Until ``--reader mtme`` exists (issue 22 §3), this script turns

    ROOT/documents/SRC-TGT.docs                 "DOMAIN<TAB>DOCNAME" per source line
    ROOT/human-scores/SRC-TGT.HUMAN.seg.score   "SYSTEM<TAB>SCORE" (None = not rated), the systems' blocks
    ROOT/metric-scores/SRC-TGT/NAME.seg.score   of one line per source line, in source order

into one row per (document_id, segment_id, system) with the human score and one column per metric:
``document_id`` = DOCNAME, ``segment_id`` = the line's position within its document (0-based), as
``ddp profile --reader lines --docs SRC-TGT.docs`` numbers them. Only the systems with human scores are
kept, minus ``--exclude-system`` (default: refA, the standard reference, which reference-based metrics
score against itself); a metric that does not score every kept system on every line is left out and
named on stderr. Missing human scores stay null (``ddp meta`` counts them).

    python scripts/mtme_to_table.py ROOT en-de --human mqm -o scores.parquet
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import polars as pl


def read_seg_scores(path: Path, n_lines: int) -> dict[str, np.ndarray]:
    """{system: float array (n_lines,)} of an mt-metrics-eval .seg.score file (None -> NaN)."""
    out: dict[str, list[float]] = {}
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(fh, 1):
            if not line.strip():
                continue
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 2:
                raise SystemExit(f"{path}, line {i}: expected SYSTEM<TAB>SCORE, got {len(parts)} field(s)")
            sys_, val = parts
            out.setdefault(sys_, []).append(np.nan if val == "None" else float(val))
    bad = {s: len(v) for s, v in out.items() if len(v) != n_lines}
    if bad:
        raise SystemExit(f"{path}: systems with a line count different from the {n_lines} source lines: {bad}")
    return {s: np.asarray(v, dtype=np.float64) for s, v in out.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", type=Path, help="the test set folder, e.g. mt-metrics-eval-v2/wmt23")
    ap.add_argument("lp", help="language pair, e.g. en-de")
    ap.add_argument("--human", default="mqm", help="human score name (human-scores/LP.NAME.seg.score)")
    ap.add_argument("--exclude-system", action="append", default=None, help="systems to leave out (default: refA)")
    ap.add_argument("--metrics", default=None, help="comma list of metric names (default: every .seg.score)")
    ap.add_argument("-o", "--output", required=True, type=Path, help="output table (.parquet or .tsv)")
    a = ap.parse_args(argv)
    docs = [ln.rstrip("\n").split("\t") for ln in open(a.root / "documents" / f"{a.lp}.docs", encoding="utf-8")]
    n = len(docs)
    doc_names = [d[-1] for d in docs]
    seg_ids = []
    seen: dict[str, int] = {}
    for d in doc_names:
        seg_ids.append(seen.get(d, 0))
        seen[d] = seen.get(d, 0) + 1
    human = read_seg_scores(a.root / "human-scores" / f"{a.lp}.{a.human}.seg.score", n)
    exclude = set(a.exclude_system if a.exclude_system is not None else ["refA"])
    systems = sorted(s for s in human if s not in exclude)
    mdir = a.root / "metric-scores" / a.lp
    files = sorted(mdir.glob("*.seg.score"))
    wanted = set(a.metrics.split(",")) if a.metrics else None
    cols: dict[str, list] = {"document_id": [], "segment_id": [], "system": []}
    for s in systems:
        cols["document_id"] += doc_names
        cols["segment_id"] += seg_ids
        cols["system"] += [s] * n
    cols[a.human] = np.concatenate([human[s] for s in systems]).tolist()
    dropped = []
    for f in files:
        name = f.name[: -len(".seg.score")]
        if wanted is not None and name not in wanted:
            continue
        sc = read_seg_scores(f, n)
        if not all(s in sc and not np.isnan(sc[s]).any() for s in systems):
            dropped.append(name)
            continue
        cols[name] = np.concatenate([sc[s] for s in systems]).tolist()
    df = pl.DataFrame(cols)
    if dropped:
        print(f"mtme_to_table: left out {len(dropped)} metric(s) missing a kept system or line: {', '.join(dropped)}",
              file=sys.stderr)
    if a.output.suffix == ".parquet":
        df.write_parquet(a.output)
    else:
        df.write_csv(a.output, separator="\t")
    print(f"mtme_to_table: wrote {a.output}: {df.height} rows ({len(systems)} systems x {n} segments), "
          f"{df.width - 4} metrics, {int(df[a.human].is_null().sum() + df[a.human].is_nan().sum())} missing human "
          "scores", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
