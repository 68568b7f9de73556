"""``fedtheory figures [NAME ...]``: regenerate figures as PNG + PDF + sidecar JSON.

Each figure is reported on stderr as it is written (a progress bar on a terminal, one line per
figure in a log); the table of written files follows on stdout. A figure that fails does not stop
the others: exit status 1 at the end, naming it (one line each, after the table). Exit status 2
for an unknown figure name or when a figure needs an optional extra that is missing (one line
naming it; the other figures are still drawn); 0 when every requested figure was written.
"""

from __future__ import annotations

import sys

from fedtheory.cli.common import add_parser
from fedtheory.figures import FIGURES, generate


def register(subparsers) -> None:
    p = add_parser(
        subparsers,
        "figures",
        help="regenerate the figures into figures/ (PNG, PDF and a sidecar JSON each)",
        description=(
            "Regenerate figures as PNG and PDF with a sidecar JSON holding the exact "
            "configuration, seeds, package version and the data drawn. Same seeds, same data."
        ),
        examples=["fedtheory figures", "fedtheory figures figure4 fedavg_floor --out /tmp/figs"],
    )
    p.add_argument("names", nargs="*", metavar="NAME", help="figures to draw (default: all)")
    p.add_argument("--out", default="figures", help="output folder (default: figures)")
    p.add_argument("--list", action="store_true", help="list the figure names and exit")
    p.set_defaults(func=main)


def main(args) -> int:

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
