"""``fedtheory figures [NAME ...]``: regenerate figures as PNG + PDF + sidecar JSON.

The command itself lives with the figures (:mod:`fedtheory.figures.command`), so that
``python -m fedtheory.figures`` runs the same lines without importing the CLI.
"""

from __future__ import annotations

from fedtheory.cli.common import add_parser
from fedtheory.figures.command import add_arguments, run


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
    add_arguments(p)
    p.set_defaults(func=run)
