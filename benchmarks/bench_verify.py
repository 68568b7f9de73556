"""Benchmark: `make run`'s command, its wall and CPU time, the time of each claim, the load.

Runs ``FEDTHEORY_BACKEND=numpy .venv/bin/fedtheory verify`` (what ``make run`` runs; ``--args``
adds flags, e.g. ``--args="--workers 1"``) as a child process with ``--json``, and prints:

- the wall time, the CPU time of the run (its process and every child it waited for) and the
  load average before and after (the machine may be shared: wall time needs a quiet machine);
- each claim's CPU and wall seconds, the most expensive first (from the JSON's
  ``cpu_seconds`` and ``seconds``, summed over the claim's results);
- the wall time the run would take on a quiet machine with ``W`` workers (the cores this process
  may use): the longest-processing-time schedule of the claims' CPU seconds on ``W`` workers
  (the runner's own rule, :func:`fedtheory.verify.runner.longest_first`), plus the run's CPU
  outside the claims (start-up, imports, the table), which runs in one process.

``--update`` writes the claims' CPU seconds of this run into the tier's entry of
``fedtheory/verify/costs.json`` (:data:`fedtheory.verify.registry.COSTS_FILE`), from which the
runner starts the most expensive claims first; ``--compare OTHER.json`` checks that this run's
results are those of another ``fedtheory verify --json`` (same ids, verdicts, measured texts and
every other field but the timings), listing any difference; ``--keep OUT.json`` keeps this run's
JSON. ``--startup`` measures instead what starting two workers costs: two forked children (the
runner's way) against a local Dask cluster of two workers (:class:`fedtheory.parallel.Engine`),
each running claim G1 (milliseconds of work).

Usage: ``.venv/bin/python benchmarks/bench_verify.py [--args="--workers 1"] [--full]
[--update] [--compare OTHER.json] [--keep OUT.json]``, or ``... --startup``
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fedtheory.io import emit_json, utc_now
from fedtheory.parallel import Engine, cpu_time, fork_map
from fedtheory.validation import available_cores
from fedtheory.verify import Context
from fedtheory.verify.registry import COSTS_FILE, FULL, QUICK
from fedtheory.verify.runner import run_claim_task

ROOT = Path(__file__).resolve().parents[1]
#: Fields of a result that are timings: everything else must agree between two runs.
TIMINGS = ("seconds", "cpu_seconds")


def run_verify(extra: list[str], out: Path) -> dict:
    """``fedtheory verify --json out`` with ``extra`` flags, as ``make run`` runs it (NumPy
    backend); wall, CPU (this child and its children), load before and after."""
    fedtheory = Path(sys.executable).with_name("fedtheory")
    cmd = [str(fedtheory), "verify", *extra, "--json", str(out)]
    env = {**os.environ, "FEDTHEORY_BACKEND": "numpy"}
    load0, c0, t0 = os.getloadavg(), cpu_time(), time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, check=False)
    wall, cpu, load1 = time.perf_counter() - t0, cpu_time() - c0, os.getloadavg()
    if done.returncode != 0:
        raise SystemExit(f"bench_verify: {shlex.join(cmd)} exited {done.returncode}")
    return {
        "command": "FEDTHEORY_BACKEND=numpy " + shlex.join(["fedtheory", *cmd[1:-2]]),
        "wall": wall,
        "cpu": cpu,
        "load_before": load0,
        "load_after": load1,
        "date": utc_now(),
        "workers": available_cores(),
    }


def per_claim(report: dict) -> dict[str, dict[str, float]]:
    """Claim id -> CPU and wall seconds and number of results (the JSON's timings are per
    result, the claim's divided among its results)."""
    out: dict[str, dict[str, float]] = {}
    for r in report["results"]:
        if not r["ran"] and r["error"] is None:
            continue  # not run here (tier, missing extra): costs nothing
        row = out.setdefault(r["id"].split("/")[0], {"cpu": 0.0, "wall": 0.0, "results": 0})
        row["cpu"] += r.get("cpu_seconds") or 0.0
        row["wall"] += r["seconds"] or 0.0
        row["results"] += 1
    return out


def lpt_makespan(costs: list[float], workers: int) -> float:
    """When the last of ``costs`` ends, each started on the first free of ``workers`` in
    decreasing order (the longest-processing-time rule)."""
    ends = [0.0] * max(1, workers)
    for c in sorted(costs, reverse=True):
        heapq.heappush(ends, heapq.heappop(ends) + c)
    return max(ends)


def differences(a: dict, b: dict) -> list[str]:
    """Where two verify reports' results differ, timings aside (one line each)."""
    ra = {r["id"]: {k: v for k, v in r.items() if k not in TIMINGS} for r in a["results"]}
    rb = {r["id"]: {k: v for k, v in r.items() if k not in TIMINGS} for r in b["results"]}
    out = [f"{i}: only in one run" for i in sorted(set(ra) ^ set(rb))]
    for i in ra.keys() & rb.keys():
        out += [
            f"{i}: {k} differs ({ra[i].get(k)!r:.80} vs {rb[i].get(k)!r:.80})"
            for k in sorted(ra[i].keys() | rb[i].keys())
            if ra[i].get(k) != rb[i].get(k)
        ]
    return sorted(out)


def update_costs(claims: dict[str, dict[str, float]], tier: str, run: dict) -> None:
    """Write the claims' CPU seconds into ``tier``'s entry of the costs file."""
    costs = json.loads(COSTS_FILE.read_text()) if COSTS_FILE.exists() else {}
    keep = ("command", "date", "wall", "cpu", "workers")
    costs.setdefault("meta", {})[tier] = {k: run[k] for k in keep}
    costs["meta"][tier]["load_before"] = run["load_before"][0]
    costs["meta"][tier]["unit"] = "CPU seconds of the claim's check (benchmarks/bench_verify.py)"
    costs[tier] = {k: round(v["cpu"], 2) for k, v in sorted(claims.items())}
    emit_json(costs, COSTS_FILE)


def startup(repeat: int) -> None:
    """Two workers each running claim G1: forked children against a local Dask cluster."""
    item = ("G1", Context())
    for _ in range(repeat):
        t0 = time.perf_counter()
        list(fork_map(run_claim_task, [item, item], workers=2))
        print(
            f"fork_map, 2 children: {time.perf_counter() - t0:.3f} s from the first fork to "
            f"the second result (load {os.getloadavg()[0]:.2f})"
        )
    for _ in range(repeat):
        t0 = time.perf_counter()
        with Engine(workers=2) as engine:
            t1 = time.perf_counter()
            list(engine.map(run_claim_task, [item, item], progress=False))
            t2 = time.perf_counter()
        t3 = time.perf_counter()
        print(
            f"Dask local cluster, 2 workers: {t1 - t0:.2f} s to start, {t2 - t1:.2f} s for the "
            f"two tasks, {t3 - t2:.2f} s to close (load {os.getloadavg()[0]:.2f})"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--args", default="", help='flags for fedtheory verify, e.g. "--workers 1"')
    ap.add_argument("--full", action="store_true", help="the thorough tier (verify --full)")
    ap.add_argument("--update", action="store_true", help="write the costs file")
    ap.add_argument("--compare", metavar="OTHER", help="a verify --json report to compare with")
    ap.add_argument("--keep", metavar="OUT", help="keep this run's verify --json report")
    ap.add_argument("--startup", action="store_true", help="time starting two workers instead")
    ap.add_argument("--repeat", type=int, default=3, help="repetitions of --startup")
    args = ap.parse_args(argv)
    if args.startup:
        startup(args.repeat)
        return 0
    extra = shlex.split(args.args) + (["--full"] if args.full else [])
    tier = FULL if args.full else QUICK
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "verify.json"
        run = run_verify(extra, out)
        report = json.loads(out.read_text())
    if args.keep:
        emit_json(report, args.keep)
    claims = per_claim(report)
    inside = sum(v["cpu"] for v in claims.values())
    print(
        f"{run['command']}: {run['wall']:.1f} s wall, {run['cpu']:.1f} s CPU, "
        f"{len(report['results'])} results ({report['summary']}); {run['date']}; load average "
        f"{run['load_before'][0]:.2f} before, {run['load_after'][0]:.2f} after"
    )
    print(f"{'claim':6s} {'CPU s':>7s} {'wall s':>7s} results")
    for cid, v in sorted(claims.items(), key=lambda kv: -kv[1]["cpu"]):
        print(f"{cid:6s} {v['cpu']:7.1f} {v['wall']:7.1f} {v['results']:4d}")
    w = run["workers"]
    span = lpt_makespan([v["cpu"] for v in claims.values()], w)
    print(
        f"claims: {inside:.1f} s CPU; outside them: {run['cpu'] - inside:.1f} s CPU; on a quiet "
        f"machine with {w} workers: about {span + run['cpu'] - inside:.0f} s wall (the "
        f"longest-first schedule of the claims' CPU seconds, {span:.0f} s, plus the rest)"
    )
    if args.update:
        update_costs(claims, tier, run)
        print(f"wrote {COSTS_FILE.relative_to(ROOT)} ({tier} tier)")
    if args.compare:
        diff = differences(report, json.loads(Path(args.compare).read_text()))
        print(
            f"against {args.compare}: "
            + ("the same results (timings aside)" if not diff else f"{len(diff)} differences")
        )
        for line in diff:
            print("  " + line)
        return 1 if diff else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
