"""The simulator's fast paths compute what the step-by-step, every-client paths compute.

- K local steps in O(1): on a quadratic, K plain steps are one affine map per client
  (``QuadraticProblem.local_steps_map``); the engine takes it only when the call is plain (exact
  gradients, no proximal term, no correction, no mixing, one 0/1 mask for every step).
- Participants only: the clients that take part are gathered into the client-major slot layout
  (:func:`fedtheory.algorithms.base.participants`) and only they compute, in the engine (FedAvg
  family) and in FOCUS's gradient-tracking loop, for uniform, weighted, Bernoulli (ragged) and
  full participation.
- The runner's stacked evaluation of metrics for small seed blocks, and the JSON / npz output.

Comparisons across different operation shapes use 1e-12 relative tolerances (normwise: the
largest difference over the largest entry); bit equality only for same-shape reruns.
"""

from __future__ import annotations

import importlib
import json

import numpy as np
import pytest

from fedtheory.algorithms.base import (
    SeedRng,
    participants,
    participants_of_rounds,
    row_dots,
    seed_sums,
)
from fedtheory.algorithms.gossip import gossip
from fedtheory.algorithms.local_steps import local_steps
from fedtheory.analysis.closed_forms import local_affine_maps
from fedtheory.cli import main
from fedtheory.errors import AssumptionError
from fedtheory.io import dumps, jsonable
from fedtheory.participation import make_participation
from fedtheory.problems import random_least_squares, random_quadratic
from fedtheory.simulation import simulate
from fedtheory.simulation.metrics import grad_norm2, rel_error, subopt

S, N, D, K = 5, 8, 6, 3
#: The engine's module (the package's ``local_steps`` name is the function).
engine = importlib.import_module("fedtheory.algorithms.local_steps")
RTOL = 1e-12


def assert_close(a, b, rtol=RTOL):
    """Normwise relative closeness: max |a - b| <= rtol * max |a| (NaN where both are NaN)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape
    assert np.array_equal(np.isnan(a), np.isnan(b))
    fin = np.isfinite(a)
    scale = np.abs(a[fin]).max(initial=0.0) or 1.0
    assert np.abs(a[fin] - b[fin]).max(initial=0.0) <= rtol * scale


class Stepwise:
    """The same problem without ``local_steps_map``: the engine steps K times."""

    def __init__(self, problem):
        self.p = problem
        self.n_clients, self.dim = problem.n_clients, problem.dim
        self.x_star, self.f_star, self.L, self.mu = (
            problem.x_star,
            problem.f_star,
            problem.L,
            problem.mu,
        )
        self.stochastic = False
        self.calls = 0

    def grads(self, X, rng=None):
        self.calls += 1
        return self.p.grads(X, None)

    def loss(self, x):
        return self.p.loss(x)

    def full_grad(self, x):
        return self.p.full_grad(x)


class EveryClient(Stepwise):
    """Says its gradients are stochastic (they are not: ``rng`` is ignored), so with an ``rng``
    the engine and SG-FOCUS take the every-client masked path: the reference of the fast
    paths."""

    stochastic = True

    def __init__(self, problem):
        super().__init__(problem)
        self.stochastic = True


@pytest.fixture(scope="module")
def quad():
    return random_quadratic(N, D, condition=6.0, heterogeneity=1.5, seed=11)


def _masks(kind, rng, shape=(S, N)):
    if kind == "full":
        return np.ones(shape, dtype=bool)
    if kind == "uniform":
        u = rng.random(shape)
        return u <= np.sort(u, axis=-1)[..., 2:3]  # exactly 3 per seed
    if kind == "bernoulli":
        m = rng.random(shape) < 0.35
        m[0] = False  # a seed with nobody, one with everybody: ragged counts 0..N
        m[1] = True
        return m
    if kind == "weighted":  # per-client step weights, as a compute mask may carry
        return _masks("uniform", rng, shape) * rng.uniform(0.5, 2.0, shape)
    raise ValueError(kind)


def _X0(rng):
    return rng.standard_normal((S, N, D))


# --- K local steps in O(1) -----------------------------------------------------------------
@pytest.mark.parametrize("kind", ["full", "uniform", "bernoulli"])
@pytest.mark.parametrize("steps", [1, 3, 7])
def test_k_step_map_equals_stepwise(quad, kind, steps):
    rng = np.random.default_rng(steps)
    X0, mask = _X0(rng), _masks(kind, rng)
    fast = local_steps(quad, X0, steps, 0.07, compute=mask)
    ref = Stepwise(quad)
    slow = local_steps(ref, X0, steps, 0.07, compute=mask)
    assert ref.calls == steps  # the reference really stepped
    assert_close(slow, fast)
    off = ~mask.astype(bool)
    assert np.array_equal(fast[off], X0[off])  # who does not compute keeps its model


def test_k_step_map_is_li_et_al_local_map(quad):
    """The cached map equals the closed-form module's (M_i, c_i) (row form: T_i = M_i^T)."""
    T, c = quad.local_steps_map(0.05, 4)
    M, cc = local_affine_maps(quad, 0.05, 4)
    assert_close(M.transpose(0, 2, 1), T)
    assert_close(cc, c)
    assert quad.local_steps_map(0.05, 4)[0] is T  # cached per (lr, K, namespace, dtype)
    T32, _ = quad.local_steps_map(0.05, 4, np, np.float32)
    assert T32.dtype == np.float32


class MapSpy(Stepwise):
    """Offers the map and records whether the engine asked for it."""

    def __init__(self, problem):
        super().__init__(problem)
        self.asked = 0

    def local_steps_map(self, lr, K, xp=np, dtype=None):
        self.asked += 1
        return self.p.local_steps_map(lr, K, xp, dtype)


def _ring(n):
    W = 0.5 * np.eye(n)
    for i in range(n):
        W[i, (i + 1) % n] = W[i, (i - 1) % n] = 0.25
    return W


@pytest.mark.parametrize(
    "case", ["prox", "correction", "mix", "step_masks", "weights", "noise_rng"]
)
def test_k_step_map_is_not_taken_where_steps_are_not_plain(quad, case):
    rng = np.random.default_rng(3)
    X0, mask = _X0(rng), _masks("uniform", rng)
    kw = {"compute": mask}
    if case == "prox":  # FedProx
        kw.update(prox_mu=0.5, anchor=rng.standard_normal((S, D)))
    elif case == "correction":  # SCAFFOLD's c - c_i
        kw["correction"] = rng.standard_normal((S, N, D))
    elif case == "mix":  # gossip between steps
        kw["mix"] = gossip(_ring(N))
    elif case == "step_masks":  # AFGA's re-sampled S_{r,t}
        kw["compute"] = _masks("uniform", rng, (S, K, N))
    elif case == "weights":
        kw["compute"] = _masks("weighted", rng)
    spy = MapSpy(quad)
    if case == "noise_rng":
        spy.stochastic = True
        kw["rng"] = SeedRng(range(S))
    out = local_steps(spy, X0, K, 0.05, **kw)
    assert spy.asked == 0 and spy.calls == K
    kw["rng"] = SeedRng(range(S))
    assert_close(local_steps(EveryClient(quad), X0, K, 0.05, **kw), out)


# --- participants only -----------------------------------------------------------------------
def _engine_call(kind: str, extra: str, rng) -> tuple[np.ndarray, dict]:
    """Start models and the keywords of one local-steps call: a ``kind`` of mask, and a
    proximal term, a correction, or per-step masks (AFGA's) as ``extra``."""
    X0, kw = _X0(rng), {"compute": _masks(kind, rng)}
    if extra == "prox":
        kw.update(prox_mu=0.3, anchor=rng.standard_normal((S, D)))
    elif extra == "correction":
        kw["correction"] = rng.standard_normal((S, 1, D))
    elif extra == "step_masks":
        kw["compute"] = _masks("uniform", rng, (S, K, N))
    return X0, kw


@pytest.mark.parametrize("kind", ["uniform", "bernoulli", "weighted"])
@pytest.mark.parametrize("extra", ["plain", "prox", "correction"])
def test_participants_only_engine_equals_every_client_path(quad, kind, extra):
    X0, kw = _engine_call(kind, extra, np.random.default_rng(5))
    ref = local_steps(EveryClient(quad), X0, K, 0.05, rng=SeedRng(range(S)), **kw)
    fast = local_steps(Stepwise(quad), X0, K, 0.05, **kw)
    assert_close(ref, fast)


@pytest.mark.parametrize("kind", ["uniform", "bernoulli", "full"])
def test_participants_layout(kind):
    mask = _masks(kind, np.random.default_rng(7))
    lay = participants(mask)
    s_idx, i_idx = np.nonzero(mask)
    assert sorted(lay.rows.tolist()) == sorted((s_idx * N + i_idx).tolist())
    assert lay.n == mask.sum(axis=0).max() and lay.m == mask.sum(axis=1).max()
    # each participant's slot holds its own row, in its client's column
    assert np.array_equal(lay.src.reshape(-1)[lay.slots], lay.rows)
    assert np.array_equal(lay.slots % N, lay.rows % N)
    assert np.array_equal(lay.seed.reshape(-1)[lay.slots], lay.rows // N)
    # seed sums read each seed's participants once, and the zero row for the missing ones
    vals = np.random.default_rng(8).standard_normal((lay.n * N + 1, 3))
    vals[-1] = 0
    want = np.zeros((S, 3))
    for r, sl in zip(lay.rows, lay.slots, strict=True):
        want[r // N] += vals[sl]
    assert_close(want, seed_sums(vals, lay))


def _run(problem, alg, part, **kw):
    model = None if part == "full" else part
    return simulate(
        problem,
        alg,
        model,
        rounds=25,
        seeds=4,
        seed=2,
        lr=0.05,
        local_steps=K,
        metrics="all",
        **kw,
    )


def _models(problem):
    p = np.linspace(0.5, 2.0, N)
    return {
        "uniform": make_participation("uniform", N, 3),
        "weighted": make_participation("weighted", N, 3, p / p.sum()),
        "bernoulli": make_participation("bernoulli", N, None, np.full(N, 0.3)),
        "full": "full",
    }


@pytest.mark.parametrize("part", ["uniform", "weighted", "bernoulli", "full"])
def test_focus_participants_only_equals_every_client_path(quad, part):
    """FOCUS computes S_r's gradients only; SG-FOCUS on a problem that calls its gradients
    stochastic takes the every-client masked path: the same iterates to 1e-12."""
    model = _models(quad)[part]
    fast = _run(quad, "focus", model)
    ref = _run(EveryClient(quad), "sg-focus", model)
    assert_close(ref.x_final, fast.x_final)
    for name in ("error", "f_minus_f_star", "grad_norm2", "consensus"):
        assert_close(ref.metrics[name], fast.metrics[name])
    # the tracking residual is rounding noise by definition (claim C3): compare it with |y|
    scale = np.abs(fast.grad_norm2).max() ** 0.5
    assert np.nanmax(fast.tracking_residual) <= 1e-12 * scale
    assert np.nanmax(np.abs(fast.tracking_residual - ref.tracking_residual)) <= 1e-12 * scale


@pytest.mark.parametrize("alg", ["fedavg", "fedadam", "mifa", "fedprox", "scaffold"])
@pytest.mark.parametrize("part", ["uniform", "weighted", "bernoulli", "full"])
def test_fedavg_family_fast_paths_equal_every_client_path(quad, alg, part):
    model = _models(quad)[part]
    kw = {"prox_mu": 0.2} if alg == "fedprox" else {}
    fast = _run(quad, alg, model, aggregation="weighted" if part == "weighted" else "mean", **kw)
    ref = _run(
        EveryClient(quad),
        alg,
        model,
        aggregation="weighted" if part == "weighted" else "mean",
        **kw,
    )
    assert_close(ref.x_final, fast.x_final)
    assert_close(ref.error, fast.error)
    assert_close(ref.consensus, fast.consensus)


@pytest.mark.parametrize("alg", ["focus", "fedavg"])
def test_fast_paths_batched_equals_single_seed_and_rerun_bits(quad, alg):
    model = make_participation("bernoulli", N, None, np.full(N, 0.3))
    kw = dict(rounds=20, seed=9, lr=0.05, local_steps=K)
    batched = simulate(quad, alg, model, seeds=5, **kw)
    again = simulate(quad, alg, model, seeds=5, **kw)
    assert np.array_equal(batched.x_final, again.x_final)  # same seed, same bits
    assert np.array_equal(batched.error, again.error)
    for s in (0, 3):
        one = simulate(quad, alg, model, seeds=1, seed_ids=[s], **kw)
        assert_close(batched.x_final[s], one.x_final[0])
        assert_close(batched.error[s], one.error[0])


def test_least_squares_minibatches_keep_their_draws():
    """A stochastic problem with an rng is not exact: the map and the slot layout are not used,
    so the per-seed minibatch draws are the ones every client always drew."""
    p = random_least_squares(N, 10, D, batch_size=3, seed=4)
    assert p.stochastic and not random_least_squares(N, 10, D, seed=4).stochastic
    ref = EveryClient(p)
    ref.grads = p.grads  # the real stochastic gradients
    a = _run(p, "fedavg", make_participation("uniform", N, 3))
    b = _run(ref, "fedavg", make_participation("uniform", N, 3))
    assert np.array_equal(a.x_final, b.x_final)


# --- the runner's stacked metrics for small blocks ------------------------------------------
def test_small_blocks_stack_their_metrics(quad):
    """One seed evaluates its metrics on stacked states; a caller's own functions run every
    round. Same numbers, and NaN from a divergence on either way."""
    own = {
        "error": lambda s, p: rel_error(s, p),
        "f_minus_f_star": lambda s, p: subopt(s, p),
        "grad_norm2": lambda s, p: grad_norm2(s, p),
    }
    model = make_participation("uniform", N, 3)
    for lr in (0.05, 9.0):  # converging, then diverging
        kw = dict(rounds=150, seeds=1, seed=1, lr=lr, local_steps=K)
        res = simulate(quad, "focus", model, metrics="all", **kw)
        per_round = simulate(quad, "focus", model, metrics=own, **kw)
        for name in own:
            assert_close(per_round.metrics[name], res.metrics[name])
    assert res.diverged[0] and np.isnan(res.consensus[0, res.diverged_at[0] :]).all()
    assert np.isfinite(res.consensus[0, : res.diverged_at[0]]).all()


# --- output -------------------------------------------------------------------------------
def test_dumps_keeps_the_json_convention():
    obj = {
        "a": np.array([[1.0, np.nan], [np.inf, 0.1]], dtype=np.float32),
        "b": np.arange(3)[::-1],
        "c": [np.float64("nan"), np.bool_(True), 2**70],
        "d": np.array([True, False]),
    }
    want = json.loads(json.dumps(jsonable(obj)))
    assert json.loads(dumps(obj)) == want
    assert json.loads(dumps(obj, indent=False)) == want
    assert "\n" not in dumps({"x": np.zeros(3)}, indent=False)


@pytest.fixture()
def problem_file(tmp_path):
    rng = np.random.default_rng(0)
    f = tmp_path / "p.npz"
    np.savez(f, A=rng.standard_normal((6, 10, 3)), b=rng.standard_normal((6, 10)), lam=0.1)
    return f


def test_cli_out_npz_and_summary(problem_file, tmp_path, capsys):
    args = ["simulate", "--problem-file", str(problem_file), "--algorithm", "focus"]
    args += ["--participation", "uniform", "-M", "2", "--rounds", "30", "-K", "2", "--lr", "0.01"]
    args += ["--seeds", "3", "--metrics", "all"]
    js, npz = tmp_path / "o.json", tmp_path / "o.npz"
    assert main([*args, "--json", str(js), "--out", str(npz)]) == 0
    out = capsys.readouterr().out
    assert "final error" in out and "diverged: 0 of 3 seeds" in out and str(npz) in out
    d = json.loads(js.read_text())
    with np.load(npz) as z:
        for key in ("error", "consensus", "tracking_residual", "x_final", "diverged"):
            assert np.array_equal(z[key], np.array(d[key], dtype=z[key].dtype))
        assert str(z["algorithm"]) == "focus"
    assert main([*args, "--json", "-"]) == 0  # the JSON contract on stdout, unchanged
    assert json.loads(capsys.readouterr().out)["error"] == d["error"]
    assert main(args) == 0  # neither flag: the summary for a person
    assert capsys.readouterr().out.startswith("focus on")
    with np.load(npz) as z:  # nested settings are a JSON string: no pickle needed
        assert json.loads(str(z["settings"]))["local_steps"] == 2
    assert main([*args, "--out", str(tmp_path / "only.npz")]) == 0
    assert capsys.readouterr().out.startswith("focus on")


# --- the engine's named strategies -----------------------------------------------------------
class WithSubset(Stepwise):
    """A problem that also offers the subset gradients ``grads_at`` (the NN problems do)."""

    def grads_at(self, Xs, clients, rng=None):
        S_, M_, d_ = Xs.shape
        full = np.zeros((S_, N, d_))
        full[np.arange(S_)[:, None], clients] = Xs
        G = self.p.grads(full, None)
        return np.take_along_axis(G, clients[:, :, None], axis=1)


@pytest.mark.parametrize("kind", ["full", "uniform", "bernoulli", "weighted"])
@pytest.mark.parametrize("extra", ["plain", "prox", "correction", "step_masks"])
def test_every_strategy_computes_what_stepwise_computes(quad, kind, extra):
    """Each named strategy that applies to a call equals the plain ``stepwise`` to 1e-12, and a
    strategy that does not apply is refused naming those that do."""
    X0, kw = _engine_call(kind, extra, np.random.default_rng(11))
    problem = WithSubset(quad)
    problem.local_steps_map = quad.local_steps_map  # offer every fast path
    ref = local_steps(problem, X0, K, 0.05, strategy="stepwise", **kw)
    tried = []
    for name in ("affine-map", "participants", "subset"):
        try:
            out = local_steps(problem, X0, K, 0.05, strategy=name, **kw)
        except AssumptionError as exc:
            assert "does not apply" in str(exc)
            continue
        tried.append(name)
        assert_close(ref, out)
    assert "subset" in tried  # the subset strategy applies to every call of this problem
    if extra != "step_masks" and kind != "full":
        assert "participants" in tried
    with pytest.raises(AssumptionError, match="unknown local-steps strategy"):
        local_steps(problem, X0, K, 0.05, strategy="fast", **kw)


def test_the_engine_chooses_by_facts_about_the_call(quad, monkeypatch):
    """affine-map for every client on a quadratic; participants for a mask; subset where the
    problem offers grads_at; stepwise under gossip or stochastic gradients."""
    rng = np.random.default_rng(2)
    X0, mask = _X0(rng), _masks("uniform", rng)
    seen = []
    real = engine.choose_strategy

    def spy(call):
        seen.append(real(call))
        return seen[-1]

    monkeypatch.setattr(engine, "choose_strategy", spy)
    local_steps(quad, X0, K, 0.05)
    local_steps(quad, X0, K, 0.05, compute=mask)
    local_steps(WithSubset(quad), X0, K, 0.05, compute=mask)
    local_steps(quad, X0, K, 0.05, compute=mask, mix=gossip(_ring(N)))
    local_steps(EveryClient(quad), X0, K, 0.05, compute=mask, rng=SeedRng(range(S)))
    assert seen == ["affine-map", "participants", "subset", "stepwise", "stepwise"]


@pytest.mark.parametrize(("rows", "n"), [(1, 3), (5, 7), (63, 32000), (122, 800), (3, 200000)])
def test_row_dots_on_numpy_are_the_batched_products_bits(rows, n):
    """The consensus metric's per-seed dot products: NumPy's vecdot gives the bits of the
    batched (1 x n) (n x 1) product that other namespaces compute (and that NumPy ran before),
    on short rows and on the long rows of N = 1600 clients."""
    A, B = np.random.default_rng(rows + n).standard_normal((2, rows, n))
    assert np.array_equal(row_dots(A), np.matmul(A[:, None, :], A[:, :, None])[:, 0, 0])
    assert np.array_equal(row_dots(A, B), np.matmul(A[:, None, :], B[:, :, None])[:, 0, 0])


# --- compressed participant layouts (many clients, few per round) ---------------------------
def test_compressed_layout_holds_the_participants_only():
    """N = 300 clients, 2 per seed: the columns are the clients that take part, and every
    participant's slot holds its own row in its client's column."""
    rng = np.random.default_rng(3)
    S_, N_ = 4, 300
    mask = np.zeros((S_, N_), dtype=bool)
    for s in range(S_):
        mask[s, rng.choice(N_, 2, replace=False)] = True
    lay = participants(mask, compress=True)
    assert np.array_equal(lay.clients, np.flatnonzero(mask.any(axis=0)))
    assert lay.width == lay.clients.size <= 8 and lay.src.shape == (lay.n, lay.width)
    s_idx, i_idx = np.nonzero(mask)
    assert sorted(lay.rows.tolist()) == sorted((s_idx * N_ + i_idx).tolist())
    assert np.array_equal(lay.src.reshape(-1)[lay.slots], lay.rows)
    assert np.array_equal(lay.clients[lay.slots % lay.width], lay.rows % N_)
    assert participants(mask).clients is None  # not asked: every client is a column


@pytest.mark.parametrize("alg", ["focus", "fedavg", "scaffold"])
@pytest.mark.parametrize("part", ["uniform", "bernoulli"])
def test_compressed_participants_equal_every_client_path(alg, part):
    """Above COMPRESS_CLIENTS clients with few per round, the participants-only rounds work on
    the clients that take part (grads_of); the every-client paths give the same iterates to
    1e-12 (and the layout really was compressed: grads_of was called)."""
    big = random_quadratic(300, 4, condition=4.0, heterogeneity=1.0, seed=2)
    model = (
        make_participation("uniform", 300, 3)
        if part == "uniform"
        else make_participation("bernoulli", 300, None, np.full(300, 0.01))
    )
    calls = []

    class Counted(type(big)):
        """Counts grads_of; without the K-step maps, so FedAvg steps through it too."""

        def grads_of(self, X, clients):
            calls.append(int(clients.size))
            return super().grads_of(X, clients)

        def __getattribute__(self, name):
            if name in ("local_steps_map", "tilt_map"):
                raise AttributeError(name)
            return super().__getattribute__(name)

    fast_problem = Counted(big.H, big.h, big.c)
    fast = _run(fast_problem, alg, model)
    ref = _run(EveryClient(big), "sg-focus" if alg == "focus" else alg, model)
    assert calls and max(calls) <= 4 * 3 * 2  # at most the seeds' participants per round
    mapped = _run(big, alg, model)  # the K-step maps, gathered for the compressed columns
    for run in (fast, mapped):
        assert_close(ref.x_final, run.x_final)
        assert_close(ref.error, run.error)
        assert_close(ref.consensus, run.consensus)


@pytest.mark.parametrize("kind", ["uniform", "bernoulli", "full"])
def test_layouts_of_many_rounds_equal_the_layouts_round_by_round(kind):
    """The runner prepares the participant layouts of a chunk of rounds at once; each is the
    layout of its round's mask, array for array (ragged and full rounds too)."""
    rng = np.random.default_rng(4)
    masks = np.stack([_masks(kind, rng) for _ in range(6)])
    for r, got in enumerate(participants_of_rounds(masks)):
        want = participants(masks[r])
        for name in want._fields:
            a, b = getattr(got, name), getattr(want, name)
            assert (a is None) == (b is None), name
            if a is not None:
                assert np.array_equal(np.asarray(a), np.asarray(b)), (r, name)
