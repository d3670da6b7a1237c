"""The score-table readers every command that reads scores shares (``ddp stats *``, ``ddp blindness``,
``ddp stratify``): ``--reader/--waves/--lp`` (:func:`add_score_reader`) and the table they read
(:func:`score_input`). The choices are :data:`ddpcore.io.scores.SCORE_READERS`."""
from __future__ import annotations

import argparse
from typing import Any

from ..io.scores import SCORE_READERS as READERS  # one tuple for every score command (io.scores)
from ._common import stderr_line


def _csv_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def add_score_reader(p: argparse.ArgumentParser, what: str = "TABLE") -> None:
    """``--reader/--waves/--lp``: how a score table is read. One helper for every command that reads
    scores (``ddp stats *``, ``ddp blindness``, ``ddp stratify``); :func:`score_input` applies it."""
    r = p.add_argument_group("input")
    r.add_argument("--reader", choices=READERS, default="table",
                   help=f"how to read {what}: a table file, the ESA WMT23 en-de folder (esa-wmt23-ende) or the "
                        "WMT24 ESA folder (wmt24-genmt), an mt-metrics-eval test-set folder (mtme; conditions = human "
                        "score or METRIC-REF names, --lp picks the pair), the WMT25 automatic-scores JSONL "
                        "(wmt25-scores; conditions = metric names) or COMET --to_json output (comet); see "
                        "docs/stats-cli.md and docs/readers.md")
    r.add_argument("--waves", type=lambda s: [int(x) for x in _csv_list(s)], default=[2, 3], metavar="N,N",
                   help="--reader wmt24: waves to read")
    r.add_argument("--lp", type=_csv_list, default=None, metavar="LP[,LP]",
                   help="--reader wmt24: keep only these language pairs (e.g. en-cs); mtme, wmt25-scores: the "
                        "language pair to read")


#: score readers whose table can be wide (one column per score), as ``ddp stratify`` and
#: ``ddp stats compare`` read them: ``--score-col`` then names the columns
WIDE_READERS = ("mtme", "wmt25-scores", "comet")


def score_input(args: argparse.Namespace, path: Any, conditions: list[str] | None = None,
                layout: str = "long") -> Any:
    """``path`` as given (read by the statistics functions) or the table ``--reader`` reads from it
    (the options of :func:`add_score_reader`): ``layout="long"`` (condition + score rows, ``ddp stats
    tost/tau/cluster``) or ``"wide"`` (one column per score: ``ddp stats compare``; ``conditions`` then
    names the columns wanted, e.g. mtme METRIC-REF names)."""
    from ..io.scores import read_score_input

    command = " ".join(["ddp", *(w for w in (getattr(args, "command", None), getattr(args, "stats_command", None))
                                 if isinstance(w, str))])  # `ddp stats tau: note:`, as its warnings and errors
    return read_score_input(path, args.reader, conditions=conditions, waves=args.waves, lps=args.lp, layout=layout,
                            warn=lambda m: stderr_line(f"{command}: note: {m}"))
