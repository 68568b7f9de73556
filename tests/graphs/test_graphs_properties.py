"""Property tests (hypothesis) of mixing matrices and spectral gaps: claims G2, G3, G4."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtheory.graphs import lazy, mixing_matrix, spectral_gap, stochasticity_report
from fedtheory.graphs.spectral import period

FAMILY_RULES = [
    ("ring", None),
    ("ring", "metropolis"),
    ("ring", "max-degree"),
    ("path", None),
    ("star", None),
    ("star", "laplacian"),
    ("complete", None),
    ("complete-random", None),
    ("torus", None),
    ("grid", None),
    ("exponential", None),
    ("exponential", "metropolis"),
    ("erdos-renyi", None),
    ("erdos-renyi", "random"),
    ("random-geometric", None),
    ("hypercube", None),
]


@st.composite
def topologies(draw):
    name, rule = draw(st.sampled_from(FAMILY_RULES))
    n = 2 ** draw(st.integers(1, 6)) if name == "hypercube" else draw(st.integers(2, 40))
    if name == "torus":
        n = draw(st.sampled_from([9, 12, 16, 20, 25, 30]))
    return name, rule, n, draw(st.integers(0, 2**32 - 1)), draw(st.booleans())


@given(topologies())
def test_every_generated_w_is_doubly_stochastic_and_rho_in_unit_interval(case):
    name, rule, n, seed, make_lazy = case
    W = mixing_matrix(name, n, weights=rule, seed=seed, lazy_weights=make_lazy)
    rep = stochasticity_report(W, atol=1e-12)
    assert rep.doubly_stochastic and rep.nonnegative, rep.violations
    g = spectral_gap(W)
    assert 0.0 <= g.rho_norm <= 1.0 and 0.0 <= g.one_minus_rho <= 1.0
    assert g.rho_lambda2 <= g.rho_norm + 1e-12
    assert abs(g.rho_norm + g.one_minus_rho - 1.0) < 1e-12
    if not g.connected:
        assert g.rho_norm == 1.0 and g.warnings


@st.composite
def birkhoff(draw, n_max=10):
    """A random doubly stochastic matrix: a convex combination of random permutations
    (Birkhoff-von Neumann), possibly with the identity in it."""
    n = draw(st.integers(2, n_max))
    k = draw(st.integers(1, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    theta = rng.dirichlet(np.ones(k + 1))
    W = theta[0] * np.eye(n) * draw(st.booleans())
    for t in theta[1:]:
        W += t * np.eye(n)[rng.permutation(n)]
    return W / W.sum(axis=1, keepdims=True)


@given(birkhoff())
def test_g2_norm_of_w_minus_j_at_most_one(W):
    # 000 App. C: ||W - 11^T/n||_2 <= 1 for every doubly stochastic W.
    n = W.shape[0]
    assert np.linalg.norm(W - 1.0 / n, 2) <= 1.0 + 1e-12
    if W.sum(axis=1).min() > 1 - 1e-12 and np.allclose(W.sum(axis=0), 1, atol=1e-12):
        g = spectral_gap(W, atol=1e-12)
        assert g.rho_norm <= 1.0 and g.rho_lambda2 <= g.rho_norm + 1e-10


def test_g2_identity_attains_one():
    for n in (2, 5, 9):
        assert abs(np.linalg.norm(np.eye(n) - 1.0 / n, 2) - 1.0) < 1e-14
        assert spectral_gap(np.eye(n)).rho_norm == 1.0


@given(birkhoff())
def test_g3_nullity_of_i_minus_w_equals_components(W):
    # 000 Asm. 4.5: null(I - W) = span(1) iff the graph of W is connected; in general its
    # dimension is the number of connected components of the graph of W.
    n = W.shape[0]
    W = np.where(W > 1e-9, W, 0.0)
    W = W / W.sum(axis=1, keepdims=True)
    if not np.allclose(W.sum(axis=0), 1, atol=1e-10):
        return
    g = spectral_gap(W)
    nullity = n - np.linalg.matrix_rank(np.eye(n) - W, tol=1e-9)
    assert nullity == g.n_components
    assert g.connected == (nullity == 1)


def test_g3_counterexample_diag_w2_identity():
    for n in (3, 4, 8):
        W = np.eye(n)
        W[:2, :2] = 0.5
        g = spectral_gap(W)
        assert not g.connected and g.rho_norm == 1.0
        assert n - np.linalg.matrix_rank(np.eye(n) - W) == n - 1 > 1


@given(topologies())
@settings(max_examples=30)
def test_sparse_and_dense_paths_agree(case):
    name, rule, n, seed, make_lazy = case
    W = mixing_matrix(name, n, weights=rule, seed=seed, lazy_weights=make_lazy)
    d = spectral_gap(W, method="dense")
    s = spectral_gap(W, method="sparse")
    assert abs(d.rho_norm - s.rho_norm) < 1e-8
    assert abs(d.one_minus_rho - s.one_minus_rho) <= 1e-8 * max(d.one_minus_rho, 1e-8)
    assert d.connected == s.connected


@given(topologies().filter(lambda c: c[0] not in ("exponential",) or c[1] is not None))
@settings(max_examples=30)
def test_g4_symmetric_w_both_definitions_agree(case):
    name, rule, n, seed, make_lazy = case
    g = spectral_gap(mixing_matrix(name, n, weights=rule, seed=seed, lazy_weights=make_lazy))
    assert g.symmetric
    assert abs(g.rho_norm - g.rho_lambda2) < 1e-10


def test_g4_non_symmetric_example_where_they_differ():
    # A non-normal doubly stochastic matrix: half identity, half a 3-cycle on nodes 0..2 of 4,
    # plus a transposition mixing in node 3. Measured, not assumed: |lambda_2| < ||W - J||_2.
    P_cycle = np.eye(4)[[1, 2, 0, 3]]
    P_swap = np.eye(4)[[0, 1, 3, 2]]
    W = 0.5 * P_cycle + 0.5 * P_swap
    g = spectral_gap(W)
    assert not g.symmetric and g.connected and period(W) == 1
    assert g.rho_lambda2 < g.rho_norm - 0.05
    ev = np.abs(np.linalg.eigvals(W - 0.25))
    assert abs(g.rho_lambda2 - ev.max()) < 1e-12
    assert abs(g.rho_norm - np.linalg.norm(W - 0.25, 2)) < 1e-12


def test_g4_normal_non_symmetric_agree():
    # The static exponential graph is a circulant: normal, so both definitions coincide.
    g = spectral_gap(mixing_matrix("exponential", 12))
    assert not g.symmetric and abs(g.rho_norm - g.rho_lambda2) < 1e-10


@given(st.integers(2, 30))
def test_lazy_moves_spectrum_into_unit_interval(n):
    g = spectral_gap(lazy(mixing_matrix("ring", n, weights="max-degree")))
    assert g.lambda_min is None or g.lambda_min >= -1e-12
    assert g.rho_norm < 1.0
