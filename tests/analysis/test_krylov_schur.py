"""The Krylov-Schur eigensolver of the exact oracle against dense eigenvalues, its warm starts
and its progress reports; the oracle's warm-start holder."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtheory.analysis.exact import WarmStart, exact_rates, oracle
from fedtheory.analysis.exact import system as system_module
from fedtheory.analysis.exact.krylov import CHECK, krylov_schur
from fedtheory.analysis.exact.system import spectral_radius
from fedtheory.errors import FedTheoryError
from fedtheory.participation import make_participation
from fedtheory.problems import random_quadratic


def _positive_map(n: int, terms: int, seed: int) -> np.ndarray:
    """The matrix of P -> sum_r A_r P A_r^T on vec(P), n^2 x n^2: a positive map."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((terms, n, n)) / n
    return sum(np.kron(a, a) for a in A)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(3, 7), terms=st.integers(1, 4), seed=st.integers(0, 10_000))
def test_the_perron_root_of_a_positive_map_is_the_dense_spectral_radius(n, terms, seed):
    T = _positive_map(n, terms, seed)
    moduli = np.sort(np.abs(np.linalg.eigvals(T)))[::-1]
    rho = moduli[0]
    ks = krylov_schur(lambda v: T @ v, np.eye(n).reshape(-1), tol=1e-12, basis=12, keep=6)
    assert isinstance(ks.value, float)
    assert abs(ks.value - rho) <= 1e-10 * rho
    v = ks.vector
    assert np.linalg.norm(T @ v - ks.value * v) <= 1e-10 * rho * np.linalg.norm(v)
    if moduli[1] >= (1 - 1e-6) * rho:
        return  # a multiple Perron root (A P A^T with a complex dominant pair of A: the
        # symmetric and antisymmetric combinations share |lambda|^2): any vector of its
        # eigenspace is an answer, and only one of them is positive semidefinite
    P = v.reshape(n, n)  # the Perron vector: positive semidefinite (up to its sign)
    lam = np.linalg.eigvalsh(0.5 * (P + P.T)) * np.sign(np.trace(P))
    assert lam.min() >= -1e-8 * lam.max()


def test_largest_modulus_is_refused_naming_arpack():
    """Krylov-Schur is for positive maps (their Perron root, ``which="LR"``); a general
    operator's largest modulus is ARPACK's (spectral_radius sends it there)."""
    A = np.random.default_rng(142).standard_normal((7, 7))
    with pytest.raises(FedTheoryError, match="ARPACK"):
        krylov_schur(lambda v: A @ v, np.ones(7), which="LM")
    rho, _, how, _ = spectral_radius(lambda v: A @ v, 7, solver="krylov-schur", tol=1e-12)
    assert "ARPACK" in how
    assert abs(rho - np.abs(np.linalg.eigvals(A)).max()) <= 1e-10 * rho


def test_a_close_start_converges_at_the_second_reading_and_a_subspace_at_once():
    T = _positive_map(5, 3, seed=1)
    lam, V = np.linalg.eig(T)
    v = np.real(V[:, np.argmax(lam.real)])
    exact = krylov_schur(lambda x: T @ x, v, tol=1e-10, basis=20, keep=10)
    assert exact.applications == 1 and exact.residual == 0.0  # an invariant subspace
    near = v + 1e-8 * np.random.default_rng(0).standard_normal(v.size)
    warm = krylov_schur(lambda x: T @ x, near, tol=1e-6, basis=30, keep=10)
    # converged at the first reading, returned at the second (the value did not move)
    assert warm.applications == 2 * CHECK and warm.restarts == 0
    assert abs(warm.value - lam.real.max()) <= 1e-9
    # an invariant subspace (a diagonal operator from a vector with three components) is found
    # in three applications, its Ritz values exact
    D = np.diag(np.arange(1.0, 31.0))
    start = np.zeros(30)
    start[[0, 4, 29]] = 1.0
    inv = krylov_schur(lambda x: D @ x, start, tol=1e-12, basis=20, keep=10)
    assert inv.applications == 3 and inv.value == pytest.approx(30.0, rel=1e-14)


def test_callback_budget_and_bad_input():
    T = _positive_map(6, 2, seed=4)
    seen = []
    ks = krylov_schur(
        lambda v: T @ v,
        np.ones(36),
        tol=1e-12,
        basis=10,
        keep=5,
        callback=lambda a, val, r: seen.append((a, val, r)),
    )
    assert [a for a, _, _ in seen] == list(range(1, ks.applications + 1))
    assert seen[0][1] is None and seen[0][2] == float("inf")
    with pytest.raises(FedTheoryError, match="did not converge"):
        krylov_schur(
            lambda v: T @ v, np.ones(36), tol=1e-300, basis=10, keep=5, max_applications=30
        )
    with pytest.raises(FedTheoryError, match="zero or not finite"):
        krylov_schur(lambda v: v, np.zeros(8))
    with pytest.raises(FedTheoryError, match="which"):
        krylov_schur(lambda v: v, np.ones(8), which="SR")


def test_a_warm_start_carries_the_eigenvector_between_nearby_solves(monkeypatch):
    """The matrix-free path (forced): the second of two nearby solves starts from the first's
    eigenvector, needs no more applications than the first and gives the same rate as a cold
    solve; the holder counts both."""
    monkeypatch.setattr(oracle, "DENSE_MAX", 0)
    prob = random_quadratic(6, 3, condition=4.0, seed=2)
    model = make_participation("uniform", 6, 2)
    kw = {"local_steps": 2, "stationary": False, "mean_square": "operator", "tol": 1e-11}
    ws = WarmStart()
    exact_rates(prob, "focus", model, lr=0.05, warm_start=ws, **kw)
    first = ws.applications
    assert ws.solves == 1 and ws.vector is not None and first > 0
    warm = exact_rates(prob, "focus", model, lr=0.051, warm_start=ws, **kw)
    cold = exact_rates(prob, "focus", model, lr=0.051, **kw)
    assert ws.solves == 2 and ws.applications - first <= first
    assert abs(warm.mean_square_rate - cold.mean_square_rate) <= 1e-10
    assert "positive semidefinite" in warm.methods["mean-square rate"]
    with pytest.raises(Exception, match="WarmStart"):
        exact_rates(prob, "focus", model, lr=0.05, warm_start=np.ones(3), **kw)
    with pytest.raises(Exception, match="progress"):
        exact_rates(prob, "focus", model, lr=0.05, progress=3, **kw)


def test_progress_reports_the_applications_value_and_residual(monkeypatch):
    monkeypatch.setattr(oracle, "DENSE_MAX", 0)
    prob = random_quadratic(6, 3, condition=4.0, seed=2)
    model = make_participation("uniform", 6, 2)
    seen = []
    res = exact_rates(
        prob,
        "focus",
        model,
        lr=0.05,
        local_steps=2,
        stationary=False,
        mean_square="operator",
        eigensolver="krylov-schur",
        progress=lambda *a: seen.append(a),
    )
    stages = {s for s, *_ in seen}
    assert stages == {"mean-square rate"}
    last = [a for s, a, v, r in seen if v is not None][-1]
    assert last <= max(a for _, a, _, _ in seen)
    values = [v for _, _, v, _ in seen if v is not None]
    assert abs(values[-1] - res.mean_square_rate) <= 1e-6


def test_a_start_in_an_invariant_subspace_goes_on_with_the_fallback():
    """T(P) = A P A^T with A = diag(0.5, 0.9, 0.8): e1 e1^T is an exact eigenvector (0.25), not
    the Perron one (0.81). From it alone the Krylov space is invariant and holds 0.25; the
    fallback (the identity, positive definite) continues the basis and finds 0.81."""
    A = np.diag([0.5, 0.9, 0.8])
    T = np.kron(A, A)
    e11 = np.zeros((3, 3))
    e11[0, 0] = 1.0
    alone = krylov_schur(lambda v: T @ v, e11.reshape(-1), tol=1e-12, basis=8, keep=4)
    assert alone.value == pytest.approx(0.25, rel=1e-14)
    ks = krylov_schur(
        lambda v: T @ v, e11.reshape(-1), tol=1e-12, basis=8, keep=4, fallback=np.eye(3).reshape(-1)
    )
    assert ks.value == pytest.approx(0.81, rel=1e-13)


def test_arpack_and_krylov_schur_agree_and_arpack_reports_each_application(monkeypatch):
    """The default eigensolver (ARPACK) and Krylov-Schur give the same mean-square rate on a
    matrix-free operator, and ARPACK's progress is one call per application with no estimate
    (value None, residual nan: ARPACK reports nothing before it converges)."""
    monkeypatch.setattr(oracle, "DENSE_MAX", 0)
    prob = random_quadratic(6, 3, condition=4.0, seed=2)
    model = make_participation("uniform", 6, 2)
    kw = dict(lr=0.05, local_steps=2, stationary=False, mean_square="operator", tol=1e-12)
    seen = []
    arpack = exact_rates(prob, "focus", model, progress=lambda *a: seen.append(a), **kw)
    ks = exact_rates(prob, "focus", model, eigensolver="krylov-schur", **kw)
    assert "ARPACK" in arpack.methods["mean-square rate"]
    assert "Krylov-Schur" in ks.methods["mean-square rate"]
    assert abs(arpack.mean_square_rate - ks.mean_square_rate) <= 1e-9
    counts = [a for _, a, _, _ in seen]
    assert counts == list(range(1, len(counts) + 1)) and len(counts) > 5
    assert all(v is None and np.isnan(r) for _, _, v, r in seen)
    with pytest.raises(Exception, match="unknown eigensolver"):
        exact_rates(prob, "focus", model, eigensolver="lanczos", **kw)


def test_arpack_takes_a_block_where_the_top_eigenvalue_sits_in_a_tight_cluster(monkeypatch):
    """A top eigenvalue inside a cluster much tighter than the tolerance: one wanted eigenvalue
    does not converge within the restart budget, and the solve continues with the largest of a
    block of CLUSTER_K from the same start, to the true top; a separated top never takes the
    block. (ARPACK_RESTARTS lowered to 3 so the first attempt gives up quickly.)"""
    monkeypatch.setattr(system_module, "ARPACK_RESTARTS", 3)
    n = 1500  # above DENSE_EIG_MAX: the matrix-free path
    rng = np.random.default_rng(4)
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]

    def solve(lam):
        A = (Q * lam) @ Q.T
        calls = []
        out = spectral_radius(lambda v: A @ v, n, tol=1e-10, callback=lambda a, *_: calls.append(a))
        assert calls == list(range(1, len(calls) + 1))  # counted across the attempts
        return out

    rest = rng.uniform(0.0, 0.9, n)
    cluster = rest.copy()
    cluster[:10] = 1.0 - 1e-7 * np.arange(10)  # ten eigenvalues within 1e-6 of the top, 1
    rho, v, how, apps = solve(cluster)
    assert f"the largest of a block of {system_module.CLUSTER_K}" in how
    assert abs(rho - 1.0) <= 1e-12
    assert v is not None and abs(v @ Q[:, 0]) >= (1 - 1e-8) * np.linalg.norm(v)
    separated = rest.copy()
    separated[0] = 1.0
    rho, _, how, _ = solve(separated)
    assert "block" not in how and abs(rho - 1.0) <= 1e-12
