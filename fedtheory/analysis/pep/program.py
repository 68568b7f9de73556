"""The performance-estimation SDP of a trace, built in PEPit and solved with a named solver.

A :class:`~fedtheory.analysis.pep.trace.Trace` lists, per client, the points at which a
gradient was asked (x* included) with the coefficients of the gradient and value there. The
program declares N functions of F_{mu,L} (:class:`PEPit.functions.SmoothStronglyConvexFunction`;
mu = 0: smooth convex), one PEPit leaf per vector leaf and per scalar leaf, every point as its
linear combination (``add_point``), the class bounds as constraints and the performance metric
as a quadratic form of the leaves (:class:`Quad`); PEPit writes the interpolation inequalities
of every pair of a client's points (Taylor, Hendrickx and Glineur 2017, Thm 4).

Numerics (docs/bounds.md, "The general class"):

* units with L = 1: f -> f / L, gradient leaves -> g / L, the class F_{mu/L, 1}; vectors keep
  their values (a gradient-valued vector is L times its scaled coefficients), function values
  are L times theirs. Without it a value came out 1% low with status ``optimal_inaccurate``
  (docs/bounds.md); with it the solver's relative accuracy is 1e-10 to 5e-7;
* the solver is named: Clarabel (:data:`CLARABEL`), with SCS (:data:`SCS`) as cross-check, as
  the second opinion of an inaccurate status, and as the detector of an unbounded problem
  (Clarabel raises where SCS returns status ``unbounded``);
* sizes before work (:func:`sizes`): the Gram dimension is the number of vector leaves, the
  constraints sum_i P_i (P_i - 1) over clients with P_i points, plus the class bounds; past
  :data:`MAX_GRAM` or :data:`MAX_CONSTRAINTS` the program is refused naming both numbers.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedtheory.analysis.pep.trace import G_STAR, GRAD, Trace
from fedtheory.errors import AssumptionError, FedTheoryError
from fedtheory.extras import require
from fedtheory.io import renamed

#: Largest Gram dimension and constraint count solved by default: a Gram of 49 with 723
#: constraints took 8.5-12 CPU seconds here, one of 82 with 2109 did not finish in 300 s with
#: Clarabel (docs/bounds.md, "Sizes").
MAX_GRAM = 60
MAX_CONSTRAINTS = 1000

#: Clarabel through cvxpy. Gap and feasibility tolerances of 1e-8 relative (1e-10 absolute:
#: a floor of 0.0026 needs a small absolute gap, 1e-7 absolute moved it by 5e-5), the static
#: regularization at 1e-8 and 400 iterations: FOCUS's rounds converge slowly (30 iterations)
#: and settle within 1e-7 of the value a tolerance of 1e-10 gives, where SCS stops
#: ``optimal_inaccurate`` 1.7e-4 high (docs/bounds.md, "The general class").
CLARABEL = {
    "solver": "CLARABEL",
    "tol_gap_abs": 1e-10,
    "tol_gap_rel": 1e-8,
    "tol_feas": 1e-8,
    "static_regularization_constant": 1e-8,
    "max_iter": 400,
}
#: SCS through cvxpy (the cross-check and the detector of unbounded problems).
SCS = {"solver": "SCS", "eps_abs": 1e-7, "eps_rel": 1e-7, "max_iters": 20_000}
#: Statuses taken as solved.
OPTIMAL = ("optimal",)
UNBOUNDED = ("unbounded", "unbounded_inaccurate")


class PepSizeError(FedTheoryError):
    """The performance-estimation program is larger than the cap; the message names its sizes
    and what to reduce.

    Attributes
    ----------
    gram, constraints : int or None
        The program's sizes (None when the refusal counted participation paths instead).
    estimated : bool
        The sizes are the estimate made before tracing (``about``), not the traced program's.
    paths : int or None
        Participation paths over the rounds, k^R (None when the refusal is about sizes).
    draws, rounds : int or None
        k, the participation draws per round, and R (with ``paths``).
    """

    def __init__(
        self,
        message: str,
        *,
        gram: int | None = None,
        constraints: int | None = None,
        estimated: bool = False,
        paths: int | None = None,
        draws: int | None = None,
        rounds: int | None = None,
    ) -> None:
        super().__init__(message)
        self.gram, self.constraints, self.estimated = gram, constraints, estimated
        self.paths, self.draws, self.rounds = paths, draws, rounds


@dataclass(frozen=True)
class Quad:
    """A quadratic form of the leaves, in original units:
    sum_j w_j ||sum_k A[j, k] leaf_k||^2 + sum_k b_k value_k.

    Attributes
    ----------
    vectors : ndarray (J, n)
        Coefficient rows A over the vector leaves.
    weights : ndarray (J,)
    values : ndarray (m,) or None
        Coefficients b over the scalar leaves (function values).
    """

    vectors: np.ndarray
    weights: np.ndarray
    values: np.ndarray | None = None

    @classmethod
    def norm2(cls, rows: np.ndarray, weights: Any = None) -> Quad:
        """sum_j w_j ||rows_j||^2 (w = 1 by default)."""
        rows = np.atleast_2d(np.asarray(rows, dtype=np.float64))
        w = np.ones(len(rows)) if weights is None else np.asarray(weights, dtype=np.float64)
        return cls(rows, np.broadcast_to(w, (len(rows),)).copy())

    def evaluate(self, V: np.ndarray, F: np.ndarray) -> float:
        """Its value for leaf vectors ``V`` (r, n) (columns) and scalar leaves ``F`` (m,)."""
        x = self.vectors @ V.T
        out = float(self.weights @ (x * x).sum(axis=1))
        if self.values is not None:
            out += float(self.values @ F)
        return out


@dataclass(frozen=True)
class Sizes:
    """Gram dimension and number of scalar constraints of a program."""

    gram: int
    constraints: int

    def to_dict(self) -> dict:
        return {"gram": self.gram, "constraints": self.constraints}

    as_dict = renamed("to_dict")


def sizes(tr: Trace, n_conditions: int = 0) -> Sizes:
    """The Gram dimension (vector leaves) and the scalar constraints (every ordered pair of a
    client's points, x* included, plus ``n_conditions``)."""
    P = 1 + np.bincount(tr.client, minlength=tr.n_clients)
    return Sizes(tr.n_vec, int((P * (P - 1)).sum()) + int(n_conditions))


def check_size(
    size: Sizes,
    what: str,
    reduce: str,
    *,
    max_gram: int | None = None,
    max_constraints: int | None = None,
) -> None:
    """Refuse a program past the cap, naming its sizes and what to reduce."""
    g = MAX_GRAM if max_gram is None else max_gram
    c = MAX_CONSTRAINTS if max_constraints is None else max_constraints
    if size.gram > g or size.constraints > c:
        raise PepSizeError(
            f"{what}: the performance-estimation program would have a Gram matrix of "
            f"{size.gram} and {size.constraints} constraints, past the cap ({g}, {c}) that "
            f"solves in seconds here; reduce {reduce}",
            gram=size.gram,
            constraints=size.constraints,
        )


@dataclass
class Solution:
    """A solved program.

    Attributes
    ----------
    value : float or None
        The worst case in original units (the dual objective of the solver that settled it;
        None when unbounded or unsolved).
    unbounded : bool
    solver : dict
        ``name``, ``status``, ``value`` (that solver's value), ``primal``, ``cross_check``
        ({``name``, ``status``, ``value``} of SCS, or None when not run).
    sizes : Sizes
    seconds : float
        CPU seconds of building and solving (``time.process_time``).
    G : ndarray (n, n) or None
        The Gram matrix of the vector leaves (scaled units, see :func:`leaf_vectors`).
    F : ndarray (m,) or None
        The scalar leaves (scaled units).
    """

    value: float | None
    unbounded: bool
    solver: dict
    sizes: Sizes
    seconds: float
    G: np.ndarray | None = field(default=None, repr=False)
    F: np.ndarray | None = field(default=None, repr=False)


def _scale(tr: Trace, L: float) -> np.ndarray:
    """Per vector leaf: its value in original units over its scaled value (L for gradients)."""
    return np.array([L if k in (G_STAR, GRAD) else 1.0 for k in tr.kinds])


def _build(tr: Trace, metric: Quad, conditions: list, mu: float, L: float) -> Any:
    """The PEPit problem (units with L = 1)."""
    from PEPit import PEP, Expression, Point  # noqa: PLC0415 (optional extra 'pep')
    from PEPit.functions import SmoothStronglyConvexFunction  # noqa: PLC0415 (extra 'pep')

    s = _scale(tr, L)
    pep = PEP()
    fs = [
        pep.declare_function(SmoothStronglyConvexFunction, mu=mu / L, L=1.0)
        for _ in range(tr.n_clients)
    ]
    P = [Point() for _ in range(tr.n_vec)]
    E = [Expression() for _ in range(tr.n_val)]

    def vec(c: np.ndarray) -> Any:
        return Point(
            is_leaf=False, decomposition_dict={P[k]: float(c[k]) for k in np.flatnonzero(c)}
        )

    def val(c: np.ndarray) -> Any:
        return Expression(
            is_leaf=False, decomposition_dict={E[k]: float(c[k]) for k in np.flatnonzero(c)}
        )

    def quad(q: Quad) -> Any:
        out = val(np.zeros(tr.n_val))
        for row, w in zip(q.vectors, q.weights, strict=True):
            if w and np.any(row):
                out = out + float(w) * vec(row * s) ** 2
        if q.values is not None:
            out = out + L * val(q.values)
        return out

    xs = vec(tr.x_star * s)
    for i in range(tr.n_clients):  # x* with g_i*, then the client's queries
        fs[i].add_point((xs, vec(tr.g_star[i] * s / L), val(tr.f_star[i])))
    for q in range(len(tr.client)):
        fs[tr.client[q]].add_point(
            (vec(tr.point[q] * s), vec(tr.grad[q] * s / L), val(tr.value[q]))
        )
    for name, form, bound in conditions:
        pep.add_constraint(quad(form) <= float(bound), name=name)
    pep.set_performance_metric(quad(metric))
    return pep, P, E


def solve(
    tr: Trace,
    metric: Quad,
    conditions: list[tuple[str, Quad, float]],
    *,
    mu: float,
    L: float,
    cross_check: bool | None = None,
    what: str = "the worst case",
    reduce: str = "the rounds R, the local steps K or the clients N",
    max_gram: int | None = None,
    max_constraints: int | None = None,
) -> Solution:
    """Solve the performance-estimation program of ``tr``: maximize ``metric`` over every
    N-tuple of functions of F_{mu,L} subject to ``conditions`` (name, form, bound: form <=
    bound).

    Parameters
    ----------
    cross_check : bool or None
        Also solve with SCS: True always, None when Clarabel's status is not ``optimal`` (or it
        fails), False never.
    what, reduce : str
        Words of a size refusal.

    Raises
    ------
    MissingExtraError
        Without the optional extra ``pep`` (one line naming it).
    PepSizeError
        Past the cap.
    FedTheoryError
        When neither solver returns a value and SCS does not find the problem unbounded.
    """
    require("pep", "performance estimation")
    mu, L = float(mu), float(L)
    if not (0.0 <= mu < L and math.isfinite(L)):
        raise AssumptionError(f"the general class needs 0 <= mu < L < inf, got mu = {mu}, L = {L}")
    size = sizes(tr, len(conditions))
    check_size(size, what, reduce, max_gram=max_gram, max_constraints=max_constraints)
    t0 = time.process_time()
    main = _solve_with(tr, metric, conditions, mu, L, CLARABEL)
    other = None
    if cross_check or (cross_check is None and main["status"] not in OPTIMAL):
        other = _solve_with(tr, metric, conditions, mu, L, SCS)
    chosen = main
    if main["value"] is None and other is not None and other["value"] is not None:
        chosen = other  # Clarabel failed where SCS solved: SCS settles it (both recorded)
    unbounded = main["value"] is None and other is not None and other["status"] in UNBOUNDED
    if chosen["value"] is None and not unbounded:
        raise FedTheoryError(
            f"{what}: no solver returned a value (Clarabel: {main['status']}"
            + (f"; SCS: {other['status']}" if other else "")
            + ")"
        )
    solver = {
        "name": chosen["name"],
        "status": chosen["status"],
        "value": chosen["value"],
        "primal": chosen["primal"],
        "cross_check": None
        if other is None or chosen is other
        else {k: other[k] for k in ("name", "status", "value")},
    }
    if chosen is other:
        solver["cross_check"] = {k: main[k] for k in ("name", "status", "value")}
    if unbounded:
        solver.update(name=other["name"], status=other["status"], value=None, primal=None)
        solver["cross_check"] = {k: main[k] for k in ("name", "status", "value")}
    return Solution(
        None if unbounded else chosen["value"],
        unbounded,
        solver,
        size,
        time.process_time() - t0,
        chosen.get("G"),
        chosen.get("F"),
    )


def _solve_with(
    tr: Trace, metric: Quad, conditions: list, mu: float, L: float, settings: dict
) -> dict:
    """One solve: name, status, dual value (original units), primal value, Gram, scalars."""
    import cvxpy  # noqa: PLC0415 (optional extra 'pep')

    pep, P, E = _build(tr, metric, conditions, mu, L)
    name = settings["solver"]
    try:
        with warnings.catch_warnings():  # an inaccurate status is recorded, not printed
            warnings.simplefilter("ignore", UserWarning)
            dual = pep.solve(wrapper="cvxpy", verbose=0, **settings)
    except cvxpy.error.SolverError as exc:
        return {
            "name": name,
            "status": f"failed ({str(exc).split('.')[0]})",
            "value": None,
            "primal": None,
        }
    prob = pep.wrapper.prob
    status = str(prob.status)
    if dual is None or prob.value is None or not np.isfinite(prob.value):
        return {"name": name, "status": status, "value": None, "primal": None}
    return {
        "name": prob.solver_stats.solver_name,
        "status": status,
        "value": float(dual),
        "primal": float(prob.value),
        "G": np.asarray(pep.G_value, dtype=np.float64),
        # PEPit's Expression.eval: the solved program's value of a function value (numbers
        # from the solver, no text is evaluated)
        "F": np.array([e.eval() for e in E], dtype=np.float64),
    }


def leaf_vectors(sol: Solution, tr: Trace, L: float, *, rtol: float = 1e-9) -> np.ndarray:
    """Vectors of the leaves in original units, compressed to the Gram's numerical rank:
    ``(r, n)``, column k the k-th vector leaf (gradient leaves times L). Eigenvalues below
    ``rtol`` times the largest are dropped."""
    lam, U = np.linalg.eigh((sol.G + sol.G.T) / 2)
    keep = lam > rtol * max(lam.max(initial=0.0), 1e-300)
    V = np.sqrt(lam[keep])[:, None] * U[:, keep].T
    return V * _scale(tr, L)[None, :]


def scalar_values(sol: Solution, L: float) -> np.ndarray:
    """The scalar leaves (function values) in original units."""
    return L * sol.F
