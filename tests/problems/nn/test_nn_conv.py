"""The 1-D convolutional network: finite differences through every convolution and the head,
im2col against a direct convolution, batched vs per-client loop, as a Problem."""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from fedtheory.errors import AssumptionError
from fedtheory.problems.nn import kernels
from fedtheory.problems.nn.conv import Conv1DNet, _windows
from fedtheory.problems.nn.data import FederatedData
from fedtheory.problems.nn.problem import MLPProblem

seeds = st.integers(0, 2**32 - 1)


@st.composite
def nets(draw):
    k = draw(st.integers(1, 4))
    s = draw(st.integers(1, 3))
    n_conv = draw(st.integers(1, 2))
    chans = tuple(draw(st.integers(1, 3)) for _ in range(n_conv))
    L = draw(st.integers(k + s * 2, 14)) if n_conv == 1 else draw(st.integers(3 * k + 2 * s, 20))
    cin = draw(st.integers(1, 2))
    hidden = tuple(draw(st.lists(st.integers(1, 4), max_size=1)))
    act = draw(st.sampled_from(kernels.ACTIVATIONS))
    try:
        return Conv1DNet(
            L, 3, channels=chans, kernel=k, stride=s, hidden=hidden, activation=act, in_channels=cin
        )
    except AssumptionError:
        assume(False)


@given(nets(), st.sampled_from([(), (2,), (2, 3)]), st.integers(1, 4), seeds)
def test_conv_loss_grad_matches_finite_differences(net, lead, B, seed):
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal((*lead, net.n_params)) * 0.7
    H = rng.standard_normal((*lead, B, net.n_inputs))
    y = rng.integers(0, 3, size=(*lead, B))
    w = rng.random((*lead, B))
    loss, grad = net.loss_grad(theta, H, y, w)
    assert grad.shape == (*lead, net.n_params)
    E = rng.standard_normal(theta.shape)
    h = 1e-6
    if net.activation == "relu":

        def pattern(t):
            cache, head = net.forward(t, H)[1]
            return [a > 0 for _, a in cache] + [a > 0 for a in head[1:]]

        assume(
            all(
                np.array_equal(p, q)
                for p, q in zip(pattern(theta + h * E), pattern(theta - h * E), strict=True)
            )
        )
    tol = 1e-8 * max(1.0, float(np.abs(loss).max()))  # rounding ~ 2e-16 |f| / h
    fd = (net.loss(theta + h * E, H, y, w) - net.loss(theta - h * E, H, y, w)) / (2 * h)
    np.testing.assert_allclose(fd, (grad * E).sum(axis=-1), rtol=1e-6, atol=tol)
    # every convolution weight tensor and bias on its own
    for w0, _cin, cout, _, b0 in net._conv:
        for sl in (slice(w0, b0), slice(b0, b0 + cout)):
            Ep = np.zeros_like(theta)
            Ep[..., sl] = E[..., sl]
            fd = (net.loss(theta + h * Ep, H, y, w) - net.loss(theta - h * Ep, H, y, w)) / (2 * h)
            np.testing.assert_allclose(fd, (grad * Ep).sum(axis=-1), rtol=1e-6, atol=tol)


@given(st.integers(1, 4), st.integers(1, 3), st.integers(1, 3), st.integers(8, 15), seeds)
def test_im2col_convolution_equals_direct_sum(k, s, cin, L, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, L, cin))
    W = rng.standard_normal((k, cin, 4))
    got = _windows(np, x, k, s) @ W.reshape(k * cin, 4)
    L_out = (L - k) // s + 1
    want = np.zeros((2, L_out, 4))
    for t in range(L_out):
        for j in range(k):
            want[:, t] += x[:, t * s + j] @ W[j]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_conv_batched_equals_per_client_loop():
    rng = np.random.default_rng(0)
    net = Conv1DNet(16, 4, channels=(3, 2), kernel=3, stride=2, hidden=(5,))
    theta = net.init(rng, (2, 3))
    H = rng.standard_normal((3, 6, 16))
    y = rng.integers(0, 4, size=(3, 6))
    loss, grad = net.loss_grad(theta, H, y, 1 / 6)
    for s in range(2):
        for i in range(3):
            li, gi = net.loss_grad(theta[s, i], H[i], y[i], 1 / 6)
            np.testing.assert_allclose(loss[s, i], li, rtol=1e-13)
            np.testing.assert_allclose(grad[s, i], gi, rtol=1e-12, atol=1e-15)


def test_conv_as_problem_and_refusals():
    rng = np.random.default_rng(1)
    shards = [(rng.standard_normal((n, 12)), rng.integers(0, 3, n)) for n in (5, 7)]
    data = FederatedData.from_shards(
        shards, rng.standard_normal((4, 12)), np.array([0, 1, 2, 0]), 3
    )
    net = Conv1DNet(12, 3, channels=(2,), kernel=3, stride=1, hidden=())
    prob = MLPProblem(data, model=net, batch_size=None)
    X = prob.init(rng, (1, 2))
    assert prob.grads(X).shape == (1, 2, net.n_params)
    assert prob.accuracy(X[:, 0]).shape == (1,)
    with pytest.raises(AssumptionError, match="takes 40 features"):
        MLPProblem(data, model=Conv1DNet(40, 3))
    with pytest.raises(AssumptionError, match="shorter than the kernel"):
        Conv1DNet(8, 3, channels=(2, 2, 2), kernel=4, stride=2)
    with pytest.raises(AssumptionError, match="kernel must be a positive integer"):
        Conv1DNet(8, 3, kernel=0)
    with pytest.raises(AssumptionError, match=r"inputs must have shape \(\.\.\., B, 12\)"):
        net.logits(X[0, 0], np.zeros((2, 11)))
