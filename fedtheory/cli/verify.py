"""``fedtheory verify``: run the claim catalog and print stated, measured and verdict per claim.

Exit status 0 when every claim ran (whatever its verdict), 1 when a claim crashed (a crash is
not a verdict), 2 for bad input such as an unknown claim id.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from fedtheory.cli.common import add_json, add_parser, json_to_stdout, write_json
from fedtheory.errors import FedTheoryError
from fedtheory.io import write_atomic
from fedtheory.validation import check_int
from fedtheory.verify import FULL, QUICK, Context, select
from fedtheory.verify.report import format_table, summary, to_html, to_json
from fedtheory.verify.runner import keep_requested, run_claims


def register(subparsers) -> None:
    p = add_parser(
        subparsers,
        "verify",
        help="check the papers' claims numerically (table of stated / measured / verdict)",
        description=(
            "Run the claim catalog (docs/claims.md): each claim's experiment, its stated and "
            "measured values and a verdict computed from the measurement (holds, fails, "
            "inconclusive, outside assumptions, invariant, not stated; the JSON adds effect, "
            "seeds and test). Exit 0 when every claim ran (whatever its verdict), 1 when one "
            "crashed, 2 for bad input."
        ),
        examples=[
            "fedtheory verify",
            "fedtheory verify --only C1,F2 --json results.json",
            "fedtheory verify --full --html report.html",
        ],
    )
    p.add_argument("--full", action="store_true", help="thorough tier (default: quick tier)")
    p.add_argument(
        "--only", metavar="IDS", help="comma-separated claim ids, e.g. C1,F2 or C2/uniform"
    )
    add_json(p)
    p.add_argument("--html", metavar="OUT", help="write a self-contained HTML report")
    p.add_argument(
        "--figures-dir",
        metavar="DIR",
        help="where claims draw their figures (default: a temporary folder when --html is given)",
    )
    p.add_argument("--seed", type=int, default=0, help="base seed of every experiment")
    p.add_argument("--list", action="store_true", help="list the claim ids and exit")
    p.set_defaults(func=main)


def _check_output_dir(path: str) -> None:
    """A figure folder must exist or be creatable, and be writable: say so now, in one line,
    rather than as every claim crashing when it draws."""
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FedTheoryError(f"--figures-dir {path}: cannot create it ({exc.strerror})") from None
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise FedTheoryError(f"--figures-dir {path}: not a writable folder")


def main(args) -> int:
    check_int("--seed", args.seed, minimum=0)
    claims = select(args.only)
    if args.list:
        for c in claims:
            print(f"{c.id:4s} {c.source:28s} {c.stated}")
        return 0
    if args.figures_dir:
        _check_output_dir(args.figures_dir)
    to_stdout = json_to_stdout(args)
    with tempfile.TemporaryDirectory(prefix="fedtheory-verify-") as scratch:  # always removed
        fig_dir = args.figures_dir or (scratch if args.html else None)
        return _run(args, claims, fig_dir, to_stdout)


def _run(args, claims, fig_dir, to_stdout: bool) -> int:
    """Run the claims, print the table, write the JSON and HTML; the exit status."""
    ctx = Context(
        tier=FULL if args.full else QUICK,
        seed=args.seed,
        figure_dir=Path(fig_dir) if fig_dir else None,
    )
    t0 = time.perf_counter()
    results = keep_requested(run_claims(claims, ctx, quiet=to_stdout), args.only)
    seconds = time.perf_counter() - t0
    out = sys.stderr if to_stdout else sys.stdout
    if not to_stdout:
        print(format_table(results), file=out)
        print(f"\n{len(results)} results in {seconds:.1f} s ({ctx.tier} tier): {summary(results)}")
    write_json(to_json(results), args)
    if args.html:
        write_atomic(args.html, to_html(results, tier=ctx.tier, seconds=seconds))
    crashed = [r for r in results if not r.ran]
    for r in crashed:
        first = (r.error or "").splitlines()[0] if r.error else "unknown error"
        print(f"fedtheory: error: claim {r.id} could not run: {first}", file=sys.stderr)
    return 1 if crashed else 0
