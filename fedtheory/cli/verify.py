"""``fedtheory verify``: run the claim catalog and print stated, measured and verdict per claim.

Exit status 0 when every claim ran (whatever its verdict), 1 when a claim crashed (a crash is
not a verdict), 2 for bad input such as an unknown claim id.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from fedtheory.io import emit_json, write_atomic
from fedtheory.verify import FULL, QUICK, Context, select
from fedtheory.verify.report import format_table, summary, to_html, to_json
from fedtheory.verify.runner import keep_requested, run_claims


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "verify",
        help="check the papers' claims numerically (table of stated / measured / verdict)",
        description=(
            "Run the claim catalog (docs/claims.md): each claim's experiment, its stated and "
            "measured values and a verdict: holds, fails, outside assumptions or not yet "
            "checkable. Exit 0 when every claim ran, 1 when one crashed."
        ),
    )
    p.add_argument("--full", action="store_true", help="thorough tier (default: quick tier)")
    p.add_argument(
        "--only", metavar="IDS", help="comma-separated claim ids, e.g. C1,F2 or C2/uniform"
    )
    p.add_argument("--json", metavar="OUT", help="write the results as JSON ('-' for stdout)")
    p.add_argument("--html", metavar="OUT", help="write a self-contained HTML report")
    p.add_argument(
        "--figures-dir",
        metavar="DIR",
        help="where claims draw their figures (default: a temporary folder when --html is given)",
    )
    p.add_argument("--seed", type=int, default=0, help="base seed of every experiment (default 0)")
    p.add_argument("--list", action="store_true", help="list the claim ids and exit")
    p.set_defaults(func=main)


def main(args) -> int:

    claims = select(args.only)
    if args.list:
        for c in claims:
            print(f"{c.id:4s} {c.source:28s} {c.stated}")
        return 0
    to_stdout = args.json == "-"
    fig_dir = args.figures_dir
    if fig_dir is None and args.html:
        fig_dir = tempfile.mkdtemp(prefix="fedtheory-verify-")
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
    if args.json:
        emit_json(to_json(results), args.json)
    if args.html:
        write_atomic(args.html, to_html(results, tier=ctx.tier, seconds=seconds))
    crashed = [r for r in results if not r.ran]
    for r in crashed:
        first = (r.error or "").splitlines()[0] if r.error else "unknown error"
        print(f"fedtheory: error: claim {r.id} could not run: {first}", file=sys.stderr)
    return 1 if crashed else 0
