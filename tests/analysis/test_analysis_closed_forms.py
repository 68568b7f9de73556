"""Closed forms and rate fitting; claims F1-F3 on small quadratics (003 Sec. 2, App. C)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from fedtheory.analysis import (
    error_floor,
    fedavg_fixed_point,
    fedavg_stationary_mean,
    fedavg_stationary_mean_enumerated,
    fit_linear_rate,
    fit_power_law,
    local_affine_maps,
    optimum,
    weighted_optimum,
)
from fedtheory.errors import AssumptionError
from fedtheory.participation import make_participation
from fedtheory.problems import PLProblem, random_quadratic
from fedtheory.simulation import simulate

P_NONUNIFORM = np.array([0.55, 0.25, 0.15, 0.05])


@pytest.fixture(scope="module")
def prob():
    return random_quadratic(4, 3, condition=4.0, heterogeneity=2.0, seed=11)


def test_optima_and_affine_maps(prob):
    assert np.allclose(optimum(prob), prob.x_star)
    q = np.array([0.1, 0.2, 0.3, 0.4])
    xq = weighted_optimum(prob, q)
    assert np.allclose(np.einsum("n,nde,e->d", q, prob.H, xq), q @ prob.h)
    M, c = local_affine_maps(prob, 0.1, 3)
    x = np.array([0.3, -1.0, 2.0])
    for i in range(4):
        xi = x.copy()
        for _ in range(3):
            xi = xi - 0.1 * (prob.H[i] @ xi - prob.h[i])
        assert np.allclose(M[i] @ x + c[i], xi)
    with pytest.raises(AssumptionError, match="weights q"):
        weighted_optimum(prob, np.array([1.0, -1.0, 0.5, 0.5]))
    with pytest.raises(AssumptionError, match="quadratic"):
        optimum(PLProblem(4, 3))


def test_li_formula_equals_general_fixed_point(prob):
    lr, K = 0.07, 4
    xs = prob.client_optima()
    T = np.stack([np.eye(3) - np.linalg.matrix_power(np.eye(3) - lr * H, K) for H in prob.H])
    li = np.linalg.solve(T.sum(0), np.einsum("nde,ne->d", T, xs))
    assert np.allclose(fedavg_fixed_point(prob, lr, K), li, rtol=1e-12)


def test_F1_fedavg_full_participation_converges_to_fixed_point_not_x_star(prob):
    lr, K = 0.05, 5
    xb = fedavg_fixed_point(prob, lr, K)
    res = simulate(prob, "fedavg", None, rounds=600, lr=lr, local_steps=K)
    assert np.linalg.norm(res.x_final[0] - xb) <= 1e-10 * np.linalg.norm(xb)
    assert np.linalg.norm(xb - prob.x_star) > 1e-3 * np.linalg.norm(prob.x_star)
    # K = 1: no client drift, the fixed point is x*
    assert np.allclose(fedavg_fixed_point(prob, lr, 1), prob.x_star, rtol=1e-12)


def test_stationary_mean_exact_equals_enumeration(prob):
    for name, m, p in [("uniform", 2, None), ("weighted", 2, P_NONUNIFORM), ("bernoulli", 2, None)]:
        model = make_participation(name, 4, m, p)
        sm = fedavg_stationary_mean(prob, 0.05, 3, model)
        assert sm.exact and sm.memoryless
        en = fedavg_stationary_mean_enumerated(prob, 0.05, 3, model)
        assert np.allclose(sm.x, en, rtol=1e-10)
    markov = fedavg_stationary_mean(prob, 0.05, 3, make_participation("markov", 4, 2))
    assert not markov.memoryless


def test_F2_nonuniform_floor_tends_to_weighted_optimum_as_eta_to_zero(prob):
    model = make_participation("weighted", 4, 1, P_NONUNIFORM)
    q = model.effective_weights("mean").value
    xq = weighted_optimum(prob, q)
    gaps = [
        np.linalg.norm(fedavg_stationary_mean(prob, lr, 2, model).x - xq)
        for lr in (1e-2, 1e-3, 1e-4)
    ]
    assert gaps[0] > gaps[1] > gaps[2] and gaps[2] < 1e-3 * np.linalg.norm(xq)
    assert np.linalg.norm(xq - prob.x_star) > 0.05 * np.linalg.norm(prob.x_star)  # no vanishing
    # the simulated time- and seed-averaged iterate sits at the stationary mean (MC error)
    lr = 0.02
    sm = fedavg_stationary_mean(prob, lr, 2, model)
    res = simulate(
        prob,
        "fedavg",
        model,
        rounds=500,
        seeds=40,
        seed=3,
        lr=lr,
        local_steps=2,
        average_from=100,
    )
    diff = res.x_mean.mean(0) - sm.x
    se = res.x_mean.std(0, ddof=1) / np.sqrt(40)
    assert np.abs(diff / se).max() < 4.0


def test_F3_uniform_K1_floor_shrinks_with_eta_and_identical_clients_converge(prob):
    model = make_participation("uniform", 4, 1)
    assert np.allclose(fedavg_stationary_mean(prob, 0.05, 1, model).x, prob.x_star)
    floors = []
    for lr in (0.04, 0.01):
        res = simulate(prob, "fedavg", model, rounds=1500, seeds=8, lr=lr, local_steps=1)
        floors.append(np.mean(res.error[:, -500:]))
    assert floors[1] < 0.5 * floors[0]
    same = random_quadratic(4, 3, identical=True, seed=2)
    wmodel = make_participation("weighted", 4, 2, P_NONUNIFORM)
    res = simulate(same, "fedavg", wmodel, rounds=400, seeds=3, lr=0.5, local_steps=4)
    assert res.error[:, -1].max() < 1e-12


def test_linear_rate_and_floor():
    r = np.arange(200)
    e = np.maximum(3.0 * 0.8**r, 1e-9)
    fit = fit_linear_rate(e)
    assert fit.rho == pytest.approx(0.8, rel=1e-10) and fit.r2 > 0.999999
    assert fit.floor == pytest.approx(1e-9) and fit.stop < 200
    assert error_floor(e) == pytest.approx(1e-9)
    with pytest.raises(AssumptionError, match=">= 3"):
        fit_linear_rate(np.array([1.0, 0.0, 0.0, 0.0]))


def test_the_rate_fit_is_scipys_linregress():
    """fit_linear_rate's own least-squares line (NumPy, to keep scipy.stats off the start-up
    path) gives scipy.stats.linregress's slope, intercept and r^2."""
    rng = np.random.default_rng(5)
    e = 2.0 * 0.93 ** np.arange(60) * np.exp(0.3 * rng.standard_normal(60))
    fit, ref = fit_linear_rate(e, floor_factor=0.0), stats.linregress(np.arange(60), np.log(e))
    assert (fit.start, fit.stop) == (0, 60)
    assert fit.slope == pytest.approx(ref.slope, rel=1e-12)
    assert fit.intercept == pytest.approx(ref.intercept, rel=1e-12)
    assert fit.r2 == pytest.approx(ref.rvalue**2, rel=1e-12) and 0.5 < fit.r2 < 1
    one = fit_power_law(np.arange(1.0, 61.0), e)  # one seed: the slope's own stderr
    ref = stats.linregress(np.log(np.arange(1.0, 61.0)), np.log(e))
    assert one.exponent == pytest.approx(ref.slope, rel=1e-12)
    assert one.stderr == pytest.approx(ref.stderr, rel=1e-10)


def test_power_law_ci_covers_true_exponent():
    rng = np.random.default_rng(0)
    x = np.array([10.0, 30, 100, 300, 1000])
    y = 2.0 * x**-0.5 * np.exp(0.05 * rng.standard_normal((30, x.size)))
    fit = fit_power_law(x, y)
    assert fit.ci_low < -0.5 < fit.ci_high and fit.ci_high - fit.ci_low < 0.05
    one = fit_power_law(x, y[0])
    assert one.ci_low < one.exponent < one.ci_high
    with pytest.raises(AssumptionError, match="positive"):
        fit_power_law(x, -y)
