"""000 Table 7 in simulated time: rounds to a target turned into hours (claim A6).

Every algorithm runs on the local-steps study's problem with its theorem step-size schedule
(:mod:`fedtheory.experiments.local_steps`), and the per-round times of a
:class:`~fedtheory.analysis.comm_time.CommTimeModel` (000 Appendix B.1.1: 1.8 s client to
client, 18 s client to server) turn rounds into hours.

The schedules carry different Theta-factors (AFGA's server step c N sqrt(K) / M against
FedAMSGrad's c sqrt(K M)), so one constant c is not a fair comparison: :func:`tune_constant`
gives each algorithm the same tuning budget (the same grid of c, on seeds disjoint from the
evaluation's) for its own schedule, and :func:`hours_to_target` evaluates the chosen constant.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from fedtheory.algorithms.registry import info
from fedtheory.analysis.comm_time import CommTimeModel, rank_by_time, rounds_to_target
from fedtheory.errors import AssumptionError
from fedtheory.experiments.local_steps import participation_for, step_sizes, study_problem
from fedtheory.experiments.result import ExperimentResult
from fedtheory.experiments.tuning import INTERIOR, Axis, tune_grid
from fedtheory.io import jsonable
from fedtheory.simulation import simulate

__all__ = [
    "TimeToTargetResult",
    "Tuning",
    "hours_to_target",
    "run_time_to_target",
    "tune_constant",
]

#: 000 Setting 1 (Table 7): N = 100 clients, M = 5 per round, C = 5 clusters, K = 24, ring.
SETTING1 = {
    "n_clients": 100,
    "clients_per_round": 5,
    "clusters": 5,
    "local_steps": 24,
    "topology": "ring",
}


def _simulate(
    prob: Any,
    algorithm: str,
    *,
    c: float,
    c_l: float,
    rounds: int,
    local_steps: int,
    n_clients: int,
    clients_per_round: int,
    clusters: int,
    topology: str,
    seed: int,
    seed_ids: Sequence[int],
) -> Any:
    """One algorithm with its theorem schedule at constants (c, c_l); the gossip settings only
    go to the algorithms that read them."""
    N, M, C, K = n_clients, clients_per_round, clusters, local_steps
    eta, eta_l = step_sizes(algorithm, R=rounds, K=K, M=M, N=N, clusters=C, c=c, c_l=c_l)
    alg = info(algorithm)
    settings = {
        "lr": eta_l,
        "local_steps": K,
        "global_lr": eta,
        "topology": topology,
        "clusters": C if alg.clustered else None,
    }
    accepted = alg.accepted()
    settings = {k: v for k, v in settings.items() if k in accepted and v is not None}
    ids = list(seed_ids)
    return simulate(
        prob,
        algorithm,
        participation_for(algorithm, N, M, C),
        rounds=rounds,
        seeds=len(ids),
        seed=seed,
        seed_ids=ids,
        metrics=["grad_norm2"],
        **settings,
    )


@dataclass(repr=False)
class TimeToTargetResult(ExperimentResult):
    """:func:`run_time_to_target`'s result.

    Attributes
    ----------
    model : CommTimeModel
        The per-round communication times that turn rounds into hours.
    results : dict
        Algorithm -> its run (per-seed metric curves).
    targets : dict
        Target -> the algorithms' :class:`~fedtheory.analysis.comm_time.TimeToTarget`,
        fastest first.
    """

    model: CommTimeModel
    results: dict
    targets: dict

    def _summary(self) -> str:
        return "; ".join(
            f"{t}: " + " < ".join(r.algorithm for r in ranked) for t, ranked in self.targets.items()
        )

    def to_dict(self) -> dict[str, Any]:
        """The model and the ranking (the runs' curves stay in ``results``)."""
        return jsonable(
            {
                "model": asdict(self.model),
                "targets": {str(t): [asdict(r) for r in v] for t, v in self.targets.items()},
            }
        )


def run_time_to_target(
    algorithms: tuple = ("fedamsgrad", "afga", "cafga"),
    targets: tuple = (1.0, 0.1),
    *,
    rounds: int = 300,
    local_steps: int = 24,
    n_clients: int = 100,
    clients_per_round: int = 5,
    clusters: int = 5,
    topology: str = "ring",
    model: CommTimeModel | None = None,
    metric: str = "grad_norm2",
    seeds: int = 5,
    seed: int = 0,
    **study_kw: Any,
) -> TimeToTargetResult:
    """Simulated counterpart of 000 Table 7: time to each target per algorithm (one constant).

    Every algorithm runs on the study problem (:func:`~fedtheory.experiments.local_steps.
    study_problem`) with its theorem step-size schedule (:func:`~fedtheory.experiments.
    local_steps.step_sizes`; keywords ``c_global``, ``c_local``, ``dim``, ``problem``,
    ``sigma``, ``sigma_g``) in 000's Setting 1 by default (N = 100, M = 5, C = 5 clusters,
    K = 24), and the per-round times of ``model`` turn rounds into hours. Returns a
    :class:`TimeToTargetResult` (``.targets[target]``: the algorithms fastest first). One constant c for every
    schedule favours the schedule with the largest Theta-factor: claim A6 tunes each
    (:func:`tune_constant`).
    """
    kw = dict(study_kw)
    c, c_l = kw.pop("c_global", 0.05), kw.pop("c_local", 0.5)
    prob = study_problem(
        kw.pop("problem", "pl"),
        n_clients,
        kw.pop("dim", 10),
        sigma=kw.pop("sigma", 1.0),
        sigma_g=kw.pop("sigma_g", 1.0),
    )
    if kw:
        raise AssumptionError(f"unknown keywords {sorted(kw)}")
    results = {
        a: _simulate(
            prob,
            a,
            c=c,
            c_l=c_l,
            rounds=rounds,
            local_steps=local_steps,
            n_clients=n_clients,
            clients_per_round=clients_per_round,
            clusters=clusters,
            topology=topology,
            seed=seed,
            seed_ids=range(seeds),
        )
        for a in algorithms
    }
    return TimeToTargetResult(
        model=model or CommTimeModel(),
        results=results,
        targets={t: rank_by_time(results, t, model=model, metric=metric) for t in targets},
    )


def hours_to_target(
    algorithm: str,
    c: float,
    target: float,
    *,
    seed: int = 0,
    seed_ids: Sequence[int] = (0,),
    rounds: int = 300,
    c_l: float = 0.5,
    sigma: float = 1.0,
    sigma_g: float = 1.0,
    dim: int = 10,
    model: CommTimeModel | None = None,
    stay: bool = False,
    **setting: Any,
) -> tuple[np.ndarray, np.ndarray]:
    """Hours for ``algorithm`` (constant ``c`` in its schedule) to reach
    ||grad f(x_r)||^2 <= ``target`` (``stay=True``: to stay below it until the horizon, not
    the first noisy crossing), per seed (inf: not within ``rounds``), and the final metric per
    seed (mean over the last 10 rounds). ``setting`` overrides :data:`SETTING1`."""
    cfg = {**SETTING1, **setting}
    unknown = sorted(set(cfg) - set(SETTING1))
    if unknown:
        raise AssumptionError(f"unknown setting keywords {unknown}: choose from {list(SETTING1)}")
    prob = study_problem("pl", cfg["n_clients"], dim, sigma=sigma, sigma_g=sigma_g)
    res = _simulate(
        prob, algorithm, c=c, c_l=c_l, rounds=rounds, seed=seed, seed_ids=seed_ids, **cfg
    )
    g = np.asarray(res.grad_norm2)
    per_round = (model or CommTimeModel()).round_time(algorithm, cfg["local_steps"])
    hours = rounds_to_target(g, target, stay=stay) * per_round / 3600.0
    with np.errstate(all="ignore"):
        final = np.nanmean(g[:, -10:], axis=1)
    return hours, final


@dataclass(frozen=True)
class Tuning:
    """The result of :func:`tune_constant`: the chosen c, every grid point's score, and whether
    the choice is interior (``status``: "interior", or why not)."""

    algorithm: str
    c: float
    grid: tuple
    median_hours: tuple
    median_final: tuple
    seed: int
    seed_ids: tuple
    status: str = "interior"

    @property
    def interior(self) -> bool:
        return self.status == INTERIOR


def tune_constant(
    algorithm: str,
    grid: Sequence[float],
    target: float,
    *,
    seed: int = 0,
    seed_ids: Sequence[int] = (1000, 1001),
    max_extensions: int = 6,
    refine: float | None = None,
    **kw: Any,
) -> Tuning:
    """Pick the constant c of ``algorithm``'s schedule on the tuning seeds, extending ``grid``
    past its edge until the choice is interior (:func:`~fedtheory.experiments.tuning.tune_grid`;
    at most ``max_extensions`` values added), then with ``refine`` bisecting the gaps next to
    the choice until neighbouring values differ by at most that ratio.

    Criterion: the smallest median (over ``seed_ids``) hours to ``target``; a value that does
    not reach it in more than half of the seeds scores by its median final metric after every
    value that does. Equal scores keep the first value evaluated. Keywords go to
    :func:`hours_to_target` (e.g. ``stay=True``).
    """
    runs: dict[float, tuple[float, float]] = {}

    def score(point: dict) -> tuple:
        h, f = hours_to_target(algorithm, point["c"], target, seed=seed, seed_ids=seed_ids, **kw)
        runs[point["c"]] = (float(np.median(h)), float(np.nanmedian(f)))
        return runs[point["c"]]

    t = tune_grid(score, [Axis("c", tuple(grid))], max_extensions=max_extensions, refine=refine)
    cs = sorted(runs)
    return Tuning(
        algorithm,
        float(t.best["c"]),
        tuple(cs),
        tuple(runs[c][0] for c in cs),
        tuple(runs[c][1] for c in cs),
        int(seed),
        tuple(int(i) for i in seed_ids),
        t.status["c"],
    )
