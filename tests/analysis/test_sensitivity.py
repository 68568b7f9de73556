"""Derivatives of the exact rates (fedtheory.analysis.exact.sensitivity) against central finite
differences of the oracle itself, and the adjoint of the mean-square operator against its
defining identity <Q, T(P)> = <T*(Q), P>."""

from __future__ import annotations

import numpy as np
import pytest

from fedtheory.analysis.exact import exact_rates
from fedtheory.analysis.exact.oracle import _system
from fedtheory.analysis.exact.sensitivity import ms_adjoint, rate_gradient
from fedtheory.participation import make_participation
from fedtheory.problems import QuadraticProblem, random_quadratic

MODELS = {
    "full": lambda n, p=None: make_participation("full", n),
    "uniform": lambda n, p=None: make_participation("uniform", n, 2),
    "bernoulli": lambda n, p=None: make_participation(
        "bernoulli", n, None, p=np.linspace(0.2, 0.9, n) if p is None else p
    ),
}


@pytest.mark.parametrize("algorithm", ["fedavg", "focus", "scaffold", "scaffnew", "fedprox"])
@pytest.mark.parametrize("model", ["uniform", "bernoulli"])
def test_the_adjoint_is_the_adjoint(algorithm, model):
    prob = random_quadratic(4, 3, seed=2)
    kw = {"prox_mu": 0.1} if algorithm == "fedprox" else {}
    s = _system(
        prob, algorithm, MODELS[model](4), lr=0.04, local_steps=2, rule="unbiased", **kw
    ).system
    rng = np.random.default_rng(0)
    P, Q = rng.standard_normal((2, s.n_r, s.n_r))
    P, Q = P + P.T, Q + Q.T
    lhs = np.sum(Q * s.ms_apply(P))
    rhs = np.sum(ms_adjoint(s, Q) * P)
    assert rhs == pytest.approx(lhs, rel=1e-12)


def _rate(H, h, algorithm, part, quantity, lr, K):
    prob = QuadraticProblem(H, h)
    r = exact_rates(
        prob,
        algorithm,
        part,
        lr=lr,
        local_steps=K,
        stationary=False,
        verify=False,
        tol=1e-13,
        mean_square="skip" if quantity == "mean_rate" else "auto",
    )
    return r.mean_rate if quantity == "mean_rate" else r.mean_square_rate


@pytest.mark.parametrize(
    "algorithm, model, quantity",
    [
        ("focus", "uniform", "mean_square_rate"),
        ("focus", "bernoulli", "mean_square_rate"),
        ("fedavg", "bernoulli", "mean_square_rate"),
        ("scaffold", "uniform", "mean_square_rate"),
        ("fedavg", "full", "mean_square_rate"),
        ("focus", "uniform", "mean_rate"),
        ("fedavg", "bernoulli", "mean_rate"),
    ],
)
def test_the_gradient_matches_finite_differences_of_the_oracle(algorithm, model, quantity):
    N, d, K, lr = 4, 3, 2, 0.03
    prob = random_quadratic(N, d, seed=5, condition=6.0)
    H, h = np.asarray(prob.H), np.asarray(prob.h)
    p = np.linspace(0.2, 0.9, N)
    part = MODELS[model](N, p)
    at = (lambda q: MODELS[model](N, q)) if model == "bernoulli" else None
    g = rate_gradient(
        prob,
        algorithm,
        part,
        quantity=quantity,
        lr=lr,
        local_steps=K,
        participation_at=at,
        p=p if at else None,
        tol=1e-13,
    )
    assert g.value == pytest.approx(_rate(H, h, algorithm, part, quantity, lr, K), rel=1e-9)
    rng = np.random.default_rng(1)
    E = rng.standard_normal((N, d, d))
    E = E + np.swapaxes(E, 1, 2)
    t = 1e-5
    fd = (
        _rate(H + t * E, h, algorithm, part, quantity, lr, K)
        - _rate(H - t * E, h, algorithm, part, quantity, lr, K)
    ) / (2 * t)
    assert np.sum(g.d_H * E) == pytest.approx(fd, rel=2e-5, abs=1e-9)
    fd_lr = (
        _rate(H, h, algorithm, part, quantity, lr * (1 + t), K)
        - _rate(H, h, algorithm, part, quantity, lr * (1 - t), K)
    ) / (2 * t * lr)
    assert g.d_lr == pytest.approx(fd_lr, rel=2e-5, abs=1e-9)
    if at is not None:
        dp = rng.standard_normal(N)
        fd_p = (
            _rate(H, h, algorithm, at(p + t * dp), quantity, lr, K)
            - _rate(H, h, algorithm, at(p - t * dp), quantity, lr, K)
        ) / (2 * t)
        assert g.d_p @ dp == pytest.approx(fd_p, rel=2e-5, abs=1e-9)


def test_the_gradient_on_a_matrix_free_operator():
    # N = 6, d = 4 FOCUS: 28 reduced coordinates, 406 packed unknowns: ARPACK on T and T*.
    prob = random_quadratic(6, 4, seed=3, condition=4.0)
    H, h = np.asarray(prob.H), np.asarray(prob.h)
    part = make_participation("uniform", 6, 2)
    g = rate_gradient(prob, "focus", part, lr=0.01, local_steps=3, tol=1e-13)
    assert "matrix-free" in g.method and g.vector is not None
    rng = np.random.default_rng(4)
    E = rng.standard_normal(H.shape)
    E = E + np.swapaxes(E, 1, 2)
    t = 1e-5
    fd = (
        _rate(H + t * E, h, "focus", part, "mean_square_rate", 0.01, 3)
        - _rate(H - t * E, h, "focus", part, "mean_square_rate", 0.01, 3)
    ) / (2 * t)
    assert np.sum(g.d_H * E) == pytest.approx(fd, rel=2e-5)
    # a warm start from the vector of the same setting converges at once
    again = rate_gradient(prob, "focus", part, lr=0.01, local_steps=3, tol=1e-13, v0=g.vector)
    assert again.value == pytest.approx(g.value, rel=1e-12)
