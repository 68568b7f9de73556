"""The statistics behind the verdicts (fedtheory.analysis.stats): intervals, sequential plans,
and the honesty of the sequential procedure under the null."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from fedtheory.analysis.stats import (
    Effect,
    SequentialPlan,
    jackknife_interval,
    mean_interval,
    sequential,
)
from fedtheory.errors import AssumptionError
from fedtheory.verify import FAILS, HOLDS, INCONCLUSIVE, all_of, unanimous, verdict_of


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3), min_size=2, max_size=40), st.sampled_from([0.9, 0.95, 0.99]))
def test_mean_interval_is_scipys_one_sample_t_interval(values, level):
    v = np.asarray(values)
    e = mean_interval(v, level, "u")
    if v.std() == 0:
        assert e.ci_low == e.ci_high == pytest.approx(v.mean())
        return
    with warnings.catch_warnings():  # scipy warns on nearly identical samples; we compare
        warnings.simplefilter("ignore", RuntimeWarning)
        ci = stats.ttest_1samp(v, 0.0).confidence_interval(level)
    assert e.ci_low == pytest.approx(ci.low, rel=1e-9, abs=1e-9)
    assert e.ci_high == pytest.approx(ci.high, rel=1e-9, abs=1e-9)
    assert e.n == v.size and e.confidence == level


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-10, 10), min_size=3, max_size=30))
def test_the_jackknife_of_a_mean_is_the_t_interval(values):
    v = np.asarray(values)
    a = jackknife_interval(lambda x: float(x.mean()), v, 0.95, "u")
    b = mean_interval(v, 0.95, "u")
    assert a.ci_low == pytest.approx(b.ci_low, abs=1e-9)
    assert a.ci_high == pytest.approx(b.ci_high, abs=1e-9)


def test_one_seed_of_a_random_experiment_bounds_nothing():
    e = mean_interval([3.0], 0.95, "u")
    assert e.ci_low == -math.inf and e.ci_high == math.inf and e.side() == 0
    assert e.to_dict()["ci_low"] is None  # JSON has no infinity
    with pytest.raises(AssumptionError, match="finite"):
        mean_interval([1.0, float("nan")], 0.95, "u")
    with pytest.raises(AssumptionError, match="at least 2 seeds"):
        jackknife_interval(np.mean, np.ones((1, 3)), 0.95, "u")


def test_sides_equivalence_and_combinations():
    assert Effect(1.0, 0.5, 1.5, "u").side() == 1
    assert Effect(-1.0, -1.5, -0.5, "u").side() == -1
    assert Effect(0.0, -0.5, 0.5, "u").side() == 0
    assert Effect.exact(0.0, "u").side() == 0  # an exact tie is undecided
    assert Effect(0.0, -0.05, 0.05, "u").within(-0.1, 0.1) == 1
    assert Effect(0.3, 0.2, 0.4, "u").within(-0.1, 0.1) == -1
    assert Effect(0.1, 0.0, 0.2, "u").within(-0.1, 0.1) == 0
    assert verdict_of(Effect(0.3, 0.2, 0.4, "u"), null=0.5, claimed=-1) == HOLDS
    assert all_of([HOLDS, INCONCLUSIVE]) == INCONCLUSIVE
    assert all_of([HOLDS, FAILS, INCONCLUSIVE]) == FAILS and all_of([HOLDS, HOLDS]) == HOLDS
    assert unanimous([HOLDS, HOLDS, HOLDS]) == HOLDS
    assert unanimous([HOLDS, FAILS]) == INCONCLUSIVE and unanimous([FAILS, FAILS]) == FAILS


def test_plan_splits_alpha_over_looks_and_comparisons_and_adds_fresh_seeds():
    p = SequentialPlan(block=20, max_seeds=100, alpha=0.05, comparisons=5)
    assert p.looks == 5 and p.level == pytest.approx(1 - 0.05 / 25)
    blocks = p.blocks()
    assert [len(b) for b in blocks] == [20] * 5
    flat = [i for b in blocks for i in b]
    assert flat == list(range(100))  # disjoint blocks, every seed id once
    assert SequentialPlan(3, 7).blocks() == [[0, 1, 2], [3, 4, 5], [6]]
    assert "Bonferroni" in p.describe()
    with pytest.raises(AssumptionError):
        SequentialPlan(block=1, max_seeds=10)


def test_sequential_stops_when_decided_and_spends_the_budget_on_a_tie():
    calls = []

    def draw(ids, active):
        calls.append((list(ids), active))
        return {
            "win": np.full(len(ids), 2.0) + 0.1 * np.arange(len(ids)),
            "tie": np.zeros(len(ids)),
        }

    out = sequential(draw, ["win", "tie"], SequentialPlan(4, 12), unit="u")
    assert out["win"].n == 4 and out["win"].side == 1 and out["win"].looks == 1
    assert (
        out["tie"].n == 12
        and out["tie"].side == 0
        and verdict_of(out["tie"].effect) == (INCONCLUSIVE)
    )
    assert [a for _, a in calls] == [("win", "tie"), ("tie",), ("tie",)]
    assert [i for ids, _ in calls for i in ids] == list(range(12))


def test_a_missing_value_ends_a_comparison_undecided():
    def draw(ids, active):
        return {"x": np.array([1.0, np.nan, 1.0][: len(ids)])}

    out = sequential(draw, ["x"], SequentialPlan(3, 9), unit="u")
    assert out["x"].effect.estimate is None and out["x"].censored == 1 and out["x"].looks == 1


def test_stop_rule_ends_every_comparison():
    def draw(ids, active):
        return {"bad": -np.ones(len(ids)) - 0.01 * np.arange(len(ids)), "slow": np.zeros(len(ids))}

    out = sequential(
        draw,
        ["bad", "slow"],
        SequentialPlan(5, 50),
        unit="u",
        stop=lambda c: any(x.side < 0 for x in c.values()),
    )
    assert out["bad"].side == -1 and out["slow"].n == 5


@pytest.mark.parametrize("dist", ["normal", "skewed"])
def test_sequential_sampling_rarely_decides_under_the_null(dist):
    """Honesty of the procedure (what the verdict-stability contract rests on): with a true
    difference of zero, the sequential plan's Bonferroni intervals exclude zero in at most
    about alpha of the runs, also for the skewed, integer-valued differences of
    rounds-to-threshold."""
    rng = np.random.default_rng(12)
    plan = SequentialPlan(block=10, max_seeds=40, alpha=0.05)
    reps, decided = 400, 0
    for _ in range(reps):

        def draw(ids, active):
            if dist == "normal":
                return {"d": rng.standard_normal(len(ids))}
            a = rng.geometric(0.05, len(ids))
            return {"d": a - rng.geometric(0.05, len(ids))}

        decided += sequential(draw, ["d"], plan, unit="u")["d"].side != 0
    # binomial(400, 0.05) exceeds 32 with probability < 0.5%; the plan is conservative
    assert decided <= 32, decided


def test_a_real_difference_is_found():
    rng = np.random.default_rng(3)

    def draw(ids, active):
        return {"d": 0.8 + rng.standard_normal(len(ids))}

    out = sequential(draw, ["d"], SequentialPlan(10, 80), unit="u")
    assert out["d"].side == 1 and out["d"].n < 80


def test_a_sequential_stop_is_confirmed_on_fresh_seeds():
    """The estimate at an early stop is selected by the rule; ``confirm`` draws one fresh block
    (seed ids from the budget on, disjoint from every look) for the early-decided comparisons
    only, and leaves the decision as it was."""
    seen = []

    def draw(ids, active):
        seen.append((list(ids), tuple(active)))
        return {"win": np.full(len(ids), 5.0) + np.asarray(ids) % 2, "tie": np.zeros(len(ids))}

    out = sequential(draw, ["win", "tie"], SequentialPlan(4, 12), unit="u", confirm=True)
    assert out["win"].looks == 1 and out["win"].side == 1
    assert seen[-1] == ([12, 13, 14, 15], ("win",))
    c = out["win"].confirmation
    assert c.estimate == pytest.approx(5.5) and c.confidence == 0.95 and c.n == 4
    assert out["win"].confirmation_seed_ids == [12, 13, 14, 15]
    assert out["tie"].confirmation is None and out["win"].effect.n == 4  # decision unchanged
