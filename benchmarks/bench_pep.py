"""Benchmark: performance-estimation programs of federated rounds (fedtheory.analysis.pep).

Measured in CPU seconds of this process (``time.process_time``: the trace, PEPit's model, cvxpy's
compilation and the solver), with the load average beside every number, each program solved by
Clarabel and cross-checked by SCS (both values and statuses printed):

1. the worst ||x_R - x*||^2 of FedAvg, N = 2, K = 3, R = 4 (eta = 0.05, mu = 1, L = 10,
   D2 = 1, zeta2 = 100): Gram 26, 314 constraints;
2. FedAvg's floor, N = 2, K = 2 (zeta2 = 1): one round with its fixed point imposed linearly;
3. FOCUS's factor estimate W(5)/W(4), N = 2, K = 2, a common minimizer (zeta2 = 0);
4. one round under uniform 2-of-4 participation (FedAvg, K = 2): six subsets enumerated.

Run: ``.venv/bin/python benchmarks/bench_pep.py [--repeat N] [--json out.json]``
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

MU, L = 1.0, 10.0


def _case(label: str, fn: Any, repeat: int) -> dict:
    load = os.getloadavg()[0]
    secs = []
    for _ in range(repeat):
        t = time.process_time()
        out = fn()
        secs.append(time.process_time() - t)
    w = out if not isinstance(out, dict) else out["worst"][1]
    value = out["value"] if isinstance(out, dict) else out.value
    return {
        "case": label,
        "value": value,
        "gram": w.sizes.gram,
        "constraints": w.sizes.constraints,
        "cpu_seconds": min(secs),
        "repeat": repeat,
        "solver": w.solver,
        "load_before": load,
        "load_after": os.getloadavg()[0],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=1, help="runs per case (the minimum is kept)")
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args(argv)

    from fedtheory.analysis.pep import (  # noqa: PLC0415 (the optional extra 'pep')
        rate_estimate,
        worst_after_rounds,
        worst_floor,
    )
    from fedtheory.participation import make_participation  # noqa: PLC0415 (after --help)

    cases = [
        (
            "FedAvg N=2 K=3 R=4, zeta2=100",
            lambda: worst_after_rounds(
                "fedavg",
                2,
                4,
                mu=MU,
                L=L,
                D2=1.0,
                zeta2=100.0,
                lr=0.05,
                local_steps=3,
                cross_check=True,
            ),
        ),
        (
            "FedAvg floor N=2 K=2, zeta2=1",
            lambda: worst_floor(
                "fedavg", 2, mu=MU, L=L, zeta2=1.0, lr=0.05, local_steps=2, cross_check=True
            ),
        ),
        (
            "FOCUS W(5)/W(4) N=2 K=2",
            lambda: rate_estimate(
                "focus", 2, 5, mu=MU, L=L, zeta2=0.0, lr=0.05, local_steps=2, cross_check=True
            ),
        ),
        (
            "FedAvg uniform 2/4 R=1 K=2",
            lambda: worst_after_rounds(
                "fedavg",
                4,
                1,
                mu=MU,
                L=L,
                zeta2=1.0,
                lr=0.05,
                local_steps=2,
                participation=make_participation("uniform", 4, 2),
                cross_check=True,
            ),
        ),
    ]
    rows = []
    for label, fn in cases:
        r = _case(label, fn, args.repeat)
        rows.append(r)
        cc = r["solver"]["cross_check"] or {}
        print(
            f"{label:32s} value {r['value']:.8g}  Gram {r['gram']:3d}  constraints "
            f"{r['constraints']:4d}  {r['cpu_seconds']:6.2f} CPU s  "
            f"[{r['solver']['name']} {r['solver']['status']}; {cc.get('name')} "
            f"{cc.get('status')} {cc.get('value')}] [load {r['load_before']:.2f} -> "
            f"{r['load_after']:.2f}]"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
