"""Are the verdicts stable across base seeds? Run the catalog at several base seeds, tabulate.

A verdict must not hinge on the base seed: across base seeds 0-4 no row may say
``holds`` at one seed and ``fails`` at another. This script runs the claims (default: the quick
tier, every claim) at each base seed, ``--workers`` claims at once in forked processes
(default: the cores this process may use; :func:`fedtheory.verify.run_claims`), prints one line
per result id with its verdict per seed (H holds, F fails, I inconclusive, O outside
assumptions, M measured, V invariant, S not stated, - not run) and marks the rows where holds
and fails both occur. Exit status 1 when a row flips between holds and fails, else 0.

It runs the whole tier once per seed: about five quick tiers (10-25 minutes on two shared
cores).

Usage: ``.venv/bin/python benchmarks/verdict_stability.py [--seeds 0 1 2 3 4] [--full]
[--only IDS] [--workers N] [--json OUT]``
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from fedtheory._version import __version__
from fedtheory.io import emit_json, utc_now
from fedtheory.verify import FULL, QUICK, Context, run_claims, select

SHORT = {
    "holds": "H",
    "fails": "F",
    "inconclusive": "I",
    "outside assumptions": "O",
    "measured": "M",
    "invariant": "V",
    "not stated": "S",
    "not run": "-",
}


def stability(seeds: list[int], tier: str, only: str | None, workers: int | None = None) -> dict:
    """Verdict per result id and base seed, seconds per seed, load averages."""
    claims = select(only)
    table: dict[str, dict[int, str]] = {}
    seconds, loads = {}, {}
    for s in seeds:
        loads[s] = os.getloadavg()
        t0 = time.perf_counter()
        for r in run_claims(claims, Context(tier=tier, seed=s), quiet=True, workers=workers):
            table.setdefault(r.id, {})[s] = "CRASHED" if r.crashed else r.verdict
        seconds[s] = time.perf_counter() - t0
        print(
            f"seed {s}: {seconds[s]:.0f} s (load average {loads[s][0]:.2f})",
            file=sys.stderr,
            flush=True,
        )
    flips = [i for i, v in table.items() if {"holds", "fails"} <= set(v.values())]
    return {
        "tier": tier,
        "seeds": seeds,
        "verdicts": table,
        "flips": flips,
        "seconds": seconds,
        "load_average_at_start": loads,
    }


def render(result: dict) -> str:
    seeds = result["seeds"]
    width = max(len(i) for i in result["verdicts"]) if result["verdicts"] else 5
    head = f"{'result':{width}s}  " + " ".join(f"{s:>2}" for s in seeds) + "  flip"
    lines = [head, "-" * len(head)]
    for i, v in result["verdicts"].items():
        cells = " ".join(f"{SHORT.get(v.get(s, 'not run'), '?'):>2}" for s in seeds)
        lines.append(f"{i:{width}s}  {cells}  {'FLIP' if i in result['flips'] else ''}")
    lines.append(
        f"{len(result['flips'])} of {len(result['verdicts'])} results flip between holds and "
        f"fails over base seeds {seeds} ({result['tier']} tier); seconds per seed: "
        + ", ".join(f"{s}: {t:.0f}" for s, t in result["seconds"].items())
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--full", action="store_true", help="the thorough tier")
    parser.add_argument("--only", metavar="IDS", help="claim ids, e.g. A3,A5")
    parser.add_argument("--workers", type=int, help="claims at once (default: the cores)")
    parser.add_argument("--json", metavar="OUT", help="write the table as JSON")
    args = parser.parse_args(argv)
    result = stability(args.seeds, FULL if args.full else QUICK, args.only, args.workers)
    print(render(result))
    if args.json:  # a top-level object with version and date, as fedtheory verify --json
        emit_json({"version": __version__, "date": utc_now(), **result}, args.json)
    return 1 if result["flips"] else 0


if __name__ == "__main__":
    sys.exit(main())
