"""The violation tolerance's absolute floor: a bound of 0 on an algorithm that converges exactly
holds, a false bound of 0 is still violated, and values within the oracle's accuracy are tight."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedtheory.bounds import check, ratio
from fedtheory.bounds.evaluate import tolerance_floor

EPS = float(np.finfo(np.float64).eps)


def _focus_exact(quantity: str = "stationary_mse", bound: str = "0", algorithm: str = "focus"):
    return {
        "algorithm": algorithm,
        "participation": "uniform",
        "clients": [3, 4],
        "clients_per_round": [1, 2],
        "local_steps": [1, 3],
        "lr": "0.1/(K*N*L)",
        "quantity": quantity,
        "bound": bound,
        "class": {"dim": [2, 3], "L": 10.0, "mu": 1.0},
    }


def test_focus_converges_exactly_so_a_zero_floor_holds():
    # FOCUS's fixed point is x* under any participation (003 Theorem 1): its floor is 0, and
    # the oracle's value is rounding of states of size ||x*||.
    res = check(_focus_exact(), search=24, seed=3, refine=False)
    assert not res.violated, res.sentence()
    assert {e.sizes["N"] for e in res.instances} == {3, 4}
    assert {e.sizes["M"] for e in res.instances} == {1, 2}
    assert {e.sizes["K"] for e in res.instances} == {1, 3}
    for e in res.instances:
        assert 0 <= e.exact <= e.floor
        assert e.floor == pytest.approx(8 * e.constants["d"] * EPS * e.constants["D2"])
        assert e.ratio == 1.0  # equal within the oracle's accuracy: tight, not infinitely loose


def test_a_false_zero_floor_is_still_violated():
    # FedAvg under uniform partial participation with heterogeneous clients has a positive
    # floor (003 Theorem 2), far above any rounding.
    res = check(_focus_exact(algorithm="fedavg"), search=8, seed=0, refine=False)
    assert res.violated
    assert res.worst.exact > 1e6 * res.worst.floor


@pytest.mark.parametrize("L", [1.0, 10.0])
def test_gradient_descent_with_condition_number_one_meets_its_textbook_rate(L):
    # Full participation, K = 1 FedAvg at eta = 1/L_f is gradient descent; with every
    # eigenvalue equal the exact rate is 0, and (1 - eta mu_f)^2 is 0 up to rounding.
    spec = {
        "algorithm": "fedavg",
        "clients": [2, 4],
        "lr": "1/L_f",
        "quantity": "mean_square_rate",
        "bound": "(1 - eta*mu_f)**2",
        "class": {"dim": [1, 3, 10], "L": L, "mu": L},
    }
    for quantity, bound in (
        ("mean_square_rate", "(1 - eta*mu_f)**2"),
        ("mean_rate", "1 - eta*mu_f"),
        ("mean_rate", "0"),
    ):
        res = check({**spec, "quantity": quantity, "bound": bound}, search=12, refine=False)
        assert not res.violated, (quantity, bound, res.sentence())
        assert all(abs(e.exact) <= e.floor for e in res.instances)
        assert res.worst.ratio == 1.0


def test_a_zero_rate_bound_is_violated_as_soon_as_the_condition_number_exceeds_one():
    spec = {
        "algorithm": "fedavg",
        "clients": 2,
        "lr": "1/L_f",
        "quantity": "mean_rate",
        "bound": "0",
        "class": {"dim": 2, "L": 1.001, "mu": 1.0},
    }
    res = check(spec, search=6, refine=False)
    assert res.violated
    # the exact rate 1 - mu_f/L_f is up to 1e-3 here: far above the floor (16 ulps at d = 2)
    assert res.worst.exact > 1e9 * res.worst.floor


def test_tolerance_floor_scales_with_the_quantity():
    c = {"d": 5.0, "D2": 4.0}
    assert tolerance_floor("mean_square_rate", c) == 40 * EPS
    assert tolerance_floor("mean_rate", c) == 40 * EPS
    assert tolerance_floor("stationary_mse", c) == 160 * EPS
    assert tolerance_floor("rounds_to", c) == 0.0
    assert tolerance_floor("stationary_mse", {"d": 2.0, "D2": 0.0}) == 16 * EPS


def test_ratio_reads_values_within_the_floor_as_equal():
    assert ratio(0.0, 3e-33, True, floor=1e-15) == 1.0
    assert ratio(0.0, 3e-33, True) == math.inf  # no floor: the old reading
    assert ratio(0.0, 1e-3, False, floor=1e-15) == math.inf
    assert ratio(0.5, 0.5 + 1e-17, True, floor=1e-15) == 1.0
