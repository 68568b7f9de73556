"""Stochastic matrices of 003 Sections 3-4 and Appendix C: P1, P2, P3 and the sparse path."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

from fedtheory.errors import AssumptionError
from fedtheory.graphs import check_column_stochastic, check_row_stochastic
from fedtheory.matrices import (
    activation,
    collect,
    ergodicity_coefficient,
    expected_matrices,
    fedavg_matrix_form,
    fedavg_mixing_sequence,
    focus_matrix_form,
    focus_mixing_sequence,
    left_eigenvector,
    model_assign,
    model_average,
    product_convergence,
    round_matrix,
)
from fedtheory.participation import (
    Bernoulli,
    Cyclic,
    Full,
    Markov,
    PerCluster,
    Trace,
    Uniform,
    Weighted,
)


@st.composite
def sets_and_weights(draw, max_n=7):
    """A participation mask (possibly empty) and weights on S summing to 1."""
    n = draw(st.integers(1, max_n))
    mask = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    raw = np.array(draw(st.lists(st.floats(0.01, 1.0), min_size=n, max_size=n)))
    w = np.where(mask, raw, 0.0)
    if mask.any():
        w = w / w.sum()
    return mask, w


# --------------------------------------------------------------------------------------------
# P1: row / column stochasticity for every S and weights
@given(sets_and_weights())
def test_p1_stochasticity_for_every_set(sw):
    mask, w = sw
    check_row_stochastic("A_S", model_assign(mask))
    check_row_stochastic("V_S", model_average(mask, w))
    check_column_stochastic("C_S", collect(mask))
    check_row_stochastic("W_S", round_matrix(mask, w))
    # C_S = A_S^T (003 Sec. 3: the column-stochastic counterpart of the pull)
    np.testing.assert_array_equal(collect(mask), model_assign(mask).T)
    D = activation(mask)
    np.testing.assert_array_equal(np.diag(D), np.concatenate([[0.0], mask]))
    # sparse and dense agree
    for f, args in ((model_assign, ()), (collect, ()), (activation, ())):
        np.testing.assert_array_equal(f(mask, *args, sparse=True).toarray(), f(mask))
    np.testing.assert_allclose(
        model_average(mask, w, sparse=True).toarray(), model_average(mask, w)
    )


@given(sets_and_weights())
def test_round_matrix_has_identical_rows_and_equals_pull_all_after_average(sw):
    mask, w = sw
    W = round_matrix(mask, w)
    assert np.all(W == W[0])
    pull_all = model_assign(np.ones_like(mask))
    np.testing.assert_allclose(W, pull_all @ model_average(mask, w), atol=1e-15)
    if mask.any():
        Wc = round_matrix(mask, w, server=False)
        assert np.all(Wc == w)
        np.testing.assert_allclose(Wc.sum(1), 1.0)


def test_matrix_contents_on_a_small_example():
    mask = np.array([True, False, True, False])
    A = model_assign(mask)
    assert A[1, 0] == 1 and A[1, 1] == 0 and A[2, 2] == 1 and A[0, 0] == 1
    V = model_average(mask)
    np.testing.assert_array_equal(V[0], [0, 0.5, 0, 0.5, 0])
    C = collect(mask)
    np.testing.assert_array_equal(C[0], [1, 1, 0, 1, 0])
    np.testing.assert_array_equal(C[1], 0)
    # an empty round is the identity (the algorithm leaves the model in place)
    empty = np.zeros(4, dtype=bool)
    np.testing.assert_array_equal(model_average(empty), np.eye(5))
    np.testing.assert_array_equal(model_assign(empty), np.eye(5))


def test_batched_builders_match_single():
    masks = Uniform(5, 2).sample(4, seeds=2, seed=1)
    w = Uniform(5, 2).weights(masks)
    for f, kw in ((model_assign, {}), (collect, {}), (activation, {})):
        out = f(masks)
        assert out.shape == (2, 4, 6, 6)
        np.testing.assert_array_equal(out[1, 3], f(masks[1, 3], **kw))
    np.testing.assert_array_equal(
        model_average(masks, w)[0, 2], model_average(masks[0, 2], w[0, 2])
    )


# --------------------------------------------------------------------------------------------
# closure of row-stochastic matrices under products; ergodicity coefficient
@given(st.data())
def test_products_of_row_stochastic_matrices_are_row_stochastic(data):
    n = data.draw(st.integers(1, 6))
    mats = []
    for _ in range(data.draw(st.integers(1, 6))):
        mask = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
        kind = data.draw(st.sampled_from(["A", "V", "W"]))
        mats.append({"A": model_assign, "V": model_average, "W": round_matrix}[kind](mask))
    res = product_convergence(mats)
    check_row_stochastic("product", res.product)
    # tau is submultiplicative, so it never increases along the product
    assert np.all(np.diff(res.tau) <= 1e-12)
    P = np.linalg.multi_dot([np.eye(n + 1), *mats[::-1]])
    np.testing.assert_allclose(res.product, P, atol=1e-12)


def test_fedavg_round_products_reach_rank_one_once_everyone_participated():
    draws = Uniform(6, 2).sample(12, seed=3)[0]
    mats = [model_average(d) @ model_assign(d) for d in draws]
    res = product_convergence(mats)
    seen = np.logical_or.accumulate(draws, axis=0).all(1)
    np.testing.assert_array_equal(res.tau == 0, seen)  # rank one exactly when all were pulled
    np.testing.assert_allclose(res.limit, np.eye(7)[0])  # the limit is 1 e_0^T
    assert ergodicity_coefficient(np.eye(3)) == 1.0


# --------------------------------------------------------------------------------------------
# P3: expected matrices, identical rows, left eigenvector, Monte Carlo within 4 standard errors
P = np.array([0.05, 0.3, 0.15, 0.2, 0.1, 0.2])
SMALL = [
    Full(4),
    Uniform(6, 2),
    Weighted(P, 2),
    Weighted(P, 2, replace=True),
    Bernoulli(np.linspace(0.1, 0.6, 5), empty="redraw"),
    Bernoulli(np.linspace(0.1, 0.6, 5), empty="skip"),
    Markov(np.array([0.2, 0.5, 0.1, 0.4]), np.array([0.3, 0.3, 0.6, 0.2])),
    PerCluster([0, 0, 1, 1, 1], [1, 2]),
    Cyclic(5, 2),
    Trace(np.array([[1, 0, 1], [0, 1, 1], [1, 1, 0], [0, 0, 0]], dtype=bool)),
]


@pytest.mark.parametrize("model", SMALL, ids=lambda m: f"{type(m).__name__}")
@pytest.mark.parametrize("rule", ["mean", "weighted", "unbiased"])
def test_p3_expected_round_matrix_by_enumeration(model, rule):
    draws, probs, _ = model.support()
    masks = np.asarray(draws) > 0
    w = model.weights(draws, rule)
    E = expected_matrices(model, rule)
    # literal averages of the dense matrices over the law of one round
    for name, stack in (
        ("A", model_assign(masks)),
        ("V", model_average(masks, w)),
        ("C", collect(masks)),
        ("D", activation(masks)),
        ("W", round_matrix(masks, w)),
    ):
        np.testing.assert_allclose(getattr(E, name), np.tensordot(probs, stack, 1), atol=1e-12)
    assert np.all(np.abs(E.W - E.W[0]) < 1e-15)  # identical rows (003 eq. (37))
    np.testing.assert_allclose(E.row @ E.W, E.row, atol=1e-12)  # left eigenvector
    np.testing.assert_allclose(E.row[1:], (1 - E.p_empty) * E.q, atol=1e-12)
    if rule != "unbiased":
        np.testing.assert_allclose(left_eigenvector(E.W), E.row, atol=1e-10)
        np.testing.assert_allclose(E.q.sum(), 1.0, atol=1e-12)


@pytest.mark.parametrize("model", SMALL[1:8], ids=lambda m: f"{type(m).__name__}")
def test_p3_monte_carlo_within_four_standard_errors(model):
    exact = expected_matrices(model, "mean", method="exact")
    mc = expected_matrices(model, "mean", method="monte-carlo", rounds=50, seeds=400, seed=7)
    assert mc.method == "monte carlo"
    for val, ref, se in ((mc.q, exact.q, mc.q_stderr), (mc.pi, exact.pi, mc.pi_stderr)):
        z = np.abs(val - ref) / np.where(se > 0, se, np.inf)
        assert np.all((z < 4) | (np.abs(val - ref) < 1e-12)), z


def test_expected_matrices_exact_refuses_without_exact_method():
    p = np.random.default_rng(0).random(22) + 0.1
    with pytest.raises(AssumptionError, match="monte-carlo"):
        expected_matrices(Weighted(p / p.sum(), 2), "weighted", method="exact")


# --------------------------------------------------------------------------------------------
# P2: FedAvg in matrix form equals FedAvg run client by client
def quadratic(n, d, seed):
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((n, d, d))
    H = B @ B.transpose(0, 2, 1) / d + np.eye(d)
    h = rng.standard_normal((n, d))

    def grad(X):
        return np.einsum("nij,nj->ni", H, X) - h

    return grad


def fedavg_reference(grad, x0, masks, weights, K, lr, server_lr):
    """FedAvg written the ordinary way: a loop over the participating clients."""
    x = np.array(x0, dtype=float)
    n = masks.shape[1]
    out = []
    for S, w in zip(masks, weights, strict=True):
        deltas = np.zeros_like(x)
        for i in np.flatnonzero(S):
            xi = x.copy()
            for _ in range(K):
                g = grad(np.tile(xi, (n, 1)))[i]
                xi = xi - lr * g
            deltas += w[i] * (xi - x)
        x = x + server_lr * deltas
        out.append(x.copy())
    return np.array(out)


P2_MODELS = [
    Full(5),
    Uniform(5, 2),
    Weighted(P[:5] / P[:5].sum(), 3),
    Weighted(P[:5] / P[:5].sum(), 3, replace=True),
    Bernoulli(np.full(5, 0.3), empty="redraw"),
    Bernoulli(np.full(5, 0.3), empty="skip"),
    Markov(np.full(5, 0.3), np.full(5, 0.4)),
    Cyclic(5, 2),
    PerCluster([0, 0, 1, 1, 1], 1),
    Trace(np.eye(5, dtype=bool), cycle=True),
]


@pytest.mark.parametrize("model", P2_MODELS, ids=lambda m: type(m).__name__)
@pytest.mark.parametrize("rule", ["mean", "weighted", "unbiased"])
def test_p2_fedavg_matrix_form_equals_per_client_run(model, rule):
    grad = quadratic(5, 3, seed=1)
    R, K, lr, server_lr = 8, 3, 0.05, 0.9
    draws = model.sample(R, seed=2)[0]
    w = model.weights(draws, rule)
    x0 = np.array([1.0, -2.0, 0.5])
    ref = fedavg_reference(grad, x0, draws, w, K, lr, server_lr)
    X = fedavg_matrix_form(grad, x0, draws, w, local_steps=K, lr=lr, server_lr=server_lr)
    np.testing.assert_allclose(X[K::K, 0], ref, rtol=0, atol=1e-12)
    # the fused single-matrix form of 003 eq. (8): x^{k+1} = W_k (x^k - lr D_k grad F(x^k))
    seq = fedavg_mixing_sequence(draws, w, K, server_lr=server_lr)
    Y = seq.pull[0] @ np.tile(x0, (6, 1))
    for k in range(R * K):
        G = np.vstack([np.zeros(3), grad(Y[1:])])
        Y = seq.mixing[k] @ (Y - lr * seq.activation[k] @ G)
        if k % K == K - 1:
            np.testing.assert_allclose(Y[0], ref[k // K], rtol=0, atol=1e-12)
    if draws.dtype == bool:  # the sparse path gives the same iterates
        Xs = fedavg_matrix_form(
            grad, x0, draws, w, local_steps=K, lr=lr, server_lr=server_lr, sparse=True
        )
        np.testing.assert_allclose(Xs, X, rtol=0, atol=1e-13)


def focus_reference(grad, masks, K, lr, d):
    """FOCUS, Algorithm 1 as in docs/algorithms.md Section 4, client by client."""
    n = masks.shape[1]
    x, y = np.zeros(d), np.zeros(d)
    g_prev = np.zeros((n, d))
    out = []
    for S in masks:
        for i in np.flatnonzero(S):
            xi, yi = x.copy(), np.zeros(d)
            for k in range(K):
                if k > 0:
                    xi = xi - lr * yi
                g = grad(np.tile(xi, (n, 1)))[i]
                yi = yi + g - g_prev[i]
                g_prev[i] = g
            y = y + yi
        x = x - lr * y
        out.append((x.copy(), y.copy(), g_prev.sum(0)))
    return out


@pytest.mark.parametrize("model", P2_MODELS[:9:2], ids=lambda m: type(m).__name__)
def test_focus_matrix_form_equals_algorithm_1(model):
    grad = quadratic(5, 3, seed=4)
    R, K, lr = 7, 3, 0.05
    draws = model.sample(R, seed=5)[0] > 0
    ref = focus_reference(grad, draws, K, lr, 3)
    X, Y = focus_matrix_form(grad, np.zeros(3), draws, local_steps=K, lr=lr)
    for r, (x, y, gsum) in enumerate(ref):
        np.testing.assert_allclose(X[(r + 1) * K, 0], x, rtol=0, atol=1e-12)
        np.testing.assert_allclose(Y[(r + 1) * K, 0], y, rtol=0, atol=1e-12)
        # tracking property: the server's y is the sum of every client's latest gradient
        np.testing.assert_allclose(Y[(r + 1) * K].sum(0), gsum, rtol=0, atol=1e-12)
        np.testing.assert_allclose(Y[(r + 1) * K, 0], gsum, rtol=0, atol=1e-12)


# --------------------------------------------------------------------------------------------
# sparse path: 10^5 clients without an (N+1)^2 array
def test_sparse_matrices_for_100k_clients():
    n = 100_000
    model = Uniform(n, 10)
    mask = model.sample(1, seed=0)[0, 0]
    w = model.weights(mask)
    A, V, C, D = model_assign(mask), model_average(mask, w), collect(mask), activation(mask)
    for M in (A, V, C, D):
        assert sp.issparse(M) and M.shape == (n + 1, n + 1) and M.nnz <= n + 11
    check_row_stochastic("A_S", A)
    check_row_stochastic("V_S", V)
    check_column_stochastic("C_S", C)
    W = round_matrix(mask, w)
    x = np.random.default_rng(0).standard_normal(n + 1)
    row = np.concatenate([[0.0], w])
    np.testing.assert_allclose(W @ x, np.full(n + 1, row @ x))
    E = expected_matrices(model)
    assert sp.issparse(E.A) and E.A.nnz <= 2 * n + 1
    np.testing.assert_allclose(left_eigenvector(E.W), E.row, atol=1e-12)
    np.testing.assert_allclose(E.q, 1.0 / n)


def test_matrix_input_validation():
    with pytest.raises(AssumptionError, match="outside S"):
        model_average(np.array([True, False]), np.array([0.5, 0.5]))
    with pytest.raises(AssumptionError, match="row 1 sums to"):
        check_row_stochastic("M", np.array([[1.0, 0.0], [0.5, 0.4]]))
    with pytest.raises(AssumptionError, match="column stochastic"):
        check_column_stochastic("M", np.array([[1.0, 0.5], [0.0, 0.4]]))
    with pytest.raises(AssumptionError, match="non-empty S"):
        round_matrix(np.zeros(3, dtype=bool), server=False)
    with pytest.raises(AssumptionError, match="not unique"):
        left_eigenvector(np.eye(3))


def test_mixing_sequences_are_stochastic_and_drive_focus():
    model = Bernoulli(np.full(4, 0.5), empty="skip")
    draws = model.sample(5, seed=8)[0]
    w = model.weights(draws)
    fa = fedavg_mixing_sequence(draws, w, 2)
    for name in ("pull", "average", "mixing"):
        check_row_stochastic(name, getattr(fa, name))
    fo = focus_mixing_sequence(draws, 2)
    check_row_stochastic("pull", fo.pull)
    check_column_stochastic("push", fo.push)
    # FOCUS driven by the sequence's matrices equals focus_matrix_form
    grad = quadratic(4, 2, seed=3)
    lr = 0.1
    X = np.zeros((5, 2))
    Y = np.zeros((5, 2))
    G = np.zeros((5, 2))
    Xs, Ys = focus_matrix_form(grad, np.zeros(2), draws, local_steps=2, lr=lr)
    for k in range(10):
        X = fo.pull[k] @ X - lr * (k % 2 > 0) * fo.activation[k] @ Y
        delta = fo.activation[k] @ (np.vstack([np.zeros(2), grad(X[1:])]) - G)
        Y, G = Y + delta, G + delta
        Y = fo.push[k] @ Y
        X = X - lr * fo.server[k] @ Y
        np.testing.assert_allclose(X, Xs[k + 1], rtol=0, atol=1e-13)
        np.testing.assert_allclose(Y, Ys[k + 1], rtol=0, atol=1e-13)


def test_ergodicity_coefficient_large_path_matches_small():
    rng = np.random.default_rng(0)
    P = rng.random((70, 70))
    P /= P.sum(1, keepdims=True)
    diff = max(0.5 * np.abs(P[i] - P[j]).sum() for i in range(70) for j in range(70))
    np.testing.assert_allclose(ergodicity_coefficient(P), diff)
