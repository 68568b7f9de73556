"""Small helpers shared by the claim checks."""

from __future__ import annotations

import numpy as np

from fedtheory.analysis.stats import Comparison, Effect, SequentialPlan
from fedtheory.io import pyplot, save_figure
from fedtheory.verify.registry import Context
from fedtheory.verify.result import verdict_of


def fmt(x: float, digits: int = 3) -> str:
    """A number for the table: 3 significant digits, scientific when small or large."""
    x = float(x)
    if x == 0 or 1e-3 <= abs(x) < 1e4:
        return f"{x:.{digits}g}"
    return f"{x:.{max(digits - 1, 1)}e}"


def save(fig, path) -> str:
    """Save and close ``fig``; returns the path as a string."""
    plt = pyplot()
    fig.tight_layout()
    save_figure(fig, path, dpi=90)
    plt.close(fig)
    return str(path)


#: The ``test`` of a check without sampling error (closed forms, deterministic computations).
EXACT_TEST = "exact computation (no random draw): a tolerance on a deterministic quantity"


def interval(effect: Effect, signed: bool = False) -> str:
    """``estimate [low, high]`` (signed: with a + on positive numbers)."""
    f = (lambda v: f"{v:+.2f}") if signed else fmt
    if effect.estimate is None:
        return "-"
    return f"{f(effect.estimate)} [{f(effect.ci_low)}, {f(effect.ci_high)}]"


def plan(
    ctx: Context,
    quick: tuple[int, int],
    full: tuple[int, int],
    comparisons: int = 1,
    alpha: float = 0.05,
) -> SequentialPlan:
    """The tier's sequential plan: (block, budget) seeds for the quick and thorough tiers."""
    block, budget = ctx.pick(quick, full)
    return SequentialPlan(block, budget, alpha=alpha, comparisons=comparisons)


def ordered_text(comp: Comparison, ahead: str, behind: str, what: str, unit: str) -> str:
    """``"A <what> x +- h <unit> before B (k of n seeds)"``, the sentence of a paired comparison
    whose values are oriented so that > 0 means ``ahead`` leads; the order flips when the
    estimate is negative. ``what`` is e.g. "reaches 1e-10"."""
    e = comp.effect
    first, second, k = (ahead, behind, comp.n_positive)
    est, half = e.estimate, e.halfwidth
    if est < 0:
        first, second, k, est = behind, ahead, comp.n_negative, -est
    hw = "inf" if not np.isfinite(half) else fmt(half)
    return f"{first} {what} {fmt(est)} +- {hw} {unit} {second} ({k} of {comp.n} seeds)"


def decisive(effects: dict, verdict: str, *, null: float = 0.0, claimed: int = 1):
    """The key of the part behind a combined verdict (the effect a row reports): among the parts
    whose own verdict is ``verdict`` (all parts when none is), the one whose estimate lies
    closest to ``null``: the narrowest win, the mildest failure, the most undecided."""
    keys = [k for k, e in effects.items() if verdict_of(e, null=null, claimed=claimed) == verdict]
    keys = keys or list(effects)

    def distance(k) -> float:
        e = effects[k].estimate
        return float("inf") if e is None else abs(e - null)

    return min(keys, key=distance)
