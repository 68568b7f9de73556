"""The strict backend (issue 27): the CuPy path proven without a GPU.

The strict namespace runs NumPy's own arithmetic on the same shapes, so every comparison with
the NumPy backend here is bit for bit (``np.array_equal``), under any BLAS kernel
(``OPENBLAS_CORETYPE``): both backends call the same BLAS routine on the same operands. What the
strict backend adds is CuPy's boundary: an implicit conversion to NumPy, host arrays in device
arithmetic and functions CuPy lacks raise, and host synchronizations are counted.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fedtheory
from fedtheory import _strict
from fedtheory.algorithms import info, make_algorithm, names
from fedtheory.analysis.exact import extract_round_model
from fedtheory.analysis.exact.layouts import AFFINE_ALGORITHMS
from fedtheory.backend import count_host_syncs, get_backend, get_namespace, to_numpy
from fedtheory.errors import FedTheoryError, HostConversionError, NotInCuPyError
from fedtheory.problems import (
    PLProblem,
    QuadraticProblem,
    random_least_squares,
    random_logistic,
    random_quadratic,
)
from fedtheory.problems.logistic import leaf_synthetic_problem
from fedtheory.problems.nn import kernels
from fedtheory.problems.nn.conv import Conv1DNet
from fedtheory.problems.nn.data import FederatedData, federated_synthetic
from fedtheory.problems.nn.problem import MLPProblem
from fedtheory.problems.nonconvex import NonPLProblem
from fedtheory.simulation import simulate

XP = get_backend("strict")
PACKAGE = Path(fedtheory.__file__).parent


def assert_same_run(a, b) -> None:
    """Two SimulationResults with the same numbers, bit for bit (NaN where the other has NaN),
    and something to compare: a recorded metric with finite values and a finite final model."""
    assert a.metrics and a.metrics.keys() == b.metrics.keys()
    assert any(np.isfinite(v).any() for v in a.metrics.values()), "no finite metric to compare"
    assert np.isfinite(a.x_final).any()
    for k in a.metrics:
        assert np.array_equal(a.metrics[k], b.metrics[k], equal_nan=True), k
    for k in ("x_final", "x_mean", "diverged", "diverged_at", "diverging", "diverging_at"):
        x, y = getattr(a, k), getattr(b, k)
        assert (x is None and y is None) or np.array_equal(x, y, equal_nan=True), k


# ---------------------------------------------------------------------------------------------
# The boundary itself.
# ---------------------------------------------------------------------------------------------


def test_selected_like_the_other_backends(monkeypatch):
    monkeypatch.setenv("FEDTHEORY_BACKEND", "strict")
    assert get_backend() is XP and XP.__name__ == "strict"
    a = XP.asarray(np.arange(6.0).reshape(2, 3))
    assert get_namespace(np.ones(2), a) is XP and get_namespace(a.sum()) is XP
    assert not isinstance(a, np.ndarray) and isinstance(a, XP.ndarray)


def test_implicit_conversions_raise_naming_the_call_site():
    a = XP.asarray(np.arange(3.0))
    here = "tests/test_strict_backend.py:"
    for convert in (np.asarray, np.array, lambda x: np.ascontiguousarray(x, dtype=float)):
        with pytest.raises(HostConversionError, match=re.escape(here)) as err:
            convert(a)
        assert "\n" not in str(err.value) and isinstance(err.value, TypeError | FedTheoryError)
    with pytest.raises(HostConversionError, match="NumPy array of shape \\(3,\\)"):
        a + np.ones(3)  # host data in device arithmetic: CuPy raises TypeError
    with pytest.raises(HostConversionError, match=re.escape(here)):
        np.ones(3) * a
    with pytest.raises(HostConversionError):
        np.concatenate([a, np.ones(2)])
    with pytest.raises(HostConversionError, match="host array"):
        np.add(a, a, out=np.empty(3))


def test_what_crosses_legitimately():
    host = np.arange(6.0).reshape(2, 3)
    a = XP.asarray(host)  # the explicit door in
    a[0] = np.array([9.0, 9.0, 9.0])  # host values written into a device array (CuPy allows)
    b = a * np.float64(2.0) + 1  # host scalars are scalars
    assert isinstance(b, XP.ndarray)
    out = XP.empty((2, 3))
    XP.matmul(b, XP.eye(3), out=out)
    out -= a
    got = to_numpy(out)  # the one door out
    assert isinstance(got, np.ndarray)
    want = host.copy()
    want[0] = 9.0
    np.testing.assert_array_equal(got, want + 1)


def test_reductions_are_device_arrays_and_scalar_reads_are_counted():
    a = XP.asarray(np.arange(4.0))
    s = a.sum()
    assert isinstance(s, XP.ndarray) and s.ndim == 0  # as CuPy: no host scalar
    with count_host_syncs() as syncs:
        assert float(s) == 6.0 and int(a.max()) == 3 and bool(a.any())
        assert a[1].item() == 1.0 and a.tolist() == [0.0, 1.0, 2.0, 3.0]
        to_numpy(a)
        XP.nonzero(a > 1)  # CuPy reads the count back before allocating
        a[a > 1] = 0.0
    assert (syncs.scalars, syncs.sizes, syncs.transfers) == (5, 2, 1)
    assert all(site.startswith("tests/test_strict_backend.py:") for site in syncs.sites)
    with count_host_syncs() as none:
        a * 2 + a.sum()
    assert none.total == 0


def test_only_cupy_functions_are_offered():
    a = XP.asarray(np.eye(3))
    with pytest.raises(NotInCuPyError, match="CuPy 13"):
        XP.apply_over_axes  # noqa: B018
    assert not hasattr(XP, "busday_count") and not hasattr(XP.linalg, "eigvals")
    with pytest.raises(NotInCuPyError, match="numpy.linalg.eigvals"):
        np.linalg.eigvals(a)  # NEP 18 dispatch reaches the allow-list too
    with pytest.raises(NotInCuPyError, match="setflags"):
        a.setflags(write=False)
    with pytest.raises(NotInCuPyError, match="random"):
        XP.random  # noqa: B018  (fedtheory draws on the host: same bits on every backend)
    assert float(np.linalg.norm(a)) == pytest.approx(3**0.5)


def test_allow_lists_name_real_numpy_functions():
    """A typo in the hard-coded CuPy table would silently refuse a function CuPy has."""
    for name in _strict.CUPY_FUNCTIONS:
        assert callable(getattr(np, name)), name
    for name in _strict.CUPY_LINALG:
        assert callable(getattr(np.linalg, name)), name
    for name in _strict.CUPY_NDARRAY_METHODS:
        assert callable(getattr(np.ndarray, name)), name


def test_every_namespace_call_in_the_package_is_offered():
    """Every ``xp.NAME`` the package writes is a function CuPy provides (static: paths no test
    runs under the strict backend are covered too)."""
    used = set()
    for path in PACKAGE.rglob("*.py"):
        used |= set(re.findall(r"\bxp\.([A-Za-z_]\w*)", path.read_text(encoding="utf-8")))
    offered = _strict.CUPY_FUNCTIONS | set(_strict._SAME_OBJECTS) | {"linalg", "ndarray"}
    assert used - offered - {"__name__"} == set()
    for path in PACKAGE.rglob("*.py"):
        for name in re.findall(r"\bxp\.linalg\.(\w+)", path.read_text(encoding="utf-8")):
            assert name in _strict.CUPY_LINALG, (path, name)


# ---------------------------------------------------------------------------------------------
# The backend-agnostic suites under the strict backend, against NumPy, bit for bit.
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lsq():
    return random_least_squares(6, 8, 3, noise=0.3, batch_size=2, seed=5)


def _settings(name: str) -> dict:
    kw = dict(rounds=12, seed=42, lr=0.02, local_steps=2, seeds=3)
    settings = info(name).settings
    if "prox_mu" in settings:
        kw["prox_mu"] = 0.1
    if "clusters" in settings:
        kw["clusters"] = 2
    return kw


@pytest.mark.parametrize("name", names())
@pytest.mark.parametrize("part", ["uniform", "bernoulli"])
def test_every_algorithms_batched_rounds_equal_numpy(lsq, name, part):
    """Minibatch gradients and gradient noise, fixed-size and ragged participation."""
    kw = _settings(name)
    if part == "uniform":
        kw.update(clients_per_round=2)
    else:
        kw.update(probabilities=np.full(6, 0.4))
    assert_same_run(
        simulate(lsq, name, part, backend="numpy", **kw),
        simulate(lsq, name, part, backend="strict", **kw),
    )


def test_simulate_end_to_end_equals_numpy():
    """Unknown x* (divergence scored on grad_norm2, x checked for finiteness), time averages,
    record_every, more seeds than the metric chunking, a diverging run, explicit x0."""
    quad = random_quadratic(5, 4, condition=5.0, heterogeneity=2.0, seed=3)
    no_star = QuadraticProblem(quad.H, quad.h)
    no_star.x_star = None
    x0 = np.linspace(-1, 1, 4)
    for problem, kw in (
        (no_star, dict(rounds=20, seeds=4, lr=0.05, local_steps=3, average_from=5)),
        (quad, dict(rounds=15, seeds=70, lr=0.05, record_every=4, x0=x0)),
        (quad, dict(rounds=40, seeds=2, lr=5.0, local_steps=3)),  # diverges
    ):
        for algorithm in ("focus", "fedavg"):
            a = simulate(problem, algorithm, "uniform", clients_per_round=2, backend="numpy", **kw)
            b = simulate(problem, algorithm, "uniform", clients_per_round=2, backend="strict", **kw)
            assert_same_run(a, b)
    assert a.diverged.all()  # the last run (fedavg at lr 5) froze its diverged seeds


@pytest.mark.parametrize(
    "problem",
    [
        random_logistic(5, 20, 4, seed=1),
        leaf_synthetic_problem(0.5, 0.5, 5, seed=1),
        PLProblem(5, 4, noise=0.1, seed=2),
        NonPLProblem(5, 4, seed=2),
    ],
    ids=lambda p: type(p).__name__,
)
@pytest.mark.parametrize("name", ["fedavg", "sg-focus"])
def test_every_problem_family_equals_numpy(problem, name):
    kw = dict(rounds=8, seeds=3, lr=0.05, local_steps=2, clients_per_round=2)
    assert_same_run(
        simulate(problem, name, "uniform", backend="numpy", **kw),
        simulate(problem, name, "uniform", backend="strict", **kw),
    )


@pytest.mark.parametrize("name", AFFINE_ALGORITHMS)
def test_exact_oracles_batched_rounds_equal_numpy(name):
    problem = random_quadratic(3, 2, condition=5.0, heterogeneity=2.0, seed=3, noise=0.1)
    algorithm = make_algorithm(name, problem=problem, lr=0.05, local_steps=2)
    a = extract_round_model(problem, algorithm)
    b = extract_round_model(problem, algorithm, backend="strict")
    for k in ("L0u", "f0", "beta", "gamma", "z0", "noise", "verification"):
        x, y = getattr(a, k), getattr(b, k)
        assert (x is None and y is None) or np.array_equal(x, y), k


@pytest.fixture(scope="module")
def shards():
    rng = np.random.default_rng(0)
    parts = [(rng.standard_normal((n, 12)), rng.integers(0, 3, size=n)) for n in (4, 9, 6)]
    return FederatedData.from_shards(parts, rng.standard_normal((7, 12)), rng.integers(0, 3, 7), 3)


@pytest.mark.parametrize("activation", kernels.ACTIVATIONS)
@pytest.mark.parametrize("net", ["mlp", "conv"])
def test_nn_forward_backward_numpy_fallbacks_equal_numpy(shards, activation, net):
    """The MLP and the 1-D CNN (bias_act, act_backward, softmax_xent's NumPy fallbacks) on
    strict arrays: gradients full and minibatch, subset gradients, losses, accuracy."""
    probs = {}
    for backend in ("numpy", "strict"):
        model = None
        if net == "conv":
            model = Conv1DNet(
                12, 3, channels=(4,), kernel=3, stride=2, hidden=(5,), activation=activation
            )
        probs[backend] = MLPProblem(
            shards,
            hidden=(6,),
            activation=activation,
            batch_size=3,
            xp=get_backend(backend),
            model=model,
        )
    pn, ps = probs["numpy"], probs["strict"]
    X = pn.init(np.random.default_rng(1), (2, 3))
    Xs = XP.asarray(X)
    clients = np.array([[0, 2], [1, 2]])
    pairs = [
        (pn.grads(X), ps.grads(Xs)),
        (pn.grads(X, np.random.default_rng(2)), ps.grads(Xs, np.random.default_rng(2))),
        (
            pn.grads_at(X[:, :2], clients, np.random.default_rng(3)),
            ps.grads_at(Xs[:, :2], XP.asarray(clients), np.random.default_rng(3)),
        ),
        (pn.client_losses(X), ps.client_losses(Xs)),
        (pn.full_grad(X[:, 0]), ps.full_grad(Xs[:, 0])),
        (pn.accuracy(X[:, 0]), ps.accuracy(Xs[:, 0])),
    ]
    for want, got in pairs:
        assert isinstance(want, np.ndarray)
        assert np.array_equal(want, to_numpy(got))


def test_nn_kernels_numpy_fallbacks_on_strict_arrays():
    rng = np.random.default_rng(4)
    z, b = rng.standard_normal((2, 5, 7)), rng.standard_normal((1, 7))
    for act in kernels.ACTIVATIONS:
        a = kernels.bias_act(XP.asarray(z), XP.asarray(b), act)
        assert np.array_equal(to_numpy(a), kernels.bias_act_reference(z, b, act))
        d = kernels.act_backward(XP.asarray(z), a, act)
        assert np.array_equal(to_numpy(d), kernels.act_backward_reference(z, to_numpy(a), act))
    y, w = rng.integers(0, 7, size=(2, 5)), rng.random((2, 5))
    loss, grad = kernels.softmax_xent(XP.asarray(z), XP.asarray(y), XP.asarray(w))
    want_loss, want_grad = kernels.softmax_xent_reference(z, y, w)
    assert np.array_equal(to_numpy(loss), want_loss) and np.array_equal(to_numpy(grad), want_grad)


def test_nn_training_through_the_simulator_equals_numpy(shards):
    results = []
    for backend in ("numpy", "strict"):
        p = MLPProblem(shards, hidden=(6,), batch_size=3, xp=get_backend(backend))
        x0 = to_numpy(p.init(np.random.default_rng(1), (2,)))
        results.append(
            simulate(
                p,
                "fedadam",
                "uniform",
                clients_per_round=2,
                rounds=6,
                seeds=2,
                x0=x0,
                lr=0.1,
                local_steps=2,
                backend=backend,
            )
        )
    assert_same_run(*results)


@pytest.mark.parametrize("name", ["fedavg", "afga", "cafga"])
def test_nn_participants_only_path_equals_numpy(name):
    """M = 2 of 8 clients: the local-steps engine takes grads_at (the subset path)."""
    data = federated_synthetic(0.5, 0.5, 8, samples=30)
    kw = dict(rounds=4, seeds=2, lr=0.05, local_steps=2, clients_per_round=2)
    if name == "cafga":
        kw["clusters"] = 2
    results = []
    for backend in ("numpy", "strict"):
        p = MLPProblem(data, hidden=(5,), batch_size=4, xp=get_backend(backend))
        x0 = to_numpy(p.init(np.random.default_rng(0)))
        results.append(simulate(p, name, "uniform", x0=x0, backend=backend, **kw))
    assert_same_run(*results)


def test_cli_simulate_under_strict_prints_numpys_numbers(tmp_path):
    args = [
        sys.executable,
        "-m",
        "fedtheory",
        "simulate",
        "--problem",
        "figure4",
        "--algorithm",
        "focus",
        "--participation",
        "uniform",
        "-M",
        "4",
        "--rounds",
        "20",
        "-K",
        "3",
        "--lr",
        "1e-4",
        "--seeds",
        "3",
        "--workers",
        "1",
        "--json",
        "-",
    ]
    out = {}
    for backend in ("numpy", "strict"):
        env = {**os.environ, "FEDTHEORY_BACKEND": backend}
        proc = subprocess.run(args, capture_output=True, text=True, env=env, check=True)
        out[backend] = json.loads(proc.stdout)
    for d in out.values():
        d.pop("wall_time_s")
    assert out["numpy"] == out["strict"] and out["numpy"]["error"]


# ---------------------------------------------------------------------------------------------
# Host synchronizations: O(1) per round.
# ---------------------------------------------------------------------------------------------

#: Device values read by the host per round (scalars and data-dependent sizes), at most: is
#: participation full (asked by pull and by the local-steps engine), the participant layout's
#: two counts and its indices, the indices of the clients that copy the server model (problems
#: of COMPRESS_CLIENTS clients or more: one more, the clients that take part in the round).
READS_PER_ROUND = 6


def _syncs(problem, name, *, rounds, seeds, local_steps):
    kw = {**_settings(name), "rounds": rounds, "seeds": seeds, "local_steps": local_steps}
    with count_host_syncs() as syncs:
        simulate(problem, name, "uniform", clients_per_round=2, backend="strict", **kw)
    return syncs


@pytest.mark.parametrize("name", names())
@pytest.mark.parametrize("exact", [False, True], ids=["minibatch", "exact"])
def test_host_syncs_per_round_are_constant(lsq, name, exact):
    """Per round: at most READS_PER_ROUND scalar reads and data-dependent sizes, whatever the
    seeds and local steps, and at most one transfer per recorded metric plus one (the server
    model's finiteness, the gossip mixing matrices built on the host); none grows with K or
    with the seed count. Minibatch gradients, and exact ones (the participants-only path)."""
    problem = random_quadratic(6, 3, seed=1) if exact else lsq
    per_round = {}
    for seeds in (2, 70):  # 70 > RECORD_ROWS: every metric is evaluated every round
        for K in (1, 4):
            a = _syncs(problem, name, rounds=5, seeds=seeds, local_steps=K)
            b = _syncs(problem, name, rounds=10, seeds=seeds, local_steps=K)
            reads = b.scalars + b.sizes - a.scalars - a.sizes
            per_round[seeds, K] = (reads / 5, (b.transfers - a.transfers) / 5)
    reads = {v[0] for v in per_round.values()}
    assert len(reads) == 1 and reads.pop() <= READS_PER_ROUND, per_round
    kw = {**_settings(name), "rounds": 0}
    n_metrics = len(simulate(problem, name, "uniform", clients_per_round=2, **kw).metrics.available)
    for (seeds, K), (_, transfers) in per_round.items():
        assert transfers <= n_metrics + 1, (seeds, K, per_round)
        assert transfers == per_round[seeds, 1][1]  # not O(K)


# ---------------------------------------------------------------------------------------------
# An implicit host conversion on the simulation path fails a test.
# ---------------------------------------------------------------------------------------------


def test_an_injected_host_conversion_on_the_simulation_path_fails(lsq, monkeypatch):
    """The minibatch gradient of every local step, made to look at its input on the host."""
    cls = type(lsq)
    grads = cls.grads

    def leaky_grads(self, X, rng=None):
        host = np.asarray(X)  # the leak: fine on NumPy, a TypeError on CuPy
        return grads(self, X if host is None else X, rng)

    monkeypatch.setattr(cls, "grads", leaky_grads)
    kw = dict(rounds=3, seeds=2, lr=0.02, clients_per_round=2)
    simulate(lsq, "fedavg", "uniform", backend="numpy", **kw)  # NumPy does not notice
    with pytest.raises(HostConversionError, match=r"tests/test_strict_backend\.py:\d+ \(in "):
        simulate(lsq, "fedavg", "uniform", backend="strict", **kw)
