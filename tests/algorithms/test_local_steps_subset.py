"""The subset path of the local-steps engine (only the M computing clients are differentiated)
equals the full path on exact gradients, falls back on ragged masks, and keeps same seed, same
bits."""

from __future__ import annotations

import numpy as np
import pytest

from fedtheory.algorithms.base import SeedRng
from fedtheory.algorithms.gossip import gossip
from fedtheory.algorithms.local_steps import local_steps
from fedtheory.problems.nn.conv import Conv1DNet
from fedtheory.problems.nn.data import federated_synthetic
from fedtheory.problems.nn.problem import MLPProblem
from fedtheory.problems.quadratic import random_quadratic

S, N, M, K = 3, 10, 2, 4


class _FullOnly:
    """The same problem without ``grads_at``: the engine's every-client path, or, for one mask
    for every step and exact gradients, its participants-only slot layout, which
    steps the same rows with the same arithmetic."""

    def __init__(self, problem):
        self.problem = problem
        self.n_clients, self.dim = problem.n_clients, problem.dim

    def grads(self, X, rng=None):
        return self.problem.grads(X, rng)


class _Counting(_FullOnly):
    """Records how many client gradients each call computes."""

    def __init__(self, problem):
        super().__init__(problem)
        self.rows: list[int] = []

    def grads(self, X, rng=None):
        self.rows.append(X.shape[1])
        return self.problem.grads(X, rng)

    def grads_at(self, Xs, clients, rng=None):
        self.rows.append(Xs.shape[1])
        return self.problem.grads_at(Xs, clients, rng)


class _QuadraticAt:
    """A quadratic with ``grads_at`` by gathering H_i, h_i (test-only: the library's quadratics
    have no ``grads_at``; with exact gradients they take the participants-only slot layout or
    the K-step map instead, tests/test_fast_paths.py)."""

    def __init__(self, q):
        self.q = q
        self.n_clients, self.dim = q.n_clients, q.dim

    def grads(self, X, rng=None):
        return self.q.grads(X, rng)

    def grads_at(self, Xs, clients, rng=None):
        return np.einsum("smij,smj->smi", self.q.H[clients], Xs) - self.q.h[clients]


def _quadratic():
    return _QuadraticAt(random_quadratic(N, 6, seed=1))


def _mlp(batch_size=None):
    data = federated_synthetic(1.0, 1.0, N, samples=40, seed=2)
    return MLPProblem(data, hidden=(8,), batch_size=batch_size)


def _x0(problem):
    rng = np.random.default_rng(3)
    return 0.3 * rng.standard_normal((S, N, problem.dim))


def _uniform_masks(shape, rng):
    """Boolean masks with exactly M True per seed (per step for a 3-d shape)."""
    u = rng.random(shape)
    return u <= np.sort(u, axis=-1)[..., M - 1 : M]


def _ring(n):
    W = np.zeros((n, n))
    for i in range(n):
        W[i, i] = 0.5
        W[i, (i + 1) % n] = W[i, (i - 1) % n] = 0.25
    return W


def _block_mix(n, clusters):
    """Per-cluster averaging (CAFGA-style mixing within clusters)."""
    W = np.zeros((n, n))
    size = n // clusters
    for c in range(clusters):
        W[c * size : (c + 1) * size, c * size : (c + 1) * size] = 1.0 / size
    return W


def _configs(rng):
    fedavg = {"compute": _uniform_masks((S, N), rng)}
    afga = {"compute": _uniform_masks((S, K, N), rng), "mix": gossip(_ring(N))}
    # CAFGA: one computing client per cluster (2 clusters of 5), re-sampled every step.
    pick = rng.integers(0, N // 2, size=(S, K, 2)) + np.array([0, N // 2])
    cafga_mask = np.zeros((S, K, N), dtype=bool)
    np.put_along_axis(cafga_mask, pick, True, axis=2)
    cafga = {"compute": cafga_mask, "mix": gossip(_block_mix(N, 2))}
    weighted = {"compute": _uniform_masks((S, N), rng) * rng.uniform(0.5, 2.0, (S, N))}
    return {"fedavg": fedavg, "afga": afga, "cafga": cafga, "weighted": weighted}


@pytest.mark.parametrize("make", [_quadratic, _mlp], ids=["quadratic", "mlp"])
@pytest.mark.parametrize("name", ["fedavg", "afga", "cafga", "weighted"])
def test_subset_equals_full_path_on_exact_gradients(make, name):
    problem = make()
    cfg = _configs(np.random.default_rng(4))[name]
    X0 = _x0(problem)
    counted = _Counting(problem)
    sub = local_steps(counted, X0, K, 0.1, **cfg)
    full = local_steps(_FullOnly(problem), X0, K, 0.1, **cfg)
    assert counted.rows == [M] * K  # every step took the subset path
    np.testing.assert_allclose(sub, full, rtol=0, atol=1e-12)
    assert not np.array_equal(sub, X0)


def test_subset_applies_prox_and_correction_to_computing_clients_only():
    problem = _quadratic()
    rng = np.random.default_rng(5)
    X0 = _x0(problem)
    kw = {
        "compute": _uniform_masks((S, K, N), rng),
        "prox_mu": 0.7,
        "anchor": rng.standard_normal((S, problem.dim)),
        "correction": rng.standard_normal((S, N, problem.dim)),
    }
    sub = local_steps(problem, X0, K, 0.1, **kw)
    full = local_steps(_FullOnly(problem), X0, K, 0.1, **kw)
    np.testing.assert_allclose(sub, full, rtol=0, atol=1e-12)
    kw["correction"] = kw["correction"][:, :1]  # (S, 1, d): one shared correction
    np.testing.assert_allclose(
        local_steps(problem, X0, K, 0.1, **kw),
        local_steps(_FullOnly(problem), X0, K, 0.1, **kw),
        rtol=0,
        atol=1e-12,
    )


def test_ragged_or_large_masks_take_the_full_path():
    problem = _mlp()
    X0 = _x0(problem)
    ragged = np.zeros((S, N), dtype=bool)
    ragged[0, :2] = ragged[1, :3] = ragged[2, :1] = True  # Bernoulli-like: 2, 3, 1 per seed
    large = np.zeros((S, N), dtype=bool)
    large[:, : N // 2 + 1] = True  # M > N/2: the subset would not pay
    for mask in (ragged, large):
        counted = _Counting(problem)
        out = local_steps(counted, X0, K, 0.1, compute=mask)
        assert counted.rows == [N] * K
        again = local_steps(_Counting(problem), X0, K, 0.1, compute=mask)
        assert np.array_equal(out, again)  # same call, same bits
        # without grads_at: the participants-only slot layout (a different shape: 1e-12)
        other = local_steps(_FullOnly(problem), X0, K, 0.1, compute=mask)
        np.testing.assert_allclose(other, out, rtol=0, atol=1e-12 * np.abs(out).max())


def _conv():
    data = federated_synthetic(1.0, 1.0, N, samples=40, seed=2)
    net = Conv1DNet(data.n_features, data.n_classes, channels=(4,), hidden=(8,))
    return MLPProblem(data, model=net, batch_size=None)


@pytest.mark.parametrize("make", [_mlp, _conv], ids=["mlp", "conv"])
def test_nn_grads_at_equals_rows_of_grads(make):
    problem = make()
    X = _x0(problem)
    clients = np.array([[1, 7], [0, 9], [4, 5]])
    Xs = np.take_along_axis(X, clients[:, :, None], axis=1)
    full = np.take_along_axis(problem.grads(X), clients[:, :, None], axis=1)
    np.testing.assert_allclose(problem.grads_at(Xs, clients), full, rtol=0, atol=1e-12)


def test_minibatch_subset_path_same_seed_same_bits():
    problem = _mlp(batch_size=5)
    X0 = _x0(problem)
    mask = _configs(np.random.default_rng(6))["afga"]["compute"]

    def run(seeds):
        return local_steps(problem, X0, K, 0.1, compute=mask, rng=SeedRng(seeds))

    a, b = run([0, 1, 2]), run([0, 1, 2])
    assert np.array_equal(a, b)
    assert not np.array_equal(a, run([3, 4, 5]))
    # Seed s of a batched run is the single-seed run of seed s (draws are per seed): to 1e-12
    # relative, as a (1, ...) and a (3, ...) product may round differently in the last bit on
    # another CPU; other minibatch draws would differ at order 1.
    one = local_steps(problem, X0[1:2], K, 0.1, compute=mask[1:2], rng=SeedRng([1]))
    np.testing.assert_allclose(a[1:2], one, rtol=1e-12, atol=1e-15)
