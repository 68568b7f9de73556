"""Statistics behind the verdicts: effects with confidence intervals, paired sequential comparisons.

A verdict of ``fedtheory verify`` reads a confidence interval (docs/claims.md): an interval that
excludes the null value on the claimed side supports the claim, one that excludes it on the
other side contradicts it, and an interval that contains it decides nothing. This module holds
the pieces, so every claim computes its intervals the same way:

- :class:`Effect`: an estimate, its interval and its unit (an exact measurement has a
  degenerate interval); :meth:`Effect.side` says which side of a null value it lies on, and
  :meth:`Effect.within` whether it lies inside an equivalence margin.
- :func:`mean_interval`: the Student-t interval of a mean over seeds. For paired per-seed
  differences (both algorithms run with the same seed ids, so they see the same participation
  draws, step masks and gradient noise: :func:`fedtheory.simulation.simulate`) it is the paired
  t-test's interval.
- :func:`jackknife_interval`: a delete-one-seed jackknife standard error with a Student-t
  quantile (n - 1 degrees of freedom) for a smooth function of all seeds (e.g. the exponent of
  the seed-mean metric in K). For a mean it is exactly :func:`mean_interval`.
- :class:`SequentialPlan` and :func:`sequential`: seeds are added in blocks of disjoint seed ids
  until every comparison's interval excludes zero or the budget is spent. The error rate
  ``alpha`` is split evenly over the planned looks and the comparisons of one result
  (Bonferroni), so the family of all intervals a result ever looks at covers with probability
  at least 1 - alpha.

References: Efron and Tibshirani 1993, An Introduction to the Bootstrap, Ch. 11 (jackknife);
Jennison and Turnbull 2000, Group Sequential Methods, Ch. 1 and 7 (repeated looks; the
Bonferroni split is the simplest valid alpha-spending rule).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from fedtheory.errors import AssumptionError

__all__ = [
    "Comparison",
    "Effect",
    "SequentialPlan",
    "jackknife_interval",
    "mean_interval",
    "sequential",
]


@dataclass(frozen=True)
class Effect:
    """An effect: estimate, two-sided confidence interval and unit.

    Attributes
    ----------
    estimate : float or None
    ci_low, ci_high : float or None
        The interval (equal to ``estimate`` for an exact measurement; ``-inf``/``inf`` when the
        data cannot bound it, e.g. a single seed of a random experiment).
    unit : str
        What the numbers measure, e.g. "rounds (baseline - FOCUS)".
    confidence : float or None
        Two-sided level of the interval (1.0 for an exact measurement).
    n : int or None
        Seeds behind it (None: not a sample).
    """

    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    unit: str
    confidence: float | None = None
    n: int | None = None

    @classmethod
    def exact(cls, value: float, unit: str) -> Effect:
        """A measurement without sampling error (a closed form, a deterministic run)."""
        v = float(value)
        return cls(v, v, v, unit, 1.0, None)

    @classmethod
    def none(cls, unit: str = "") -> Effect:
        """No effect (e.g. a formula the paper does not state)."""
        return cls(None, None, None, unit, None, None)

    def side(self, null: float = 0.0, floor: float = 0.0) -> int:
        """+1 when the interval lies above ``null``, -1 below, 0 when it contains it (or is
        missing). With ``floor`` > 0 the interval must clear [null - floor, null + floor]: an
        effect within the computation's accuracy of the null value is a tie
        (:func:`fedtheory.analysis.accuracy.absolute_floor`)."""
        if self.ci_low is None or self.ci_high is None:
            return 0
        if self.ci_low > null + floor:
            return 1
        if self.ci_high < null - floor:
            return -1
        return 0

    def within(self, low: float, high: float) -> int:
        """+1 when the interval lies inside [low, high], -1 when it lies wholly outside it (it
        does not meet [low, high]), 0 otherwise: an equivalence test (two one-sided tests)."""
        if self.ci_low is None or self.ci_high is None:
            return 0
        if low <= self.ci_low and self.ci_high <= high:
            return 1
        if self.ci_high < low or self.ci_low > high:
            return -1
        return 0

    @property
    def halfwidth(self) -> float:
        if self.ci_low is None or self.ci_high is None:
            return float("nan")
        return 0.5 * (self.ci_high - self.ci_low)

    def shifted(self, by: float, unit: str | None = None) -> Effect:
        """The same effect minus ``by`` (e.g. a measured exponent minus the stated one)."""
        f = lambda v: None if v is None else v - by  # noqa: E731
        return Effect(
            f(self.estimate),
            f(self.ci_low),
            f(self.ci_high),
            unit or self.unit,
            self.confidence,
            self.n,
        )

    def text(self, digits: int = 3) -> str:
        """``estimate [low, high]`` with ``digits`` significant digits."""

        def g(v: float | None) -> str:
            return "-" if v is None else f"{v:.{digits}g}"

        if self.estimate is None:
            return "-"
        if self.ci_low == self.ci_high == self.estimate:
            return g(self.estimate)
        return f"{g(self.estimate)} [{g(self.ci_low)}, {g(self.ci_high)}]"

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract's ``effect``: estimate, ci_low, ci_high, unit (and the level)."""

        def num(v: float | None) -> float | None:
            return None if v is None or not math.isfinite(v) else float(v)

        return {
            "estimate": num(self.estimate),
            "ci_low": num(self.ci_low),
            "ci_high": num(self.ci_high),
            "unit": self.unit,
            "confidence": self.confidence,
        }


def _check_level(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise AssumptionError(f"confidence must lie in (0, 1), got {confidence}")
    return float(confidence)


def mean_interval(values: Any, confidence: float, unit: str) -> Effect:
    """Student-t interval of the mean of ``values`` (one per seed; NaN not allowed).

    With a single value the interval is unbounded (``-inf``, ``inf``): one seed of a random
    experiment says nothing about its spread. Identical values give a degenerate interval.

    Raises
    ------
    AssumptionError
        An empty or non-finite sample, or a level outside (0, 1).
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    _check_level(confidence)
    if v.size == 0 or not np.all(np.isfinite(v)):
        raise AssumptionError(f"a mean interval needs finite values, got {v.size} ({v[:5]})")
    m = float(v.mean())
    if v.size == 1:
        return Effect(m, -math.inf, math.inf, unit, confidence, 1)
    se = float(v.std(ddof=1) / math.sqrt(v.size))
    h = float(stats.t.ppf(0.5 + confidence / 2, v.size - 1)) * se
    return Effect(m, m - h, m + h, unit, confidence, int(v.size))


def jackknife_interval(
    statistic: Callable[[np.ndarray], float], data: Any, confidence: float, unit: str
) -> Effect:
    """Delete-one-seed jackknife interval of ``statistic(data)``; ``data`` has seeds first.

    The standard error is sqrt((n - 1)/n sum_i (theta_(i) - theta_bar)^2) over the n
    leave-one-out values theta_(i), the interval theta_hat +- t_{n-1} se (Efron and Tibshirani
    1993, Ch. 11). For ``statistic = mean`` it equals :func:`mean_interval`.

    Raises
    ------
    AssumptionError
        Fewer than 2 seeds, a non-finite statistic, or a level outside (0, 1).
    """
    x = np.asarray(data, dtype=np.float64)
    _check_level(confidence)
    n = x.shape[0]
    if n < 2:
        raise AssumptionError(f"a jackknife needs at least 2 seeds, got {n}")
    theta = float(statistic(x))
    loo = np.array([statistic(np.delete(x, i, axis=0)) for i in range(n)], dtype=np.float64)
    if not (math.isfinite(theta) and np.all(np.isfinite(loo))):
        raise AssumptionError("the jackknifed statistic is not finite")
    se = float(math.sqrt((n - 1) / n * np.sum((loo - loo.mean()) ** 2)))
    h = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * se
    return Effect(theta, theta - h, theta + h, unit, confidence, int(n))


@dataclass(frozen=True)
class SequentialPlan:
    """Blocks of seeds added until a decision or the budget (the tier's sequential plan).

    Look j (j = 1, 2, ...) adds seed ids ``(j - 1) * block .. j * block - 1`` of the claim's
    base seed, so every look adds fresh seeds and every algorithm of a comparison runs the same
    ones. Each interval is computed at the level ``1 - alpha / (looks * comparisons)``: the
    Bonferroni split of ``alpha`` over every interval the result may look at.

    Attributes
    ----------
    block : int
        Seeds per look (>= 2: a t interval needs two).
    max_seeds : int
        The budget (a multiple of ``block`` is not required: the last block is shorter).
    alpha : float
        Family-wise error rate of one result (0.05).
    comparisons : int
        How many intervals the result reads at each look.
    """

    block: int
    max_seeds: int
    alpha: float = 0.05
    comparisons: int = 1

    def __post_init__(self) -> None:
        if int(self.block) < 2 or int(self.max_seeds) < int(self.block):
            raise AssumptionError(
                f"a sequential plan needs block >= 2 and max_seeds >= block, got block "
                f"{self.block}, max_seeds {self.max_seeds}"
            )
        if not 0 < self.alpha < 1 or int(self.comparisons) < 1:
            raise AssumptionError(
                f"alpha must lie in (0, 1) and comparisons >= 1, got {self.alpha}, "
                f"{self.comparisons}"
            )

    @property
    def looks(self) -> int:
        return -(-int(self.max_seeds) // int(self.block))

    @property
    def level(self) -> float:
        """Two-sided confidence level of every interval."""
        return 1.0 - self.alpha / (self.looks * self.comparisons)

    def blocks(self) -> list[list[int]]:
        """The seed ids of each look, in order."""
        b, n = int(self.block), int(self.max_seeds)
        return [list(range(i, min(i + b, n))) for i in range(0, n, b)]

    def describe(self, test: str = "paired t") -> str:
        """The test as the report states it."""
        return (
            f"{test}, two-sided {100 * self.level:.4g}% intervals (alpha {self.alpha:g} split "
            f"over {self.looks} look(s) x {self.comparisons} comparison(s), Bonferroni); seeds "
            f"added in blocks of {self.block} up to {self.max_seeds} until the interval "
            "excludes 0"
        )


@dataclass
class Comparison:
    """One paired comparison of a sequential run.

    Attributes
    ----------
    name : str
    values : ndarray
        The per-seed statistic, oriented so that > 0 supports the claim.
    seed_ids : list of int
    effect : Effect
        The interval at the last look this comparison took part in.
    looks : int
    """

    name: str
    values: np.ndarray
    seed_ids: list
    effect: Effect
    looks: int
    history: list = field(default_factory=list)
    confirmation: Effect | None = None
    confirmation_seed_ids: list = field(default_factory=list)

    @property
    def stopped_early(self) -> bool:
        """Decided at a look before the plan's last: the estimate at the stop is selected by the
        stopping rule (inflated away from 0); ``confirmation`` holds fresh seeds' estimate."""
        return self.confirmation is not None

    @property
    def side(self) -> int:
        """+1: the interval lies above 0 (supports the claim); -1: below; 0: undecided."""
        return self.effect.side(0.0)

    @property
    def censored(self) -> int:
        """Seeds without a value (e.g. a target not reached): they end the comparison."""
        return int(np.sum(~np.isfinite(self.values)))

    @property
    def n_positive(self) -> int:
        return int(np.sum(self.values > 0))

    @property
    def n_negative(self) -> int:
        return int(np.sum(self.values < 0))

    @property
    def n(self) -> int:
        return int(self.values.size)


def sequential(
    draw: Callable[[list, tuple], dict],
    names: Sequence[str],
    plan: SequentialPlan,
    *,
    unit: str,
    decided: Callable[[str, Effect], bool] | None = None,
    stop: Callable[[dict], bool] | None = None,
    confirm: bool = False,
) -> dict[str, Comparison]:
    """Run paired comparisons with sequential sampling (:class:`SequentialPlan`).

    Parameters
    ----------
    draw : callable
        ``draw(seed_ids, active)`` runs the experiment on those seed ids for the comparisons
        named in ``active`` and returns ``{name: per-seed values}`` (one value per seed id,
        oriented so that > 0 supports the claim).
    names : sequence of str
        The comparisons.
    plan : SequentialPlan
    unit : str
        The unit of the values.
    decided : callable, optional
        ``decided(name, effect)``: whether a comparison needs no more seeds (default: its
        interval excludes 0). A decided comparison is not drawn again. A comparison that gets a
        non-finite value (e.g. a target not reached within the horizon) ends there, undecided:
        its effect has no estimate.
    stop : callable, optional
        ``stop({name: Comparison})``: end before the budget although some comparisons are
        undecided (e.g. one comparison already contradicts a claim that needs all of them).
    confirm : bool
        After the last look, draw one fresh block of ``plan.block`` seed ids (``plan.max_seeds``
        onwards: disjoint from every look) for the comparisons decided before the plan's last
        look, and store their 95% Student-t effect in ``Comparison.confirmation``. Stopping when
        an interval first excludes 0 selects an estimate that lies far from 0 (the effect at a
        sequential stop is biased away from the null; Jennison and Turnbull 2000, Ch. 8); the
        fresh block's estimate is not selected by the rule. The decision itself is unchanged.

    Returns
    -------
    dict of str to Comparison
    """
    decided = decided or (lambda name, e: e.side(0.0) != 0)
    values: dict[str, list] = {n: [] for n in names}
    ids: dict[str, list] = {n: [] for n in names}
    looks = dict.fromkeys(names, 0)
    effects: dict[str, Effect] = {}
    history: dict[str, list] = {n: [] for n in names}
    active = list(names)
    for block in plan.blocks():
        got = draw(list(block), tuple(active))
        for n in active:
            v = np.asarray(got[n], dtype=np.float64).ravel()
            if v.size != len(block):
                raise AssumptionError(f"draw returned {v.size} values for {len(block)} seeds")
            values[n].extend(v.tolist())
            ids[n].extend(block)
            looks[n] += 1
            if np.all(np.isfinite(values[n])):
                effects[n] = mean_interval(values[n], plan.level, unit)
            else:
                effects[n] = Effect(None, None, None, unit, plan.level, len(values[n]))
            history[n].append((len(values[n]), effects[n].ci_low, effects[n].ci_high))
        active = [
            n for n in active if effects[n].estimate is not None and not decided(n, effects[n])
        ]
        current = {
            n: Comparison(n, np.asarray(values[n]), list(ids[n]), effects[n], looks[n], history[n])
            for n in names
        }
        if not active or (stop is not None and stop(current)):
            break
    if confirm:
        _confirm(draw, current, plan, unit)
    return current


def _confirm(draw: Callable, comps: dict[str, Comparison], plan: SequentialPlan, unit: str) -> None:
    """Fresh seeds for the comparisons decided before the plan's last look (``sequential``'s
    ``confirm``)."""
    early = [n for n, c in comps.items() if c.looks < plan.looks and c.side != 0]
    if not early:
        return
    ids = list(range(int(plan.max_seeds), int(plan.max_seeds) + int(plan.block)))
    got = draw(ids, tuple(early))
    for n in early:
        v = np.asarray(got[n], dtype=np.float64).ravel()
        if v.size != len(ids):
            raise AssumptionError(f"draw returned {v.size} values for {len(ids)} seeds")
        if np.all(np.isfinite(v)):
            comps[n].confirmation = mean_interval(v, 0.95, unit)
        else:
            comps[n].confirmation = Effect(None, None, None, unit, 0.95, int(v.size))
        comps[n].confirmation_seed_ids = ids
