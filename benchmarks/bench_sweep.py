"""Benchmark: a sweep of 24 tasks on a local Dask cluster against the same tasks in one process.

Setting: 003 Figure 4's least squares (:func:`fedtheory.problems.figure4_problem`, N = 16,
d = 50), uniform participation with M = 4, FOCUS, SCAFFOLD and FedAvg x lr in {1e-4, 3e-4} x
K in {1, 2, 4, 8} = 24 grid points, ``--seeds`` seeds each (one task per grid point),
``--rounds`` rounds.

Rows:

- ``one process``: :func:`fedtheory.sweep.task.run_task` on every task, one after the other, in
  this process (its BLAS threads as the environment sets them). Nothing is written.
- ``sweep``: :func:`fedtheory.sweep.run` on a local cluster of ``--workers`` worker processes
  (one BLAS thread each, :class:`fedtheory.sweep.Engine`) into a new store: cluster start-up,
  the tasks, every region written, the cluster closed.

The sweep's ``error`` must equal the one-process results to 1e-12 relative (the thread counts
may differ, so the last bits may), or the benchmark fails. The ratio printed is one-process
seconds over sweep seconds (above 1: the sweep is faster). On a shared machine the wall times
are noisy (the load average is printed), so the CPU seconds are printed too: of this process
for the one-process row, of the driver and of each worker for the sweep. The CPU-time ratio,
one-process CPU over (busiest worker's CPU + cluster start-up), is what the wall ratio would be
with a free core per process.

``fedtheory verify`` runs its claims in forked processes, not on this engine: its timings are
``benchmarks/bench_verify.py``'s.

Run: ``.venv/bin/python benchmarks/bench_sweep.py [--workers 2] [--rounds 3000] [--seeds 8]
[--json out.json]``
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from fedtheory.io import emit_json
from fedtheory.sweep import Engine, normalize, run_task
from fedtheory.sweep import open as open_sweep
from fedtheory.sweep import run as run_sweep


def make_spec(rounds: int, seeds: int) -> dict:
    return {
        "problem": "figure4",
        "participation": "uniform",
        "clients_per_round": 4,
        "algorithm": ["focus", "scaffold", "fedavg"],
        "lr": [1e-4, 3e-4],
        "local_steps": [1, 2, 4, 8],
        "rounds": rounds,
        "seeds": seeds,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3000)
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--json", default=None, help="also write the numbers as JSON")
    args = ap.parse_args(argv)

    load_start = os.getloadavg()
    blas_env = os.environ.get("OPENBLAS_NUM_THREADS", "unset")  # the one-process row's setting
    spec = normalize(make_spec(args.rounds, args.seeds))
    tasks = spec.tasks()
    assert len(tasks) == 24, len(tasks)

    t0, c0 = time.perf_counter(), time.process_time()
    serial = {t.index: run_task(t) for t in tasks}
    one_wall, one_cpu = time.perf_counter() - t0, time.process_time() - c0

    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "bench.zarr"
        t0, c0 = time.perf_counter(), time.process_time()
        with Engine(workers=args.workers) as engine:
            start_up = time.perf_counter() - t0
            before = engine.client.run(time.process_time)
            summary = run_sweep(spec, store, scheduler=engine.address, progress=False)
            after = engine.client.run(time.process_time)
        sweep_wall = time.perf_counter() - t0
        driver_cpu = time.process_time() - c0
        ds = open_sweep(store).load()
    if set(after) != set(before):
        print("a worker was restarted during the sweep: CPU times incomplete", file=sys.stderr)
        return 1
    worker_cpu = sorted(after[w] - before[w] for w in after)
    assert summary["tasks_run"] == len(tasks)

    for t in tasks:
        got = ds.error.isel(dict(zip(spec.swept, t.point, strict=True))).values
        ref = serial[t.index].error
        if not np.allclose(got, ref, rtol=1e-12, atol=0, equal_nan=True):
            print(f"MISMATCH at task {t.index} ({t.describe(spec)})", file=sys.stderr)
            return 1

    ratio = one_wall / sweep_wall
    cpu_ratio = one_cpu / (max(worker_cpu) + start_up)
    load_end = os.getloadavg()
    print(
        f"# {len(tasks)} tasks: figure4, 3 algorithms x 2 lr x 4 K, {args.seeds} seeds, "
        f"{args.rounds} rounds"
    )
    print(
        f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"OPENBLAS_NUM_THREADS={blas_env} for the one-process row"
    )
    print(
        "# load average (1/5/15 min): {} at start, {} at end".format(
            *("/".join(f"{x:.2f}" for x in la) for la in (load_start, load_end))
        )
    )
    print("| run | wall s | CPU s |")
    print("|---|---|---|")
    print(f"| one process | {one_wall:.2f} | {one_cpu:.2f} |")
    print(
        f"| sweep, {args.workers} workers: start-up + tasks + store (driver) | {sweep_wall:.2f} | "
        f"{driver_cpu:.2f} (driver), {' + '.join(f'{c:.2f}' for c in worker_cpu)} (workers) |"
    )
    print(f"  of which cluster start-up: {start_up:.2f} s wall")
    print(f"ratio one process / sweep, wall: {ratio:.2f}x")
    print(
        f"ratio in CPU time, one process / (busiest worker + start-up): {cpu_ratio:.2f}x "
        "(the wall ratio with a core per process)"
    )
    if args.json:
        emit_json(
            {
                "tasks": len(tasks),
                "workers": args.workers,
                "rounds": args.rounds,
                "seeds": args.seeds,
                "one_process_seconds": one_wall,
                "one_process_cpu_seconds": one_cpu,
                "sweep_seconds": sweep_wall,
                "sweep_start_up_seconds": start_up,
                "sweep_driver_cpu_seconds": driver_cpu,
                "sweep_worker_cpu_seconds": worker_cpu,
                "ratio": ratio,
                "cpu_ratio": cpu_ratio,
                "load_average_start": load_start,
                "load_average_end": load_end,
            },
            args.json,
        )
    return 0


if __name__ == "__main__":  # the local cluster's worker processes re-import this module
    sys.exit(main())
