"""Check a stated bound: on one instance, and by a worst-case search over an instance class.

Each instance is evaluated by :func:`~fedtheory.bounds.evaluate.evaluate` (stated, exact,
condition, ratio; the module docstring there says how). With a free constant c, the **implied
constant** is the smallest c that bounds every instance found (sup of c_i when the shape grows
with c) or the largest (inf of c_i when it shrinks with c, as in 1 - c eta mu). The search over
the class is :mod:`fedtheory.bounds.search`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from fedtheory.analysis.exact.oracle import ROUND_SECONDS
from fedtheory.analysis.rates import fit_linear_rate, fit_power_law
from fedtheory.analysis.stats import Effect, jackknife_interval, mean_interval
from fedtheory.bounds.evaluate import (
    MAX_ROUNDS,
    SCREEN_TOL,
    Evaluation,
    evaluate,
    oracle_keywords,
    ratio,
    scored,
    solve_constant,
    violates,
)
from fedtheory.bounds.instances import Instance, named_instance
from fedtheory.bounds.search import DEFAULT_SEARCH, coverage, coverage_text, pattern_theta
from fedtheory.bounds.search import planned as planned_evaluations
from fedtheory.bounds.search import search as class_search
from fedtheory.bounds.spec import AFTER_ROUNDS, QUANTITIES, BoundSpec, load_spec
from fedtheory.errors import AssumptionError, FedTheoryError
from fedtheory.io import progress as progress_bar
from fedtheory.simulation import simulate
from fedtheory.validation import (
    available_cores,
    check_duration,
    check_int,
    check_memory,
    check_seed,
    worker_count,
)

__all__ = [
    "DEFAULT_SEARCH",
    "BoundCheck",
    "Evaluation",
    "check",
    "implied_over",
    "measure",
    "scored",
    "verdict",
]


def measure(
    spec: BoundSpec,
    inst: Instance,
    eta: float,
    *,
    seeds: int | None = None,
    seed: int = 0,
    rounds: int | None = None,
    exact_rate: float | None = None,
) -> dict:
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
        rounds = int(
            min(5000, max(50, math.ceil(1.5 * math.log(min(spec.epsilon, 1e-8)) / math.log(rho))))
        )
    kw = oracle_keywords(spec, inst, eta)
    kw["aggregation"] = kw.pop("rule")
    kw.update(kw.pop("options", {}))  # simulate takes the algorithm's options as keywords
    res = simulate(
        inst.problem,
        spec.algorithm,
        part,
        rounds=rounds,
        seeds=S,
        seed=seed,
        metrics=("error",),
        **kw,
    )
    d0 = float(inst.problem.x_star @ inst.problem.x_star)
    e2 = np.asarray(res.error, dtype=np.float64) ** 2 * d0  # (S, R + 1)
    mean = e2.mean(axis=0)
    hit = np.flatnonzero(mean <= spec.epsilon * mean[0])
    out: dict[str, Any] = {
        "seeds": S,
        "rounds": rounds,
        "rounds_to_epsilon": int(hit[0]) if hit.size else None,
        "method": f"simulate: {S} seed(s), {rounds} rounds, x_0 = 0",
    }
    q = spec.quantity
    eff: Effect | None = None
    try:
        if q == "mean_square_rate":

            def stat(x: np.ndarray) -> float:
                return fit_linear_rate(x.mean(axis=0), min_error=1e-28 * d0).rho

            unit = "per-round factor of the seed mean of ||x_r - x*||^2"
            eff = (
                jackknife_interval(stat, e2, 0.95, unit) if S > 1 else Effect.exact(stat(e2), unit)
            )
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


# -- the result ----------------------------------------------------------------------------------
@dataclass
class BoundCheck:
    """The outcome of :func:`check`; ``to_dict()`` is the JSON of ``fedtheory bound``.

    Attributes
    ----------
    spec : BoundSpec
    violated : bool
        Some instance that meets the condition has exact > stated + tolerance |stated| + floor
        (:func:`~fedtheory.bounds.evaluate.violates`); with a free
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
    coverage : dict
        Per constant, the range the instances that meet the condition reached (and the class's
        range where known): :func:`fedtheory.bounds.search.coverage`.
    notes : list of str
        What a flag or the named problem changed in the spec's setting, one line each.
    shape : dict
        With a free constant: how c_i varies with K, N, M, eta (:func:`shape_fit`).
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
    coverage: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    shape: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        spec = self.spec
        worst = None
        if self.worst is not None:
            worst = {
                **self.worst.to_dict(full=True),
                **self.files.get("worst", {"problem_file": None}),
            }
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
            "coverage": self.coverage,
            "shape_fit": self.shape,
            "notes": self.notes,
            "seconds": self.seconds,
            "sentence": self.sentence(),
        }
        if self.implied is not None:
            imp = {k: v for k, v in self.implied.items() if k != "argmax"}
            imp["argmax"] = (
                self.implied["argmax"].to_dict(full=True)
                if self.implied.get("argmax") is not None
                else None
            )
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
                return (
                    f"No constant {spec.constant} makes {spec.bound} hold on the {met} of "
                    f"{n} instances that meet the condition."
                )
            reach = f" The search reached {coverage_text(self.coverage)}." if self.coverage else ""
            misses = "".join(
                f" {f['text'][0].upper()}{f['text'][1:]}."
                for f in self.shape.values()
                if f["verdict"] == "does not describe"
            )
            return (
                f"The {self.implied['direction']} {spec.constant} = {v:.6g} on the {met} of "
                f"{n} instances that meet the condition (a paper's constant above/below it "
                f"is contradicted by the saved instance).{misses}{reach}"
            )
        w = self.worst
        if w is None:
            return f"No instance of the {n} evaluated meets the condition: nothing to check."
        if self.violated:
            where = self.files.get("worst", {}).get("problem_file")
            return (
                f"Violated: exact {w.exact:.6g} > stated {w.stated:.6g} (ratio {w.ratio:.6g})"
                f" on {w.label}" + (f", saved as {where}." if where else ".")
            )
        reach = f" The search reached {coverage_text(self.coverage)}." if self.coverage else ""
        return (
            f"Holds on all {met} of {n} instances that meet the condition; worst ratio "
            f"{w.ratio:.6g} (exact {w.exact:.6g}, stated {w.stated:.6g}).{reach}"
        )

    def table(self) -> str:
        """A short table: the named instance, the worst, the implied constant."""
        rows = [f"{'':22s} {'stated':>14s} {'exact':>14s} {'ratio':>10s} {'eta':>11s} cond"]

        def row(name: str, e: Evaluation) -> str:
            return (
                f"{name:22s} {e.stated:14.8g} {e.exact:14.8g} {e.ratio:10.6g} "
                f"{e.eta:11.4g} {'yes' if e.condition_met else 'no'}"
            )

        if self.named is not None:
            rows.append(row(f"instance {self.instances[0].label}"[:22], self.instances[0]))
        if self.worst is not None:
            rows.append(row("worst", self.worst))
            w = self.worst
            sizes = ", ".join(f"{k} = {v}" for k, v in w.sizes.items() if v is not None)
            rows.append(f"worst instance         {w.label}: {sizes}, eta = {w.eta:.6g}")
            command = self.files.get("worst", {}).get("command")
            if command:
                rows.append(f"reproduce              {command}")
        if self.implied is not None and self.implied.get("value") is not None:
            rows.append(
                f"implied constant       {self.spec.constant} = "
                f"{self.implied['value']:.8g} ({self.implied['direction']})"
            )
        for name, fit in self.shape.items():
            rows.append(f"shape in {name:<13s} {fit['text']}")

        if self.named is not None and self.named.get("measured"):
            m = self.named["measured"]
            if m.get("value") is not None:
                ci = m.get("ci")
                rows.append(
                    f"measured (simulate)    {m['value']:.8g}"
                    + (f" [{ci[0]:.6g}, {ci[1]:.6g}] 95%" if ci else "")
                )
        return "\n".join(rows)

    def __repr__(self) -> str:
        return (
            f"BoundCheck(violated={self.violated}, instances={len(self.instances)}, "
            f"worst_ratio={None if self.worst is None else self.worst.ratio})"
        )


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
    progress: bool = False,
) -> BoundCheck:
    """Check a stated bound on one instance and/or over an instance class of quadratic
    clients (:func:`fedtheory.bounds.check_classes` checks the smooth strongly convex class).

    Parameters
    ----------
    spec : BoundSpec, path of a TOML file, or a dict of its keys
    search : int, optional
        Random class draws (default :data:`DEFAULT_SEARCH` when the spec has a ``[class]``;
        0: no search), then the structured extremes and the ascent from the best instances
        with ``search // 4`` evaluations (:func:`fedtheory.bounds.search.search`).
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
        Climb from the best extremes and draws (:func:`fedtheory.bounds.search.climb`;
        default True).
    functions : {"quadratic"}, optional
        The class (default the spec's ``[class] functions``): this search is the quadratic one.
    progress : bool
        Report the search on stderr (:func:`fedtheory.io.progress`: a bar on a terminal, a line
        at most every 10 s in a log): evaluations done of those planned, the phase, the binding
        constant (or worst ratio) so far and the time left. The numbers do not depend on it.

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
    has_named = (
        problem is not None
        or problem_file is not None
        or (spec.problem is not None or spec.problem_file is not None)
    )
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
            raise AssumptionError(
                f"p has {len(spec.p)} entries but clients is {list(spec.clients)}"
            )
    evals: list[Evaluation] = []
    measured = None
    notes: tuple[str, ...] = ()
    if has_named:
        inst = named_instance(spec, problem=problem, problem_file=problem_file)
        notes = inst.notes
        ev = evaluate(spec, inst)
        evals.append(ev)
        measured = _measured(spec, ev, measure_seeds, seed)
    info: dict[str, Any] = {"draws": 0, "refined": 0, "seed": seed}
    if search:
        if workers is None:
            workers = max(1, min(available_cores(), 2, search // 50))
        workers = worker_count(workers, search)
        bar = progress_bar(
            total=planned_evaluations(spec, search, ascend=refine),
            desc="bound search",
            unit="evaluation",
            disable=not progress,
        )
        with bar:
            found, spent = class_search(
                spec, search, seed, workers, ascend=refine, report=bar if progress else None
            )
        info.update(spent, workers=workers)
        evals.extend(found)
    return _finish(spec, evals, measured if has_named else False, info, out_dir, name, t0, notes)


def _check_symbols(spec: BoundSpec) -> None:
    used = {n for e in (spec.bound_expr, *spec.condition_exprs, spec.lr_expr) for n in e.names}
    if "rho" in used and spec.topology is None:
        raise AssumptionError(
            "the bound uses rho, which needs a graph: add topology = "
            '"ring" (or another family) to the spec'
        )


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
    if spec.instance_class is not None and spec.instance_class.dim:
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


def _measured(spec: BoundSpec, ev: Evaluation, measure_seeds: int | None, seed: int) -> dict | None:
    """The simulation on the named instance (None when switched off or undefined)."""
    S = spec.seeds if measure_seeds is None else measure_seeds
    if not (S and ev.defined and math.isfinite(ev.eta)):
        return None
    rounds = None
    if spec.quantity == "rounds_to" and math.isfinite(ev.exact):
        rounds = int(min(MAX_ROUNDS, 2 * ev.exact + 20))
    rate = ev.exact if spec.quantity == "mean_square_rate" else None
    return measure(spec, ev.instance, ev.eta, seeds=S, seed=seed, rounds=rounds, exact_rate=rate)


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


def verdict(
    spec: BoundSpec, evals: list[Evaluation], tol: float
) -> tuple[list, dict | None, Evaluation | None, bool]:
    """``(pool, implied, worst, violated)`` of evaluated instances: those that meet the
    condition, the implied constant (the shape then evaluated at it), the worst one (of the
    violating ones when violated) and the verdict at relative tolerance ``tol`` (with each
    instance's floor, :func:`~fedtheory.bounds.evaluate.violates`)."""
    implied = None
    pool = [e for e in evals if e.condition_met and e.defined]
    if spec.constant is not None:
        implied = _implied(spec, pool)
        if spec.constant_value is None and implied["value"] is not None:
            c = implied["value"]
            for e in evals:  # the shape at the implied constant: ratio 1 at the argmax
                if e.defined and e.constants:
                    e.stated = spec.stated_value(e.constants, c)
                    e.ratio = ratio(e.stated, e.exact, spec.is_rate, floor=e.floor)
    worst = max(pool, key=lambda e: e.objective, default=None)
    if spec.constant is not None and spec.constant_value is None:
        violated = implied["value"] is None or not math.isfinite(implied["value"])
    else:
        violated = any(violates(e, tol) for e in pool)
        if violated:
            worst = max((e for e in pool if violates(e, tol)), key=lambda e: e.objective)
    return pool, implied, worst, bool(violated)


def _by_oracle(spec: BoundSpec, evals: list[Evaluation], chosen: list) -> bool:
    """Recompute the chosen instances' exact values with the oracle where the search had them
    from its gradient steps (the same eigenproblem, to the eigensolver's tolerance), so that the
    saved files reproduce through ``fedtheory rate`` to rounding; True when one changed."""
    changed = False
    done: list[Evaluation] = []
    for e in chosen:
        if e is None or e.by_oracle or e.draw is None or any(e is x for x in done):
            continue
        done.append(e)
        again = evaluate(spec, e.draw.instance(spec), verify=False)  # tolerance 1e-10
        again.instance, again.draw = None, e.draw
        evals[next(i for i, x in enumerate(evals) if x is e)] = again
        changed = True
    return changed


def _ambiguous(spec: BoundSpec, pool: list[Evaluation]) -> list[Evaluation]:
    """Instances whose screened exact value lies within 1e-7 of the violation threshold."""
    if spec.constant is not None and spec.constant_value is None:
        return []
    out = []
    for e in pool:
        if e.by_oracle or not math.isfinite(e.stated):
            continue
        threshold = e.stated + spec.tolerance * abs(e.stated) + e.floor
        if abs(e.exact - threshold) <= 1e-7 * abs(e.exact):
            out.append(e)
    return out


def _finish(spec, evals, measured, info, out_dir, name, t0, notes=()) -> BoundCheck:
    pool, implied, worst, violated = verdict(spec, evals, spec.tolerance)
    argmax = implied.get("argmax") if implied is not None else None
    if _by_oracle(spec, evals, [worst, argmax, *_ambiguous(spec, pool)]):
        pool, implied, worst, violated = verdict(spec, evals, spec.tolerance)
    if not pool:
        _nothing_evaluated(spec, evals)
    files: dict[str, dict] = {}
    if out_dir is not None:
        stem = name or (Path(spec.path).stem if spec.path else "bound")
        out = Path(out_dir)
        if worst is not None:
            kind = "counterexample" if violated else "worst"
            files["worst"] = _save(spec, worst, out / f"{stem}-{kind}.npz")
        if implied is not None and implied.get("argmax") is not None:
            files["implied"] = _save(spec, implied["argmax"], out / f"{stem}-implied.npz")
    info["condition_met"] = len(pool)
    named = None if measured is False else _named_report(spec, evals[0], measured)
    cov = coverage(spec, evals) if info.get("draws") else {}
    return BoundCheck(
        spec,
        bool(violated),
        worst,
        evals,
        implied,
        named,
        info,
        files,
        time.perf_counter() - t0,
        cov,
        list(notes),
        shape_fit(spec, evals),
    )


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
    if inst.problem_name is not None:  # a built-in problem: by its name, no copy
        files = {"problem_file": None, "problem": inst.problem_name, "probabilities_file": None}
        if spec.p is not None:  # the spec's probabilities, for --probabilities
            files["probabilities_file"] = inst.write_probabilities(path.with_suffix(".p.npy"))
        files["command"] = inst.rate_command(spec, e.eta, files)
        return files
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


#: The variables whose power in the implied constant :func:`shape_fit` measures.
SHAPE_VARIABLES = ("K", "N", "M", "eta")
#: An exponent whose 95% interval lies wholly outside [-SHAPE_EXPONENT, SHAPE_EXPONENT] says the
#: shape misses that dependence (a quarter power: over a 16-fold range of the variable the
#: constant moves by a factor 2 or more); wholly inside: the shape describes it.
SHAPE_EXPONENT = 0.25
#: Instances :func:`shape_fit` moves along each variable, and the factors of the spec's step.
SHAPE_BASES = 4
SHAPE_ETA_FACTORS = (0.25, 0.5, 1.0)


def _moved(spec: BoundSpec, e: Evaluation, name: str, value: float) -> Evaluation | None:
    """``e``'s instance with one variable set to ``value`` (None where that is not defined)."""
    d = e.draw
    scale = 1.0
    if name == "K":
        d = replace(d, K=int(value))
    elif name == "M":
        if d.M is None or value > d.N:
            return None
        d = replace(d, M=int(value))
    elif name == "N":
        if not d.label.startswith("extreme ") or (d.M is not None and d.M > value):
            return None  # a structured pattern is defined for any N; a draw is not
        d = replace(
            d,
            N=int(value),
            theta=pattern_theta(spec, int(value), d.d, tuple(d.label[8:].split("/"))),
        )
    else:
        scale = value
    try:
        return evaluate(spec, d.instance(spec), verify=False, tol=SCREEN_TOL, lr_scale=scale)
    except FedTheoryError:
        return None


def shape_fit(spec: BoundSpec, evals: list[Evaluation]) -> dict:
    """How the constant of the most binding instances varies with each of K, N, M and eta.

    With a free constant and no value for it, one c must bound every instance, so the shape is
    right about a variable x when c_i does not move with x where it binds. The
    :data:`SHAPE_BASES` most binding instances of the search (the largest objective: the
    implied constant's argmax first) are moved along each variable the spec lists with several
    values (K, M; N for the structured extremes, whose pattern is defined for any N) and along
    eta (the spec's step times :data:`SHAPE_ETA_FACTORS`), everything else fixed. Per variable
    the power law c_i ~ x^b is fitted per instance
    (:func:`fedtheory.analysis.rates.fit_power_law`) and the exponent is their mean with a Student-t 95% interval (one instance: its regression
    interval). ``verdict``: "does not describe" when the interval lies wholly outside
    [-0.25, 0.25] (fixed before measuring: :data:`SHAPE_EXPONENT`), "describes" when wholly
    inside, else "undecided". Where ``lr`` depends on K, moving K moves eta with it: that is
    the spec's step.
    """
    if spec.constant is None or spec.constant_value is not None or not evals:
        return {}
    pool = [
        e
        for e in evals
        if e.condition_met
        and e.defined
        and e.draw is not None
        and e.c is not None
        and math.isfinite(e.c)
        and e.c > 0
    ]
    bases: list[Evaluation] = []
    for e in sorted(pool, key=lambda e: -e.objective):  # the most binding instances first
        if all(abs(e.c - b.c) > 1e-6 * b.c for b in bases):  # not a copy of one already in
            bases.append(e)
        if len(bases) == SHAPE_BASES:
            break
    lists = {
        "K": spec.local_steps,
        "M": spec.clients_per_round or (),
        "N": spec.clients or (),
        "eta": SHAPE_ETA_FACTORS,
    }
    out: dict[str, Any] = {}
    for name in SHAPE_VARIABLES:
        values = sorted(set(lists[name]))
        if len(values) < 2:
            continue
        xs, cs = [], []
        for e in bases:  # a few instances, each moved along the variable
            moved = [_moved(spec, e, name, v) for v in values]
            if all(
                m is not None and m.c is not None and math.isfinite(m.c) and m.c > 0 for m in moved
            ):
                xs.append(
                    [m.eta if name == "eta" else v for m, v in zip(moved, values, strict=True)]
                )
                cs.append([m.c for m in moved])
        if not cs or (len(cs) == 1 and len(values) < 3):
            continue  # no interval: one instance at two values
        x = np.exp(np.mean(np.log(xs), axis=0))
        fit = fit_power_law(x, np.array(cs) if len(cs) > 1 else np.array(cs[0]))
        eff = Effect(fit.exponent, fit.ci_low, fit.ci_high, f"exponent of {name}", 0.95, len(cs))
        side = eff.within(-SHAPE_EXPONENT, SHAPE_EXPONENT)
        verdict = {-1: "does not describe", 1: "describes", 0: "undecided"}[side]
        text = f"the implied constant varies like {name}^{eff.text(2)}"
        if side == -1:
            text += f": this shape does not describe the dependence on {name}"
        out[name] = {
            "exponent": fit.exponent,
            "ci": [fit.ci_low, fit.ci_high],
            "values": [float(v) for v in x],
            "c": cs,
            "instances": len(cs),
            "labels": [e.label for e in bases],
            "verdict": verdict,
            "text": text,
        }
    return out


def _implied(spec: BoundSpec, pool: list[Evaluation]) -> dict:
    dirs = {e.direction for e in pool} - {0}
    direction = dirs.pop() if len(dirs) == 1 else (1 if not dirs else 0)
    what = {
        1: "smallest constant that bounds every instance",
        -1: "largest constant that bounds every instance",
        0: "constant",
    }[direction]
    if not pool:
        return {"value": None, "direction": what, "argmax": None, "instances": 0}
    if direction == 0 and len({e.direction for e in pool} - {0}) > 1:
        return {
            "value": None,
            "direction": "the shape is not monotone in the constant",
            "argmax": None,
            "instances": len(pool),
        }
    cs = np.array([e.c if e.c is not None else math.nan for e in pool], dtype=float)
    if np.isnan(cs).any():  # an instance no non-negative constant bounds
        bad = pool[int(np.flatnonzero(np.isnan(cs))[0])]
        return {
            "value": None,
            "direction": what,
            "argmax": bad,
            "instances": len(pool),
            "note": f"no constant >= 0 bounds {bad.label}",
        }
    k = int(np.argmax(cs)) if direction >= 0 else int(np.argmin(cs))
    value = float(cs[k])
    return {
        "value": value if math.isfinite(value) else None,
        "direction": what,
        "argmax": pool[k],
        "instances": len(pool),
        "paper_value": spec.constant_value,
    }


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
        c_i, direction = solve_constant(spec, e.constants, e.exact - e.floor)
        pool.append(replace(e, c=c_i, direction=direction))
    return _implied(spec, pool)
