"""The MLP: finite-difference gradient checks (float64, hypothesis over shapes and inputs),
batched-vs-loop equality, layout and dtype contracts."""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from fedtheory.errors import AssumptionError
from fedtheory.problems.nn import kernels
from fedtheory.problems.nn.model import MLP

seeds = st.integers(0, 2**32 - 1)
widths = st.lists(st.integers(1, 6), min_size=0, max_size=2)
leads = st.sampled_from([(), (3,), (2, 3)])


def _problem(sizes, lead, B, seed):
    rng = np.random.default_rng(seed)
    net = MLP(tuple(sizes), activation="tanh")
    theta = rng.standard_normal((*lead, net.n_params))
    H = rng.standard_normal((*lead, B, sizes[0]))
    y = rng.integers(0, sizes[-1], size=(*lead, B))
    w = rng.random((*lead, B))
    return rng, theta, H, y, w


@given(
    st.integers(1, 5),
    widths,
    st.integers(2, 5),
    leads,
    st.integers(1, 6),
    seeds,
    st.sampled_from(kernels.ACTIVATIONS),
)
def test_loss_grad_matches_finite_differences(F, hidden, C, lead, B, seed, activation):
    """Directional central differences of every client's loss against the hand-written
    backward pass, through every layer (weights and biases of all layers at once)."""
    sizes = (F, *hidden, C)
    rng, theta, H, y, w = _problem(sizes, lead, B, seed)
    net = MLP(sizes, activation)
    loss, grad = net.loss_grad(theta, H, y, w)
    assert loss.shape == lead and grad.shape == (*lead, net.n_params)
    E = rng.standard_normal(theta.shape)
    h = 1e-6
    if activation == "relu":  # the activation pattern must not change across the difference
        pats = [[a > 0 for a in net.forward(theta + s * h * E, H)[1][1:]] for s in (-1, 1)]
        assume(all(np.array_equal(p, q) for p, q in zip(*pats, strict=True)))
    fd = (net.loss(theta + h * E, H, y, w) - net.loss(theta - h * E, H, y, w)) / (2 * h)
    tol = 1e-8 * max(1.0, float(np.abs(loss).max()))  # rounding ~ 2e-16 |f| / h
    np.testing.assert_allclose(fd, (grad * E).sum(axis=-1), rtol=1e-6, atol=tol)


@given(st.integers(1, 4), widths, st.integers(2, 4), st.integers(1, 5), seeds)
def test_each_layer_coordinate_by_coordinate(F, hidden, C, B, seed):
    """Coordinate finite differences on one random entry of every W_l and b_l (tanh)."""
    sizes = (F, *hidden, C)
    rng, theta, H, y, w = _problem(sizes, (), B, seed)
    net = MLP(sizes, "tanh")
    loss, grad = net.loss_grad(theta, H, y, w)
    tol = 1e-8 * max(1.0, abs(float(loss)))  # rounding ~ 2e-16 |f| / h
    h = 1e-6
    for w0, fi, fo, b0 in net._offsets:
        for j in (w0 + int(rng.integers(fi * fo)), b0 + int(rng.integers(fo))):
            e = np.zeros(net.n_params)
            e[j] = h
            fd = (net.loss(theta + e, H, y, w) - net.loss(theta - e, H, y, w)) / (2 * h)
            assert fd == pytest.approx(grad[j], rel=1e-6, abs=tol)


@given(seeds, st.sampled_from(kernels.ACTIVATIONS))
def test_batched_equals_per_client_loop(seed, activation):
    """One call on (S, N, P) stacks equals S * N separate single-model calls."""
    rng = np.random.default_rng(seed)
    net = MLP((4, 5, 3), activation)
    S, N, B = 2, 3, 4
    theta = net.init(rng, (S, N))
    H = rng.standard_normal((N, B, 4))
    y = rng.integers(0, 3, size=(N, B))
    w = np.full((N, B), 1.0 / B)
    loss, grad = net.loss_grad(theta, H, y, w)
    for s in range(S):
        for i in range(N):
            li, gi = net.loss_grad(theta[s, i], H[i], y[i], w[i])
            np.testing.assert_allclose(loss[s, i], li, rtol=1e-13)
            np.testing.assert_allclose(grad[s, i], gi, rtol=1e-12, atol=1e-15)


def test_server_model_broadcast_over_clients():
    """A server model (S, 1, P) on N clients' batches gives N per-client gradients."""
    rng = np.random.default_rng(0)
    net = MLP((3, 4, 2))
    x = net.init(rng, (2,))
    H = rng.standard_normal((5, 6, 3))
    y = rng.integers(0, 2, size=(5, 6))
    _, g = net.loss_grad(x[:, None, :], H, y, 1 / 6)
    _, g_full = net.loss_grad(np.broadcast_to(x[:, None, :], (2, 5, net.n_params)), H, y, 1 / 6)
    assert g.shape == (2, 5, net.n_params)
    np.testing.assert_allclose(g, g_full, rtol=1e-14)


def test_layout_views_and_count():
    net = MLP((3, 4, 2))
    assert net.n_params == 3 * 4 + 4 + 4 * 2 + 2
    theta = np.arange(net.n_params, dtype=float)
    (W1, b1), (W2, b2) = net.unflatten(theta)
    np.testing.assert_array_equal(W1, np.arange(12.0).reshape(3, 4))
    np.testing.assert_array_equal(b1[0], [12, 13, 14, 15])
    assert np.shares_memory(W1, theta) and np.shares_memory(b2, theta)


def test_init_same_seed_same_bits_and_dtype():
    net = MLP((40, 16, 10), "relu")
    a = net.init(np.random.default_rng(5), (2, 3))
    b = net.init(np.random.default_rng(5), (2, 3))
    np.testing.assert_array_equal(a, b)
    c = net.init(np.random.default_rng(5), (2, 3), dtype=np.float32)
    assert c.dtype == np.float32
    np.testing.assert_array_equal(c, a.astype(np.float32))
    (W1, b1), _ = net.unflatten(a)
    assert np.abs(W1).max() <= np.sqrt(6 / 40) and not b1.any()


def test_float32_forward_backward_stays_float32():
    net = MLP((3, 4, 2))
    theta = net.init(np.random.default_rng(0), (2,), dtype=np.float32)
    H = np.ones((2, 5, 3), dtype=np.float32)
    loss, grad = net.loss_grad(theta, H, np.zeros((2, 5), dtype=int), np.float32(0.2))
    assert loss.dtype == np.float32 and grad.dtype == np.float32


@pytest.mark.parametrize(
    ("sizes", "match"),
    [((3,), "at least two"), ((3, 0, 2), "at least two"), ((3.5, 2), "at least two")],
)
def test_bad_sizes_are_refused(sizes, match):
    with pytest.raises(AssumptionError, match=match):
        MLP(sizes)


def test_wrong_shapes_are_refused():
    net = MLP((3, 2))
    with pytest.raises(AssumptionError, match=r"parameters must have shape \(\.\.\., 8\)"):
        net.logits(np.zeros(7), np.zeros((1, 3)))
    with pytest.raises(AssumptionError, match=r"inputs must have shape \(\.\.\., B, 3\)"):
        net.logits(np.zeros(8), np.zeros((1, 4)))
