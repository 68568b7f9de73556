"""The experiment helpers behind the reworked claims: paired per-seed runs, window metrics, the
time-to-target tuning, and N1's seed blocks."""

from __future__ import annotations

import numpy as np
import pytest

from fedtheory.errors import AssumptionError
from fedtheory.experiments.figure4 import rounds_to_tolerance
from fedtheory.experiments.local_steps import gradient_curves, window_mean, window_min
from fedtheory.experiments.n1 import nn_tuning, run_n1, tuned_hyper, validation_split
from fedtheory.experiments.time_to_target import hours_to_target, tune_constant

SMALL_N1 = dict(
    n_clients=10,
    participation=0.5,
    num_samples=400,
    rounds=3,
    local_steps=2,
    batch_size=8,
    hidden=(8,),
    eval_every=1,
)


def test_window_metrics_read_the_second_half():
    c = np.arange(1.0, 11.0)[None, :]  # rounds 1..10
    assert window_mean(c)[0] == pytest.approx(np.mean([6, 7, 8, 9, 10]))
    assert window_min(c)[0] == 6.0 and window_mean(c, 0.0)[0] == pytest.approx(5.5)


def test_gradient_curves_pairs_the_seeds_across_the_grid():
    a = gradient_curves("fedamsgrad", values=(1, 2), R=12, seeds=3, seed=4)
    b = gradient_curves("fedamsgrad", values=(2,), R=12, seed=4, seed_ids=[1, 2])
    assert [g.shape for g in a.curves] == [(3, 12), (3, 12)]
    np.testing.assert_array_equal(a.curves[1][1:], b.curves[0])  # seed ids select, not shift
    assert a.outside == [[], []] and a.settings["steps"][0]["eta"] > 0
    t = gradient_curves(
        "afga", variable="topology", values=("complete", "ring"), K=2, R=12, seeds=2
    )
    assert t.rho[0] == pytest.approx(0.0, abs=1e-12) and t.rho[1] > 0.9
    assert any("rho" in v for v in t.outside[1]) and not t.outside[0]
    with pytest.raises(AssumptionError, match="variable must be"):
        gradient_curves("afga", variable="N")
    m = gradient_curves(
        "hafed", variable="M", values=(5, 50), K=2, R=12, seeds=2, topology="complete"
    )
    assert m.settings["steps"][1]["eta"] > m.settings["steps"][0]["eta"]  # eta = c sqrt(K M)
    held = gradient_curves(
        "hafed",
        variable="M",
        values=(5, 50),
        K=2,
        R=12,
        seeds=2,
        topology="complete",
        steps_at={"M": 5},
    )
    assert held.settings["steps"][0] == held.settings["steps"][1] == m.settings["steps"][0]
    with pytest.raises(AssumptionError, match="steps_at holds"):
        gradient_curves("hafed", variable="M", values=(5,), steps_at={"N": 5})
    s = gradient_curves(
        "hafed", values=(2,), R=12, seeds=2, schedule="fedamsgrad", metric="f_minus_f_star"
    )
    assert s.settings["steps"][0]["eta_l"] == pytest.approx(0.5 / np.sqrt(12 * 4))  # 1/sqrt(R K^2)
    assert np.all(s.curves[0] >= 0)  # f - f*


def test_rounds_to_tolerance_is_paired_and_censored():
    hits = rounds_to_tolerance("uniform", ("focus", "fedavg"), seed=0, seed_ids=[0, 1], rounds=60)
    assert hits["fedavg"].tolist() == [61, 61]  # FedAvg's floor: never, counted R + 1
    assert np.all(hits["focus"] == 61)  # not within 60 rounds either at this step size
    full = rounds_to_tolerance("full", ("focus",), seed_ids=[3, 4, 5], rounds=200)
    assert full["focus"].shape == (1,) and full["focus"][0] < 200  # no randomness: one run


def test_time_to_target_tuning_picks_the_fastest_constant_and_extends_its_grid():
    kw = dict(rounds=40, n_clients=20, clients_per_round=4, clusters=4, local_steps=2)
    grid = (0.003, 0.03)
    t = tune_constant("fedamsgrad", grid, 50.0, seed=1, seed_ids=(1000, 1001), **kw)
    med = [
        np.median(hours_to_target("fedamsgrad", c, 50.0, seed=1, seed_ids=(1000, 1001), **kw)[0])
        for c in t.grid
    ]
    assert set(grid) <= set(t.grid) and t.median_hours == tuple(med)
    assert t.c == t.grid[int(np.argmin(med))]  # the fastest of every value tried
    assert t.interior == (min(t.grid) < t.c < max(t.grid))
    stay, _ = hours_to_target(
        "fedamsgrad", t.c, 50.0, seed=1, seed_ids=(1000, 1001), stay=True, **kw
    )
    first, _ = hours_to_target("fedamsgrad", t.c, 50.0, seed=1, seed_ids=(1000, 1001), **kw)
    assert np.all(stay >= first)  # staying below comes no earlier than the first crossing
    never, final = hours_to_target("fedamsgrad", 0.003, 1e-12, seed_ids=(0,), **kw)
    assert np.isinf(never).all() and np.isfinite(final).all()
    with pytest.raises(AssumptionError, match="unknown setting"):
        hours_to_target("afga", 0.01, 1.0, topologie="ring")


def test_run_n1_seed_ids_select_the_same_runs_in_blocks_of_the_same_size():
    a = run_n1(["FedAvg", "CAFGA"], seeds=4, seed_block=2, **SMALL_N1)
    b = run_n1(["FedAvg", "CAFGA"], seed_ids=[2, 3], seed_block=2, **SMALL_N1)
    for k in a.results:
        np.testing.assert_array_equal(a.results[k].accuracy[2:], b.results[k].accuracy)
    assert a.setting["seed_ids"] == [0, 1, 2, 3] and b.setting["seed_block"] == 2


def test_n1_tunes_on_a_validation_split_that_is_not_the_test_split():
    """The tuning's split comes out of the training rows (disjoint from them, seeded by the
    root) and never contains a test row; the recorded tuning says it was made so."""
    rng = np.random.default_rng(0)
    x = np.arange(200.0)[:, None] * np.ones((1, 3))
    arrays = {
        "x": x,
        "y": rng.integers(0, 3, 200),
        "x_test": -np.ones((50, 3)),
        "y_test": np.zeros(50, int),
    }
    v = validation_split(arrays, seed=5)
    train, val = set(v["x"][:, 0]), set(v["x_test"][:, 0])
    assert not train & val and len(val) == 40 and train | val == set(range(200))
    assert -1.0 not in train | val  # the test split is dropped
    assert validation_split(arrays, seed=5)["x_test"].tolist() == v["x_test"].tolist()
    res = run_n1(["FedAvg"], seeds=1, evaluate_on="validation", **SMALL_N1)
    assert res.setting["evaluated_on"] == "validation"
    rec = nn_tuning()
    assert "validation" in rec["meta"]["evaluated_on"]
    for setting, algs in rec["settings"].items():
        for a in algs:
            assert set(tuned_hyper(a, setting)) >= {"lr"}
