"""Benchmark: this tree against another checkout of fedtheory, side by side in one run.

Every measurement runs in a fresh child process of this Python with one tree's package first on
its path (``python -S``, the tree and this environment's site-packages on ``PYTHONPATH``: the
editable install's finder is not loaded, so the tree named is the one imported), the two trees'
children taking turns (A B A B ...), each repeat kept: the CPU seconds a child spends in its
work (``time.process_time``, one BLAS thread where the code pins it), its wall seconds, and
what it computed, so the ratio B / A is read from one run on one machine. Workloads:

- ``exact``: the mean-square rate of FOCUS and SCAFFOLD on the 003 Figure 4 problem (N = 16,
  d = 50, K = 3) under uniform 4 of 16 (eta = 1.5e-4) and weighted 4 of 16 (eta = 1e-4), each
  tree at its own default eigensolver tolerance (or ``--tol``): CPU seconds of
  ``exact_rates(..., stationary=False, verify=False)``, the rate, the operator applications and
  residual from its method string. Verdicts: at most 10 s of CPU per rate on this tree, and the
  two trees' rates equal to 1e-8.
- ``operator``: ms per application of the packed mean-square operator (``AffineSystem.ms_vech``,
  one BLAS thread, the best of ``--reps`` runs of 10 applications to a random packed symmetric
  matrix) for the same four cases, and the largest difference of the two trees' results.
- ``simulator``: ms per seed-run of ``simulate`` at 1000 seeds x 500 rounds on the same problem
  (uniform 4 of 16, K = 3, eta = 1.5e-4, one process, the default call: the error every round),
  FedAvg, FOCUS and SCAFFOLD; and with ``consensus`` recorded too (``--consensus``). Best of
  ``--reps``. The in-run numbers of the other tree are the floor: a ratio below 1 is a
  regression.
- ``stability``: the stability map's settings (:func:`fedtheory.experiments.stability.
  run_stability_map`, the figure's configuration) in one process: CPU seconds per curve and in
  all, and the largest data difference between the trees.

Run: ``.venv/bin/python benchmarks/bench_vs_tree.py --base /tmp/base156 [--workloads exact
operator simulator stability] [--reps 3] [--json out.json]`` (make the other checkout with ``git
worktree add /tmp/base156 156d184``). The load average is printed at the start and the end.
"""

from __future__ import annotations

import argparse
import json
import os
import site
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[1]
TARGET_CPU_S = 10.0
VALUE_ATOL = 1e-8

EXACT_CASES = {
    "focus uniform 4/16": ("focus", "uniform", 1.5e-4),
    "scaffold uniform 4/16": ("scaffold", "uniform", 1.5e-4),
    "focus weighted 4/16": ("focus", "weighted", 1e-4),
    "scaffold weighted 4/16": ("scaffold", "weighted", 1e-4),
}

CHILD_EXACT = r"""
import json, re, sys, time
import fedtheory
from fedtheory.analysis.exact import exact_rates
from fedtheory.participation import make_participation
from fedtheory.problems import figure4_problem
alg, part, lr, tol = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
prob = figure4_problem()
n = prob.n_clients
model = (make_participation("uniform", n, 4) if part == "uniform"
         else make_participation("weighted", n, 4, p=prob.participation_p))
kw = {} if tol == "default" else {"tol": float(tol)}
c0, w0 = time.process_time(), time.perf_counter()
r = exact_rates(prob, alg, model, lr=lr, local_steps=3, stationary=False, verify=False, **kw)
cpu, wall = time.process_time() - c0, time.perf_counter() - w0
how = r.methods["mean-square rate"]
apps = re.search(r"(\d+) applications", how)
res = re.search(r"relative residual ([0-9.e+-]+)", how)
print(json.dumps({"tree": fedtheory.__file__, "value": r.mean_square_rate, "cpu": cpu,
                  "wall": wall, "applications": int(apps.group(1)) if apps else None,
                  "residual": float(res.group(1)) if res else None}))
"""

CHILD_OP = r"""
import json, sys, time
import numpy as np
from threadpoolctl import threadpool_limits
import fedtheory
from fedtheory.analysis.exact.oracle import _system
from fedtheory.participation import make_participation
from fedtheory.problems import figure4_problem
alg, part, lr, reps = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
prob = figure4_problem()
n = prob.n_clients
model = (make_participation("uniform", n, 4) if part == "uniform"
         else make_participation("weighted", n, 4, p=prob.participation_p))
with threadpool_limits(limits=1, user_api="blas"):
    s = _system(prob, alg, model, lr=lr, local_steps=3, verify=False).system
    size = s.n_r * (s.n_r + 1) // 2
    v = np.random.default_rng(0).standard_normal(size)
    out = s.ms_vech(v)
    best = float("inf")
    for _ in range(reps):
        c0 = time.process_time()
        for _ in range(10):
            s.ms_vech(v)
        best = min(best, (time.process_time() - c0) / 10)
print(json.dumps({"tree": fedtheory.__file__, "ms": 1e3 * best, "checksum": out[:1000].tolist()}))
"""

CHILD_SIM = r"""
import json, sys, time
import fedtheory
from fedtheory.participation import make_participation
from fedtheory.problems import figure4_problem
from fedtheory.simulation import simulate
alg, seeds, rounds, consensus = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
prob = figure4_problem()
model = make_participation("uniform", prob.n_clients, 4)
metrics = ["error", "consensus"] if consensus == "1" else ["error"]
kw = dict(rounds=rounds, seeds=seeds, seed=0, lr=1.5e-4, local_steps=3, metrics=metrics,
          workers=1)
simulate(prob, alg, model, **dict(kw, seeds=8, rounds=5))  # warm-up: imports, caches
c0, w0 = time.process_time(), time.perf_counter()
res = simulate(prob, alg, model, **kw)
cpu, wall = time.process_time() - c0, time.perf_counter() - w0
print(json.dumps({"tree": fedtheory.__file__, "cpu": cpu, "wall": wall,
                  "ms_per_seed_run": 1e3 * wall / seeds, "cpu_ms_per_seed_run": 1e3 * cpu / seeds,
                  "final_error": float(res.error[:, -1].max())}))
"""

CHILD_STAB = r"""
import json, time
import fedtheory
from fedtheory.experiments.stability import run_stability_map
c0, w0 = time.process_time(), time.perf_counter()
data = run_stability_map(workers=1)
cpu, wall = time.process_time() - c0, time.perf_counter() - w0
out = data.to_dict()
curves = {f"{r} {a}": c for r, reg in out["regimes"].items() for a, c in reg.items()
          if isinstance(c, dict)}
print(json.dumps({"tree": fedtheory.__file__, "cpu": cpu, "wall": wall,
                  "curves": {k: {"lr": c["lr"], "rate": c["mean_square_rate"],
                                 "eta_max": c["largest_stable_lr"], "seconds": c["seconds"]}
                             for k, c in curves.items()}}))
"""


def _env(tree: Path) -> dict:
    paths = [str(tree), *site.getsitepackages()]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=os.pathsep.join(paths), FEDTHEORY_NO_PROGRESS="1", MPLBACKEND="Agg")
    return env


def child(tree: Path, code: str, *args: str, timeout: float = 3600) -> dict:
    """Run ``code`` in a fresh ``python -S`` with ``tree`` imported; its last JSON line."""
    done = subprocess.run(
        [sys.executable, "-S", "-c", code, *map(str, args)],
        env=_env(tree),
        cwd="/",
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"child on {tree} failed:\n{done.stderr[-2000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    if not out["tree"].startswith(str(tree)):
        raise RuntimeError(f"child imported {out['tree']}, not the tree {tree}")
    return out


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def bench_exact(trees: dict, args: argparse.Namespace) -> list[dict]:
    rows = []
    print(
        "\nexact mean-square rates on 003 Figure 4 (CPU s of one exact_rates call, "
        "each tree at its default tolerance)"
    )
    print(
        f"{'case':24s} {'tree':5s} {'rate':>16s} {'apps':>5s} {'residual':>9s} "
        f"{'CPU s':>7s} {'wall s':>7s}"
    )
    for case, (alg, part, lr) in EXACT_CASES.items():
        if case not in args.cases:
            continue
        got = {}
        for name, tree in trees.items():
            r = child(tree, CHILD_EXACT, alg, part, lr, args.tol)
            got[name] = r
            print(
                f"{case:24s} {name:5s} {r['value']:16.12f} {r['applications'] or 0:5d} "
                f"{r['residual'] or float('nan'):9.1e} {r['cpu']:7.1f} {r['wall']:7.1f}",
                flush=True,
            )
        a, b = got["this"], got["base"]
        diff = abs(a["value"] - b["value"])
        ok = a["cpu"] <= TARGET_CPU_S and diff <= VALUE_ATOL
        print(
            f"{'':24s} ratio base/this CPU {b['cpu'] / a['cpu']:.2f}x, |rate difference| "
            f"{diff:.1e}: {'MET' if ok else 'NOT MET'} (<= {TARGET_CPU_S:g} s CPU, "
            f"<= {VALUE_ATOL:g})"
        )
        rows.append({"case": case, "this": a, "base": b, "difference": diff, "met": ok})
    return rows


def bench_operator(trees: dict, args: argparse.Namespace) -> list[dict]:
    rows = []
    print(
        "\nmean-square operator on packed symmetric matrices: CPU ms per application, best of "
        f"{args.reps} x 10"
    )
    for case, (alg, part, lr) in EXACT_CASES.items():
        got = {
            name: child(tree, CHILD_OP, alg, part, lr, args.reps) for name, tree in trees.items()
        }
        a, b = got["this"], got["base"]
        x, y = (np.asarray(g["checksum"]) for g in (a, b))
        diff = float(np.abs(x - y).max() / np.abs(y).max())
        print(
            f"{case:24s} this {a['ms']:6.1f} ms  base {b['ms']:6.1f} ms  base/this "
            f"{b['ms'] / a['ms']:.2f}x; results equal to {diff:.0e} relative"
        )
        rows.append({"case": case, "this_ms": a["ms"], "base_ms": b["ms"], "difference": diff})
    return rows


def bench_simulator(trees: dict, args: argparse.Namespace) -> list[dict]:
    rows = []
    modes = ["0", "1"] if args.consensus else ["0"]
    print(
        f"\nsimulator: ms per seed-run, {args.seeds} seeds x {args.rounds} rounds, one process, "
        f"best of {args.reps} (wall; CPU alongside)"
    )
    for alg in ("fedavg", "focus", "scaffold"):
        for cons in modes:
            best: dict = {}
            for _ in range(args.reps):
                for name, tree in trees.items():
                    r = child(tree, CHILD_SIM, alg, args.seeds, args.rounds, cons)
                    if name not in best or r["wall"] < best[name]["wall"]:
                        best[name] = r
            a, b = best["this"], best["base"]
            label = f"{alg}{' + consensus' if cons == '1' else ''}"
            same = a["final_error"] == b["final_error"]
            print(
                f"{label:22s} this {a['ms_per_seed_run']:6.3f} ms (CPU {a['cpu_ms_per_seed_run']:.3f})"
                f"  base {b['ms_per_seed_run']:6.3f} ms (CPU {b['cpu_ms_per_seed_run']:.3f})"
                f"  base/this {b['ms_per_seed_run'] / a['ms_per_seed_run']:.2f}x wall, "
                f"{b['cpu'] / a['cpu']:.2f}x CPU; final errors equal: {same}",
                flush=True,
            )
            rows.append({"algorithm": alg, "consensus": cons == "1", "this": a, "base": b})
    return rows


def bench_stability(trees: dict, args: argparse.Namespace) -> dict:
    print("\nstability map (the figure's configuration, one process)")
    got = {name: child(tree, CHILD_STAB) for name, tree in trees.items()}
    a, b = got["this"], got["base"]
    print(
        f"{'curve':22s} {'this s':>7s} {'base s':>7s} {'eta_max this':>13s} {'eta_max base':>13s} "
        f"{'max |rate diff|':>15s}"
    )
    worst = 0.0
    for key, ca in a["curves"].items():
        cb = b["curves"][key]
        common = set(ca["lr"]) & set(cb["lr"])
        ra, rb = (
            dict(zip(ca["lr"], ca["rate"], strict=True)),
            dict(zip(cb["lr"], cb["rate"], strict=True)),
        )
        diff = max((abs(ra[e] - rb[e]) for e in common), default=float("nan"))
        worst = max(worst, diff) if diff == diff else worst
        print(
            f"{key:22s} {ca['seconds']:7.1f} {cb['seconds']:7.1f} {ca['eta_max']:13.6g} "
            f"{cb['eta_max']:13.6g} {diff:15.1e}"
        )
    print(
        f"all curves: this {a['cpu']:.1f} s CPU ({a['wall']:.1f} s wall), base {b['cpu']:.1f} s "
        f"CPU ({b['wall']:.1f} s wall): {b['cpu'] / a['cpu']:.2f}x; largest rate difference at a "
        f"common step {worst:.1e}"
    )
    return {"this": a, "base": b, "largest_difference": worst}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the other checkout (its fedtheory/ inside)")
    ap.add_argument(
        "--workloads",
        nargs="+",
        default=["exact", "simulator"],
        choices=("exact", "operator", "simulator", "stability"),
    )
    ap.add_argument("--tol", default="default", help="eigensolver tolerance of both trees")
    ap.add_argument("--reps", type=int, default=3, help="simulator repeats (best kept)")
    ap.add_argument("--seeds", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=500)
    ap.add_argument("--consensus", action="store_true", help="also time with consensus recorded")
    ap.add_argument(
        "--cases",
        nargs="+",
        default=list(EXACT_CASES),
        choices=list(EXACT_CASES),
        metavar="CASE",
        help="exact: the cases to run (default: all four)",
    )
    ap.add_argument("--json", default=None, help="also write the numbers as JSON")
    args = ap.parse_args(argv)
    trees = {"this": HERE, "base": Path(args.base).resolve()}
    if not (trees["base"] / "fedtheory" / "__init__.py").exists():
        ap.error(f"--base {args.base} holds no fedtheory/ package")
    print(f"this tree {trees['this']}, base tree {trees['base']}; load average {_load()}")
    out: dict = {"load_start": os.getloadavg()}
    t0 = time.perf_counter()
    if "exact" in args.workloads:
        out["exact"] = bench_exact(trees, args)
    if "operator" in args.workloads:
        out["operator"] = bench_operator(trees, args)
    if "simulator" in args.workloads:
        out["simulator"] = bench_simulator(trees, args)
    if "stability" in args.workloads:
        out["stability"] = bench_stability(trees, args)
    out.update(load_end=os.getloadavg(), seconds=time.perf_counter() - t0)
    print(f"\nload average at the end {_load()}; {out['seconds']:.0f} s in all")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
