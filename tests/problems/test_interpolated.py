"""Counterexample files over smooth strongly convex clients: the interpolation inequalities,
the smallest interpolant, the file and its replay (fedtheory.problems.interpolated)."""

from __future__ import annotations

import json
import shlex
import sys

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq

from fedtheory.cli import main
from fedtheory.errors import (
    AssumptionError,
    FedTheoryError,
    MissingExtraError,
    NotInterpolableError,
    UnknownOptionError,
)
from fedtheory.extras import missing
from fedtheory.problems import (
    InterpolatedProblem,
    QuadraticProblem,
    check_interpolation,
    load_interpolated,
    lowest_interpolant,
    make_problem,
    read_interpolation,
    write_interpolation_file,
)
from fedtheory.problems.interpolated import _lowest_conic, _pair_margins, interpolation_data
from fedtheory.simulation import simulate

MU, L = 1.0, 10.0


def _quadratic_data(rng, P, d, lo, hi, *, center=None):
    """P points of f(x) = 1/2 (x - z)^T H (x - z) + e, eigenvalues of H in [lo, hi]."""
    Q = np.linalg.qr(rng.standard_normal((d, d)))[0]
    H = Q @ np.diag(rng.uniform(lo, hi, d)) @ Q.T
    z = rng.standard_normal(d) if center is None else center
    e = rng.standard_normal()
    f = lambda x: 0.5 * (x - z) @ H @ (x - z) + e  # noqa: E731
    f.grad = lambda x: (x - z) @ H
    X = 2 * rng.standard_normal((P, d))
    return X, f.grad(X), np.array([f(x) for x in X]), f


def _scale(F, G):
    return max(np.abs(F).max(), (G**2).sum(-1).max() / L)


# -- the interpolation inequalities -------------------------------------------------------------
def test_margin_of_a_one_dimensional_quadratic_is_its_closed_form():
    """f = lam/2 x^2 gives the margin dx^2 (lam - mu)(L - lam) / (2 (L - mu)) for every pair
    (worked out from Taylor, Hendrickx and Glineur 2017, Thm 4): >= 0 iff mu <= lam <= L."""
    x = np.array([-1.5, 0.25, 2.0])
    for lam in (0.5, 1.0, 3.0, 10.0, 12.0):
        m = check_interpolation(
            x[None, :, None], lam * x[None, :, None], lam / 2 * x[None] ** 2, [3], MU, L
        )
        k = (lam - MU) * (L - lam) / (2 * (L - MU))
        dx2 = [(a - b) ** 2 for a in x for b in x if a != b]
        want = k * (min(dx2) if k >= 0 else max(dx2))  # the smallest over the pairs
        assert m[0] == pytest.approx(want, rel=1e-12, abs=1e-14)
        assert (m[0] >= 0) == (MU <= lam <= L)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 4), P=st.integers(2, 8))
def test_margins_of_quadratic_data(seed, d, P):
    """Data of a quadratic of the class have margins >= 0 (rounding aside), and > 0 when its
    eigenvalues lie in the tightened class [mu(1 + tau), L(1 - tau)]."""
    rng = np.random.default_rng(seed)
    X, G, F, _ = _quadratic_data(rng, P, d, MU, L)
    m = check_interpolation(X[None], G[None], F[None], [P], MU, L)
    assert m[0] >= -1e-12 * _scale(F, G)
    tau = 1e-2
    X, G, F, _ = _quadratic_data(rng, P, d, MU * (1 + tau), L * (1 - tau))
    assert check_interpolation(X[None], G[None], F[None], [P], MU, L)[0] > 0


def test_margins_are_per_client_and_ignore_padding():
    rng = np.random.default_rng(3)
    X1, G1, F1, _ = _quadratic_data(rng, 4, 2, 2.0, 8.0)
    X2, G2, F2, _ = _quadratic_data(rng, 2, 2, 2.0, 8.0)
    pad = lambda a: np.concatenate([a, np.full((2,) + a.shape[1:], 1e6)])  # noqa: E731
    both = check_interpolation(
        np.stack([X1, pad(X2)]), np.stack([G1, pad(G2)]), np.stack([F1, pad(F2)]), [4, 2], MU, L
    )
    assert both[0] == check_interpolation(X1[None], G1[None], F1[None], [4], MU, L)[0]
    assert both[1] == check_interpolation(X2[None], G2[None], F2[None], [2], MU, L)[0]


# -- the smallest interpolant -------------------------------------------------------------------
def test_interpolant_of_a_mu_quadratic_is_the_function():
    """Data of f = mu/2 ||x - a||^2 + b: the lower quadratic bound of any one row is f itself,
    so the smallest interpolant is f everywhere (value and gradient)."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(3), 0.7
    X = rng.standard_normal((5, 3))
    for mu in (MU, 0.25):
        G, F = mu * (X - a), mu / 2 * ((X - a) ** 2).sum(1) + b
        for x in rng.standard_normal((6, 3)) * 3:
            v, g = lowest_interpolant(X, G, F, x, mu=mu, L=L)
            assert v == pytest.approx(mu / 2 * ((x - a) ** 2).sum() + b, rel=1e-12)
            np.testing.assert_allclose(g, mu * (x - a), rtol=1e-12, atol=1e-12)


def test_interpolant_of_one_row_is_its_lower_bound():
    x1, g1, f1 = np.array([1.0, -2.0]), np.array([0.5, 3.0]), 4.0
    x = np.array([0.3, 0.9])
    for mu in (0.0, MU):
        v, g = lowest_interpolant(x1[None], g1[None], [f1], x, mu=mu, L=L)
        assert v == pytest.approx(f1 + g1 @ (x - x1) + mu / 2 * ((x - x1) ** 2).sum(), rel=1e-14)
        np.testing.assert_allclose(g, g1 + mu * (x - x1), rtol=1e-14)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    d=st.integers(1, 5),
    P=st.integers(1, 12),
    mu=st.sampled_from([0.0, MU]),
    near=st.booleans(),
)
def test_interpolant_is_consistent_and_below_the_function(seed, d, P, mu, near):
    """At a new point x the returned (x, g, W(x)) keeps every interpolation inequality with the
    data (to 1e-12 of the data's scale); W is the smallest interpolant, so it lies below the
    function the data came from and above every row's lower quadratic bound; at the rows
    themselves it returns the stored values and gradients."""
    rng = np.random.default_rng(seed)
    X, G, F, f = _quadratic_data(rng, P, d, mu + 0.1, L - 0.1)
    if near and P > 2:  # a near-duplicate row: an ill-conditioned program
        X[1] = X[0] + 1e-5 * rng.standard_normal(d)
        G, F = f.grad(X), np.array([f(x) for x in X])
    assume(check_interpolation(X[None], G[None], F[None], [P], mu, L)[0] > 0)
    x = 3 * rng.standard_normal(d)
    v, g = lowest_interpolant(X, G, F, x, mu=mu, L=L)
    Xa, Ga, Fa = np.vstack([X, x]), np.vstack([G, g]), np.append(F, v)
    M = _pair_margins(Xa[None], Ga[None], Fa[None], np.array([P + 1]), mu, L)[0]
    scale = _scale(Fa, Ga)
    assert min(M[P, :P].min(), M[:P, P].min()) >= -1e-12 * scale
    assert v <= f(x) + 1e-12 * scale
    lower = F + ((x - X) * G).sum(1) + mu / 2 * ((x - X) ** 2).sum(1)
    assert v >= lower.max() - 1e-12 * scale
    for j in range(P):
        vj, gj = lowest_interpolant(X, G, F, X[j], mu=mu, L=L)
        assert vj == pytest.approx(F[j], rel=1e-12, abs=1e-12 * scale)
        np.testing.assert_allclose(gj, G[j], rtol=1e-12, atol=1e-12 * np.sqrt(scale * L))


@pytest.mark.skipif(bool(missing("pep")), reason="needs the optional extra pep")
def test_active_set_against_the_literal_program_solved_by_clarabel():
    """Taylor 2017, Thm 3.14 as written (min f over (g, f) with every interpolation inequality
    in both orders), solved by Clarabel: the active set's value is feasible and no larger, and
    both agree to the conic solver's accuracy."""
    rng = np.random.default_rng(5)
    for trial in range(4):
        mu = (0.0, MU)[trial % 2]
        X, G, F, _ = _quadratic_data(rng, 6, 3, mu + 0.5, L - 0.5)
        x = 2 * rng.standard_normal(3)
        v, g = lowest_interpolant(X, G, F, x, mu=mu, L=L)
        vc, gc = _lowest_conic(X, G, F, x, mu, L)
        scale = _scale(F, G)
        assert v <= vc + 1e-7 * scale
        assert v == pytest.approx(vc, rel=1e-6, abs=1e-6 * scale)
        np.testing.assert_allclose(g, gc, atol=3e-3 * np.sqrt(scale * L))


# -- the replay -------------------------------------------------------------------------------
class Huber1D:
    """N one-dimensional clients f_i(x) = a/2 x^2 + (b - a) huber(x - c_i), huber(t) = t^2/2
    for |t| <= delta, else delta |t| - delta^2/2: f_i'' is a or b, so f_i is in F_{a,b}."""

    stochastic = False

    def __init__(self, c, a=1.5, b=8.0, delta=0.4):
        self.c = np.asarray(c, dtype=np.float64)
        self.a, self.b, self.delta = a, b, delta
        self.n_clients, self.dim = self.c.size, 1
        self.L, self.mu = b, a
        mean_grad = lambda x: float(self.grads(np.full((1, self.n_clients, 1), x)).mean())  # noqa: E731
        self.x_star = np.array([brentq(mean_grad, -10, 10, xtol=1e-15, rtol=1e-15)])
        self.f_star = float(self.client_losses(np.full((self.n_clients, 1), self.x_star[0])).mean())

    def grads(self, X, rng=None):
        t = X - self.c[:, None]
        return self.a * X + (self.b - self.a) * np.clip(t, -self.delta, self.delta)

    def client_losses(self, X):
        t = np.abs(X[..., 0] - self.c)
        d = self.delta
        hub = np.where(t <= d, t**2 / 2, d * t - d**2 / 2)
        return self.a / 2 * X[..., 0] ** 2 + (self.b - self.a) * hub

    def loss(self, x):
        return self.client_losses(np.repeat(x[..., None, :], self.n_clients, axis=-2)).mean(-1)

    def full_grad(self, x):
        return self.grads(np.repeat(x[..., None, :], self.n_clients, axis=-2)).mean(-2)


class Recorder:
    """A problem that remembers every client's query points (what a PEP worst case records)."""

    def __init__(self, problem):
        self.p = problem
        self.seen = [[] for _ in range(problem.n_clients)]

    def __getattr__(self, name):
        if name in ("local_steps_map", "tilt_map", "grads_of", "grads_at"):  # step by grads
            raise AttributeError(name)
        return getattr(self.p, name)

    def grads(self, X, rng=None):
        for row in np.asarray(X).reshape(-1, *X.shape[-2:]):
            for i, x in enumerate(row):
                self.seen[i].append(np.array(x))
        return self.p.grads(X, rng)


def _record(problem, client_values, x0, **run):
    """Run ``run`` on ``problem`` and return its result and the interpolation data of its queries
    (each client's distinct query points, then x*)."""
    rec = Recorder(problem)
    res = simulate(rec, "fedavg", x0=x0, seeds=1, **run)
    N, d = problem.n_clients, problem.dim
    pts = [np.unique(np.array(s + [problem.x_star]), axis=0) for s in rec.seen]
    P = max(len(p) for p in pts)
    points = np.zeros((N, P, d))
    for i, p in enumerate(pts):
        points[i, : len(p)] = p
    grads = problem.grads(points.transpose(1, 0, 2)).transpose(1, 0, 2)
    values = client_values(points.transpose(1, 0, 2)).T
    counts = np.array([len(p) for p in pts])
    return res, dict(
        points=points,
        grads=grads,
        values=values,
        counts=counts,
        mu=MU,
        L=L,
        x0=np.asarray(x0, dtype=float),
        x_star=problem.x_star,
    )


def test_replay_of_a_huber_run_through_simulate_reproduces_it(tmp_path, capsys):
    """FedAvg (K = 2, N = 2, R = 4) on two 1-D Huber-like clients of F_{1.5, 8}, recorded; the
    interpolation file of its query points, replayed by ``fedtheory simulate --problem-file``,
    gives the same iterates to 1e-6 (the stored gradients at the stored points)."""
    problem = Huber1D([-0.2, 2.0])
    run = dict(rounds=4, local_steps=2, lr=0.05)
    res, data = _record(problem, problem.client_losses, [3.0], **run)
    out = tmp_path / "worst.npz"
    info = write_interpolation_file(out, **data, algorithm="fedavg", participation="full", **run)
    assert info["min_margin"] > 0 and info["counts"] == data["counts"].tolist()
    code = main(shlex.split(info["command"])[1:] + ["--json", str(tmp_path / "r.json")])
    assert code == 0, capsys.readouterr().err
    replay = json.loads((tmp_path / "r.json").read_text())
    np.testing.assert_allclose(replay["x_final"], res.x_final, rtol=0, atol=1e-6)
    worst = float(((res.x_final[0] - problem.x_star) ** 2).sum())
    got = (replay["final_error"][0] * (np.linalg.norm(replay["x_star"]) or 1.0)) ** 2
    assert got == pytest.approx(worst, rel=1e-6)


def test_replay_of_a_quadratic_run_in_python_reproduces_it(tmp_path):
    """The same for three 3-D quadratic clients of the tightened class (FedAvg, K = 2, R = 3):
    every query of the replay is a stored point (no program solved) and the curves agree."""
    rng = np.random.default_rng(11)
    H, h = [], []
    for _ in range(3):
        Q = np.linalg.qr(rng.standard_normal((3, 3)))[0]
        H.append(Q @ np.diag(rng.uniform(1.2, 9.5, 3)) @ Q.T)
        h.append(rng.standard_normal(3))
    problem = QuadraticProblem(np.array(H), np.array(h))
    run = dict(rounds=3, local_steps=2, lr=0.08)
    res, data = _record(problem, problem.client_losses, rng.standard_normal(3), **run)
    write_interpolation_file(tmp_path / "q.npz", **data)
    replayed = load_interpolated(tmp_path / "q.npz")
    again = simulate(replayed, "fedavg", seeds=1, **run)
    assert replayed.solves == 0
    np.testing.assert_allclose(again.x_final, res.x_final, atol=1e-12)
    np.testing.assert_allclose(again.metrics["error"], res.metrics["error"], atol=1e-12)
    assert replayed.f_star == pytest.approx(problem.f_star, rel=1e-12)
    # x_R is no client's query: f there is the smallest interpolant's, at most the quadratic's
    assert replayed.loss(again.x_final)[0] <= problem.loss(res.x_final)[0] + 1e-12
    assert replayed.solves == 3


def test_problem_batches_seeds_and_clients_and_solves_off_the_data(tmp_path):
    rng = np.random.default_rng(2)
    data = _two_clients(rng)
    write_interpolation_file(tmp_path / "d.npz", **data)
    prob = load_interpolated(tmp_path / "d.npz")
    X = np.stack([data["points"][:, 0], data["points"][:, 1], rng.standard_normal((2, 2))])
    G = prob.grads(X)  # (3 seeds, 2 clients, 2)
    np.testing.assert_array_equal(G[0], data["grads"][:, 0])
    np.testing.assert_array_equal(G[1], data["grads"][:, 1])
    for i in range(2):
        n = data["counts"][i]
        want = lowest_interpolant(
            data["points"][i, :n], data["grads"][i, :n], data["values"][i, :n], X[2, i], mu=MU, L=L
        )[1]
        np.testing.assert_allclose(G[2, i], want, rtol=1e-14, atol=1e-14)
    assert prob.solves == 2
    np.testing.assert_allclose(prob.full_grad(X[2, :1]), prob.grads(X[2:, :1].repeat(2, 1)).mean(1))
    assert prob.loss(np.asarray(data["x_star"])[None])[0] == pytest.approx(prob.f_star)
    assert prob.grads(X.astype(np.float32)).dtype == np.float32


def _two_clients(rng, lo=1.5, hi=9.0):
    """Two 2-D quadratic clients of F_{lo, hi} with 5 and 3 rows, x* a row of both."""
    H = [np.diag(rng.uniform(lo, hi, 2)) for _ in range(2)]
    z = rng.standard_normal((2, 2))
    x_star = np.linalg.solve(H[0] + H[1], H[0] @ z[0] + H[1] @ z[1])
    points = np.zeros((2, 5, 2))
    points[0, :4] = rng.standard_normal((4, 2))
    points[1, :2] = rng.standard_normal((2, 2))
    points[0, 4] = points[1, 2] = x_star
    grads = np.stack([(points[i] - z[i]) @ H[i] for i in range(2)])
    values = np.stack(
        [0.5 * np.einsum("pd,de,pe->p", points[i] - z[i], H[i], points[i] - z[i]) for i in range(2)]
    )
    return dict(
        points=points,
        grads=grads,
        values=values,
        counts=np.array([5, 3]),
        mu=MU,
        L=L,
        x0=rng.standard_normal(2),
        x_star=x_star,
    )


# -- refusals -----------------------------------------------------------------------------------
def test_a_non_interpolable_file_is_refused_naming_the_worst_pair(tmp_path, capsys):
    rng = np.random.default_rng(4)
    data = _two_clients(rng)
    data["values"][1, 0] -= 5.0  # client 1's row 0 far below its neighbours' bounds
    out = tmp_path / "bad.npz"
    with pytest.raises(NotInterpolableError, match=r"client 1's .*rows \(0, 2\) has margin") as exc:
        write_interpolation_file(out, **data)
    margins = check_interpolation(
        data["points"], data["grads"], data["values"], data["counts"], MU, L
    )
    assert exc.value.client == 1 and exc.value.pair == (0, 2)
    assert exc.value.margin == margins.min() == margins[1] < 0
    assert not out.exists()
    _save(out, data)
    code = main(
        [
            "simulate",
            "--problem-file",
            str(out),
            "--algorithm",
            "fedavg",
            "-R",
            "2",
            "-K",
            "2",
            "--lr",
            "0.05",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "client 1" in err


def _save(path, data, **extra):
    arrays = {k: np.asarray(v) for k, v in data.items()}
    np.savez(path, kind=np.asarray("interpolation"), **arrays, **extra)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda a: a.pop("grads"), "lacks grads"),
        (lambda a: a.pop("x_star"), "lacks x_star"),
        (lambda a: a["points"].__setitem__((0, 1, 0), np.nan), "points has a non-finite"),
        (lambda a: a["values"].__setitem__((1, 4), np.inf), "values has a non-finite"),
        (lambda a: a.__setitem__("counts", np.array([5.0, 3.0])), "counts must be integers"),
        (lambda a: a.__setitem__("counts", np.array([6, 3])), "counts[0] = 6"),
        (lambda a: a.__setitem__("mu", 20.0), "needs mu < L"),
        (lambda a: a.__setitem__("x0", np.zeros(3)), "x0 must have shape"),
        (lambda a: a.__setitem__("rounds", np.array([1, 2])), "rounds must be a scalar"),
        (lambda a: a.__setitem__("extra", 1.0), "unknown arrays ['extra']"),
        (lambda a: a.__setitem__("x_star", a["x_star"] + 1.0), "x_star is not a minimizer"),
        (lambda a: a.__setitem__("kind", np.asarray("cubic")), "unknown problem file kind"),
    ],
)
def test_bad_files_are_refused_in_one_line(tmp_path, capsys, change, words):
    data = _two_clients(np.random.default_rng(6))
    arrays = {"kind": np.asarray("interpolation"), **{k: np.asarray(v) for k, v in data.items()}}
    change(arrays)
    f = tmp_path / "f.npz"
    np.savez(f, **arrays)
    with pytest.raises(FedTheoryError, match=None) as exc:
        make_problem(path=f)
    assert words in str(exc.value) and str(f) in str(exc.value)
    code = main(
        [
            "simulate",
            "--problem-file",
            str(f),
            "--algorithm",
            "fedavg",
            "-R",
            "2",
            "-K",
            "2",
            "--lr",
            "0.05",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and words in err


def test_pickled_objects_are_refused_in_one_line(tmp_path, capsys):
    data = _two_clients(np.random.default_rng(6))
    f = tmp_path / "o.npz"
    _save(f, data, algorithm=np.array([{"name": "fedavg"}], dtype=object))
    with pytest.raises(FedTheoryError, match="not a readable .npz archive"):
        read_interpolation(f)
    code = main(
        [
            "simulate",
            "--problem-file",
            str(f),
            "--algorithm",
            "fedavg",
            "-R",
            "2",
            "-K",
            "2",
            "--lr",
            "0.05",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "pickle" in err.lower()


def test_rate_and_bound_refuse_an_interpolation_file_in_one_line(tmp_path, capsys):
    data = _two_clients(np.random.default_rng(8))
    write_interpolation_file(tmp_path / "w.npz", **data)
    code = main(
        [
            "rate",
            "--problem-file",
            str(tmp_path / "w.npz"),
            "--algorithm",
            "fedavg",
            "--participation",
            "full",
            "-K",
            "2",
            "--lr",
            "0.05",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert err.endswith(
        "exact rates need a quadratic; this is an interpolation counterexample: replay it with "
        "fedtheory simulate"
    )
    with pytest.raises(FedTheoryError, match="exact rates need a quadratic"):
        make_problem(path=tmp_path / "w.npz", exact=True)
    code = main(["bound", "focus-thm1-rate", "--problem-file", str(tmp_path / "w.npz")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "exact rates need a quadratic" in err


def test_writer_refuses_unknown_metadata_and_keeps_the_known():
    data = _two_clients(np.random.default_rng(9))
    with pytest.raises(UnknownOptionError, match="'seeds'"):
        interpolation_data(**data, seeds=3)
    kept = interpolation_data(**data, lr=0.05, rounds=4, algorithm="fedavg", tau=1e-4, value=0.3)
    assert kept.metadata == {
        "lr": 0.05,
        "rounds": 4,
        "algorithm": "fedavg",
        "tau": 1e-4,
        "value": 0.3,
    }


def test_file_round_trip(tmp_path):
    data = _two_clients(np.random.default_rng(10))
    data["points"][1, 3:] = 7.0  # padding: written as zeros
    info = write_interpolation_file(
        tmp_path / "r.npz",
        **data,
        algorithm="scaffold",
        lr=0.1,
        local_steps=3,
        rounds=2,
        participation="uniform",
        clients_per_round=1,
    )
    back = read_interpolation(tmp_path / "r.npz")
    assert back.metadata["algorithm"] == "scaffold" and back.metadata["clients_per_round"] == 1
    assert (back.points[1, 3:] == 0).all()
    np.testing.assert_array_equal(back.points[0], data["points"][0])
    np.testing.assert_array_equal(back.margins, info["margins"])
    assert "--clients-per-round 1" in info["command"] and "--algorithm scaffold" in info["command"]
    with np.load(tmp_path / "r.npz", allow_pickle=False) as z:  # strings, no objects
        assert z["kind"].dtype.kind == "U" and z["kind"].ndim == 0


def test_a_missing_pep_extra_is_one_line_naming_it(monkeypatch):
    data = interpolation_data(**_two_clients(np.random.default_rng(12)))
    monkeypatch.setitem(sys.modules, "cvxpy", None)
    with pytest.raises(MissingExtraError, match=r"optional extra 'pep'.*fedtheory\[pep\]") as exc:
        InterpolatedProblem(data, solver="clarabel")
    assert exc.value.extra == "pep" and "\n" not in str(exc.value)


@pytest.mark.skipif(bool(missing("pep")), reason="needs the optional extra pep")
def test_the_conic_solver_is_a_named_strategy_that_agrees():
    rng = np.random.default_rng(13)
    data = interpolation_data(**_two_clients(rng))
    X = rng.standard_normal((1, 2, 2))
    fast = InterpolatedProblem(data).grads(X)
    conic = InterpolatedProblem(data, solver="clarabel").grads(X)
    np.testing.assert_allclose(conic, fast, atol=1e-3)


def test_the_runs_settings_reach_the_replay_command_as_data():
    data = _two_clients(np.random.default_rng(11))
    run = dict(algorithm="fedprox", lr=0.05, local_steps=2, rounds=3)
    options = "server_momentum=0.9 'w=1.0,2.0'"
    kept = interpolation_data(
        **data, **run, prox_mu=0.5, global_lr=0.5, aggregation="weighted", options=options
    )
    words = shlex.split(kept.replay_command("r.npz"))
    flags = {"--prox-mu": "0.5", "--global-lr": "0.5", "--aggregation": "weighted"}
    for flag, value in flags.items():
        assert words[words.index(flag) + 1] == value
    got = [words[i + 1] for i, w in enumerate(words) if w == "--option"]
    assert got == ["server_momentum=0.9", "w=1.0,2.0"]
    for bad in ("momentum", "=1", "a=1 'b=2", "x-y=1"):
        with pytest.raises(AssumptionError, match="options must be shell words NAME=VALUE"):
            interpolation_data(**data, **run, options=bad)
    with pytest.raises(AssumptionError, match="global_lr"):
        interpolation_data(**data, **run, global_lr=0.0)
