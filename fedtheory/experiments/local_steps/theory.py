"""What the theorems say about a grid point of the local-steps study: the step-size schedule
(declared with each algorithm), the stated exponents of K, R and M, the assumptions a point
violates, and who takes part; the study problem (a PL or quadratic problem with set noise).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fedtheory.algorithms.registry import DEFAULT_SCHEDULE, gossip_rho, info
from fedtheory.errors import AssumptionError
from fedtheory.participation import Full, PerCluster, Uniform
from fedtheory.problems import PLProblem, random_quadratic
from fedtheory.validation import check_positive


def step_sizes(
    algorithm: str, *, R: int, K: int, M: int, N: int, clusters: int = 1, c: float, c_l: float
) -> tuple[float, float]:
    """(eta, eta_l) of ``algorithm``'s theorem schedule, as its registration declares it.

    Parameters
    ----------
    algorithm : str
        Registry name.
    R, K, M, N : int
        Rounds, local steps, participating clients per round, clients.
    clusters : int
        C (clustered algorithms: n = N / C clients and m = M / C sampled per cluster).
    c, c_l : float
        The user's constants in front of the Theta(.) of the schedules (> 0).
    """
    check_positive("the server-step constant c", c)
    check_positive("the local-step constant c_l", c_l)
    n, m = N // clusters, max(M // clusters, 1)
    schedule = info(algorithm).schedule or DEFAULT_SCHEDULE
    return schedule.step_sizes(R=R, K=K, M=M, N=N, n=n, m=m, c=c, c_l=c_l)


def schedule_source(algorithm: str) -> str:
    """Where ``algorithm``'s schedule is stated (its registration's :class:`Schedule`)."""
    return (info(algorithm).schedule or DEFAULT_SCHEDULE).source


def stated_exponents(algorithm: str, *, partial: bool) -> dict[str, float] | None:
    """The exponents of K, R and M the papers state for ``algorithm`` (None: no theorem), as its
    registration declares them."""
    exponents = info(algorithm).exponents
    return None if exponents is None else dict(exponents["partial" if partial else "full"])


def assumption_violations(
    algorithm: str, *, R: int, K: int, M: int, N: int, rho: float | None, clusters: int = 1
) -> list[str]:
    """The theorem assumptions a grid point violates, each named (empty: inside), as each
    algorithm declares them where it is registered (``conditions``, ``horizon``): AFGA rho <=
    M/(M+N) (000 Thm 4.6), R >= K M (000 Cor. 4.7); CAFGA rho_max <= m/(m+n) (000 Thm D.3);
    HA-Fed rho_max <= 1/(2 sqrt(n - m)), C < n, R > K M (004 Cor. 5.11); FedAMSGrad R >= K M
    (Wang et al. 2022b, 000 Remark 4.8). Algorithms without a theorem get "no rate stated".
    """

    if stated_exponents(algorithm, partial=M < N) is None:
        return [f"no rate stated for {algorithm} in 000/004"]
    C = clusters
    n, m = N // C, max(M // C, 1)
    check = info(algorithm).conditions
    out = [] if check is None else check(N, M, n, m, C, rho)
    return out + horizon_violations(algorithm, R=R, K=K, M=M)


def horizon_violations(algorithm: str, *, R: int, K: int, M: int) -> list[str]:
    """The corollaries' conditions on the horizon R a grid point violates, each named (the
    algorithm's declared ``horizon``): R >= K M (AFGA, 000 Cor. 4.7; FedAMSGrad, Wang et al.
    2022b and 000 Remark 4.8), R > K M (HA-Fed, 004 Cor. 5.11). They say when the leading
    O(1/sqrt(R K M)) term dominates: a run that violates one has not reached the bound's regime
    (part of :func:`assumption_violations`)."""
    check = info(algorithm).horizon
    return [] if check is None else check(R, K, M)


# ----------------------------------------------------------------------------------------------
# Problems
def study_problem(
    kind: str,
    n_clients: int,
    dim: int,
    *,
    sigma: float,
    sigma_g: float,
    seed: int = 0,
    dtype: Any = None,
) -> Any:
    """A stochastic problem with gradient noise ``sigma`` and heterogeneity ``sigma_g``.

    ``kind="pl"``: the non-convex PL problem of :class:`fedtheory.problems.PLProblem`
    (Karimi et al. 2016), client drifts u_i rescaled so that
    sigma_g^2 = (1/N) sum_i ||grad f_i(x*)||^2 = (1/N) sum_i ||u_i||^2 exactly.
    ``kind="quadratic"``: :func:`fedtheory.problems.random_quadratic` (condition 10), the
    heterogeneity rescaled so that its ``sigma_g`` property equals ``sigma_g``.
    sigma is the standard deviation of the additive Gaussian noise per coordinate.
    """

    check_positive("the gradient noise sigma", sigma, allow_zero=True)
    check_positive("the heterogeneity sigma_g", sigma_g, allow_zero=True)
    if kind == "pl":
        base = PLProblem(n_clients, dim, heterogeneity=1.0, seed=seed)
        s0 = float(np.sqrt((base.u.astype(np.float64) ** 2).sum(axis=1).mean()))
        h = 0.0 if s0 == 0 else sigma_g / s0
        return PLProblem(n_clients, dim, heterogeneity=h, noise=sigma, seed=seed, dtype=dtype)
    if kind == "quadratic":
        base = random_quadratic(n_clients, dim, heterogeneity=1.0, seed=seed)
        s0 = base.sigma_g or 0.0
        h = 0.0 if s0 == 0 else sigma_g / s0
        return random_quadratic(
            n_clients, dim, heterogeneity=h, noise=sigma, seed=seed, dtype=dtype
        )
    raise AssumptionError(f"unknown study problem {kind!r}: choose 'pl' or 'quadratic'")


# ----------------------------------------------------------------------------------------------
# Results


def rho_at(algorithm: str, topology: str | None, N: int, M: int, C: int, graph_seed: int) -> Any:
    """The spectral gap rho the algorithm gossips with at a grid point (None without gossip)."""
    alg = info(algorithm)
    if not alg.gossip:
        return None
    settings = {"topology": topology, "clusters": C if alg.clustered else None}
    if any(o.name == "graph_seed" for o in alg.options):
        settings["graph_seed"] = graph_seed
    return gossip_rho(alg.name, N, M, **settings)


def grid_conditions(
    algorithm: str,
    *,
    topology: str | None,
    R: int,
    K: int,
    M: int,
    N: int = 50,
    C: int = 5,
    graph_seed: int = 0,
) -> tuple[Any, list[str]]:
    """(rho, violated assumptions) of one grid point of :func:`gradient_curves`, without running
    it: the gossip graph's rho (None without gossip) and :func:`assumption_violations`."""
    rho = rho_at(algorithm, topology, N, M, C, graph_seed)
    cl = C if info(algorithm).clustered else 1
    return rho, assumption_violations(algorithm, R=R, K=K, M=M, N=N, rho=rho, clusters=cl)


def participation_for(algorithm: str, N: int, M: int, C: int) -> Any:
    """Who takes part at a grid point: everyone when M = N; m = M / C per cluster for a
    clustered algorithm (000 Alg. 2, 004 Sec. 4); else M of N uniformly."""

    if M == N:
        return Full(N)
    if info(algorithm).clustered:
        if M % C:
            raise AssumptionError(
                f"{algorithm} samples m = M / C per cluster: M = {M} is not a multiple of C = {C}"
            )
        return PerCluster(np.repeat(np.arange(C), N // C), M // C)
    return Uniform(N, M)
