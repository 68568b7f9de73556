"""Check a stated bound: on one instance, and by a worst-case search over an instance class.

For every instance the step size eta is ``lr`` evaluated on the instance's constants
(:func:`~fedtheory.bounds.constants.instance_constants`), the *stated* value is the bound
evaluated there, the *exact* value comes from the exact oracle
(:func:`fedtheory.analysis.exact.exact_rates`, :func:`~fedtheory.analysis.exact.exact_mse_curve`),
and the *ratio* says how tight the bound is:

* for a per-round factor (``mean_square_rate``, ``mean_rate``): log(stated) / log(exact), the
  rounds the exact rate needs over the rounds the stated one promises (for a factor >= 1 the
  plain quotient exact / stated);
* otherwise exact / stated.

A ratio above 1 means exact > stated. The bound is **violated** on an instance that satisfies
the condition when exact > stated (1 + tolerance) (``tolerance`` 1e-6 by default; docs/bounds.md
says why). With a free constant c, each instance gives the c_i at which the shape equals the
exact value; the **implied constant** is the smallest c that bounds every instance found (sup of
c_i when the shape grows with c) or the largest (inf of c_i when it shrinks with c, as in
1 - c eta mu).

The search (:func:`check` with ``search=n``) draws n random class instances (in worker
processes: instance i depends only on (seed, i)), then refines the worst three by Nelder-Mead
(:func:`scipy.optimize.minimize`) in random 6-dimensional subspaces of the instance parameters
(client spectra, rotations, optima, participation weights), n / 4 evaluations in all.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import brentq, minimize

from fedtheory.analysis.exact import exact_mse_curve, exact_rates
from fedtheory.analysis.exact.oracle import ROUND_SECONDS
from fedtheory.analysis.rates import fit_linear_rate
from fedtheory.analysis.stats import Effect, jackknife_interval, mean_interval
from fedtheory.bounds.constants import instance_constants
from fedtheory.bounds.instances import Draw, Instance, draw_instance, named_instance
from fedtheory.bounds.spec import AFTER_ROUNDS, QUANTITIES, BoundSpec, load_spec
from fedtheory.errors import AssumptionError, FedTheoryError, SettingError, SizeError
from fedtheory.parallel import fork_all
from fedtheory.simulation import simulate
from fedtheory.validation import (
    available_cores,
    check_duration,
    check_int,
    check_memory,
    check_seed,
    worker_count,
)

#: Random draws of the default search (``fedtheory bound --search``).
DEFAULT_SEARCH = 200
#: Largest horizon of the exact transient behind ``rounds_to``.
MAX_ROUNDS = 20000
_REFINE_STARTS = 3
_SUBSPACE = 6
_C_MAX = 1e300


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
    instance: Instance | None = field(default=None, repr=False)
    draw: Draw | None = field(default=None, repr=False)

    def to_dict(self, *, full: bool = False) -> dict:
        out = {"stated": self.stated, "exact": self.exact, "condition_met": self.condition_met,
               "ratio": self.ratio, "eta": self.eta, **self.sizes, "label": self.label}  # fmt: skip
        if self.c is not None:
            out["c"] = self.c
        if not self.defined:
            out["defined"] = False
        if full:
            out["constants"] = self.constants
            out["exact_method"] = self.exact_method
        return out


def ratio(stated: float, exact: float, is_rate: bool) -> float:
    """How tight: > 1 means exact > stated (module docstring: rounds for a factor < 1)."""
    if not (math.isfinite(stated) or math.isinf(stated)) or math.isnan(exact):
        return math.nan
    if exact == stated:
        return 1.0
    if is_rate and 0 < stated < 1:
        if exact >= 1:
            return math.inf
        return 0.0 if exact <= 0 else math.log(stated) / math.log(exact)
    if stated > 0:
        return exact / stated
    return math.inf if exact > stated else 0.0


def violates(ev: Evaluation, tolerance: float) -> bool:
    """exact > stated (1 + tolerance) on an instance that meets the condition."""
    if not (ev.condition_met and ev.defined):
        return False
    return ev.exact > ev.stated + tolerance * abs(ev.stated)


# -- exact values --------------------------------------------------------------------------------
def _oracle_kw(spec: BoundSpec, inst: Instance, eta: float) -> dict:
    kw: dict[str, Any] = {"lr": eta, "local_steps": inst.local_steps, "rule": spec.aggregation}
    if spec.global_lr is not None:
        kw["global_lr"] = spec.global_lr
    if spec.prox_mu is not None:
        kw["prox_mu"] = spec.prox_mu
    if spec.options:
        kw["options"] = dict(spec.options)
    return kw


def exact_value(spec: BoundSpec, inst: Instance, eta: float, *, verify: bool = True,
                tol: float = 1e-10) -> tuple[float, str]:  # fmt: skip
    """The exact value of the spec's quantity on ``inst`` at step ``eta``, and how it was had."""
    part = inst.participation(spec)
    kw = _oracle_kw(spec, inst, eta)
    q = spec.quantity
    if q == "mean_rate":
        r = exact_rates(inst.problem, spec.algorithm, part, mean_square="skip",
                        stationary=False, verify=verify, **kw)  # fmt: skip
        return r.mean_rate, r.methods["mean rate"]
    if q in AFTER_ROUNDS:  # from x_0 = 0; E (x_R - x*)^T W (x_R - x*) on a quadratic
        H = np.asarray(inst.problem.H, dtype=np.float64).mean(axis=0)
        W = {"distance2": None, "f_minus_f_star": H / 2, "grad_norm2": H @ H}[AFTER_ROUNDS[q]]
        curve = exact_mse_curve(inst.problem, spec.algorithm, part, rounds=spec.rounds,
                                weight=W, verify=verify, **kw)  # fmt: skip
        return float(curve[-1]), f"exact transient: {QUANTITIES[q]}, x_0 = 0"
    r = exact_rates(inst.problem, spec.algorithm, part, stationary=q != "mean_square_rate",
                    verify=verify, tol=tol, **kw)  # fmt: skip
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
    curve = exact_mse_curve(inst.problem, spec.algorithm, part, rounds=horizon,
                            verify=False, **kw)  # fmt: skip
    hit = np.flatnonzero(curve <= spec.epsilon * curve[0])
    if not hit.size:
        return math.inf, how + f" (not within {horizon} rounds)"
    return float(hit[0]), how


# -- free constants ----------------------------------------------------------------------------
def _solve_constant(spec: BoundSpec, consts: dict, exact: float) -> tuple[float, int]:
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
def evaluate(spec: BoundSpec, inst: Instance, *, verify: bool = True,
             tol: float = 1e-10) -> Evaluation:  # fmt: skip
    """Stated, exact, condition and ratio of ``spec`` on one instance."""
    part = inst.participation(spec)
    consts = instance_constants(inst.problem, part, local_steps=inst.local_steps,
                                rule=spec.aggregation, epsilon=spec.epsilon,
                                topology=spec.topology)  # fmt: skip
    eta = spec.step_size(consts, inst.label)  # invalid input where it is not > 0: raised
    consts["eta"] = eta
    exact, how = exact_value(spec, inst, eta, verify=verify, tol=tol)
    return scored(spec, consts, exact, eta, inst.sizes(), inst.label, how, instance=inst)


def scored(spec: BoundSpec, consts: dict, exact: float, eta: float, sizes: dict, label: str,
           how: str, instance: Instance | None = None) -> Evaluation:  # fmt: skip
    """The :class:`Evaluation` of an exact (or worst) value ``exact`` on an instance (or a
    class setting) with constants ``consts``: stated, condition, ratio, the free constant's
    c_i and what the search maximizes."""
    c_i, direction = (None, 0)
    if spec.constant is not None:
        c_i, direction = _solve_constant(spec, consts, exact)
    stated = spec.stated_value(consts) if spec.constant_value is not None or not spec.constant \
        else math.nan  # fmt: skip
    met = spec.condition_met(consts)
    defined = bool(spec.constant and spec.constant_value is None) or math.isfinite(stated)
    rat = ratio(stated, exact, spec.is_rate) if math.isfinite(stated) else math.nan
    if spec.constant is not None and spec.constant_value is None:
        c_val = c_i if c_i is not None else math.nan
        objective = (-math.inf if math.isnan(c_val) and direction >= 0 else
                     math.inf if math.isnan(c_val) else direction * c_val)  # fmt: skip
    else:
        objective = rat if math.isfinite(rat) or math.isinf(rat) else -math.inf
    if not (met and defined):
        objective = -math.inf
    return Evaluation(stated, exact, met, rat, eta, c_i, objective, sizes, label, consts,
                      defined=defined, exact_method=how, direction=direction,
                      instance=instance)  # fmt: skip


def measure(spec: BoundSpec, inst: Instance, eta: float, *, seeds: int | None = None,
            seed: int = 0, rounds: int | None = None, exact_rate: float | None = None) -> dict:  # fmt: skip
    """The measured value from :func:`fedtheory.simulation.simulate` (mean over seeds, 95% CI)
    and the rounds until the seed mean of ||x_r - x*||^2 falls below epsilon times its start.

    Rate quantities: the per-round factor of the seed mean of ||x_r - x*||^2 (a geometric fit
    before the floor), with a delete-one-seed jackknife interval; ``stationary_mse``: the time
    average of ||x_r - x*||^2 over the second half of the rounds, Student-t interval over
    seeds. ``mean_rate`` is not measured (the runner records each seed's error, not E x_r).
    """
    part = inst.participation(spec)
    random = spec.participation != "full" or spec.noise > 0
    S = int(seeds or spec.seeds) if random else 1
    if rounds is None:
        rho = exact_rate if exact_rate is not None and 0 < exact_rate < 1 else 0.99
        rounds = int(min(5000, max(50, math.ceil(1.5 * math.log(min(spec.epsilon, 1e-8))
                                                  / math.log(rho)))))  # fmt: skip
    kw = _oracle_kw(spec, inst, eta)
    kw["aggregation"] = kw.pop("rule")
    kw.update(kw.pop("options", {}))  # simulate takes the algorithm's options as keywords
    res = simulate(inst.problem, spec.algorithm, part, rounds=rounds, seeds=S, seed=seed,
                   metrics=("error",), **kw)  # fmt: skip
    d0 = float(inst.problem.x_star @ inst.problem.x_star)
    e2 = np.asarray(res.error, dtype=np.float64) ** 2 * d0  # (S, R + 1)
    mean = e2.mean(axis=0)
    hit = np.flatnonzero(mean <= spec.epsilon * mean[0])
    out: dict[str, Any] = {
        "seeds": S, "rounds": rounds,
        "rounds_to_epsilon": int(hit[0]) if hit.size else None,
        "method": f"simulate: {S} seed(s), {rounds} rounds, x_0 = 0",
    }  # fmt: skip
    q = spec.quantity
    eff: Effect | None = None
    try:
        if q == "mean_square_rate":

            def stat(x: np.ndarray) -> float:
                return fit_linear_rate(x.mean(axis=0), min_error=1e-28 * d0).rho

            unit = "per-round factor of the seed mean of ||x_r - x*||^2"
            eff = (jackknife_interval(stat, e2, 0.95, unit) if S > 1
                   else Effect.exact(stat(e2), unit))  # fmt: skip
        elif q == "stationary_mse":
            tail = np.nanmean(e2[:, e2.shape[1] // 2 :], axis=1)
            unit = "time average of ||x_r - x*||^2 over the second half"
            eff = mean_interval(tail, 0.95, unit) if S > 1 else Effect.exact(tail[0], unit)
        elif q == "rounds_to":
            out["value"] = out["rounds_to_epsilon"]
    except AssumptionError as exc:
        out["note"] = str(exc)
    if eff is not None:
        out.update(value=eff.estimate, ci=[eff.ci_low, eff.ci_high], confidence=0.95)
    if q == "mean_rate":
        out["note"] = "not measured: the simulator records each seed's error, not E x_r"
    return out


def _rounds(factor: float, epsilon: float) -> float:
    """Rounds for a per-round factor to reach epsilon: log(epsilon) / log(factor)."""
    if not factor < 1:
        return math.inf
    if factor <= 0:
        return 1.0
    return math.log(epsilon) / math.log(factor)


# -- the search ----------------------------------------------------------------------------------
def _draw(spec: BoundSpec, seed: int, i: int) -> Draw:
    rng = np.random.default_rng([seed, i])
    return draw_instance(spec, rng, f"draw {i}")


def _evaluate_draws(spec: BoundSpec, seed: int, ids: list[int]) -> list[Evaluation]:
    """Evaluate class draws ``ids`` (a worker's share; draws depend only on (seed, i))."""
    out = []
    for i in ids:  # instances are independent; each is one oracle call
        d = _draw(spec, seed, i)
        ev = _safe_evaluate(spec, d)
        out.append(ev)
    return out


def _safe_evaluate(spec: BoundSpec, draw: Draw) -> Evaluation:
    """:func:`evaluate` on a class draw; a numerical failure of the oracle on this draw is
    recorded as "not evaluated", while an invalid setting (:class:`SettingError`) and work
    refused by its size (:class:`SizeError`) are the spec's and stop the check."""
    inst = draw.instance(spec)
    try:
        ev = evaluate(spec, inst, verify=False)
    except (SettingError, SizeError):
        raise
    except FedTheoryError as exc:  # e.g. ARPACK did not converge on a degenerate draw
        ev = Evaluation(math.nan, math.nan, False, math.nan, math.nan, None, -math.inf,
                        inst.sizes(), f"{inst.label} (not evaluated: {exc})", {},
                        defined=False, instance=inst)  # fmt: skip
    ev.instance = None  # rebuilt from the draw when needed (keeps worker results small)
    ev.draw = draw
    return ev


def _random_search(spec: BoundSpec, n: int, seed: int, workers: int) -> list[Evaluation]:
    ids = list(range(n))
    if workers <= 1 or n < 8:
        return _evaluate_draws(spec, seed, ids)
    chunks = [ids[k::workers] for k in range(workers)]
    parts = fork_all(partial(_evaluate_draws, spec, seed), chunks, workers=workers)
    out: list[Evaluation | None] = [None] * n
    for chunk, evs in zip(chunks, parts, strict=True):
        for i, ev in zip(chunk, evs, strict=True):
            out[i] = ev
    return out  # type: ignore[return-value]


def _refine(spec: BoundSpec, start: Evaluation, budget: int, rng: np.random.Generator,
            k: int) -> list[Evaluation]:  # fmt: skip
    """Nelder-Mead on -objective in random subspaces around ``start`` (``budget`` evaluations)."""
    base = start.draw
    seen: list[Evaluation] = []
    x0 = base.theta.copy()
    best = start.objective
    scale = np.maximum(np.abs(x0), 0.5) * 0.3
    while budget > 0:
        dim = min(_SUBSPACE, x0.size)
        B = rng.standard_normal((x0.size, dim)) * scale[:, None]

        def f(t: np.ndarray, B=B, x0=x0) -> float:
            d = replace(base, theta=x0 + B @ t, label=f"refined from {base.label} ({k})")
            ev = _safe_evaluate(spec, d)
            seen.append(ev)
            return -ev.objective if np.isfinite(ev.objective) else (
                -1e300 if ev.objective > 0 else 1e300)  # fmt: skip

        n_eval = min(budget, 6 * (dim + 1))
        before = len(seen)
        minimize(f, np.zeros(dim), method="Nelder-Mead",
                 options={"maxfev": n_eval, "initial_simplex": np.vstack(
                     [np.zeros(dim), np.eye(dim)])})  # fmt: skip
        budget -= len(seen) - before
        top = max(seen, key=lambda e: e.objective)
        if top.objective > best:
            best, x0 = top.objective, top.draw.theta.copy()
    return seen


# -- the result ----------------------------------------------------------------------------------
@dataclass
class BoundCheck:
    """The outcome of :func:`check`; ``to_dict()`` is the JSON of ``fedtheory bound``.

    Attributes
    ----------
    spec : BoundSpec
    violated : bool
        Some instance that meets the condition has exact > stated (1 + tolerance); with a free
        constant and no value for it: no constant makes the shape hold on every instance.
    worst : Evaluation or None
        The instance with the largest objective among those that meet the condition.
    instances : list of Evaluation
        Every instance evaluated, the named one first.
    implied : dict or None
        With a free constant: ``value``, ``direction`` ("smallest c that bounds every
        instance" or "largest ..."), ``argmax`` (its instance) and ``problem_file``.
    named : dict or None
        The one-instance report (stated, exact, measured with its CI, rounds to epsilon).
    search : dict
        Draws, refinement evaluations, seed, workers.
    files : dict
        Problem files written (worst counterexample, implied constant's argmax).
    seconds : float
    """

    spec: BoundSpec
    violated: bool
    worst: Evaluation | None
    instances: list[Evaluation]
    implied: dict | None
    named: dict | None
    search: dict
    files: dict
    seconds: float

    def to_dict(self) -> dict:
        spec = self.spec
        worst = None
        if self.worst is not None:
            worst = {**self.worst.to_dict(full=True), **self.files.get("worst", {
                "problem_file": None})}  # fmt: skip
            if "command" in self.files.get("worst", {}):
                worst["command"] = self.files["worst"]["command"]
        out = {
            "violated": self.violated,
            "worst": worst,
            "instances": [e.to_dict() for e in self.instances],
            "spec": spec.to_dict(),
            "spec_file": spec.path,
            "quantity": spec.quantity,
            "quantity_meaning": _quantity_meaning(spec),
            "tolerance": spec.tolerance,
            "ratio_meaning": "log(stated)/log(exact) for a per-round factor < 1 (the rounds the "
            "exact rate needs over the rounds the bound promises), else exact/stated; > 1: "
            "exact above stated",
            "condition_met": sum(e.condition_met for e in self.instances),
            "search": self.search,
            "seconds": self.seconds,
            "sentence": self.sentence(),
        }
        if self.implied is not None:
            imp = {k: v for k, v in self.implied.items() if k != "argmax"}
            imp["argmax"] = self.implied["argmax"].to_dict(full=True) if self.implied.get(
                "argmax") is not None else None  # fmt: skip
            imp["problem_file"] = self.files.get("implied", {}).get("problem_file")
            out["implied_constant"] = imp
        if self.named is not None:
            out["instance"] = self.named
        return out

    def sentence(self) -> str:
        """One sentence: what the check found."""
        spec = self.spec
        n = len(self.instances)
        met = sum(e.condition_met for e in self.instances)
        if self.implied is not None and spec.constant_value is None:
            v = self.implied["value"]
            if self.violated or v is None or not math.isfinite(v):
                return (f"No constant {spec.constant} makes {spec.bound} hold on the {met} of "
                        f"{n} instances that meet the condition.")  # fmt: skip
            return (f"The {self.implied['direction']} {spec.constant} = {v:.6g} on the {met} of "
                    f"{n} instances that meet the condition (a paper's constant above/below it "
                    "is contradicted by the saved instance).")  # fmt: skip
        w = self.worst
        if w is None:
            return f"No instance of the {n} evaluated meets the condition: nothing to check."
        if self.violated:
            where = self.files.get("worst", {}).get("problem_file")
            return (f"Violated: exact {w.exact:.6g} > stated {w.stated:.6g} (ratio {w.ratio:.6g})"
                    f" on {w.label}" + (f", saved as {where}." if where else "."))  # fmt: skip
        return (f"Holds on all {met} of {n} instances that meet the condition; worst ratio "
                f"{w.ratio:.6g} (exact {w.exact:.6g}, stated {w.stated:.6g}).")  # fmt: skip

    def table(self) -> str:
        """A short table: the named instance, the worst, the implied constant."""
        rows = [f"{'':22s} {'stated':>14s} {'exact':>14s} {'ratio':>10s} {'eta':>11s} cond"]

        def row(name: str, e: Evaluation) -> str:
            return (f"{name:22s} {e.stated:14.8g} {e.exact:14.8g} {e.ratio:10.6g} "
                    f"{e.eta:11.4g} {'yes' if e.condition_met else 'no'}")  # fmt: skip

        if self.named is not None:
            rows.append(row(f"instance {self.instances[0].label}"[:22], self.instances[0]))
        if self.worst is not None:
            rows.append(row("worst", self.worst))
        if self.implied is not None and self.implied.get("value") is not None:
            rows.append(f"implied constant       {self.spec.constant} = "
                        f"{self.implied['value']:.8g} ({self.implied['direction']})")  # fmt: skip
        if self.named is not None and self.named.get("measured"):
            m = self.named["measured"]
            if m.get("value") is not None:
                ci = m.get("ci")
                rows.append(f"measured (simulate)    {m['value']:.8g}" + (
                    f" [{ci[0]:.6g}, {ci[1]:.6g}] 95%" if ci else ""))  # fmt: skip
        return "\n".join(rows)

    def __repr__(self) -> str:
        return (f"BoundCheck(violated={self.violated}, instances={len(self.instances)}, "
                f"worst_ratio={None if self.worst is None else self.worst.ratio})")  # fmt: skip


def _quantity_meaning(spec: BoundSpec) -> str:
    return QUANTITIES[spec.quantity]


# -- the entry point -------------------------------------------------------------------------
def check(
    spec: BoundSpec | str | dict,
    *,
    search: int | None = None,
    seed: int = 0,
    problem: str | None = None,
    problem_file: str | None = None,
    measure_seeds: int | None = None,
    out_dir: str | Path | None = None,
    name: str | None = None,
    workers: int | None = None,
    refine: bool = True,
    functions: str | None = None,
) -> BoundCheck:
    """Check a stated bound on one instance and/or over an instance class of quadratic
    clients (:func:`fedtheory.bounds.check_classes` checks the smooth strongly convex class).

    Parameters
    ----------
    spec : BoundSpec, path of a TOML file, or a dict of its keys
    search : int, optional
        Random class draws (default :data:`DEFAULT_SEARCH` when the spec has a ``[class]``;
        0: no search). The worst three are then refined with ``search // 4`` evaluations.
    seed : int
        Seed of the search (instance i depends only on (seed, i)) and of the simulation.
    problem, problem_file : str, optional
        One instance to check (overrides the spec's ``problem``/``problem_file``).
    measure_seeds : int, optional
        Seeds of the simulation on the named instance (default the spec's ``seeds``; 0: no
        simulation).
    out_dir : path, optional
        Where to write the counterexample and the implied constant's argmax (``.npz`` problem
        files with ``.p.npy`` probabilities); None writes nothing.
    name : str, optional
        Stem of the files written (default the spec file's stem, else "bound").
    workers : int, optional
        Processes of the random search (default: the cores this process may use, at most 2
        per 100 draws).
    refine : bool
        Refine the worst draws by Nelder-Mead (default True).
    functions : {"quadratic"}, optional
        The class (default the spec's ``[class] functions``): this search is the quadratic one.

    Returns
    -------
    BoundCheck

    Raises
    ------
    FedTheoryError
        A bad spec (unknown key or symbol, a constant the setting does not define such as
        ``rho`` without a topology), neither an instance nor a class, sizes out of range.
    TypeError
        Unknown keyword arguments.

    Examples
    --------
    >>> res = check({"algorithm": "fedavg", "clients": 4, "lr": "1/L_f",
    ...              "quantity": "mean_square_rate", "bound": "(1 - eta*mu_f)**2",
    ...              "condition": "eta <= 1/L_f",
    ...              "class": {"dim": 3, "L": 10.0, "mu": 1.0}}, search=20)
    >>> res.violated, round(res.worst.ratio, 9)
    (False, 1.0)
    """
    t0 = time.perf_counter()
    if isinstance(spec, dict):
        spec = BoundSpec.from_dict(spec)
    elif not isinstance(spec, BoundSpec):
        spec = load_spec(spec)
    if (functions or spec.functions) != "quadratic":
        raise AssumptionError(
            f"check searches quadratic clients; the class {functions or spec.functions!r} is "
            "checked by fedtheory.bounds.check_classes (fedtheory bound --class)"
        )
    seed = check_seed(seed)
    has_named = problem is not None or problem_file is not None or (
        spec.problem is not None or spec.problem_file is not None)  # fmt: skip
    if search is None:
        search = DEFAULT_SEARCH if spec.instance_class is not None else 0
    search = check_int("the search budget", search, minimum=0)
    if search and spec.instance_class is None:
        raise AssumptionError("a search needs a [class] table in the spec")
    if not has_named and not search:
        raise AssumptionError(
            "nothing to check: give an instance (problem, problem_file) or a [class] to search"
        )
    _check_symbols(spec)
    _check_cost(spec, int(has_named) + search + (search // 4 if refine else 0))
    if spec.p is not None and spec.instance_class is not None and search:
        if any(n != len(spec.p) for n in spec.clients):
            raise AssumptionError(f"p has {len(spec.p)} entries but clients is "
                                  f"{list(spec.clients)}")  # fmt: skip
    evals: list[Evaluation] = []
    measured = None
    if has_named:
        inst = named_instance(spec, problem=problem, problem_file=problem_file)
        ev = evaluate(spec, inst)
        evals.append(ev)
        measured = _measured(spec, ev, measure_seeds, seed)
    info: dict[str, Any] = {"draws": 0, "refined": 0, "seed": seed}
    if search:
        if workers is None:
            workers = max(1, min(available_cores(), 2, search // 50))
        workers = worker_count(workers, search)
        draws = _random_search(spec, search, seed, workers)
        info.update(draws=len(draws), workers=workers)
        evals.extend(draws)
        if refine:
            rng = np.random.default_rng([seed, 1 << 30])
            ok = sorted((e for e in draws if math.isfinite(e.objective) or e.objective > 0),
                        key=lambda e: -e.objective)[:_REFINE_STARTS]  # fmt: skip
            budget = search // 4
            for k, start in enumerate(ok):  # a few local refinements, sequential
                share = budget // (len(ok) - k)
                seen = _refine(spec, start, share, rng, k)
                budget -= len(seen)
                info["refined"] += len(seen)
                evals.extend(seen)
    return _finish(spec, evals, measured if has_named else False, info, out_dir, name, t0)


def _check_symbols(spec: BoundSpec) -> None:
    used = {n for e in (spec.bound_expr, *spec.condition_exprs, spec.lr_expr) for n in e.names}
    if "rho" in used and spec.topology is None:
        raise AssumptionError("the bound uses rho, which needs a graph: add topology = "
                              "\"ring\" (or another family) to the spec")  # fmt: skip


#: Seconds per local step and instance the exact oracle takes at the least: measured 29 us per
#: step with FOCUS, the cheapest (4 clients, dimension 3, K = 30000, ``time.process_time`` on
#: the 2-core machine); FedAvg-type algorithms, whose response to gradient noise grows with K^2,
#: take longer.
ORACLE_STEP_SECONDS = 2e-5


def _check_cost(spec: BoundSpec, instances: int) -> None:
    """Refuse a check whose least duration exceeds the time limit
    (:func:`~fedtheory.validation.check_duration`), and announce a long one: ``instances``
    oracle calls with the largest K local steps, :data:`ORACLE_STEP_SECONDS` per step (and, for a
    quantity after R rounds, R rounds of the exact transient,
    :data:`~fedtheory.analysis.exact.oracle.ROUND_SECONDS` each); and one
    whose largest class instance does not fit in memory (the oracle checks its own arrays)."""
    K = max(spec.local_steps)
    if spec.instance_class is not None:
        # the oracle runs the round on a batch of at least N d basis states (the server model
        # has d coordinates) of N clients of dimension d: 4 such float64 arrays at the least,
        # more than a draw's rotations and matrices (N d^2)
        N, d = max(spec.clients), max(spec.instance_class.dim)
        check_memory(
            f"the exact oracle on a class instance of {N} clients of dimension {d}",
            4.0 * 8 * N * N * d * d,
            hint="fewer clients or a smaller dimension",
        )
    seconds, what = instances * K * ORACLE_STEP_SECONDS, f"up to K = {K} local steps"
    if spec.quantity in AFTER_ROUNDS:  # and the transient's R rounds, one after the other
        seconds += instances * spec.rounds * ROUND_SECONDS
        what += f" and R = {spec.rounds} rounds"
    check_duration(
        f"the check of {instances} instance(s) with {what}",
        seconds,
        hint="fewer local steps K or rounds, or a smaller --search",
    )


def _measured(spec: BoundSpec, ev: Evaluation, measure_seeds: int | None,
              seed: int) -> dict | None:  # fmt: skip
    """The simulation on the named instance (None when switched off or undefined)."""
    S = spec.seeds if measure_seeds is None else measure_seeds
    if not (S and ev.defined and math.isfinite(ev.eta)):
        return None
    rounds = None
    if spec.quantity == "rounds_to" and math.isfinite(ev.exact):
        rounds = int(min(MAX_ROUNDS, 2 * ev.exact + 20))
    rate = ev.exact if spec.quantity == "mean_square_rate" else None
    return measure(spec, ev.instance, ev.eta, seeds=S, seed=seed, rounds=rounds,
                   exact_rate=rate)  # fmt: skip


def _named_report(spec: BoundSpec, ev: Evaluation, measured: dict | None) -> dict:
    """Stated, exact, measured and the rounds to epsilon under each, on the named instance."""
    eps = spec.epsilon
    rep: dict[str, Any] = {"label": ev.label, **ev.to_dict(full=True)}
    rounds: dict[str, Any] = {"epsilon": eps}
    if spec.is_rate:
        rounds.update(stated=_rounds(ev.stated, eps), exact=_rounds(ev.exact, eps))
    if measured is not None:
        rep["measured"] = measured
        rounds["measured"] = measured["rounds_to_epsilon"]
    rep["rounds_to_epsilon"] = rounds
    return rep


def verdict(spec: BoundSpec, evals: list[Evaluation],
            tol: float) -> tuple[list, dict | None, Evaluation | None, bool]:  # fmt: skip
    """``(pool, implied, worst, violated)`` of evaluated instances: those that meet the
    condition, the implied constant (the shape then evaluated at it), the worst one (of the
    violating ones when violated) and the verdict at relative tolerance ``tol``."""
    implied = None
    pool = [e for e in evals if e.condition_met and e.defined]
    if spec.constant is not None:
        implied = _implied(spec, pool)
        if spec.constant_value is None and implied["value"] is not None:
            c = implied["value"]
            for e in evals:  # the shape at the implied constant: ratio 1 at the argmax
                if e.defined and e.constants:
                    e.stated = spec.stated_value(e.constants, c)
                    e.ratio = ratio(e.stated, e.exact, spec.is_rate)
    worst = max(pool, key=lambda e: e.objective, default=None)
    if spec.constant is not None and spec.constant_value is None:
        violated = implied["value"] is None or not math.isfinite(implied["value"])
    else:
        violated = any(violates(e, tol) for e in pool)
        if violated:
            worst = max((e for e in pool if violates(e, tol)), key=lambda e: e.objective)
    return pool, implied, worst, bool(violated)


def _finish(spec, evals, measured, info, out_dir, name, t0) -> BoundCheck:
    pool, implied, worst, violated = verdict(spec, evals, spec.tolerance)
    if not pool:
        _nothing_evaluated(spec, evals)
    files: dict[str, dict] = {}
    if out_dir is not None:
        stem = name or (Path(spec.path).stem if spec.path else "bound")
        out = Path(out_dir)
        if violated and worst is not None:
            files["worst"] = _save(spec, worst, out / f"{stem}-counterexample.npz")
        if implied is not None and implied.get("argmax") is not None:
            files["implied"] = _save(spec, implied["argmax"], out / f"{stem}-implied.npz")
    info["condition_met"] = len(pool)
    named = None if measured is False else _named_report(spec, evals[0], measured)
    return BoundCheck(spec, bool(violated), worst, evals, implied, named, info, files,
                      time.perf_counter() - t0)  # fmt: skip


def _nothing_evaluated(spec: BoundSpec, evals: list[Evaluation]) -> None:
    """No instance meets the condition with a defined bound: refuse when that is the spec's
    doing (the bound is not finite, or no instance could be evaluated at all), so that a
    mistake is never reported as "nothing to check"."""
    met = [e for e in evals if e.condition_met]
    if met:
        e = met[0]
        raise AssumptionError(
            f"the bound {spec.bound!r} is not finite at {e.label} (it evaluates to {e.stated} in "
            f"float64 there, with eta = {e.eta:.6g}) nor on any of the {len(met)} instance(s) "
            "that meet the condition: nothing to compare the exact value with"
        )
    failed = [e for e in evals if not e.constants]
    if evals and len(failed) == len(evals):
        raise AssumptionError(
            f"no instance could be evaluated (the first: {failed[0].label}): check the spec's "
            "setting"
        )


def _instance_of(e: Evaluation, spec: BoundSpec) -> Instance:
    return e.instance if e.instance is not None else e.draw.instance(spec)


def _save(spec: BoundSpec, e: Evaluation, path: Path) -> dict:
    inst = _instance_of(e, spec)
    if inst.problem_path is not None:  # the user's own file: point at it, no copy
        files = {"problem_file": inst.problem_path, "probabilities_file": None}
        if inst.p is not None:
            files = inst.write(path)  # the probabilities are the spec's: write them beside
        files["command"] = inst.rate_command(spec, e.eta, files)
        return files
    if inst.A is None:
        return {"problem_file": None, "note": f"{inst.label} is not least squares: not written"}
    files = inst.write(path)
    files["command"] = inst.rate_command(spec, e.eta, files)
    return files


def _implied(spec: BoundSpec, pool: list[Evaluation]) -> dict:
    dirs = {e.direction for e in pool} - {0}
    direction = dirs.pop() if len(dirs) == 1 else (1 if not dirs else 0)
    what = {1: "smallest constant that bounds every instance",
            -1: "largest constant that bounds every instance",
            0: "constant"}[direction]  # fmt: skip
    if not pool:
        return {"value": None, "direction": what, "argmax": None, "instances": 0}
    if direction == 0 and len({e.direction for e in pool} - {0}) > 1:
        return {"value": None, "direction": "the shape is not monotone in the constant",
                "argmax": None, "instances": len(pool)}  # fmt: skip
    cs = np.array([e.c if e.c is not None else math.nan for e in pool], dtype=float)
    if np.isnan(cs).any():  # an instance no non-negative constant bounds
        bad = pool[int(np.flatnonzero(np.isnan(cs))[0])]
        return {"value": None, "direction": what, "argmax": bad, "instances": len(pool),
                "note": f"no constant >= 0 bounds {bad.label}"}  # fmt: skip
    k = int(np.argmax(cs)) if direction >= 0 else int(np.argmin(cs))
    value = float(cs[k])
    return {"value": value if math.isfinite(value) else None, "direction": what,
            "argmax": pool[k], "instances": len(pool),
            "paper_value": spec.constant_value}  # fmt: skip


def implied_over(spec: BoundSpec | dict, evaluations: list[Evaluation]) -> dict:
    """The implied constant of another shape over instances already evaluated (their constants
    and exact values; the quantity must be the same): ``value``, ``direction``, ``argmax``,
    ``instances`` as :attr:`BoundCheck.implied`."""
    if isinstance(spec, dict):
        spec = BoundSpec.from_dict(spec)
    if spec.constant is None:
        raise AssumptionError("implied_over needs a shape with a free constant")
    pool = []
    for e in evaluations:
        if not (e.constants and math.isfinite(e.eta) and spec.condition_met(e.constants)):
            continue
        c_i, direction = _solve_constant(spec, e.constants, e.exact)
        pool.append(replace(e, c=c_i, direction=direction))
    return _implied(spec, pool)
