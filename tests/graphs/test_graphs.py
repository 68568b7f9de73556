"""Graphs and spectral gaps: paper values (G1), closed forms, validation messages, conditions."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from fedtheory.errors import AssumptionError
from fedtheory.graphs import (
    check_mixing_matrix,
    cluster_gaps,
    clustered,
    effective_number_of_neighbors,
    from_edges,
    from_networkx,
    mixing_matrix,
    one_peer_exponential,
    sequence_gap,
    spectral_gap,
    stochasticity_report,
)
from fedtheory.graphs import closedforms as CF
from fedtheory.graphs import conditions as Cn
from fedtheory.graphs import topologies as T
from fedtheory.graphs import weights as Wt
from fedtheory.graphs.plot import draw_mixing_graph

# ---------------------------------------------------------------- G1: the papers' values


@pytest.mark.parametrize(("n", "stated"), [(50, 0.995), (10, 0.873), (8, 0.805)])
def test_ring_paper_values(n, stated):
    # 000 Sec. 6.2 (n = 50, 10) and 004 Sec. 6 (n = 8), ring with weights 1/3.
    g = spectral_gap(mixing_matrix("ring", n))
    assert round(g.rho_norm, 3) == stated
    assert round(g.rho_lambda2, 3) == stated


@pytest.mark.parametrize("n", [2, 8, 10, 50])
def test_complete_is_zero(n):
    W = mixing_matrix("complete", n)
    np.testing.assert_allclose(W, np.full((n, n), 1.0 / n), atol=1e-15)
    assert spectral_gap(W).rho_norm < 1e-12


def test_ring_gets_one_third():
    W = mixing_matrix("ring", 10)
    assert np.allclose(W[0, [9, 0, 1]], 1 / 3) and np.count_nonzero(W[0]) == 3


# ---------------------------------------------------------------- closed forms vs numerics


@pytest.mark.parametrize("n", [3, 4, 5, 8, 9, 10, 31, 50, 64])
def test_ring_closed_form(n):
    rho, gap = CF.ring_gap(n)
    g = spectral_gap(mixing_matrix("ring", n))
    assert abs(g.rho_norm - rho) < 1e-12
    assert abs(g.one_minus_rho - gap) <= 1e-12 * max(gap, 1e-3)
    lam = np.sort(np.linalg.eigvalsh(mixing_matrix("ring", n)))
    np.testing.assert_allclose(np.sort(CF.ring_spectrum(n)), lam, atol=1e-12)


@pytest.mark.parametrize(("r", "c"), [(3, 3), (3, 4), (4, 4), (5, 7), (6, 6), (4, 9)])
def test_torus_closed_form(r, c):
    W = mixing_matrix("torus", r * c, rows=r, cols=c)
    rho, gap = CF.torus_gap(r, c)
    g = spectral_gap(W)
    assert abs(g.rho_norm - rho) < 1e-12 and abs(g.one_minus_rho - gap) < 1e-12
    np.testing.assert_allclose(
        np.sort(CF.torus_spectrum(r, c)), np.sort(np.linalg.eigvalsh(W)), atol=1e-12
    )


@pytest.mark.parametrize("d", [1, 2, 3, 4, 5, 6])
def test_hypercube_closed_form(d):
    n = 2**d
    rho, gap = CF.hypercube_gap(n)
    g = spectral_gap(mixing_matrix("hypercube", n))
    assert abs(g.rho_norm - rho) < 1e-12 and abs(g.one_minus_rho - gap) < 1e-12


@pytest.mark.parametrize("n", [2, 4, 8, 16, 64])
def test_exponential_closed_form(n):
    # Ying et al. 2021, Prop. 1: rho = 1 - 2/(1 + log2 n) for n a power of 2.
    W = mixing_matrix("exponential", n)
    g = spectral_gap(W)
    rho, gap = CF.exponential_gap(n)
    assert abs(g.rho_norm - rho) < 1e-12 and abs(g.one_minus_rho - gap) < 1e-12
    assert (n <= 2) == g.symmetric


def test_sparse_ring_matches_closed_form_where_one_minus_rounded_rho_fails():
    n = 50_000
    g = spectral_gap(mixing_matrix("ring", n), method="sparse")
    rho, gap = CF.ring_gap(n)
    assert g.method.startswith("sparse")
    assert abs(g.one_minus_rho / gap - 1) < 1e-9
    # 1.0 - rho keeps only about 5 significant digits here; the reported value keeps all.
    assert abs((1.0 - round(g.rho_norm, 12)) / gap - 1) > 1e-6


def test_petersen_graph_from_networkx():
    # Petersen adjacency eigenvalues 3, 1, -2: W = (I + A)/4 has rho = max(2/4, 1/4) = 1/2.
    W = Wt.uniform_degree(from_networkx(nx.petersen_graph()))
    assert abs(spectral_gap(W).rho_norm - 0.5) < 1e-12


# ---------------------------------------------------------------- topologies and weights


def test_constructors_are_simple_symmetric_graphs():
    for A in (
        T.ring(7),
        T.path(7),
        T.star(7),
        T.complete(7),
        T.torus(12),
        T.grid(12),
        T.hypercube(16),
        T.exponential(12),
        T.erdos_renyi(30, 0.3, seed=1),
        T.random_geometric(40, seed=1),
    ):
        assert (A != A.T).nnz == 0 and A.diagonal().sum() == 0 and set(A.data) <= {1.0}
    assert T.ring(2).nnz == 2 and T.ring(7).nnz == 14 and T.star(7).nnz == 12
    assert np.array_equal(Wt.degrees(T.hypercube(32)), np.full(32, 5))
    assert T.torus_shape(12) == (3, 4) and T.torus_shape(13) == (1, 13)


def test_erdos_renyi_edge_count_matches_p():
    n, p = 400, 0.05
    m = np.array([T.erdos_renyi(n, p, seed=s).nnz / 2 for s in range(20)])
    mean, sd = p * n * (n - 1) / 2, np.sqrt(p * (1 - p) * n * (n - 1) / 2)
    assert abs(m.mean() - mean) < 4 * sd / np.sqrt(20)
    assert T.erdos_renyi(50, 1.0, seed=0).nnz == 50 * 49
    assert np.array_equal(
        T.erdos_renyi(60, 0.2, seed=3).toarray(), T.erdos_renyi(60, 0.2, seed=3).toarray()
    )


def test_edge_list_matches_constructor():
    k = np.arange(9)
    A = from_edges(np.c_[k, (k + 1) % 9])
    assert (A != T.ring(9)).nnz == 0


def test_metropolis_and_max_degree_rules():
    A = T.star(6)
    W = Wt.metropolis_hastings(A).toarray()
    assert np.allclose(W[0, 1:], 1 / 6) and np.allclose(np.diag(W)[1:], 5 / 6)
    # Xiao-Boyd max-degree weights on an even ring are bipartite: eigenvalue -1, rho = 1.
    g = spectral_gap(Wt.max_degree(T.ring(8)))
    assert g.connected and g.rho_norm == pytest.approx(1.0) and g.warnings
    assert spectral_gap(Wt.lazy(Wt.max_degree(T.ring(8)))).rho_norm < 1
    with pytest.raises(AssumptionError, match="regular graph: node 0 has degree 1 but node 1"):
        Wt.uniform_degree(T.path(5))
    with pytest.raises(AssumptionError, match=r"alpha <= 1/d_max"):
        Wt.laplacian_weights(T.ring(6), 0.6)


def test_random_weights_are_symmetric_doubly_stochastic_and_positive():
    W = mixing_matrix("complete-random", 10, seed=4)
    assert np.all(W > 0) and np.allclose(W, W.T, atol=0)
    assert np.abs(W.sum(0) - 1).max() < 1e-13 and np.abs(W.sum(1) - 1).max() < 1e-13
    assert not np.allclose(W, mixing_matrix("complete-random", 10, seed=5))


def test_one_peer_exponential_product_is_exact_average():
    # Ying et al. 2021: n a power of 2, one period multiplies to 11^T/n.
    s = sequence_gap(one_peer_exponential(16))
    assert s.rho_product < 1e-12 and len(s.rho_each) == 4
    assert sequence_gap(one_peer_exponential(12)).rho_product > 1e-3


def test_auto_format_is_sparse_for_large_n():
    assert isinstance(mixing_matrix("ring", 10), np.ndarray)
    assert sp.issparse(mixing_matrix("ring", 5000))


# ---------------------------------------------------------------- validation messages


def test_validation_names_first_violation():
    n = 5
    W = np.full((n, n), 1 / n)
    W[0, 3], W[0, 4] = 0.17, 0.23  # rows still sum to 1; column 3 sums to 0.97
    with pytest.raises(AssumptionError, match="W is not column stochastic: column 3 sums to 0.97"):
        check_mixing_matrix(W)
    check_mixing_matrix(W, kind="row")
    with pytest.raises(AssumptionError, match="row 2 sums to 1.1"):
        check_mixing_matrix(np.eye(3) + np.diag([0, 0, 0.1]))
    bad = np.eye(3)
    bad[1, 2] = -0.1
    with pytest.raises(AssumptionError, match=r"negative entry W\[1, 2\]"):
        check_mixing_matrix(bad)
    with pytest.raises(AssumptionError, match="square"):
        check_mixing_matrix(np.ones((2, 3)) / 3)
    nan = np.eye(3)
    nan[2, 0] = np.nan
    with pytest.raises(AssumptionError, match=r"non-finite entry nan at \(2, 0\)"):
        check_mixing_matrix(nan)
    with pytest.raises(AssumptionError, match="at least 2 nodes"):
        check_mixing_matrix(np.ones((1, 1)))
    with pytest.raises(AssumptionError, match="unknown topology 'moebius'"):
        mixing_matrix("moebius", 10)
    with pytest.raises(AssumptionError, match="must be >= 2"):
        mixing_matrix("ring", 1)
    with pytest.raises(AssumptionError, match="power of 2"):
        mixing_matrix("hypercube", 12)
    with pytest.raises(AssumptionError, match="column 3 sums to 0.97"):
        check_mixing_matrix(sp.csr_array(W))  # the sparse path names the same column
    r = stochasticity_report(W)
    assert r.row_stochastic and not r.column_stochastic and r.violations


def test_g3_counterexample_of_appendix_c():
    # 000 App. C: W = diag(W_2, I_{n-2}) is doubly stochastic but null(I - W) != span(1).
    n = 6
    W = np.eye(n)
    W[:2, :2] = [[0.3, 0.7], [0.7, 0.3]]
    assert n - np.linalg.matrix_rank(np.eye(n) - W) == n - 1
    g = spectral_gap(W)
    assert not g.connected and g.n_components == n - 1
    assert g.rho_norm == 1.0 and g.one_minus_rho == 0.0 and "no gossip theorem" in g.warnings[0]
    with pytest.raises(AssumptionError, match="not connected"):
        check_mixing_matrix(W, require_connected=True)


# ---------------------------------------------------------------- clusters, neighbours


def test_cluster_gaps_of_clustered_rings():
    W, labels = clustered(5, 10, "ring")
    cg = cluster_gaps(W)
    assert cg.sizes == (10,) * 5
    assert abs(cg.rho_max - CF.ring_gap(10)[0]) < 1e-12
    assert cluster_gaps(W, labels).rho_k == cg.rho_k
    mixed = sp.block_diag([mixing_matrix("complete", 4), mixing_matrix("ring", 6)])
    assert abs(cluster_gaps(mixed).rho_max - CF.ring_gap(6)[0]) < 1e-12
    assert cluster_gaps(mixed).rho_k[0] < 1e-12


def test_effective_number_of_neighbors():
    n, gamma = 16, 0.9
    assert effective_number_of_neighbors(np.eye(n), gamma) == pytest.approx(1.0)
    assert effective_number_of_neighbors(mixing_matrix("complete", n), gamma) == pytest.approx(n)
    ring = effective_number_of_neighbors(mixing_matrix("ring", n), gamma)
    assert ring == pytest.approx(CF.ring_effective_neighbors(n, gamma), rel=1e-12)
    # Non-symmetric W: Lyapunov solution against the defining series sum_t gamma^(t-1) W^t W^tT.
    W = mixing_matrix("exponential", 12)
    S, P = np.zeros((12, 12)), np.eye(12)
    for t in range(1, 400):
        P = W @ P
        S += gamma ** (t - 1) * P @ P.T
    series = 1 / ((1 - gamma) * np.mean(np.diag(S)))
    assert effective_number_of_neighbors(W, gamma) == pytest.approx(series, rel=1e-10)
    assert 1 < ring < effective_number_of_neighbors(mixing_matrix("hypercube", n), gamma)
    with pytest.raises(AssumptionError, match="gamma"):
        effective_number_of_neighbors(np.eye(3), 1.0)


# ---------------------------------------------------------------- G5: theorem conditions


def test_condition_bounds_and_parsing():
    assert Cn.afga_bound(50, 5) == pytest.approx(5 / 55)  # docs/claims.md G5 example
    assert Cn.cafga_bound(10, 1) == pytest.approx(1 / 11)
    assert Cn.hafed_bound(8, 2) == pytest.approx(1 / (2 * np.sqrt(6)))
    assert Cn.hafed_bound(8, 8) == np.inf
    assert Cn.d_tau_rho(CF.ring_gap(8)[1], 48) == pytest.approx(1 / CF.ring_gap(8)[1])
    assert Cn.d_tau_rho(1e-6, 48) == 48
    s = Cn.parse_setting("N=100,M=5,C=5,m=1,K=24")
    assert (s.N, s.M, s.C, s.n, s.m, s.K) == (100, 5, 5, 20, 1, 24)
    assert Cn.parse_setting("N=50,M=5").n == 50
    with pytest.raises(AssumptionError, match="unknown key 'Q'"):
        Cn.parse_setting("N=5,Q=1")
    with pytest.raises(AssumptionError, match="C \\* n must equal N"):
        Cn.Setting("x", N=10, M=2, C=3, n=3, m=1, K=1)


def test_hafed_default_setting_table():
    S = next(s for s in Cn.PAPER_SETTINGS if s.name == "004 default")
    rows = {
        r.topology: r
        for r in Cn.evaluate_setting(S, ("ring", "complete", "hypercube", "erdos-renyi"), draws=4)
    }
    ring = rows["ring"]
    assert abs(ring.rho_max - CF.ring_gap(8)[0]) < 1e-12
    assert ring.hafed_holds_fraction == 0.0 and ring.cafga_holds_fraction == 0.0
    assert rows["complete"].hafed_holds_fraction == 1.0 and rows["complete"].afga_holds
    # hypercube on n = 8: rho = 1/2 > 1/(2 sqrt 6); N = 32 is a power of 2 too.
    assert rows["hypercube"].rho_max == pytest.approx(0.5) and rows["hypercube"].rho_N is not None
    er = rows["erdos-renyi"]
    assert er.draws == 4 and er.rho_max_q05 <= er.rho_max <= er.rho_max_q95


def test_paper_values_report_distributions_for_random_graphs():
    vals = Cn.paper_values(draws=5)
    ring = [v for v in vals if v.topology == "ring"]
    assert all(v.matches_3_decimals for v in ring)
    rnd = [v for v in vals if v.draws > 1]
    assert rnd and all(v.matches_3_decimals is None and 0 <= v.stated_percentile <= 1 for v in rnd)


def test_a_torus_is_drawn_on_its_lattice(tmp_path):
    """``layout="grid"`` puts node r * cols + c at (c, -r): the torus reads as a lattice, its
    wrap-around edges as stubs at the border (not an annulus of crossing chords)."""
    W = mixing_matrix("torus", 16)
    path = draw_mixing_graph(W, tmp_path / "t.png", layout="grid", title="torus")
    assert path.stat().st_size > 1000
