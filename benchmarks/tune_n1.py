"""Tune N1's hyper-parameters on seeds disjoint from every evaluation seed (issue 12, point 6).

Claim N1 (``fedtheory verify``), the figure ``nn_n1`` and the README evaluate FedAvg,
FedAMSGrad, AFGA and CAFGA at root seed 0 (seed ids 0, 1, ...; the data partition and the
initial networks also come from the root). This script tunes each algorithm at another root,
:data:`fedtheory.experiments.n1.N1_TUNING_SEED`, so that no draw of the evaluation (partition,
initial network, participation, minibatches) is seen while tuning.

Every algorithm gets the same budget: 12 configurations of (local step ``lr``, server step
``global_lr``), each trained for R = 100 rounds (K = 10, batch 50, the N1 setting) on
:data:`~fedtheory.experiments.n1.N1_TUNING_SEEDS` seeds of the tuning root. The criterion is
the mean final test accuracy over those seeds (ties: the first in grid order). The chosen
values are then written by hand into ``N1_DEFAULTS`` with this script's table in its comment.

Usage: ``python benchmarks/tune_n1.py [--json OUT]`` (about 10 minutes of CPU time).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time

from fedtheory.experiments.n1 import N1_ALGORITHMS, N1_TUNING_SEED, N1_TUNING_SEEDS, run_n1
from fedtheory.io import emit_json

#: The grid: 12 configurations per algorithm (the same budget for each).
GRID: dict[str, list[dict]] = {
    "fedavg": [
        {"lr": lr, "global_lr": g}
        for lr, g in itertools.product((0.1, 0.2, 0.3, 0.5, 0.7, 1.0), (0.5, 1.0))
    ],
    **{
        name: [
            {"lr": lr, "global_lr": g}
            for lr, g in itertools.product((0.1, 0.3, 1.0), (0.003, 0.01, 0.03, 0.1))
        ]
        for name in ("fedamsgrad", "afga", "cafga")
    },
}


def tune(rounds: int = 100) -> dict:
    """Every configuration's mean final test accuracy at the tuning root, and the best."""
    out: dict = {"seed": N1_TUNING_SEED, "seeds": N1_TUNING_SEEDS, "rounds": rounds, "runs": {}}
    for name in N1_ALGORITHMS:
        rows = []
        for cfg in GRID[name]:
            t0 = time.perf_counter()
            res = run_n1([name], rounds=rounds, seeds=N1_TUNING_SEEDS, seed=N1_TUNING_SEED,
                         hyper={name: cfg})  # fmt: skip
            (s,) = res.summary().values()
            rows.append({**cfg, "mean": s["mean"], "std": s["std"]})
            print(f"{name:11s} lr {cfg['lr']:<5g} global_lr {cfg['global_lr']:<6g} "
                  f"accuracy {s['mean']:.4f} +- {s['std']:.4f} ({time.perf_counter() - t0:.0f} s)",
                  file=sys.stderr, flush=True)  # fmt: skip
        best = max(rows, key=lambda r: r["mean"])  # max keeps the first of equal means
        out["runs"][name] = {"grid": rows, "best": best}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="OUT", help="write every configuration's result")
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args(argv)
    result = tune(args.rounds)
    for name, r in result["runs"].items():
        b = r["best"]
        print(f"{name}: lr {b['lr']}, global_lr {b['global_lr']} -> {b['mean']:.4f}")
    if args.json:
        emit_json(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
