"""Gossip steps of the issue-5 algorithms: average preservation and the per-round ring on S_r."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtheory.algorithms import gossip_rho
from fedtheory.algorithms.gossip import (
    block_gossip,
    cluster_mixing,
    gossip,
    gossip_matrix,
    selected_ring,
)
from fedtheory.graphs import rho


def _birkhoff(n: int, k: int, seed: int) -> np.ndarray:
    """A random doubly stochastic matrix: a convex combination of k permutation matrices."""
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.ones(k))
    W = np.zeros((n, n))
    for a in w:
        W[np.arange(n), rng.permutation(n)] += a
    return W


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(2, 30),
    k=st.integers(1, 6),
    S=st.integers(1, 4),
    d=st.integers(1, 5),
    seed=st.integers(0, 2**31 - 1),
)
def test_gossip_preserves_the_average(n, k, S, d, seed):
    """1^T W = 1^T gives mean(W X) = mean(X) for every seed and coordinate."""
    W = _birkhoff(n, k, seed)
    X = np.random.default_rng(seed + 1).standard_normal((S, n, d)) * 10
    Y = gossip(W)(X, 0)
    np.testing.assert_allclose(
        Y.mean(axis=1), X.mean(axis=1), rtol=0, atol=1e-12 * (1 + abs(X).max())
    )


@settings(max_examples=25, deadline=None)
@given(C=st.integers(1, 5), n=st.integers(1, 8), seed=st.integers(0, 2**31 - 1))
def test_block_gossip_preserves_every_cluster_average(C, n, seed):
    Wk = np.stack([_birkhoff(n, 3, seed + c) for c in range(C)])
    X = np.random.default_rng(seed).standard_normal((2, C * n, 3))
    Y = block_gossip(Wk)(X, 0)
    np.testing.assert_allclose(
        Y.reshape(2, C, n, 3).mean(axis=2), X.reshape(2, C, n, 3).mean(axis=2), atol=1e-12
    )
    W = np.zeros((C * n, C * n))
    for c in range(C):
        W[c * n : (c + 1) * n, c * n : (c + 1) * n] = Wk[c]
    np.testing.assert_allclose(Y, W @ X, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    S=st.integers(1, 4),
    n=st.integers(1, 25),
    seed=st.integers(0, 2**31 - 1),
    kind=st.sampled_from(["ring", "complete"]),
)
def test_selected_ring_is_doubly_stochastic_and_keeps_offline_clients(S, n, seed, kind):
    """000 fn. 4: a ring (or complete graph) on S_r only; offline clients are identity rows."""
    rng = np.random.default_rng(seed)
    mask = rng.random((S, n)) < 0.5
    W = selected_ring(mask, kind)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, atol=1e-14)
    np.testing.assert_allclose(W.sum(axis=2), 1.0, atol=1e-14)
    assert (W >= 0).all()
    off = ~mask
    for s in range(S):  # the check, not the construction, may loop
        sel = np.flatnonzero(mask[s])
        assert np.all(W[s][np.ix_(off[s], off[s])] == np.eye(off[s].sum()))
        assert np.all(W[s][np.ix_(sel, np.flatnonzero(off[s]))] == 0)
        M = sel.size
        if M >= 1:
            block = W[s][np.ix_(sel, sel)]
            expect = gossip_matrix(kind, M) if M >= 2 else np.eye(1)
            if kind == "ring" and M == 2:
                expect = np.full((2, 2), 0.5)
            np.testing.assert_allclose(block, expect, atol=1e-15)


def test_paper_spectral_gaps_of_the_gossip_matrices():
    """000 Sec. 6.2 / 004 Sec. 6: rings of 50, 10 and 8 with weights 1/3 have rho 0.995, 0.873,
    0.805; the balanced complete graph has rho 0; rho_max of 5 ring clusters of 10 is 0.873."""
    assert round(rho(gossip_matrix("ring", 50)), 3) == 0.995
    assert round(rho(gossip_matrix("ring", 10)), 3) == 0.873
    assert round(rho(gossip_matrix("ring", 8)), 3) == 0.805
    assert rho(gossip_matrix("complete", 50)) < 1e-12
    assert cluster_mixing("ring", 5, 10).shape == (5, 10, 10)
    np.testing.assert_allclose(gossip_matrix("ring", 5)[0], [1 / 3, 1 / 3, 0, 0, 1 / 3])


def test_the_registry_knows_the_gap_each_algorithm_gossips_with():
    """rho of the N-client graph (AFGA, DSGD), rho_max over clusters (CAFGA, HA-Fed: 000 Thm
    D.3, 004 Cor. 5.11), the ring on the M clients of S_r (000 fn. 4), None without gossip."""
    assert round(gossip_rho("afga", 50, 5, topology="ring"), 3) == 0.995
    assert round(gossip_rho("DSGD", 10, topology="ring"), 3) == 0.873
    assert round(gossip_rho("cafga", 50, 5, topology="ring", clusters=5), 3) == 0.873
    assert round(gossip_rho("HA-Fed", 32, 8, topology="ring", clusters=4), 3) == 0.805
    assert round(gossip_rho("afga-adapted", 50, 10, topology="ring"), 3) == 0.873
    assert gossip_rho("afga-adapted", 50, 2) == 0.0
    assert gossip_rho("fedavg", 50, 5) is None
