"""The figures: each builder takes its config and returns ``(fig, data)``.

Builders draw with the owning module's plotting function where one exists and only fall back to
drawing here when it does not. Everything random is seeded from the config.
"""

from __future__ import annotations

import numpy as np

from fedtheory.experiments.fedavg_floor import plot_fedavg_floor, run_fedavg_floor
from fedtheory.experiments.figure4 import plot_figure4, run_figure4
from fedtheory.experiments.local_steps import (
    plot_local_steps,
    plot_rho_ablation,
    run_local_steps_study,
    run_rho_ablation,
)
from fedtheory.experiments.n1 import N1_PLAN, N1_ROUNDS, plot_n1, run_n1
from fedtheory.experiments.stability import plot_stability_map, run_stability_map
from fedtheory.figures.registry import figure
from fedtheory.graphs.plot import plot_gaps_with_thresholds
from fedtheory.io import pyplot
from fedtheory.participation import default_markov_rates, make_participation
from fedtheory.participation.plot import plot_participation
from fedtheory.problems.quadratic import figure4_probabilities


@figure(
    "participation",
    title="Participation patterns (clients x rounds) and effective FedAvg weights q",
    config={"clients": 16, "clients_per_round": 4, "rounds": 60, "seed": 0},
)
def participation_figure(cfg: dict):
    """Four participation models of 003 Sec. 3.1 (uniform 4/16, weighted 4/16 with the Figure 4
    weights, Bernoulli with p_i = min(M p_i, 1), Markov with stationary M/N), each drawn by the
    participation module's ``plot_participation``: the raster of one run and the effective
    weights q_i of plain-mean FedAvg (exact where the model has an exact method)."""
    n, m, rounds, seed = cfg["clients"], cfg["clients_per_round"], cfg["rounds"], cfg["seed"]
    p = figure4_probabilities(n)
    a, b = default_markov_rates(n, m)
    models = {
        "uniform": make_participation("uniform", n, m),
        "weighted": make_participation("weighted", n, m, p=p),
        "bernoulli": make_participation("bernoulli", n, m, p=np.minimum(m * p, 1.0)),
        "markov": make_participation("markov", n, m, a=a, b=b),
    }
    plt = pyplot()
    fig, axes = plt.subplots(2, len(models), figsize=(13, 5.4), height_ratios=[2, 1])
    data = {"p_weighted": p, "models": {}}
    for j, (name, model) in enumerate(models.items()):
        _, d = plot_participation(
            model, rounds=rounds, seed=seed, axes=(axes[0, j], axes[1, j]), title=name
        )
        data["models"][name] = {**d, "describe": model.describe()}
    fig.suptitle("Participation over rounds (top) and FedAvg effective weights q (bottom)")
    fig.tight_layout()
    return fig, data


@figure(
    "spectral_gap",
    title="Spectral gap rho against n per topology, with the theorems' thresholds",
    config={
        "families": [
            "complete",
            "hypercube",
            "exponential",
            "torus",
            "erdos-renyi",
            "star",
            "ring",
        ],
        "sizes": [4, 8, 16, 32, 64, 128, 256],
        "draws": 8,
        "seed": 0,
    },
)
def spectral_gap_figure(cfg: dict):
    """rho and 1 - rho against n per topology with the theorems' thresholds
    (:func:`fedtheory.graphs.plot.plot_gaps_with_thresholds`)."""
    return plot_gaps_with_thresholds(
        cfg["families"], cfg["sizes"], draws=cfg["draws"], seed=cfg["seed"]
    )


@figure(
    "fedavg_floor",
    title="FedAvg error floor against the step size: uniform vs non-uniform participation",
    config={
        "clients": 10,
        "dim": 5,
        "clients_per_round": 3,
        "local_steps": 2,
        "etas": [0.3, 0.1, 0.03, 0.01],
        "seeds": 8,
        "seed": 0,
    },
)
def fedavg_floor_figure(cfg: dict):
    """:func:`fedtheory.experiments.fedavg_floor.run_fedavg_floor` (uniform vs weighted M of N,
    measured floors with the closed forms) drawn by its ``plot_fedavg_floor``."""
    data = run_fedavg_floor(
        clients=cfg["clients"],
        dim=cfg["dim"],
        clients_per_round=cfg["clients_per_round"],
        local_steps=cfg["local_steps"],
        etas=tuple(cfg["etas"]),
        seeds=cfg["seeds"],
        seed=cfg["seed"],
    )
    return plot_fedavg_floor(data), data.to_dict()


@figure(
    "figure4",
    title="003 Figure 4 re-run: FOCUS against FedAvg, SCAFFOLD, FedAU, MIFA, Scaffnew",
    config={"rounds": 500, "seeds": 10, "seed": 0, "local_steps": 3, "baselines": "paper"},
)
def figure4_figure(cfg: dict):
    """:func:`~fedtheory.experiments.figure4.run_figure4` drawn by ``plot_figure4`` (three panels:
    full, uniform 4/16, arbitrary weighted 4/16; the paper's step sizes)."""
    data = run_figure4(
        rounds=cfg["rounds"],
        seeds=cfg["seeds"],
        seed=cfg["seed"],
        local_steps=cfg["local_steps"],
        baselines=cfg["baselines"],
    )
    fig = plot_figure4(data)
    # The sidecar keeps what is drawn (median curves) and the numbers behind them, not the
    # per-seed extras of run_figure4's return value.
    out = data.to_dict()
    for reg in out["regimes"].values():
        reg.pop("curves_seed0", None)
    return fig, out


def _study_data(res) -> dict:
    """A study's data for the sidecar, without wall times (they differ run to run)."""
    data = res.to_dict()
    data.pop("wall_time_s", None)
    for run in data.get("runs", []):
        run.pop("wall_time", None)
    return data


@figure(
    "local_steps",
    title="The local-steps study: (1/R) sum_r ||grad f(x_r)||^2 against K, fitted and stated slopes",
    config={
        "algorithms": ["fedamsgrad", "afga"],
        "Ks": [1, 2, 4, 8, 16],
        "R": 200,
        "M": 5,
        "topologies": ["complete", "random", "ring"],
        "seeds": 10,
        "seed": 0,
    },
)
def local_steps_figure(cfg: dict):
    """:func:`~fedtheory.experiments.local_steps.run_local_steps_study` in 000's Setting 2 (N = 50, M = 5) drawn by its
    ``plot_local_steps`` (metric against K per algorithm and topology, fitted and stated slopes;
    metric against rho at the largest K)."""
    res = run_local_steps_study(
        tuple(cfg["algorithms"]),
        Ks=tuple(cfg["Ks"]),
        Rs=(cfg["R"],),
        Ms=(cfg["M"],),
        topologies=tuple(cfg["topologies"]),
        seeds=cfg["seeds"],
        seed=cfg["seed"],
        progress=False,
    )
    data = _study_data(res)
    return (lambda path: plot_local_steps(res, path)), data


@figure(
    "rho_ablation",
    title="Rho ablation: the metric against the spectral gap of the gossip graph (claim A4)",
    config={
        "algorithms": ["afga"],
        "topologies": ["complete", "complete-random", "random", "torus", "ring"],
        "K": 8,
        "R": 200,
        "M": 5,
        "seeds": 10,
        "seed": 0,
    },
)
def rho_ablation_figure(cfg: dict):
    """:func:`~fedtheory.experiments.local_steps.run_rho_ablation` drawn by its ``plot_rho_ablation`` (000 Fig. 1,
    004 Fig. 2b)."""
    res = run_rho_ablation(
        tuple(cfg["algorithms"]),
        topologies=tuple(cfg["topologies"]),
        K=cfg["K"],
        R=cfg["R"],
        M=cfg["M"],
        seeds=cfg["seeds"],
        seed=cfg["seed"],
        progress=False,
    )
    data = _study_data(res)
    return (lambda path: plot_rho_ablation(res, path)), data


@figure(
    "nn_n1",
    title="N1: a torch-free MLP on MNIST-1D, FedAvg / FedAMSGrad / AFGA / CAFGA test accuracy",
    config={
        "rounds": N1_ROUNDS,
        "seeds": N1_PLAN["quick"][1],
        "seed": 0,
        "seed_block": N1_PLAN["quick"][0],
        "eval_every": 1,
    },
    needs=("nn",),
)
def nn_n1_figure(cfg: dict):
    """:func:`~fedtheory.experiments.n1.run_n1` (50 clients, 5 per round, Dirichlet(0.6), K = 10;
    its other defaults) drawn by their ``plot_n1`` (mean +- std over seeds per round). The seeds
    are claim N1's evaluation seeds (root 0, seed ids 0-5 in blocks of 3: the quick tier's
    budget, the same runs bit for bit); the hyper-parameters were tuned at another root
    (``N1_TUNING_SEED``). Slow: a few minutes on two cores."""
    res = run_n1(
        rounds=cfg["rounds"],
        seeds=cfg["seeds"],
        seed=cfg["seed"],
        seed_block=cfg["seed_block"],
        eval_every=cfg["eval_every"],
    )
    data = res.to_dict()
    for curve in data.get("curves", {}).values():
        curve.pop("wall_time", None)  # not data: differs run to run
    return plot_n1(res), data


@figure(
    "stability_map",
    title="Exact mean-square rate against the step size on the 003 Figure 4 problem",
    config={"local_steps": 3, "tol": 1e-4, "rtol": 5e-2, "extra": [0.5, 1.3]},
)
def stability_map_figure(cfg: dict):
    """The exact stability map (:mod:`fedtheory.experiments.stability`): FOCUS, SCAFFOLD
    and FedAvg in the three Figure 4 regimes (full, uniform 4/16, weighted 4/16), the exact
    per-round mean-square rate against eta, the largest stable step by bisection and the
    paper's steps. Deterministic (no seeds): exact rates, eigensolver tolerance ``tol``."""
    data = run_stability_map(
        local_steps=cfg["local_steps"],
        tol=cfg["tol"],
        rtol=cfg["rtol"],
        extra=tuple(cfg["extra"]),
    )
    out = data.to_dict()
    for reg in out["regimes"].values():
        for cur in reg.values():
            if isinstance(cur, dict):
                cur.pop("seconds", None)  # not data: differs run to run
                cur.pop("applications", None)  # the eigensolver's work, not the figure's data
    return plot_stability_map(data), out
