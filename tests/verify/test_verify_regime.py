"""Reading O(.) claims (fedtheory.verify.regime): the regime check and the shape test, on data
whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from fedtheory.analysis.stats import Effect
from fedtheory.errors import AssumptionError
from fedtheory.verify.regime import (
    REGIME_AT_EDGE,
    REGIME_NOT_REACHED,
    RateRead,
    Regime,
    log_slope,
    nonnegative_shape,
    r_regime,
    rate_verdict,
    shape_test,
    slope_floor,
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


def test_a_regime_whose_interval_contains_the_threshold_is_at_its_edge():
    """A3's quick-tier case: R exponent -0.26 [-0.50, -0.01] against the threshold -1/4. Its
    estimate is on the reached side, its interval is not: the row cannot count it."""
    R = np.array([100.0, 200.0])
    z = np.linspace(-1.6, 1.6, 12)

    def runs(p: float) -> np.ndarray:  # 12 seeds, exponent p with a symmetric spread
        return np.stack([np.ones(12), 2.0**p * np.exp(0.15 * z)], axis=1)

    edge = r_regime(runs(-0.28), R, stated=-0.5)
    e = edge.exponent
    assert e.estimate < -0.25 < e.ci_high < 0  # below 0, the interval contains -1/4
    assert edge.reached and edge.edge and REGIME_AT_EDGE in edge.reason
    clear = r_regime(_seeds(R**-0.8, noise=0.01), R, stated=-0.5)
    assert clear.reached and not clear.edge and clear.reason == ""
    slow_edge = r_regime(runs(-0.22), R, stated=-0.5)
    assert slow_edge.exponent.ci_low < -0.25 < slow_edge.exponent.estimate
    assert slow_edge.edge and not slow_edge.reached and "at the edge" in slow_edge.reason


def _read(edge: bool, reached: bool, verdict: str) -> RateRead:
    ex = Effect(-0.3, -0.5 if edge else -0.35, -0.1 if edge else -0.26, "u", 0.95, 12)
    reg = Regime(reached, "", ex, [], edge)
    shape = shape_test(_seeds(2.0 * K**-0.5 + 0.3), K, -0.5)
    return RateRead(reg, shape, shape.slope, [1.0] * len(K), verdict)


def test_a_row_with_a_constant_at_the_regimes_edge_is_inconclusive():
    """Two constants hold clearly; a third at the edge also reads 'holds'. Under the old rule
    the row held; a reading at the edge makes it inconclusive, naming the constant."""
    reads = {
        0.01: _read(False, True, "holds"),
        0.02: _read(True, True, "holds"),
        0.05: _read(False, True, "holds"),
    }
    verdict, inside, reason = rate_verdict(reads)
    assert verdict == "inconclusive" and REGIME_AT_EDGE in reason and "c = 0.02" in reason
    reads[0.02] = _read(False, True, "holds")
    assert rate_verdict(reads) == ("holds", [0.01, 0.02, 0.05], None)
    reads[0.02] = _read(True, False, "inconclusive")  # at the edge on the other side
    assert rate_verdict(reads)[0] == "inconclusive"


def test_a_metric_that_does_not_move_is_flat_beyond_its_rounding():
    """Metrics equal in exact arithmetic (HA-Fed at rho = 0 for every M, 004 Rem. 5.9) differ
    by rounding; their log-slope has a tiny interval off 0, which the floor reads as a tie."""
    M = np.array([5.0, 10.0, 20.0, 25.0])
    base = _seeds(np.full(4, 0.017), n=12, noise=0.05)[:, :1]
    eps = np.finfo(float).eps
    values = base * (1.0 + eps * np.array([0.0, -64.0, -128.0, -192.0]))  # falls by ulps
    raw = log_slope(values, M, 0.95, "u")
    assert raw.ci_high < 0  # without a floor, rounding "falls with M"
    t = shape_test(values, M, -0.5, steps=400)
    assert t.floor > 1e-12 and t.slope.side(0.0, t.floor) == 0
    assert t.verdict() == "inconclusive" and not t.contradicted
    assert slope_floor(M, 400) == pytest.approx(
        64
        * 400
        * eps
        * np.abs(
            (np.log(M) - np.log(M).mean()) / np.sum((np.log(M) - np.log(M).mean()) ** 2)
        ).sum(),
        rel=1e-12,
    )
