"""Exact oracles (fedtheory.analysis.exact) against brute force written here.

The reference never uses the oracle's machinery. For every participation set S of positive
probability it runs the algorithm's own ``round`` on basis states of the *whole* NamedTuple
state (every field, flattened) to get the dense affine map z <- M_S z + c_S (and the noise
response through a stand-in random stream), computes numerically the minimal realization (the
affine hull of the states reachable from the initialization, modulo what never reaches the
server model x), and then the rates and limits by dense Kronecker products:

    mean rate        rho(sum_S p_S M_S)
    mean-square rate rho(sum_S p_S M_S kron M_S)
    floor            vec C = (I - sum_S p_S M_S kron M_S)^{-1} vec(sum_S p_S (e_S e_S^T + noise))

(and the chain-augmented versions for Markov availability). Agreement is required to 1e-10
(rates, relative) and 1e-9 (floors, relative to ||x*||^2), on problems with N = 3-4 clients,
d = 2, K = 1-3.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fedtheory.algorithms import make_algorithm
from fedtheory.algorithms.base import RoundDraw
from fedtheory.algorithms.registry import names
from fedtheory.analysis.closed_forms import fedavg_fixed_point, fedavg_stationary_mean
from fedtheory.analysis.exact import (
    AFFINE_ALGORITHMS,
    NO_LAYOUT,
    NOT_AFFINE,
    NotAffineError,
    NotQuadraticError,
    exact_mse_curve,
    exact_rates,
    extract,
    largest_stable_lr,
    oracle,
    problem_constants,
)
from fedtheory.errors import AssumptionError, FedTheoryError
from fedtheory.experiments.fedavg_floor import exact_floors, floor_problem, measure_floors
from fedtheory.experiments.stability import plot_stability_map, run_stability_map
from fedtheory.participation import Markov, make_participation
from fedtheory.participation.models import Cyclic, PerCluster, Weighted
from fedtheory.problems import (
    QuadraticProblem,
    figure4_problem,
    random_least_squares,
    random_quadratic,
)
from fedtheory.problems.logistic import random_logistic
from fedtheory.simulation import simulate

RATE_RTOL = 1e-10
FLOOR_RTOL = 1e-9


# -- the brute-force reference --------------------------------------------------------------
def _leaves(state):
    out = []
    for v in state:  # a field the state does not carry (None) has no coordinates
        out += _leaves(v) if isinstance(v, tuple) else [] if v is None else [v]
    return out


def _flat(state) -> np.ndarray:
    return np.concatenate(
        [np.asarray(a, dtype=float).reshape(a.shape[0], -1) for a in _leaves(state)], axis=1
    )


def _unflat(tpl, z: np.ndarray):
    pos = [0]

    def rec(t):
        vals = []
        for v in t:
            if isinstance(v, tuple):
                vals.append(rec(v))
            elif v is None:
                vals.append(None)
            else:
                size = int(np.prod(v.shape[1:]))
                vals.append(z[:, pos[0] : pos[0] + size].reshape((z.shape[0],) + v.shape[1:]))
                pos[0] += size
        return type(t)(*vals)

    return rec(tpl)


class _Draws:
    """A stand-in random stream: the t-th standard_normal call returns ``arrays[t]``."""

    def __init__(self, arrays):
        self.arrays, self.t = arrays, 0

    def standard_normal(self, size, dtype=np.float64):
        out = self.arrays[self.t]
        assert out.shape == tuple(size)
        self.t += 1
        return out


def _round(alg, prob, Z, mask, w, rng=None):
    tpl = alg.init(prob, np.zeros((Z.shape[0], prob.dim)))
    S = Z.shape[0]
    draw = RoundDraw(
        mask=np.broadcast_to(mask, (S, mask.size)).copy(),
        weights=np.broadcast_to(w, (S, w.size)).copy(),
    )
    return _flat(alg.round(_unflat(tpl, Z), prob, draw, rng))


def dense_map(alg, prob, mask, w, K):
    """(M, c, Gamma) of one round for a fixed draw, on the flattened full state."""
    homog = QuadraticProblem(prob.H, np.zeros_like(prob.h))
    n = _flat(alg.init(prob, np.zeros((1, prob.dim)))).shape[1]
    M = _round(alg, homog, np.eye(n), mask, w).T
    c = _round(alg, prob, np.zeros((1, n)), mask, w)[0]
    N, d = prob.n_clients, prob.dim
    q = N * K * d
    unit = QuadraticProblem(prob.H, np.zeros_like(prob.h), noise=1.0)
    arrays = np.zeros((K, q, N, d))
    for j, t, a in itertools.product(range(N), range(K), range(d)):
        arrays[t, (j * K + t) * d + a, j, a] = 1.0
    rng = _Draws(list(arrays))
    G = _round(alg, unit, np.zeros((q, n)), mask, w, rng).T
    if rng.t == 0:
        G = np.zeros((n, 0))
    return M, c, G


def observable_coordinates(maps, d: int) -> np.ndarray:
    """The coordinates that can ever reach x: start from x (the first d coordinates) and add
    every coordinate some M_S feeds into an observable one. The others are dropped: their
    columns are exactly zero in the observable rows of every M_S, so they span an invariant
    subspace that x never sees (the clients' stale models, an unused optimizer moment...)."""
    reach = np.zeros(maps[0][0].shape[0], dtype=bool)
    reach[:d] = True
    feeds = np.zeros_like(reach, dtype=bool)
    while True:
        feeds[:] = False
        for M, _, _ in maps:
            scale = np.abs(M).max()
            feeds |= (np.abs(M[reach]) > 1e-14 * scale).any(axis=0)
        new = reach | feeds
        if new.sum() == reach.sum():
            return np.flatnonzero(reach)
        reach = new


def conserved_quotient(maps) -> np.ndarray:
    """Orthonormal basis Q of {v : l^T v = 0 for every l with l^T (M_S - I) = 0 for all S}: the
    conserved functionals of every round are quotiented out (their values stay those of the
    initial state). An SVD of the stacked M_S - I; conserved functionals give exact zeros."""
    n = maps[0][0].shape[0]
    A = np.concatenate([M - np.eye(n) for M, _, _ in maps], axis=1)
    U, s, _ = np.linalg.svd(A, full_matrices=True)
    s = np.concatenate([s, np.zeros(n - s.size)])
    L = U[:, s <= 1e-10 * max(s.max(), 1e-300)].T  # rows: conserved functionals
    if L.shape[0] == 0:
        return np.eye(n)
    _, sl, vt = np.linalg.svd(L, full_matrices=True)
    return vt[L.shape[0] :].T


def _rho(A: np.ndarray) -> float:
    return float(np.abs(np.linalg.eigvals(A)).max(initial=0.0))


def brute_force(prob, alg, law, x0=None, sigma=0.0):
    """Rates and limits from the enumerated law [(mask, w, p)] or a Markov chain dict."""
    d = prob.dim
    K = alg.config.local_steps
    markov = isinstance(law, dict)
    draws = law["draws"] if markov else law
    maps = [dense_map(alg, prob, m, w, K) for m, w, _ in draws]
    tpl = alg.init(prob, np.zeros((1, d)) if x0 is None else np.asarray(x0)[None, :])
    obs = observable_coordinates(maps, d)  # x is the first field of every state
    maps = [(M[np.ix_(obs, obs)], c[obs], G[obs]) for M, c, G in maps]
    z0 = _flat(tpl)[0][obs]
    n = z0.size
    Cx = np.zeros((d, n))
    Cx[:, :d] = np.eye(d)
    Q = conserved_quotient(maps)
    r = Q.shape[1]
    Mt = [Q.T @ M @ Q for M, _, _ in maps]
    ct = [Q.T @ (M @ z0 + c - z0) for M, c, _ in maps]
    Gt = [sigma * (Q.T @ G) for _, _, G in maps]
    Cxt, xs = Cx @ Q, prob.x_star
    out = {"dim": r}
    if not markov:
        p = np.array([w for _, _, w in draws])
        EM = sum(pi * M for pi, M in zip(p, Mt, strict=True))
        Ec = sum(pi * c for pi, c in zip(p, ct, strict=True))
        T = sum(pi * np.kron(M, M) for pi, M in zip(p, Mt, strict=True))
        out["mean_rate"], out["ms_rate"] = _rho(EM), _rho(T)
        if out["ms_rate"] >= 1 - 1e-6:  # no stationary second moment (I - T may be singular)
            return out
        ybar = np.linalg.solve(np.eye(r) - EM, Ec)
        rhs = sum(
            pi * (np.outer(e, e) + G @ G.T).reshape(-1)
            for pi, e, G in zip(
                p, [M @ ybar + c - ybar for M, c in zip(Mt, ct, strict=True)], Gt, strict=True
            )
        )
        C = np.linalg.solve(np.eye(r * r) - T, rhs).reshape(r, r)
    else:
        P, pi = law["P"], law["pi"]
        nq = len(Mt)
        A = np.zeros((nq * r, nq * r))
        T = np.zeros((nq * r * r, nq * r * r))
        for a, b in itertools.product(range(nq), range(nq)):  # a -> b
            A[b * r : (b + 1) * r, a * r : (a + 1) * r] = P[a, b] * Mt[a]
            T[b * r * r : (b + 1) * r * r, a * r * r : (a + 1) * r * r] = P[a, b] * np.kron(
                Mt[a], Mt[a]
            )
        out["mean_rate"], out["ms_rate"] = _rho(A), _rho(T)
        if out["ms_rate"] >= 1 - 1e-6:
            return out
        bvec = np.concatenate([sum(P[a, b] * pi[a] * ct[a] for a in range(nq)) for b in range(nq)])
        mu = np.linalg.solve(np.eye(nq * r) - A, bvec).reshape(nq, r)
        ybar = mu.sum(axis=0)
        e = [Mt[a] @ ybar + ct[a] - ybar for a in range(nq)]
        nu = mu - pi[:, None] * ybar
        rhs = []
        for b in range(nq):
            acc = np.zeros((r, r))
            for a in range(nq):
                X = np.outer(Mt[a] @ nu[a], e[a])
                acc += P[a, b] * (X + X.T + pi[a] * (np.outer(e[a], e[a]) + Gt[a] @ Gt[a].T))
            rhs.append(acc.reshape(-1))
        C = np.linalg.solve(np.eye(nq * r * r) - T, np.concatenate(rhs))
        C = C.reshape(nq, r, r).sum(axis=0)
    mean_x = Cx @ z0 + Cxt @ ybar
    out["stationary_mean"] = mean_x
    out["mse"] = float(np.trace(Cxt @ C @ Cxt.T) + np.sum((mean_x - xs) ** 2))
    return out


def enumerate_law(model, rule="mean"):
    """[(mask, w, p)] of a memoryless model; a chain dict for Markov (built here)."""
    N = model.n_clients
    masks = np.array(list(itertools.product([False, True], repeat=N)))[:, ::-1]
    if isinstance(model, Markov):
        a, b = np.asarray(model.a), np.asarray(model.b)
        P = np.ones((masks.shape[0], masks.shape[0]))
        for j in range(N):
            T = np.array([[1 - a[j], a[j]], [b[j], 1 - b[j]]])
            P *= T[masks[:, j].astype(int)[:, None], masks[:, j].astype(int)[None, :]]
        st = a / (a + b)
        pi = np.prod(np.where(masks, st, 1 - st), axis=1)
        draws = [(m, model.weights(m[None], rule)[0], p) for m, p in zip(masks, pi, strict=True)]
        return {"draws": draws, "P": P, "pi": pi}
    draws, probs, _ = model.support()
    out = []
    for m, p in zip(np.asarray(draws), probs, strict=True):
        if p > 0:
            out.append((np.asarray(m) > 0, model.weights(np.asarray(m)[None], rule)[0], p))
    return out


# -- the settings -------------------------------------------------------------------------------
def _problem(N=3, d=2, seed=3, noise=0.0):
    return random_quadratic(N, d, condition=4.0, heterogeneity=1.0, noise=noise, seed=seed)


P3 = np.array([0.5, 0.3, 0.2])
MODELS = {
    "full": lambda: make_participation("full", 3),
    "uniform": lambda: make_participation("uniform", 3, 2),
    "weighted": lambda: make_participation("weighted", 3, 2, p=P3),
    "weighted-repl": lambda: Weighted(P3, 2, replace=True),
    "bernoulli-redraw": lambda: make_participation("bernoulli", 3, p=[0.6, 0.4, 0.7]),
    "bernoulli-skip": lambda: make_participation("bernoulli", 3, p=[0.6, 0.4, 0.7], empty="skip"),
    "markov": lambda: make_participation("markov", 2, a=[0.5, 0.3], b=[0.2, 0.4]),
}
#: (registry name, lr, K, extra keywords): step sizes with rates well below 1.
ALGOS = {
    "fedavg": ("fedavg", 0.4, 2, {}),
    "fedavg-momentum": ("fedavg", 0.3, 2, {"options": {"server_momentum": 0.5}}),
    "fedavg-server-step": ("fedavg", 0.3, 3, {"global_lr": 0.7}),
    "fedprox": ("fedprox", 0.4, 2, {"prox_mu": 0.5}),
    "scaffold": ("scaffold", 0.3, 2, {}),
    "focus": ("focus", 0.15, 2, {}),
    "focus-K1": ("focus", 0.15, 1, {}),
    "scaffnew": ("scaffnew", 0.3, 3, {}),
    "mifa": ("mifa", 0.4, 2, {}),
    "mifa-notebook": ("mifa", 0.4, 2, {"options": {"variant": "focus-notebook"}}),
    "feddyn": ("feddyn", 0.3, 2, {"options": {"alpha": 0.5}}),
}


def _build(key, prob):
    name, lr, K, kw = ALGOS[key]
    opts = dict(kw.get("options", {}))
    extra = {k: v for k, v in kw.items() if k != "options"}
    return make_algorithm(name, problem=prob, lr=lr, local_steps=K, **extra, **opts)


def _oracle(key, prob, model, **more):
    name, lr, K, kw = ALGOS[key]
    return exact_rates(prob, name, model, lr=lr, local_steps=K, **kw, **more)


def _rel(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


@pytest.mark.parametrize("model_key", list(MODELS))
@pytest.mark.parametrize("alg_key", list(ALGOS))
def test_rates_and_limits_match_brute_force(alg_key, model_key):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = MODELS[model_key]()
    prob = _problem(N=model.n_clients)
    ref = brute_force(prob, _build(alg_key, prob), enumerate_law(model))
    res = _oracle(alg_key, prob, model, mean_square="operator")
    assert _rel(res.mean_rate, ref["mean_rate"]) < RATE_RTOL
    assert _rel(res.mean_square_rate, ref["ms_rate"]) < RATE_RTOL
    if ref["ms_rate"] < 1 - 1e-6:  # a stationary second moment exists
        xs2 = float(prob.x_star @ prob.x_star)
        assert abs(res.stationary_mse - ref["mse"]) < FLOOR_RTOL * xs2
        np.testing.assert_allclose(
            res.stationary_mean, ref["stationary_mean"], rtol=0, atol=1e-9 * np.sqrt(xs2)
        )


# -- exact facts ----------------------------------------------------------------------------
@pytest.mark.parametrize("alg_key", list(ALGOS))
def test_full_participation_mean_square_rate_is_mean_rate_squared(alg_key):
    """Deterministic M: rho(M kron M) = rho(M)^2, computed through the mean-square operator."""
    prob = _problem(N=4, seed=5)
    res = _oracle(alg_key, prob, make_participation("full", 4), mean_square="operator")
    assert _rel(res.mean_square_rate, res.mean_rate**2) < RATE_RTOL
    auto = _oracle(alg_key, prob, make_participation("full", 4))
    assert "rho(M)^2" in auto.methods["mean-square rate"]
    assert _rel(auto.mean_square_rate, res.mean_square_rate) < RATE_RTOL


@pytest.mark.parametrize("model_key", list(MODELS))
@pytest.mark.parametrize("alg_key", ["focus", "focus-K1", "scaffold", "feddyn"])
def test_exact_methods_have_the_fixed_point_x_star(alg_key, model_key):
    """FOCUS (003 Thm 1), SCAFFOLD and FedDyn: every M_S shares the fixed point, its x part x*."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = MODELS[model_key]()
    prob = _problem(N=model.n_clients)
    res = _oracle(alg_key, prob, model)
    if alg_key == "feddyn" and model_key in ("bernoulli-skip", "markov"):
        # An empty round sets FedDyn's x to -h/alpha (feddyn.py): no common fixed point.
        assert res.fixed_point is None and res.stationary_mse > 1e-6
        return
    assert res.exact and res.fixed_point is not None
    np.testing.assert_allclose(res.fixed_point, prob.x_star, rtol=1e-10, atol=1e-12)
    assert res.stationary_mse < 1e-20 * float(prob.x_star @ prob.x_star)


def test_fedavg_full_participation_fixed_point_is_li_et_al():
    prob = _problem(N=5, d=3, seed=7)
    for K, lr in ((1, 0.3), (3, 0.2), (5, 0.1)):
        res = exact_rates(prob, "fedavg", None, lr=lr, local_steps=K)
        np.testing.assert_allclose(
            res.fixed_point, fedavg_fixed_point(prob, lr, K), rtol=1e-11, atol=1e-13
        )
        assert not res.exact or K == 1


@pytest.mark.parametrize(
    "model",
    [
        make_participation("uniform", 5, 2),
        make_participation("weighted", 5, 3, p=[0.1, 0.2, 0.3, 0.25, 0.15]),
        make_participation("bernoulli", 5, p=[0.2, 0.5, 0.9, 0.4, 0.6]),
    ],
    ids=["uniform", "weighted", "bernoulli"],
)
def test_fedavg_stationary_mean_is_the_closed_form(model):
    prob = _problem(N=5, d=3, seed=7)
    res = exact_rates(prob, "fedavg", model, lr=0.2, local_steps=3)
    ref = fedavg_stationary_mean(prob, 0.2, 3, model)
    np.testing.assert_allclose(res.stationary_mean, ref.x, rtol=1e-11, atol=1e-13)
    assert res.fixed_point is None  # random participation: no fixed point shared by every M_S
    assert res.stationary_mse > float(np.sum((ref.x - prob.x_star) ** 2))  # bias^2 + variance


def test_mifa_converges_to_fedavg_full_participation_point():
    """At a fixed point every stored update is the client's current one, so MIFA's server
    step is FedAvg's full-participation step: MIFA's limit is Li et al.'s point under any
    participation with p_i > 0."""
    prob = _problem(N=4, seed=2)
    ref = fedavg_fixed_point(prob, 0.3, 2)
    for model in (make_participation("uniform", 4, 1), make_participation("bernoulli", 4, 2)):
        res = exact_rates(prob, "mifa", model, lr=0.3, local_steps=2)
        np.testing.assert_allclose(res.fixed_point, ref, rtol=1e-10, atol=1e-12)


def test_scaffold_and_focus_remove_redundant_coordinates():
    """SCAFFOLD keeps c = mean_i c_i (d conserved functionals removed); FOCUS's tracker
    y = sum_i g_prev_i is not a coordinate at all: state dimension d + N d for both."""
    prob = _problem(N=4, d=3, seed=1)
    model = make_participation("uniform", 4, 2)
    sc = exact_rates(prob, "scaffold", model, lr=0.3, local_steps=2)
    fo = exact_rates(prob, "focus", model, lr=0.1, local_steps=2)
    assert (sc.state_dim, sc.conserved) == (3 + 4 * 3, 3)
    assert (fo.state_dim, fo.conserved) == (3 + 4 * 3, 0)
    assert sc.mean_rate < 1 and fo.mean_rate < 1  # no spurious eigenvalue 1


def test_scaffnew_partial_participation_is_biased_by_its_conserved_quantity():
    """Under M-of-N sampling with the plain mean, sum_i (h_i - X_i / (eta K)) + x M / (eta K)
    is conserved by Scaffnew's round as coded (scaffnew.py), so its limit depends on x0."""
    prob = _problem(N=3, seed=3)
    model = make_participation("uniform", 3, 2)
    a = exact_rates(prob, "scaffnew", model, lr=0.3, local_steps=3, stationary=False)
    b = exact_rates(prob, "scaffnew", model, lr=0.3, local_steps=3, x0=np.ones(2), stationary=False)
    assert a.conserved == b.conserved == 2
    assert _rel(a.mean_square_rate, b.mean_square_rate) < RATE_RTOL  # rates do not move


def test_sg_focus_floor_scales_with_sigma_squared_and_vanishes_without_noise():
    prob = _problem(N=3, seed=3, noise=0.0)
    model = make_participation("uniform", 3, 2)
    r0 = exact_rates(prob, "sg-focus", model, lr=0.15, local_steps=2)
    r1 = exact_rates(prob, "sg-focus", model, lr=0.15, local_steps=2, noise=0.1)
    r2 = exact_rates(prob, "sg-focus", model, lr=0.15, local_steps=2, noise=0.2)
    assert r0.exact and r0.stationary_mse < 1e-25
    assert r1.fixed_point is None and r1.stationary_mse > 0
    assert _rel(r2.stationary_mse, 4 * r1.stationary_mse) < 1e-9
    assert _rel(r1.mean_square_rate, r0.mean_square_rate) < RATE_RTOL  # noise moves no rate
    # The exact FOCUS ignores the noise: its gradients are exact.
    assert exact_rates(prob, "focus", model, lr=0.15, local_steps=2, noise=0.1).exact


def test_noise_floor_matches_brute_force():
    prob = _problem(N=3, seed=3, noise=0.3)
    for key, model_key in (("focus", "weighted"), ("fedavg", "bernoulli-skip")):
        model = MODELS[model_key]()
        name = "sg-focus" if key == "focus" else key
        alg = make_algorithm(name, problem=prob, lr=ALGOS[key][1], local_steps=ALGOS[key][2])
        ref = brute_force(prob, alg, enumerate_law(model), sigma=0.3)
        res = exact_rates(prob, name, model, lr=ALGOS[key][1], local_steps=ALGOS[key][2])
        assert res.noise == 0.3
        assert abs(res.stationary_mse - ref["mse"]) < FLOOR_RTOL * float(prob.x_star @ prob.x_star)


@pytest.mark.parametrize("rule", ["weighted", "unbiased"])
def test_other_aggregation_rules_match_brute_force(rule):
    prob = _problem()
    for model in (MODELS["weighted"](), MODELS["bernoulli-redraw"]()):
        alg = make_algorithm("fedavg", problem=prob, lr=0.4, local_steps=2)
        ref = brute_force(prob, alg, enumerate_law(model, rule))
        res = exact_rates(
            prob, "fedavg", model, lr=0.4, local_steps=2, rule=rule, mean_square="operator"
        )
        assert _rel(res.mean_square_rate, ref["ms_rate"]) < RATE_RTOL
        assert abs(res.stationary_mse - ref["mse"]) < FLOOR_RTOL * float(prob.x_star @ prob.x_star)


def test_per_cluster_participation_matches_brute_force():
    prob = _problem(N=4, seed=4)
    model = PerCluster([0, 0, 1, 1], 1)
    alg = make_algorithm("scaffold", problem=prob, lr=0.3, local_steps=2)
    ref = brute_force(prob, alg, enumerate_law(model))
    res = exact_rates(prob, "scaffold", model, lr=0.3, local_steps=2)
    assert _rel(res.mean_square_rate, ref["ms_rate"]) < RATE_RTOL


def test_least_squares_problem_file_layout():
    """LeastSquaresProblem (the rate CLI's file format) with few rows: singular H_i."""
    prob = random_least_squares(3, 2, 3, lam=0.0, seed=1)
    model = make_participation("uniform", 3, 2)
    alg = make_algorithm("focus", problem=prob, lr=0.02, local_steps=2)
    ref = brute_force(prob, alg, enumerate_law(model))
    res = exact_rates(prob, "focus", model, lr=0.02, local_steps=2, mean_square="operator")
    assert _rel(res.mean_rate, ref["mean_rate"]) < RATE_RTOL
    assert _rel(res.mean_square_rate, ref["ms_rate"]) < RATE_RTOL


def test_matrix_free_krylov_schur_agrees_with_dense(monkeypatch):
    """The matrix-free Krylov-Schur path (forced here on a small problem) against dense eigenvalues
    and a dense solve of the same operator materialized."""
    prob = random_quadratic(5, 3, condition=4.0, seed=0)
    model = make_participation("weighted", 5, 2, p=[0.1, 0.2, 0.3, 0.25, 0.15])
    dense = exact_rates(prob, "fedavg", model, lr=0.3, local_steps=2)
    monkeypatch.setattr(oracle, "DENSE_MAX", 0)
    free = exact_rates(prob, "fedavg", model, lr=0.3, local_steps=2, mean_square="operator")
    assert "matrix-free" in free.methods["mean-square rate"]
    assert "GMRES" in free.methods["stationary mse"]
    assert _rel(free.mean_square_rate, dense.mean_square_rate) < 1e-9
    assert _rel(free.stationary_mse, dense.stationary_mse) < 1e-9
    fo = exact_rates(prob, "focus", model, lr=0.1, local_steps=2, mean_square="operator")
    monkeypatch.setattr(oracle, "DENSE_MAX", 4096)
    fo_dense = exact_rates(prob, "focus", model, lr=0.1, local_steps=2)
    assert "matrix-free" in fo.methods["mean-square rate"]
    assert _rel(fo.mean_square_rate, fo_dense.mean_square_rate) < 1e-9


# -- properties ----------------------------------------------------------------------------
@given(
    seed=st.integers(0, 10_000),
    lr=st.floats(0.01, 0.6),
    K=st.integers(1, 3),
    alg=st.sampled_from(["fedavg", "fedprox", "scaffold", "focus", "mifa"]),
    m=st.integers(1, 4),
)
def test_mean_square_rate_dominates_mean_rate_squared(seed, lr, K, alg, m):
    """Jensen for positive maps: E[M P M^T] >= E[M] P E[M]^T on P >= 0, so
    rho(E[M kron M]) >= rho(E[M])^2; equality under full participation (m = N)."""
    prob = random_quadratic(4, 2, condition=3.0, seed=seed)
    model = make_participation("uniform", 4, m)
    if alg == "focus":
        lr = lr / 4
    kw = {"prox_mu": 0.3} if alg == "fedprox" else {}
    res = exact_rates(
        prob, alg, model, lr=lr, local_steps=K, stationary=False, mean_square="operator", **kw
    )
    assert res.mean_square_rate >= res.mean_rate**2 * (1 - 1e-10)
    if m == 4:
        assert _rel(res.mean_square_rate, res.mean_rate**2) < 1e-9


@given(seed=st.integers(0, 10_000), x0=st.lists(st.floats(-5, 5), min_size=2, max_size=2))
def test_rates_do_not_depend_on_the_initial_point(seed, x0):
    prob = random_quadratic(3, 2, condition=3.0, seed=seed)
    model = make_participation("bernoulli", 3, p=[0.3, 0.6, 0.8])
    a = exact_rates(prob, "scaffold", model, lr=0.2, local_steps=2, stationary=False)
    b = exact_rates(prob, "scaffold", model, lr=0.2, local_steps=2, x0=x0, stationary=False)
    assert _rel(a.mean_square_rate, b.mean_square_rate) < 1e-10
    assert _rel(a.mean_rate, b.mean_rate) < 1e-10


# -- transient, bisection, constants ----------------------------------------------------------
def _second(maps, law, mean, second):
    """E[z' z'^T] from E[z] and E[z z^T] (rounds independent of the state)."""
    return sum(
        p * (M @ second @ M.T + np.outer(M @ mean, c) + np.outer(c, M @ mean) + np.outer(c, c))
        for (M, c, _), (_, _, p) in zip(maps, law, strict=True)
    )


@pytest.mark.parametrize("alg_key", ["fedavg", "focus"])
def test_exact_mse_curve_matches_propagated_brute_force_moments(alg_key):
    prob = _problem()
    model = MODELS["weighted"]()
    name, lr, K, _ = ALGOS[alg_key]
    curve = exact_mse_curve(prob, name, model, rounds=30, lr=lr, local_steps=K)
    alg = make_algorithm(name, problem=prob, lr=lr, local_steps=K)
    law = enumerate_law(model)
    maps = [dense_map(alg, prob, m, w, K) for m, w, _ in law]
    z = _flat(alg.init(prob, np.zeros((1, 2))))[0]
    xs = prob.x_star
    mean, second = z.copy(), np.outer(z, z)
    for r in range(31):
        ref = np.trace(second[:2, :2]) - 2 * xs @ mean[:2] + xs @ xs
        assert abs(curve[r] - ref) < 1e-10 * max(1.0, float(xs @ xs))
        second = _second(maps, law, mean, second)
        mean = sum(p * (M @ mean + c) for (M, c, _), (_, _, p) in zip(maps, law, strict=True))


def test_largest_stable_lr_brackets_the_mean_square_boundary():
    prob = _problem(N=3, seed=3)
    model = MODELS["uniform"]()
    st_ = largest_stable_lr(prob, "focus", model, lr_start=0.1, local_steps=2, rtol=1e-4)
    assert st_.lo < st_.hi <= st_.lo * (1 + 1e-4)
    assert st_.rate_lo < 1 and (np.isnan(st_.rate_hi) or st_.rate_hi >= 1)
    for eta, stable in ((st_.lo, True), (st_.hi, False)):
        r = exact_rates(prob, "focus", model, lr=eta, local_steps=2, stationary=False)
        assert (r.mean_square_rate < 1) == stable
    mean = largest_stable_lr(prob, "focus", model, lr_start=0.1, local_steps=2, criterion="mean")
    assert mean.lr >= st_.lr * (1 - 1e-3)  # mean-square stability implies mean stability


def test_problem_constants():
    prob = _problem(N=4, d=3, seed=9)
    c = problem_constants(prob)
    eig = np.linalg.eigvalsh(prob.H)
    np.testing.assert_allclose(c.L_i, eig[:, -1])
    np.testing.assert_allclose(c.mu_i, eig[:, 0])
    assert c.L == pytest.approx(prob.L) and c.mu == pytest.approx(prob.mu)
    prods = c.step_products(0.1, 3)
    assert prods["eta_K_L"] == pytest.approx(0.3 * eig.max())
    assert prods["eta_N_L"] == pytest.approx(0.4 * eig.max())


# -- refusals ---------------------------------------------------------------------------------
def test_the_oracle_agrees_with_the_registry_on_what_is_affine():
    """One fact, one home: the registry says which rounds are affine; every non-affine one has
    its reason here and every supported one is affine there."""
    assert set(NOT_AFFINE) == set(names(affine=False))
    assert set(AFFINE_ALGORITHMS) | set(NO_LAYOUT) == set(names(affine=True))


@pytest.mark.parametrize("name", sorted(NOT_AFFINE) + sorted(NO_LAYOUT))
def test_non_affine_algorithms_are_refused_naming_why(name):
    prob = _problem()
    with pytest.raises(NotAffineError, match=name):
        exact_rates(prob, name, None, lr=0.1, local_steps=2)


def test_every_affine_algorithm_is_supported():
    prob = _problem()
    for name in AFFINE_ALGORITHMS:
        res = exact_rates(prob, name, None, lr=0.05, local_steps=2, stationary=False)
        assert np.isfinite(res.mean_square_rate)


def test_refusals_of_problems_models_and_arguments():
    prob = _problem()
    with pytest.raises(NotQuadraticError, match="quadratic"):
        exact_rates(random_logistic(3, 20, 2, seed=0), "fedavg", None, lr=0.1, local_steps=1)
    with pytest.raises(NotQuadraticError, match="minibatch"):
        mb = random_least_squares(3, 10, 2, batch_size=2, seed=0)
        exact_rates(mb, "fedavg", None, lr=0.01, local_steps=1)
    with pytest.raises(TypeError, match="valid"):
        exact_rates(prob, "fedavg", None, lr=0.1, local_steps=1, rounds=3)
    with pytest.raises(AssumptionError, match="lr"):
        exact_rates(prob, "fedavg", None, lr=-1.0, local_steps=1)
    with pytest.raises(AssumptionError, match="K"):
        exact_rates(prob, "fedavg", None, lr=0.1, local_steps=0)
    with pytest.raises(FedTheoryError, match="not independent"):
        exact_rates(prob, "fedavg", Cyclic(3, 1), lr=0.1, local_steps=1)
    with pytest.raises(FedTheoryError, match="clients"):
        exact_rates(prob, "fedavg", make_participation("uniform", 4, 2), lr=0.1, local_steps=1)
    with pytest.raises(FedTheoryError, match="N = 22"):
        big = random_quadratic(22, 1, seed=0)
        exact_rates(big, "fedavg", make_participation("bernoulli", 22, 5), lr=0.1, local_steps=1)
    with pytest.raises(FedTheoryError, match="2\\^11"):
        p11 = random_quadratic(11, 1, seed=0)
        exact_rates(p11, "fedavg", make_participation("markov", 11, 3), lr=0.1, local_steps=1)


def test_verification_catches_a_round_that_is_not_the_extracted_map(monkeypatch):
    """A round made non-affine (a cubic term on the server model) fails the check."""
    prob = _problem()
    alg = make_algorithm("fedavg", problem=prob, lr=0.1, local_steps=1)
    inner = alg.round

    def bent(state, problem, draw, rng=None):
        out = inner(state, problem, draw, rng)
        return out._replace(x=out.x + 1e-3 * out.x**3)

    bad = type(alg)(name=alg.name, init=alg.init, round=bent, config=alg.config)
    with pytest.raises(NotAffineError, match="residual"):
        extract.extract_round_model(prob, bad)


# -- Monte Carlo on the 003 Figure 4 problem --------------------------------------------------
@pytest.mark.slow
def test_monte_carlo_decay_on_figure4_matches_the_exact_mean_square_rate():
    """FOCUS on the 003 Figure 4 problem, uniform 4 of 16, eta = 1.5e-4, K = 3 (the paper's
    setting), x0 = 0, 1000 seeds of the simulator.

    Measured rate: exp of the least-squares slope of log(seed mean of ||x_r - x*||^2) over rounds
    20..80 (window fixed here: after the first transient, and before the seed mean is carried
    by a few slow seeds of the heavy-tailed product of random matrices). CI: 99% percentile
    bootstrap over seeds (400 resamples of the 1000 seeds, the fit redone on each). Exact: the
    mean-square rate by Krylov-Schur at tolerance 1e-4 (10 CPU s; its error, 3.4e-4 against
    ARPACK at 1e-10, is far below the CI's half-width, about 3e-3; ARPACK at 1e-4 stops on a
    transient Ritz value 0.8352, 1.1e-2 off, and needs 1e-6 and 29 CPU s to be within 1e-7).
    The exact rate must lie in the CI, and the mean rate
    squared (what a deterministic analysis of E[x_r] would predict) must not: the test
    discriminates.
    """
    prob = figure4_problem()
    model = make_participation("uniform", 16, 4)
    res = exact_rates(
        prob,
        "focus",
        model,
        lr=1.5e-4,
        local_steps=3,
        tol=1e-4,
        stationary=False,
        eigensolver="krylov-schur",
    )
    sim = simulate(
        prob,
        "focus",
        model,
        rounds=80,
        seeds=1000,
        seed=0,
        lr=1.5e-4,
        local_steps=3,
        metrics=("error",),
    )
    e2 = sim.error**2 * float(prob.x_star @ prob.x_star)
    r = np.arange(20, 81)

    def rate(curve):
        return float(np.exp(np.polyfit(r, np.log(curve[20:81]), 1)[0]))

    rng = np.random.default_rng(0)
    boot = [rate(e2[rng.integers(0, 1000, 1000)].mean(axis=0)) for _ in range(400)]
    lo, hi = np.percentile(boot, [0.5, 99.5])
    assert hi - lo < 0.02
    assert lo <= res.mean_square_rate <= hi, (lo, res.mean_square_rate, hi)
    assert not lo <= res.mean_rate**2 <= hi


@pytest.mark.slow
def test_stability_map_data_and_plot(tmp_path):
    """run_stability_map on a small stand-in of Figure 4 (same regimes, N = 8, d = 2): every
    curve crosses 1 at its bisected boundary; the figure is written."""
    prob = random_quadratic(8, 2, condition=3.0, seed=0)
    prob.participation_p = np.linspace(1, 2, 8) / np.linspace(1, 2, 8).sum()
    data = run_stability_map(
        problem=prob, algorithms=("focus", "fedavg"), extra=(0.5, 1.2), rtol=5e-2
    )
    for reg in data.regimes.values():
        for alg in ("focus", "fedavg"):
            cur = reg.curves[alg]
            lr, rate = np.array(cur.lr), np.array(cur.mean_square_rate)
            eta = cur.largest_stable_lr
            assert (rate[lr <= eta] < 1).all() and (rate[lr > cur.bracket[1]] >= 1).all()
            assert cur.rate_at_paper_lr is not None
    assert "full: focus eta_max" in repr(data)
    side = data.to_dict()  # the sidecar's layout: curves beside the regime's fields
    assert side["regimes"]["full"]["focus"]["lr"] == data.regimes["full"].curves["focus"].lr
    fig = plot_stability_map(data, tmp_path / "s.png")
    assert (tmp_path / "s.png").stat().st_size > 1000 and len(fig.axes) == 3


def test_stability_map_is_the_same_in_worker_processes():
    """The settings computed by two forked processes give the numbers of one process, bit for
    bit, in the same order (only ``seconds`` differs)."""
    prob = random_quadratic(6, 2, condition=3.0, seed=1)
    prob.participation_p = np.linspace(1, 2, 6) / np.linspace(1, 2, 6).sum()
    kw = {
        "problem": prob,
        "algorithms": ("focus", "fedavg"),
        "regimes": ("full", "uniform"),
        "extra": (0.5, 1.2),
        "rtol": 0.2,
    }
    one, two = (run_stability_map(workers=w, **kw).to_dict() for w in (1, 2))
    for data in (one, two):
        for reg in data["regimes"].values():
            for cur in reg.values():
                if isinstance(cur, dict):
                    assert cur.pop("seconds", 0.0) >= 0.0
    assert list(one["regimes"]["uniform"]) == list(two["regimes"]["uniform"])
    assert one == two


def test_skipping_the_mean_square_operator_keeps_the_mean_rate_and_the_stationary_mean():
    """``mean_square="skip"``: the same mean rate and stationary mean as the full analysis, the
    mean-square rate NaN and no stationary mean-square error; full participation still gets
    rho(M)^2 (free)."""
    prob = _problem()
    model = make_participation("uniform", prob.n_clients, 2)
    full = exact_rates(prob, "fedavg", model, lr=0.1, local_steps=2)
    skip = exact_rates(prob, "fedavg", model, lr=0.1, local_steps=2, mean_square="skip")
    assert skip.mean_rate == full.mean_rate
    np.testing.assert_array_equal(skip.stationary_mean, full.stationary_mean)
    assert np.isnan(skip.mean_square_rate) and skip.stationary_mse is None
    det = exact_rates(prob, "fedavg", None, lr=0.1, local_steps=2, mean_square="skip")
    assert det.mean_square_rate == pytest.approx(det.mean_rate**2, rel=1e-15)
    with pytest.raises(AssumptionError, match="skip"):
        exact_rates(prob, "fedavg", model, lr=0.1, local_steps=2, mean_square="none")


def test_measured_fedavg_floor_agrees_with_the_exact_stationary_mse():
    """The floor experiment's time-averaged squared error over 64 seeds against the exact
    lim E||x_r - x*||^2 / ||x*||^2 (uniform 3 of 10, K = 1, eta = 0.3): within 4 standard
    errors of the mean over seeds (seeds are independent; a failure is a 6e-5 event)."""
    prob = floor_problem(10)
    model = make_participation("uniform", 10, 3)
    run = measure_floors(prob, model, [0.3], 1, 64, 3)[0]
    exact = exact_floors(prob, model, [0.3], 1)[0]
    ms = run.mean_square
    assert abs(ms.mean() - exact) < 4 * ms.std(ddof=1) / np.sqrt(ms.size)
