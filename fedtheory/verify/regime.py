"""Reading O(.) claims as the papers state them: the regime check and the shape test.

An O(.) rate is an upper bound that holds in the regime the theorem names (docs/claims.md,
"Reading O(.) claims"). A claim such as 000 Cor. 4.7, (1/R) sum_r E||grad f(x_r)||^2 =
O(1/sqrt(R K M)) for R >= K M, is therefore read in two steps, both fixed before measuring:

1. **The regime** (:func:`r_regime`). The run must meet the corollary's condition on R (named
   by the caller), and the metric must fall with R as the bound says: the exponent of the
   metric in R (seed-mean metric at R/2 and R, delete-one-seed jackknife interval) lies below 0
   (it falls) *and* its estimate lies at or below half the bound's exponent (-1/4 for a bound
   R^(-1/2): nearer the bound's rate than a flat metric's 0). A metric that does not fall with R
   is not in the regime where the leading term dominates: what it does in K says nothing about
   the bound, and the claim is ``inconclusive`` with the reason "regime not reached", never
   ``fails``. A run whose exponent falls (interval below 0) but whose interval contains the
   threshold half the bound's exponent is **at the threshold's edge**: whether it is in the
   regime is not decided by these seeds, and a row with a reading at the edge is
   ``inconclusive`` ("regime at its threshold's edge"), whatever its other readings say; the
   thorough tier's seeds narrow the interval and may decide it (:func:`rate_verdict`).
2. **The shape** (:func:`shape_test`). Inside the regime the stated shape with its other terms,
   a x^p + b with a, b >= 0 (b stands for the terms that do not move with x at this R), is
   fitted to the seed means by non-negative least squares in relative terms. The data
   contradict the shape when (i) the log-slope of the metric in x leaves the range the shape
   allows (above 0 for p < 0: the metric grows where the bound says it falls; above p for
   p > 0: it grows faster than x^p), or (ii) the ratio metric / fitted shape grows
   significantly with x (the slope of log(metric / shape) on log x above 0: the metric falls
   more slowly than any a x^p + b). Each interval is a delete-one-seed jackknife (Student-t),
   at level 1 - alpha/2 (Bonferroni over the two tests).

Every side of an interval is read with an absolute floor at the simulation's accuracy
(:func:`slope_floor`, :func:`fedtheory.analysis.accuracy.absolute_floor`): a metric that does
not move with x in exact arithmetic has a log-slope of a few rounding units of either sign,
which must not decide.

A fitted shape is a description, not a constant of the paper: no theorem here states its
constants (docs/stated-bounds.md), so ``a`` and ``b`` are reported as free constants.

References: Efron and Tibshirani 1993, Ch. 11 (jackknife); Lawson and Hanson 1974, Ch. 23
(non-negative least squares; here with two columns, solved by enumerating the active set).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fedtheory.analysis.accuracy import absolute_floor
from fedtheory.analysis.stats import Effect, jackknife_interval
from fedtheory.errors import AssumptionError
from fedtheory.experiments.local_steps import gradient_curves, horizon_violations
from fedtheory.verify.result import FAILS, HOLDS, INCONCLUSIVE, unanimous

__all__ = [
    "REGIME_AT_EDGE",
    "REGIME_NOT_REACHED",
    "RateRead",
    "Regime",
    "ShapeTest",
    "log_slope",
    "nonnegative_shape",
    "r_regime",
    "rate_text",
    "rate_verdict",
    "read_rate",
    "shape_test",
    "slope_floor",
]

#: The reason an O(.) claim is ``inconclusive`` outside its regime.
REGIME_NOT_REACHED = "regime not reached"
#: The reason an O(.) row is ``inconclusive`` when a reading's regime is at its threshold's edge.
REGIME_AT_EDGE = "regime at its threshold's edge"


def slope_floor(x, steps: int = 1) -> float:
    """The accuracy of a least-squares slope of log(metric) on log x when each metric is
    computed in ``steps`` rounding steps: every log(metric) is accurate to
    ``absolute_floor(1, steps=steps)`` (the log of a value with relative error delta moves by
    delta), and the slope sum_i w_i log m_i moves by at most that times sum_i |w_i|."""
    lx = np.log(np.asarray(x, dtype=np.float64))
    d = lx - lx.mean()
    w = d / float(d @ d)
    return absolute_floor(1.0, steps=max(int(steps), 1)) * float(np.abs(w).sum())


def _points(values) -> list[np.ndarray]:
    """Per grid point, seeds first: a list of (seeds,) metrics or (seeds, R_i) curves (the
    horizons may differ), or one (seeds, points[, R]) array split along axis 1."""
    if isinstance(values, list | tuple):
        pts = [np.asarray(v, dtype=np.float64) for v in values]
    else:
        arr = np.asarray(values, dtype=np.float64)
        pts = [arr[:, j] for j in range(arr.shape[1])]
    n = {p.shape[0] for p in pts}
    if len(n) != 1:
        raise AssumptionError(f"every grid point needs the same seeds, got counts {sorted(n)}")
    return pts


def _metric(pts: list[np.ndarray], idx: np.ndarray, stat) -> np.ndarray:
    """The metric per grid point over the seeds ``idx``: the seed mean, then ``stat`` over the
    rounds for curves (``stat(E[curve])``, e.g. min_r E||grad f(x_r)||^2)."""
    out = []
    for p in pts:
        m = np.nanmean(p[idx], axis=0)
        out.append(float(stat(m) if stat is not None else m))
    return np.array(out)


def _jackknife(fn, pts: list[np.ndarray], confidence: float, unit: str) -> Effect:
    """Delete-one-seed jackknife of ``fn(seed indices)`` (the same seeds at every point)."""
    return jackknife_interval(
        lambda idx: fn(idx.astype(int)), np.arange(pts[0].shape[0]), confidence, unit
    )


def log_slope(values, x, confidence: float, unit: str, stat=None) -> Effect:
    """Slope of log(metric) on log x with a delete-one-seed jackknife interval.

    ``values``: per grid point the per-seed metric (seeds,), or the per-seed curves
    (seeds, R_i) reduced by ``stat`` (e.g. a window mean) after the seed mean: the exponent of
    ``stat(E[curve])``; a list, or one (seeds, points[, R]) array. The same seed ids at every
    point.
    """
    pts = _points(values)
    lx = np.log(np.asarray(x, dtype=np.float64))
    return _jackknife(
        lambda i: float(np.polyfit(lx, np.log(_metric(pts, i, stat)), 1)[0]), pts, confidence, unit
    )


def nonnegative_shape(x, y, power: float) -> tuple[float, float]:
    """(a, b) >= 0 minimising sum ((y - a x^p - b) / y)^2: the shape a x^p + b fitted in
    relative terms (two columns: the best of the unconstrained fit, if feasible, and the fits
    on one column each)."""
    xv, yv = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if np.any(yv <= 0) or not np.all(np.isfinite(yv)):
        raise AssumptionError("the shape fit needs positive finite metrics")
    w = 1.0 / yv
    A = np.stack([xv**power * w, w], axis=1)
    t = np.ones_like(yv)  # y / y
    best, err = (0.0, 0.0), float(t @ t)
    cands = []
    sol, *_ = np.linalg.lstsq(A, t, rcond=None)
    if np.all(sol >= 0):
        cands.append((float(sol[0]), float(sol[1])))
    for j in (0, 1):
        col = A[:, j]
        c = max(0.0, float(col @ t) / float(col @ col))
        cands.append((c, 0.0) if j == 0 else (0.0, c))
    for a, b in cands:
        r = t - A @ np.array([a, b])
        e = float(r @ r)
        if e < err:
            best, err = (a, b), e
    return best


@dataclass
class Regime:
    """Whether a run is in the regime of an O(.) bound (module docstring, step 1).

    Attributes
    ----------
    reached : bool
    reason : str
        Empty when reached; else what is missing ("regime not reached: ...").
    exponent : Effect or None
        The metric's exponent in R (None when only the threshold was checked).
    violations : list of str
        Conditions on R the run violates (named with their source).
    edge : bool
        The exponent falls, but its interval contains the threshold (half the bound's
        exponent): ``reached`` follows the estimate, and the seeds do not decide it.
    """

    reached: bool
    reason: str
    exponent: Effect | None
    violations: list = field(default_factory=list)
    edge: bool = False

    def to_dict(self) -> dict:
        return {
            "reached": self.reached,
            "reason": self.reason,
            "R_exponent": None if self.exponent is None else self.exponent.to_dict(),
            "violations": list(self.violations),
            "at_threshold_edge": self.edge,
        }


def r_regime(
    values, Rs, *, stated: float, violations=(), confidence: float = 0.95, stat=None, steps: int = 1
) -> Regime:
    """The regime check of an O(R^stated) bound: ``values`` (seeds, len(Rs)) per-seed metrics
    at horizons ``Rs`` (the same seed ids; or per-seed metrics reduced by ``stat`` after the
    seed mean, as in :func:`log_slope`), ``violations`` the conditions on R the runs break,
    ``steps`` the rounding steps behind each metric (:func:`slope_floor`).

    Reached when no condition is violated, the R exponent's interval lies below 0 (by more than
    the floor) and its estimate is at most ``stated / 2``; at the threshold's edge when the
    interval lies below 0 and contains ``stated / 2`` (module docstring)."""
    viol = [str(v) for v in violations]
    exp = log_slope(values, Rs, confidence, "exponent of the metric in R", stat)
    if viol:
        return Regime(False, f"{REGIME_NOT_REACHED}: " + "; ".join(viol), exp, viol)
    if exp.side(0.0, slope_floor(Rs, steps)) != -1:
        return Regime(False, f"{REGIME_NOT_REACHED}: the metric does not fall with R", exp, [])
    threshold = stated / 2
    edge = exp.side(threshold) == 0
    if exp.estimate > threshold:
        why = f"the metric falls more slowly in R than half the bound's R^{stated:g}"
        if edge:
            why += f" (at the edge: the interval contains {threshold:g})"
        return Regime(False, f"{REGIME_NOT_REACHED}: {why}", exp, [], edge)
    reason = f"{REGIME_AT_EDGE}: the R exponent's interval contains {threshold:g}" if edge else ""
    return Regime(True, reason, exp, [], edge)


@dataclass
class ShapeTest:
    """The shape a x^p + b (a, b >= 0) against the data (module docstring, step 2).

    Attributes
    ----------
    power : float
        p, the bound's exponent in x.
    a, b : float
        The fitted free constants (seed means; relative least squares).
    slope : Effect
        Log-slope of the seed-mean metric in x.
    ratio_trend : Effect
        Slope of log(metric / fitted shape) on log x (the shape refitted in every jackknife
        replicate).
    max_relative_residual : float
        max_x |metric / shape - 1| of the fit to all seeds.
    level : float
        Confidence level of both intervals.
    floor : float
        The slopes' accuracy (:func:`slope_floor`): every side is read beyond it.
    """

    power: float
    a: float
    b: float
    slope: Effect
    ratio_trend: Effect
    max_relative_residual: float
    level: float
    floor: float = 0.0

    @property
    def contradicted(self) -> bool:
        """The data contradict the shape: the log-slope leaves [p, 0] (p < 0) / [0, p]
        (p > 0) on the side the bound forbids, or the ratio to the shape grows (each beyond
        the floor)."""
        upper = 0.0 if self.power < 0 else self.power
        f = self.floor
        return self.slope.side(upper, f) == 1 or self.ratio_trend.side(0.0, f) == 1

    def verdict(self) -> str:
        """``fails`` when contradicted; ``holds`` when the metric moves as the bound says
        (falls with x for p < 0; rises more slowly than x^p for p > 0); else ``inconclusive``."""
        if self.contradicted:
            return FAILS
        edge = 0.0 if self.power < 0 else self.power
        return HOLDS if self.slope.side(edge, self.floor) == -1 else INCONCLUSIVE

    def text(self, var: str = "K") -> str:
        """The reading as a reviewer would sign it: how the metric moves in ``var`` against the
        shape's exponent, the closest a var^p + b and how far the metric is from it (a
        description, not a claim that the shape fits), and the trend of the ratio to it.

        E.g. ``slope in log M -1.94 [-2.03, -1.84]: falls faster than M^-0.5; closest a M^-0.5
        + b is 0.209 M^-0.5 + 0, up to 657% off the metric; metric / that curve trends -1.44
        [-1.53, -1.34] in log M``."""
        shape = f"{var}^{self.power:g}"
        side = self.slope.side(self.power)
        if side == 0:
            how = f"consistent with the shape's {shape}"
        elif side < 0:
            how = (
                f"falls faster than {shape}"
                if self.power <= 0
                else f"rises more slowly than {shape}"
            )
        else:
            how = (
                f"falls more slowly than {shape}"
                if self.power < 0
                else f"rises faster than {shape}"
            )
        if self.power > 0 and side < 0 and self.slope.side(0.0) < 0:
            how = f"falls, where the shape {shape} rises"
        if self.power < 0 and side > 0 and self.slope.side(0.0) > 0:
            how = f"rises, where the shape {shape} falls"
        return (
            f"slope in log {var} {_signed(self.slope)}: {how}; closest a {shape} + b is "
            f"{self.a:.3g} {shape} + {self.b:.3g}, up to "
            f"{100 * self.max_relative_residual:.1f}% off the metric; metric / that curve "
            f"trends {_signed(self.ratio_trend)} in log {var}"
        )

    def to_dict(self) -> dict:
        return {
            "shape": f"a x^{self.power:g} + b, a, b >= 0",
            "a": self.a,
            "b": self.b,
            "log_slope": self.slope.to_dict(),
            "ratio_trend": self.ratio_trend.to_dict(),
            "max_relative_residual": self.max_relative_residual,
            "level": self.level,
            "floor": self.floor,
        }


def _signed(e: Effect) -> str:
    return f"{e.estimate:+.2f} [{e.ci_low:+.2f}, {e.ci_high:+.2f}]"


def shape_test(
    values, x, power: float, *, alpha: float = 0.05, stat=None, steps: int = 1
) -> ShapeTest:
    """Test the shape a x^power + b (a, b >= 0) on ``values`` (per grid point the per-seed
    metric or curves, as in :func:`log_slope`), both intervals at level 1 - alpha/2, read
    beyond the accuracy of metrics computed in ``steps`` rounding steps (:func:`slope_floor`)."""
    pts = _points(values)
    xv = np.asarray(x, dtype=np.float64)
    if len(pts) != xv.size or xv.size < 3:
        raise AssumptionError(
            f"a shape test needs values at >= 3 grid points, got {len(pts)} for {xv.size} x"
        )
    level = 1.0 - alpha / 2.0
    lx = np.log(xv)
    slope = log_slope(pts, xv, level, f"exponent of the metric in x (shape x^{power:g} + b)", stat)

    def trend(idx: np.ndarray) -> float:
        m = _metric(pts, idx, stat)
        a, b = nonnegative_shape(xv, m, power)
        return float(np.polyfit(lx, np.log(m / (a * xv**power + b)), 1)[0])

    ratio = _jackknife(trend, pts, level, "slope of log(metric / fitted shape) in log x")
    m = _metric(pts, np.arange(pts[0].shape[0]), stat)
    a, b = nonnegative_shape(xv, m, power)
    resid = float(np.max(np.abs(m / (a * xv**power + b) - 1.0)))
    return ShapeTest(float(power), a, b, slope, ratio, resid, level, slope_floor(xv, steps))


@dataclass
class RateRead:
    """One O(.) rate read at one step-size constant (:mod:`fedtheory.verify.regime`): the
    regime check (metric at R/2 and R at the grid's largest value), the shape test on the
    grid, and the per-constant verdict (``inconclusive`` outside the regime)."""

    regime: Regime
    shape: ShapeTest
    exponent: Effect
    metric: list
    verdict: str

    def to_dict(self) -> dict:
        """The read as a claim's evidence: its verdict, regime check, shape test and metric."""
        return {
            "verdict": self.verdict,
            "regime": self.regime.to_dict(),
            "shape": self.shape.to_dict(),
            "metric": self.metric,
        }


def read_rate(
    alg: str,
    *,
    variable: str,
    values: tuple,
    power: float,
    stat,
    c: float,
    n: int,
    seed: int,
    R: int = 200,
    level: float = 0.95,
    **kw,
) -> RateRead:
    """Run ``alg`` (:func:`~fedtheory.experiments.local_steps.gradient_curves`, keywords ``kw``)
    over ``values`` of ``variable`` (K or M) at horizon R, and at R/2 and R at the grid's
    largest value for the regime check (:func:`r_regime` against R^(-1/2), the conditions on R
    of :func:`~fedtheory.experiments.local_steps.horizon_violations`), and read the stated shape
    a x^power + b (:func:`shape_test`; the exponent in ``variable`` reported at ``level``).
    Slopes are read beyond the accuracy of R x K rounding steps (:func:`slope_floor`)."""
    grid = gradient_curves(
        alg, variable=variable, values=values, R=R, c=c, seeds=n, seed=seed, **kw
    )
    at = {variable: max(values)}
    horizon = gradient_curves(
        alg, variable="R", values=(R // 2, R), c=c, seeds=n, seed=seed, **{**kw, **at}
    )
    M = at.get("M", kw.get("M", 5))  # gradient_curves' defaults
    K = at.get("K", kw.get("K", 8))
    viol = [v for r in (R // 2, R) for v in horizon_violations(alg, R=r, K=K, M=M)]
    regime = r_regime(
        horizon.curves, (R // 2, R), stated=-0.5, violations=viol, stat=stat, steps=R * K
    )
    shape = shape_test(grid.curves, values, power, stat=stat, steps=R * K)
    exponent = log_slope(grid.curves, values, level, f"exponent of the metric in {variable}", stat)
    verdict = shape.verdict() if regime.reached else INCONCLUSIVE
    metric = [float(stat(np.nanmean(g, axis=0))) for g in grid.curves]
    return RateRead(regime, shape, exponent, metric, verdict)


def rate_verdict(reads: dict) -> tuple[str, list, str | None]:
    """The row's verdict over step-size constants: the common verdict of the constants whose
    runs reached the regime (``inconclusive`` when they differ), ``inconclusive`` with the
    reason "regime not reached" when none did, and ``inconclusive`` with the reason "regime at
    its threshold's edge" when a constant's regime is at the edge (module docstring: these
    seeds do not say whether that constant's reading counts). Returns (verdict, constants in
    the regime, reason)."""
    inside = [c for c, r in reads.items() if r.regime.reached]
    edge = [c for c, r in reads.items() if r.regime.edge]
    if edge:
        at = ", ".join(f"{c:g}" for c in edge)
        return (
            INCONCLUSIVE,
            inside,
            (
                f"{REGIME_AT_EDGE} at c = {at} (the R exponent's interval "
                "contains the threshold; the thorough tier may decide)"
            ),
        )
    if not inside:
        return INCONCLUSIVE, [], f"{REGIME_NOT_REACHED} at any step-size constant"
    return unanimous([reads[c].verdict for c in inside]), inside, None


def rate_text(reads: dict, var: str = "K") -> str:
    """Per constant: regime (R exponent) and the shape's fit, or why the regime was not met."""
    parts = []
    for c, r in reads.items():
        head = f"c = {c:g}: R exponent {_signed(r.regime.exponent)}"
        if r.regime.edge:
            head += " (at the regime's edge)"
        if r.regime.reached:
            parts.append(f"{head}, {r.shape.text(var)} -> {r.verdict}")
        else:
            parts.append(f"{head}: {r.regime.reason}")
    return "; ".join(parts)
