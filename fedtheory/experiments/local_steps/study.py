"""The local-steps study and the rho ablation: run the grid, fit the exponents."""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from fedtheory.algorithms.registry import available, info
from fedtheory.analysis.rates import fit_power_law
from fedtheory.errors import AssumptionError
from fedtheory.experiments.local_steps.results import ExponentFit, LocalStepsStudy, StudyRun
from fedtheory.experiments.local_steps.theory import (
    assumption_violations,
    participation_for,
    rho_at,
    schedule_source,
    stated_exponents,
    step_sizes,
    study_problem,
)
from fedtheory.io import progress as bar
from fedtheory.simulation import simulate
from fedtheory.validation import check_int


def _ints(name: str, values: Sequence[int], minimum: int = 1) -> list[int]:
    vals = [check_int(name, v, minimum=minimum) for v in values]
    if not vals:
        raise AssumptionError(f"the grid of {name} is empty")
    return sorted(set(vals))


def run_local_steps_study(
    algorithms: Sequence[str] = ("fedamsgrad", "afga"),
    *,
    Ks: Sequence[int] = (1, 2, 4, 8, 16),
    Rs: Sequence[int] = (200,),
    Ms: Sequence[int] = (5,),
    topologies: Sequence[str] = ("ring", "random", "complete"),
    n_clients: int = 50,
    clusters: int = 5,
    dim: int = 10,
    problem: str = "pl",
    sigma: float = 1.0,
    sigma_g: float = 1.0,
    c_global: float = 0.05,
    c_local: float = 0.5,
    constants: dict | None = None,
    beta1: float = 0.9,
    beta2: float = 0.99,
    eps: float = 1e-8,
    eps_placement: str | None = None,
    seeds: int = 20,
    seed: int = 0,
    graph_seed: int = 0,
    problem_seed: int = 0,
    confidence: float = 0.95,
    backend: str | None = None,
    progress: bool = True,
) -> LocalStepsStudy:
    """Run the grid and fit the exponents of K, R and M (module docstring).

    Parameters
    ----------
    algorithms : sequence of str
        Registry names (``fedamsgrad``, ``afga``, ``afga-adapted``, ``cafga``, ``hafed``,
        ``dsgd``, ``fedavg``, ...).
    Ks, Rs, Ms : sequences of int
        The grid; an exponent is fitted along every axis with at least two values.
    topologies : sequence of str
        Gossip graph families (:data:`fedtheory.graphs.FAMILIES`); on all N clients for
        AFGA/DSGD, inside every cluster for CAFGA/HA-Fed. Algorithms without gossip run once.
    n_clients, clusters, dim : int
        N, C (clustered algorithms), d.
    problem : {"pl", "quadratic"}
    sigma, sigma_g : float
        Gradient-noise standard deviation per coordinate and heterogeneity (:func:`study_problem`).
    c_global, c_local : float
        Constants c, c_l of the schedules; ``constants={"afga": (c, c_l), ...}`` overrides them
        per algorithm.
    beta1, beta2, eps, eps_placement
        Server-optimizer constants (000 Algorithm 1 defaults).
    seeds, seed : int
        Seeds per grid point (one batched simulation) and the root seed (the same seeds at every
        grid point: common random numbers across the grid).
    graph_seed, problem_seed : int
        Seeds of the random topologies and of the problem.
    confidence : float
        Level of the exponents' confidence intervals.
    backend : {"numpy", "cupy", "strict"}, optional
    progress : bool
        Show a progress bar (stderr, only on a terminal).

    Returns
    -------
    LocalStepsStudy

    Raises
    ------
    AssumptionError
        Empty grids, M > N, M not a multiple of C for clustered algorithms, N not a multiple of
        C, unknown problem or topology.
    """

    t0 = time.perf_counter()
    Ks, Rs, Ms = _ints("K", Ks), _ints("R", Rs), _ints("M", Ms)
    N = check_int("the number of clients N", n_clients, minimum=2)
    C = check_int("the number of clusters C", clusters, minimum=1)
    S = check_int("the number of seeds", seeds, minimum=1)
    if max(Ms) > N:
        raise AssumptionError(f"M = {max(Ms)} participating clients exceed N = {N}")
    known = available()
    algorithms = list(dict.fromkeys(algorithms))
    for a in algorithms:
        if a not in known:
            raise AssumptionError(f"unknown algorithm {a!r}: choose one of {', '.join(known)}")
    if any(info(a).clustered for a in algorithms) and N % C:
        raise AssumptionError(f"N = {N} clients do not split into C = {C} equal clusters")
    topologies = list(dict.fromkeys(topologies)) or ["ring"]
    prob = study_problem(problem, N, dim, sigma=sigma, sigma_g=sigma_g, seed=problem_seed)
    constants = dict(constants or {})

    settings = dict(
        beta1=beta1,
        beta2=beta2,
        eps=eps,
        eps_placement=eps_placement,
        clusters=C,
        graph_seed=graph_seed,
    )
    runs: list[StudyRun] = []
    rho_cache: dict = {}
    jobs = _grid(algorithms, topologies, Rs, Ks, Ms)
    for a, topo, R, K, M in bar(jobs, desc="study", unit="run", disable=not progress):
        rk = (a, topo, M)
        if rk not in rho_cache:
            rho_cache[rk] = rho_at(a, topo, N, M, C, graph_seed)
        c, c_l = constants.get(a, (c_global, c_local))
        runs.append(
            _run_point(
                prob,
                a,
                topo,
                R,
                K,
                M,
                rho=rho_cache[rk],
                c=c,
                c_l=c_l,
                seeds=S,
                seed=seed,
                backend=backend,
                **settings,
            )
        )
    fits = fit_exponents(runs, confidence=confidence)
    config = {
        "algorithms": algorithms,
        "Ks": Ks,
        "Rs": Rs,
        "Ms": Ms,
        "topologies": topologies,
        "n_clients": N,
        "clusters": C,
        "dim": dim,
        "problem": problem,
        "sigma": sigma,
        "sigma_g": sigma_g,
        "c_global": c_global,
        "c_local": c_local,
        "constants": {k: list(v) for k, v in constants.items()},
        "beta1": beta1,
        "beta2": beta2,
        "eps": eps,
        "eps_placement": eps_placement,
        "seeds": S,
        "seed": seed,
        "graph_seed": graph_seed,
        "problem_seed": problem_seed,
        "confidence": confidence,
        "schedules": {a: schedule_source(a) for a in algorithms},
    }
    out = LocalStepsStudy(runs=runs, fits=fits, config=config)
    out.rho_trends = rho_trends(out)
    out.wall_time = time.perf_counter() - t0
    return out


def _grid(
    algorithms: list[str], topologies: list[str], Rs: list[int], Ks: list[int], Ms: list[int]
) -> list[tuple]:
    """Step 1 of the study: its grid points ``(algorithm, topology, R, K, M)``; an algorithm
    without gossip runs once (topology None), the adapted AFGA on a ring or complete graph formed
    on S_r (000 fn. 4)."""
    jobs = []
    for a in algorithms:
        topos = topologies if info(a).gossip else [None]
        if a == "afga-adapted":
            topos = [t for t in topologies if t in ("ring", "complete")] or ["ring"]
        for topo in topos:
            for R, K, M in itertools.product(Rs, Ks, Ms):
                jobs.append((a, topo, R, K, M))
    return jobs


def _run_point(
    prob: Any,
    a: str,
    topo: str | None,
    R: int,
    K: int,
    M: int,
    *,
    rho: Any,
    c: float,
    c_l: float,
    seeds: int,
    seed: int,
    backend: str | None,
    clusters: int,
    **constants: Any,
) -> StudyRun:
    """Step 2 of the study: one grid point run with its theorem schedule, its metrics read."""
    N, C = prob.n_clients, clusters
    eta, eta_l = step_sizes(a, R=R, K=K, M=M, N=N, clusters=C, c=c, c_l=c_l)
    model = participation_for(a, N, M, C)
    t1 = time.perf_counter()
    settings = dict(lr=eta_l, local_steps=K, global_lr=eta, topology=topo, clusters=C, **constants)
    # The study's constants apply to every algorithm of the grid that reads them.
    accepted = info(a).accepted()
    settings = {k: v for k, v in settings.items() if k in accepted}
    res = simulate(
        prob,
        a,
        model,
        rounds=R,
        seeds=seeds,
        seed=seed,
        backend=backend,
        metrics=["grad_norm2"],
        **settings,
    )
    g = res.grad_norm2[:, :R]  # x_1 .. x_R of the theorems (x_1 = the initial model)
    with np.errstate(all="ignore"):
        avg = np.where(res.diverged, np.nan, g.mean(axis=1))
        mn = np.where(res.diverged, np.nan, g.min(axis=1))
    cl = C if info(a).clustered else 1
    return StudyRun(
        algorithm=a,
        topology=topo,
        rho=rho,
        R=R,
        K=K,
        M=M,
        N=N,
        clusters=cl,
        eta=eta,
        eta_l=eta_l,
        avg=avg,
        min=mn,
        diverged=int(res.diverged.sum()),
        outside=assumption_violations(a, R=R, K=K, M=M, N=N, rho=rho, clusters=cl),
        wall_time=time.perf_counter() - t1,
    )


def fit_exponents(
    runs: Sequence[StudyRun], *, confidence: float = 0.95, metrics: Sequence[str] = ("avg", "min")
) -> list[ExponentFit]:
    """Power-law exponents of each metric along K, R and M, per (algorithm, topology).

    For every axis with at least two grid values and every setting of the other two, the
    per-seed slopes of log metric on log variable are averaged with a t-interval over seeds
    (:func:`fedtheory.analysis.rates.fit_power_law`). Seeds that diverged or reached a metric
    of zero at some grid point are left out of that fit (``n_seeds`` says how many remain).
    """

    out: list[ExponentFit] = []
    groups: dict = {}
    for r in runs:
        groups.setdefault(r.key, []).append(r)
    axes = {"K": ("R", "M"), "R": ("K", "M"), "M": ("R", "K")}
    for (alg, topo), rs in groups.items():
        for var, others in axes.items():
            settings = sorted({tuple(getattr(r, o) for o in others) for r in rs})
            for fixed in settings:
                line = sorted(
                    (r for r in rs if tuple(getattr(r, o) for o in others) == fixed),
                    key=lambda r: getattr(r, var),
                )
                if len(line) < 2:
                    continue
                x = np.array([getattr(r, var) for r in line], dtype=float)
                for metric in metrics:
                    Y = np.stack([getattr(r, metric) for r in line], axis=1)  # (S, points)
                    ok = np.all(np.isfinite(Y) & (Y > 0), axis=1)
                    stated = stated_exponents(alg, partial=line[0].M < line[0].N)
                    outside = sorted({v for r in line for v in r.outside})
                    rhos = {r.rho for r in line}
                    rho = line[0].rho if len(rhos) == 1 else None
                    if ok.sum() == 0:
                        pl = None
                    else:
                        pl = fit_power_law(x, Y[ok], confidence=confidence)
                    nan = float("nan")
                    out.append(
                        ExponentFit(
                            algorithm=alg,
                            topology=topo,
                            rho=rho,
                            variable=var,
                            metric=metric,
                            fixed=dict(zip(others, fixed, strict=True)),
                            x=x.tolist(),
                            exponent=pl.exponent if pl else nan,
                            ci_low=pl.ci_low if pl else nan,
                            ci_high=pl.ci_high if pl else nan,
                            stderr=pl.stderr if pl else nan,
                            r2=pl.r2 if pl else nan,
                            n_seeds=int(ok.sum()),
                            stated=None if stated is None else stated[var],
                            outside=outside,
                            confidence=confidence,
                        )
                    )
    return out


def rho_trends(result: LocalStepsStudy, metric: str = "avg") -> list[dict]:
    """Does a smaller rho converge faster? (claim A4).

    For each algorithm and each (R, K, M) with at least two topologies of distinct rho: the
    Spearman rank correlation between rho and the seed-mean metric (positive: smaller rho,
    smaller metric), and the per-seed fraction of topology pairs ordered like their rho.
    """

    out = []
    groups: dict = {}
    for r in result.runs:
        if r.rho is None:
            continue
        groups.setdefault((r.algorithm, r.R, r.K, r.M), []).append(r)
    for (alg, R, K, M), rs in sorted(groups.items(), key=lambda kv: str(kv[0])):
        if len({r.rho for r in rs}) < 2:
            continue
        rs = sorted(rs, key=lambda r: r.rho)
        rho = np.array([r.rho for r in rs])
        Y = np.stack([getattr(r, metric) for r in rs], axis=1)  # (S, T)
        mean = np.nanmean(Y, axis=0)
        sp = stats.spearmanr(rho, mean) if len(rs) > 2 else None
        pairs = [(i, j) for i in range(len(rs)) for j in range(i + 1, len(rs)) if rho[i] < rho[j]]
        with np.errstate(invalid="ignore"):
            agree = np.nanmean([np.mean(Y[:, i] < Y[:, j]) for i, j in pairs]) if pairs else np.nan
        out.append(
            {
                "algorithm": alg,
                "R": R,
                "K": K,
                "M": M,
                "metric": metric,
                "topologies": [r.topology for r in rs],
                "rho": rho.tolist(),
                "mean": mean.tolist(),
                "spearman": None if sp is None else float(sp.statistic),
                "pair_fraction_ordered": float(agree),
                "smaller_rho_faster": bool(np.all(np.diff(mean) > 0)),
            }
        )
    return out


def run_rho_ablation(
    algorithms: Sequence[str] = ("afga",),
    *,
    topologies: Sequence[str] = ("complete", "complete-random", "random", "torus", "ring"),
    K: int = 8,
    R: int = 200,
    M: int = 5,
    **kw: Any,
) -> LocalStepsStudy:
    """Metric against rho (claim A4; 000 Fig. 1, 004 Fig. 2b): one (R, K, M), many topologies.

    Keywords go to :func:`run_local_steps_study`. ``result.rho_trends`` holds the rank
    correlation of rho and the metric per algorithm.
    """
    return run_local_steps_study(algorithms, Ks=(K,), Rs=(R,), Ms=(M,), topologies=topologies, **kw)


# ----------------------------------------------------------------------------------------------
# Plots
