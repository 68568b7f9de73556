"""Algorithms and the batched runner against plain per-client references.

The references below loop over clients one at a time, the way the FOCUS authors' notebook does;
the toolkit must produce the same server iterates to 1e-10 with full participation, and every
batched run must equal its single-seed runs seed by seed.
"""

from __future__ import annotations

import numpy as np
import pytest

from fedtheory.algorithms import (
    Algorithm,
    AlgorithmConfig,
    RoundDraw,
    available,
    gossip,
    info,
    local_steps,
    make_algorithm,
    pull,
    server_optimizer,
)
from fedtheory.algorithms.base import aggregate
from fedtheory.algorithms.fedavg import FedAvgState
from fedtheory.analysis import fit_linear_rate
from fedtheory.errors import AssumptionError, FedTheoryError
from fedtheory.participation import make_participation
from fedtheory.problems import PLProblem, random_least_squares, random_logistic, random_quadratic
from fedtheory.simulation import simulate

N, D, K, R = 5, 4, 3, 12
LR = 0.05


@pytest.fixture(scope="module")
def prob():
    return random_quadratic(N, D, condition=5.0, heterogeneity=2.0, seed=3)


def grad_i(prob, i, x):
    return prob.H[i] @ x - prob.h[i]


# --- plain per-client references (full participation, weights 1/N, server step 1) -----------
def ref_fedavg(prob, rounds, prox_mu=0.0):
    x = np.zeros(D)
    xs = [x]
    for _ in range(rounds):
        new = []
        for i in range(N):
            xi = x.copy()
            for _ in range(K):
                xi = xi - LR * (grad_i(prob, i, xi) + prox_mu * (xi - x))
            new.append(xi)
        x = sum(new) / N
        xs.append(x)
    return np.array(xs)


def ref_scaffold(prob, rounds):
    x, c = np.zeros(D), np.zeros(D)
    ci = [np.zeros(D) for _ in range(N)]
    xs = [x]
    for _ in range(rounds):
        dys, dcs = [], []
        for i in range(N):
            y = x.copy()
            for _ in range(K):
                y = y - LR * (grad_i(prob, i, y) - ci[i] + c)
            cplus = ci[i] - c + (x - y) / (K * LR)
            dys.append(y - x)
            dcs.append(cplus - ci[i])
            ci[i] = cplus
        x = x + sum(dys) / N
        c = c + sum(dcs) / N
        xs.append(x)
    return np.array(xs)


def ref_scaffnew(prob, rounds):
    # Mishchenko et al. 2022, Algorithm 2 with the coin replaced by communication every K steps
    # (p = 1/K): x_hat = x - gamma (g - h); on communication x = mean(x_hat - gamma/p h),
    # h += p/gamma (x - x_hat).
    p = 1.0 / K
    xi = [np.zeros(D) for _ in range(N)]
    h = [np.zeros(D) for _ in range(N)]
    xs = [np.zeros(D)]
    for _ in range(rounds):
        for t in range(K):
            xhat = [xi[i] - LR * (grad_i(prob, i, xi[i]) - h[i]) for i in range(N)]
            if t == K - 1:
                avg = sum(xhat[i] - LR / p * h[i] for i in range(N)) / N
                for i in range(N):
                    h[i] = h[i] + p / LR * (avg - xhat[i])
                xi = [avg.copy() for _ in range(N)]
            else:
                xi = xhat
        xs.append(xi[0])
    return np.array(xs)


def ref_focus(prob, rounds, masks=None):
    x, y = np.zeros(D), np.zeros(D)
    g_prev = [np.zeros(D) for _ in range(N)]
    xs, track = [x], []
    for r in range(rounds):
        S = range(N) if masks is None else np.flatnonzero(masks[r])
        for i in S:
            xi, yi = x.copy(), np.zeros(D)
            for k in range(K):
                if k > 0:
                    xi = xi - LR * yi
                g = grad_i(prob, i, xi)
                yi = yi + g - g_prev[i]
                g_prev[i] = g
            y = y + yi
        x = x - LR * y
        xs.append(x)
        track.append(np.linalg.norm(y - sum(g_prev)))
    return np.array(xs), np.array(track)


def run_traj(prob, name, rounds=R, **kw):
    """Server iterates (R + 1, d) of the toolkit, full participation, one seed."""
    alg = make_algorithm(name, problem=prob, lr=LR, local_steps=K, **kw)
    x = np.zeros((1, D))
    state = alg.init(prob, x)
    mask = np.ones((1, N), dtype=bool)
    draw = RoundDraw(mask=mask, weights=mask / N)
    xs = [state.x[0]]
    for r in range(rounds):
        state = alg.round(state, prob, draw._replace(r=r), None)
        xs.append(state.x[0])
    return np.array(xs)


@pytest.mark.parametrize(
    ("name", "ref", "kw"),
    [
        ("fedavg", ref_fedavg, {}),
        ("fedprox", lambda p, r: ref_fedavg(p, r, prox_mu=0.7), {"prox_mu": 0.7}),
        ("scaffold", ref_scaffold, {}),
        ("fedau", ref_fedavg, {}),  # full participation: every omega_i = 1, weights 1/N
        ("mifa", ref_fedavg, {}),  # full participation: MIFA is FedAvg
        ("scaffnew", ref_scaffnew, {}),
        ("focus", lambda p, r: ref_focus(p, r)[0], {}),
        ("sg-focus", lambda p, r: ref_focus(p, r)[0], {}),  # deterministic problem
    ],
)
def test_full_participation_matches_per_client_reference(prob, name, ref, kw):
    got = run_traj(prob, name, **kw)
    want = ref(prob, R)
    scale = np.abs(want).max()
    assert np.abs(got - want).max() <= 1e-10 * scale
    # deterministic: a second run gives the same bits
    assert np.array_equal(got, run_traj(prob, name, **kw))


def test_fedau_weights_follow_wang_ji_intervals(prob):
    # one client participates every third round, cutoff 10: its omega estimate becomes 3
    masks = np.ones((1, 9, N), dtype=bool)
    masks[0, :, 0] = [r % 3 == 2 for r in range(9)]
    model = make_participation("full", N)
    res = simulate(prob, "fedau", model, rounds=9, draws=masks, lr=LR, local_steps=K)
    assert np.isfinite(res.error).all()
    alg = make_algorithm("fedau", problem=prob, lr=LR, local_steps=K)
    st = alg.init(prob, np.zeros((1, D)))
    for r in range(9):
        m = masks[:, r]
        st = alg.round(st, prob, RoundDraw(m, m / m.sum(), r), None)
    assert st.omega[0, 0] == pytest.approx(3.0)
    assert np.allclose(st.omega[0, 1:], 1.0)


def test_focus_tracking_invariant_every_round_bernoulli(prob):
    """C3: y == sum_i g_prev_i after every round, also against the per-client reference."""
    model = make_participation("bernoulli", N, p=np.array([0.9, 0.5, 0.3, 0.2, 0.1]))
    res = simulate(
        prob, "focus", model, rounds=40, seeds=3, seed=7, lr=LR, local_steps=K, metrics="all"
    )
    gscale = np.linalg.norm(prob.h, axis=1).sum()
    assert np.nanmax(res.tracking_residual) <= 1e-12 * gscale
    masks = model.sample(40, 1, seed=11)[0]
    xs, track = ref_focus(prob, 40, masks)
    got = simulate(prob, "focus", model, rounds=40, draws=masks[None], lr=LR, local_steps=K).error[
        0
    ]
    want = np.linalg.norm(xs - prob.x_star, axis=1) / np.linalg.norm(prob.x_star)
    assert np.allclose(got, want, rtol=1e-9, atol=1e-13)
    assert track.max() <= 1e-12 * gscale


@pytest.mark.parametrize("part", ["bernoulli", "markov"])
def test_focus_exact_linear_convergence_random_participation(prob, part):
    """C1/C6: FOCUS reaches machine precision under Bernoulli and Markov participation."""
    model = make_participation(part, N, 2)
    res = simulate(prob, "focus", model, rounds=400, seeds=4, seed=1, lr=LR, local_steps=K)
    assert not res.diverged.any()
    assert res.error[:, -1].max() < 1e-10
    # FedAvg under the same draws stalls at a floor far above
    fa = simulate(prob, "fedavg", model, rounds=400, seeds=4, seed=1, lr=LR, local_steps=K)
    assert fa.error[:, -1].min() > 1e-6


@pytest.mark.parametrize(
    "name", ["fedavg", "fedprox", "scaffold", "fedau", "mifa", "scaffnew", "focus", "sg-focus"]
)
def test_batched_run_equals_single_seed_runs(name):
    p = random_least_squares(6, 8, 3, noise=0.3, batch_size=2, seed=5)
    model = make_participation("uniform", 6, 2)
    kw = dict(rounds=15, seed=42, lr=0.02, local_steps=2)
    if "prox_mu" in info(name).settings:
        kw["prox_mu"] = 0.1
    # Blocks of one seed have the single-seed run's operation shapes: the same bits on this
    # machine (seed s gets its own draws, whatever the batch).
    blocks = simulate(p, name, model, seeds=3, seed_block=1, **kw)
    # One block of three: BLAS may round a (3, ...) product differently from a (1, ...) one in
    # the last bit (kernels differ by CPU, e.g. OPENBLAS_CORETYPE=Haswell on this test's FOCUS
    # gives 3e-15), so across block shapes the runs agree to 1e-12 relative; a different
    # participation or noise draw would differ at order 1.
    batched = simulate(p, name, model, seeds=3, seed_block=3, **kw)
    for s in range(3):
        single = simulate(p, name, model, seeds=1, seed_ids=[s], **kw)
        assert np.array_equal(blocks.error[s], single.error[0])
        assert np.array_equal(blocks.x_final[s], single.x_final[0])
        np.testing.assert_allclose(batched.error[s], single.error[0], rtol=1e-12, atol=0)
        np.testing.assert_allclose(batched.x_final[s], single.x_final[0], rtol=1e-12, atol=0)
    if name == "sg-focus":  # stochastic gradients really are in play
        det = simulate(p, "focus", model, seeds=3, **kw)
        assert not np.allclose(det.x_final, batched.x_final, rtol=1e-6, atol=0)


def test_divergence_is_flagged_not_raised(prob):
    res = simulate(prob, "fedavg", None, rounds=60, seeds=2, lr=5.0, local_steps=K)
    assert res.diverged.all()
    assert (res.diverged_at > 0).all()
    assert np.isnan(res.error[:, -1]).all()
    assert np.isfinite(res.error[:, 0]).all()


# --- the shared engine and the server optimizers -------------------------------------------
def test_local_steps_mask_prox_correction_and_gossip(prob):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2, N, D))
    mask = rng.random((2, N)) < 0.5
    anchor = rng.standard_normal((2, D))
    corr = rng.standard_normal((2, N, D))
    got = local_steps(prob, X, 2, 0.1, compute=mask, prox_mu=0.3, anchor=anchor, correction=corr)
    want = X.copy()
    for s in range(2):
        for i in range(N):
            if mask[s, i]:
                for _ in range(2):
                    g = grad_i(prob, i, want[s, i]) + 0.3 * (want[s, i] - anchor[s]) + corr[s, i]
                    want[s, i] = want[s, i] - 0.1 * g
    assert np.allclose(got, want, atol=1e-12)
    # gossip with a doubly stochastic W keeps the clients' average; per-step masks are used
    W = np.full((N, N), 1.0 / N)
    steps = np.zeros((2, 3, N), dtype=bool)
    out = local_steps(prob, X, 3, 0.1, compute=steps, mix=gossip(W))
    assert np.allclose(out, X.mean(axis=1, keepdims=True))
    out2 = local_steps(prob, X, 3, 0.1, compute=lambda t: steps[:, t], mix=gossip(W))
    assert np.array_equal(out, out2)
    with pytest.raises(AssumptionError, match="mix must be a callable"):
        local_steps(prob, X, 1, 0.1, mix=W)
    with pytest.raises(AssumptionError, match="anchor"):
        local_steps(prob, X, 1, 0.1, prox_mu=1.0)
    with pytest.raises(AssumptionError, match="K"):
        local_steps(prob, X, 0, 0.1)


@pytest.mark.parametrize("kind", ["sgd", "adam", "yogi", "adagrad", "amsgrad"])
@pytest.mark.parametrize("placement", ["inside", "outside"])
def test_server_optimizer_matches_the_stated_updates(kind, placement):
    rng = np.random.default_rng(1)
    deltas = rng.standard_normal((6, 2, 3))
    opt = server_optimizer(kind, 0.5, beta2=0.9, eps=1e-3, eps_placement=placement)
    st = opt.init(np.zeros((2, 3)))
    m = v = vh = np.zeros((2, 3))
    b1 = 0.0 if kind == "sgd" else 0.9
    for dlt in deltas:
        step, st = opt.update(dlt, st)
        m = b1 * m + (1 - b1) * dlt
        if kind == "sgd":
            want = 0.5 * m
        else:
            if kind in ("adam", "amsgrad"):
                v = 0.9 * v + 0.1 * dlt**2
            elif kind == "yogi":
                v = v - 0.1 * dlt**2 * np.sign(v - dlt**2)
            else:
                v = v + dlt**2
            vh = np.maximum(vh, v) if kind == "amsgrad" else v
            den = np.sqrt(vh + 1e-3) if placement == "inside" else np.sqrt(vh) + 1e-3
            want = 0.5 * m / den
        assert np.allclose(step, want, rtol=1e-13, atol=1e-15)


def test_server_optimizer_defaults_and_errors():
    assert server_optimizer("amsgrad").eps_placement == "inside"
    assert server_optimizer("adam").eps_placement == "outside"
    assert server_optimizer("adam").beta1 == 0.9 and server_optimizer("adam").beta2 == 0.99
    with pytest.raises(AssumptionError, match="unknown server optimizer"):
        server_optimizer("rmsprop")
    with pytest.raises(AssumptionError, match="beta1"):
        server_optimizer("adam", beta1=1.0)


def test_registry_and_config_validation(prob):
    names = available()
    for n in ("fedavg", "scaffold", "focus", "sg-focus", "fedau", "mifa", "fedprox", "scaffnew"):
        assert n in names
    with pytest.raises(FedTheoryError, match="unknown algorithm"):
        make_algorithm("nope")
    with pytest.raises(AssumptionError, match="step size"):
        AlgorithmConfig(lr=0.0)
    with pytest.raises(AssumptionError, match="local steps"):
        make_algorithm("fedavg", problem=prob, local_steps=0)
    alg = make_algorithm("fedau", problem=prob, cutoff=4)
    assert alg.config.option("cutoff") == 4 and alg.config.n_clients == N


def test_step_masks_reach_algorithms_that_ask_for_them(prob):
    """Per-step re-sampling (AFGA's S_{r,t}): the runner draws (S, K, N) masks per round from the
    participation model, reproducibly per seed."""

    seen = []
    cfg = AlgorithmConfig(lr=LR, local_steps=K)
    base = make_algorithm("fedavg", cfg, problem=prob)

    def round_(state, problem, draw, rng=None):
        seen.append(np.array(draw.step_masks))
        X0 = pull(state.X, state.x, np.ones_like(draw.mask))
        XK = local_steps(problem, X0, K, LR, compute=draw.step_masks, rng=rng)
        x = state.x + aggregate(XK - state.x[:, None, :], draw.weights)
        return FedAvgState(x=x, X=XK, opt=state.opt)

    def init(problem, x0):  # this round reads the clients' models X
        return base.init(problem, x0, client_models=True)

    alg = Algorithm("resampled", init, round_, cfg, needs_step_masks=True)
    model = make_participation("uniform", N, 2)
    res = simulate(prob, alg, model, rounds=6, seeds=3, seed=9, seed_block=3)
    assert len(seen) == 6 and seen[0].shape == (3, K, N)
    assert all((s.sum(axis=-1) == 2).all() for s in seen)
    assert not np.array_equal(seen[0][:, 0], seen[0][:, 1])  # re-sampled at every step
    batched = [m.copy() for m in seen]
    seen.clear()
    one = simulate(prob, alg, model, rounds=6, seeds=1, seed=9, seed_ids=[2])
    # Seed 2 draws the same step masks alone as in the batch: exactly (they are booleans).
    assert len(seen) == 6 and all(
        np.array_equal(a[0], b[2]) for a, b in zip(seen, batched, strict=True)
    )
    # Its iterates agree to 1e-12 relative: (1, ...) and (3, ...) BLAS products may round
    # differently in the last bit on another CPU (OPENBLAS_CORETYPE=Haswell does here).
    np.testing.assert_allclose(one.x_final[0], res.x_final[2], rtol=1e-12, atol=0)


def test_sg_focus_floor_grows_with_noise_and_step_size():
    """C5 (003 Theorems 3-5): SG-FOCUS reaches a floor that grows with sigma and eta."""
    floors = {}
    for sigma in (0.05, 0.4):
        p = random_quadratic(N, D, condition=3.0, heterogeneity=2.0, noise=sigma, seed=3)
        for lr in (0.02, 0.08):
            res = simulate(p, "sg-focus", None, rounds=300, seeds=6, seed=1, lr=lr, local_steps=K)
            floors[sigma, lr] = np.mean(res.error[:, -100:])
    assert floors[0.4, 0.02] > 2 * floors[0.05, 0.02]
    assert floors[0.4, 0.08] > 1.3 * floors[0.4, 0.02]


def test_focus_on_pl_and_nonconvex_problems():
    """C4: linear rate on the PL problem under partial participation; ||grad f||^2 -> 0 on a
    smooth non-convex problem."""

    pl = PLProblem(6, 4, heterogeneity=1.0, seed=0)
    model = make_participation("uniform", 6, 3)
    res = simulate(pl, "focus", model, rounds=400, seeds=2, seed=0, lr=0.02, local_steps=2)
    assert res.error[:, -1].max() < 1e-10
    fit = fit_linear_rate(res.error[0], start=50)
    assert fit.rho < 0.99 and fit.r2 > 0.95
    nc = random_logistic(6, 20, 3, lam=0.0, ncvx=0.2, seed=0)
    res = simulate(nc, "focus", model, rounds=300, seeds=2, seed=0, lr=0.5 / nc.L, local_steps=2)
    g = np.minimum.accumulate(res.grad_norm2, axis=1)
    assert (g[:, -1] < 1e-3 * g[:, 0]).all()
