"""The worst-case search of a bound over its instance class.

:func:`random_search` draws class instances (in worker processes: instance i depends only on
(seed, i)); :func:`refine` refines an instance by Nelder-Mead (:func:`scipy.optimize.minimize`)
in random 6-dimensional subspaces of the instance parameters (client spectra, rotations,
optima, participation weights).
"""

from __future__ import annotations

import math
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace

import numpy as np
from scipy.optimize import minimize

from fedtheory.bounds.evaluate import Evaluation, evaluate
from fedtheory.bounds.instances import Draw, draw_instance
from fedtheory.bounds.spec import BoundSpec
from fedtheory.errors import FedTheoryError

#: Random draws of the default search (``fedtheory bound --search``).
DEFAULT_SEARCH = 200
#: Draws refined by Nelder-Mead.
REFINE_STARTS = 3
_SUBSPACE = 6


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
    inst = draw.instance(spec)
    try:
        ev = evaluate(spec, inst, verify=False)
    except FedTheoryError as exc:  # e.g. ARPACK did not converge on a degenerate draw
        ev = Evaluation(math.nan, math.nan, False, math.nan, math.nan, None, -math.inf,
                        inst.sizes(), f"{inst.label} (not evaluated: {exc})", {},
                        defined=False, instance=inst)  # fmt: skip
    ev.instance = None  # rebuilt from the draw when needed (keeps worker results small)
    ev.draw = draw
    return ev


def _spec_worker(spec_dict: dict, seed: int, ids: list[int]) -> list[Evaluation]:
    spec = BoundSpec.from_dict(spec_dict)
    return _evaluate_draws(spec, seed, ids)


def random_search(spec: BoundSpec, n: int, seed: int, workers: int) -> list[Evaluation]:
    ids = list(range(n))
    if workers <= 1 or n < 8:
        return _evaluate_draws(spec, seed, ids)
    chunks = [ids[k::workers] for k in range(workers)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futs = [pool.submit(_spec_worker, spec.to_dict(), seed, c) for c in chunks]
        parts = [f.result() for f in futs]
    out: list[Evaluation | None] = [None] * n
    for chunk, evs in zip(chunks, parts, strict=True):
        for i, ev in zip(chunk, evs, strict=True):
            out[i] = ev
    return out  # type: ignore[return-value]


def refine(spec: BoundSpec, start: Evaluation, budget: int, rng: np.random.Generator,
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
