"""Reading O(.) claims (fedtheory.verify.regime): the regime check and the shape test, on data
whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from fedtheory.errors import AssumptionError
from fedtheory.verify.regime import (
    REGIME_NOT_REACHED,
    log_slope,
    nonnegative_shape,
    r_regime,
    shape_test,
)

K = np.array([1.0, 2.0, 4.0, 8.0, 16.0])


def _seeds(mean, n=20, noise=0.01, seed=0):
    """(n, len(mean)) per-seed values: the mean times lognormal seed noise (paired seeds)."""
    rng = np.random.default_rng(seed)
    return np.asarray(mean)[None, :] * np.exp(noise * rng.standard_normal((n, len(mean))))


def test_the_nonnegative_shape_recovers_its_constants_and_stays_nonnegative():
    a, b = nonnegative_shape(K, 2.0 * K**-0.5 + 0.3, -0.5)
    assert a == pytest.approx(2.0, rel=1e-10) and b == pytest.approx(0.3, rel=1e-9)
    a, b = nonnegative_shape(K, 1.0 + 0.1 * K, -0.5)  # rising data: only the constant fits
    assert a == 0.0 and b > 0
    with pytest.raises(AssumptionError, match="positive"):
        nonnegative_shape(K, -K, -0.5)


def test_a_metric_on_the_shape_holds_and_one_that_grows_fails():
    on = shape_test(_seeds(2.0 * K**-0.5 + 0.3), K, -0.5)
    assert on.verdict() == "holds" and not on.contradicted and on.max_relative_residual < 0.02
    grows = shape_test(_seeds(0.5 + 0.05 * K), K, -0.5)
    assert grows.slope.side(0.0) == 1 and grows.verdict() == "fails"


def test_faster_than_the_bound_is_consistent_and_a_slow_decay_is_not():
    fast = shape_test(_seeds(K**-1.0), K, -0.5)  # an upper bound allows a faster fall
    assert fast.verdict() == "holds"
    # flat, then falling: no a K^(-1/2) + b bends that way; the ratio to the shape grows
    bent = shape_test(_seeds(np.array([1.0, 1.0, 0.99, 0.7, 0.4]), noise=0.002), K, -0.5)
    assert bent.ratio_trend.side(0.0) != 0 or bent.slope.side(0.0) != 0


def test_an_upper_bound_that_rises_reads_the_slope_against_its_exponent():
    assert shape_test(_seeds(1.0 + K**0.5), K, 0.5).verdict() == "holds"
    assert shape_test(_seeds(K**1.0), K, 0.5).verdict() == "fails"


def test_the_regime_needs_the_metric_to_fall_with_r_as_the_bound_says():
    R = np.array([100.0, 200.0])
    ok = r_regime(_seeds(R**-0.5), R, stated=-0.5)
    assert ok.reached and ok.reason == ""
    flat = r_regime(_seeds(np.array([1.705, 1.69])), R, stated=-0.5)  # 000 A3's c = 0.02
    assert not flat.reached and flat.reason.startswith(REGIME_NOT_REACHED)
    slow = r_regime(_seeds(R**-0.2, noise=0.001), R, stated=-0.5)
    assert not slow.reached and "more slowly" in slow.reason
    viol = r_regime(_seeds(R**-0.5), R, stated=-0.5, violations=["R = 100 < K M = 160"])
    assert not viol.reached and "R = 100 < K M" in viol.reason


def test_curves_are_reduced_after_the_seed_mean():
    """min_r E[curve] (004 Cor. 5.11's metric) differs from E[min_r curve]: the statistic
    is applied to the seed-mean curve, horizons may differ."""
    rng = np.random.default_rng(1)
    curves = [rng.random((6, R)) + 1.0 for R in (50, 100)]
    e = log_slope(curves, [50, 100], 0.95, "u", stat=lambda c: c.min(axis=-1))
    want = np.log(curves[1].mean(0).min() / curves[0].mean(0).min()) / np.log(2.0)
    assert e.estimate == pytest.approx(want, rel=1e-12)
