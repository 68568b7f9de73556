"""000 Table 7 in simulated time: rounds to a target turned into hours (claim A6).

Every algorithm runs on the local-steps study's problem with its theorem step-size schedule
(:mod:`fedtheory.experiments.local_steps`), and the per-round times of a
:class:`~fedtheory.analysis.comm_time.CommTimeModel` (000 Appendix B.1.1: 1.8 s client to
client, 18 s client to server) turn rounds into hours.
"""

from __future__ import annotations

from typing import Any

from fedtheory.algorithms.registry import info
from fedtheory.analysis.comm_time import CommTimeModel, rank_by_time
from fedtheory.errors import AssumptionError
from fedtheory.experiments.local_steps import participation_for, step_sizes, study_problem
from fedtheory.simulation import simulate

__all__ = ["run_time_to_target"]


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
) -> dict:
    """Simulated counterpart of 000 Table 7 (claim A6): time to each target per algorithm.

    Every algorithm runs on the study problem (:func:`fedtheory.experiments.local_steps.study_problem`)
    with its theorem step-size schedule (:func:`fedtheory.experiments.local_steps.step_sizes`; keywords
    ``c_global``, ``c_local``, ``dim``, ``problem``, ``sigma``, ``sigma_g`` as in
    :func:`~fedtheory.experiments.local_steps.run_local_steps_study`) in 000's Setting 1 by default
    (N = 100, M = 5, C = 5 clusters, K = 24), and the per-round times of ``model`` turn rounds
    into hours. Returns ``{"targets": {target: [TimeToTarget, ...] fastest first}, ...}``.
    """
    kw = dict(study_kw)
    c, c_l = kw.pop("c_global", 0.05), kw.pop("c_local", 0.5)
    prob = study_problem(
        kw.pop("problem", "pl"), n_clients, kw.pop("dim", 10),
        sigma=kw.pop("sigma", 1.0), sigma_g=kw.pop("sigma_g", 1.0),
    )  # fmt: skip
    if kw:
        raise AssumptionError(f"unknown keywords {sorted(kw)}")
    results = {}
    for a in algorithms:
        eta, eta_l = step_sizes(a, R=rounds, K=local_steps, M=clients_per_round, N=n_clients,
                                clusters=clusters, c=c, c_l=c_l)  # fmt: skip
        results[a] = simulate(
            prob, a, participation_for(a, n_clients, clients_per_round, clusters), rounds=rounds,
            seeds=seeds, seed=seed, lr=eta_l, local_steps=local_steps, global_lr=eta,
            topology=topology if info(a).gossip else None,
            clusters=clusters if info(a).clustered else None,
        )  # fmt: skip
    return {
        "model": model or CommTimeModel(),
        "results": results,
        "targets": {t: rank_by_time(results, t, model=model, metric=metric) for t in targets},
    }
