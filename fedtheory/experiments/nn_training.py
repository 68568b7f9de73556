"""Federated training of a network problem with the simulator's algorithms.

:func:`train` runs one registered algorithm (built by
:func:`fedtheory.algorithms.registry.make_algorithm`, never re-implemented here) for all seeds at
once through the simulator's one round loop (:func:`fedtheory.simulation.simulate`): the same
per-seed SeedSequence children, participation draws on stream 0, AFGA's per-step re-sampled sets
on stream 1, gradient minibatches on stream 2, so a seed's bits do not depend on how many seeds
run beside it; the test accuracy and the training loss are metrics of ``(state, problem)``
handed to the runner, recorded every ``eval_every`` rounds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedtheory.participation import make_participation
from fedtheory.problems.nn.problem import MLPProblem
from fedtheory.simulation import simulate
from fedtheory.validation import check_int

__all__ = ["TrainResult", "train"]


@dataclass
class TrainResult:
    """Accuracy curves of one algorithm over seeds.

    Attributes
    ----------
    algorithm : str
    rounds : ndarray (E,)
        The evaluated rounds (0 = the initial model).
    accuracy : ndarray (S, E)
        Test accuracy of the server model per seed and evaluated round.
    train_loss : ndarray (S, E)
        f(x) = (1/N) sum_i f_i(x) on the clients' training data.
    x_final : ndarray (S, P)
        The final server models.
    wall_time : float
        Seconds in the round loop.
    config : dict
    """

    algorithm: str
    rounds: np.ndarray
    accuracy: np.ndarray
    train_loss: np.ndarray
    x_final: np.ndarray
    wall_time: float
    config: dict = field(default_factory=dict)

    @property
    def final_accuracy(self) -> np.ndarray:
        """(S,) accuracy at the last evaluated round."""
        return self.accuracy[:, -1]


def train(
    problem: MLPProblem,
    algorithm: Any,
    participation: Any = "uniform",
    *,
    rounds: int,
    seeds: int = 3,
    seed: int = 0,
    x0: Any = None,
    eval_every: int = 1,
    aggregation: str = "mean",
    participation_kw: dict | None = None,
    progress: bool = False,
    **config: Any,
) -> TrainResult:
    """Train ``algorithm`` on ``problem`` for ``rounds`` rounds, all ``seeds`` at once.

    Parameters
    ----------
    problem : MLPProblem
    algorithm : str or Algorithm
        A registry name (then ``config`` keywords build it: ``lr``, ``local_steps``,
        ``global_lr``, ``topology``, ``clusters``, ...) or a built
        :class:`~fedtheory.algorithms.base.Algorithm`.
    participation : str or ParticipationModel
        A name for :func:`fedtheory.participation.make_participation` (with
        ``participation_kw``, e.g. ``{"clients_per_round": 5}``) or a model.
    rounds, seeds, seed : int
        Seed s uses ``SeedSequence(seed).spawn(...)[s]`` as in the runner.
    x0 : array (P,) or (S, P), optional
        Initial server model; default ``problem.init(default_rng(seed))`` (one network for all
        seeds, so seeds differ in participation and minibatches only).
    eval_every : int
        Record accuracy every this many rounds (and at the last round).

    Returns
    -------
    TrainResult
    """
    R = check_int("the number of rounds", rounds, minimum=1)
    every = check_int("eval_every", eval_every, minimum=1)
    if isinstance(participation, str):
        participation = make_participation(
            participation, problem.n_clients, **(participation_kw or {})
        )
    if x0 is None:
        x0 = problem.init(np.random.default_rng(seed))
    res = simulate(
        problem,
        algorithm,
        participation,
        rounds=R,
        seeds=seeds,
        seed=seed,
        x0=x0,
        aggregation=aggregation,
        record_every=every,
        metrics={
            "accuracy": lambda state, prob: prob.accuracy(state.x),
            "train_loss": lambda state, prob: prob.loss(state.x),
        },
        seed_block=seeds,  # every seed in one batch: the bits do not depend on a block size
        progress=progress,
        **config,
    )
    evals = np.asarray(sorted({0, R, *range(every, R, every)}))
    cfg = {**res.config, "participation": res.participation}
    return TrainResult(
        res.algorithm,
        evals,
        res.accuracy[:, evals],
        res.train_loss[:, evals],
        res.x_final,
        res.wall_time,
        cfg,
    )
