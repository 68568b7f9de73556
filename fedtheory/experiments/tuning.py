"""Hyper-parameter tuning whose chosen value is interior: a grid that extends at its edge.

A comparison between tuned algorithms is only as fair as the tuning: a value chosen at the
grid's edge says the algorithm's best lies beyond the grid, and a verdict against it would
judge the grid, not the algorithm. :func:`tune_grid` evaluates a product grid, and while the
best point lies on the edge of an axis it adds the next value beyond that edge (the axis's own
geometric step) and evaluates it against every value of the other axes, until the best point is
interior on every axis, or a stated hard limit of the axis is reached (``low``/``high``: e.g. a
server step of exactly 1 for FedAvg), or the extension budget is spent. With ``refine`` it then
bisects the gaps next to the best point until neighbouring values differ by at most that ratio,
so that an optimum lying between two coarse grid values is not missed by the grid's step (a
coarse grid can favour the algorithm whose optimum happens to sit on it). The result says which,
per axis, so a claim's row can report "interior", "at the hard limit" or "edge: budget spent".

The scores are the caller's (lower is better; a tuple compares lexicographically, e.g.
(median hours to the target, median final metric)); they must come from tuning seeds or a
validation split, never from what is evaluated afterwards.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedtheory.errors import AssumptionError

__all__ = ["Axis", "GridTuning", "tune_grid"]

INTERIOR = "interior"


@dataclass(frozen=True)
class Axis:
    """One tuned hyper-parameter.

    Attributes
    ----------
    name : str
    values : tuple of float
        The initial grid (>= 2 distinct positive values, geometric spacing expected).
    low, high : float, optional
        Hard limits (inclusive): the grid never extends past them.
    factor : float, optional
        The extension step (default: the ratio of the initial grid's last two values).
    """

    name: str
    values: tuple
    low: float | None = None
    high: float | None = None
    factor: float | None = None

    def __post_init__(self) -> None:
        v = sorted(set(float(x) for x in self.values))
        if len(v) < 2 or v[0] <= 0:
            raise AssumptionError(
                f"axis {self.name!r} needs >= 2 distinct positive values, got {self.values}"
            )
        if self.factor is not None and self.factor <= 1:
            raise AssumptionError(f"axis {self.name!r}: the factor must be > 1, got {self.factor}")

    @property
    def step(self) -> float:
        v = sorted(set(float(x) for x in self.values))
        return float(self.factor) if self.factor else v[-1] / v[-2]


@dataclass
class GridTuning:
    """The outcome of :func:`tune_grid`.

    Attributes
    ----------
    best : dict
        Axis name -> chosen value.
    score : Any
        The best score.
    scores : list of (dict, score)
        Every evaluated point, in evaluation order.
    tried : dict
        Axis name -> sorted values tried.
    status : dict
        Axis name -> ``"interior"``, ``"at the hard limit low=..."`` (or high), or
        ``"grid's edge: extension budget spent"``.
    extensions : int
        How many values were added beyond the initial grid.
    refinements : int
        How many values were added between tried ones next to the best (``refine``).
    """

    best: dict
    score: Any
    scores: list = field(default_factory=list)
    tried: dict = field(default_factory=dict)
    status: dict = field(default_factory=dict)
    extensions: int = 0
    refinements: int = 0

    @property
    def interior(self) -> bool:
        """True when the chosen value is interior on every axis."""
        return all(s == INTERIOR for s in self.status.values())

    @property
    def decisive(self) -> bool:
        """True when every axis is interior or at a stated hard limit (not a spent budget)."""
        return all(s == INTERIOR or s.startswith("at the hard limit") for s in self.status.values())

    def describe(self) -> str:
        """``name value (status)`` per axis."""
        return ", ".join(f"{k} {self.best[k]:g} ({self.status[k]})" for k in self.best)

    def to_dict(self) -> dict:
        return {
            "best": dict(self.best),
            "score": self.score,
            "tried": {k: list(v) for k, v in self.tried.items()},
            "status": dict(self.status),
            "extensions": self.extensions,
            "refinements": self.refinements,
            "scores": [{"point": dict(p), "score": s} for p, s in self.scores],
        }


def _clean(score: Any) -> Any:
    """NaN (a diverged run) scores as +inf, so it is never chosen."""
    if isinstance(score, tuple):
        return tuple(_clean(s) for s in score)
    s = float(score)
    return math.inf if math.isnan(s) else s


def _beyond(axis: Axis, v: float, vals: list) -> float | None:
    """The next value past the edge the best point ``v`` sits on (None: interior, or the edge
    is a hard limit); a step that would cross a hard limit stops at the limit."""
    if v == vals[0] and (axis.low is None or v > axis.low):
        return v / axis.step if axis.low is None else max(v / axis.step, axis.low)
    if v == vals[-1] and (axis.high is None or v < axis.high):
        return v * axis.step if axis.high is None else min(v * axis.step, axis.high)
    return None


def tune_grid(
    score: Callable[[dict], Any],
    axes: Sequence[Axis],
    *,
    max_extensions: int = 8,
    refine: float | None = None,
    max_refinements: int = 8,
) -> GridTuning:
    """Minimise ``score(point)`` over a grid that extends until the best point is interior.

    Parameters
    ----------
    score : callable
        ``score({name: value, ...})`` -> a number or a tuple (lower is better; NaN counts as
        +inf). Ties keep the point evaluated first.
    axes : sequence of Axis
    max_extensions : int
        The most values added beyond the initial grids, over all axes (the budget).
    refine : float, optional
        Once the best point is found, bisect (geometrically) the gaps next to it on each axis,
        the other axes at their best values, until the tried values next to the best differ by
        at most this ratio (e.g. 1.5): an optimum between two coarse grid values is not missed
        by a factor of the grid's step. At most ``max_refinements`` values added.

    Returns
    -------
    GridTuning
    """
    if not axes:
        raise AssumptionError("tune_grid needs at least one axis")
    names = [a.name for a in axes]
    if len(set(names)) != len(names):
        raise AssumptionError(f"axis names must differ, got {names}")
    tried = {a.name: sorted(set(float(x) for x in a.values)) for a in axes}
    seen: dict[tuple, Any] = {}
    order: list[tuple] = []

    def evaluate(points) -> None:
        for p in points:
            if p not in seen:
                seen[p] = _clean(score(dict(zip(names, p, strict=True))))
                order.append(p)

    evaluate(itertools.product(*(tried[n] for n in names)))
    extensions = 0
    while True:
        best = min(order, key=lambda p: seen[p])  # min keeps the first of equal scores
        grow = [
            (j, new)
            for j, a in enumerate(axes)
            if (new := _beyond(a, best[j], tried[a.name])) is not None
        ]
        if not grow or extensions >= max_extensions:
            break
        for j, new in grow:
            if extensions >= max_extensions:
                break
            tried[names[j]] = sorted({*tried[names[j]], new})
            extensions += 1
            evaluate(itertools.product(*(tried[n] if n != names[j] else [new] for n in names)))
    refinements = 0
    while refine is not None and refinements < max_refinements:
        best = min(order, key=lambda p: seen[p])
        added = False
        for j, a in enumerate(axes):
            v, vals = best[j], tried[a.name]
            lower = [x for x in vals if x < v]
            upper = [x for x in vals if x > v]
            for nb in ([max(lower)] if lower else []) + ([min(upper)] if upper else []):
                if max(v, nb) / min(v, nb) > refine and refinements < max_refinements:
                    mid = float(np.sqrt(v * nb))
                    tried[a.name] = sorted({*tried[a.name], mid})
                    refinements += 1
                    added = True
                    evaluate([tuple(mid if k == j else best[k] for k in range(len(axes)))])
            if added:
                break  # re-read the best point before refining further
        if not added:
            break
    best = min(order, key=lambda p: seen[p])
    status = {}
    for j, a in enumerate(axes):
        v, vals = best[j], tried[a.name]
        if vals[0] < v < vals[-1]:
            status[a.name] = INTERIOR
        elif v == vals[0] and a.low is not None and v <= a.low:
            status[a.name] = f"at the hard limit low={a.low:g}"
        elif v == vals[-1] and a.high is not None and v >= a.high:
            status[a.name] = f"at the hard limit high={a.high:g}"
        else:
            status[a.name] = "grid's edge: extension budget spent"
    return GridTuning(
        best=dict(zip(names, best, strict=True)),
        score=seen[best],
        scores=[(dict(zip(names, p, strict=True)), seen[p]) for p in order],
        tried={n: tuple(v) for n, v in tried.items()},
        status=status,
        extensions=extensions,
        refinements=refinements,
    )
