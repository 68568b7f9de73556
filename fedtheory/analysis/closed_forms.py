"""Closed forms on quadratic problems: optima, FedAvg's fixed point and its stationary mean.

On f_i(x) = 1/2 x^T H_i x - h_i^T x, K local gradient steps with step size eta_l are an affine
map of the starting point (docs/algorithms.md section 5)::

    x_i^K = M_i x + c_i,   M_i = (I - eta_l H_i)^K,   c_i = sum_{t<K} (I - eta_l H_i)^t eta_l h_i
                                                        = (I - M_i) x_i*   when H_i is invertible

so a FedAvg round with aggregation weights w(S) and server step eta is the random affine map
x <- M_S x + c_S, M_S = I - eta sum_i w_i(S) (I - M_i), c_S = eta sum_i w_i(S) c_i.

- Full participation (w_i = 1/N) has the fixed point
  x_bar = (sum_i (I - M_i))^{-1} sum_i c_i  (Li et al. 2019a, "On the Convergence of FedAvg on
  Non-IID Data"; 003 Section 2): it differs from x* under heterogeneity when K > 1.
- Random participation: M_S and c_S are *linear in the weights* w(S), so
  E[M_S] = I - eta sum_i q_i (I - M_i) and E[c_S] = eta sum_i q_i c_i with q_i = E[w_i(S)],
  the participation module's effective weights. For rounds drawn independently, E[x_r] obeys
  E[x_{r+1}] = E[M_S] E[x_r] + E[c_S], whose fixed point, the stationary mean,
  (I - E[M_S])^{-1} E[c_S] = (sum_i q_i (I - M_i))^{-1} sum_i q_i c_i,
  is exact whenever q is (the factor P(S non-empty) and eta cancel). It is also computed by
  explicit enumeration of E[M_S] = sum_S P(S) M_S over the model's support as a cross-check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fedtheory.errors import AssumptionError
from fedtheory.validation import check_finite, check_int, check_positive


def _quadratic(problem: Any) -> tuple[np.ndarray, np.ndarray]:
    H = getattr(problem, "H", None)
    h = getattr(problem, "h", None)
    if H is None or h is None:
        raise AssumptionError(
            f"closed forms need a quadratic problem (H_i, h_i); {type(problem).__name__} is not"
        )
    return np.asarray(H, dtype=np.float64), np.asarray(h, dtype=np.float64)


def optimum(problem: Any) -> np.ndarray:
    """x* = argmin (1/N) sum_i f_i = (sum_i H_i)^{-1} sum_i h_i."""
    return weighted_optimum(problem, np.full(problem.n_clients, 1.0 / problem.n_clients))


def weighted_optimum(problem: Any, q: Any) -> np.ndarray:
    """x_q* = argmin sum_i q_i f_i = (sum_i q_i H_i)^{-1} sum_i q_i h_i (003 Section 1: the
    participation-weighted objective FedAvg drifts to).

    Raises
    ------
    AssumptionError
        q not a non-negative vector of length N with positive sum, or a singular sum_i q_i H_i.
    """
    H, h = _quadratic(problem)
    q = _weights(q, H.shape[0])
    Hq = np.einsum("n,nde->de", q, H)
    hq = q @ h
    return _solve(Hq, hq, "sum_i q_i H_i")


def _weights(q: Any, n: int) -> np.ndarray:
    q = check_finite("the weights q", q)
    if q.shape != (n,):
        raise AssumptionError(f"the weights q must have {n} entries, got shape {q.shape}")
    if (q < 0).any() or q.sum() <= 0:
        raise AssumptionError("the weights q must be non-negative with a positive sum")
    return q


def _solve(A: np.ndarray, b: np.ndarray, what: str) -> np.ndarray:
    eig = np.linalg.eigvals(A)
    if np.min(np.abs(eig)) <= 1e-14 * max(1.0, np.max(np.abs(eig))):
        raise AssumptionError(f"{what} is singular: the fixed point is not unique")
    return np.linalg.solve(A, b)


def local_affine_maps(problem: Any, lr: float, local_steps: int) -> tuple[np.ndarray, np.ndarray]:
    """(M_i, c_i) with x_i^K = M_i x + c_i after K gradient steps from x: ``(N, d, d), (N, d)``.

    The problem's own cached K-step map (:meth:`QuadraticProblem.local_steps_map`, the one the
    simulator applies), in float64; M_i = (I - lr H_i)^K is symmetric.
    """
    _quadratic(problem)
    lr = check_positive("the local step size", lr)
    K = check_int("the number of local steps K", local_steps, minimum=1)
    T, c = problem.local_steps_map(lr, K, dtype=np.float64)
    return np.array(T), np.array(c)


def fedavg_fixed_point(
    problem: Any, lr: float, local_steps: int, weights: Any = None
) -> np.ndarray:
    """FedAvg's fixed point with fixed aggregation weights (default: full participation, 1/N).

    x_bar = (sum_i w_i (I - M_i))^{-1} sum_i w_i c_i; with w = 1/N and invertible H_i this is
    Li et al. (2019a)'s (sum_i (I - (I - eta H_i)^K))^{-1} sum_i (I - (I - eta H_i)^K) x_i*.
    The server step size does not move it.
    """
    M, c = local_affine_maps(problem, lr, local_steps)
    N, d, _ = M.shape
    w = np.full(N, 1.0 / N) if weights is None else _weights(weights, N)
    A = np.einsum("n,nde->de", w, np.eye(d) - M)
    return _solve(A, w @ c, "sum_i w_i (I - (I - eta H_i)^K)")


@dataclass(frozen=True)
class StationaryMean:
    """The stationary mean of FedAvg's random affine map and how it was obtained.

    Attributes
    ----------
    x : ndarray (d,)
        (I - E[M_S])^{-1} E[c_S].
    q : ndarray (N,)
        Effective weights E[w_i(S) | S non-empty].
    q_stderr : ndarray (N,)
        Their standard error (zero when exact).
    method : str
        How q (hence x) was obtained: the participation module's exact method
        (closed form, dynamic program, enumeration) or "monte-carlo".
    exact : bool
    memoryless : bool
        False for Markov participation: then rounds are correlated and the stationary mean of
        the iterates need not equal this value (reported, not hidden).
    """

    x: np.ndarray
    q: np.ndarray
    q_stderr: np.ndarray
    method: str
    exact: bool
    memoryless: bool


def fedavg_stationary_mean(
    problem: Any,
    lr: float,
    local_steps: int,
    participation: Any,
    rule: str = "mean",
) -> StationaryMean:
    """The stationary mean (I - E[M_S])^{-1} E[c_S] of FedAvg under random participation.

    Uses that M_S, c_S are linear in w(S), so only q = E[w(S)] enters; q comes from
    ``participation.effective_weights(rule)`` (exact where the participation module has an exact
    method, Monte Carlo with a standard error otherwise; see :class:`StationaryMean`).
    """
    est = participation.effective_weights(rule)
    q = np.asarray(est.value, dtype=np.float64)
    x = fedavg_fixed_point(problem, lr, local_steps, weights=q)
    return StationaryMean(
        x=x,
        q=q,
        q_stderr=np.asarray(est.stderr, dtype=np.float64),
        method=str(est.method),
        exact=bool(est.exact),
        memoryless=bool(getattr(participation, "memoryless", True)),
    )


def fedavg_stationary_mean_enumerated(
    problem: Any,
    lr: float,
    local_steps: int,
    participation: Any,
    rule: str = "mean",
    global_lr: float = 1.0,
) -> np.ndarray:
    """The stationary mean by explicit enumeration: E[M_S] = sum_S P(S) M_S and
    E[c_S] = sum_S P(S) c_S over the model's exact support (independent of the linearity
    argument; for small N only).

    Raises
    ------
    AssumptionError
        When the participation model has no tractable exact support.
    """
    sup = participation.support()
    if sup is None:
        raise AssumptionError(
            "exact enumeration needs a participation model with a tractable support "
            "(small N); use fedavg_stationary_mean (Monte Carlo effective weights) instead"
        )
    draws, probs, _ = sup
    W = participation.weights(np.asarray(draws), rule)  # (n_sets, N)
    M, c = local_affine_maps(problem, lr, local_steps)
    d = M.shape[1]
    EM = np.zeros((d, d))
    Ec = np.zeros(d)
    I_M = np.eye(d) - M
    for p_s, w in zip(probs, W, strict=True):  # loop over the support of one round's law
        EM += p_s * (np.eye(d) - global_lr * np.einsum("n,nde->de", w, I_M))
        Ec += p_s * global_lr * (w @ c)
    return _solve(np.eye(d) - EM, Ec, "I - E[M_S]")
