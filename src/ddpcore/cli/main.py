"""``ddp`` entry point.

Each subcommand lives in its own module under ``ddpcore.cli`` exposing
``register(subparsers)`` (builds its argparse parser, sets ``func``). Those modules
import only argparse at module level so that ``ddp --help`` stays fast; heavy imports
(spaCy, scipy, polars) happen inside the handler.

Exit codes: 0 ran (and passed any ``--fail-on`` gate), 1 a ``--fail-on`` gate failed,
2 usage error, 3 bad input data.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from .. import __version__

#: subcommand modules, in help order
SUBCOMMANDS = ("profile", "explain", "stats", "validate", "agree")

EXIT_OK, EXIT_FAIL_GATE, EXIT_USAGE, EXIT_DATA = 0, 1, 2, 3


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ddp",
        description=(
            "ddpcore: discourse dependency (DDP) profiling of MT test sets and "
            "evaluation statistics (TOST, ranking tau, clustering, agreement)."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"ddpcore {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f"ddpcore.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"ddpcore.cli.{name}":
                continue  # subcommand not part of this build
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from ..errors import DDPDataError, DDPError, DDPUsageError

    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except DDPUsageError as exc:
        print(f"ddp {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except DDPDataError as exc:
        print(f"ddp {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_DATA
    except DDPError as exc:
        print(f"ddp {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_DATA
    except KeyboardInterrupt:  # pragma: no cover
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
