"""Benchmark: rho and 1 - rho of 10^6-node graphs, next to networkx's algebraic_connectivity.

For a ring (weights 1/3) and a random geometric graph (Metropolis-Hastings weights, default
radius sqrt(2 log n / (pi n))) of each size, a fresh subprocess builds W with
:func:`fedtheory.graphs.mixing_matrix` and computes :func:`fedtheory.graphs.spectral_gap`; we
report wall times, peak resident memory (``resource.getrusage``, the subprocess's own peak) and,
for the ring, the relative error of 1 - rho against the closed form (4/3) sin^2(pi/n).

networkx: ``networkx.algebraic_connectivity(G, weight="weight")`` on the graph with edge weights
``w_ij`` returns ``lambda_2(I - W) = 1 - lambda_2(W)``, the same number as our ``1 - rho`` when
rho is attained by lambda_2 (always so here). It runs in its own subprocess with a timeout and
only up to ``--nx-max-n`` nodes (building a networkx graph of 10^6 nodes and 10^7 edges costs
gigabytes), and is marked "skipped" or "timeout" otherwise.

Usage::

    python benchmarks/bench_spectral.py                      # sizes 1e3 1e4 1e5 1e6
    python benchmarks/bench_spectral.py --sizes 1000 100000 --nx-timeout 60 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import networkx as nx
import scipy.sparse as sp

from fedtheory.graphs import mixing_matrix, spectral_gap
from fedtheory.graphs.closedforms import ring_gap

FAMILIES = ("ring", "random-geometric")


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def worker_fedtheory(family: str, n: int, seed: int) -> dict:

    t0 = time.perf_counter()
    W = mixing_matrix(family, n, seed=seed)
    t1, c1 = time.perf_counter(), time.process_time()
    g = spectral_gap(W)
    t2, c2 = time.perf_counter(), time.process_time()
    out = {
        "tool": "fedtheory",
        "family": family,
        "n": n,
        "edges": int((W != 0).sum() - n) // 2 if not hasattr(W, "nnz") else int(W.nnz - n) // 2,
        "build_s": t1 - t0,
        "spectral_s": t2 - t1,
        "spectral_cpu_s": c2 - c1,
        "peak_mb": _peak_mb(),
        "rho": g.rho_norm,
        "one_minus_rho": g.one_minus_rho,
        "connected": g.connected,
        "method": g.method,
    }
    if family == "ring":
        out["closed_form_rel_err"] = abs(g.one_minus_rho / ring_gap(n)[1] - 1.0)
    return out


def worker_networkx(family: str, n: int, seed: int) -> dict:

    W = sp.csr_array(mixing_matrix(family, n, seed=seed, format="sparse"))
    off = sp.triu(W, k=1, format="coo")
    t0 = time.perf_counter()
    G = nx.Graph()
    G.add_nodes_from(range(n))
    G.add_weighted_edges_from(
        zip(off.row.tolist(), off.col.tolist(), off.data.tolist(), strict=True)
    )
    if not nx.is_connected(G):
        return {"tool": "networkx", "family": family, "n": n, "status": "disconnected"}
    t1, c1 = time.perf_counter(), time.process_time()
    a = nx.algebraic_connectivity(G, weight="weight", method="tracemin_pcg", seed=seed)
    t2, c2 = time.perf_counter(), time.process_time()
    return {
        "tool": "networkx",
        "family": family,
        "n": n,
        "build_s": t1 - t0,
        "spectral_s": t2 - t1,
        "spectral_cpu_s": c2 - c1,
        "peak_mb": _peak_mb(),
        "one_minus_rho": float(a),
        "status": "ok",
    }


def run_worker(tool: str, family: str, n: int, seed: int, timeout: float) -> dict:
    cmd = [sys.executable, __file__, "--worker", tool, family, str(n), "--seed", str(seed)]
    env = dict(os.environ, FEDTHEORY_NO_PROGRESS="1")
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"tool": tool, "family": family, "n": n, "status": f"timeout > {timeout:g} s"}
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["?"])[-1]
        return {"tool": tool, "family": family, "n": n, "status": f"failed: {last}"}
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out.setdefault("status", "ok")
    out["wall_s"] = time.perf_counter() - t0
    return out


def fmt(x, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=float, nargs="+", default=[1e3, 1e4, 1e5, 1e6])
    p.add_argument("--families", nargs="+", default=list(FAMILIES))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=600.0, help="per fedtheory run (s)")
    p.add_argument("--nx-timeout", type=float, default=120.0, help="per networkx run (s)")
    p.add_argument(
        "--nx-max-n",
        type=int,
        default=10_000,
        help="largest n given to networkx (graph objects cost GBs at 1e6)",
    )
    p.add_argument("--json", metavar="OUT", help="also write the rows as JSON")
    p.add_argument("--worker", nargs=3, metavar=("TOOL", "FAMILY", "N"), help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker:
        tool, family, n = a.worker[0], a.worker[1], int(a.worker[2])
        fn = worker_fedtheory if tool == "fedtheory" else worker_networkx
        print(json.dumps(fn(family, n, a.seed)))
        return 0
    rows = []
    header = (
        f"{'family':<17} {'n':>8} {'rho':>18} {'1 - rho':>11} {'ring err':>8} "
        f"{'build s':>7} {'rho s':>7} {'rho cpu':>7} {'peak MB':>7} | {'nx 1-rho rel.diff':>17} "
        f"{'nx s':>7} {'nx cpu':>7} {'nx MB':>6} {'nx/ours cpu':>11}"
    )
    print(header)
    print("-" * len(header))
    for family in a.families:
        for size in a.sizes:
            n = int(size)
            ours = run_worker("fedtheory", family, n, a.seed, a.timeout)
            if n <= a.nx_max_n:
                theirs = run_worker("networkx", family, n, a.seed, a.nx_timeout)
            else:
                theirs = {"status": f"skipped (n > --nx-max-n = {a.nx_max_n})"}
            rows.append({"fedtheory": ours, "networkx": theirs})
            ok = ours.get("status") == "ok"
            nx_ok = theirs.get("status") == "ok"
            ratio = diff = None
            if ok and nx_ok:
                ratio = theirs["spectral_cpu_s"] / max(ours["spectral_cpu_s"], 1e-9)
                diff = abs(theirs["one_minus_rho"] / ours["one_minus_rho"] - 1.0)
            nxcol = (
                f"{fmt(diff, '>17.1e')} {theirs['spectral_s']:>7.2f} "
                f"{theirs['spectral_cpu_s']:>7.2f} {theirs['peak_mb']:>6.0f} {fmt(ratio, '>11.1f')}"
                if nx_ok
                else f"{theirs.get('status', '?')}"
            )
            if ok:
                print(
                    f"{family:<17} {n:>8} {ours['rho']:>18.15f} {ours['one_minus_rho']:>11.4e} "
                    f"{fmt(ours.get('closed_form_rel_err'), '>8.0e')} "
                    f"{ours['build_s']:>7.2f} {ours['spectral_s']:>7.2f} "
                    f"{ours['spectral_cpu_s']:>7.2f} {ours['peak_mb']:>7.0f} | {nxcol}",
                    flush=True,
                )
            else:
                print(f"{family:<17} {n:>8} {ours.get('status')} | {nxcol}", flush=True)
    print(
        "\nrho s / rho cpu: wall and CPU seconds of fedtheory.graphs.spectral_gap; nx: "
        "networkx.algebraic_connectivity (tracemin_pcg) on the same weighted graph, whose value "
        "is lambda_2(I - W) = 1 - rho here; nx/ours cpu: ratio of CPU times (robust on a shared "
        "machine). ring err: |1 - rho| against (4/3) sin^2(pi/n). Peak MB: maximum resident set "
        "of the worker process (interpreter, graph and solver)."
    )
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
