"""Problems: stacked gradients against per-client formulas, known answers, file validation."""

from __future__ import annotations

import numpy as np
import pytest

from fedtheory.errors import AssumptionError, FedTheoryError
from fedtheory.problems import (
    BUILTIN_PROBLEMS,
    LeastSquaresProblem,
    PLProblem,
    Problem,
    ProblemFile,
    QuadraticProblem,
    figure4_data,
    figure4_problem,
    leaf_synthetic_problem,
    make_problem,
    problem_info,
    random_least_squares,
    random_logistic,
    random_quadratic,
)


def _fd_check(P, x, v, eps=1e-6):
    fd = (P.loss(x + eps * v) - P.loss(x - eps * v)) / (2 * eps)
    return float(fd), float(P.full_grad(x) @ v)


def test_least_squares_gradients_are_the_per_client_formula():
    P = random_least_squares(5, 7, 3, lam=0.3, seed=2)
    assert isinstance(P, Problem)
    X = np.random.default_rng(0).standard_normal((4, 2, 5, 3))  # extra leading axes
    G = P.grads(X)
    for i in range(5):
        resid = np.einsum("kd,...d->...k", P.A[i], X[..., i, :]) - P.b[i]
        want = np.einsum("kd,...k->...d", P.A[i], resid) + 0.3 * X[..., i, :]
        assert np.allclose(G[..., i, :], want, atol=1e-12)
    x = X[0, 0, 0]
    loss = np.mean([0.5 * np.sum((P.A[i] @ x - P.b[i]) ** 2) for i in range(5)]) + 0.15 * x @ x
    assert P.loss(x) == pytest.approx(loss, rel=1e-12)
    assert np.allclose(P.full_grad(x), P.grads(np.tile(x, (5, 1))).mean(axis=0))


def test_quadratic_known_answers():
    P = random_quadratic(6, 4, condition=20.0, heterogeneity=1.5, seed=1)
    assert np.linalg.norm(P.full_grad(P.x_star)) < 1e-12
    assert P.L / P.mu == pytest.approx(P.condition_number)
    assert P.mu > 0 and P.L_max >= P.L - 1e-12
    # sigma_g: heterogeneity at the optimum
    g = P.grads(np.tile(P.x_star, (6, 1)))
    assert P.sigma_g == pytest.approx(np.sqrt((g**2).sum(1).mean()))
    assert P.f_star == pytest.approx(float(P.loss(P.x_star)))
    same = random_quadratic(6, 4, identical=True, seed=1)
    assert same.sigma_g < 1e-10  # identical f_i share the optimum
    fd, an = _fd_check(P, np.ones(4), np.arange(4.0))
    assert fd == pytest.approx(an, rel=1e-7)


def test_additive_noise_and_minibatches_are_unbiased():
    P = random_least_squares(3, 6, 2, noise=0.5, batch_size=2, seed=0)
    rng = np.random.default_rng(0)
    X = np.tile(np.array([0.3, -0.2]), (4000, 3, 1))
    G = P.grads(X, rng)
    exact = P.grads(X[:1])[0]
    se = G.std(axis=0) / np.sqrt(G.shape[0])
    assert np.all(np.abs(G.mean(axis=0) - exact) < 5 * se)
    assert not np.allclose(G[0], G[1])
    assert np.array_equal(P.grads(X[:2]), P.grads(X[:2], None))  # no rng: exact


def test_figure4_problem_is_the_authors_data():
    A, b, x_o, p = figure4_data()
    rs = np.random.RandomState(1234)
    u, G, xo, ns = rs.rand(8000), rs.randn(8000, 50), rs.randn(50, 1), 0.1 * rs.randn(8000, 1)
    AA = np.diag((u + 1) / 2) @ G
    bb = AA @ xo + ns
    assert A.shape == (16, 500, 50) and b.shape == (16, 500)
    assert np.array_equal(A[7], AA[7::16]) and np.array_equal(b[15], bb[15::16, 0])
    pp = np.random.RandomState(5).rand(16) + 0.01
    assert np.allclose(p, pp / pp.sum())
    P = figure4_problem()
    x_ls = np.linalg.lstsq(AA, bb[:, 0], rcond=None)[0]
    assert np.linalg.norm(P.x_star - x_ls) <= 1e-12 * np.linalg.norm(x_ls)
    assert P.n_clients == 16 and P.dim == 50 and P.lam == 0.0


def test_problem_file_loads_and_validates(tmp_path):
    rng = np.random.default_rng(0)
    A, b = rng.standard_normal((4, 5, 3)), rng.standard_normal((4, 5))
    A_nan = A.copy()
    A_nan[2, 1, 0] = np.nan
    f = tmp_path / "ok.npz"
    np.savez(f, A=A, b=b, lam=0.2)
    P = ProblemFile(f)
    assert P.lam == 0.2 and P.n_clients == 4 and P.dim == 3
    ref = LeastSquaresProblem(A, b, 0.2)
    assert np.allclose(P.x_star, ref.x_star)
    cases = {
        "noA.npz": ({"b": b}, "no array 'A'"),
        "shape.npz": ({"A": A, "b": b[:, :3]}, "b must have shape"),
        "ndim.npz": ({"A": A[0], "b": b}, "A must have shape"),
        "nan.npz": ({"A": A_nan, "b": b}, "non-finite"),
        "lam.npz": ({"A": A, "b": b, "lam": -1.0}, "lam"),
    }
    for name, (arrays, msg) in cases.items():
        np.savez(tmp_path / name, **arrays)
        with pytest.raises(FedTheoryError, match=msg):
            ProblemFile(tmp_path / name)
    with pytest.raises(FileNotFoundError):
        ProblemFile(tmp_path / "missing.npz")


def test_quadratic_validation():
    H = np.stack([np.eye(2), np.array([[1.0, 2.0], [0.0, 1.0]])])
    with pytest.raises(AssumptionError, match="symmetric"):
        QuadraticProblem(H, np.zeros((2, 2)))
    with pytest.raises(AssumptionError, match="positive semidefinite"):
        QuadraticProblem(np.stack([np.eye(2), -np.eye(2)]), np.zeros((2, 2)))
    with pytest.raises(AssumptionError, match="h must have shape"):
        QuadraticProblem(np.stack([np.eye(2)] * 2), np.zeros((3, 2)))


def test_float32_on_request():
    P = random_quadratic(3, 2, dtype=np.float32)
    X = np.zeros((1, 3, 2), dtype=np.float32)
    assert P.grads(X).dtype == np.float32


def test_logistic_pl_and_synthetic_known_answers():
    lg = random_logistic(4, 30, 3, lam=0.1, seed=0)
    assert np.linalg.norm(lg.full_grad(lg.x_star)) < 1e-12
    X = np.random.default_rng(1).standard_normal((2, 4, 3))
    G = lg.grads(X)
    i = 2
    z = lg.A[i] @ X[1, i]
    want = -(lg.A[i].T @ (lg.b[i] / (1 + np.exp(lg.b[i] * z)))) / 30 + 0.1 * X[1, i]
    assert np.allclose(G[1, i], want, atol=1e-13)
    fd, an = _fd_check(lg, X[0, 0], X[1, 1])
    assert fd == pytest.approx(an, rel=1e-6)
    nc = random_logistic(4, 30, 3, lam=0.0, ncvx=0.5, seed=0)
    assert nc.x_star is None and nc.mu is None
    fd, an = _fd_check(nc, X[0, 0], X[1, 1])
    assert fd == pytest.approx(an, rel=1e-6)

    pl = PLProblem(5, 3, heterogeneity=2.0, seed=0)
    assert np.allclose(pl.full_grad(pl.x_star), 0.0) and pl.loss(pl.x_star) == 0.0
    assert np.allclose(pl.grads(np.tile(pl.x_star, (5, 1))).mean(0), 0.0, atol=1e-12)
    assert np.abs(pl.u).max() > 0.1  # the clients' stationary points differ
    x = pl.x_star + 0.7
    g = pl.full_grad(x)
    assert 0.5 * g @ g >= pl.mu * pl.loss(x)  # the PL inequality at a sample point

    sy = leaf_synthetic_problem(0.5, 0.5, 4, samples=12, lam=0.1, seed=0)
    assert sy.dim == 10 * 61
    assert np.linalg.norm(sy.full_grad(sy.x_star)) < 1e-7
    v = np.random.default_rng(2).standard_normal(sy.dim) * 0.01
    fd, an = _fd_check(sy, v, v)
    assert fd == pytest.approx(an, rel=1e-6)


def test_the_built_in_problems_are_the_registry():
    """A name means one problem everywhere: make_problem builds what the registry declares,
    and an unknown name lists the registered ones."""
    assert list(BUILTIN_PROBLEMS) == ["figure4", "quadratic", "least-squares"]
    a = make_problem("Quadratic", seed=3)
    b = problem_info("quadratic").build(3, None)
    np.testing.assert_array_equal(a.x_star, b.x_star)
    with pytest.raises(FedTheoryError, match="choose one of figure4, quadratic, least-squares"):
        make_problem("quadratik")
