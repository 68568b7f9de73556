"""Check a stated bound over the theorems' own class: every L-smooth mu-strongly convex client.

The quadratic class (:mod:`fedtheory.bounds.check`) can refute a bound: a quadratic instance
that breaks it is an instance of the theorem's class. It cannot confirm one: a bound that holds
on every quadratic may fail on other functions of F_{mu,L} (FedAvg's floor, N = 2, K = 2,
eta = 0.05, mu = 1, L = 10, zeta2 = 1: 0.0025785 over F_{mu,L} against 0.0017308 over
quadratics). Here the worst case over the whole class comes from performance estimation
(:mod:`fedtheory.analysis.pep`), one program per discrete setting (N, K, M) of the spec:

* the constants are the class's: L_f = L and mu_f = mu (the mean of functions of F_{mu,L} is
  in F_{mu,L}, and the worst cases reach its extreme values), D2 and zeta2 the ``[class]``
  bounds, p_i and q_i the participation's exact values; ``d`` is undefined (the class is
  dimension-free) and ``sigma`` must be 0 (exact gradients);
* the quantities: ``mse_after_rounds``, ``f_minus_f_star_after_rounds`` and
  ``grad_norm2_after_rounds`` (the worst expectation after R rounds, the participation's
  subsets enumerated), ``stationary_mse`` (full participation: the fixed point imposed
  linearly), ``mean_square_rate`` (the *estimate* W(R)/W(R - 1), R = ``rounds``, default
  :data:`RATE_ROUNDS`); ``mean_rate`` and ``rounds_to`` are properties of affine rounds and
  of every horizon, refused with what to use instead;
* the verdict: **violated** when the worst case exceeds the stated value by more than
  :data:`TOLERANCE` (1e-5 relative: docs/bounds.md, "The general class"), with the worst
  instance written as an interpolation file (solved again over the tightened class
  (mu (1 + tau), L (1 - tau)), tau = :data:`TAU`, every interpolation inequality checked
  positive in float64) that ``fedtheory simulate --problem-file`` replays; otherwise
  **holds on the class searched** (a numerical worst case, not a proof). An unbounded worst
  case is an answer (``unbounded``, ``lacks``: the bound the class lacks).
"""

from __future__ import annotations

import itertools
import math
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fedtheory.analysis.pep import (
    MAX_CONSTRAINTS,
    MAX_GRAM,
    WorstCase,
    rate_estimate,
    worst_after_rounds,
    worst_floor,
)
from fedtheory.analysis.pep.program import PepSizeError
from fedtheory.analysis.pep.worst import MAX_PATHS
from fedtheory.bounds.check import Evaluation, scored, verdict
from fedtheory.bounds.instances import participation_model
from fedtheory.bounds.spec import AFTER_ROUNDS, QUANTITIES, BoundSpec
from fedtheory.errors import AssumptionError, NotInterpolableError
from fedtheory.problems.interpolated import write_interpolation_file

#: The general class's name in specs, flags and JSON.
GENERAL = "smooth-strongly-convex"
#: Relative violation tolerance over the general class: the solvers' accuracy here is 1e-10 to
#: 3e-7 relative (Clarabel against SCS and against closed forms), the dual value may sit below
#: the truth by as much; 1e-5 is 30 times the worst of these (docs/bounds.md).
TOLERANCE = 1e-5
#: Tightening of the class for a counterexample file: margins of +2e-7 .. +4e-7 in float64,
#: at a cost of 4e-5 .. 6e-5 of the value (docs/bounds.md).
TAU = 1e-4
#: Rounds of the per-round factor estimate W(R)/W(R - 1) when the spec gives none (FOCUS,
#: N = 2, K = 2: within 5e-7 of the exact worst quadratic rate at R = 5, 6e-6 at R = 4).
RATE_ROUNDS = 5
#: Rounds a floor counterexample is replayed for (it starts at its fixed point).
FLOOR_REPLAY_ROUNDS = 20

_REFUSED = {
    "mean_rate": "mean_rate is the spectral radius of E[M_S], a property of an affine round "
    "(quadratic clients); over smooth strongly convex clients use mean_square_rate (the "
    "estimate W(R)/W(R - 1))",
    "rounds_to": "rounds_to needs the worst case at every horizon; bound mse_after_rounds at "
    "your horizon R instead",
}


@dataclass
class GeneralCheck:
    """The outcome of :func:`check_general`; ``to_dict()`` is its JSON.

    Attributes
    ----------
    spec : BoundSpec
    violated : bool
    worst : Evaluation or None
        The setting with the largest objective among those that meet the condition.
    instances : list of Evaluation
        One per discrete setting (N, K, M) solved.
    cases : list of WorstCase
        The worst cases behind ``instances``, in the same order.
    skipped : list of dict
        Settings not solved (past the size cap), with the reason.
    implied : dict or None
        With a free constant: as :attr:`fedtheory.bounds.check.BoundCheck.implied`.
    files : dict
        The interpolation files written (``worst``, ``implied``).
    seconds : float
    """

    spec: BoundSpec
    violated: bool
    worst: Evaluation | None
    instances: list[Evaluation]
    cases: list[WorstCase]
    skipped: list[dict]
    implied: dict | None
    files: dict
    seconds: float
    tolerance: float = TOLERANCE
    case_of: dict = field(default_factory=dict, repr=False)

    @property
    def unbounded(self) -> bool:
        """Some setting's worst case is infinite."""
        return any(c.unbounded for c in self.cases)

    @property
    def lacks(self) -> str | None:
        return next((c.lacks for c in self.cases if c.unbounded), None)

    def solver(self) -> dict:
        """``name``, ``status``, ``value``, ``cross_check`` of the worst setting's solve."""
        c = self.case_of.get(id(self.worst)) if self.worst is not None else None
        if c is None and self.cases:
            c = self.cases[0]
        if c is None:
            return {"name": None, "status": "not solved", "value": None, "cross_check": None}
        return {k: c.solver.get(k) for k in ("name", "status", "value", "cross_check")}

    def to_dict(self) -> dict:
        spec = self.spec
        worst = None
        if self.worst is not None:
            worst = {**self.worst.to_dict(full=True), "problem_file": None}
            worst.update({k: v for k, v in self.files.get("worst", {}).items() if k != "path"})
            worst["problem_file"] = self.files.get("worst", {}).get("path")
            worst["case"] = self._case(self.worst)
        out = {
            "class": GENERAL,
            "violated": self.violated,
            "unbounded": self.unbounded,
            "lacks": self.lacks,
            "solver": self.solver(),
            "worst": worst,
            "instances": [
                {**e.to_dict(), "class": GENERAL, **self._case(e)} for e in self.instances
            ],
            "skipped": self.skipped,
            "quantity": spec.quantity,
            "quantity_meaning": QUANTITIES[spec.quantity],
            "tolerance": self.tolerance,
            "seconds": self.seconds,
            "sentence": self.sentence(),
        }
        if self.implied is not None:
            imp = {k: v for k, v in self.implied.items() if k != "argmax"}
            arg = self.implied.get("argmax")
            imp["argmax"] = None if arg is None else arg.to_dict(full=True)
            imp["problem_file"] = self.files.get("implied", {}).get("path")
            out["implied_constant"] = imp
        return out

    def _case(self, e: Evaluation) -> dict:
        c = self.case_of.get(id(e))
        if c is None:
            return {}
        return {
            "unbounded": c.unbounded,
            "lacks": c.lacks,
            "solver": c.solver,
            "gram": c.sizes.gram,
            "constraints": c.sizes.constraints,
            "cpu_seconds": c.seconds,
        }

    def sentence(self) -> str:
        """One sentence: what the check found over the general class."""
        spec, n = self.spec, len(self.instances)
        met = sum(e.condition_met for e in self.instances)
        skip = (
            f" ({len(self.skipped)} setting(s) not solved: see skipped)" if (self.skipped) else ""
        )
        if not self.instances:
            return f"Not checked over smooth strongly convex clients: {self.unsolved()}."
        if self.implied is not None and spec.constant_value is None:
            v = self.implied["value"]
            if self.violated or v is None or not math.isfinite(v):
                return (
                    f"Over smooth strongly convex clients no constant {spec.constant} makes "
                    f"{spec.bound} hold on the {met} of {n} settings that meet the condition"
                    f"{skip}."
                )
            return (
                f"Over smooth strongly convex clients the {self.implied['direction']} "
                f"{spec.constant} = {v:.6g} on the {met} of {n} settings that meet the "
                f"condition (holds on the class searched){skip}."
            )
        w = self.worst
        if w is None:
            if self.unbounded:
                return (
                    f"Unbounded over smooth strongly convex clients: the class lacks "
                    f"{self.lacks}; the bound is not defined there{skip}."
                )
            return f"No setting of the {n} solved meets the condition: nothing to check{skip}."
        if math.isinf(w.exact):
            return (
                f"Violated over smooth strongly convex clients: the worst case is unbounded "
                f"(the class lacks {self.lacks}), stated {w.stated:.6g}{skip}."
            )
        if self.violated:
            file = self.files.get("worst", {})
            where = (
                f", saved as {file['path']}"
                if file.get("path")
                else f" (no file: {file['reason']})"
                if file.get("reason")
                else ""
            )
            return (
                f"Violated over smooth strongly convex clients: worst {w.exact:.6g} > stated "
                f"{w.stated:.6g} (ratio {w.ratio:.6g}) at {w.label}{where}{skip}."
            )
        return (
            f"Holds on the class searched (smooth strongly convex clients, {met} of {n} "
            f"settings meet the condition): worst ratio {w.ratio:.6g} (worst {w.exact:.6g}, "
            f"stated {w.stated:.6g}){skip}."
        )

    def unsolved(self) -> str:
        """Why no setting was solved, in one line: one refusal shared by every setting as it
        is, size caps summarized (the participation paths and Gram sizes they would need,
        against the caps), else the first refusal and how many more there are."""
        if not self.skipped:
            return "no setting"
        reasons = list(dict.fromkeys(s["reason"] for s in self.skipped))
        if len(reasons) == 1:
            return reasons[0]
        sized = [s for s in self.skipped if s.get("gram") is not None or s.get("paths")]
        if len(sized) < len(self.skipped):
            return f"{reasons[0]} ({len(reasons) - 1} other reason(s): see skipped)"
        spec = self.spec
        R = spec.rounds or RATE_ROUNDS
        what = {
            "mean_square_rate": f"the rate estimate W({R})/W({R - 1})",
            "stationary_mse": "the floor",
        }.get(spec.quantity, f"the worst case after {R} rounds")
        need = []
        sampled = [s for s in sized if s.get("paths") and s["paths"] > 1 and s.get("draws")]
        if sampled:
            lo = min(sampled, key=lambda s: s["paths"])
            hi = max(sampled, key=lambda s: s["paths"])
            span = (
                f"{lo['draws']}^{lo['rounds']}"
                if lo is hi
                else f"{lo['draws']}^{lo['rounds']} to {hi['draws']}^{hi['rounds']}"
            )
            need.append(f"{span} participation paths")
        grams = [s for s in sized if s.get("gram") is not None]
        if grams:
            lo = min(grams, key=lambda s: s["gram"])
            hi = max(grams, key=lambda s: s["gram"])
            about = "about " if hi["estimated"] else ""
            span = (
                f"{about}{hi['gram']}"
                if lo is hi
                else f"{'about ' if lo['estimated'] else ''}{lo['gram']} to {about}{hi['gram']}"
            )
            need.append(f"a Gram of {span}")
        return (
            f"{what} of each of the {len(sized)} settings is past the size cap that "
            f"solves in seconds (a Gram of {MAX_GRAM}, {MAX_CONSTRAINTS} constraints, "
            f"{MAX_PATHS} participation paths): they need {' or '.join(need)}; reduce the "
            "rounds R, the local steps K, the clients N or M"
        )

    def table(self) -> str:
        """Per setting solved: stated, worst, ratio, sizes, CPU seconds, solver; the settings
        not solved beside them (empty when none was solved: :meth:`sentence` says why)."""
        if not self.instances:
            return ""
        rows = [
            f"{'setting':22s} {'stated':>14s} {'worst':>14s} {'ratio':>10s} {'gram':>5s} "
            f"{'cons':>5s} {'cpu s':>7s} solver"
        ]
        for e in self.instances:
            c = self.case_of[id(e)]
            rows.append(
                f"{e.label[:22]:22s} {e.stated:14.8g} {e.exact:14.8g} {e.ratio:10.6g} "
                f"{c.sizes.gram:5d} {c.sizes.constraints:5d} {c.seconds:7.2f} "
                f"{c.solver['name']} {c.solver['status']}"
            )
        for s in self.skipped:
            rows.append(f"{s['label'][:22]:22s} not solved: {s['reason']}")
        return "\n".join(rows)


def class_constants(spec: BoundSpec, part: Any, N: int, K: int) -> dict[str, float]:
    """Every constant of :data:`~fedtheory.bounds.constants.CONSTANTS` on the general class
    (module docstring): the class's values, the participation's exact p_i and q_i."""
    c = spec.instance_class
    p = np.asarray(part.inclusion_probabilities().value, dtype=np.float64)
    q = np.asarray(part.effective_weights(spec.aggregation).value, dtype=np.float64)
    out = {
        "K": float(K),
        "N": float(N),
        "M": float(p.sum()),
        "L": c.L,
        "mu": c.mu,
        "L_f": c.L,
        "mu_f": c.mu,
        "kappa": c.L / c.mu if c.mu > 0 else math.inf,
        "kappa_f": c.L / c.mu if c.mu > 0 else math.inf,
        "p_min": float(p.min()),
        "p_max": float(p.max()),
        "q_min": float(q.min()),
        "q_max": float(q.max()),
        "delta_q": float(N * np.sum((q - 1.0 / N) ** 2)),
        "d": math.nan,
        "sigma": 0.0,
        "zeta2": math.nan if c.zeta2 is None else c.zeta2,
        "D2": spec.D2,
        "epsilon": spec.epsilon,
        "rho": math.nan,
    }
    return out


def _settings(spec: BoundSpec) -> list[tuple[int, int, int | None]]:
    """The discrete settings (N, K, M) of the spec, M <= N."""
    Ms = spec.clients_per_round or (None,)
    return [
        (N, K, M)
        for N, K, M in itertools.product(spec.clients, spec.local_steps, Ms)
        if M is None or M <= N
    ]


def _check_spec(spec: BoundSpec) -> None:
    if spec.instance_class is None or spec.clients is None:
        raise AssumptionError("the general class needs a [class] table (L, mu) and clients")
    if spec.quantity in _REFUSED:
        raise AssumptionError(f"over smooth strongly convex clients {_REFUSED[spec.quantity]}")
    if spec.noise:
        raise AssumptionError(
            "the general class has exact gradients: noise (sigma > 0) is not modelled there"
        )
    used = {
        str(s)
        for e in (spec.bound_expr, *spec.condition_exprs, spec.lr_expr)
        for s in e.free_symbols
    }
    if "d" in used:
        raise AssumptionError("the general class is dimension-free: the bound may not use d")
    if "rho" in used:
        raise AssumptionError("the general class has no gossip graph: the bound may not use rho")
    if spec.quantity == "stationary_mse" and spec.participation != "full":
        raise AssumptionError(
            f"the floor of a randomly sampled round ({spec.participation} participation) is "
            "not a fixed point: E||x_r - x*||^2 tends to its mean over a stationary "
            "distribution of the iterates, which performance estimation does not reach; the "
            "general class computes the floor under full participation, or bound "
            "mse_after_rounds after R rounds instead"
        )
    if spec.participation == "weighted" and spec.p is None:
        raise AssumptionError(
            "weighted participation over the general class needs p in the spec (the worst "
            "case is solved for one participation law)"
        )
    if spec.p is not None and any(n != len(spec.p) for n in spec.clients):
        raise AssumptionError(f"p has {len(spec.p)} entries but clients is {list(spec.clients)}")


def _algorithm_settings(spec: BoundSpec, eta: float, K: int) -> dict:
    kw: dict[str, Any] = {"lr": eta, "local_steps": K}
    if spec.global_lr is not None:
        kw["global_lr"] = spec.global_lr
    if spec.prox_mu is not None:
        kw["prox_mu"] = spec.prox_mu
    if spec.options:
        kw["options"] = dict(spec.options)
    return kw


def worst_case(
    spec: BoundSpec,
    part: Any,
    N: int,
    K: int,
    eta: float,
    *,
    tau: float = 0.0,
    cross_check: bool | None = True,
) -> WorstCase:
    """The worst value of the spec's quantity over the general class in one setting."""
    c = spec.instance_class
    common = dict(
        mu=c.mu,
        L=c.L,
        zeta2=c.zeta2,
        participation=part,
        rule=spec.aggregation,
        cross_check=cross_check,
        **_algorithm_settings(spec, eta, K),
    )
    q = spec.quantity
    if q in AFTER_ROUNDS:
        return worst_after_rounds(
            spec.algorithm, N, spec.rounds, metric=AFTER_ROUNDS[q], D2=spec.D2, tau=tau, **common
        )
    if q == "stationary_mse":
        return worst_floor(spec.algorithm, N, tau=tau, **common)
    est = rate_estimate(spec.algorithm, N, spec.rounds or RATE_ROUNDS, D2=spec.D2, **common)
    last = est["worst"][1]
    last.quantity = "mean_square_rate"
    last.value = est["value"]
    last.setting["estimate"] = est["method"]
    prev = est["worst"][0]
    if prev is not None:
        last.seconds += prev.seconds
        last.setting["W"] = [prev.value, est["worst"][1].solver.get("value")]
    return last


def check_general(
    spec: BoundSpec,
    *,
    out_dir: str | Path | None = None,
    name: str | None = None,
    cross_check: bool = True,
    refuse_unsolved: bool = True,
) -> GeneralCheck:
    """Check ``spec`` over every L-smooth mu-strongly convex client (module docstring).

    Parameters
    ----------
    spec : BoundSpec
        With a ``[class]`` (L, mu; D2, zeta2) and ``clients``.
    out_dir : path, optional
        Where the counterexample's interpolation file goes (``STEM-general-counterexample.npz``;
        the implied constant's argmax: ``STEM-general-implied.npz``); None writes nothing.
    name : str, optional
        Stem of the files (default the spec file's stem, else "bound").
    cross_check : bool
        Cross-check every solve with SCS (its status and value are in the JSON).
    refuse_unsolved : bool
        Raise when no setting could be solved (past the size cap, or a quantity the setting's
        participation does not allow: the first reason); False returns them under
        ``skipped`` (``--class both`` still reports the quadratic class).

    Raises
    ------
    FedTheoryError
        A quantity or a spec the general class does not support (the message says what to use),
        no setting solved (with ``refuse_unsolved``), a missing extra ``pep`` (one line).
    """
    t0 = time.perf_counter()
    tol = max(spec.tolerance, TOLERANCE)
    try:
        _check_spec(spec)
    except AssumptionError as exc:
        if refuse_unsolved:
            raise
        return GeneralCheck(
            spec,
            False,
            None,
            [],
            [],
            [{"label": "every setting", "reason": str(exc)}],
            None,
            {},
            time.perf_counter() - t0,
            tol,
        )
    evals: list[Evaluation] = []
    cases: list[WorstCase] = []
    case_of: dict[int, WorstCase] = {}
    skipped: list[dict] = []
    refusal = None
    for N, K, M in _settings(spec):
        p = None if spec.p is None else np.asarray(spec.p, dtype=np.float64)
        if p is not None and spec.participation == "weighted":
            p = p / p.sum()
        part = participation_model(spec, N, M, p)
        consts = class_constants(spec, part, N, K)
        label = f"N={N} K={K}" + (f" M={M}" if M is not None else "")
        try:
            eta = spec.step_size(consts)
        except AssumptionError as exc:
            skipped.append({"label": label, "reason": str(exc)})
            continue
        consts["eta"] = eta
        try:
            case = worst_case(spec, part, N, K, eta, cross_check=cross_check)
        except (PepSizeError, AssumptionError) as exc:
            if refusal is None:
                refusal = exc
            skipped.append({"label": label, "reason": str(exc), **_sizes_of(exc)})
            continue
        ev = _evaluation(spec, case, consts, eta, N, K, M, label)
        evals.append(ev)
        cases.append(case)
        case_of[id(ev)] = case
    if not evals and refusal is not None and refuse_unsolved:
        raise type(refusal)(str(refusal)) from None
    return _finish(spec, evals, cases, case_of, skipped, tol, out_dir, name, t0)


def _sizes_of(exc: Exception) -> dict:
    """What a size refusal measured (:class:`PepSizeError`'s attributes; empty otherwise)."""
    if not isinstance(exc, PepSizeError):
        return {}
    return {
        "gram": exc.gram,
        "constraints": exc.constraints,
        "estimated": exc.estimated,
        "paths": exc.paths,
        "draws": exc.draws,
        "rounds": exc.rounds,
    }


def _evaluation(
    spec: BoundSpec,
    case: WorstCase,
    consts: dict,
    eta: float,
    N: int,
    K: int,
    M: int | None,
    label: str,
) -> Evaluation:
    exact = math.inf if case.unbounded else float(case.value)
    how = f"performance estimation over F_(mu,L) ({case.solver['name']} {case.solver['status']})"
    return scored(spec, consts, exact, eta, {"N": N, "d": None, "K": K, "M": M}, label, how)


def _finish(spec, evals, cases, case_of, skipped, tol, out_dir, name, t0) -> GeneralCheck:
    _, implied, worst, violated = verdict(spec, evals, tol)
    files: dict[str, dict] = {}
    if out_dir is not None:
        stem = name or (Path(spec.path).stem if spec.path else "bound")
        out = Path(out_dir)
        if violated and worst is not None and math.isfinite(worst.exact):
            files["worst"] = _written(spec, worst, out / f"{stem}-general-counterexample.npz")
        arg = None if implied is None else implied.get("argmax")
        if arg is not None and math.isfinite(arg.exact):
            files["implied"] = _written(spec, arg, out / f"{stem}-general-implied.npz")
    res = GeneralCheck(
        spec,
        bool(violated),
        worst,
        evals,
        cases,
        skipped,
        implied,
        files,
        time.perf_counter() - t0,
        tol,
        case_of,
    )
    return res


def _run_metadata(spec: BoundSpec) -> dict:
    """The spec's algorithm settings that an interpolation file's replay command must carry
    (aggregation, global_lr, prox_mu, the algorithm's options as ``--option`` values)."""
    meta: dict[str, Any] = {}
    if spec.aggregation != "mean":
        meta["aggregation"] = spec.aggregation
    if spec.global_lr is not None:
        meta["global_lr"] = spec.global_lr
    if spec.prox_mu is not None:
        meta["prox_mu"] = spec.prox_mu
    if spec.options:
        meta["options"] = shlex.join(spec.option_values())
    return meta


def _written(spec: BoundSpec, e: Evaluation, path: Path) -> dict:
    """:func:`write_counterexample`, or ``path`` None and the ``reason`` when the tightened
    worst case still misses an interpolation inequality in float64 (nothing is written: the
    solver's accuracy exceeds the margins the tightening buys, as on a floor of 1e-5 beside
    gradients of norm 1); the check's values and verdict stand, only the file is missing."""
    try:
        return write_counterexample(spec, e, path)
    except NotInterpolableError as exc:
        return {"path": None, "reason": str(exc)}


def write_counterexample(spec: BoundSpec, e: Evaluation, path: Path) -> dict:
    """Solve the setting of ``e`` again over the tightened class (mu (1 + tau), L (1 - tau)),
    and write its clients' interpolation data (every margin checked positive in float64) with
    the run that replays it. Returns ``path``, ``value`` (the tightened worst case, what the
    replay reproduces), ``tau``, ``min_margin``, ``command``."""
    N, K, M = e.sizes["N"], e.sizes["K"], e.sizes["M"]
    p = None if spec.p is None else np.asarray(spec.p, dtype=np.float64)
    if p is not None and spec.participation == "weighted":
        p = p / p.sum()
    part = participation_model(spec, N, M, p)
    q = spec.quantity
    if q == "mean_square_rate":  # the file replays the last of the R rounds' worst case
        c = spec.instance_class
        case = worst_after_rounds(
            spec.algorithm,
            N,
            spec.rounds or RATE_ROUNDS,
            mu=c.mu,
            L=c.L,
            D2=spec.D2,
            zeta2=c.zeta2,
            participation=part,
            rule=spec.aggregation,
            tau=TAU,
            cross_check=False,
            **_algorithm_settings(spec, e.eta, K),
        )
        rounds, what = spec.rounds or RATE_ROUNDS, "mse_after_rounds"
    else:
        case = worst_case(spec, part, N, K, e.eta, tau=TAU, cross_check=False)
        rounds = FLOOR_REPLAY_ROUNDS if q == "stationary_mse" else spec.rounds
        what = q
    data = case.instance()
    meta: dict[str, Any] = {
        "lr": e.eta,
        "local_steps": K,
        "rounds": rounds,
        "algorithm": spec.algorithm_source or spec.algorithm,
        "participation": spec.participation,
    }
    if M is not None:
        meta["clients_per_round"] = M
    meta.update(_run_metadata(spec))
    written = write_interpolation_file(
        path,
        **data,
        mu=spec.instance_class.mu,
        L=spec.instance_class.L,
        tau=TAU,
        quantity=what,
        value=case.value,
        **meta,
    )
    return {
        "path": written["path"],
        "value": case.value,
        "tau": TAU,
        "min_margin": written["min_margin"],
        "command": written["command"],
    }
