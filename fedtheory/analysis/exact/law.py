"""The law of one round's participation coefficients alpha = (s, w), exactly.

A round model (:mod:`fedtheory.analysis.exact.extract`) is linear in the participation
indicators s_j = 1{j in S} and the aggregation weights w_j. Under a memoryless participation
model the exact mean-square dynamics therefore need only the first and second moments

    E[alpha],   E[alpha alpha^T]    (alpha = (s_1..s_N, w_1..w_N)),

i.e. first- and second-order inclusion probabilities and their weighted versions
(:func:`round_law`), never the list of the C(N, M) sets inside the operator:

* full participation (003 Case 1): s = 1, w = the rule's weights (deterministic);
* uniform M of N (003 Case 3a): E[s_j] = M/N, E[s_j s_l] = M(M-1)/(N(N-1)) (j != l), and
  w = s/M under every rule (closed form, any N);
* weighted M of N without replacement (003 Case 3), Bernoulli (003 Case 2, with its empty-round
  policy: "redraw" conditions on S != empty, "skip" keeps the empty round, in which the
  algorithm still runs its no-participant step), weighted with replacement, per-cluster
  sampling, and any rule (mean 1/|S|, weighted, unbiased): from the model's exact one-round law
  (``model.support()``: the subset dynamic program of
  :func:`~fedtheory.participation.exact.weighted_without_replacement_law`, or an
  enumeration), which also makes the non-linear 1/|S| of a random |S| exact.

Markov availability (a two-state chain per client) is not memoryless: :func:`markov_law` gives
the chain over the 2^N on/off configurations, its transition matrix and stationary law, for
the chain-augmented dynamics of :mod:`fedtheory.analysis.exact.system`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedtheory.errors import AssumptionError, FedTheoryError
from fedtheory.participation.base import EXACT_CLOSED_FORM, check_rule
from fedtheory.participation.exact import all_subsets
from fedtheory.participation.markov import Markov
from fedtheory.participation.models import Full, Uniform

#: Largest N for the chain-augmented Markov dynamics (2^N chain states).
MAX_MARKOV_CLIENTS = 10


@dataclass(frozen=True)
class RoundLaw:
    """Moments of alpha = (s, w) in one round of a memoryless participation model.

    Attributes
    ----------
    n_clients : int
    m1 : ndarray (2, N)
        E[s_j] (row 0) and E[w_j] (row 1).
    m2 : ndarray (2, N, 2, N)
        E[alpha_cj alpha_dl].
    kappa : ndarray (N,) or None
        When w_j = kappa_j s_j almost surely for every j (uniform or weighted M of N with the
        plain mean: kappa = 1/M), else None.
    deterministic : bool
        True when the round's draw is a constant (full participation).
    method : str
        How the moments were obtained ("exact closed form", "exact dynamic program", ...).
    support_size : int or None
        Number of sets behind an enumerated law.
    description : dict
        The participation model's ``describe()``, with the rule.
    """

    n_clients: int
    m1: np.ndarray
    m2: np.ndarray
    kappa: np.ndarray | None
    deterministic: bool
    method: str
    support_size: int | None = None
    description: dict = field(default_factory=dict)


def _moments(alpha: np.ndarray, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    m1 = np.einsum("k,kcj->cj", probs, alpha)
    m2 = np.einsum("k,kcj,kdl->cjdl", probs, alpha, alpha, optimize=True)
    return m1, m2


def _kappa(alpha: np.ndarray, probs: np.ndarray) -> np.ndarray | None:
    """kappa_j with w_j = kappa_j s_j on every support point of positive probability."""
    live = probs > 0
    s, w = alpha[live, 0], alpha[live, 1]
    kappa = np.zeros(s.shape[1])
    for j in range(s.shape[1]):  # N clients, once
        on = s[:, j] > 0
        if on.any():
            kappa[j] = w[on, j][0]
    if np.abs(w - kappa * s).max(initial=0.0) <= 1e-14 * max(1.0, np.abs(kappa).max()):
        return kappa
    return None


def round_law(model: Any, rule: str = "mean") -> RoundLaw:
    """The exact moments of (s, w) in one round of ``model`` with aggregation ``rule``.

    Parameters
    ----------
    model : ParticipationModel
        A memoryless model (Full, Uniform, Weighted, Bernoulli, PerCluster, ...).
    rule : {"mean", "weighted", "unbiased"}
        The aggregation rule of :meth:`~fedtheory.participation.ParticipationModel.weights`.

    Raises
    ------
    FedTheoryError
        For a model whose rounds are not independent (use :func:`markov_law` for Markov) or
        whose one-round law has no exact form (e.g. Bernoulli or weighted sampling with
        N > 20: the enumeration is not tractable).
    """
    check_rule(rule)
    N = int(model.n_clients)
    desc = {**model.describe(), "rule": rule}
    if isinstance(model, Full):
        s = np.ones((1, N))
        w = np.asarray(model.weights(np.ones((1, N), bool), rule), dtype=np.float64)
        alpha = np.stack([s, w], axis=1)
        m1, m2 = _moments(alpha, np.ones(1))
        return RoundLaw(N, m1, m2, _kappa(alpha, np.ones(1)), True, EXACT_CLOSED_FORM, 1, desc)
    if isinstance(model, Uniform):
        M = model.m
        pi = M / N
        pi2 = M * (M - 1) / (N * (N - 1)) if N > 1 else 0.0
        ss = np.full((N, N), pi2)
        np.fill_diagonal(ss, pi)
        k = 1.0 / M  # every rule gives 1/M on S (equal inclusion probabilities)
        m1 = np.stack([np.full(N, pi), np.full(N, k * pi)])
        m2 = np.stack([np.stack([ss, k * ss]), np.stack([k * ss, k * k * ss])]).transpose(
            0, 2, 1, 3
        )
        return RoundLaw(N, m1, m2, np.full(N, k), M == N, EXACT_CLOSED_FORM, None, desc)
    if not getattr(model, "memoryless", True):
        raise FedTheoryError(
            f"{type(model).__name__} participation: rounds are not independent, so the exact "
            "dynamics need the chain of the draws (supported for Markov availability only)"
        )
    sup = model.support()
    if sup is None:
        raise FedTheoryError(
            f"{type(model).__name__} participation with N = {N}: no exact one-round law "
            "(the enumeration is not tractable), so no exact rate"
        )
    draws, probs, method = sup
    draws = np.asarray(draws)
    probs = np.asarray(probs, dtype=np.float64)
    s = (draws > 0).astype(np.float64)
    w = np.asarray(model.weights(draws, rule), dtype=np.float64)
    alpha = np.stack([s, w], axis=1)
    m1, m2 = _moments(alpha, probs)
    live = probs > 0
    det = int(live.sum()) == 1
    return RoundLaw(N, m1, m2, _kappa(alpha, probs), det, str(method), int(live.sum()), desc)


@dataclass(frozen=True)
class MarkovLaw:
    """The chain of on/off configurations of Markov availability (rounds are not independent).

    Attributes
    ----------
    n_clients : int
    states : ndarray of bool (Q, N)
        The Q = 2^N configurations (bitmask order); the round's S is the configuration.
    alpha : ndarray (Q, 2, N)
        (s, w) in each configuration.
    P : ndarray (Q, Q)
        P[q, q'] = prod_j T_j[q_j, q'_j], the product of the clients' transition matrices.
    pi : ndarray (Q,)
        Stationary law, prod_j pi_j^{q_j} (1 - pi_j)^{1 - q_j}.
    method : str
    description : dict
    """

    n_clients: int
    states: np.ndarray
    alpha: np.ndarray
    P: np.ndarray
    pi: np.ndarray
    method: str
    description: dict = field(default_factory=dict)


def markov_law(model: Markov, rule: str = "mean") -> MarkovLaw:
    """The chain-augmented law of :class:`~fedtheory.participation.Markov` availability.

    Empty configurations are kept: the model skips them (all-zero weights), and the algorithm
    runs its no-participant step.

    Raises
    ------
    FedTheoryError
        For N > :data:`MAX_MARKOV_CLIENTS` (2^N chain states).
    """
    check_rule(rule)
    N = int(model.n_clients)
    if N > MAX_MARKOV_CLIENTS:
        raise FedTheoryError(
            f"Markov participation with N = {N}: the chain-augmented state has 2^{N} "
            f"configurations; exact rates are computed for N <= {MAX_MARKOV_CLIENTS}"
        )
    states = all_subsets(N)
    T = model.transition_matrices()  # (N, 2, 2)
    idx = states.astype(np.int64)
    P = np.ones((states.shape[0], states.shape[0]))
    for j in range(N):  # N factors, each over all pairs of configurations
        P *= T[j][idx[:, j][:, None], idx[:, j][None, :]]
    st = model.stationary()
    pi = np.prod(np.where(states, st, 1.0 - st), axis=1)
    s = states.astype(np.float64)
    w = np.asarray(model.weights(states, rule), dtype=np.float64)
    desc = {**model.describe(), "rule": rule}
    method = f"exact chain over the 2^{N} = {states.shape[0]} on/off configurations"
    return MarkovLaw(N, states, np.stack([s, w], axis=1), P, pi, method, desc)


def participation_law(model: Any, rule: str = "mean") -> RoundLaw | MarkovLaw:
    """:func:`markov_law` for Markov availability, :func:`round_law` otherwise."""
    if isinstance(model, Markov):
        return markov_law(model, rule)
    if not hasattr(model, "n_clients"):
        raise AssumptionError(f"expected a participation model, got {type(model).__name__}")
    return round_law(model, rule)
