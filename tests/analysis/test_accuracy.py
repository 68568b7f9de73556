"""The absolute floor of a float64 computation (fedtheory.analysis.accuracy)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fedtheory.analysis.accuracy import EPS, ULPS, absolute_floor, beyond_floor
from fedtheory.errors import AssumptionError


def test_the_floor_is_ulps_of_the_scale_times_the_steps():
    assert EPS == 2.0**-52 and ULPS == 64
    assert absolute_floor(1.0) == 64 * 2.0**-52
    assert absolute_floor(-4.0, steps=10, ulps=2) == 2 * 10 * 4.0 * 2.0**-52
    with pytest.raises(AssumptionError, match="finite"):
        absolute_floor(np.inf)
    with pytest.raises(AssumptionError, match=">= 1"):
        absolute_floor(1.0, steps=0)


def test_a_sum_that_is_zero_in_exact_arithmetic_lies_under_its_floor():
    """x - (x - y) - y is 0 in exact arithmetic; in float64 it is rounding at the scale of x."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(1000) * 1e3, rng.standard_normal(1000)
    resid = x - (x - y) - y
    assert np.any(resid != 0)  # rounding is there
    assert np.all(np.abs(resid) <= absolute_floor(np.abs(x).max(), steps=2))


@given(st.floats(-1e6, 1e6), st.floats(0, 1e3))
def test_beyond_floor_is_a_three_way_comparison(value, floor):
    side = beyond_floor(value, 0.0, floor)
    assert side == (1 if value > floor else -1 if value < -floor else 0)
    assert beyond_floor(value, value, floor) == 0
