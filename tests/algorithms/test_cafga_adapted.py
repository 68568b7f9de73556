"""Communication-adapted CAFGA (000 Sec. 5, Table 5): gossip only among each cluster's selected
clients."""

from __future__ import annotations

import numpy as np

from fedtheory.algorithms.gossip import cluster_selected_ring, selected_ring
from fedtheory.algorithms.registry import gossip_rho, info
from fedtheory.experiments.local_steps import study_problem
from fedtheory.participation import make_participation
from fedtheory.simulation import simulate


def test_the_mixing_is_a_selected_ring_inside_each_cluster_and_nothing_across():
    rng = np.random.default_rng(3)
    mask = rng.random((4, 15)) < 0.5
    W = cluster_selected_ring(mask, 3)
    np.testing.assert_allclose(W.sum(axis=1), 1.0)
    np.testing.assert_allclose(W.sum(axis=2), 1.0)
    for s in range(4):
        for k in range(3):
            blk = slice(5 * k, 5 * k + 5)
            np.testing.assert_array_equal(W[s, blk, blk], selected_ring(mask[s : s + 1, blk])[0])
            off = np.ones(15, bool)
            off[blk] = False
            assert not W[s, blk][:, off].any()


def test_one_selected_client_per_cluster_is_fedamsgrad():
    """With m = 1 per cluster there is nobody to gossip with: the adapted CAFGA is FedAMSGrad
    on the same per-cluster draws (bit for bit), and with m = 2 it is not."""
    prob = study_problem("quadratic", 20, 4, sigma=0.5, sigma_g=2.0)
    kw = dict(rounds=12, seeds=3, lr=0.05, global_lr=0.02, local_steps=3, seed=7)
    one = make_participation("cluster", 20, 1, n_clusters=4)
    a = simulate(prob, "cafga-adapted", one, clusters=4, **kw)
    f = simulate(prob, "fedamsgrad", one, **kw)
    np.testing.assert_array_equal(a.x_final, f.x_final)
    two = make_participation("cluster", 20, 2, n_clusters=4)
    a2 = simulate(prob, "cafga-adapted", two, clusters=4, **kw)
    f2 = simulate(prob, "fedamsgrad", two, **kw)
    assert np.abs(np.asarray(a2.x_final) - np.asarray(f2.x_final)).max() > 1e-8
    assert info("cafga-adapted").clustered and info("cafga-adapted").gossip
    assert gossip_rho("cafga-adapted", 20, 8, topology="ring", clusters=4) == 0.0  # m = 2
