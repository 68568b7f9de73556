"""The worst-case search of a bound over its instance class: sample, start from the extremes,
then climb.

A class instance is a point theta of a continuous parameter vector (:class:`Draw`: client
spectra, rotations, optima, participation weights) and a discrete setting (N, d, K, M). The
search maximizes the objective of :func:`~fedtheory.bounds.evaluate.judge` (the ratio; with a
free constant, the oriented c_i) in three phases:

1. **random draws** (``n``, in worker processes; draw i depends only on (seed, i));
2. **structured extremes** (:func:`structured_draws`): every eigenvalue at mu, at L, all equal;
   half the spectrum at each end, with the clients' bases aligned and anti-aligned (the
   directions of one client's large eigenvalues are the others' small ones); one client's
   spectrum at one end and the others' at the other; one rare client (its weight at the low
   end of ``p_range``) or every client rare; spread and identical optima; at the extreme
   discrete settings of the spec's lists. Where the objective is flat away from a corner (a
   bound false only at client condition numbers 1 to 1.01), no local method climbs there: the
   extremes start on it;
3. **ascent** from the best instances found (:func:`climb`): for the per-round factors,
   L-BFGS-B (:func:`scipy.optimize.minimize`, the class's box as bounds) with the exact
   gradient of the objective (the rate's through
   :func:`~fedtheory.analysis.exact.sensitivity.rate_gradient`, the constants' through
   :func:`~fedtheory.bounds.constants.constant_gradients` and the participation weights, the
   bound's through the chain rule), each step warm-starting its eigen-solves from the last
   eigenvector; then, or for the other quantities, Nelder-Mead in random 6-dimensional
   subspaces of theta (:func:`refine`).

The budget (:func:`plan`) grows with the class's dimension: with P the size of theta at the
largest setting, the ascent has 3 + floor(log2(1 + P / 64)) starts (3 for N = 4, d = 3; 7 for
N = 16, d = 10), which share the n / 4 evaluations of the refinement, each getting at least
the probe and two gradient steps (an ascent step, value and gradient, counts as three
evaluations: its cost measured on N = 16, d = 10 FOCUS). Every step is a full gradient over
theta whatever P is, so the ascent needs more starts, not longer climbs, as the class grows. :func:`coverage` reports the range of
every constant the search reached, so that "holds on all of them" is read with it.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.optimize import minimize

from fedtheory.analysis.exact.sensitivity import GRADIENT_QUANTITIES, rate_gradient
from fedtheory.bounds.constants import constant_gradients, instance_constants
from fedtheory.bounds.evaluate import SCREEN_TOL, Evaluation, constants_of, evaluate, judge
from fedtheory.bounds.instances import Draw, draw_instance, fixes_optima
from fedtheory.bounds.spec import BoundSpec
from fedtheory.errors import AssumptionError, FedTheoryError, SettingError, SizeError
from fedtheory.io import duration
from fedtheory.parallel import fork_all

#: Random draws of the default search (``fedtheory bound --search``).
DEFAULT_SEARCH = 200
#: Ascent starts of the smallest classes (more for larger ones: :func:`plan`).
REFINE_STARTS = 3
#: Oracle evaluations an ascent step (value and gradient) is counted as.
STEP_COST = 3
_SUBSPACE = 6
#: Constants reported by :func:`coverage` (when the instances define them).
COVERED = (
    "kappa_f",
    "kappa",
    "p_min",
    "delta_q",
    "zeta2",
    "D2",
    "L_f",
    "mu_f",
    "eta",
    "N",
    "M",
    "K",
    "d",
)
#: Constants whose derivative comes from the participation weights (finite differences).
_P_CONSTANTS = ("M", "p_min", "p_max", "q_min", "q_max", "delta_q")


# -- the budget ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Plan:
    """How a search spends its budget.

    Attributes
    ----------
    draws : int
        Random draws.
    structured : int
        Structured extremes evaluated (at most ``max(len(patterns), draws // 4)``).
    starts : int
        Ascents: 3 + floor(log2(1 + P / 64)), P the size of theta at the largest setting.
    per_start : int
        Oracle evaluations per ascent (an ascent step counts as :data:`STEP_COST`): the
        refinement budget n / 4 spread over the starts, and at least the probe and two steps.
    parameters : int
        P.
    """

    draws: int
    structured: int
    starts: int
    per_start: int
    parameters: int


def _theta_size(spec: BoundSpec, N: int, d: int) -> int:
    drawn_p = spec.p is None and spec.participation in ("weighted", "bernoulli")
    return N * d + N * (d * (d - 1) // 2) + N * d + d + (N if drawn_p else 0)


def plan(spec: BoundSpec, n: int) -> Plan:
    """The budget of a search with ``n`` random draws (module docstring)."""
    P = _theta_size(spec, max(spec.clients), max(spec.instance_class.dim))
    starts = REFINE_STARTS + int(math.floor(math.log2(1 + P / 64)))
    per_start = max(len(PROBE_RADII) + 2 * STEP_COST, math.ceil(n / 4 / starts)) if n else 0
    structured = max(len(PATTERNS), n // 4) if n else 0
    return Plan(n, structured, starts if n else 0, per_start, P)


# -- evaluation of draws ---------------------------------------------------------------------------
def _draw(spec: BoundSpec, seed: int, i: int) -> Draw:
    rng = np.random.default_rng([seed, i])
    return draw_instance(spec, rng, f"draw {i}")


def _safe_evaluate(spec: BoundSpec, draw: Draw) -> Evaluation:
    """:func:`evaluate` on a class draw; a numerical failure of the oracle on this draw is
    recorded as "not evaluated", while an invalid setting (:class:`SettingError`) and work
    refused by its size (:class:`SizeError`) are the spec's and stop the check."""
    inst = draw.instance(spec)
    try:
        ev = evaluate(spec, inst, verify=False, tol=SCREEN_TOL)
    except (SettingError, SizeError):
        raise
    except FedTheoryError as exc:  # e.g. ARPACK did not converge on a degenerate draw
        ev = Evaluation(
            math.nan,
            math.nan,
            False,
            math.nan,
            math.nan,
            None,
            -math.inf,
            inst.sizes(),
            f"{inst.label} (not evaluated: {exc})",
            {},
            defined=False,
            instance=inst,
        )
    ev.instance = None  # rebuilt from the draw when needed (keeps worker results small)
    ev.draw = draw
    return ev


def _evaluate_list(spec: BoundSpec, draws: list[Draw]) -> list[Evaluation]:
    return [_safe_evaluate(spec, d) for d in draws]  # each is one oracle call


#: Pieces per worker the draws are cut into, so that progress can be reported as pieces finish
#: (a reused worker runs piece after piece: one fork per worker, not per piece).
PIECES_PER_WORKER = 10


def evaluate_draws(
    spec: BoundSpec,
    draws: list[Draw],
    workers: int,
    on_done: Callable[[list[Evaluation]], None] | None = None,
) -> list[Evaluation]:
    """Evaluate ``draws`` in ``workers`` forked processes (their order kept) by
    :func:`fedtheory.parallel.fork_all`, which runs them in this process where it may not fork
    (a daemonic process, such as a claim ``fedtheory verify`` forked, may not have children).
    Draw i depends only on (seed, i), so the result is the same either way.
    ``on_done(evaluations)``: more draws evaluated (called in this process as pieces of the
    work finish)."""
    n = len(draws)
    if workers <= 1 or n < 8:
        out = []
        for d in draws:
            out.append(_safe_evaluate(spec, d))
            if on_done is not None:
                on_done(out[-1:])
        return out
    pieces = min(n, workers * PIECES_PER_WORKER)
    chunks = [list(range(k, n, pieces)) for k in range(pieces)]
    parts = fork_all(
        lambda c: _evaluate_list(spec, [draws[i] for i in c]),
        chunks,
        workers=workers,
        on_result=None if on_done is None else (lambda _k, evs: on_done(evs)),
    )
    out: list[Evaluation | None] = [None] * n
    for chunk, evs in zip(chunks, parts, strict=True):
        for i, ev in zip(chunk, evs, strict=True):
            out[i] = ev
    return out  # type: ignore[return-value]


def random_search(
    spec: BoundSpec,
    n: int,
    seed: int,
    workers: int,
    on_done: Callable[[list[Evaluation]], None] | None = None,
) -> list[Evaluation]:
    """``n`` random class draws (draw i depends only on (seed, i)), evaluated."""
    return evaluate_draws(spec, [_draw(spec, seed, i) for i in range(n)], workers, on_done)


# -- structured extremes ---------------------------------------------------------------------------
#: (spectrum, bases, optima, participation) of the structured starts (module docstring).
PATTERNS = (
    ("equal", "aligned", "spread", "high"),
    ("mu", "aligned", "spread", "rare"),
    ("L", "aligned", "spread", "rare"),
    ("split", "aligned", "spread", "rare"),
    ("split", "anti", "spread", "high"),
    ("one-L", "aligned", "spread", "rare"),
    ("one-mu", "aligned", "spread", "rare"),
    ("one-L", "anti", "same", "low"),
    ("split", "anti", "same", "rare"),
    ("equal", "aligned", "same", "low"),
)


def _extremes(values: tuple[int, ...]) -> list[int]:
    return sorted({min(values), max(values)})


def _settings(spec: BoundSpec) -> list[tuple[int, int, int, int | None]]:
    out = []
    for N, d, K in itertools.product(
        _extremes(spec.clients), _extremes(spec.instance_class.dim), _extremes(spec.local_steps)
    ):
        if spec.clients_per_round:
            Ms = [m for m in spec.clients_per_round if m <= N]
            out.extend((N, d, K, M) for M in (_extremes(tuple(Ms)) if Ms else []))
        else:
            out.append((N, d, K, None))
    return out


def pattern_theta(spec: BoundSpec, N: int, d: int, pattern: tuple[str, ...]) -> np.ndarray:
    """theta of the structured extreme ``pattern`` (one of :data:`PATTERNS`) with N clients."""
    cls = spec.instance_class
    spectrum, bases, optima, part = pattern
    lo, hi = cls.mu, cls.L
    lam = np.full((N, d), math.sqrt(lo * hi))
    half = d // 2
    if spectrum in ("mu", "L"):
        lam[:] = lo if spectrum == "mu" else hi
    elif spectrum == "split":
        lam[:, :half], lam[:, half:] = hi, lo
    elif spectrum in ("one-L", "one-mu"):
        lam[:] = lo if spectrum == "one-L" else hi
        lam[0] = hi if spectrum == "one-L" else lo
    S = np.zeros((N, d, d))
    if bases == "anti":  # odd clients: a quarter turn from coordinate a to a + d/2
        for a in range(half):  # d/2 planes, once per pattern
            S[1::2, a, a + half] = 1.0  # Cayley of tan(pi/4): a rotation by pi/2
    iu = np.triu_indices(d, 1)
    skew = S[:, iu[0], iu[1]]
    e = np.zeros((N, d))
    if optima == "spread" or cls.zeta2 is not None:  # a class that fixes zeta2 > 0: spread
        e[0::2], e[1::2] = 1.0, -1.0
    z = np.full(d, 1.0 / math.sqrt(d))
    parts = [lam.ravel(), skew.ravel(), e.ravel(), z]
    if spec.p is None and spec.participation in ("weighted", "bernoulli"):
        plo, phi = cls.p_range
        r = np.full(N, phi if part in ("high", "rare") else plo)
        if part == "rare":
            r[0] = plo
        parts.append(r)
    return np.concatenate(parts)


def structured_draws(spec: BoundSpec, cap: int) -> list[Draw]:
    """The structured extremes (module docstring), at most ``cap`` of them: first every pattern
    and every extreme setting once (cycled together), then the rest of their product."""
    settings = _settings(spec)
    if not settings:
        return []
    pairs = list(itertools.product(range(len(PATTERNS)), range(len(settings))))
    first = [
        (k % len(PATTERNS), k % len(settings)) for k in range(max(len(PATTERNS), len(settings)))
    ]
    order = first + [p for p in pairs if p not in set(first)]
    out, seen = [], set()
    for pi, si in order:
        N, d, K, M = settings[si]
        theta = pattern_theta(spec, N, d, PATTERNS[pi])
        key = (N, d, K, M, theta.tobytes())
        if key in seen:  # e.g. participation variants of a class without drawn weights
            continue
        seen.add(key)
        out.append(Draw(N, d, K, M, theta, "extreme " + "/".join(PATTERNS[pi])))
        if len(out) >= cap:
            break
    return out


# -- ascent ----------------------------------------------------------------------------------------
class _Stop(Exception):
    """The ascent reached an instance whose objective is +inf (nothing is above it), or spent
    its budget (L-BFGS-B's line search may call past ``maxfun``)."""


def _partials(spec: BoundSpec, consts: dict, exact: float, names: list[str]) -> tuple:
    """d objective / d exact and / d each constant of ``names`` (forward differences of
    :func:`judge`, which makes no oracle call)."""
    f0 = judge(spec, consts, exact).objective

    def diff(value: float, move) -> float:
        h = 1e-7 * max(abs(value), 1e-12)
        f1 = move(value + h)
        g = (f1 - f0) / h
        return g if math.isfinite(g) else 0.0

    g_x = diff(exact, lambda v: judge(spec, consts, v).objective)
    g_c = {
        n: diff(consts[n], lambda v, n=n: judge(spec, {**consts, n: v}, exact).objective)
        for n in names
    }
    lr_c = {}
    for n in names:
        if n == "eta":
            continue
        h = 1e-7 * max(abs(consts[n]), 1e-12)
        try:
            lr_c[n] = (spec.step_size({**consts, n: consts[n] + h}) - consts["eta"]) / h
        except AssumptionError:
            lr_c[n] = 0.0
    return g_x, g_c, lr_c


class _Climber:
    """Value and gradient of -objective over theta for one start (per-round factors)."""

    def __init__(self, spec: BoundSpec, base: Draw, label: str, calls: int | None = None) -> None:
        self.spec, self.base, self.label, self.calls = spec, base, label, calls
        self.seen: list[Evaluation] = []
        self.vector = None

    def __call__(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        spec = self.spec
        if self.calls is not None and len(self.seen) >= self.calls:
            raise _Stop
        if not np.all(np.isfinite(theta)):
            return 1e300, np.zeros(theta.size)
        draw = replace(self.base, theta=np.array(theta, dtype=np.float64), label=self.label)
        inst = draw.instance(spec)
        consts = constants_of(spec, inst)
        try:
            eta = spec.step_size(consts)
        except AssumptionError:
            return 1e300, np.zeros(theta.size)
        parts = draw.parts(spec)
        r = parts["r"]
        at = None
        if r is not None:

            def at(raw: np.ndarray, inst=inst):
                p = raw / raw.sum() if spec.participation == "weighted" else raw
                return replace(inst, p=p).participation(spec)

        try:
            rg = rate_gradient(
                inst.problem,
                spec.algorithm,
                inst.participation(spec),
                quantity=spec.quantity,
                lr=eta,
                local_steps=inst.local_steps,
                rule=spec.aggregation,
                global_lr=spec.global_lr,
                prox_mu=spec.prox_mu,
                options=spec.options or None,
                participation_at=at,
                p=r,
                tol=SCREEN_TOL,
                v0=self.vector,
            )
        except FedTheoryError:
            return 1e300, np.zeros(theta.size)
        self.vector = rg.vector
        ev = evaluate(spec, inst, exact=(rg.value, rg.method), constants=consts)
        ev.instance, ev.draw = None, draw
        self.seen.append(ev)
        if ev.objective == math.inf:
            raise _Stop
        if not math.isfinite(ev.objective):
            return 1e300, np.zeros(theta.size)
        c = ev.constants
        grads = constant_gradients(inst.problem)
        fixed = fixes_optima(spec)  # zeta2 and D2 are the class's: the optima do not move them
        if fixed:
            grads = {k: v for k, v in grads.items() if k not in ("zeta2", "D2")}
        names = [n for n in (*grads, "eta") if n in c and math.isfinite(c[n])]
        dr_consts = {}
        if r is not None:
            names += list(_P_CONSTANTS)
            dr_consts = _p_constant_gradients(spec, inst, r)
        g_x, g_c, lr_c = _partials(spec, c, rg.value, names)
        N, d = inst.n_clients, inst.dim
        H = np.asarray(inst.problem.H, dtype=np.float64)
        dH = g_x * rg.d_H
        dh = np.zeros((N, d))
        dr = np.zeros(N)
        if rg.d_p is not None:
            dr += g_x * rg.d_p
        # eta moves with the constants: its weight is the objective's own d/deta plus the
        # rate's d/deta through the exact value
        w_eta = g_c.get("eta", 0.0) + g_x * rg.d_lr
        for n in names:
            if n == "eta":
                continue
            w = g_c[n] + w_eta * lr_c.get(n, 0.0)
            if w == 0.0:
                continue
            if n in grads:
                gH, gh = grads[n]
                dH += w * gH
                dh += w * gh
            elif n in dr_consts:
                dr += w * dr_consts[n]
        # h_j = H_j x_j*: the linear terms follow the Hessians and the optima
        xs = parts["xs"]
        dH += 0.5 * (dh[:, :, None] * xs[:, None, :] + xs[:, :, None] * dh[:, None, :])
        dxs = None if fixed else np.einsum("nab,na->nb", H, dh)
        grad = draw.pullback(spec, dH, dxs, dr if r is not None else None)
        if not np.all(np.isfinite(grad)):  # a kink of the objective: no direction to follow
            grad = np.zeros(theta.size)
        return -ev.objective, -grad


def _p_constant_gradients(spec: BoundSpec, inst: Any, r: np.ndarray) -> dict[str, np.ndarray]:
    """d/dr of the participation constants, by forward differences (one model per client)."""
    names = _P_CONSTANTS

    def consts(raw: np.ndarray) -> dict:
        p = raw / raw.sum() if spec.participation == "weighted" else raw
        other = replace(inst, p=p)
        return instance_constants(
            other.problem,
            other.participation(spec),
            local_steps=inst.local_steps,
            rule=spec.aggregation,
        )

    c0 = consts(r)
    out = {n: np.zeros(r.size) for n in names}
    for i in range(r.size):  # one participation model per client
        h = 1e-7 * max(r[i], 1e-3)
        rr = r.copy()
        rr[i] += h
        c1 = consts(rr)
        for n in names:
            out[n][i] = (c1[n] - c0[n]) / h
    return out


#: Radii of the probe around a start, relative to the class's box (module docstring).
PROBE_RADII = (1e-3, 1e-2, 1e-1)


def _scales(spec: BoundSpec, draw: Draw) -> np.ndarray:
    """The size of the class's box along each entry of theta (1 for the free ones)."""
    out = np.ones(draw.theta.size)
    for k, (lo, hi) in enumerate(draw.bounds(spec)):
        if lo is not None and hi is not None:
            out[k] = hi - lo
    return out


def probe(spec: BoundSpec, start: Evaluation, rng: np.random.Generator, k: int) -> list[Evaluation]:
    """The neighbourhood of ``start`` at the radii :data:`PROBE_RADII` (relative to the box),
    along one random direction (seeded): a corner where the objective is flat outside a sliver
    (a bound false at client condition numbers between 1 and 1.01) is entered from the extreme
    next to it, where a gradient at a multiple eigenvalue says nothing."""
    base = start.draw
    lo_hi = np.array(
        [
            (lo if lo is not None else -np.inf, hi if hi is not None else np.inf)
            for lo, hi in base.bounds(spec)
        ]
    )
    u = rng.standard_normal(base.theta.size)
    u /= max(np.abs(u).max(), 1e-300)
    out = []
    for radius in PROBE_RADII:  # small to large
        theta = np.clip(base.theta + radius * _scales(spec, base) * u, lo_hi[:, 0], lo_hi[:, 1])
        ev = _safe_evaluate(
            spec, replace(base, theta=theta, label=f"probed from {base.label} ({k})")
        )
        out.append(ev)
    return out


def climb(
    spec: BoundSpec, start: Evaluation, budget: int, rng: np.random.Generator, k: int
) -> list[Evaluation]:
    """Ascent from ``start`` with ``budget`` oracle evaluations (module docstring): the probe
    around it, then from the best point L-BFGS-B with the exact gradient for per-round factors,
    then Nelder-Mead in random subspaces with what is left (all of it for the other
    quantities)."""
    seen = probe(spec, start, rng, k)
    budget -= len(seen)
    if max(e.objective for e in seen) == math.inf:
        return seen
    best = max([start, *seen], key=lambda e: e.objective)
    base = best.draw
    label = f"climbed from {start.draw.label} ({k})"
    if spec.quantity in GRADIENT_QUANTITIES and budget >= STEP_COST:
        fun = _Climber(spec, base, label, calls=budget // STEP_COST)
        try:
            minimize(
                fun,
                base.theta.copy(),
                jac=True,
                method="L-BFGS-B",
                bounds=base.bounds(spec),
                options={"maxfun": budget // STEP_COST, "maxiter": budget},
            )
        except _Stop:
            pass
        seen += fun.seen
        budget -= STEP_COST * len(fun.seen)
        if fun.seen and max(e.objective for e in fun.seen) == math.inf:
            return seen
    if budget > 0:
        best = max([start, *seen], key=lambda e: e.objective)
        seen += refine(spec, best, budget, rng, k, origin=start.draw.label)
    return seen


def refine(
    spec: BoundSpec,
    start: Evaluation,
    budget: int,
    rng: np.random.Generator,
    k: int,
    *,
    origin: str | None = None,
) -> list[Evaluation]:
    """Nelder-Mead on -objective in random subspaces around ``start`` (``budget`` evaluations);
    the instances are labelled "refined from ``origin`` (k)", ``origin`` the draw or extreme the
    ascent began at (default: ``start``'s own label)."""
    base = start.draw
    label = f"refined from {origin if origin is not None else base.label} ({k})"
    seen: list[Evaluation] = []
    x0 = base.theta.copy()
    best = start.objective
    scale = np.maximum(np.abs(x0), 0.5) * 0.3
    while budget > 0:
        dim = min(_SUBSPACE, x0.size)
        B = rng.standard_normal((x0.size, dim)) * scale[:, None]

        def f(t: np.ndarray, B=B, x0=x0) -> float:
            d = replace(base, theta=x0 + B @ t, label=label)
            ev = _safe_evaluate(spec, d)
            seen.append(ev)
            return (
                -ev.objective
                if np.isfinite(ev.objective)
                else (-1e300 if ev.objective > 0 else 1e300)
            )

        n_eval = min(budget, 6 * (dim + 1))
        before = len(seen)
        minimize(
            f,
            np.zeros(dim),
            method="Nelder-Mead",
            options={"maxfev": n_eval, "initial_simplex": np.vstack([np.zeros(dim), np.eye(dim)])},
        )
        budget -= len(seen) - before
        if len(seen) == before:
            break
        top = max(seen, key=lambda e: e.objective)
        if top.objective > best:
            best, x0 = top.objective, top.draw.theta.copy()
    return seen


def _starts(pool: list[Evaluation], count: int) -> list[Evaluation]:
    """The instances to climb from: half of them the best structured extremes (one per
    pattern), the rest the best random draws (one per discrete setting first)."""
    ok = [e for e in pool if e.draw is not None and e.objective > -math.inf]
    extreme = sorted(
        (e for e in ok if e.draw.label.startswith("extreme")), key=lambda e: -e.objective
    )
    drawn = sorted(
        (e for e in ok if not e.draw.label.startswith("extreme")), key=lambda e: -e.objective
    )

    def distinct(evs: list[Evaluation], key, n: int, refill: bool) -> list[Evaluation]:
        out, keys = [], set()
        for e in evs:
            if key(e) not in keys:
                keys.add(key(e))
                out.append(e)
        out = out[:n]
        if refill:
            out += [e for e in evs if all(e is not o for o in out)][: n - len(out)]
        return out

    half = (count + 1) // 2

    # extremes with one objective and one kappa, kappa_f and p_min are one problem up to scale
    # (identical isotropic clients at mu, at L or in between): one start among them
    def same(e: Evaluation) -> tuple:
        c = e.constants
        return tuple(
            round(v, 6) if math.isfinite(v) else v
            for v in (e.objective, c.get("kappa", 0.0), c.get("kappa_f", 0.0), c.get("p_min", 0.0))
        )

    out = distinct(extreme, same, half, refill=False)
    out += distinct(
        drawn, lambda e: (e.draw.N, e.draw.d, e.draw.K, e.draw.M), count - len(out), refill=True
    )
    return out


# -- the search ------------------------------------------------------------------------------------
def search(
    spec: BoundSpec, n: int, seed: int, workers: int, *, ascend: bool = True, report: Any = None
) -> tuple[list[Evaluation], dict]:
    """The three phases of the module docstring; returns every instance evaluated and what was
    spent (``draws``, ``structured``, ``refined`` evaluations, the :class:`Plan`).

    ``report``: a progress object (:func:`fedtheory.io.progress`, its ``total`` the planned
    evaluations, :func:`planned`) told of every evaluation as it finishes, the phase and the
    best instance so far in its postfix; the numbers do not depend on it."""
    p = plan(spec, n)
    structured = structured_draws(spec, p.structured)
    total = planned(spec, n, ascend=ascend)
    best: Evaluation | None = None
    started = time.perf_counter()

    def tell(phase: str, evs: Sequence[Evaluation] = (), k: int = 0) -> None:
        """The phase, the binding instance so far and the time left (the mean time of an
        evaluation so far times those left) in the postfix; then k more evaluations done."""
        nonlocal best
        if report is None:
            return
        for ev in evs:
            if ev.objective > -math.inf and (best is None or ev.objective > best.objective):
                best = ev
        text = phase
        if best is not None and spec.constant:
            text += f"; binding {spec.constant} {best.c:.6g} ({best.label})"
        elif best is not None:
            text += f"; worst ratio {best.ratio:.6g} ({best.label})"
        done = report.n + k
        if 0 < done < total:
            left = (time.perf_counter() - started) / done * (total - done)
            text += f"; about {duration(left)} left"
        report.set_postfix_str(text)
        if k > 0:
            report.update(k)

    t0 = time.perf_counter()
    phase = f"{n} random draws"
    tell(phase)
    evals = random_search(spec, n, seed, workers, lambda evs: tell(phase, evs, len(evs)))
    phase = f"{len(structured)} structured extremes"
    tell(phase)
    t1 = time.perf_counter()
    extremes = evaluate_draws(spec, structured, workers, lambda evs: tell(phase, evs, len(evs)))
    evals += extremes
    t2 = time.perf_counter()
    info: dict[str, Any] = {
        "draws": n,
        "structured": len(extremes),
        "refined": 0,
        "plan": p.__dict__,
    }
    if ascend and p.starts:
        rng = np.random.default_rng([seed, 1 << 30])
        for k, start in enumerate(_starts(evals, p.starts)):  # sequential ascents
            tell(f"ascent {k + 1} of {p.starts}")
            if start.objective == math.inf:
                tell(f"ascent {k + 1} of {p.starts}", k=p.per_start)
                continue  # already unbounded: nothing to climb
            seen = climb(spec, start, p.per_start, rng, k)
            info["refined"] += len(seen)
            evals.extend(seen)
            # the planned share of this start, whatever the climb spent of it
            tell(f"ascent {k + 1} of {p.starts} done", seen, k=p.per_start)
    if report is not None:  # the starts the pool did not offer
        tell("search done", k=total - report.n)
    info["phase_seconds"] = {
        "draws": t1 - t0,
        "structured": t2 - t1,
        "ascent": time.perf_counter() - t2,
    }
    return evals, info


def planned(spec: BoundSpec, n: int, *, ascend: bool = True) -> int:
    """The evaluations :func:`search` plans with ``n`` draws: the draws, the structured
    extremes and every ascent start's share (the unit of its ``report``)."""
    p = plan(spec, n)
    return n + len(structured_draws(spec, p.structured)) + (p.starts * p.per_start if ascend else 0)


def coverage(spec: BoundSpec, evals: list[Evaluation]) -> dict[str, Any]:
    """The range of every constant of :data:`COVERED` over the class instances the search
    evaluated that meet the condition (a named problem, outside the class, is left out),
    beside what the class allows where that is known."""
    pool = [
        e for e in evals if e.draw is not None and e.condition_met and e.defined and e.constants
    ]
    out: dict[str, Any] = {}
    for name in COVERED:
        vals = np.array([e.constants.get(name, math.nan) for e in pool], dtype=float)
        vals = vals[np.isfinite(vals)]
        if vals.size:
            out[name] = {"min": float(vals.min()), "max": float(vals.max())}
    cls = spec.instance_class
    if cls is not None:
        allowed = {
            "kappa": [1.0, cls.L / cls.mu],
            "kappa_f": [1.0, cls.L / cls.mu],
            "L_f": [cls.mu, cls.L],
            "mu_f": [cls.mu, cls.L],
        }
        if spec.participation == "bernoulli" and spec.p is None:
            allowed["p_min"] = list(cls.p_range)
        for name, rng in allowed.items():
            if name in out:
                out[name]["class"] = rng
    return out


def coverage_text(cov: dict[str, Any]) -> str:
    """One line: ``kappa_f 1-3.98 (class 1-4.05), p_min 0.05-0.93, ...``."""

    def g(v: float) -> str:
        return f"{v:.3g}"

    parts = []
    for name, r in cov.items():
        if r["min"] == r["max"]:
            text = f"{name} {g(r['min'])}"
        else:
            text = f"{name} {g(r['min'])}-{g(r['max'])}"
        if "class" in r:
            text += f" (class {g(r['class'][0])}-{g(r['class'][1])})"
        parts.append(text)
    return ", ".join(parts)
