"""One instance of a stated bound: its step size, stated and exact values, ratio and verdict.

For an instance the step size eta is ``lr`` evaluated on the instance's constants
(:func:`~fedtheory.bounds.constants.instance_constants`), the *stated* value is the bound
evaluated there, the *exact* value comes from the exact oracle
(:func:`fedtheory.analysis.exact.exact_rates`, :func:`~fedtheory.analysis.exact.exact_mse_curve`),
and the *ratio* says how tight the bound is:

* for a per-round factor (``mean_square_rate``, ``mean_rate``): log(stated) / log(exact), the
  rounds the exact rate needs over the rounds the stated one promises (for a factor >= 1 the
  plain quotient exact / stated);
* otherwise exact / stated.

A ratio above 1 means exact > stated. The bound is **violated** on an instance that satisfies
the condition when exact > stated + tolerance |stated| + floor (:func:`violates`): ``tolerance``
(1e-6 by default) is relative, and the absolute ``floor`` (:func:`tolerance_floor`) is the
oracle's own accuracy at the problem's scale, so that a bound of 0 on an algorithm that
converges exactly is not broken by rounding (docs/bounds.md, "Tolerance"). With a free constant c, each instance gives the c_i at which the shape equals the
exact value (:func:`solve_constant`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import brentq

from fedtheory.analysis.accuracy import absolute_floor
from fedtheory.analysis.exact import exact_mse_curve, exact_rates
from fedtheory.bounds.constants import instance_constants
from fedtheory.bounds.instances import Draw, Instance
from fedtheory.bounds.spec import AFTER_ROUNDS, QUANTITIES, BoundSpec

#: Largest horizon of the exact transient behind ``rounds_to``.
MAX_ROUNDS = 20000
#: Eigensolver tolerance of the search's screening evaluations: the relative error of a rate
#: it leaves (about 1e-8, measured 1.6e-9 on N = 16, d = 10 FOCUS draws against tolerance
#: 1e-10) is far below the violation tolerance 1e-6, and the instances within 1e-7 of a
#: verdict's threshold are recomputed at 1e-10. It saves a fifth of a draw's time there.
SCREEN_TOL = 1e-8
#: Units in the last place, per dimension of x, of the absolute floor of the tolerance
#: (:func:`tolerance_floor`; docs/bounds.md, "Tolerance", says how it was measured).
FLOOR_ULPS_PER_DIM = 8


def tolerance_floor(quantity: str, constants: dict) -> float:
    """The oracle's own accuracy at the problem's scale: the absolute part of the tolerance.

    ``absolute_floor(scale, steps=d, ulps=8)`` (:func:`fedtheory.analysis.accuracy.absolute_floor`,
    d = ``constants["d"]``): 8 units in the last place per dimension of the quantity's scale, 1
    for a per-round factor (``mean_square_rate``, ``mean_rate``: eigenvalues of round maps whose
    spectrum lies in the unit disc, whose rounding grows like the dimension: measured on
    gradient descent with condition number 1, whose exact mean rate is 0, 18 ulps at d = 10,
    31 at d = 20, 57 at d = 40), ||x*||^2 = ``D2`` for ``stationary_mse`` (the floor
    E||x - x*||^2 is computed from states of size ||x*||) and ``mse_after_rounds`` (times L_f
    for ``f_minus_f_star_after_rounds`` and L_f^2 for ``grad_norm2_after_rounds``: their scale
    at ||x - x*||^2 = D2), 0 for ``rounds_to`` (an integer count).
    """
    if quantity == "rounds_to":
        return 0.0
    scale = 1.0
    if quantity == "stationary_mse" or quantity in AFTER_ROUNDS:
        scale = float(constants.get("D2", 1.0))
        scale = scale if math.isfinite(scale) and scale > 0 else 1.0
        L_f = float(constants.get("L_f", 1.0))
        L_f = L_f if math.isfinite(L_f) and L_f > 0 else 1.0
        scale *= {"f_minus_f_star": L_f, "grad_norm2": L_f**2}.get(AFTER_ROUNDS.get(quantity), 1.0)
    d = float(constants.get("d", 1.0))
    steps = int(round(d)) if math.isfinite(d) and d >= 1 else 1
    return absolute_floor(scale, steps=steps, ulps=FLOOR_ULPS_PER_DIM)


@dataclass
class Evaluation:
    """One instance checked: stated, exact, condition, ratio (see the module docstring).

    Attributes
    ----------
    stated, exact : float
        The bound and the exact value (inf: the exact quantity does not exist, e.g. a
        divergent rate's floor, or epsilon never reached).
    condition_met : bool
    ratio : float
    eta : float
    c : float or None
        With a free constant: the c at which the shape equals the exact value here.
    objective : float
        What the search maximizes (the ratio; with a free constant the oriented c).
    sizes : dict
        N, d, K, M.
    label : str
    constants : dict
        Every constant of the instance.
    defined : bool
        False when the bound or the step size is not a real number here.
    floor : float
        The absolute part of the tolerance on this instance (:func:`tolerance_floor`).
    by_oracle : bool
        The exact value is the oracle's at its default eigensolver tolerance (1e-10); False for
        the search's screening evaluations (tolerance :data:`SCREEN_TOL`) and gradient steps
        (the value comes with its derivatives from the same eigenproblem): the check recomputes
        the instances that decide its result (:func:`fedtheory.bounds.check.check`).
    """

    stated: float
    exact: float
    condition_met: bool
    ratio: float
    eta: float
    c: float | None
    objective: float
    sizes: dict
    label: str
    constants: dict
    defined: bool = True
    exact_method: str = ""
    direction: int = 0
    floor: float = 0.0
    by_oracle: bool = True
    instance: Instance | None = field(default=None, repr=False)
    draw: Draw | None = field(default=None, repr=False)

    def to_dict(self, *, full: bool = False) -> dict:
        out = {
            "stated": self.stated,
            "exact": self.exact,
            "condition_met": self.condition_met,
            "ratio": self.ratio,
            "eta": self.eta,
            **self.sizes,
            "label": self.label,
        }
        if self.c is not None:
            out["c"] = self.c
        if not self.defined:
            out["defined"] = False
        if full:
            out["constants"] = self.constants
            out["exact_method"] = self.exact_method
        return out


def ratio(stated: float, exact: float, is_rate: bool, *, floor: float = 0.0) -> float:
    """How tight: > 1 means exact > stated (module docstring: rounds for a factor < 1).

    Values within ``floor`` of each other (the oracle's accuracy, :func:`tolerance_floor`) are
    equal: ratio 1 (a bound of 0 on an exactly convergent algorithm is tight, not infinitely
    loose or broken).
    """
    if not (math.isfinite(stated) or math.isinf(stated)) or math.isnan(exact):
        return math.nan
    if exact == stated or abs(exact - stated) <= floor:
        return 1.0
    if is_rate and 0 < stated < 1:
        if exact >= 1:
            return math.inf
        return 0.0 if exact <= 0 else math.log(stated) / math.log(exact)
    if stated > 0:
        return exact / stated
    return math.inf if exact > stated else 0.0


def violates(ev: Evaluation, tolerance: float) -> bool:
    """exact > stated + tolerance |stated| + floor on an instance that meets the condition
    (``floor``: the instance's :func:`tolerance_floor`)."""
    if not (ev.condition_met and ev.defined):
        return False
    return ev.exact > ev.stated + tolerance * abs(ev.stated) + ev.floor


# -- exact values --------------------------------------------------------------------------------
def oracle_keywords(spec: BoundSpec, inst: Instance, eta: float) -> dict:
    kw: dict[str, Any] = {"lr": eta, "local_steps": inst.local_steps, "rule": spec.aggregation}
    if spec.global_lr is not None:
        kw["global_lr"] = spec.global_lr
    if spec.prox_mu is not None:
        kw["prox_mu"] = spec.prox_mu
    if spec.options:
        kw["options"] = dict(spec.options)
    return kw


def exact_value(
    spec: BoundSpec, inst: Instance, eta: float, *, verify: bool = True, tol: float = 1e-10
) -> tuple[float, str]:
    """The exact value of the spec's quantity on ``inst`` at step ``eta``, and how it was had."""
    part = inst.participation(spec)
    kw = oracle_keywords(spec, inst, eta)
    q = spec.quantity
    if q == "mean_rate":
        r = exact_rates(
            inst.problem,
            spec.algorithm,
            part,
            mean_square="skip",
            stationary=False,
            verify=verify,
            **kw,
        )
        return r.mean_rate, r.methods["mean rate"]
    if q in AFTER_ROUNDS:  # from x_0 = 0; E (x_R - x*)^T W (x_R - x*) on a quadratic
        H = np.asarray(inst.problem.H, dtype=np.float64).mean(axis=0)
        W = {"distance2": None, "f_minus_f_star": H / 2, "grad_norm2": H @ H}[AFTER_ROUNDS[q]]
        curve = exact_mse_curve(
            inst.problem, spec.algorithm, part, rounds=spec.rounds, weight=W, verify=verify, **kw
        )
        return float(curve[-1]), f"exact transient: {QUANTITIES[q]}, x_0 = 0"
    r = exact_rates(
        inst.problem,
        spec.algorithm,
        part,
        stationary=q != "mean_square_rate",
        verify=verify,
        tol=tol,
        **kw,
    )
    if q == "mean_square_rate":
        return r.mean_square_rate, r.methods["mean-square rate"]
    if q == "stationary_mse":
        if r.stationary_mse is None:
            return math.inf, "no stationary mean-square error (mean-square rate >= 1)"
        return r.stationary_mse, r.methods.get("stationary mse", "")
    # rounds_to: the exact transient from the algorithm's initialization.
    how = "first round of the exact transient E||x_r - x*||^2 below epsilon times its start"
    rho = r.mean_square_rate
    d0 = float(inst.problem.x_star @ inst.problem.x_star)
    if not rho < 1 or (r.stationary_mse is not None and r.stationary_mse > spec.epsilon * d0):
        return math.inf, how + " (never: no contraction, or a floor above the target)"
    guess = math.log(spec.epsilon) / math.log(max(rho, 1e-300)) if rho > 0 else 1.0
    horizon = int(min(MAX_ROUNDS, spec.rounds or max(50, math.ceil(4 * guess + 50))))
    curve = exact_mse_curve(inst.problem, spec.algorithm, part, rounds=horizon, verify=False, **kw)
    hit = np.flatnonzero(curve <= spec.epsilon * curve[0])
    if not hit.size:
        return math.inf, how + f" (not within {horizon} rounds)"
    return float(hit[0]), how


# -- free constants ----------------------------------------------------------------------------
def solve_constant(spec: BoundSpec, consts: dict, exact: float) -> tuple[float, int]:
    """(c_i, direction): the smallest c >= 0 at which the shape reaches ``exact``.

    direction is +1 when the shape grows with c near 0 (valid for c >= c_i), -1 when it
    shrinks (valid for c <= c_i: 1 - c eta mu), 0 when it does not depend on c. c is scanned
    on 0 and a geometric grid 1e-12..1e16 (half decades) for the first sign change, then
    bisected (Brent) to 4 ulp: a shape that is not monotone, such as (1 - c eta mu)^2, is
    read up to its first crossing. c_i = inf: no c on the grid reaches ``exact`` (direction
    +1: no c bounds the instance; -1: every c does); NaN: no c >= 0 does (direction -1)."""

    def g(c: float) -> float:
        return spec.stated_value(consts, c) - exact

    grid = np.concatenate([[0.0], 10.0 ** np.arange(-12.0, 16.5, 0.5)])
    vals = np.array([g(c) for c in grid])
    if not math.isfinite(vals[0]):
        return math.nan, 0
    moved = np.flatnonzero(np.isfinite(vals) & (vals != vals[0]))
    if not moved.size:
        return (0.0 if vals[0] >= 0 else math.nan), 0
    direction = 1 if vals[moved[0]] > vals[0] else -1
    if direction == 1 and vals[0] >= 0:
        return 0.0, 1
    if direction == -1 and vals[0] < 0:
        return math.nan, -1
    crossed = np.flatnonzero(vals < 0) if direction == -1 else np.flatnonzero(vals >= 0)
    crossed = crossed[crossed > 0]
    if not crossed.size:
        return math.inf, direction
    j = int(crossed[0])
    if vals[j] == 0:
        return float(grid[j]), direction
    root = brentq(g, grid[j - 1], grid[j], xtol=1e-300, rtol=4 * np.finfo(float).eps)
    return float(root), direction


# -- one instance --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Judgement:
    """What the spec says of an instance's constants and exact value (see :func:`judge`)."""

    stated: float
    c: float | None
    direction: int
    condition_met: bool
    defined: bool
    floor: float
    ratio: float
    objective: float


def judge(spec: BoundSpec, consts: dict, exact: float) -> Judgement:
    """The stated value, free constant, condition, floor, ratio and the search's objective for
    an instance's constants (``eta`` included) and exact value: no oracle call, so the search
    differentiates the objective through it (the objective is the ratio; with a free constant
    and no value for it, the constant c_i oriented so that larger is worse; -inf where the
    condition fails or the bound is undefined)."""
    floor = tolerance_floor(spec.quantity, consts)
    c_i, direction = (None, 0)
    if spec.constant is not None:  # the shape must reach the exact value up to the floor
        c_i, direction = solve_constant(spec, consts, exact - floor)
    stated = (
        spec.stated_value(consts)
        if spec.constant_value is not None or not spec.constant
        else math.nan
    )
    met = spec.condition_met(consts)
    defined = bool(spec.constant and spec.constant_value is None) or math.isfinite(stated)
    rat = ratio(stated, exact, spec.is_rate, floor=floor) if math.isfinite(stated) else math.nan
    if spec.constant is not None and spec.constant_value is None:
        c_val = c_i if c_i is not None else math.nan
        objective = (
            -math.inf
            if math.isnan(c_val) and direction >= 0
            else math.inf
            if math.isnan(c_val)
            else direction * c_val
        )
    else:
        objective = rat if math.isfinite(rat) or math.isinf(rat) else -math.inf
    if not (met and defined):
        objective = -math.inf
    return Judgement(stated, c_i, direction, met, defined, floor, rat, objective)


def scored(
    spec: BoundSpec,
    consts: dict,
    exact: float,
    eta: float,
    sizes: dict,
    label: str,
    how: str,
    instance: Instance | None = None,
) -> Evaluation:
    """The :class:`Evaluation` of an exact (or worst) value ``exact`` on an instance (or a
    class setting) with constants ``consts`` (``eta`` included): stated, condition, floor,
    ratio, the free constant's c_i and what the search maximizes (:func:`judge`)."""
    j = judge(spec, consts, exact)
    return Evaluation(
        j.stated,
        exact,
        j.condition_met,
        j.ratio,
        eta,
        j.c,
        j.objective,
        sizes,
        label,
        consts,
        defined=j.defined,
        exact_method=how,
        direction=j.direction,
        floor=j.floor,
        instance=instance,
    )


def constants_of(spec: BoundSpec, inst: Instance) -> dict:
    """Every constant of ``inst`` under ``spec`` (``eta`` not yet included)."""
    return instance_constants(
        inst.problem,
        inst.participation(spec),
        local_steps=inst.local_steps,
        rule=spec.aggregation,
        epsilon=spec.epsilon,
        topology=spec.topology,
    )


def evaluate(
    spec: BoundSpec,
    inst: Instance,
    *,
    verify: bool = True,
    tol: float = 1e-10,
    exact: tuple[float, str] | None = None,
    constants: dict | None = None,
    lr_scale: float = 1.0,
) -> Evaluation:
    """Stated, exact, condition and ratio of ``spec`` on one instance.

    ``exact`` = (value, how) and ``constants`` skip the oracle call and the constants when the
    caller already has them (the search's gradient steps compute the exact value with its
    derivatives, :func:`fedtheory.analysis.exact.sensitivity.rate_gradient`). ``lr_scale``
    multiplies the spec's step (how a shape's constant moves with eta).
    """
    consts = dict(constants) if constants is not None else constants_of(spec, inst)
    eta = spec.step_size(consts, inst.label) * lr_scale  # invalid input where not > 0: raised
    consts["eta"] = eta
    value, how = (
        exact if exact is not None else exact_value(spec, inst, eta, verify=verify, tol=tol)
    )
    j = judge(spec, consts, value)
    return Evaluation(
        j.stated,
        value,
        j.condition_met,
        j.ratio,
        eta,
        j.c,
        j.objective,
        inst.sizes(),
        inst.label,
        consts,
        defined=j.defined,
        exact_method=how,
        direction=j.direction,
        floor=j.floor,
        by_oracle=exact is None and tol <= 1e-10,
        instance=inst,
    )
