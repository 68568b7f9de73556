"""The tuning grid extends at its edge until the chosen value is interior or a hard limit."""

from __future__ import annotations

import math

import pytest

from fedtheory.errors import AssumptionError
from fedtheory.experiments.tuning import Axis, tune_grid


def test_a_best_value_at_the_edge_extends_the_grid_until_interior():
    calls = []

    def score(p):
        calls.append(p["c"])
        return (math.log10(p["c"]) + 4.0) ** 2  # optimum c = 1e-4, far below the grid

    t = tune_grid(score, [Axis("c", (1e-3, 1e-2, 1e-1))])
    assert t.best == {"c": pytest.approx(1e-4)} and t.interior and t.status["c"] == "interior"
    assert min(t.tried["c"]) == pytest.approx(1e-5) and t.extensions == 2
    assert calls[:3] == [1e-3, 1e-2, 1e-1] and len(calls) == len(set(calls)) == 5


def test_a_hard_limit_stops_the_extension_and_is_said():
    t = tune_grid(lambda p: -p["g"], [Axis("g", (0.25, 0.5), high=1.0)])
    assert t.best == {"g": 1.0} and t.status["g"] == "at the hard limit high=1"
    assert not t.interior and t.decisive and t.tried["g"] == (0.25, 0.5, 1.0)


def test_the_budget_is_said_when_spent_and_nan_never_wins():
    t = tune_grid(lambda p: -p["c"], [Axis("c", (1.0, 2.0))], max_extensions=3)
    assert t.best == {"c": 16.0} and t.status["c"] == "grid's edge: extension budget spent"
    assert not t.decisive
    t = tune_grid(
        lambda p: math.nan if p["c"] > 1 else p["c"], [Axis("c", (0.5, 1.0, 2.0))], max_extensions=0
    )
    assert t.best == {"c": 0.5}


def test_two_axes_extend_only_the_axis_at_its_edge():
    def score(p):
        return (math.log2(p["lr"]) - 3) ** 2 + (math.log2(p["g"]) - 0) ** 2  # lr 8, g 1

    t = tune_grid(score, [Axis("lr", (1.0, 2.0)), Axis("g", (0.5, 1.0, 2.0))])
    assert t.best == {"lr": 8.0, "g": 1.0} and t.interior
    assert t.tried["g"] == (0.5, 1.0, 2.0) and t.tried["lr"] == (1.0, 2.0, 4.0, 8.0, 16.0)


def test_bad_axes_are_refused():
    with pytest.raises(AssumptionError, match="distinct positive"):
        Axis("c", (1.0,))
    with pytest.raises(AssumptionError, match="names must differ"):
        tune_grid(lambda p: 0.0, [Axis("c", (1, 2)), Axis("c", (1, 2))])


def test_refinement_finds_an_optimum_between_coarse_grid_values():
    def score(p):
        return (math.log(p["lr"]) - math.log(0.7)) ** 2  # optimum 0.7, between 0.3 and 1.0

    coarse = tune_grid(score, [Axis("lr", (0.1, 0.3, 1.0))])
    assert coarse.best == {"lr": 1.0} or coarse.best == {"lr": 0.3}
    fine = tune_grid(score, [Axis("lr", (0.1, 0.3, 1.0))], refine=1.5)
    assert 0.7 / 1.5 <= fine.best["lr"] <= 0.7 * 1.5 and fine.interior
    assert fine.refinements >= 2
    neighbours = sorted(fine.tried["lr"])
    i = neighbours.index(fine.best["lr"])
    assert max(neighbours[i + 1] / neighbours[i], neighbours[i] / neighbours[i - 1]) <= 1.5
