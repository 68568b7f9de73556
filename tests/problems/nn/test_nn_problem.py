"""MLPProblem: the Problem protocol on a neural network (full-batch, minibatch, seeds, dtype)."""

import numpy as np
import pytest

from fedtheory.algorithms.base import SeedRng, seed_sequences
from fedtheory.errors import AssumptionError
from fedtheory.problems.base import Problem
from fedtheory.problems.nn.data import FederatedData, federated_synthetic
from fedtheory.problems.nn.problem import MLPProblem


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    shards = [(rng.standard_normal((n, 5)), rng.integers(0, 3, size=n)) for n in (4, 9, 6)]
    return FederatedData.from_shards(shards, rng.standard_normal((7, 5)), rng.integers(0, 3, 7), 3)


@pytest.fixture(scope="module")
def prob(data):
    return MLPProblem(data, hidden=(6,), activation="tanh", batch_size=3)


def test_is_a_problem(prob):
    assert isinstance(prob, Problem)
    assert prob.n_clients == 3 and prob.dim == 5 * 6 + 6 + 6 * 3 + 3
    assert prob.x_star is None and prob.f_star is None and prob.L is None and prob.mu is None


def test_full_batch_grads_are_each_clients_own_mean_loss_gradient(prob, data):
    rng = np.random.default_rng(1)
    X = prob.init(rng, (2, 3))
    G = prob.grads(X)
    for s in range(2):
        for i in range(3):
            n = data.counts[i]
            _, g = prob.model.loss_grad(X[s, i], data.x[i, :n], data.y[i, :n], 1.0 / n)
            np.testing.assert_allclose(G[s, i], g, rtol=1e-12, atol=1e-15)
    losses = prob.client_losses(X)
    assert losses.shape == (2, 3)


def test_full_grad_and_loss_agree_with_finite_differences(prob):
    rng = np.random.default_rng(2)
    x = prob.init(rng, (2,))
    g = prob.full_grad(x)
    np.testing.assert_allclose(
        g, prob.grads(np.repeat(x[:, None], 3, axis=1)).mean(axis=1), rtol=1e-13
    )
    E = rng.standard_normal(x.shape)
    h = 1e-6
    fd = (prob.loss(x + h * E) - prob.loss(x - h * E)) / (2 * h)
    np.testing.assert_allclose(fd, (g * E).sum(-1), rtol=1e-6)


def test_minibatch_grads_use_each_clients_own_rows(prob, data):
    X = prob.init(np.random.default_rng(3), (2, 3))
    G = prob.grads(X, np.random.default_rng(9))
    idx = prob.sample_batch(np.random.default_rng(9), (2,))
    assert idx.shape == (2, 3, 3)
    assert np.all(idx < data.counts[:, None]) and np.all(idx >= 0)
    for s in range(2):
        for i in range(3):
            _, g = prob.model.loss_grad(X[s, i], data.x[i, idx[s, i]], data.y[i, idx[s, i]], 1 / 3)
            np.testing.assert_allclose(G[s, i], g, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(G, prob.grads(X, np.random.default_rng(9)))


def test_minibatch_gradient_is_unbiased(prob):
    """Averaging many minibatch gradients converges to the full-batch gradient."""
    X = prob.init(np.random.default_rng(4), (1, 3))
    rng = np.random.default_rng(5)
    reps = 4000
    Gm = prob.grads(np.broadcast_to(X, (reps, 3, prob.dim)), rng).mean(axis=0)
    G = prob.grads(X)[0]
    err = np.abs(Gm - G).max() / np.abs(G).max()
    assert err < 0.08


def test_seed_rng_gives_each_seed_its_own_bits(prob):
    """With the simulator's SeedRng, seed s of a batched call equals a single-seed call."""

    seqs = seed_sequences(0, 3)
    X = prob.init(np.random.default_rng(6), (3, 3))
    G = prob.grads(X, SeedRng(seqs))
    for s in range(3):
        # The same minibatch rows for seed s; a (1, ...) and a (3, ...) product may round
        # differently in the last bit on another CPU, so 1e-12 relative (another minibatch
        # would differ at order 1).
        one = prob.grads(X[s : s + 1], SeedRng([seqs[s]]))[0]
        np.testing.assert_allclose(G[s], one, rtol=1e-12, atol=1e-15)


def test_accuracy(prob, data):
    x = prob.init(np.random.default_rng(7), (4,))
    acc = prob.accuracy(x)
    want = [
        (np.argmax(prob.model.logits(x[s], data.x_test), -1) == data.y_test).mean()
        for s in range(4)
    ]
    np.testing.assert_allclose(acc, want)
    tr = prob.accuracy(x[0], split="train")
    assert tr.shape == () and 0 <= tr <= 1
    with pytest.raises(AssumptionError, match="split must be 'test' or 'train'"):
        prob.accuracy(x, split="valid")


def test_float32_on_request(data):
    p32 = MLPProblem(data, hidden=(4,), batch_size=None, dtype=np.float32)
    X = p32.init(np.random.default_rng(0), (1, 3))
    assert X.dtype == np.float32 and p32.grads(X).dtype == np.float32
    p64 = MLPProblem(data, hidden=(4,), batch_size=None)
    np.testing.assert_allclose(p32.grads(X), p64.grads(X.astype(np.float64)), rtol=1e-3, atol=1e-5)


def test_shape_errors(prob):
    with pytest.raises(AssumptionError, match=r"client models must have shape \(\.\.\., 3, 57\)"):
        prob.grads(np.zeros((2, 57)))
    with pytest.raises(AssumptionError, match=r"server models must have shape \(\.\.\., 57\)"):
        prob.loss(np.zeros(5))
    with pytest.raises(AssumptionError, match="data must be a FederatedData"):
        MLPProblem({"x": 1})


def test_fedavg_runs_unchanged_and_lowers_the_loss():
    """The simulator's FedAvg (its registry, runner and local-steps engine) on the network."""
    sim = pytest.importorskip("fedtheory.simulation.runner")
    prob = MLPProblem(federated_synthetic(0.5, 0.5, 8, samples=60), hidden=(16,), batch_size=10)
    x0 = prob.init(np.random.default_rng(0))
    res = sim.simulate(
        prob,
        "fedavg",
        "uniform",
        rounds=15,
        seeds=2,
        x0=x0,
        lr=0.05,
        local_steps=5,
        clients_per_round=4,
    )
    assert np.all(prob.loss(res.x_final) < prob.loss(x0) - 0.2)


@pytest.mark.gpu
def test_cupy_problem_agrees_with_numpy(data):
    import cupy as cp  # noqa: PLC0415  (optional extra fedtheory[gpu])

    pn = MLPProblem(data, hidden=(6,), batch_size=3, xp=np)
    pc = MLPProblem(data, hidden=(6,), batch_size=3, xp=cp)
    X = pn.init(np.random.default_rng(0), (2, 3))
    np.testing.assert_allclose(pc.grads(cp.asarray(X)).get(), pn.grads(X), rtol=1e-11, atol=1e-13)
    gc = pc.grads(cp.asarray(X), np.random.default_rng(1)).get()
    np.testing.assert_allclose(gc, pn.grads(X, np.random.default_rng(1)), rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(pc.accuracy(cp.asarray(X[:, 0])), pn.accuracy(X[:, 0]))
