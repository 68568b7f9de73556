"""The figures' own entry point: ``fedtheory figures`` and ``python -m fedtheory.figures``.

Each figure is reported on stderr as it is written (a progress bar on a terminal, one line per
figure in a log); the table of written files follows on stdout. A figure that fails does not stop
the others: exit status 1 at the end, naming it (one line each, after the table). Exit status 2
for an unknown figure name or when a figure needs an optional extra that is missing (one line
naming it; the other figures are still drawn); 0 when every requested figure was written.
"""

from __future__ import annotations

import argparse
import sys

from fedtheory.errors import FedTheoryError
from fedtheory.figures.registry import FIGURES, generate


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of the figures command (the CLI's subcommand and ``-m`` share them)."""
    p.add_argument("names", nargs="*", metavar="NAME", help="figures to draw (default: all)")
    p.add_argument("--out", default="figures", help="output folder (default: figures)")
    p.add_argument("--list", action="store_true", help="list the figure names and exit")


def run(args: argparse.Namespace) -> int:
    """Draw the figures ``args`` name (all by default) and report each; the exit status."""
    if args.list:
        for spec in FIGURES.values():
            print(f"{spec.name:16s} {spec.title}")
        return 0
    skipped, failed = [], []
    for r in generate(args.names or None, args.out, keep_going=True):
        if r.missing:
            skipped.append(r)
            continue
        if r.error:
            failed.append(r)
            continue
        print(f"{r.name:16s} {r.seconds:6.1f} s  " + " ".join(str(p) for p in r.paths))
    for r in skipped:  # one line each, after the figures that were drawn
        print(f"fedtheory: error: figure {r.name} not drawn: {r.missing}", file=sys.stderr)
    for r in failed:
        print(f"fedtheory: error: figure {r.name} failed: {r.error}", file=sys.stderr)
    return 1 if failed else 2 if skipped else 0


def main(argv: list[str] | None = None) -> int:
    """``python -m fedtheory.figures [NAME ...]``; bad input is one line and exit status 2."""
    parser = argparse.ArgumentParser(
        prog="python -m fedtheory.figures", description="Regenerate fedtheory's figures."
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except FedTheoryError as exc:
        print(f"fedtheory: error: {exc}", file=sys.stderr)
        return 2
