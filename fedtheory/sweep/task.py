"""What one sweep task computes: one :func:`fedtheory.simulation.simulate` call.

A task's configuration builds the problem with :func:`fedtheory.problems.make_problem`, the
participation model with the one builder of ``fedtheory simulate``
(:func:`~fedtheory.simulation.spec.build_participation`), and runs the block's seeds as one batched call with
``seed_ids=block``. Seed s of a sweep therefore has the numbers of
``simulate(..., seeds=len(block), seed_ids=block)`` on the same machine, bit for bit (a seed's
numbers depend on the size of its block, see :func:`~fedtheory.simulation.simulate`).

This module runs on the Dask workers; it needs only the core package.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedtheory.algorithms import make_algorithm
from fedtheory.algorithms.registry import SHARED_SETTINGS, resolve_algorithm
from fedtheory.errors import FedTheoryError
from fedtheory.problems import make_problem
from fedtheory.simulation import simulate
from fedtheory.simulation.spec import PARTICIPATION_SETTINGS, BuiltParticipation
from fedtheory.simulation.spec import build_participation as build
from fedtheory.sweep.spec import KEYS, RUN_DIM, Spec, Task
from fedtheory.validation import check_local_steps

#: Keys of a spec that go to :func:`simulate` as algorithm configuration, unchanged: the
#: registry's shared settings.
ALGORITHM_KEYS = SHARED_SETTINGS


@dataclass(frozen=True)
class TaskResult:
    """The arrays a task writes into its region of the store.

    Attributes
    ----------
    error : ndarray (seeds, rounds + 1)
        ||x_r - x*|| / ||x*|| of the server model (NaN from a seed's divergence on).
    x_final : ndarray (seeds, d)
    diverged : ndarray of bool (seeds,)
    diverged_at : ndarray of int (seeds,); -1 where the seed did not diverge
    diverging : ndarray of bool (seeds,)
        The error grew by the simulator's divergence growth factor (see
        :func:`~fedtheory.simulation.simulate`).
    diverging_at : ndarray of int (seeds,); -1 where the seed was not flagged
    wall_time : float
        Seconds in the simulator's round loop.
    """

    error: np.ndarray
    x_final: np.ndarray
    diverged: np.ndarray
    diverged_at: np.ndarray
    diverging: np.ndarray
    diverging_at: np.ndarray
    wall_time: float


def build_problem(config: dict) -> Any:
    """The task's problem (float32 when ``config["float32"]``)."""
    return make_problem(
        config["problem"],
        path=config["problem_file"],
        seed=config["seed"],
        dtype=np.float32 if config["float32"] else None,
    )


def build_participation(config: dict, problem: Any) -> BuiltParticipation:
    """The task's participation model on ``problem`` and where its probabilities came from:
    the one builder of models from flat settings
    (:func:`~fedtheory.simulation.spec.build_participation`), as ``fedtheory simulate``'s
    (``weighted`` without probabilities takes the problem's own, as figure4's).

    Raises
    ------
    FedTheoryError
        Naming the spec key: a model that needs ``clients_per_round`` or ``clusters`` without
        it, ``clients_per_round`` above N (or the cluster size), clusters that do not divide N.
    """
    settings = {k: config[k] for k in PARTICIPATION_SETTINGS if k in config}
    return build(config["participation"], problem, **settings)


def run_task(task: Task) -> TaskResult:
    """Run one task: its grid point's configuration on its block of seeds, one batched call.

    A user's algorithm (``/path/file.py:NAME`` in the spec) is imported here, on the worker
    that runs the task (:func:`~fedtheory.algorithms.registry.resolve_algorithm`)."""
    c = task.config
    problem = build_problem(c)
    model = build_participation(c, problem).model
    res = simulate(
        problem,
        resolve_algorithm(c["algorithm"]).name,
        model,
        rounds=c["rounds"],
        seeds=len(task.seed_ids),
        seed=c["seed"],
        seed_ids=list(task.seed_ids),
        aggregation=c["aggregation"],
        backend=c["backend"],
        dtype=np.float32 if c["float32"] else None,
        # the store keeps the error curve only: the other metrics are not computed at all
        metrics=["error"] if problem.x_star is not None else None,
        **{k: c[k] for k in ALGORITHM_KEYS},
        **c.get("options", {}),
    )
    return TaskResult(
        error=np.asarray(res.error, dtype=np.float64),
        x_final=np.asarray(res.x_final, dtype=np.float64),
        diverged=np.asarray(res.diverged, dtype=bool),
        diverged_at=np.asarray(res.diverged_at, dtype=np.int64),
        diverging=np.asarray(res.diverging, dtype=bool),
        diverging_at=np.asarray(res.diverging_at, dtype=np.int64),
        wall_time=float(res.wall_time),
    )


@dataclass(frozen=True)
class SpecCheck:
    """What building a spec's grid found (:func:`check_spec`).

    Attributes
    ----------
    dim : int
        The largest problem dimension d over the grid (the length of ``x_final``'s last axis).
    problem_p : tuple of str
        The problems that lend their own participation probabilities (``participation_p``) to
        a model that takes draw weights and was given none (``weighted`` on figure4), sorted.
    """

    dim: int
    problem_p: tuple[str, ...] = ()


def check_spec(spec: Spec) -> SpecCheck:
    """Build every problem, participation model and algorithm the grid names, before any task.

    A bad combination (``clients_per_round`` above a problem's N, an unknown topology, clusters
    that do not divide N) is reported once, naming it, instead of failing on a worker.

    Returns
    -------
    SpecCheck

    Raises
    ------
    FedTheoryError
        The first combination that cannot be built, with the grid values that make it; a
        number of local steps K whose pass takes longer than the time limit
        (:func:`~fedtheory.validation.check_local_steps`).
    """
    structural = (
        "problem",
        "problem_file",
        "participation",
        *PARTICIPATION_SETTINGS,
        "algorithm",
        "topology",
    )
    # the axes that set a structural key (or an algorithm's own settings) run over all their
    # points; the others stay at their first point: only these keys can fail here
    axes = spec.axes
    steps = [v for a in axes if "local_steps" in a.keys for v in a.values("local_steps")]
    if not isinstance(spec.values.get("local_steps"), tuple | type(None)):
        steps.append(spec.values["local_steps"])
    for K in steps:  # a task's pass of K steps runs one after the other: sized before Dask
        check_local_steps(K)
    involved = [a.name == RUN_DIM or any(k in structural for k in a.keys) for a in axes]
    base = {k: v for k, v in spec.values.items() if k in KEYS and not isinstance(v, tuple)}
    for a, inv in zip(axes, involved, strict=True):
        if not inv:
            base.update(zip(a.keys, a.points[0], strict=True))
    chosen = [a for a, inv in zip(axes, involved, strict=True) if inv]
    dim = 0
    problems: dict = {}
    lent: set[str] = set()
    for combo in itertools.product(*(a.points for a in chosen)):
        config = dict(base)
        for a, point in zip(chosen, combo, strict=True):
            config.update(zip(a.keys, point, strict=True))
        where = ", ".join(f"{k}={config[k]!r}" for a in chosen for k in a.keys)
        try:
            pkey = (config["problem"], config["problem_file"])
            if pkey not in problems:
                problems[pkey] = build_problem(config)
            problem = problems[pkey]
            if build_participation(config, problem).probabilities_from == "problem":
                lent.add(str(config["problem_file"] or config["problem"]))
            make_algorithm(
                resolve_algorithm(config["algorithm"]).name,
                problem=problem,
                **{k: config[k] for k in ALGORITHM_KEYS},
                **spec.options(config["algorithm"]),
            )
        except FedTheoryError as exc:
            raise FedTheoryError(f"{spec.source}{f' at {where}' if where else ''}: {exc}") from exc
        dim = max(dim, int(problem.dim))
    return SpecCheck(dim, tuple(sorted(lent)))
