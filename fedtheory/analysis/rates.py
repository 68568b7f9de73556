"""Rate fitting: linear (geometric) rates, error floors and power-law exponents.

- :func:`fit_linear_rate`: e_r ~ C rho^r fitted by least squares on log e_r over the window
  before the floor, with the r^2 of the fit (003 Theorem 1 predicts rho < 1 for FOCUS).
- :func:`error_floor`: the level a curve stalls at (the median of its tail), e.g. FedAvg's bias
  (003 Theorem 2).
- :func:`fit_power_law`: y ~ C x^alpha per seed, the exponent with a Student-t confidence
  interval over seeds (the rates of docs/algorithms.md section 6: O(1/R), O(1/sqrt(R K M)), ...).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedtheory.errors import AssumptionError
from fedtheory.validation import check_finite


@dataclass(frozen=True)
class LinearRate:
    """Geometric decay e_r ~ C rho^r over rounds ``start..stop - 1``.

    Attributes
    ----------
    rho : float
        Contraction factor per round (exp of the fitted slope).
    slope, intercept : float
        Of log e_r = intercept + slope r.
    r2 : float
        Coefficient of determination of the log-linear fit.
    start, stop : int
        The fitted window (rounds).
    floor : float
        The level the curve ends at (:func:`error_floor`).
    """

    rho: float
    slope: float
    intercept: float
    r2: float
    start: int
    stop: int
    floor: float


def error_floor(errors: np.ndarray, tail: float = 0.1) -> float:
    """The median of the last ``tail`` fraction of a 1-D error curve (finite values only)."""
    e = np.asarray(errors, dtype=np.float64)
    if e.ndim != 1 or e.size == 0:
        raise AssumptionError(f"an error curve must be a non-empty vector, got shape {e.shape}")
    if not 0 < tail <= 1:
        raise AssumptionError(f"tail must lie in (0, 1], got {tail}")
    t = e[-max(1, int(np.ceil(tail * e.size))) :]
    t = t[np.isfinite(t)]
    return float(np.median(t)) if t.size else float("nan")


def fit_linear_rate(
    errors: np.ndarray,
    *,
    start: int = 0,
    floor_factor: float = 10.0,
    min_error: float = 1e-13,
    tail: float = 0.1,
) -> LinearRate:
    """Fit a geometric rate to a 1-D error curve over the window before its floor.

    The window starts at ``start`` and stops at the first round whose error is below
    ``max(floor_factor * floor, min_error)`` (the floor from :func:`error_floor`; ``min_error``
    keeps rounding noise near machine precision out of the fit).

    Raises
    ------
    AssumptionError
        Fewer than 3 usable points (positive and finite) in the window.
    """
    e = np.asarray(errors, dtype=np.float64)
    floor = error_floor(e, tail)
    thresh = max(floor_factor * floor if np.isfinite(floor) else 0.0, min_error)
    below = np.flatnonzero(e[start:] <= thresh)
    stop = start + (int(below[0]) if below.size else e.size - start)
    r = np.arange(start, stop)
    y = e[start:stop]
    ok = np.isfinite(y) & (y > 0)
    if ok.sum() < 3:
        raise AssumptionError(
            f"a linear rate needs >= 3 positive finite errors before the floor, got {ok.sum()}"
        )
    slope, intercept, r2, _ = _line_fit(r[ok], np.log(y[ok]))
    return LinearRate(
        rho=float(np.exp(slope)),
        slope=slope,
        intercept=intercept,
        r2=r2,
        start=int(start),
        stop=int(stop),
        floor=floor,
    )


def _line_fit(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float]:
    """Least-squares line y = intercept + slope x: ``(slope, intercept, r^2, stderr of the
    slope)`` (stderr NaN with two points).

    The formulas of :func:`scipy.stats.linregress` (centred sums; r = 0 for a constant y), in
    NumPy: the simulate command fits a rate on every run and importing scipy.stats costs it a
    second at start-up.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    dx, dy = x - x.mean(), y - y.mean()
    sxx, syy, sxy = float(dx @ dx), float(dy @ dy), float(dx @ dy)
    slope = sxy / sxx
    r2 = min(sxy * sxy / (sxx * syy), 1.0) if syy > 0 else 0.0
    n = x.size
    stderr = float(np.sqrt((1.0 - r2) * syy / sxx / (n - 2))) if n > 2 else float("nan")
    return slope, float(y.mean() - slope * x.mean()), r2, stderr


def _stats():
    """scipy.stats, imported on first use (a second at start-up; only the Student-t quantile
    of :func:`fit_power_law` needs it)."""
    from scipy import stats  # noqa: PLC0415  (1 s at start-up, see the docstring)

    return stats


@dataclass(frozen=True)
class PowerLaw:
    """y ~ C x^alpha.

    Attributes
    ----------
    exponent : float
        Mean over seeds of the per-seed least-squares slopes of log y on log x.
    ci_low, ci_high : float
        Student-t confidence interval of the mean exponent over seeds (level ``confidence``);
        with one seed, the slope's own regression interval.
    stderr : float
    per_seed : ndarray
    r2 : float
        Mean r^2 of the per-seed fits.
    confidence : float
    """

    exponent: float
    ci_low: float
    ci_high: float
    stderr: float
    per_seed: np.ndarray
    r2: float
    confidence: float


def fit_power_law(x: np.ndarray, y: np.ndarray, *, confidence: float = 0.95) -> PowerLaw:
    """Fit y ~ C x^alpha; ``y`` is (len(x),) or (seeds, len(x)).

    Raises
    ------
    AssumptionError
        Non-positive or non-finite x or y, fewer than 2 points, or a confidence outside (0, 1).
    """
    x = check_finite("x", x)
    y = np.atleast_2d(check_finite("y", y))
    if x.ndim != 1 or y.shape[1] != x.size or x.size < 2:
        raise AssumptionError(f"need x (n,) and y (seeds, n) with n >= 2; got {x.shape}, {y.shape}")
    if (x <= 0).any() or (y <= 0).any():
        raise AssumptionError("a power law needs positive x and y")
    if not 0 < confidence < 1:
        raise AssumptionError(f"confidence must lie in (0, 1), got {confidence}")
    lx, ly = np.log(x), np.log(y)
    fits = [_line_fit(lx, row) for row in ly]
    slopes = np.array([f[0] for f in fits])
    r2 = float(np.mean([f[2] for f in fits]))
    S = slopes.size
    t = _stats().t
    if S > 1:
        se = float(slopes.std(ddof=1) / np.sqrt(S))
        tq = t.ppf(0.5 + confidence / 2, S - 1)
    else:
        se = fits[0][3]
        tq = t.ppf(0.5 + confidence / 2, max(x.size - 2, 1))
    m = float(slopes.mean())
    return PowerLaw(m, m - tq * se, m + tq * se, se, slopes, r2, confidence)
