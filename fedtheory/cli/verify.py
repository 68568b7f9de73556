"""``fedtheory verify``: run the claim catalog and print stated, measured and verdict per claim.

Exit status 0 when no claim crashed (whatever the verdicts; a claim not run because it needs
the thorough tier or a missing optional extra says so in its row), 1 when a claim crashed (a
crash is not a verdict), 2 for bad input such as an unknown claim id.
"""

from __future__ import annotations

import sys
import time
from contextlib import suppress
from pathlib import Path

from fedtheory.cli.common import add_json, add_parser, json_to_stdout, write_json
from fedtheory.errors import FedTheoryError
from fedtheory.io import check_output_dir, temporary_directory, write_atomic
from fedtheory.validation import check_int
from fedtheory.verify import FULL, QUICK, Context, select
from fedtheory.verify.report import (
    findings,
    format_table,
    summary,
    to_html,
    to_json,
    to_markdown,
)
from fedtheory.verify.runner import keep_requested, run_claims


def register(subparsers) -> None:
    p = add_parser(
        subparsers,
        "verify",
        help="check the papers' claims numerically (table of stated / measured / verdict)",
        description=(
            "Run the claim catalog (docs/claims.md): each claim's experiment, its stated and "
            "measured values and a verdict computed from the measurement (holds, fails, "
            "inconclusive, outside assumptions; measured, invariant, not stated apart from "
            "them; the JSON adds effect, "
            "seeds and test). A claim that needs the thorough tier or a missing optional "
            "extra is listed as not run, with the reason. Exit 0 when no claim crashed "
            "(whatever the verdicts), 1 when one crashed, 2 for bad input."
        ),
        examples=[
            "fedtheory verify",
            "fedtheory verify --only C1,F2 --json results.json",
            "fedtheory verify --full --html report.html",
            "fedtheory verify --workers 1",
            "fedtheory verify --markdown docs/verdicts.md",
        ],
    )
    p.add_argument("--full", action="store_true", help="thorough tier (default: quick tier)")
    p.add_argument(
        "--only", metavar="IDS", help="comma-separated claim ids, e.g. C1,F2 or C2/uniform"
    )
    add_json(p)
    p.add_argument("--html", metavar="OUT", help="write a self-contained HTML report")
    p.add_argument(
        "--markdown",
        metavar="OUT",
        help="also write the table as a Markdown page (how docs/verdicts.md is made)",
    )
    p.add_argument(
        "--figures-dir",
        metavar="DIR",
        help="where claims draw their figures (default with --html: next to the --json file "
        "as OUT-figures/, else a temporary folder, the figures being inlined in the HTML)",
    )
    p.add_argument("--seed", type=int, default=0, help="base seed of every experiment")
    p.add_argument("--list", action="store_true", help="list the claim ids and exit")
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="run N claims at once, each in a forked process, the longest first "
        "(the same results for any N); default: the cores this process may use; "
        "1: one after the other in this process",
    )
    where.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the claims as tasks on a running Dask scheduler (needs the "
        "'fedtheory[sweep]' extra)",
    )
    p.set_defaults(func=main)


def main(args) -> int:
    check_int("--seed", args.seed, minimum=0)
    if args.only is not None and not args.only.strip():  # select("") means every claim
        raise FedTheoryError("--only '' names no claim: give ids such as C1,F2 (see --list)")
    claims = select(args.only)
    if args.list:
        for c in claims:  # where a claim runs is said after its statement
            where = (" [--full]" if c.tier == FULL else "") + "".join(
                f" [needs {e}]" for e in c.needs
            )
            print(f"{c.id:4s} {c.source:28s} {c.stated}{where}")
        return 0
    if args.figures_dir:  # a bad folder is one line now, not every claim crashing when it draws
        check_output_dir(args.figures_dir)
    to_stdout = json_to_stdout(args)
    fig_dir = figures_folder(args)
    with temporary_directory("fedtheory-verify-") as scratch:  # always removed
        if fig_dir is None and args.html:  # inlined in the HTML; the JSON names none of them
            return _run(args, claims, scratch, to_stdout, kept=False)
        try:
            return _run(args, claims, fig_dir, to_stdout)
        finally:
            if fig_dir is not None and not args.figures_dir:
                with suppress(OSError):  # OUT-figures/ made for nothing: no claim drew
                    fig_dir.rmdir()  # only when empty


def figures_folder(args) -> Path | None:
    """Where the claims draw figures that outlive the run: ``--figures-dir``, or, with
    ``--html`` and ``--json OUT``, the folder ``OUT-figures`` next to the JSON (whose
    ``figure`` fields then name files that exist); None otherwise (no figures, or figures in a
    temporary folder that the HTML inlines)."""
    if args.figures_dir:
        return Path(args.figures_dir)
    if args.html and args.json not in (None, "-"):
        out = Path(args.json)
        return check_output_dir(out.with_name(out.stem + "-figures"))
    return None


def _check_regimes(only: str | None, results: list) -> None:
    """A regime asked for that its claim did not report in this run is bad input (an undeclared
    one, ``--only C2/bogus``, is refused before the run by :func:`fedtheory.verify.select`)."""
    asked = [n.strip().upper() for n in (only or "").split(",") if "/" in n]
    found = {r.id.upper() for r in results}
    crashed = {r.id.upper() for r in results if not r.ran}  # a crash has no regimes to check
    unknown = [n for n in asked if n not in found and n.split("/")[0] not in crashed]
    if unknown:
        claim = unknown[0].split("/")[0]
        regimes = sorted(r.id for r in results if r.id.upper().startswith(claim + "/"))
        raise FedTheoryError(
            f"unknown regime {', '.join(unknown)}: {claim} reports "
            f"{', '.join(regimes) or 'no regimes'}"
        )


def _run(args, claims, fig_dir, to_stdout: bool, *, kept: bool = True) -> int:
    """Run the claims, print the table, write the JSON and HTML; the exit status (``kept``:
    the figures outlive the run, else the JSON's ``figure`` fields are null)."""
    ctx = Context(
        tier=FULL if args.full else QUICK,
        seed=args.seed,
        figure_dir=Path(fig_dir) if fig_dir else None,
    )
    t0 = time.perf_counter()
    # progress goes to stderr in every case (stdout may carry the JSON)
    ran = run_claims(claims, ctx, workers=args.workers, scheduler=args.scheduler)
    _check_regimes(args.only, ran)
    results = keep_requested(ran, args.only)
    seconds = time.perf_counter() - t0
    out = sys.stderr if to_stdout else sys.stdout
    if not to_stdout:  # the findings first, then the full table, the count again at its end
        print(findings(results, seconds=seconds, tier=ctx.tier), file=out)
        print(f"\nThe full table ({len(results)} results):\n", file=out)
        print(format_table(results), file=out)
        print(f"\n{len(results)} results in {seconds:.1f} s ({ctx.tier} tier): {summary(results)}")
    report = to_json(results, tier=ctx.tier, seed=ctx.seed, seconds=seconds)
    if not kept:  # never a path that is deleted when the command ends
        for r in report["results"]:
            r["figure"] = None
    write_json(report, args)
    if args.html:
        write_atomic(args.html, to_html(results, tier=ctx.tier, seconds=seconds))
    if args.markdown:
        write_atomic(args.markdown, to_markdown(results, tier=ctx.tier, seconds=seconds))
    crashed = [r for r in results if r.crashed]  # skipped claims (tier, extra) are not errors
    for r in crashed:
        first = (r.error or "").splitlines()[0] if r.error else "unknown error"
        print(f"fedtheory: error: claim {r.id} could not run: {first}", file=sys.stderr)
    return 1 if crashed else 0
