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
