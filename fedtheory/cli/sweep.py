"""``fedtheory sweep``: a grid of simulations as Dask tasks in a resumable Zarr store.

Contract::

    fedtheory sweep SPEC.toml --store DIR [--workers N | --scheduler ADDRESS] [--json OUT|-]

runs every task of the spec (grid point x block of seeds) not yet complete in ``DIR`` and writes
a summary with at least ``tasks_total``, ``tasks_skipped``, ``tasks_run``, ``store`` and
``seconds``. Running the same command again resumes; a store made from another spec, a bad
spec, an unwritable store or a full disk is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
from typing import Any

from fedtheory.cli.common import add_json, add_parser, json_to_stdout, write_json
from fedtheory.sweep import run as run_sweep
from fedtheory.sweep.spec import KEYS
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
            "opens it: error with one dimension per swept key plus seed and round, x_final,\n"
            "diverged. Running the same command on the same store skips the complete tasks.\n\n"
            + SPEC_EXAMPLE.format(keys=", ".join(KEYS))
        ),
        examples=[
            "fedtheory sweep focus_vs_scaffold.toml --store runs/fvs --workers 8",
            "fedtheory sweep focus_vs_scaffold.toml --store runs/fvs --scheduler "
            "tcp://head:8786 --json -",
            "python -c \"import xarray; print(xarray.open_zarr('runs/fvs').error)\"",
        ],
    )
    p.add_argument("spec", metavar="SPEC.toml", help="the sweep spec")
    p.add_argument("--store", metavar="DIR", required=True, help="Zarr store directory")
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--workers",
        type=int,
        metavar="N",
        default=available_cores(),
        help="local Dask worker processes, one BLAS thread each (default: the cores available, "
        f"{available_cores()} here)",
    )
    where.add_argument(
        "--scheduler", metavar="ADDRESS", default=None, help="a running Dask scheduler's address"
    )
    add_json(p, "the summary")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    summary = run_sweep(
        args.spec,
        args.store,
        workers=None if args.scheduler else args.workers,
        scheduler=args.scheduler,
        progress=not args.no_progress,
    )
    write_json(summary, args)
    if json_to_stdout(args):
        return 0
    dims = ", ".join(f"{k}={v}" for k, v in summary["dims"].items())
    print(
        f"sweep: {summary['tasks_total']} tasks, {summary['tasks_skipped']} already in the store, "
        f"{summary['tasks_run']} run in {summary['seconds']:.1f} s"
        + (f" on a {summary['engine']}" if summary["engine"] else "")
    )
    print(f"store: {summary['store']} ({dims}; {summary['seeds_diverged']} seeds diverged)")
    print(f"open it with xarray.open_zarr({summary['store']!r}) or fedtheory.sweep.open(...)")
    return 0
