"""Worst cases of federated rounds over smooth strongly convex clients.

Every f_i is L-smooth and mu-strongly convex (F_{mu,L}; mu = 0: smooth convex), the start
satisfies ||x0 - x*||^2 <= D2 and, when given, the heterogeneity at the minimizer
(1/N) sum_i ||grad f_i(x*)||^2 <= zeta2. The quantities (performance estimation: Drori and
Teboulle 2014; Taylor, Hendrickx and Glineur 2017; the rounds read off the algorithm's own code,
:mod:`~fedtheory.analysis.pep.trace`):

* :func:`worst_after_rounds`: the worst E||x_R - x*||^2, E f(x_R) - f* or E||grad f(x_R)||^2
  after R rounds, the expectation over the participation paths enumerated round by round
  (each subset with its probability and aggregation weights: the participation's own one-round
  law, ``support()``), a path's gradients shared with every path through the same point;
* :func:`worst_floor`: the FedAvg-type floor lim ||x_r - x*||^2 under full participation, a
  fixed point x_bar of the round imposed *linearly*: one round is traced from free state
  leaves, the residual round(z) - z is a linear combination of the leaves, and gradient leaves
  with nonzero coefficients are defined as the combinations that make it zero (never as
  ||round(x) - x||^2 <= 0: an error of 1e-8 in the Gram became 1e-4 in the vector);
* :func:`rate_estimate`: W(R) / W(R - 1) of the worst E||x_r - x*||^2, an *estimate* of the
  per-round factor (a worst case over R rounds, not a spectral radius);
* :func:`lyapunov_contraction`: the worst one-round ratio of a Lyapunov function the user
  writes, a ||x - x*||^2 + sum_i b_i ||v_i - grad f_i(x*)||^2 over the coordinates of the
  algorithm's declared state layout (v_i: FOCUS's g_prev_i, SCAFFOLD's c_i, ...).

A worst case may not exist: FedAvg with K >= 2 or FOCUS from its zero start without a bound on
zeta2 is unbounded; :class:`WorstCase` then says so (``unbounded``) and which bound the class
lacks (``lacks``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedtheory.algorithms.base import Algorithm
from fedtheory.analysis.exact.extract import build_algorithm
from fedtheory.analysis.pep.program import (
    MAX_CONSTRAINTS,
    MAX_GRAM,
    PepSizeError,
    Quad,
    Sizes,
    Solution,
    leaf_vectors,
    scalar_values,
    solve,
)
from fedtheory.analysis.pep.trace import (
    G_STAR,
    GRAD,
    STATE,
    Paths,
    Trace,
    initial_coordinates,
    participation_paths,
    trace,
)
from fedtheory.errors import AssumptionError
from fedtheory.io import renamed
from fedtheory.participation import make_participation
from fedtheory.validation import check_int, check_positive

#: The quantities of :func:`worst_after_rounds` and what each is.
METRICS = {
    "distance2": "E||x_R - x*||^2",
    "f_minus_f_star": "E f(x_R) - f*",
    "grad_norm2": "E||grad f(x_R)||^2",
}
#: A program estimated past this many times the cap is refused before it is traced.
PRECHECK = 4
#: Most participation paths traced (C(N, M)^R under M-of-N sampling) before any work.
MAX_PATHS = 4096
#: The class's heterogeneity bound in words (named when a worst case is unbounded without it).
ZETA2_WORDS = "zeta2, a bound on (1/N) sum_i ||grad f_i(x*)||^2"
#: What an unbounded one-round Lyapunov ratio lacks (a heterogeneity bound zeta2 > 0 caps no
#: ratio: :func:`lyapunov_contraction`).
LYAPUNOV_LACKS = (
    "zeta2 = 0, a common minimizer (with heterogeneity, V may grow from V(z0) near 0: a bound "
    "zeta2 > 0 caps no ratio)"
)


@dataclass
class WorstCase:
    """A worst case over the class, with how it was computed.

    Attributes
    ----------
    quantity : str
        What was maximized (a key of :data:`METRICS`, ``stationary_mse`` or ``lyapunov``).
    value : float or None
        The worst case (None when unbounded).
    unbounded : bool
    lacks : str or None
        When unbounded without a bound the quantity needs: which one (else None).
    solver : dict
        ``name``, ``status``, ``value``, ``primal``, ``cross_check``.
    sizes : Sizes
        Gram dimension and constraints.
    seconds : float
        CPU seconds of the solve(s).
    setting : dict
        The algorithm, N, K, eta, R, the class (mu, L, D2, zeta2), the participation.
    """

    quantity: str
    value: float | None
    unbounded: bool
    lacks: str | None
    solver: dict
    sizes: Sizes
    seconds: float
    setting: dict
    solution: Solution | None = field(default=None, repr=False)
    trace: Trace | None = field(default=None, repr=False)
    start: str = field(default="init", repr=False)

    def to_dict(self) -> dict:
        return {
            "quantity": self.quantity,
            "value": self.value,
            "unbounded": self.unbounded,
            "lacks": self.lacks,
            "solver": self.solver,
            "sizes": self.sizes.to_dict(),
            "seconds": self.seconds,
            "setting": self.setting,
        }

    as_dict = renamed("to_dict")

    def instance(self) -> dict:
        """The worst-case clients as interpolation data (original units, vectors compressed to
        the Gram's numerical rank): ``points``, ``grads`` (N, P, r), ``values`` (N, P),
        ``counts`` (N,) (client i's rows are x* then its queries, the first counts[i]),
        ``x0`` (r,) and ``x_star`` (r,), translated so that x0 = 0 (the start of the run; for
        a floor the fixed point).

        Raises
        ------
        AssumptionError
            For an unbounded case (there is no worst instance).
        """
        if self.solution is None or self.solution.G is None:
            raise AssumptionError("an unbounded worst case has no worst instance")
        tr, L = self.trace, self.setting["L_solved"]
        V = leaf_vectors(self.solution, tr, L)
        F = scalar_values(self.solution, L)
        N = tr.n_clients
        counts = 1 + np.bincount(tr.client, minlength=N)
        P, r = int(counts.max()), V.shape[0]
        points, grads, values = np.zeros((N, P, r)), np.zeros((N, P, r)), np.zeros((N, P))
        xs = tr.x_star @ V.T
        for i in range(N):
            q = np.flatnonzero(tr.client == i)
            points[i, 0], grads[i, 0], values[i, 0] = xs, tr.g_star[i] @ V.T, tr.f_star[i] @ F
            points[i, 1 : len(q) + 1] = tr.point[q] @ V.T
            grads[i, 1 : len(q) + 1] = tr.grad[q] @ V.T
            values[i, 1 : len(q) + 1] = tr.value[q] @ F
        x0 = (tr.start["x"][0] if "x" in tr.start else tr.start["u"][0, 0]) @ V.T
        points -= x0  # translated so that x0 = 0 (the toolkit's start; nothing else moves)
        return {
            "points": points,
            "grads": grads,
            "values": values,
            "counts": counts,
            "x0": np.zeros_like(x0),
            "x_star": xs - x0,
        }


class _Clients:
    """The number of clients, where a builder reads it from a problem."""

    def __init__(self, n: int) -> None:
        self.n_clients = n


def built(
    algorithm: str | Algorithm,
    n_clients: int,
    *,
    lr: float | None = None,
    local_steps: int | None = None,
    global_lr: float | None = None,
    prox_mu: float | None = None,
    options: dict | None = None,
) -> Algorithm:
    """A built algorithm for N clients (a name and its settings, or an Algorithm as is)."""
    return build_algorithm(
        algorithm,
        _Clients(int(n_clients)),
        lr=lr,
        local_steps=local_steps,
        global_lr=global_lr,
        prox_mu=prox_mu,
        options=options,
    )


def paths_of(participation: Any, n_clients: int, rule: str, rounds: int) -> Paths:
    """The enumerated participation paths of ``rounds`` rounds, refused before any work past
    :data:`MAX_PATHS` (a :class:`PepSizeError` naming their number and what to reduce)."""
    model = make_participation("full", n_clients) if participation is None else participation
    if int(model.n_clients) != int(n_clients):
        raise AssumptionError(
            f"the participation has {model.n_clients} clients, the worst case {n_clients}"
        )
    sup = model.support()
    k = None if sup is None else int((np.asarray(sup[1]) > 0).sum())
    if k is not None and k**rounds > MAX_PATHS:
        raise PepSizeError(
            f"{k} participation draws per round give {k}^{rounds} = {k**rounds} paths over "
            f"{rounds} rounds, past {MAX_PATHS}: reduce the rounds R, the clients N or "
            "M (C(N, M) subsets per round)",
            paths=k**rounds,
            draws=k,
            rounds=rounds,
        )
    return participation_paths(model, rule, rounds)


def estimate_sizes(
    paths: Paths, n_clients: int, calls: int, *, start: int = 1, extra: int = 0
) -> Sizes:
    """The program's sizes before any trace: every path prefix of every round a distinct model,
    each participant asking ``calls`` gradients (K for the local-steps algorithms): queries
    ~ calls sum_{r < R} (distinct prefixes at r) E|S|, a Gram of queries + N + ``start``
    (+ ``extra`` evaluations), client i with P_i ~ 1 + its share of the queries."""
    N = int(n_clients)
    k = paths.masks.shape[1] ** (1.0 / paths.rounds) if paths.rounds else 1.0
    size = float(paths.masks[0].sum(axis=1) @ paths.prob) if paths.rounds else 0.0
    queries = calls * size * sum(k**r for r in range(paths.rounds)) + extra
    P = 1.0 + queries / N
    return Sizes(int(round(queries)) + N + start, int(round(N * P * (P - 1))))


def _precheck(
    paths: Paths,
    N: int,
    alg: Algorithm,
    what: str,
    reduce: str,
    max_gram: int | None,
    max_constraints: int | None,
    extra: int = 0,
) -> None:
    """Refuse before tracing a program whose estimated sizes exceed :data:`PRECHECK` times the
    cap (the trace itself is then the cost); closer ones are traced and checked exactly."""
    est = estimate_sizes(paths, N, alg.config.local_steps, extra=extra)
    g = PRECHECK * (MAX_GRAM if max_gram is None else max_gram)
    c = PRECHECK * (MAX_CONSTRAINTS if max_constraints is None else max_constraints)
    if est.gram > g or est.constraints > c:
        raise PepSizeError(
            f"{what}: the performance-estimation program would have a Gram matrix of about "
            f"{est.gram} and about {est.constraints} constraints ({paths.n_paths} participation "
            f"path(s)), far past the cap that solves in seconds here; reduce {reduce}",
            gram=est.gram,
            constraints=est.constraints,
            estimated=True,
            paths=paths.n_paths,
            draws=round(paths.n_paths ** (1.0 / paths.rounds)) if paths.rounds else None,
            rounds=paths.rounds,
        )


def _class(mu: float, L: float, D2: float | None, zeta2: float | None) -> tuple:
    mu = check_positive("mu", mu, allow_zero=True)
    L = check_positive("L", L)
    if not mu < L:
        raise AssumptionError(
            f"the general class needs mu < L (mu = L is a single quadratic), got mu = {mu}, L = {L}"
        )
    if D2 is not None:
        D2 = check_positive("D2", D2)
    if zeta2 is not None:
        zeta2 = check_positive("zeta2", zeta2, allow_zero=True)
    return mu, L, D2, zeta2


def _tight(mu: float, L: float, tau: float) -> tuple[float, float]:
    """The tightened class (mu (1 + tau), L (1 - tau))."""
    tau = check_positive("tau", tau, allow_zero=True)
    if tau >= 0.5:
        raise AssumptionError(f"tau must be small (< 0.5), got {tau}")
    return mu * (1 + tau), L * (1 - tau)


def _heterogeneity(tr: Trace, zeta2: float | None) -> tuple[Trace, list]:
    """The trace to solve (pinned: x* = 0, f_i(x*) = 0, :meth:`Trace.pinned`) and the
    constraint (1/N) sum_i ||g_i*||^2 <= zeta2, when given; zeta2 = 0 (a common minimizer) is
    imposed linearly instead, every g_i* = 0 (fewer leaves, no constraint without interior)."""
    tr = tr.pinned()
    if zeta2 is None:
        return tr, []
    if zeta2 == 0:
        return tr.without(G_STAR), []
    N = tr.n_clients
    return tr, [("zeta2", Quad.norm2(tr.g_star, np.full(N, 1.0 / N)), zeta2)]


def _lacks(zeta2: float | None, mu: float) -> str:
    if zeta2 is None:
        return ZETA2_WORDS
    if mu == 0:
        return "mu > 0 (strong convexity: with mu = 0 the class bounds nothing here)"
    return "a bound the class does not state"


def _finish(
    quantity: str,
    sol: Solution,
    tr: Trace,
    setting: dict,
    zeta2: Any,
    mu: float,
    start: str = "init",
) -> WorstCase:
    return WorstCase(
        quantity,
        sol.value,
        sol.unbounded,
        _lacks(zeta2, mu) if sol.unbounded else None,
        sol.solver,
        sol.sizes,
        sol.seconds,
        setting,
        None if sol.unbounded else sol,
        tr,
        start,
    )


def worst_after_rounds(
    algorithm: str | Algorithm,
    n_clients: int,
    rounds: int,
    *,
    mu: float,
    L: float,
    metric: str = "distance2",
    D2: float = 1.0,
    zeta2: float | None = None,
    participation: Any = None,
    rule: str = "mean",
    tau: float = 0.0,
    cross_check: bool | None = None,
    max_gram: int | None = None,
    max_constraints: int | None = None,
    verify: bool = True,
    **settings: Any,
) -> WorstCase:
    """The worst ``metric`` after ``rounds`` rounds from ||x0 - x*||^2 <= D2.

    Parameters
    ----------
    algorithm : str or Algorithm
        A registry name (with ``lr``, ``local_steps`` and the algorithm's other settings in
        ``settings``) or a built algorithm.
    n_clients : int
    rounds : int
        R >= 1.
    mu, L : float
        The class F_{mu,L} (0 <= mu < L).
    metric : {"distance2", "f_minus_f_star", "grad_norm2"}
    D2, zeta2 : float
        The class bounds (zeta2 None: no heterogeneity bound).
    participation : ParticipationModel, optional
        Memoryless, with an enumerable one-round law (default full participation).
    rule : {"mean", "weighted", "unbiased"}
        Aggregation rule.
    tau : float
        Solve over the tightened class (mu (1 + tau), L (1 - tau)) (a worst instance whose
        interpolation margins are positive: :meth:`WorstCase.instance`).
    cross_check, max_gram, max_constraints :
        As :func:`~fedtheory.analysis.pep.program.solve`.
    verify : bool
        Check that the round is linear in its vectors (:func:`~fedtheory.analysis.pep.trace.trace`).

    Returns
    -------
    WorstCase
    """
    if metric not in METRICS:
        raise AssumptionError(f"metric {metric!r}: choose one of {', '.join(METRICS)}")
    mu, L, D2, zeta2 = _class(mu, L, D2, zeta2)
    R = check_int("the rounds R", rounds, minimum=1)
    N = check_int("the clients N", n_clients, minimum=1)
    alg = built(algorithm, N, **settings)
    paths = paths_of(participation, N, rule, R)
    what = f"{alg.name} after {R} round(s) on {N} clients"
    reduce = "the rounds R, the local steps K or the clients N (or M)"
    _precheck(
        paths,
        N,
        alg,
        what,
        reduce,
        max_gram,
        max_constraints,
        extra=0 if metric == "distance2" else N * paths.n_paths,
    )
    tr = trace(alg, N, paths, evaluate_end=metric != "distance2", verify=verify)
    _, roots, vals = _metric(tr, metric, paths.prob)
    keep, het = _heterogeneity(tr.prune([*roots, tr.start["x"]], vals), zeta2)
    form, _, _ = _metric(keep, metric, paths.prob)
    x0 = keep.start["x"][0] - keep.x_star
    conditions = [("D2", Quad.norm2(x0), D2), *het]
    mu_s, L_s = _tight(mu, L, tau)
    sol = solve(
        keep,
        form,
        conditions,
        mu=mu_s,
        L=L_s,
        cross_check=cross_check,
        what=what,
        reduce=reduce,
        max_gram=max_gram,
        max_constraints=max_constraints,
    )
    setting = _setting(alg, N, R, mu, L, D2, zeta2, participation, rule, paths, tau, L_s)
    return _finish(metric, sol, keep, setting, zeta2, mu)


def _metric(tr: Trace, metric: str, p: np.ndarray) -> tuple[Quad, list, list]:
    """The expected ``metric`` over the paths (probabilities ``p``) as a form of the leaves,
    with the vector and scalar coefficient arrays it reads (to prune the trace)."""
    if metric == "distance2":
        x = tr.outputs["x"] - tr.x_star
        return Quad.norm2(x, p), [x], []
    if metric == "grad_norm2":
        g = tr.outputs["end_grad"].mean(axis=1)
        return Quad.norm2(g, p), [g], []
    v = p @ tr.outputs["end_value"].mean(axis=1) - tr.f_star.mean(axis=0)
    return Quad(np.zeros((0, tr.n_vec)), np.zeros(0), v), [], [v]


def _setting(
    alg: Algorithm,
    N: int,
    R: int,
    mu: float,
    L: float,
    D2: Any,
    zeta2: Any,
    participation: Any,
    rule: str,
    paths: Paths,
    tau: float,
    L_s: float,
) -> dict:
    part = {"model": "full"} if participation is None else participation.describe()
    return {
        "algorithm": alg.name,
        "N": N,
        "K": alg.config.local_steps,
        "eta": alg.config.lr,
        "R": R,
        "mu": mu,
        "L": L,
        "D2": D2,
        "zeta2": zeta2,
        "participation": part,
        "rule": rule,
        "paths": paths.n_paths,
        "tau": tau,
        "L_solved": L_s,
    }


def rate_estimate(
    algorithm: str | Algorithm,
    n_clients: int,
    rounds: int,
    *,
    mu: float,
    L: float,
    D2: float = 1.0,
    zeta2: float | None = None,
    participation: Any = None,
    rule: str = "mean",
    cross_check: bool | None = None,
    max_gram: int | None = None,
    max_constraints: int | None = None,
    **settings: Any,
) -> dict:
    """W(R) / W(R - 1), W(r) the worst E||x_r - x*||^2 after r rounds (W(0) = D2): an
    estimate of the per-round factor of the worst mean-square error.

    Returns
    -------
    dict
        ``value`` (the ratio; None when unbounded), ``unbounded``, ``lacks``, ``rounds``,
        ``worst`` (the two :class:`WorstCase` objects, W(R - 1) first; None for R = 1),
        ``method``.
    """
    R = check_int("the rounds R", rounds, minimum=1)
    kw = dict(
        mu=mu,
        L=L,
        D2=D2,
        zeta2=zeta2,
        participation=participation,
        rule=rule,
        cross_check=cross_check,
        max_gram=max_gram,
        max_constraints=max_constraints,
    )
    last = worst_after_rounds(algorithm, n_clients, R, **kw, **settings)
    prev = worst_after_rounds(algorithm, n_clients, R - 1, **kw, **settings) if R > 1 else None
    w_prev = float(D2) if prev is None else prev.value
    unbounded = last.unbounded or (prev is not None and prev.unbounded)
    value = None
    if not unbounded:
        value = last.value / w_prev if w_prev and w_prev > 0 else math.inf
    return {
        "value": value,
        "unbounded": unbounded,
        "lacks": last.lacks or (prev.lacks if prev is not None else None),
        "rounds": R,
        "worst": (prev, last),
        "method": f"estimate: W({R}) / W({R - 1}) of the worst E||x_r - x*||^2 over the "
        "class (performance estimation), not a spectral radius",
    }


def _one_round_from_state(alg: Algorithm, N: int, paths: Paths, verify: bool) -> Trace:
    return trace(alg, N, paths, start="state", verify=verify)


def worst_floor(
    algorithm: str | Algorithm,
    n_clients: int,
    *,
    mu: float,
    L: float,
    zeta2: float | None = None,
    participation: Any = None,
    rule: str = "mean",
    tau: float = 0.0,
    cross_check: bool | None = None,
    max_gram: int | None = None,
    max_constraints: int | None = None,
    verify: bool = True,
    **settings: Any,
) -> WorstCase:
    """The worst floor lim ||x_r - x*||^2 = ||x_bar - x*||^2 over the fixed points x_bar of a
    full-participation round (the module docstring: imposed linearly).

    Raises
    ------
    AssumptionError
        Under sampled participation: a random round has no fixed point, E||x_r - x*||^2 tends
        to its mean over a stationary distribution of the iterates; use
        :func:`worst_after_rounds` with R rounds instead.
    """
    mu, L, _, zeta2 = _class(mu, L, None, zeta2)
    N = check_int("the clients N", n_clients, minimum=1)
    alg = built(algorithm, N, **settings)
    paths = paths_of(participation, N, rule, 1)
    if paths.n_paths != 1:
        raise AssumptionError(
            "the floor of a randomly sampled round is not a fixed point: E||x_r - x*||^2 "
            "tends to its mean over a stationary distribution of the iterates, which "
            "performance estimation does not reach; bound E||x_R - x*||^2 after R rounds "
            "instead (quantity mse_after_rounds with rounds = R)"
        )
    what, reduce = f"the floor of {alg.name} on {N} clients", "the local steps K or the clients N"
    _precheck(paths, N, alg, what, reduce, max_gram, max_constraints)
    tr = _one_round_from_state(alg, N, paths, verify)
    tr = tr.prune([tr.outputs["u"], tr.outputs["V"]])  # before the elimination ties them
    keep, het = _heterogeneity(eliminate(tr, _fixed_point_rows(alg, tr)), zeta2)
    xbar = keep.start["u"][0, 0] - keep.x_star
    mu_s, L_s = _tight(mu, L, tau)
    sol = solve(
        keep,
        Quad.norm2(xbar),
        het,
        mu=mu_s,
        L=L_s,
        cross_check=cross_check,
        what=what,
        reduce=reduce,
        max_gram=max_gram,
        max_constraints=max_constraints,
    )
    setting = _setting(alg, N, 1, mu, L, None, zeta2, participation, rule, paths, tau, L_s)
    setting["R"] = None
    return _finish("stationary_mse", sol, keep, setting, zeta2, mu, start="state")


def _fixed_point_rows(alg: Algorithm, tr: Trace, *, rtol: float = 1e-10) -> np.ndarray:
    """The equations of a reachable fixed point z_bar of one traced round from free state
    leaves: round(z_bar) - z_bar = 0, and every linear quantity phi^T z that the round
    conserves (phi^T (round(z) - z) = 0 for all z: SCAFFOLD's c - mean_i c_i) equal to its
    value at the algorithm's initial state (the reachable states keep it; a fixed point that
    does not is never reached).

    Raises
    ------
    AssumptionError
        A conserved quantity whose initial value depends on x0: the floor then depends on the
        start.
    """
    n = tr.n_vec
    start = np.concatenate([tr.start["u"][0], tr.start["V"][0].reshape(-1, n)])
    res = np.concatenate([tr.outputs["u"][0], tr.outputs["V"][0].reshape(-1, n)]) - start
    a_u, a_V = initial_coordinates(alg, tr.n_clients)
    alpha = np.concatenate([a_u, a_V.reshape(-1)])
    U, sv, _ = np.linalg.svd(res, full_matrices=True)
    rank = int((sv > rtol * max(1.0, sv.max(initial=0.0))).sum())
    rows = [res]
    for phi in U[:, rank:].T:  # conserved directions of the state
        if abs(phi @ alpha) > rtol * max(1.0, np.abs(alpha).max()):
            raise AssumptionError(
                f"{alg.name}: the round conserves a combination of its state whose initial "
                "value depends on x0, so its fixed point (the floor) depends on the start"
            )
        rows.append((phi @ start)[None, :])
    return np.concatenate(rows)


def eliminate(tr: Trace, residual: np.ndarray, *, rtol: float = 1e-10) -> Trace:
    """The trace with ``residual @ leaves = 0`` imposed linearly: for each independent row,
    a pivot leaf (a gradient leaf where the row has one, else a state leaf; the largest
    coefficient) is defined as the combination of the others that zeroes it, and every
    coefficient array is rewritten without the pivots.

    Raises
    ------
    AssumptionError
        A row that involves only x*, x0 and the g_i* (no gradient or state leaf to define):
        the fixed point constrains the class itself.
    """
    R = np.array(residual, dtype=np.float64, copy=True)
    n = tr.n_vec
    kinds = np.array(tr.kinds)
    pivots: list[int] = []
    rows: list[int] = []
    scale = max(1.0, float(np.abs(R).max(initial=0.0)))
    for a in range(R.shape[0]):  # Gauss-Jordan with pivots preferred among gradient leaves
        for pool in (GRAD, STATE):
            cand = np.flatnonzero((kinds == pool) & ~np.isin(np.arange(n), pivots))
            if cand.size and np.abs(R[a, cand]).max() > rtol * scale:
                k = int(cand[np.argmax(np.abs(R[a, cand]))])
                break
        else:
            if np.abs(R[a]).max() > rtol * scale:
                raise AssumptionError(
                    "the fixed-point equations constrain x*, x0 or the g_i* alone: no "
                    "gradient or state leaf to define"
                )
            continue  # a dependent row
        R[a] /= R[a, k]
        others = np.arange(R.shape[0]) != a
        R[others] -= np.outer(R[others, k], R[a])
        pivots.append(k)
        rows.append(a)
    if not pivots:
        return tr
    free = np.setdiff1d(np.arange(n), pivots)
    # pivot_k = -sum_free R[row, free] leaf_free
    S = -R[np.array(rows)][:, free]  # (p, n_free)

    def sub(A: np.ndarray) -> np.ndarray:
        return A[..., free] + A[..., pivots] @ S

    return Trace(
        tr.n_clients,
        [tr.kinds[k] for k in free],
        sub(tr.g_star),
        tr.f_star,
        tr.client,
        sub(tr.point),
        sub(tr.grad),
        tr.value,
        {k: sub(v) if k != "end_value" else v for k, v in tr.outputs.items()},
        {k: sub(v) for k, v in tr.start.items()},
    )


def lyapunov_contraction(
    algorithm: str | Algorithm,
    n_clients: int,
    *,
    mu: float,
    L: float,
    weight_x: float = 1.0,
    weight_clients: Any = 1.0,
    zeta2: float | None = None,
    participation: Any = None,
    rule: str = "mean",
    cross_check: bool | None = None,
    max_gram: int | None = None,
    max_constraints: int | None = None,
    verify: bool = True,
    **settings: Any,
) -> WorstCase:
    """The worst one-round ratio E V(z_1) / V(z_0) of the Lyapunov function
    V(z) = a ||x - x*||^2 + sum_i b_i ||v_i - grad f_i(x*)||^2, the expectation over the
    round's participation draws (enumerated).

    x is the server model and v_i client i's coordinate in the algorithm's declared state
    layout (FOCUS: the stored gradient g_prev_i; SCAFFOLD: its control variate c_i). The
    worst case maximizes E V(z_1) subject to V(z_0) <= 1 over every state and every N-tuple of
    F_{mu,L}. The ratio does not change when every f_i becomes t^2 f_i(. / t) (every vector
    scales by t, the heterogeneity by t^2), so a bound zeta2 > 0 caps no ratio: it is solved
    without it (``zeta2 = 0``, a common minimizer, is a smaller class and imposed).

    Parameters
    ----------
    weight_x : float
        a >= 0.
    weight_clients : float or sequence of N floats
        b_i >= 0 (one weight for every client, or one per client).

    Raises
    ------
    AssumptionError
        A layout with server coordinates besides x (the function would leave them unweighted)
        or with more than one vector per client, or weights of the wrong length.
    """
    mu, L, _, zeta2 = _class(mu, L, None, zeta2)
    N = check_int("the clients N", n_clients, minimum=1)
    a = check_positive("the weight of ||x - x*||^2", weight_x, allow_zero=True)
    b = np.asarray(weight_clients, dtype=np.float64)
    if b.ndim > 1 or b.size not in (1, N):
        raise AssumptionError(
            f"weight_clients is one weight or one weight per client: got {b.size} for {N} clients"
        )
    b = np.broadcast_to(b.reshape(-1), (N,)).copy()
    if (b < 0).any() or not np.isfinite(b).all():
        raise AssumptionError(f"the client weights must be finite and >= 0, got {b}")
    alg = built(algorithm, N, **settings)
    paths = paths_of(participation, N, rule, 1)
    what = f"the Lyapunov contraction of {alg.name}"
    reduce = "the local steps K or the clients N (or M)"
    _precheck(paths, N, alg, what, reduce, max_gram, max_constraints)
    tr = _one_round_from_state(alg, N, paths, verify)
    # a bound zeta2 > 0 caps no ratio (the docstring); zeta2 = 0 is a smaller class
    bound = 0.0 if zeta2 == 0 else None
    tr, het = _heterogeneity(tr.prune([tr.outputs["u"], tr.outputs["V"]]), bound)
    nu, nv = tr.start["u"].shape[1], tr.start["V"].shape[2]
    if nu != 1 or nv > 1:
        raise AssumptionError(
            f"{alg.name}: its state layout has {nu} server and {nv} client vectors; the "
            "Lyapunov function weighs x and one vector per client (server coordinates such "
            "as SCAFFOLD's c or a momentum would be left unweighted)"
        )

    def form(u: np.ndarray, V: np.ndarray, p: np.ndarray) -> Quad:
        rows = [u[:, 0] - tr.x_star]
        w = [a * p]
        if nv:
            rows.append((V[:, :, 0] - tr.g_star).reshape(-1, tr.n_vec))
            w.append((p[:, None] * b[None, :]).reshape(-1))
        return Quad.norm2(np.concatenate(rows), np.concatenate(w))

    start = form(tr.start["u"][:1], tr.start["V"][:1], np.ones(1))
    end = form(tr.outputs["u"], tr.outputs["V"], paths.prob)
    sol = solve(
        tr,
        end,
        [("V(z0)", start, 1.0), *het],
        mu=mu,
        L=L,
        cross_check=cross_check,
        what=what,
        reduce=reduce,
        max_gram=max_gram,
        max_constraints=max_constraints,
    )
    setting = _setting(alg, N, 1, mu, L, None, zeta2, participation, rule, paths, 0.0, L)
    setting.update(weight_x=a, weight_clients=b.tolist())
    out = _finish("lyapunov", sol, tr, setting, bound, mu, start="state")
    if out.unbounded and bound is None:
        out.lacks = LYAPUNOV_LACKS
    return out


__all__ = [
    "METRICS",
    "WorstCase",
    "built",
    "eliminate",
    "estimate_sizes",
    "lyapunov_contraction",
    "paths_of",
    "rate_estimate",
    "worst_after_rounds",
    "worst_floor",
]
