"""AFGA, CAFGA, HA-Fed, DSGD, FedDyn and the adaptive Fed* optimizers (000, 004).

Exact facts: A1 (AFGA without re-sampling and with W = I is FedAMSGrad, all seeds), 004 Remark
5.9 (partial = full participation HA-Fed with complete graphs in the clusters), hand-computed
rounds of each algorithm, and the ``fedtheory simulate`` contract for the new names.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from fedtheory.algorithms import AlgorithmConfig, info, make_algorithm
from fedtheory.algorithms.base import RoundDraw
from fedtheory.algorithms.gossip import cluster_weights
from fedtheory.algorithms.gossip import gossip_matrix as mixing_matrix
from fedtheory.cli import main
from fedtheory.errors import AssumptionError
from fedtheory.participation import Full, PerCluster, Uniform
from fedtheory.problems import random_quadratic
from fedtheory.simulation import simulate

N, D = 12, 4


@pytest.fixture(scope="module")
def noisy():
    return random_quadratic(N, D, heterogeneity=2.0, noise=0.5, seed=1)


@pytest.fixture(scope="module")
def exact():
    return random_quadratic(N, D, heterogeneity=2.0, seed=2)


def _run(problem, name, part, rounds=15, seeds=5, **kw):
    kw.setdefault("lr", 0.05)
    kw.setdefault("local_steps", 3)
    if "global_lr" in info(name).settings:
        kw.setdefault("global_lr", 0.05)
    kw.setdefault("metrics", ["error", "grad_norm2"])
    return simulate(problem, name, part, rounds=rounds, seeds=seeds, seed=7, **kw)


# --- A1 ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("identity", ["matrix", "topology"])
def test_a1_afga_without_resampling_and_identity_is_fedamsgrad(noisy, identity):
    """000 Sec. 3.2: S_{r,t} = S_r and W = I reduce AFGA to FedAMSGrad, bit for bit, every seed."""
    part = Uniform(N, 4)
    ref = _run(noisy, "fedamsgrad", part)
    kw = {"mixing": np.eye(N)} if identity == "matrix" else {"topology": "identity"}
    afga = _run(noisy, "afga", part, resample=False, **kw)
    assert np.array_equal(afga.x_final, ref.x_final)
    assert np.array_equal(afga.grad_norm2, ref.grad_norm2)
    assert np.isfinite(ref.x_final).all() and ref.seeds == 5


def test_a1_needs_both_switches(noisy):
    """Re-sampling on, or a real graph, changes the iterates (the A1 test can fail)."""
    part = Uniform(N, 4)
    ref = _run(noisy, "fedamsgrad", part)
    resampled = _run(noisy, "afga", part, mixing=np.eye(N))
    gossiped = _run(noisy, "afga", part, resample=False, topology="ring")
    assert np.abs(resampled.x_final - ref.x_final).max() > 1e-6
    assert np.abs(gossiped.x_final - ref.x_final).max() > 1e-6


# --- hand-computed rounds --------------------------------------------------------------------
def _amsgrad(delta, state, eta, beta1=0.9, beta2=0.99, eps=1e-8, inside=True):
    m, v, vh = state
    m = beta1 * m + (1 - beta1) * delta
    v = beta2 * v + (1 - beta2) * delta**2
    vh = np.maximum(vh, v)
    den = np.sqrt(vh + eps) if inside else np.sqrt(vh) + eps
    return eta * m / den, (m, v, vh)


def _grads(problem, X):
    return np.einsum("nde,...ne->...nd", problem.H, X) - problem.h


def test_afga_full_participation_by_hand(exact):
    """000 Alg. 1 with S_{r,t} = [N]: X <- W (X - eta_l G) K times, Delta = mean, AMSGrad step."""
    K, lr, eta, R = 3, 0.05, 0.1, 4
    W = mixing_matrix("ring", N)
    res = _run(
        exact,
        "afga",
        Full(N),
        rounds=R,
        seeds=1,
        lr=lr,
        local_steps=K,
        global_lr=eta,
        topology="ring",
    )
    x = np.zeros(D)
    st = (np.zeros(D),) * 3
    for _ in range(R):
        X = np.tile(x, (N, 1))
        for _ in range(K):
            X = W @ (X - lr * _grads(exact, X))
        step, st = _amsgrad((X - x).mean(axis=0), st, eta)
        x = x + step
    np.testing.assert_allclose(res.x_final[0], x, rtol=1e-12, atol=1e-13)


def test_afga_full_participation_is_deterministic(exact):
    """With --participation full every client computes at every step: all seeds agree."""
    res = _run(exact, "afga", Full(N), seeds=3, topology="ring")
    assert np.array_equal(res.x_final[0], res.x_final[1])
    assert np.array_equal(res.x_final[0], res.x_final[2])


def test_afga_recomputes_only_resampled_clients(exact):
    """Between gossip steps only S_{r,t} moves: with W = I, one round of K = 1 changes exactly
    the rows of the re-sampled set (the runner's step masks), not those of S_r."""
    algo = make_algorithm(
        "afga",
        AlgorithmConfig(lr=0.1, local_steps=1, global_lr=0.1),
        problem=exact,
        topology="identity",
    )

    x0 = np.zeros((1, D))
    state = algo.init(exact, x0)
    mask = np.zeros((1, N), dtype=bool)
    mask[0, :3] = True
    step = np.zeros((1, 1, N), dtype=bool)
    step[0, 0, 5:8] = True
    draw = RoundDraw(mask=mask, weights=mask / 3.0, r=0, step_masks=step)
    new = algo.round(state, exact, draw, None)
    moved = np.abs(new.X[0] - x0[0]).sum(axis=1) > 0
    assert moved.tolist() == step[0, 0].tolist()
    # Delta averages S_r = {0, 1, 2}, which did not compute: the server does not move.
    np.testing.assert_array_equal(new.x, x0)
    with pytest.raises(AssumptionError, match="step_masks"):
        algo.round(state, exact, draw._replace(step_masks=None), None)


@pytest.mark.parametrize(
    ("name", "kind", "inside"),
    [
        ("fedamsgrad", "amsgrad", True),
        ("fedadam", "adam", False),
        ("fedyogi", "yogi", False),
        ("fedadagrad", "adagrad", False),
    ],
)
def test_adaptive_fed_optimizers_by_hand(exact, name, kind, inside):
    """FedAvg local steps + the server optimizer, three rounds written out (Reddi et al. 2021,
    Alg. 2; 000 eq. (2)); the defaults put eps inside the root only for FedAMSGrad."""
    K, lr, eta, b1, b2, eps = 2, 0.05, 0.3, 0.9, 0.99, 1e-3
    res = _run(
        exact, name, Full(N), rounds=3, seeds=1, lr=lr, local_steps=K, global_lr=eta, eps=eps
    )
    x, m, v, vh = np.zeros(D), np.zeros(D), np.zeros(D), np.zeros(D)
    for _ in range(3):
        X = np.tile(x, (N, 1))
        for _ in range(K):
            X = X - lr * _grads(exact, X)
        d = (X - x).mean(axis=0)
        m = b1 * m + (1 - b1) * d
        if kind in ("adam", "amsgrad"):
            v = b2 * v + (1 - b2) * d * d
        elif kind == "yogi":
            v = v - (1 - b2) * d * d * np.sign(v - d * d)
        else:
            v = v + d * d
        vh = np.maximum(vh, v) if kind == "amsgrad" else v
        x = x + eta * m / (np.sqrt(vh + eps) if inside else np.sqrt(vh) + eps)
    np.testing.assert_allclose(res.x_final[0], x, rtol=1e-12, atol=1e-14)


# --- CAFGA / HA-Fed ----------------------------------------------------------------------------
def test_cluster_weights_formula():
    """000 Alg. 2 line 20: (1/C) sum_k (1/|S^k|) sum_{S^k}; empty clusters are left out."""
    mask = np.array([[1, 1, 0, 0, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 1, 0, 1]], dtype=bool)
    w = cluster_weights(mask, 3)
    np.testing.assert_allclose(w[0], [1 / 4, 1 / 4, 0, 0, 1 / 2, 0, 0, 0, 0])  # C' = 2
    np.testing.assert_allclose(w[1], [0, 0, 0, 0, 0, 0, 1 / 2, 0, 1 / 2])


def test_hafed_partial_with_complete_clusters_equals_full(exact):
    """004 Remark 5.9: complete graphs in the clusters (rho_max = 0) make every client of a
    cluster equal after gossip, so m per cluster gives full participation's iterates (to
    rounding: the two average m resp. n identical rows)."""
    C, m = 3, 2
    labels = np.repeat(np.arange(C), N // C)
    kw = dict(rounds=20, seeds=3, clusters=C, lr=0.05, local_steps=4, global_lr=0.05)
    full = _run(exact, "hafed", Full(N), topology="complete", **kw)
    part = _run(exact, "hafed", PerCluster(labels, m), topology="complete", **kw)
    np.testing.assert_allclose(part.x_final, full.x_final, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(part.grad_norm2, full.grad_norm2, rtol=1e-10, atol=1e-14)
    ring_full = _run(exact, "hafed", Full(N), topology="ring", **kw)
    ring_part = _run(exact, "hafed", PerCluster(labels, m), topology="ring", **kw)
    assert np.abs(ring_part.x_final - ring_full.x_final).max() > 1e-6  # rho_max > 0 differs


def test_hafed_full_by_hand(exact):
    """004 Alg. 1: every client steps, gossips with W_k in its cluster; Delta = mean of all."""
    C, K, lr, eta = 3, 2, 0.05, 0.2
    n = N // C
    Wk = mixing_matrix("ring", n)
    W = np.kron(np.eye(C), Wk)
    res = _run(
        exact,
        "hafed",
        Full(N),
        rounds=3,
        seeds=1,
        clusters=C,
        topology="ring",
        lr=lr,
        local_steps=K,
        global_lr=eta,
    )
    x, st = np.zeros(D), (np.zeros(D),) * 3
    for _ in range(3):
        X = np.tile(x, (N, 1))
        for _ in range(K):
            X = W @ (X - lr * _grads(exact, X))
        step, st = _amsgrad((X - x).mean(axis=0), st, eta)
        x = x + step
    np.testing.assert_allclose(res.x_final[0], x, rtol=1e-12, atol=1e-13)


def test_cafga_needs_equal_clusters(exact):
    with pytest.raises(AssumptionError, match="equal clusters"):
        make_algorithm("cafga", problem=exact, clusters=5)


def test_cafga_round_computes_on_resampled_sets_and_averages_per_cluster(exact):
    """000 Alg. 2: only S_{r,t}^k computes (W_k = I here, so nothing mixes), and Delta is
    (1/C) sum_k (1/|S_r^k|) sum_{S_r^k} (x_i - x_r), read off the server's first moment
    m = (1 - beta1) Delta."""

    C, lr = 3, 0.1
    algo = make_algorithm(
        "cafga",
        AlgorithmConfig(lr=lr, local_steps=1, global_lr=0.1),
        problem=exact,
        clusters=C,
        topology="identity",
    )
    state = algo.init(exact, np.zeros((1, D)))
    mask = np.zeros((1, N), dtype=bool)
    mask[0, [0, 1, 4, 9]] = True  # S_r^k: {0, 1}, {4}, {9}
    step = np.zeros((1, 1, N), dtype=bool)
    step[0, 0, [1, 5, 9]] = True  # S_{r,0}^k: {1}, {5}, {9}
    new = algo.round(state, exact, RoundDraw(mask=mask, weights=mask / 4.0, step_masks=step), None)
    moved = np.abs(new.X[0]).sum(axis=1) > 0
    assert moved.tolist() == step[0, 0].tolist()
    G = _grads(exact, np.zeros((N, D)))
    d = -lr * G
    # cluster 0: (0 + d_1) / 2 (client 0 did not compute); cluster 1: d_4 = 0; cluster 2: d_9.
    expect = (d[1] / 2 + 0.0 + d[9]) / 3
    np.testing.assert_allclose(new.opt.m[0] / 0.1, expect, rtol=1e-12, atol=1e-15)


# --- communication-adapted AFGA, DSGD, FedDyn ----------------------------------------------------
def test_afga_adapted_full_participation_equals_afga_on_ring(exact):
    """With everyone online the ring over S_r is the ring over all N: the two variants agree."""
    a = _run(exact, "afga", Full(N), seeds=2, topology="ring")
    b = _run(exact, "afga-adapted", Full(N), seeds=2, topology="ring")
    np.testing.assert_allclose(a.x_final, b.x_final, rtol=1e-12, atol=1e-13)


def test_afga_adapted_offline_clients_do_not_move(exact):
    algo = make_algorithm(
        "afga-adapted", AlgorithmConfig(lr=0.1, local_steps=3, global_lr=0.1), problem=exact
    )

    state = algo.init(exact, np.ones((2, D)))
    mask = np.zeros((2, N), dtype=bool)
    mask[0, [1, 4, 9]] = True
    mask[1, [0, 2, 3, 11]] = True
    new = algo.round(
        state, exact, RoundDraw(mask=mask, weights=mask / mask.sum(1, keepdims=True)), None
    )
    np.testing.assert_array_equal(new.X[~mask], state.X[~mask])
    assert (np.abs(new.X[mask] - 1.0).sum(axis=1) > 0).all()


def test_dsgd_by_hand(exact):
    """X <- W (X - eta_l G(X)) at every step; the reported model is the clients' average."""
    K, lr = 3, 0.05
    W = mixing_matrix("ring", N)
    res = _run(exact, "dsgd", Full(N), rounds=2, seeds=1, lr=lr, local_steps=K, topology="ring")
    X = np.zeros((N, D))
    for _ in range(2 * K):
        X = W @ (X - lr * _grads(exact, X))
    np.testing.assert_allclose(res.x_final[0], X.mean(axis=0), rtol=1e-12, atol=1e-13)


def test_feddyn_converges_to_x_star_where_fedavg_does_not(exact):
    """Acar et al. 2021: x* is FedDyn's fixed point for any K; FedAvg's K > 1 fixed point is not
    x* on heterogeneous quadratics (claim F1)."""
    kw = dict(rounds=400, seeds=1, lr=0.05, local_steps=5, global_lr=1.0)
    dyn = _run(exact, "feddyn", Full(N), alpha=0.5, **kw)
    avg = _run(exact, "fedavg", Full(N), **kw)
    assert dyn.error[0, -1] < 1e-8
    assert avg.error[0, -1] > 1e-3


# --- the simulate CLI contract -------------------------------------------------------------------
NEW = [
    "fedamsgrad",
    "fedadam",
    "fedyogi",
    "fedadagrad",
    "afga",
    "afga-adapted",
    "cafga",
    "hafed",
    "dsgd",
    "feddyn",
]


@pytest.mark.parametrize("name", NEW)
def test_simulate_cli_accepts_new_algorithms(tmp_path, capsys, name):
    out = tmp_path / "o.json"
    args = [
        "simulate",
        "--problem",
        "quadratic",
        "--algorithm",
        name,
        "--participation",
        "uniform",
        "--clients-per-round",
        "4",
        "--rounds",
        "5",
        "--local-steps",
        "2",
        "--lr",
        "0.01",
        "--seeds",
        "2",
        "--json",
        str(out),
    ]
    flags = {
        "global_lr": ["--global-lr", "0.05"],
        "beta1": ["--beta1", "0.9"],
        "beta2": ["--beta2", "0.99"],
        "eps": ["--eps", "1e-8"],
        "topology": ["--topology", "ring"],
        "clusters": ["--clusters", "4"],
    }
    for setting in info(name).settings:  # the flags this algorithm reads
        args += flags.get(setting, [])
    assert main(args) == 0, capsys.readouterr().err
    data = json.loads(out.read_text())
    assert data["algorithm"] == name
    assert np.isfinite(np.array(data["error"], dtype=float)).all()
    assert len(data["x_final"]) == 2


def test_simulate_cli_afga_full_is_deterministic(tmp_path, capsys):
    out = tmp_path / "o.json"
    args = [
        "simulate",
        "--problem",
        "quadratic",
        "--algorithm",
        "afga",
        "--participation",
        "full",
        "--rounds",
        "6",
        "--local-steps",
        "3",
        "--lr",
        "0.01",
        "--global-lr",
        "0.05",
        "--topology",
        "ring",
        "--seeds",
        "3",
        "--eps-placement",
        "outside",
        "--json",
        str(out),
    ]
    assert main(args) == 0
    err = np.array(json.loads(out.read_text())["error"])
    assert np.array_equal(err[0], err[1]) and np.array_equal(err[0], err[2])


def test_simulate_cli_unknown_topology_is_one_line(capsys):
    args = [
        "simulate",
        "--problem",
        "quadratic",
        "--algorithm",
        "afga",
        "--rounds",
        "2",
        "--local-steps",
        "1",
        "--lr",
        "0.01",
        "--topology",
        "moebius",
    ]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "unknown topology" in err and err.count("\n") == 1
