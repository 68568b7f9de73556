"""NonPLProblem (claim C4, non-convex part): smooth, non-convex, not PL, and gradient descent on
it is genuinely sublinear."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtheory.problems.nonconvex import NonPLProblem, PLProblem


def _psi2(t: np.ndarray) -> np.ndarray:
    """psi'' by central differences of psi' (independent of the closed form in the docstring)."""
    prob = NonPLProblem(1, t.size, heterogeneity=0.0)
    h = 1e-5
    s = prob.s
    return (prob.full_grad(s + t + h) - prob.full_grad(s + t - h)) / (2 * h)


def test_gradients_match_the_loss_and_average_to_the_global_gradient():
    prob = NonPLProblem(6, 4, heterogeneity=2.0, seed=3)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(4) * 2
    h = 1e-6
    fd = np.array([(prob.loss(x + h * e) - prob.loss(x - h * e)) / (2 * h) for e in np.eye(4)])
    np.testing.assert_allclose(prob.full_grad(x), fd, rtol=1e-6, atol=1e-9)
    G = prob.grads(np.broadcast_to(x, (6, 4)))
    np.testing.assert_allclose(G.mean(axis=0), prob.full_grad(x), atol=1e-12)
    assert abs(prob.loss(prob.x_star)) == 0 and np.all(prob.full_grad(prob.x_star) == 0)


def test_smooth_with_the_stated_constant_and_non_convex():
    t = np.linspace(-6, 6, 24001)
    curv = _psi2(t)
    assert curv.max() == pytest.approx(NonPLProblem.L, rel=1e-6)
    assert curv.min() < -0.25  # psi'' < 0 for |t| > 1: non-convex (each f_i: the same Hessian)
    assert abs(_psi2(np.array([0.0]))[0]) < 1e-9  # a degenerate minimum


@settings(max_examples=30, deadline=None)
@given(st.floats(1e-3, 0.2), st.integers(0, 10**6))
def test_no_pl_constant(scale, seed):
    """||grad f||^2 / (f - f*) -> 0 towards x* (PLProblem keeps it above 2 mu)."""
    prob = NonPLProblem(3, 5, seed=seed)
    d = np.random.default_rng(seed).standard_normal(5)
    d /= np.linalg.norm(d)
    ratio = lambda p, x: (p.full_grad(x) ** 2).sum() / (p.loss(x) - p.f_star)  # noqa: E731
    near, nearer = prob.x_star + scale * d, prob.x_star + 0.1 * scale * d
    assert ratio(prob, nearer) < 0.02 * ratio(prob, near) + 1e-300
    assert ratio(prob, near) <= 16 * scale**2 * 1.01  # 16 t^2 / (1 + t^2)^4 <= 16 t^2
    pl = PLProblem(3, 5, seed=seed)
    assert ratio(pl, pl.x_star + scale * d) >= 2 * pl.mu


def test_gradient_descent_is_sublinear():
    """GD with step 1/L: ||grad f(x_k)||^2 decays like k^-3, never geometrically:
    the ratio over a doubling of k stays near 2^-3 (a geometric rate would drive it to 0)."""
    prob = NonPLProblem(4, 5, seed=1)
    x = np.zeros(5)
    g2 = {}
    for k in range(1, 16001):
        x = x - prob.full_grad(x) / prob.L
        if k in (2000, 4000, 8000, 16000):
            g2[k] = float((prob.full_grad(x) ** 2).sum())
    ratios = [g2[2 * k] / g2[k] for k in (2000, 4000, 8000)]
    assert all(0.1 < r < 0.16 for r in ratios), ratios  # 2^-3 = 0.125
    slope = np.polyfit(np.log(list(g2)), np.log(list(g2.values())), 1)[0]
    assert -3.3 < slope < -2.7
