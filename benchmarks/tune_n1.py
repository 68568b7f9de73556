"""Tune the MNIST-1D claims' hyper-parameters on a validation split, at a root seed disjoint from
every evaluation, with grids that extend until the chosen value is interior.

Claims N1-N4 (``fedtheory verify``), the figure ``nn_n1`` and the README evaluate at root seed 0
(seed ids 0, 1, ...; the data partition and the initial networks also come from the root) on
the MNIST-1D *test* split. This script tunes every algorithm at another root,
:data:`fedtheory.experiments.n1.N1_TUNING_SEED`, on
:data:`~fedtheory.experiments.n1.N1_TUNING_SEEDS` seeds, and scores on a *validation* split
held out of the training rows (``run_n1(evaluate_on="validation")``): no evaluation draw and no
test sample is seen while tuning.

Criterion: the mean over the tuning seeds of the final validation accuracy (the mean of the
last 5 evaluated rounds, as the claims read the test accuracy); ties keep the first point
evaluated. Grids (:data:`AXES`) start at three values per hyper-parameter and extend by their
step past an edge until the choice is interior, then bisect the gaps next to the choice until
neighbouring values differ by at most a factor 1.5 (:func:`fedtheory.experiments.tuning.tune_grid`,
at most 8 values added each way); what was chosen, every point's score and each axis's status
("interior", or why not) go to ``fedtheory/experiments/nn_tuning.json``, which the claims read.
The server step of the SGD-server methods (FedAvg, SCAFFOLD, FedProx, FedDyn) is 1, not tuned
(000 Sec. 6: "We set the global learning rate as 1 for SGD-based global update").

Usage: ``python benchmarks/tune_n1.py [--setting 000-S2|004] [--algorithms A B ...]``
(000-S2: about 10 minutes of CPU per four algorithms; 004: HA-Fed trains every client for 48
local steps, about 10 minutes alone).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from fedtheory.algorithms.registry import info
from fedtheory.experiments.n1 import (
    N1_TUNING_SEED,
    N1_TUNING_SEEDS,
    NN_SETTINGS,
    TUNING_FILE,
    final_accuracy,
    run_n1,
    static_options,
)
from fedtheory.experiments.tuning import Axis, tune_grid
from fedtheory.io import jsonable, write_atomic

_STEPS = Axis("lr", (0.1, 0.3, 1.0))
_ADAPTIVE = [_STEPS, Axis("global_lr", (0.003, 0.01, 0.03))]
_PROX = [_STEPS, Axis("prox_mu", (0.001, 0.01, 0.1))]
#: The tuned hyper-parameters per algorithm (local step lr; server step global_lr of the
#: adaptive servers; FedProx's mu and FedDyn's alpha, both ``prox_mu``).
AXES: dict[str, list[Axis]] = {
    "fedavg": [_STEPS],
    "scaffold": [_STEPS],
    "fedprox": _PROX,
    "feddyn": _PROX,
    **{a: _ADAPTIVE for a in ("fedamsgrad", "fedadam", "afga", "cafga", "hafed")},
}
#: Fixed, not tuned: the SGD server's step (000 Sec. 6).
FIXED: dict[str, dict] = {
    a: {"global_lr": 1.0} for a in ("fedavg", "scaffold", "fedprox", "feddyn")
}
#: Neighbouring values next to the chosen one differ by at most this ratio (the grids' step is
#: 3.3: an optimum between two grid values would otherwise be missed by up to that factor).
REFINE = 1.5
#: Which algorithms each setting's claims compare.
ALGORITHMS: dict[str, tuple[str, ...]] = {
    "000-S2": ("fedavg", "fedamsgrad", "afga", "cafga", "fedadam", "scaffold", "fedprox", "feddyn"),
    "004": ("fedamsgrad", "hafed"),
}


def tune(name: str, setting: str) -> dict:
    """Tune ``name`` in ``setting`` (:data:`fedtheory.experiments.n1.NN_SETTINGS`)."""
    s = NN_SETTINGS[setting]
    size = {k: s[k] for k in ("n_clients", "participation", "local_steps", "rounds")}

    def score(point: dict) -> float:
        t0 = time.perf_counter()
        hyper = {name: {**FIXED.get(name, {}), **point, **static_options(name, setting)}}
        res = run_n1(
            [name],
            seeds=N1_TUNING_SEEDS,
            seed=N1_TUNING_SEED,
            eval_every=1,
            hyper=hyper,
            setting=setting,
            evaluate_on="validation",
            **size,
        )
        acc = float(np.mean(final_accuracy(next(iter(res.results.values())))))
        print(
            f"{setting} {name:10s} {point} validation accuracy {acc:.4f} "
            f"({time.perf_counter() - t0:.0f} s)",
            file=sys.stderr,
            flush=True,
        )
        return -acc

    t = tune_grid(score, AXES[name], refine=REFINE)
    out = t.to_dict()
    out["best"] = {**FIXED.get(name, {}), **t.best}
    out["score"] = -t.score
    out["criterion"] = "mean final validation accuracy over the tuning seeds (higher is better)"
    out["scores"] = [
        {"point": p["point"], "validation_accuracy": -p["score"]} for p in out["scores"]
    ]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--setting",
        choices=list(NN_SETTINGS),
        action="append",
        help="settings to tune (default: both)",
    )
    parser.add_argument(
        "--algorithms",
        nargs="+",
        metavar="NAME",
        help="only these algorithms (default: the setting's)",
    )
    args = parser.parse_args(argv)
    record = json.loads(TUNING_FILE.read_text()) if TUNING_FILE.exists() else {"settings": {}}
    record["meta"] = {
        "seed": N1_TUNING_SEED,
        "seeds": N1_TUNING_SEEDS,
        "evaluated_on": "validation split (20% of the training rows, seeded by the root)",
        "script": "benchmarks/tune_n1.py",
        "fixed": FIXED,
    }
    for setting in args.setting or list(NN_SETTINGS):
        names = [info(a).name for a in (args.algorithms or ALGORITHMS[setting])]
        for name in names:
            if name not in ALGORITHMS[setting]:
                continue
            rec = tune(name, setting)
            record.setdefault("settings", {}).setdefault(setting, {})[name] = rec
            write_atomic(TUNING_FILE, json.dumps(jsonable(record), indent=1) + "\n")
            print(f"{setting} {name}: {rec['best']} -> {rec['score']:.4f} ({rec['status']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
