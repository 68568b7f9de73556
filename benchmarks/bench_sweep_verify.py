"""Benchmark: what verifying a sweep store costs, against reading it once with xarray.

A resume and :func:`fedtheory.sweep.open` verify every task of the store (its flags, each
seed's checksum over its values, the metadata against a store made afresh from the spec). This
builds a store of ``--points`` grid points x ``--seeds`` seeds x ``--rounds`` rounds (one task
per grid point) with synthetic task results written by the driver's own writer (no simulation,
no Dask), then times, in turn and ``--repeat`` times each:

- ``verify``: :func:`fedtheory.sweep.check` (metadata, then every task);
- ``read``: ``xarray.open_zarr(store).load()`` (every variable, no verification).

It prints the median seconds of each, the store's size and the ratio verify / read (the cost of
a verified read is about 1 + that ratio reads). Timings on a shared machine are noisy: the load
average is printed.

Run: ``.venv/bin/python benchmarks/bench_sweep_verify.py [--points 400] [--seeds 20]
[--rounds 500] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import xarray as xr

from fedtheory.sweep import check, normalize
from fedtheory.sweep.store import SweepStore
from fedtheory.sweep.task import TaskResult


def build(path: Path, points: int, seeds: int, rounds: int) -> None:
    """A complete store of synthetic results (one task per grid point)."""
    spec = normalize(
        {
            "problem": "quadratic",
            "algorithm": "fedavg",
            "local_steps": 1,
            "lr": [1e-4 * (i + 1) for i in range(points)],
            "rounds": rounds,
            "seeds": seeds,
        }
    )
    rng = np.random.default_rng(0)
    with SweepStore.open_or_create(path, spec, 20) as st:
        for task in spec.tasks():
            n = len(task.seed_ids)
            st.write(
                task,
                TaskResult(
                    error=rng.random((n, rounds + 1)),
                    x_final=rng.random((n, 20)),
                    diverged=np.zeros(n, bool),
                    diverged_at=np.full(n, -1),
                    diverging=np.zeros(n, bool),
                    diverging_at=np.full(n, -1),
                    wall_time=0.0,
                ),
            )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=400)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        build(store, args.points, args.seeds, args.rounds)
        size = sum(p.stat().st_size for p in store.rglob("*") if p.is_file())
        times: dict[str, list[float]] = {"verify": [], "read": []}
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            report = check(store)
            times["verify"].append(time.perf_counter() - t0)
            assert report.complete, report.counts()
            t0 = time.perf_counter()
            xr.open_zarr(store).load()
            times["read"].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(
        f"store: {args.points} tasks x {args.seeds} seeds x {args.rounds + 1} rounds, "
        f"{size / 2**20:.1f} MiB on disk; load average {os.getloadavg()[0]:.2f}"
    )
    for k, v in med.items():
        print(f"{k:7s} median {v:.3f} s over {args.repeat}")
    print(f"verify / read: {med['verify'] / med['read']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
