"""Benchmark: the per-seed-run time of :func:`fedtheory.simulation.simulate` as clients grow.

Setting: :func:`fedtheory.problems.random_quadratic` with N clients,
d = ``--dim`` (20), uniform participation of M per round, ``--rounds`` rounds, K = 3 local
steps, FedAvg and FOCUS (both take the participants-only paths on a quadratic), the default
metric recorded, in this process (``workers=1``). Settings (N, M): (160, 40), (1600, 400) and
(10000, 100).

Rows: ``default`` is ``simulate``'s default seed block
(:func:`fedtheory.simulation.runner.default_seed_block`); ``by state`` forces the earlier rule,
blocks of :data:`~fedtheory.simulation.runner.BLOCK_BYTES` per (block, N, d) array (1 seed at
N = 10,000). The two rows of a setting run interleaved, best of ``--repeat``; the load average
is printed (the machine is shared; the ratios are the comparable numbers). The two rows must
agree to 1e-12 relative (their blocks differ, so BLAS may round the last bits differently), or
the benchmark fails.

Target: the per-seed-run time at (1600, 400) at most 15x that at (160, 40) (linear in the
clients: 10x). Printed: that ratio per algorithm, and at (10000, 100) the time per round per
participant against (1600, 400)'s (the cost per round proportional to the participants: near 1)
with the run's memory estimate (:func:`fedtheory.simulation.runner.check_run_memory`) and this
process's peak resident memory; and, with M = 100 and blocks of 3 seeds fixed, the per-seed-run
time at N = 10,000 over N = 1,000 (1 when a round costs what its participants cost).

Run: ``.venv/bin/python benchmarks/bench_scaling.py [--rounds 100] [--seeds 32] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np

from fedtheory.problems import random_quadratic
from fedtheory.simulation import simulate
from fedtheory.simulation.runner import BLOCK_BYTES, default_seed_block

SETTINGS = ((160, 40), (1600, 400), (10000, 100))
TARGET = 15.0


def one(problem, alg: str, m: int, rounds: int, seeds: int, block: int | None):
    t0 = time.perf_counter()
    res = simulate(
        problem,
        alg,
        "uniform",
        clients_per_round=m,
        rounds=rounds,
        seeds=seeds,
        lr=0.05,
        local_steps=3,
        seed_block=block,
    )
    return time.perf_counter() - t0, res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=32)
    ap.add_argument("--dim", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--algorithms", nargs="+", default=["fedavg", "focus"])
    a = ap.parse_args(argv)
    print(
        f"bench_scaling: load average {os.getloadavg()[0]:.2f}; d = {a.dim}, R = {a.rounds}, "
        f"K = 3, {a.seeds} seeds, best of {a.repeat} interleaved repeats"
    )
    print(
        "| algorithm | N | M | block (default) | block (by state) | ms / seed-run default | "
        "ms / seed-run by state | by state / default |"
    )
    print("|---|---|---|---|---|---|---|---|")
    best: dict = {}
    ok = True
    for alg in a.algorithms:
        for n, m in SETTINGS:
            prob = random_quadratic(n, a.dim, seed=0)
            blocks = {"default": None, "by state": max(1, BLOCK_BYTES // (n * a.dim * 8))}
            times: dict = {k: [] for k in blocks}
            runs: dict = {}
            one(prob, alg, m, 2, 2, None)  # warm-up: imports, first-touch of the problem
            for _ in range(a.repeat):
                for k, blk in blocks.items():
                    t, runs[k] = one(prob, alg, m, a.rounds, a.seeds, blk)
                    times[k].append(t / a.seeds * 1e3)
            x, y = runs["default"].error, runs["by state"].error
            err = float(np.nanmax(np.abs(x - y)) / np.nanmax(np.abs(x)))
            ok &= err <= 1e-12
            d_ms, s_ms = min(times["default"]), min(times["by state"])
            best[alg, n] = d_ms
            dflt = default_seed_block(n, a.dim, 8, m)
            print(
                f"| {alg} | {n} | {m} | {dflt} | {blocks['by state']} | {d_ms:.1f} | "
                f"{s_ms:.1f} | {s_ms / d_ms:.2f}x |",
                flush=True,
            )
    print()
    for alg in a.algorithms:
        r = best[alg, 1600] / best[alg, 160]
        per_part = (best[alg, 10000] / 100) / (best[alg, 1600] / 400)
        print(
            f"- {alg}: (1600, 400) / (160, 40) per seed-run = {r:.1f}x, target <= {TARGET:.0f}x: "
            f"{'MET' if r <= TARGET else 'NOT MET'}; per round and participant, "
            f"(10000, 100) / (1600, 400) = {per_part:.2f}"
        )
    # Proportional to the participants: the same M = 100 and blocks of 3 seeds, ten times the
    # clients. 1 is a round's cost set by its participants alone, 10 by its clients.
    for alg in a.algorithms:
        per = {}
        for n in (1000, 10000):
            prob = random_quadratic(n, a.dim, seed=0)
            one(prob, alg, 100, 2, 2, 3)
            per[n] = min(one(prob, alg, 100, a.rounds, a.seeds, 3)[0] for _ in range(a.repeat))
        print(
            f"- {alg}: M = 100, blocks of 3 seeds: N = 10000 / N = 1000 per seed-run = "
            f"{per[10000] / per[1000]:.2f} (1: proportional to the participants, 10: to the "
            "clients)"
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"- peak resident memory of this process: {peak:.0f} MB")
    print(f"- every default row within 1e-12 of its by-state row: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
