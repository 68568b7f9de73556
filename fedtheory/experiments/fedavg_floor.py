"""FedAvg's error floor against the step size: 003 Theorem 2 and Corollaries 1-3 (claims F2, F3).

FedAvg on a heterogeneous strongly convex quadratic (:func:`floor_problem`: N = 10 clients,
d = 5, condition number 10, where x*, x_q* and FedAvg's fixed points are linear solves) under
M-of-N participation, for several step sizes eta. Each run lasts R = 40 / (eta mu K) rounds (40
e-foldings of the slowest mode) so that the floor, not the transient, is measured. Per seed,
over the last half of its run: the median of ||x_r - x*|| / ||x*|| (``floors``,
:func:`fedtheory.analysis.rates.error_floor`) and the time average of ||x_r - x*||^2 / ||x*||^2
(``mean_square``, an estimate of the stationary mean-square error).

Next to the measurement, the exact values: the stationary mean-square error
lim_r E||x_r - x*||^2 of FedAvg's random affine round (:func:`fedtheory.analysis.exact.exact_rates`),
which is what the time average estimates; the distance of the stationary mean
(I - E[M_S])^{-1} E[c_S] from x* (:mod:`fedtheory.analysis.closed_forms`), the bias part of
it; and the eta -> 0 limit ||x_q* - x*|| (zero under uniform participation).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fedtheory.analysis.closed_forms import fedavg_stationary_mean, weighted_optimum
from fedtheory.analysis.exact import exact_rates
from fedtheory.analysis.rates import error_floor
from fedtheory.experiments.result import ExperimentResult
from fedtheory.io import pyplot
from fedtheory.participation import make_participation
from fedtheory.problems.quadratic import QuadraticProblem, figure4_probabilities, random_quadratic
from fedtheory.simulation import simulate

__all__ = [
    "FloorRegime",
    "FloorResult",
    "FloorRun",
    "floor_problem",
    "measure_floors",
    "plot_fedavg_floor",
    "run_fedavg_floor",
]


def floor_problem(
    n_clients: int = 10, dim: int = 5, *, identical: bool = False, seed: int = 0
) -> QuadraticProblem:
    """The heterogeneous quadratic of claims F1-F3 (condition number 10, heterogeneity 1;
    ``identical=True`` makes every f_i the same, 003 Corollary 3)."""
    return random_quadratic(
        n_clients, dim, condition=10, heterogeneity=1.0, identical=identical, seed=seed
    )


@dataclass(frozen=True)
class FloorRun:
    """The measured floor at one step size, one value per seed: ``floors`` (median of the
    relative error over the last half) and ``mean_square`` (time average of its square)."""

    eta: float
    rounds: int
    floors: np.ndarray
    mean_square: np.ndarray


def measure_floors(
    problem: Any, model: Any, etas: Any, local_steps: int, seeds: int, seed: int
) -> list[FloorRun]:
    """FedAvg's per-seed error floor at every eta (runs of 40 / (eta mu K) rounds)."""
    out = []
    for eta in etas:
        rounds = int(np.ceil(40 / (eta * problem.mu * local_steps)))
        res = simulate(
            problem,
            "fedavg",
            model,
            rounds=rounds,
            seeds=seeds,
            seed=seed,
            lr=eta,
            local_steps=local_steps,
            record_every=max(1, rounds // 400),
        )
        err = np.asarray(res.error)
        per_seed = np.array([error_floor(e[np.isfinite(e)], tail=0.5) for e in err])
        tail = err[:, err.shape[1] // 2 :]  # rounds not recorded are NaN
        out.append(FloorRun(float(eta), rounds, per_seed, np.nanmean(tail**2, axis=1)))
    return out


def exact_floors(problem: Any, model: Any, etas: Any, local_steps: int) -> list[float]:
    """FedAvg's exact relative mean-square floor lim_r E||x_r - x*||^2 / ||x*||^2 per eta."""
    return [
        float(
            exact_rates(
                problem, "fedavg", model, lr=e, local_steps=local_steps
            ).stationary_mse_relative
        )
        for e in etas
    ]


@dataclass(repr=False)
class FloorRegime(ExperimentResult):
    """FedAvg's floor against eta under one sampling (uniform or weighted).

    Attributes
    ----------
    q : array
        The effective FedAvg weights (003 Sec. 2).
    limit : float
        The eta -> 0 limit ||x_q* - x*|| / ||x*||.
    etas : list of float
    floor_mean, floor_stderr : list of float
        The measured floor (mean, standard error over seeds).
    rms_floor, rms_floor_stderr : list of float
        The root of the time-averaged squared error and its delta-method standard error.
    exact_rms_floor : list of float
        sqrt(lim E||x_r - x*||^2) / ||x*||, exactly (:mod:`fedtheory.analysis.exact`).
    stationary_mean_error : list of float
        ||stationary mean - x*|| / ||x*|| (the closed form, the bias part).
    rounds : list of int
    """

    q: Any
    limit: float
    etas: list
    floor_mean: list
    floor_stderr: list
    rms_floor: list
    rms_floor_stderr: list
    exact_rms_floor: list
    stationary_mean_error: list
    rounds: list


@dataclass(repr=False)
class FloorResult(ExperimentResult):
    """:func:`run_fedavg_floor`'s result: the setting and one :class:`FloorRegime` per
    sampling (``result.regimes["weighted"].exact_rms_floor``)."""

    x_star_norm: float
    clients: int
    clients_per_round: int
    local_steps: int
    regimes: dict

    def _summary(self) -> str:
        return "; ".join(
            f"{k}: eta -> 0 limit {r.limit:.3g}, exact RMS floor {r.exact_rms_floor[0]:.3g} at "
            f"eta = {r.etas[0]:g}"
            for k, r in self.regimes.items()
        )


def run_fedavg_floor(
    *,
    clients: int = 10,
    dim: int = 5,
    clients_per_round: int = 3,
    local_steps: int = 2,
    etas: tuple[float, ...] = (0.3, 0.1, 0.03, 0.01),
    seeds: int = 8,
    seed: int = 0,
) -> FloorResult:
    """Uniform against weighted (the Figure 4 recipe) sampling of ``clients_per_round`` of ``clients``:
    measured floors (mean and standard error over seeds; the root of the time-averaged squared
    error with its delta-method standard error), the exact root-mean-square floor and the
    closed forms, per eta."""
    prob = floor_problem(clients, dim, seed=seed)
    xs = prob.x_star
    norm = float(np.linalg.norm(xs))
    models = {
        "uniform": make_participation("uniform", clients, clients_per_round),
        "weighted": make_participation(
            "weighted", clients, clients_per_round, p=figure4_probabilities(clients)
        ),
    }
    data: dict[str, Any] = {
        "x_star_norm": norm,
        "clients": clients,
        "clients_per_round": clients_per_round,
        "local_steps": local_steps,
        "regimes": {},
    }
    for name, model in models.items():
        q = model.effective_weights("mean").value
        runs = measure_floors(prob, model, etas, local_steps, seeds, seed)
        closed = [
            float(np.linalg.norm(fedavg_stationary_mean(prob, e, local_steps, model).x - xs) / norm)
            for e in etas
        ]
        ms = [r.mean_square for r in runs]
        rms = [float(np.sqrt(m.mean())) for m in ms]
        data["regimes"][name] = FloorRegime(
            **{
                "q": q,
                "limit": float(np.linalg.norm(weighted_optimum(prob, q) - xs) / norm),
                "etas": list(etas),
                "floor_mean": [float(r.floors.mean()) for r in runs],
                "floor_stderr": [
                    float(r.floors.std(ddof=1) / np.sqrt(r.floors.size)) for r in runs
                ],
                "rms_floor": rms,
                # delta method: se(sqrt(m)) = se(m) / (2 sqrt(m))
                "rms_floor_stderr": [
                    float(m.std(ddof=1) / np.sqrt(m.size) / (2 * v))
                    for m, v in zip(ms, rms, strict=True)
                ],
                "exact_rms_floor": [
                    float(np.sqrt(v)) for v in exact_floors(prob, model, etas, local_steps)
                ],
                "stationary_mean_error": closed,
                "rounds": [r.rounds for r in runs],
            }
        )
    return FloorResult(**data)


def plot_fedavg_floor(data: FloorResult) -> Any:
    """Per regime: the measured root-mean-square floor with error bars, the exact one (solid:
    sqrt(lim E||x_r - x*||^2) / ||x*||), the stationary mean's distance from x* (dotted, its
    bias part) and the eta -> 0 limit (dashed); returns the matplotlib Figure."""
    fig, ax = pyplot().subplots(figsize=(6.5, 4.5))
    for (name, reg), color in zip(data.regimes.items(), ("C0", "C3"), strict=False):
        etas = reg.etas
        ax.errorbar(
            etas,
            reg.rms_floor,
            yerr=reg.rms_floor_stderr,
            marker="o",
            ls="none",
            color=color,
            capsize=3,
            label=f"{name}: measured (RMS over the tail)",
        )
        ax.plot(
            etas,
            reg.exact_rms_floor,
            ls="-",
            color=color,
            lw=1,
            label=rf"{name}: exact $\sqrt{{\lim\, E\|x_r - x^\star\|^2}}$",
        )
        ax.plot(
            etas,
            reg.stationary_mean_error,
            ls=":",
            color=color,
            label=rf"{name}: $\|\bar x - x^\star\|$, the stationary mean's bias",
        )
        if reg.limit > 1e-10:  # uniform participation: x_q* = x*, the limit is 0
            ax.axhline(
                reg.limit,
                ls="--",
                color=color,
                lw=1,
                label=rf"{name}: $\eta \to 0$ limit $\|x_q^\star - x^\star\|$ = {reg.limit:.3f}",
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"step size $\eta$")
    ax.set_ylabel(r"$\|x - x^\star\| \,/\, \|x^\star\|$")
    ax.set_title(
        f"FedAvg floor, N={data.clients}, M={data.clients_per_round}, K={data.local_steps} "
        "(003 Thm 2, Cor. 1-3)"
    )
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
