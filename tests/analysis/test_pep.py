"""Performance estimation of federated rounds (fedtheory.analysis.pep) against truths.

Closed forms (one gradient step; FedAvg with K = 1 under full participation is gradient
descent on the mean; exact methods have no floor), the exact oracle over quadratics (the
general worst case is never below a quadratic instance of the same class; FOCUS's factor
estimate against the worst quadratic rate), the tracer against the round run on a quadratic,
and the refusals by their message. Every program here solves in well under a second.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fedtheory.analysis.pep.worst as worst_module
from fedtheory.algorithms.base import Algorithm, RoundDraw
from fedtheory.analysis.exact import exact_mse_curve, exact_rates
from fedtheory.analysis.pep import (
    NotTraceableError,
    PepSizeError,
    lyapunov_contraction,
    participation_paths,
    rate_estimate,
    trace,
    worst_after_rounds,
    worst_floor,
)
from fedtheory.analysis.pep.trace import G_STAR, GRAD, X0, X_STAR
from fedtheory.analysis.pep.worst import built
from fedtheory.errors import AssumptionError
from fedtheory.participation import make_participation
from fedtheory.problems import QuadraticProblem

pytest.importorskip("PEPit", reason="the optional extra 'pep' is not installed")

MU, L = 1.0, 10.0
#: The algorithms that trace (docs/bounds.md), with a setting of each that its registry accepts.
ALGORITHMS = {
    "fedavg": {},
    "fedprox": {"prox_mu": 0.5},
    "scaffold": {},
    "focus": {},
    "scaffnew": {},
    "mifa": {},
    "feddyn": {"prox_mu": 0.1},
}


def _gd(eta: float, mu: float = MU, L: float = L) -> float:
    """The worst contraction of ||x - x*||^2 by one gradient step on F_{mu,L}."""
    return max(abs(1 - eta * mu), abs(1 - eta * L)) ** 2


@settings(max_examples=8, deadline=None)
@given(eta=st.floats(0.01, 0.19))
def test_one_gradient_step_is_the_closed_form(eta):
    w = worst_after_rounds("fedavg", 1, 1, mu=MU, L=L, lr=eta, local_steps=1)
    assert w.value == pytest.approx(_gd(eta), rel=1e-6)
    assert w.solver["name"] == "CLARABEL" and w.sizes.gram <= 3


@pytest.mark.parametrize("zeta2", [None, 1.0])
def test_fedavg_with_one_local_step_is_gradient_descent_on_the_mean(zeta2):
    # K = 1, full participation: x <- x - eta grad f(x), f in F_{mu,L}: (max |1 - eta l|)^(2R)
    eta, R = 0.15, 2
    w = worst_after_rounds("fedavg", 3, R, mu=MU, L=L, zeta2=zeta2, lr=eta, local_steps=1)
    assert w.value == pytest.approx(_gd(eta) ** R, rel=1e-6)
    # on quadratics the same closed form bounds every instance and is attained
    H = np.stack([np.diag([MU, L]), np.diag([MU, 4.0]), np.diag([MU, 7.0])])
    prob = QuadraticProblem(H, np.einsum("nij,j->ni", H, [1.0, 0.0]))
    curve = exact_mse_curve(
        prob, "fedavg", make_participation("full", 3), rounds=R, lr=eta, local_steps=1
    )
    assert curve[R] / curve[0] == pytest.approx(_gd(eta) ** R, rel=1e-12)


def _class_quadratic(rng: np.random.Generator, N: int, d: int, zeta2: float) -> QuadraticProblem:
    """A quadratic of the class: eigenvalues in [mu, L], (1/N) sum ||g_i*||^2 = zeta2 and
    ||x*||^2 = 1 (x0 = 0)."""
    Q = np.linalg.qr(rng.standard_normal((N, d, d)))[0]
    lam = rng.uniform(MU, L, (N, d))
    lam[:, 0] = rng.choice([MU, L], N)
    H = np.einsum("nij,nj,nkj->nik", Q, lam, Q)
    xs = rng.standard_normal((N, d))
    x_star = np.linalg.solve(H.sum(0), np.einsum("nij,nj->i", H, xs))
    g = np.einsum("nij,nj->ni", H, x_star - xs)
    z2 = np.mean(np.sum(g * g, axis=1))
    xs = x_star + np.sqrt(zeta2 / z2) * (xs - x_star)
    xs += x_star / np.linalg.norm(x_star) - x_star
    return QuadraticProblem(H, np.einsum("nij,nj->ni", H, xs))


@settings(max_examples=6, deadline=None)
@given(
    algorithm=st.sampled_from(["fedavg", "focus", "scaffold"]),
    K=st.integers(1, 2),
    eta=st.floats(0.02, 0.12),
    zeta2=st.floats(0.1, 10.0),
    seed=st.integers(0, 2**16),
)
def test_the_general_worst_case_is_never_below_a_quadratic_of_the_class(
    algorithm, K, eta, zeta2, seed
):
    N, R = 2, 2
    w = worst_after_rounds(algorithm, N, R, mu=MU, L=L, D2=1.0, zeta2=zeta2, lr=eta, local_steps=K)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        prob = _class_quadratic(rng, N, 2, zeta2)
        exact = exact_mse_curve(
            prob, algorithm, make_participation("full", N), rounds=R, lr=eta, local_steps=K
        )[R]
        assert w.value >= exact * (1 - 1e-6)


def _leaf_values(tr, prob, x0):
    """Values of the leaves of a trace on a quadratic: x0, x*, g_i*, then each query's gradient
    at its point (queries only read earlier leaves, so in order)."""
    V = np.zeros((tr.n_vec, prob.dim))
    g_star = np.einsum("nij,j->ni", prob.H, prob.x_star) - prob.h
    gs = tr.leaf(G_STAR)
    V[tr.leaf(X0)] = x0
    V[tr.leaf(X_STAR)] = prob.x_star
    V[gs] = g_star[: len(gs)]
    for q in range(len(tr.client)):
        k = int(np.argmax(tr.grad[q]))
        assert tr.kinds[k] == GRAD
        i = tr.client[q]
        V[k] = prob.H[i] @ (tr.point[q] @ V) - prob.h[i]
    return V


@pytest.mark.parametrize("name", list(ALGORITHMS))
@pytest.mark.parametrize("model", [("full", None), ("uniform", 2)])
def test_the_traced_round_is_the_round_on_a_quadratic(name, model):
    # the coefficients given the leaves' values are the iterates of the algorithm's own round
    N, R, K = 3, 2, 2
    part = make_participation(model[0], N, model[1])
    paths = participation_paths(part, "mean", R)
    alg = built(name, N, lr=0.07, local_steps=K, **ALGORITHMS[name])
    tr = trace(alg, N, paths)
    H = np.stack([np.diag(v) for v in ([1.0, 3.0], [2.0, 9.0], [5.0, 1.5])])
    H[1, 0, 1] = H[1, 1, 0] = 0.7
    prob = QuadraticProblem(H, np.array([[1.0, -2.0], [0.5, 0.3], [-1.0, 2.0]]))
    x0 = np.array([0.4, -1.3])
    V = _leaf_values(tr, prob, x0)
    for p in range(paths.n_paths):
        state = alg.init(prob, x0[None, :])
        for r in range(R):
            draw = RoundDraw(
                mask=paths.masks[r, p : p + 1], weights=paths.weights[r, p : p + 1], r=r
            )
            state = alg.round(state, prob, draw, None)
        assert tr.outputs["x"][p] @ V == pytest.approx(state.x[0], rel=1e-12, abs=1e-12)


def test_a_round_that_is_not_linear_in_its_vectors_is_refused():
    base = built("fedavg", 2, lr=0.1, local_steps=1)

    def normalized(state, problem, draw, rng=None):  # x <- x - lr g / ||g||: homogeneous, 0
        g = problem.grads(state.X, None).mean(axis=1)
        return state._replace(x=state.x - 0.1 * g / np.linalg.norm(g, axis=-1, keepdims=True))

    def init(problem, x0):  # the fake round reads the clients' models X
        return base.init(problem, x0, client_models=True)

    fake = Algorithm("fedavg", init, normalized, base.config)
    paths = participation_paths(make_participation("full", 2), "mean", 1)
    with pytest.raises(NotTraceableError, match="not linear in its vectors"):
        trace(fake, 2, paths)
    with pytest.raises(NotTraceableError, match=r"fedadam.*divides the aggregated update by sqrt"):
        worst_after_rounds("fedadam", 2, 1, mu=MU, L=L, lr=0.1, local_steps=1)


@pytest.mark.parametrize("name,K", [("fedavg", 2), ("focus", 2)])
def test_unbounded_without_a_heterogeneity_bound(name, K):
    w = worst_after_rounds(name, 2, 2, mu=MU, L=L, lr=0.05, local_steps=K)
    assert w.unbounded and w.value is None
    assert "zeta2" in w.lacks
    assert w.solver["status"] in ("unbounded", "unbounded_inaccurate")
    with pytest.raises(AssumptionError, match="unbounded worst case has no worst instance"):
        w.instance()
    # K = 1 needs no heterogeneity bound: gradient descent on the mean
    assert not worst_after_rounds(name, 2, 2, mu=MU, L=L, lr=0.05, local_steps=1).unbounded


def test_the_floor_by_a_linear_fixed_point():
    kw = dict(mu=MU, L=L, lr=0.05, local_steps=2)
    w = worst_floor("fedavg", 2, zeta2=1.0, **kw)
    # the independent prototype of the feasibility study (PEPit 0.5.1, Clarabel): 0.0025785
    assert w.value == pytest.approx(0.0025785, rel=2e-5)
    # homogeneous of degree 1 in zeta2; exact methods and K = 1 have no floor
    assert worst_floor("fedavg", 2, zeta2=4.0, **kw).value == pytest.approx(4 * w.value, rel=1e-5)
    for name, K in (("focus", 2), ("scaffold", 2), ("fedavg", 1)):
        v = worst_floor(name, 2, zeta2=1.0, mu=MU, L=L, lr=0.05, local_steps=K).value
        assert abs(v) < 1e-4 * w.value  # zero to the solver's accuracy
    # above every quadratic of the class: the exact oracle's floor on class instances
    rng = np.random.default_rng(3)
    for _ in range(4):
        prob = _class_quadratic(rng, 2, 2, 1.0)
        r = exact_rates(prob, "fedavg", make_participation("full", 2), lr=0.05, local_steps=2)
        assert r.stationary_mse <= w.value * (1 + 1e-6)
    # the worst instance reproduces the floor: data of the class, x0 its fixed point
    inst = w.instance()
    assert np.allclose(inst["x0"], 0.0)
    assert float(inst["x_star"] @ inst["x_star"]) == pytest.approx(w.value, rel=1e-6)


def test_the_floor_of_a_sampled_round_is_refused_with_what_to_use():
    with pytest.raises(AssumptionError, match=r"stationary distribution.*mse_after_rounds"):
        worst_floor(
            "fedavg",
            3,
            mu=MU,
            L=L,
            zeta2=1.0,
            participation=make_participation("uniform", 3, 2),
            lr=0.05,
            local_steps=2,
        )


def test_the_factor_estimate_of_focus_is_the_worst_quadratic_rate():
    # full participation, a common minimizer: W(5)/W(4) against the exact oracle's mean-square
    # rate maximized over a grid of one-dimensional quadratic clients (H_i in {mu, 4, L})
    eta, K = 0.05, 2
    est = rate_estimate("focus", 2, 5, mu=MU, L=L, zeta2=0.0, lr=eta, local_steps=K)
    worst = 0.0
    for h1 in (MU, 4.0, L):
        for h2 in (MU, 4.0, L):
            prob = QuadraticProblem(np.array([[[h1]], [[h2]]]), np.array([[h1], [h2]]))
            r = exact_rates(
                prob,
                "focus",
                make_participation("full", 2),
                lr=eta,
                local_steps=K,
                stationary=False,
            )
            worst = max(worst, r.mean_square_rate)
    assert est["value"] == pytest.approx(worst, rel=1e-5)
    assert "estimate" in est["method"]


@pytest.mark.parametrize("model", [("uniform", 1, {}), ("bernoulli", None, {"p": [0.5, 0.7]})])
def test_one_round_expectations_enumerate_the_subsets(model):
    # with a common minimizer every subset's round is a gradient step on the mean of its
    # members; the worst expectation is attained with every client the worst quadratic
    name, M, kw = model
    part = make_participation(name, 2, M, **kw)
    eta = 0.15
    w = worst_after_rounds(
        "fedavg", 2, 1, mu=MU, L=L, zeta2=0.0, participation=part, lr=eta, local_steps=1
    )
    draws, probs, _ = part.support()
    empty = float(probs[~np.asarray(draws).any(axis=1)].sum())
    assert w.value == pytest.approx(empty + (1 - empty) * _gd(eta), rel=1e-6)
    assert w.setting["paths"] == int((np.asarray(probs) > 0).sum())


def test_other_quantities_after_rounds():
    # K = 1 full participation, one round: between the quadratics of the class (one step on
    # lambda/2 ||x||^2, lambda in [mu, L]: lambda/2 (1 - eta lambda)^2 D2 and lambda^2 (1 - eta
    # lambda)^2 D2) and smoothness (L/2 ||x1 - x*||^2 and L^2 ||x1 - x*||^2 <= .. c D2)
    eta = 0.15
    kw = dict(mu=MU, L=L, lr=eta, local_steps=1, zeta2=0.0)
    f = worst_after_rounds("fedavg", 2, 1, metric="f_minus_f_star", **kw).value
    g = worst_after_rounds("fedavg", 2, 1, metric="grad_norm2", **kw).value
    lam = np.linspace(MU, L, 1001)
    assert f >= np.max(lam / 2 * (1 - eta * lam) ** 2) * (1 - 1e-6)
    assert g >= np.max(lam**2 * (1 - eta * lam) ** 2) * (1 - 1e-6)
    assert f <= L / 2 * _gd(eta) * (1 + 1e-6) and g <= L**2 * _gd(eta) * (1 + 1e-6)


def test_lyapunov_contraction():
    # FedAvg, K = 1: V = ||x - x*||^2 contracts like one gradient step
    eta = 0.15
    w = lyapunov_contraction("fedavg", 2, mu=MU, L=L, zeta2=0.0, lr=eta, local_steps=1)
    assert w.value == pytest.approx(_gd(eta), rel=1e-6)
    # FOCUS weighs its stored gradients; the one-round ratio is at least the contraction of x
    v = lyapunov_contraction("focus", 2, mu=MU, L=L, weight_clients=0.01, lr=0.05, local_steps=2)
    assert v.value > 0 and not v.unbounded
    with pytest.raises(AssumptionError, match="2 server and 1 client vectors"):
        lyapunov_contraction("scaffold", 2, mu=MU, L=L, lr=0.05, local_steps=2)


def test_sizes_are_refused_before_work_naming_them():
    with pytest.raises(PepSizeError, match=r"Gram matrix of \d+ and \d+ constraints.*reduce") as g:
        worst_after_rounds(
            "fedavg", 2, 3, mu=MU, L=L, zeta2=1.0, lr=0.05, local_steps=3, max_gram=10
        )
    # the refusal carries its sizes (what a caller summarizes over many settings)
    assert g.value.gram > 10 and g.value.constraints > 0 and not g.value.estimated
    assert g.value.paths is None
    part = make_participation("uniform", 6, 3)
    with pytest.raises(PepSizeError, match=r"20\^3 = 8000 paths") as p:
        worst_after_rounds(
            "fedavg", 6, 3, mu=MU, L=L, zeta2=1.0, participation=part, lr=0.05, local_steps=1
        )
    assert (p.value.paths, p.value.draws, p.value.rounds) == (8000, 20, 3)
    assert p.value.gram is None


def test_the_class_is_checked():
    with pytest.raises(AssumptionError, match="mu < L"):
        worst_after_rounds("fedavg", 2, 1, mu=L, L=L, lr=0.05, local_steps=1)
    with pytest.raises(AssumptionError, match="metric"):
        worst_after_rounds("fedavg", 2, 1, mu=MU, L=L, metric="loss", lr=0.05, local_steps=1)


def test_a_missing_extra_is_one_line_naming_it():
    code = (
        "import sys; sys.modules['cvxpy'] = None\n"
        "from fedtheory.analysis.pep import worst_after_rounds\n"
        "from fedtheory.errors import MissingExtraError\n"
        "try:\n"
        "    worst_after_rounds('fedavg', 1, 1, mu=1.0, L=10.0, lr=0.1, local_steps=1)\n"
        "except MissingExtraError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "optional extra 'pep'" in out.stdout and "pip install 'fedtheory[pep]'" in out.stdout
    assert len(out.stdout.strip().splitlines()) == 1


def test_the_solver_record():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w = worst_after_rounds(
            "fedavg", 2, 1, mu=MU, L=L, zeta2=1.0, lr=0.05, local_steps=2, cross_check=True
        )
    s = w.solver
    assert s["name"] == "CLARABEL" and s["status"] == "optimal"
    assert s["cross_check"]["name"] == "SCS"
    assert s["cross_check"]["value"] == pytest.approx(s["value"], rel=1e-5)


@pytest.mark.parametrize("rounds", [65, 100])
def test_many_rounds_are_refused_by_their_size(rounds):
    # every round a path prefix: a horizon past numpy's 64 axes is a size, refused as one
    with pytest.raises(PepSizeError, match=r"about \d+ and about \d+ constraints"):
        worst_after_rounds("fedavg", 2, rounds, mu=MU, L=L, lr=0.05, local_steps=1)
    paths = participation_paths(make_participation("full", 2), "mean", rounds)
    assert paths.n_paths == 1 and paths.masks.shape == (rounds, 1, 2)


def test_a_large_floor_is_refused_before_it_is_traced(monkeypatch):
    def traced(*args, **kw):
        raise AssertionError("traced before the size check")

    monkeypatch.setattr(worst_module, "_one_round_from_state", traced)
    with pytest.raises(PepSizeError, match=r"Gram matrix of about \d+"):
        worst_floor("fedavg", 200, mu=MU, L=L, zeta2=1.0, lr=0.05, local_steps=2)


def test_lyapunov_weights_of_the_wrong_length_are_named():
    with pytest.raises(AssumptionError, match=r"one weight per client.*3 for 2 clients"):
        lyapunov_contraction(
            "focus", 2, mu=MU, L=L, weight_clients=[1.0, 2.0, 3.0], lr=0.05, local_steps=2
        )


def test_the_lyapunov_ratio_is_not_capped_by_zeta2():
    # the ratio is invariant under f_i -> t^2 f_i(x / t) (every vector scales by t, the
    # heterogeneity by t^2): any instance scales into zeta2 > 0, so the worst ratio is that
    # of the class without the bound. FedAvg K = 2 from x = x*: V(z0) = 0 < V(z1), no ratio.
    w = lyapunov_contraction("fedavg", 2, mu=MU, L=L, zeta2=1.0, lr=0.05, local_steps=2)
    assert w.unbounded and w.value is None and "zeta2 = 0" in w.lacks
    kw = dict(mu=MU, L=L, weight_clients=0.01, lr=0.05, local_steps=2)
    free = lyapunov_contraction("focus", 2, **kw).value
    for zeta2 in (0.01, 100.0):
        assert lyapunov_contraction("focus", 2, zeta2=zeta2, **kw).value == pytest.approx(
            free, rel=1e-6
        )


def test_a_round_that_does_not_commute_with_translations_is_refused():
    # x* is pinned at the origin, which is no loss only when shifting x0, x* and every f_i by a
    # shifts the run by a; with x <- x / 2 after the round a far minimizer is arbitrarily far
    base = built("fedavg", 2, lr=0.05, local_steps=1)

    def damped(state, problem, draw, rng=None):
        out = base.round(state, problem, draw, rng)
        return out._replace(x=0.5 * out.x)

    fake = Algorithm("fedavg", base.init, damped, base.config)
    paths = participation_paths(make_participation("full", 2), "mean", 1)
    for start in ("init", "state"):
        with pytest.raises(NotTraceableError, match=r"translation.*moves .* by 0\.5"):
            trace(fake, 2, paths, start=start)
    for name, kw in ALGORITHMS.items():  # the built-in rounds commute with translations
        alg = built(name, 2, lr=0.05, local_steps=2, **kw)
        trace(alg, 2, paths, start="state")
