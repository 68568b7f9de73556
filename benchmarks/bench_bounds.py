"""Benchmark: `fedtheory bound` searches and the exact rates behind them.

Measured, with the load average beside every number; every timing runs in a fresh interpreter
(``OPENBLAS_NUM_THREADS`` set), and CPU seconds are the children's user + system time
(``resource.getrusage``: the search's worker processes included):

1. ``--paper``: the default search on a class the size of 003 Figure 4 (``focus-thm1-rate`` with
   N = 16, M = 4, d = 10), in CPU seconds (target <= 60 s); with ``--vs DIR`` the same command in
   another checkout (a worktree of the tree before the change: ``git worktree add /tmp/base
   156d184``) right after, and the ratio of the two;
2. ``--corners``: the two corner cases of tests/bounds/test_search.py at seeds 0-9 (gradient
   descent at eta = 1.005/L_f against (1 - eta mu_f)^2, false only for kappa_f in (1, 1.01);
   FOCUS's 1 - 0.06 eta mu_f K N, false only where a rare client's spectrum is at L): found at
   how many seeds, and the CPU seconds per check; with ``--vs DIR`` the same checks there;
3. the default search of a FOCUS bound under Bernoulli participation with N <= 8, d <= 4,
   K <= 3 (target <= 60 s), one small instance's exact mean-square rate (median of 20), and
   003 Figure 4's FOCUS uniform 4/16 rate at eta = 1.5e-4 with one and two BLAS threads
   (``--skip-figure4`` leaves it out; ``--all`` adds weighted 4/16 at 1e-4).

Run: ``.venv/bin/python benchmarks/bench_bounds.py [--paper] [--corners] [--vs DIR]
[--skip-figure4] [--all] [--json out.json]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

SEARCH_SPEC = {
    "algorithm": "focus",
    "participation": "bernoulli",
    "clients": [4, 6, 8],
    "local_steps": [1, 2, 3],
    "lr": "1/(4*K*N*L)",
    "quantity": "mean_square_rate",
    "bound": "1 - eta*mu_f*K*N/2",
    "class": {"dim": [2, 3, 4], "L": 10.0, "mu": 1.0, "p_range": [0.05, 1.0]},
}
#: The shipped FOCUS shape on a class the size of Figure 4 (issue 37's measurement).
PAPER_CHANGES = {"clients": 16, "clients_per_round": 4, "class": {"dim": 10, "L": 4.05, "mu": 1.0}}
#: The corner cases of tests/bounds/test_search.py (CORNER_GD, CORNER_RARE).
CORNERS = {
    "gd-1.005": {
        "algorithm": "fedavg",
        "participation": "full",
        "clients": 4,
        "local_steps": 1,
        "lr": "1.005/L_f",
        "quantity": "mean_square_rate",
        "bound": "(1 - eta*mu_f)**2",
        "class": {"dim": 3, "L": 10.0, "mu": 1.0},
    },
    "rare-extreme": {
        "algorithm": "focus",
        "participation": "bernoulli",
        "clients": [4, 5, 6],
        "local_steps": [1, 2],
        "lr": "1/(4*K*N*L)",
        "quantity": "mean_square_rate",
        "bound": "1 - 0.06*eta*mu_f*K*N",
        "class": {"dim": [2, 3], "L": 10.0, "mu": 1.0, "p_range": [0.05, 1.0]},
    },
}

_SEARCH = """
import json, time, sys
from fedtheory.bounds import check
t = time.perf_counter()
r = check(json.loads(sys.argv[1]), seed=int(sys.argv[2]))
w = r.worst
print(json.dumps({"seconds": time.perf_counter() - t, "draws": r.search["draws"],
                  "refined": r.search["refined"], "violated": r.violated,
                  "worst_ratio": None if w is None else w.ratio,
                  "implied": None if r.implied is None else r.implied["value"],
                  "instances": len(r.instances)}))
"""
_PAPER = """
import json, sys, time
from fedtheory.bounds import check, load_spec, paper_bounds
spec = {**load_spec(paper_bounds()["focus-thm1-rate"]).to_dict(), **json.loads(sys.argv[1])}
t = time.perf_counter()
r = check(spec, seed=0)
print(json.dumps({"seconds": time.perf_counter() - t, "instances": len(r.instances),
                  "implied": r.implied["value"], "search": {k: v for k, v in r.search.items()
                                                             if k != "plan"}}))
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


def _run(code: str, *args: str, threads: str = "1", tree: str | None = None) -> dict:
    """Run ``code`` in a fresh interpreter (``tree``: with that checkout first on the path)."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": threads, "FEDTHEORY_NO_PROGRESS": "1"}
    if tree is not None:
        env["PYTHONPATH"] = os.path.abspath(tree)
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        cwd=tree or None,
    ).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = json.loads(out.strip().splitlines()[-1])
    res.update(
        load_before=load,
        load_after=os.getloadavg()[0],
        blas_threads=threads,
        cpu=after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime,
    )
    return res


def _paper(vs: str | None) -> dict:
    arg = json.dumps(PAPER_CHANGES)
    out = {"this": _run(_PAPER, arg)}
    if vs:
        out["baseline"] = _run(_PAPER, arg, tree=vs)
    a = out["this"]
    print(
        f"default search, focus-thm1-rate at N=16 M=4 d=10: {a['cpu']:.1f} s CPU, "
        f"{a['seconds']:.1f} s wall, {a['instances']} instances, implied c {a['implied']:.4g} "
        f"(target <= 60 s CPU: {'PASS' if a['cpu'] <= 60 else 'FAIL'}) "
        f"[load {a['load_before']:.2f} -> {a['load_after']:.2f}]"
    )
    if vs:
        b = out["baseline"]
        print(
            f"  baseline {vs}: {b['cpu']:.1f} s CPU, {b['seconds']:.1f} s wall, "
            f"{b['instances']} instances, implied c {b['implied']:.4g}; CPU ratio this / "
            f"baseline {a['cpu'] / b['cpu']:.2f} [load {b['load_before']:.2f}]"
        )
    return out


def _corners(vs: str | None) -> dict:
    out: dict = {}
    for tree in [None, vs] if vs else [None]:
        side = "this" if tree is None else "baseline"
        for name, spec in CORNERS.items():
            runs = [_run(_SEARCH, json.dumps(spec), str(seed), tree=tree) for seed in range(10)]
            found = sum(r["violated"] for r in runs)
            cpu = [r["cpu"] for r in runs]
            out[f"{side}:{name}"] = {"found": found, "cpu": cpu, "runs": runs}
            print(
                f"{side} corner {name}: violation found at {found} of seeds 0-9; CPU per "
                f"check {min(cpu):.1f}-{max(cpu):.1f} s (median {sorted(cpu)[5]:.1f}) [load "
                f"{runs[0]['load_before']:.2f} -> {runs[-1]['load_after']:.2f}]"
            )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--paper", action="store_true", help="the default search on the N=16, M=4, d=10 FOCUS class"
    )
    ap.add_argument("--corners", action="store_true", help="the corner cases at seeds 0-9")
    ap.add_argument(
        "--vs",
        default=None,
        metavar="DIR",
        help="also run --paper and --corners in this checkout, side by side",
    )
    ap.add_argument("--skip-figure4", action="store_true", help="skip the Figure 4 rates")
    ap.add_argument("--all", action="store_true", help="also Figure 4's weighted rate")
    ap.add_argument("--json", default=None, help="also write the numbers as JSON")
    args = ap.parse_args(argv)
    out: dict = {}
    t0 = time.perf_counter()
    if args.paper:
        out["paper"] = _paper(args.vs)
    if args.corners:
        out["corners"] = _corners(args.vs)
    if not (args.paper or args.corners):
        s = _run(_SEARCH, json.dumps(SEARCH_SPEC), "0")
        out["search"] = s
        print(
            f"default search, FOCUS Bernoulli N<=8 d<=4 K<=3: {s['cpu']:.1f} s CPU "
            f"({s['seconds']:.1f} s wall) for {s['instances']} instances (target <= 60 s: "
            f"{'PASS' if s['cpu'] <= 60 else 'FAIL'}); violated {s['violated']} "
            f"[load {s['load_before']:.2f} -> {s['load_after']:.2f}]"
        )
        sm = _run(_SMALL)
        out["small"] = sm
        print(
            f"one small instance (FOCUS N=4 d=3 K=2 uniform 2/4): {sm['ms']:.1f} ms "
            f"[load {sm['load_before']:.2f}]"
        )
    if not (args.skip_figure4 or args.paper or args.corners):
        cases = [("uniform", "1.5e-4", 0.8244)]
        if args.all:
            cases.append(("weighted", "1e-4", 0.9475))
        for regime, eta, known in cases:
            for threads in ("1", "2"):
                f = _run(_FIG4, regime, eta, threads=threads)
                out[f"figure4_{regime}_threads{threads}"] = f
                print(
                    f"Figure 4 FOCUS {regime} eta {eta}, OPENBLAS_NUM_THREADS={threads}: "
                    f"{f['seconds']:.1f} s, rate {f['rate']:.6f} (known {known}: "
                    f"{'ok' if round(f['rate'], 4) == known else 'DIFFERS'}; target <= 30 s: "
                    f"{'PASS' if f['seconds'] <= 30 else 'FAIL'}) [load "
                    f"{f['load_before']:.2f} -> {f['load_after']:.2f}]"
                )
    out["total_seconds"] = time.perf_counter() - t0
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
