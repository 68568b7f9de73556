"""Benchmark: `fedtheory bound` searches and the exact rates behind them (issue 21).

Measured, with the load average beside every number:

1. the default search (200 random draws + 50 refinement evaluations) of a FOCUS bound under
   Bernoulli participation with N <= 8, d <= 4, K <= 3 (the issue's sizes), on two worker
   processes (target <= 60 s);
2. one small instance's exact mean-square rate (FOCUS, N = 4, d = 3, K = 2, uniform 2 of 4), in
   milliseconds (median of 20);
3. the exact mean-square rate of FOCUS on 003 Figure 4 under uniform 4/16 at eta = 1.5e-4
   (target <= 30 s; known value 0.8244) with the environment's BLAS threads set to 1 and to 2
   (the oracle pins BLAS to one thread inside, so the two must not differ beyond noise);
   ``--all`` adds the weighted 4/16 rate at eta = 1e-4 (known value 0.9475).

Each timing runs in a fresh interpreter with ``OPENBLAS_NUM_THREADS`` set, so imports and caches
are the same for both sides.

Run: ``.venv/bin/python benchmarks/bench_bounds.py [--skip-figure4] [--all] [--json out.json]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

SEARCH_SPEC = {
    "algorithm": "focus", "participation": "bernoulli", "clients": [4, 6, 8],
    "local_steps": [1, 2, 3], "lr": "1/(4*K*N*L)", "quantity": "mean_square_rate",
    "bound": "1 - eta*mu_f*K*N/2",
    "class": {"dim": [2, 3, 4], "L": 10.0, "mu": 1.0, "p_range": [0.05, 1.0]},
}  # fmt: skip

_SEARCH = """
import json, time, sys
from fedtheory.bounds import check
t = time.perf_counter()
r = check(json.loads(sys.argv[1]), search=200, seed=0)
print(json.dumps({"seconds": time.perf_counter() - t, "draws": r.search["draws"],
                  "refined": r.search["refined"], "violated": r.violated,
                  "worst_ratio": r.worst.ratio}))
"""
_SMALL = """
import json, time, statistics
from fedtheory.analysis.exact import exact_rates
from fedtheory.participation import make_participation
from fedtheory.problems import random_quadratic
prob = random_quadratic(4, 3, seed=0)
m = make_participation("uniform", 4, 2)
exact_rates(prob, "focus", m, lr=0.05, local_steps=2)
ts = []
for _ in range(20):
    t = time.perf_counter()
    r = exact_rates(prob, "focus", m, lr=0.05, local_steps=2)
    ts.append(time.perf_counter() - t)
print(json.dumps({"ms": 1000 * statistics.median(ts), "rate": r.mean_square_rate}))
"""
_FIG4 = """
import json, time, sys
from fedtheory.experiments.figure4 import exact_figure4
t = time.perf_counter()
r = exact_figure4("focus", sys.argv[1], float(sys.argv[2]), mean_square="operator", tol=1e-10)
print(json.dumps({"seconds": time.perf_counter() - t, "rate": r.mean_square_rate,
                  "method": r.methods["mean-square rate"]}))
"""


def _run(code: str, *args: str, threads: str = "1") -> dict:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": threads, "FEDTHEORY_NO_PROGRESS": "1"}
    load = os.getloadavg()[0]
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, check=True,
                         capture_output=True, text=True).stdout  # fmt: skip
    res = json.loads(out.strip().splitlines()[-1])
    res.update(load_before=load, load_after=os.getloadavg()[0], blas_threads=threads)
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skip-figure4", action="store_true", help="skip the Figure 4 rates")
    ap.add_argument("--all", action="store_true", help="also Figure 4's weighted rate")
    ap.add_argument("--json", default=None, help="also write the numbers as JSON")
    args = ap.parse_args(argv)
    out: dict = {}
    t0 = time.perf_counter()
    s = _run(_SEARCH, json.dumps(SEARCH_SPEC))
    out["search"] = s
    print(f"default search, FOCUS Bernoulli N<=8 d<=4 K<=3: {s['seconds']:.1f} s for "
          f"{s['draws']} draws + {s['refined']} refined (target <= 60 s: "
          f"{'PASS' if s['seconds'] <= 60 else 'FAIL'}); violated {s['violated']}, worst ratio "
          f"{s['worst_ratio']:.4g} [load {s['load_before']:.2f} -> {s['load_after']:.2f}]")  # fmt: skip
    sm = _run(_SMALL)
    out["small"] = sm
    print(f"one small instance (FOCUS N=4 d=3 K=2 uniform 2/4): {sm['ms']:.1f} ms "
          f"[load {sm['load_before']:.2f}]")  # fmt: skip
    if not args.skip_figure4:
        cases = [("uniform", "1.5e-4", 0.8244)]
        if args.all:
            cases.append(("weighted", "1e-4", 0.9475))
        for regime, eta, known in cases:
            for threads in ("1", "2"):
                f = _run(_FIG4, regime, eta, threads=threads)
                out[f"figure4_{regime}_threads{threads}"] = f
                print(f"Figure 4 FOCUS {regime} eta {eta}, OPENBLAS_NUM_THREADS={threads}: "
                      f"{f['seconds']:.1f} s, rate {f['rate']:.6f} (known {known}: "
                      f"{'ok' if round(f['rate'], 4) == known else 'DIFFERS'}; target <= 30 s: "
                      f"{'PASS' if f['seconds'] <= 30 else 'FAIL'}) [load "
                      f"{f['load_before']:.2f} -> {f['load_after']:.2f}]")  # fmt: skip
    out["total_seconds"] = time.perf_counter() - t0
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
