"""The runner's cost knobs: ``seed_block`` (cache blocking over seeds), ``workers`` (blocks in
forked processes) and ``metrics=``.

They exist for speed only (benchmarks/bench_simulator.py); none may change what a run computes
beyond the last bit of a BLAS product, and ``workers`` not even that.
"""

from __future__ import annotations

import numpy as np
import pytest

from fedtheory.errors import AssumptionError, MetricNotRecordedError
from fedtheory.participation import make_participation
from fedtheory.problems import random_logistic, random_quadratic
from fedtheory.simulation import simulate
from fedtheory.simulation.runner import BLOCK_BYTES, check_run_memory, default_seed_block

N, D = 6, 5


@pytest.fixture(scope="module")
def prob():
    return random_quadratic(N, D, condition=4.0, heterogeneity=1.5, seed=2)


@pytest.mark.parametrize("alg", ["fedavg", "focus", "scaffold"])
def test_seed_blocks_equal_their_seed_id_runs_bit_for_bit(prob, alg):
    model = make_participation("uniform", N, 2)
    kw = dict(rounds=30, seed=4, lr=0.05, local_steps=3)
    blocked = simulate(prob, alg, model, seeds=7, seed_block=3, **kw)
    # balanced blocks of 7 seeds at most 3 each: sizes 2, 3, 2
    parts = [simulate(prob, alg, model, seed_ids=ids, **kw) for ids in ([0, 1], [2, 3, 4], [5, 6])]
    want = np.concatenate([p.x_final for p in parts])
    assert np.array_equal(blocked.x_final, want)
    assert np.array_equal(blocked.error, np.concatenate([p.error for p in parts]))
    # against one batch of all seeds: the same numbers up to the rounding of a BLAS product
    whole = simulate(prob, alg, model, seeds=7, seed_block=7, **kw)
    assert np.allclose(blocked.x_final, whole.x_final, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("alg", ["fedavg", "focus"])
def test_worker_processes_give_the_same_bits_as_one_process(prob, alg):
    model = make_participation("uniform", N, 2)
    # FedAvg at lr 2.5 > 2 / L_max: some seeds pass the bound, others not (flags and frozen
    # states must come back from the workers too)
    diverging = dict(lr=2.5, divergence_bound=1e4) if alg == "fedavg" else dict(lr=0.05)
    kw = dict(rounds=25, seed=3, seeds=7, seed_block=2, **diverging)
    one = simulate(prob, alg, model, local_steps=3, workers=1, **kw)
    two = simulate(prob, alg, model, local_steps=3, workers=2, **kw)
    assert np.array_equal(one.x_final, two.x_final, equal_nan=True)
    assert one.metrics.keys() == two.metrics.keys()
    for name in one.metrics:
        assert np.array_equal(one.metrics[name], two.metrics[name], equal_nan=True), name
    assert np.array_equal(one.diverged, two.diverged)
    assert np.array_equal(one.diverged_at, two.diverged_at)
    assert one.seed_ids == two.seed_ids == list(range(7))
    if alg == "fedavg":
        assert one.diverged.any() and not one.diverged.all(), "the test needs both kinds"


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "2"])
def test_a_bad_worker_count_is_named(prob, bad):
    with pytest.raises(AssumptionError, match="workers"):
        simulate(prob, "fedavg", "full", rounds=2, lr=0.1, local_steps=1, workers=bad)


def test_unrequested_metrics_are_not_recorded_and_the_rest_unchanged(prob):
    """A metric left out is absent, and reading it says how to record it (it was an all-NaN
    array); the recorded ones are the same bits."""
    kw = dict(rounds=20, seeds=2, seed=1, lr=0.05, local_steps=2)
    full = simulate(prob, "focus", "full", metrics="all", **kw)
    some = simulate(prob, "focus", "full", metrics=["error"], **kw)
    assert np.array_equal(full.error, some.error)
    assert np.array_equal(full.x_final, some.x_final)
    assert list(some.metrics) == ["error"] and "tracking_residual" in some.metrics.available
    for read in (
        lambda: some.grad_norm2,
        lambda: some.metrics["tracking_residual"],
        lambda: some.final("grad_norm2"),
    ):
        with pytest.raises(MetricNotRecordedError, match=r"metrics=\['error', '"):
            read()
    assert getattr(some, "consensus", None) is None and some.metrics.get("consensus") is None
    assert np.isfinite(full.grad_norm2).all()


def test_unknown_metric_and_bad_block_are_named(prob):
    with pytest.raises(AssumptionError, match="unknown metrics"):
        simulate(prob, "fedavg", "full", rounds=2, lr=0.1, local_steps=1, metrics=["loss"])
    with pytest.raises(AssumptionError, match="seed_block"):
        simulate(prob, "fedavg", "full", rounds=2, lr=0.1, local_steps=1, seed_block=0)


def test_the_memory_estimate_counts_the_blocks_that_run_at_once(monkeypatch):
    """Each worker holds a block's draws and state: 4 blocks of 2.5 GB of participation draws
    fit in 4 GB one after the other, not two at a time."""
    monkeypatch.setenv("FEDTHEORY_MEMORY_LIMIT", str(4e9))
    kw = dict(seeds=400, rounds=10_000, n_clients=100, dim=10, block=100)
    check_run_memory(**kw, workers=1)
    with pytest.raises(AssumptionError, match="memory"):
        check_run_memory(**kw, workers=2)
    check_run_memory(**{**kw, "seeds": 100}, workers=2)  # one block: one worker holds it


def test_default_seed_blocks_follow_the_participants_where_the_state_leaves_few_seeds():
    """The default block keeps the state-sized blocks of small runs (327 seeds on
    figure4_problem's N = 16, d = 50), and sizes large ones by the participants' rows and the
    held state: N = 1600, M = 400, d = 20 gets 16 seeds (8 by the state rule), N = 10,000,
    M = 100 gets 3 (the held state's bound), and never 0."""
    assert default_seed_block(16, 50, 8, 4) == BLOCK_BYTES // (16 * 50 * 8) == 327
    assert default_seed_block(160, 20, 8, 40) == BLOCK_BYTES // (160 * 20 * 8)
    assert default_seed_block(1600, 20, 8, 400) == 16
    assert default_seed_block(1600, 20, 8, 1600) == 8  # full participation: the work is N rows
    assert default_seed_block(10_000, 20, 8, 100) == 3
    assert default_seed_block(10**6, 1000, 8, 10) == 1


def test_large_runs_get_the_same_default_blocks_and_bits_with_any_worker_count():
    """N d above the state rule's 16 seeds: the participant-sized blocks are a function of the
    run, so one and two worker processes give the same bits."""
    big = random_quadratic(1000, 20, seed=1)  # compressed participant layouts too
    kw = dict(rounds=4, seeds=40, lr=0.05, local_steps=2, clients_per_round=10)
    assert default_seed_block(1000, 20, 8, 10) == 16  # 3 blocks of 40 seeds, made 4 (even)
    one = simulate(big, "focus", "uniform", workers=1, **kw)
    two = simulate(big, "focus", "uniform", workers=2, **kw)
    for name, values in one.metrics.items():
        np.testing.assert_array_equal(values, two.metrics[name], err_msg=name)
    np.testing.assert_array_equal(one.x_final, two.x_final)


def test_a_default_run_records_the_cheap_error_only(prob):
    """Metrics on demand (issue 25): by default the error where x* is known (grad_norm2 where
    it is not), each recorded round; the others on request, by name or 'all' (every metric the
    problem allows)."""
    kw = dict(rounds=6, seeds=2, seed=1, lr=0.05, local_steps=2)
    res = simulate(prob, "focus", "uniform", clients_per_round=2, **kw)
    recorded = {k for k, v in res.metrics.items() if np.isfinite(v).any()}
    assert recorded == set(res.metrics) == {"error"}
    assert res.config["recorded_metrics"] == ["error"]
    every = simulate(prob, "focus", "uniform", clients_per_round=2, metrics="all", **kw)
    assert np.array_equal(every.error, res.error)
    assert all(np.isfinite(v).all() for v in every.metrics.values())
    nc = random_logistic(4, 10, 3, lam=0.0, ncvx=0.2, seed=0)  # no x*: the gradient norm
    res = simulate(nc, "fedavg", "full", **kw)
    assert res.config["recorded_metrics"] == ["grad_norm2"] and np.isfinite(res.grad_norm2).all()
    every = simulate(nc, "fedavg", "full", metrics="all", **kw)
    assert set(every.config["recorded_metrics"]) == {"grad_norm2", "consensus"}
