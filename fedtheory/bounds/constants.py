"""The constants a bound may be written in, computed from one instance (one table, one home).

:data:`CONSTANTS` is the table (name -> meaning, with the assumption of 003 or 000/001 it comes
from); :func:`instance_constants` computes every one of them for a quadratic problem, a
participation model and a setting. docs/bounds.md prints the same table.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fedtheory.analysis.exact import problem_constants
from fedtheory.errors import AssumptionError
from fedtheory.graphs import mixing_matrix, spectral_gap

#: Every constant a bound, a condition or a step size may use, and what it is.
CONSTANTS: dict[str, str] = {
    "eta": "the step size lr (FOCUS: its single eta; FedAvg-type: the local step)",
    "K": "local steps per round",
    "N": "number of clients",
    "M": "expected clients per round, sum_i p_i (N under full participation)",
    "L": "max_i L_i: every f_i is L-smooth (003 Assumption 2)",
    "mu": "min_i mu_i: every f_i is mu-strongly convex (003 Assumption 3)",
    "L_f": "smoothness of f = (1/N) sum_i f_i (largest eigenvalue of the mean Hessian)",
    "mu_f": "strong convexity (on quadratics: PL constant) of f (003 Assumption 4)",
    "kappa": "L / mu, the clients' condition number",
    "kappa_f": "L_f / mu_f, the condition number of f",
    "p_min": "min_i p_i, p_i = P(i in S) the inclusion probability (003 Assumption 1)",
    "p_max": "max_i p_i",
    "q_min": "min_i q_i, q_i = E[w_i] the expected aggregation weight (003 Assumption 1)",
    "q_max": "max_i q_i",
    "delta_q": "N sum_i (q_i - 1/N)^2: how far q is from uniform (0 under uniform sampling)",
    "d": "dimension of x",
    "sigma": "standard deviation of the additive gradient noise (003 Theorems 3-5)",
    "zeta2": "(1/N) sum_i ||grad f_i(x*)||^2, the heterogeneity at x* (with [class] zeta2: "
    "that bound, which class draws meet with equality)",
    "D2": "||x_0 - x*||^2 = ||x*||^2 (x_0 = 0; with [class] D2, default 1 on the general class "
    "and after R rounds: that bound, met with equality)",
    "epsilon": "the accuracy factor of rounds_to",
    "rho": "||W - 11^T/N||_2 of the gossip matrix of `topology` (001 Assumption 4.5)",
}
#: The constants a step size ``lr`` may use (not eta itself).
LR_CONSTANTS: tuple[str, ...] = tuple(k for k in CONSTANTS if k != "eta")


def instance_constants(
    problem: Any,
    participation: Any,
    *,
    local_steps: int,
    rule: str = "mean",
    lr: float | None = None,
    epsilon: float = 1e-6,
    topology: str | None = None,
) -> dict[str, float]:
    """Every constant of :data:`CONSTANTS` for one instance (``eta`` when ``lr`` is given).

    Parameters
    ----------
    problem : QuadraticProblem
    participation : ParticipationModel
        Its exact inclusion probabilities and effective weights give p_i and q_i.
    local_steps : int
    rule : {"mean", "weighted", "unbiased"}
        The aggregation rule behind q_i.
    lr : float, optional
    epsilon : float
    topology : str, optional
        A gossip topology on N nodes: gives ``rho`` (NaN without one; a bound that uses it is
        then refused by :func:`fedtheory.bounds.check`).

    Raises
    ------
    AssumptionError
        A problem without x* (singular mean Hessian).
    """
    pc = problem_constants(problem)
    x_star = problem.x_star
    if x_star is None:
        raise AssumptionError("the instance has no unique minimizer x* (singular mean Hessian)")
    H = np.asarray(problem.H, dtype=np.float64)
    g = np.einsum("nde,e->nd", H, x_star) - np.asarray(problem.h, dtype=np.float64)
    N = pc.n_clients
    p = np.asarray(participation.inclusion_probabilities().value, dtype=np.float64)
    q = np.asarray(participation.effective_weights(rule).value, dtype=np.float64)
    L, mu = pc.L_max, pc.mu_min
    out = {
        "K": float(local_steps),
        "N": float(N),
        "M": float(p.sum()),
        "L": L,
        "mu": mu,
        "L_f": pc.L,
        "mu_f": pc.mu,
        "kappa": L / mu if mu > 0 else math.inf,
        "kappa_f": pc.L / pc.mu if pc.mu > 0 else math.inf,
        "p_min": float(p.min()),
        "p_max": float(p.max()),
        "q_min": float(q.min()),
        "q_max": float(q.max()),
        "delta_q": float(N * np.sum((q - 1.0 / N) ** 2)),
        "d": float(pc.dim),
        "sigma": float(getattr(problem, "noise", 0.0)),
        "zeta2": float(np.mean(np.sum(g * g, axis=1))),
        "D2": float(x_star @ x_star),
        "epsilon": float(epsilon),
        "rho": math.nan,
    }
    if topology is not None:
        out["rho"] = float(spectral_gap(mixing_matrix(topology, N)).rho_norm)
    if lr is not None:
        out["eta"] = float(lr)
    return out


def constant_gradients(problem: Any) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Derivatives of the constants that the clients' H_j and h_j determine.

    For each of ``L``, ``mu``, ``L_f``, ``mu_f``, ``kappa``, ``kappa_f``, ``zeta2``, ``D2``:
    ``(dH, dh)`` with dH (N, d, d) symmetric, the gradient over symmetric perturbations of
    every H_j, and dh (N, d) that over every h_j (f_i = 1/2 x^T H_i x - h_i^T x). Extreme
    eigenvalues move with their eigenvector q as q^T dH q (a simple eigenvalue; at a multiple
    one this is one of its one-sided derivatives); with Hbar = (1/N) sum_j H_j and
    x* = Hbar^{-1} hbar, dx* = (1/N) Hbar^{-1} sum_j (dh_j - dH_j x*), so D2 = ||x*||^2 and
    zeta2 = (1/N) sum_j ||H_j x* - h_j||^2 have the gradients written below.
    """
    H = np.asarray(problem.H, dtype=np.float64)
    h = np.asarray(problem.h, dtype=np.float64)
    N, d = H.shape[:2]
    zeros_h = np.zeros((N, d))
    lam, vec = np.linalg.eigh(H)

    def client_extreme(top: bool) -> tuple[float, np.ndarray]:
        k = -1 if top else 0
        j = int(np.argmax(lam[:, k]) if top else np.argmin(lam[:, k]))
        q = vec[j, :, k]
        g = np.zeros((N, d, d))
        g[j] = np.outer(q, q)
        return float(lam[j, k]), g

    L, dL = client_extreme(True)
    mu, dmu = client_extreme(False)
    Hbar = H.mean(axis=0)
    lf, vf = np.linalg.eigh(Hbar)
    dLf = np.broadcast_to(np.outer(vf[:, -1], vf[:, -1]) / N, (N, d, d)).copy()
    dmuf = np.broadcast_to(np.outer(vf[:, 0], vf[:, 0]) / N, (N, d, d)).copy()
    L_f, mu_f = float(lf[-1]), float(lf[0])

    def quotient(a, da, b, db):
        return da / b - a * db / b**2

    out = {
        "L": (dL, zeros_h),
        "mu": (dmu, zeros_h),
        "L_f": (dLf, zeros_h),
        "mu_f": (dmuf, zeros_h),
        "kappa": (quotient(L, dL, mu, dmu), zeros_h),
        "kappa_f": (quotient(L_f, dLf, mu_f, dmuf), zeros_h),
    }
    x = np.linalg.solve(Hbar, h.mean(axis=0))

    def sym(A):
        return 0.5 * (A + np.swapaxes(A, -1, -2))

    a = np.linalg.solve(Hbar, x)
    out["D2"] = (
        -(2 / N) * sym(np.broadcast_to(np.outer(a, x), (N, d, d))),
        np.broadcast_to((2 / N) * a, (N, d)).copy(),
    )
    g = np.einsum("nde,e->nd", H, x) - h
    b = np.linalg.solve(Hbar, np.einsum("nde,ne->d", H, g))
    w = (2 / N) * g - (2 / N**2) * b  # (N, d): the vectors that multiply dH_j x*
    out["zeta2"] = (sym(w[:, :, None] * x[None, None, :]), -w)
    return out
