"""``fedtheory sweep``: a grid of simulations as Dask tasks in a resumable Zarr store.

Contract::

    fedtheory sweep SPEC.toml --store DIR [--workers N | --scheduler ADDRESS] [--json OUT|-]
    fedtheory sweep --check DIR [--json OUT|-]

runs every task of the spec (grid point x block of seeds) not yet complete and intact in ``DIR``
(a store made from a spec that this one extends grows: more seeds, values appended to an axis)
and writes a summary with at least ``tasks_total``, ``tasks_skipped``, ``tasks_run``,
``tasks_repaired``, ``store`` and ``seconds``. Running the same command again resumes, and runs
damaged tasks again. A store made from another spec or in use by another driver, a bad spec, a
sweep beyond ``--max-tasks`` or ``--max-memory``, an unwritable store or a full disk is one line
on stderr and exit status 2.

``--check DIR`` reports the state of every task (complete, incomplete, damaged and why) and of
the store's metadata, running nothing: exit 0 when every task is complete and intact, 1 when
some are incomplete or damaged (running the sweep again repairs them), 2 when ``DIR`` is not a
readable sweep store.
"""

from __future__ import annotations

import argparse
from typing import Any

from fedtheory.cli.common import (
    add_json,
    add_max_memory,
    add_parser,
    human_stream,
    json_to_stdout,
    write_json,
)
from fedtheory.errors import FedTheoryError
from fedtheory.sweep import check as check_store
from fedtheory.sweep import run as run_sweep
from fedtheory.sweep.spec import KEYS, TABLES
from fedtheory.sweep.store import MAX_TASKS
from fedtheory.validation import available_cores

#: An example spec for ``--help`` (every key given as a list is swept).
SPEC_EXAMPLE = """\
spec (keys mirror fedtheory simulate's flags; every key given as a list is swept):

    # focus_vs_scaffold.toml
    problem = "figure4"
    algorithm = ["focus", "scaffold", "fedavg"]
    participation = "uniform"
    clients_per_round = 4
    lr = [5e-5, 1e-4, 2e-4]
    local_steps = [1, 3]
    rounds = 500
    seeds = 20
    seed_block = 10

Settings of one algorithm only, and values that go in pairs (see docs/sweeps.md):

    [algorithms.focus]          # one axis, run: FOCUS once, FedAdam at each global_lr
    [algorithms.fedadam]
    global_lr = [0.1, 0.01]

    [zip]                       # one axis, zip: (2e-4, 1), (1e-4, 3), not their product
    lr = [2e-4, 1e-4]
    local_steps = [1, 3]

The same spec with more seeds (same seed_block) or values appended to an axis extends its
store: only the new tasks run. Every problem of a spec is reported at once.

On a Slurm cluster, start workers with dask_jobqueue.SLURMCluster (pip install dask-jobqueue)
and pass its scheduler_address as --scheduler. Keys: {keys}
"""


def register(subparsers: Any) -> None:
    p = add_parser(
        subparsers,
        "sweep",
        help="run a grid of simulations on Dask into a resumable Zarr store",
        description=(
            "Run every grid point x block of seeds of a TOML sweep spec as a Dask task and\n"
            "write each task's region of a Zarr store as it finishes. xarray.open_zarr(DIR)\n"
            "opens it: error with one dimension per axis plus seed and round, x_final,\n"
            "diverged. Running the same command on the same store skips the complete tasks and\n"
            "runs damaged ones again (every task carries checksums); one driver per store.\n"
            "--check DIR reports every task's state without running anything.\n\n"
            + SPEC_EXAMPLE.format(keys=", ".join((*KEYS, *TABLES)))
        ),
        examples=[
            "fedtheory sweep focus_vs_scaffold.toml --store runs/fvs --workers 8",
            "fedtheory sweep focus_vs_scaffold.toml --store runs/fvs --scheduler "
            "tcp://head:8786 --json -",
            "fedtheory sweep --check runs/fvs",
            "python -c \"import fedtheory.sweep; print(fedtheory.sweep.open('runs/fvs').error)\"",
        ],
    )
    p.add_argument("spec", metavar="SPEC.toml", nargs="?", help="the sweep spec")
    p.add_argument("--store", metavar="DIR", help="Zarr store directory (required with SPEC)")
    p.add_argument(
        "--check",
        metavar="DIR",
        default=None,
        help="report the state of every task of the store DIR; run nothing",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--workers",
        type=int,
        metavar="N",
        default=None,  # None, not the core count: argparse would take "--workers 2" for unset
        help="local Dask worker processes, one BLAS thread each (default: the cores available, "
        f"{available_cores()} here)",
    )
    where.add_argument(
        "--scheduler", metavar="ADDRESS", default=None, help="a running Dask scheduler's address"
    )
    p.add_argument(
        "--max-tasks",
        type=int,
        metavar="N",
        default=MAX_TASKS,
        help="refuse a sweep of more tasks (each costs Dask driver memory and time, "
        "and the store files)",
    )
    add_max_memory(p)
    add_json(p, "the summary")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def check(args: argparse.Namespace) -> int:
    """``--check DIR``: every task's state; exit 0 complete and intact, 1 otherwise."""
    given = [
        f
        for f, v in (
            ("SPEC", args.spec),
            ("--store", args.store),
            ("--workers", args.workers),
            ("--scheduler", args.scheduler),
        )
        if v
    ]
    if given:
        raise FedTheoryError(
            f"--check reads the store's own spec and runs nothing: leave out {', '.join(given)}"
        )
    report = check_store(args.check)
    out = report.to_dict()
    write_json(out, args)
    stream = human_stream(args)
    if report.problem or report.metadata:
        what = report.problem or "damaged metadata or coordinates: " + ", ".join(report.metadata)
        print(f"store: {out['store']}: {what}; the tasks were not verified", file=stream)
        print(
            "running the sweep again on it (same spec) repairs damaged metadata that still "
            "names its spec",
            file=stream,
        )
        return 1
    counts = report.counts()
    print(
        f"store: {out['store']}: {len(report.tasks)} tasks, {counts['complete']} complete, "
        f"{counts['incomplete']} incomplete, {counts['damaged']} damaged",
        file=stream,
    )
    for t in report.tasks:
        if t.state != "complete":
            why = f": {t.reason}" if t.reason else ""
            print(f"  task {t.index} ({t.task}): {t.state}{why}", file=stream)
    if not report.complete:
        print("running the sweep again on it (same spec) runs these tasks", file=stream)
    return 0 if report.complete else 1


def run(args: argparse.Namespace) -> int:
    if args.check is not None:
        return check(args)
    if args.spec is None or args.store is None:
        raise FedTheoryError(
            "give SPEC.toml and --store DIR (or --check DIR); see fedtheory sweep --help"
        )
    summary = run_sweep(
        args.spec,
        args.store,
        workers=None if args.scheduler else args.workers,
        scheduler=args.scheduler,
        progress=not args.no_progress,
        max_tasks=args.max_tasks,
    )
    write_json(summary, args)
    if json_to_stdout(args):
        return 0
    dims = ", ".join(f"{k}={v}" for k, v in summary["dims"].items())
    print(
        f"sweep: {summary['tasks_total']} tasks, {summary['tasks_skipped']} already in the store, "
        f"{summary['tasks_run']} run in {summary['seconds']:.1f} s"
        + (f" on a {summary['engine']}" if summary["engine"] else "")
        + (
            f" ({summary['tasks_repaired']} damaged, run again)"
            if summary["tasks_repaired"]
            else ""
        )
    )
    if summary["extended"]:
        print(f"store grew: {', '.join(summary['extended'])} (only the new tasks ran)")
    growing = summary["seeds_diverging"]
    print(
        f"store: {summary['store']} ({dims}; {summary['seeds_diverged']} seeds diverged"
        + (f", {growing} diverging" if growing else "")
        + ")"
    )
    for name in summary["probabilities_from_problem"]:
        print(f"p: the problem's own ({name}) where the participation model takes draw weights")
    print(f"open it with xarray.open_zarr({summary['store']!r}) or fedtheory.sweep.open(...)")
    return 0
