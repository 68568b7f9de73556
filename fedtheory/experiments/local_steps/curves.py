"""Gradient-norm curves of one algorithm over a grid variable (claims A2-A4 read them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedtheory.algorithms.registry import info
from fedtheory.errors import AssumptionError
from fedtheory.experiments.local_steps.theory import (
    assumption_violations,
    participation_for,
    rho_at,
    step_sizes,
    study_problem,
)
from fedtheory.simulation import simulate


@dataclass
class GradientCurves:
    """||grad f(x_r)||^2 per seed, round and grid value of one variable (claims A2-A4).

    Attributes
    ----------
    algorithm, topology : str (topology None without gossip)
    variable : str
        The swept variable ("K", "R" or "topology").
    values : list
        Its grid.
    curves : list of ndarray (seeds, R)
        ||grad f(x_r)||^2 for r = 1..R (x_1 the initial model, 000 Thm 4.6's indexing), one
        array per grid value; every grid value runs the same seed ids (paired). NaN from a
        seed's divergence on.
    rho : list of float or None
        ||W - 11^T/n||_2 per grid value.
    outside : list of list of str
        Violated theorem assumptions per grid value (:func:`assumption_violations`).
    settings : dict
        Everything else (R, M, N, C, c, c_l, sigma, sigma_g, step sizes per grid value, seeds).
    """

    algorithm: str
    topology: str | None
    variable: str
    values: list
    curves: list
    rho: list
    outside: list
    settings: dict


def window_mean(curve: np.ndarray, start: float = 0.5) -> np.ndarray:
    """Mean of ``curve`` (..., R) over rounds ``ceil(start R)..R`` (default: the second half,
    the window past the transient of claims A2-A3)."""
    R = curve.shape[-1]
    return curve[..., int(np.ceil(start * R)) :].mean(axis=-1)


def window_min(curve: np.ndarray, start: float = 0.5) -> np.ndarray:
    """Minimum of ``curve`` (..., R) over rounds ``ceil(start R)..R``."""
    R = curve.shape[-1]
    return curve[..., int(np.ceil(start * R)) :].min(axis=-1)


def gradient_curves(
    algorithm: str,
    *,
    variable: str = "K",
    values: Sequence[Any] = (1, 2, 4, 8),
    K: int = 8,
    R: int = 200,
    M: int = 5,
    n_clients: int = 50,
    clusters: int = 5,
    topology: str | None = None,
    c: float = 0.02,
    c_l: float = 0.5,
    sigma: float = 1.0,
    sigma_g: float = 1.0,
    dim: int = 10,
    seeds: int = 8,
    seed: int = 0,
    seed_ids: Sequence[int] | None = None,
    problem_seed: int = 0,
    graph_seed: int = 0,
    schedule: str | None = None,
    steps_at: dict | None = None,
    metric: str = "grad_norm2",
) -> GradientCurves:
    """Run ``algorithm`` with its theorem schedule (:func:`step_sizes`) on the PL study problem
    over a grid of K, R, M or topologies and keep every seed's ||grad f(x_r)||^2 curve.

    The statistics (window means, exponents, intervals) are the caller's: the claims compute
    them with :mod:`fedtheory.analysis.stats`. ``variable="topology"`` sweeps gossip graphs at
    the given K and R; ``"K"``, ``"R"`` or ``"M"`` sweep that integer with ``topology`` fixed
    (M = N is full participation). ``schedule`` names the algorithm whose step-size schedule is
    used (default: ``algorithm``'s own; 004 Rem. 5.10 runs HA-Fed with FedAMSGrad's).
    ``steps_at`` holds some of the schedule's arguments at fixed values (``{"M": 5}``: every
    grid point runs the step sizes the schedule gives at M = 5, so that a sweep in M changes
    participation only). ``metric`` is the runner metric kept (``"grad_norm2"``, or
    ``"f_minus_f_star"``: f(x_r) - f*).

    Raises
    ------
    AssumptionError
        An unknown variable, or a grid value the study rejects (see :func:`run_local_steps_study`).
    """
    if variable not in ("K", "R", "M", "topology"):
        raise AssumptionError(f"variable must be 'K', 'R', 'M' or 'topology', got {variable!r}")
    held = dict(steps_at or {})
    if set(held) - {"K", "R", "M"}:
        raise AssumptionError(
            f"steps_at holds the schedule's K, R or M, got {sorted(set(held) - {'K', 'R', 'M'})}"
        )
    N, C = n_clients, clusters
    alg = info(algorithm)
    prob = study_problem("pl", N, dim, sigma=sigma, sigma_g=sigma_g, seed=problem_seed)
    ids = list(range(seeds)) if seed_ids is None else [int(i) for i in seed_ids]
    curves, rhos, outs, steps = [], [], [], []
    for v in values:
        k, r, m, topo = K, R, M, topology
        if variable == "K":
            k = int(v)
        elif variable == "R":
            r = int(v)
        elif variable == "M":
            m = int(v)
        else:
            topo = str(v)
        eta, eta_l = step_sizes(
            schedule or algorithm,
            R=int(held.get("R", r)),
            K=int(held.get("K", k)),
            M=int(held.get("M", m)),
            N=N,
            clusters=C,
            c=c,
            c_l=c_l,
        )
        rho = rho_at(algorithm, topo, N, m, C, graph_seed)
        settings = dict(
            lr=eta_l, local_steps=k, global_lr=eta, topology=topo, clusters=C, graph_seed=graph_seed
        )
        accepted = alg.accepted()
        settings = {a: b for a, b in settings.items() if a in accepted}
        res = simulate(
            prob,
            algorithm,
            participation_for(algorithm, N, m, C),
            rounds=r,
            seeds=len(ids),
            seed=seed,
            seed_ids=ids,
            metrics=[metric],
            **settings,
        )
        g = np.where(res.diverged[:, None], np.nan, np.asarray(getattr(res, metric))[:, :r])
        curves.append(g)
        rhos.append(rho)
        cl = C if alg.clustered else 1
        outs.append(assumption_violations(algorithm, R=r, K=k, M=m, N=N, rho=rho, clusters=cl))
        steps.append({"eta": eta, "eta_l": eta_l})
    return GradientCurves(
        algorithm=algorithm,
        topology=topology,
        variable=variable,
        values=list(values),
        curves=curves,
        rho=rhos,
        outside=outs,
        settings={
            "K": K,
            "R": R,
            "M": M,
            "N": N,
            "C": C,
            "c": c,
            "c_l": c_l,
            "sigma": sigma,
            "sigma_g": sigma_g,
            "dim": dim,
            "seed": seed,
            "seed_ids": ids,
            "problem_seed": problem_seed,
            "graph_seed": graph_seed,
            "steps": steps,
            "schedule": schedule or algorithm,
            "steps_at": held,
            "metric": metric,
        },
    )
