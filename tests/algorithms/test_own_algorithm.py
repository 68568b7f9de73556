"""A researcher's own algorithm (docs/own-algorithm.md): loaded from its file, checked against a
per-client loop, its exact rates against Monte Carlo, and the exact oracle's refusals naming
the property that fails.

The two examples live outside the package, in docs/examples/: FedNova (Wang et al. 2020) and
FedAvg with server momentum (Hsu et al. 2019).
"""

from __future__ import annotations

import sys
import textwrap
import warnings
from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedtheory.algorithms import (
    Algorithm,
    AlgorithmConfig,
    RoundDraw,
    field_layout,
    info,
    make_algorithm,
    register,
    resolve_algorithm,
)
from fedtheory.algorithms.fedavg import server_model_layout
from fedtheory.analysis.exact import NotAffineError, exact_mse_curve, exact_rates
from fedtheory.errors import AssumptionError, FedTheoryError
from fedtheory.participation import make_participation
from fedtheory.problems import QuadraticProblem, random_quadratic
from fedtheory.simulation import simulate


def _draw(rng, S, N):
    """Random masks (each seed at least one participant) and non-negative weights."""
    mask = rng.random((S, N)) < 0.5
    mask[np.arange(S), rng.integers(0, N, S)] = True
    return mask, rng.random((S, N)) * mask


# the fixture loads the example once; every generated input uses that one algorithm
@settings(max_examples=15, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(N=st.integers(2, 6), K=st.integers(1, 3), normalized=st.booleans(), seed=st.integers(0, 99))
def test_fednova_is_its_per_client_loop(own_algorithms, N, K, normalized, seed):
    """The batched round (every seed at once) equals the plain per-client loop of the same
    file, seed by seed, at random states, participants and weights."""
    name, mod = own_algorithms("fednova")
    prob = random_quadratic(N, 3, seed=seed)
    rng = np.random.default_rng(seed)
    alg = make_algorithm(
        name, problem=prob, lr=0.07, local_steps=K, global_lr=0.8, normalized=normalized
    )
    x = rng.standard_normal((4, 3))
    mask, w = _draw(rng, 4, N)
    new = alg.round(alg.init(prob, x), prob, RoundDraw(mask=mask, weights=w), None).x
    for s in range(4):
        ref = mod.per_client_round(
            prob, x[s], mask[s], w[s], lr=0.07, local_steps=K, global_lr=0.8, normalized=normalized
        )
        np.testing.assert_allclose(new[s], ref, rtol=1e-12, atol=1e-12)


# the fixture loads the example once; every generated input uses that one algorithm
@settings(max_examples=15, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(N=st.integers(2, 6), K=st.integers(1, 3), beta=st.floats(0.0, 0.95), seed=st.integers(0, 99))
def test_server_momentum_is_its_per_client_loop(own_algorithms, N, K, beta, seed):
    name, mod = own_algorithms("server_momentum", "fedavgm")
    prob = random_quadratic(N, 3, seed=seed)
    rng = np.random.default_rng(seed)
    alg = make_algorithm(
        name, problem=prob, lr=0.07, local_steps=K, global_lr=0.5, server_momentum=beta
    )
    state = alg.init(prob, rng.standard_normal((4, 3)))._replace(v=rng.standard_normal((4, 3)))
    mask, w = _draw(rng, 4, N)
    new = alg.round(state, prob, RoundDraw(mask=mask, weights=w), None)
    for s in range(4):
        x, v = mod.per_client_round(
            prob,
            state.x[s],
            state.v[s],
            mask[s],
            w[s],
            lr=0.07,
            local_steps=K,
            global_lr=0.5,
            server_momentum=beta,
        )
        np.testing.assert_allclose(new.x[s], x, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(new.v[s], v, rtol=1e-12, atol=1e-12)


def test_server_momentum_from_scratch_is_fedavg_with_server_momentum(own_algorithms):
    """v = m / (1 - beta): the example with server step eta is fedtheory's fedavg with
    ``server_momentum = beta`` and server step eta / (1 - beta), in the simulation (the same
    iterates) and in the exact oracle (the same rates and floor)."""
    name, _ = own_algorithms("server_momentum", "fedavgm")
    prob = random_quadratic(6, 3, seed=1)
    model = make_participation("uniform", 6, 2)
    beta, eta = 0.8, 0.2
    run = dict(rounds=40, seeds=5, lr=0.05, local_steps=2)
    mine = simulate(prob, name, model, global_lr=eta, server_momentum=beta, **run)
    theirs = simulate(
        prob, "fedavg", model, global_lr=eta / (1 - beta), server_momentum=beta, **run
    )
    np.testing.assert_allclose(mine.x_final, theirs.x_final, rtol=1e-10)
    a = exact_rates(
        prob, name, model, lr=0.05, local_steps=2, global_lr=eta, options={"server_momentum": beta}
    )
    b = exact_rates(
        prob,
        "fedavg",
        model,
        lr=0.05,
        local_steps=2,
        global_lr=eta / (1 - beta),
        options={"server_momentum": beta},
    )
    assert a.mean_square_rate == pytest.approx(b.mean_square_rate, rel=1e-10)
    assert a.stationary_mse == pytest.approx(b.stationary_mse, rel=1e-8)


@pytest.mark.parametrize(
    "example, attr, settings_",
    [
        ("fednova", "fednova", {"global_lr": 1.0}),
        ("fednova", "fednova", {"global_lr": 1.0, "normalized": False}),
        ("server_momentum", "fedavgm", {"global_lr": 0.3, "server_momentum": 0.6}),
    ],
)
@pytest.mark.parametrize("heterogeneity", [0.0, 1.0])
def test_exact_mean_square_error_is_the_monte_carlo_mean(
    own_algorithms, example, attr, settings_, heterogeneity
):
    """E||x_r - x*||^2 of the exact oracle against the mean over 4000 simulated seeds (uniform
    2 of 5 clients: the draw is the only randomness), within 5 standard errors at every one of
    40 rounds; towards 0 (a minimizer shared by the clients, heterogeneity 0: x* is a fixed
    point of every round) or towards the exact floor."""
    name, _ = own_algorithms(example, attr)
    prob = random_quadratic(5, 3, condition=5.0, heterogeneity=heterogeneity, seed=2)
    model = make_participation("uniform", 5, 2)
    opts = {k: v for k, v in settings_.items() if k != "global_lr"}
    kw = dict(lr=0.08, local_steps=2, global_lr=settings_["global_lr"])
    R = 40
    curve = exact_mse_curve(prob, name, model, rounds=R, options=opts, **kw)
    res = exact_rates(prob, name, model, options=opts, **kw)
    sim = simulate(prob, name, model, rounds=R, seeds=4000, metrics=("error",), **kw, **opts)
    e2 = sim.error**2 * float(prob.x_star @ prob.x_star)
    mean, se = e2.mean(axis=0), e2.std(axis=0, ddof=1) / np.sqrt(e2.shape[0])
    assert np.all(np.abs(mean[1:] - curve[1:]) <= 5 * se[1:] + 1e-12 * curve[1:])
    if heterogeneity:
        assert curve[-1] > res.stationary_mse > 0
    else:
        assert res.stationary_mse == pytest.approx(0.0, abs=1e-20)


@pytest.mark.parametrize("normalized", [True, False])
def test_fednova_mean_square_rate_is_the_monte_carlo_decay(own_algorithms, normalized):
    """In one dimension with a shared minimizer, E(x_r - x*)^2 = rho_ms^r (x_0 - x*)^2 exactly
    (the second moment is one number): the exact curve is that geometric sequence, and the
    slope of the mean over 4000 simulated seeds lies within 4 bootstrap standard errors of the
    exact mean-square rate (which the mean rate squared underestimates)."""
    name, _ = own_algorithms("fednova")
    H = np.array([0.5, 1.0, 2.0, 1.5, 0.8]).reshape(5, 1, 1)  # f_i = lambda_i (x - 1.3)^2 / 2
    prob = QuadraticProblem(H, 1.3 * H[:, :, 0])
    model = make_participation("uniform", 5, 2)
    kw = dict(lr=0.1, local_steps=2, normalized=normalized)
    res = exact_rates(prob, name, model, lr=0.1, local_steps=2, options={"normalized": normalized})
    R = 30
    curve = exact_mse_curve(
        prob, name, model, rounds=R, lr=0.1, local_steps=2, options={"normalized": normalized}
    )
    np.testing.assert_allclose(
        curve, curve[0] * res.mean_square_rate ** np.arange(R + 1), rtol=1e-9
    )
    assert res.mean_square_rate > res.mean_rate**2 * (1 + 1e-3)
    sim = simulate(prob, name, model, rounds=R, seeds=4000, metrics=("error",), **kw)
    e2 = sim.error**2

    def slope(rows):
        return np.exp(np.polyfit(np.arange(R + 1), np.log(e2[rows].mean(axis=0)), 1)[0])

    rng = np.random.default_rng(0)
    boot = [slope(rng.integers(0, len(e2), len(e2))) for _ in range(200)]
    assert abs(slope(slice(None)) - res.mean_square_rate) <= 4 * np.std(boot)


# --- the refusals name the property that fails ---------------------------------------------------

FIRST_FEDNOVA = '''
"""FedNova's first version: tau_eff from the draw's weights, which then enter squared."""
import numpy as np
from typing import Any, NamedTuple
from fedtheory.algorithms import Algorithm, Option, field_layout, register
from fedtheory.backend import get_namespace

class State(NamedTuple):
    x: Any

@register("fednova-first", "FedNova, first version", display="FedNova-first",
          uses=("global_lr",), affine=True, exact_layout=field_layout(("x",)))
def fednova_first(config):
    K, lr = config.local_steps, config.lr
    def round_(state, problem, draw, rng=None):
        xp = get_namespace(state.x)
        N = problem.n_clients
        tau = 1 + np.arange(N) % K
        X = xp.repeat(state.x[:, None, :], N, axis=1)
        for k in range(K):
            X = X - lr * (k < tau)[None, :, None] * problem.grads(X, rng)
        w = draw.weights
        tau_eff = w @ tau  # sum_{i in S} w_i tau_i: the weights enter twice
        step = xp.einsum("sn,snd->sd", w, (state.x[:, None, :] - X) / tau[None, :, None])
        return State(x=state.x - config.global_lr * tau_eff[:, None] * step)
    return Algorithm("fednova-first", lambda p, x0: State(x0), round_, config)
'''


class _State(NamedTuple):
    x: object
    y: object = None


X_LAYOUT = field_layout(("x",))


def _broken(name, round_, layout=X_LAYOUT, state=None):
    """Register an algorithm whose round is ``round_(state, problem, draw)``."""
    State = _State

    make = state or (lambda p, x0: State(x0, x0 * 0))

    @register(name, "a probe", display=name, affine=True, exact_layout=layout)
    def build(config):
        return Algorithm(name, make, lambda s, p, d, rng=None: round_(s, p, d), config)

    return name


def _grad_step(s, p, d):
    """-0.05 sum_i w_i grad f_i(x): one affine aggregate of the participants' gradients."""
    G = p.grads(np.repeat(s.x[:, None, :], p.n_clients, axis=1), None)
    return -0.05 * np.einsum("sn,snd->sd", d.weights, G)


def _refusal(name):
    prob = random_quadratic(4, 2, seed=0)
    with pytest.raises(NotAffineError) as exc:
        exact_rates(prob, name, make_participation("uniform", 4, 2), lr=0.1, local_steps=1)
    return str(exc.value)


def test_fednova_first_version_is_refused_as_not_linear_in_the_weights(tmp_path, own_algorithms):
    """FedNova with the weights entering squared. Probed with client j alone, w_j = 0, 1, 2:
    doubling w quadruples what it adds."""
    path = tmp_path / "fednova_first.py"
    path.write_text(textwrap.dedent(FIRST_FEDNOVA))
    name = resolve_algorithm(f"{path}:fednova_first").name
    msg = _refusal(name)
    assert "the round is not linear in the participation weights: doubling w changes the " in msg
    assert "by 4x, not 2x (client " in msg and "round 0)" in msg
    assert "not the affine map" not in msg and "\n" not in msg


def test_each_property_is_named(own_algorithms):
    """Each of the oracle's requirements, broken on its own, is the one the refusal names."""
    agg = _grad_step
    cases = {
        "the round depends on the round index": lambda s, p, d: s._replace(
            x=s.x * (1.0 + d.r) + agg(s, p, d)
        ),
        "the round reads state that its exact layout leaves out": lambda s, p, d: s._replace(
            x=s.x + agg(s, p, d) + 0.1 * s.y
        ),
        "the round is not affine in the state: doubling the state (from zero) changes its "
        "image by": lambda s, p, d: s._replace(x=s.x + agg(s, p, d) + 0.1 * s.x * np.abs(s.x)),
        "the participants' contributions do not add up: clients": lambda s, p, d: s._replace(
            x=s.x + agg(s, p, d) / (1.0 + d.mask.sum(axis=1, keepdims=True))
        ),
        "the round's result is not finite (no client taking part, round 0)": lambda s, p, d: (
            s._replace(x=s.x + agg(s, p, d) / d.mask.sum(axis=1, keepdims=True))
        ),
    }
    for k, (said, round_) in enumerate(cases.items()):
        msg = _refusal(_broken(f"probe-{k}", round_))
        assert said in msg, (said, msg)


def test_a_round_that_writes_other_clients_is_not_client_local(own_algorithms):
    class State(NamedTuple):
        x: object
        c: object

    def round_(s, p, d):  # every client's c moves when anyone takes part
        c = s.c + d.mask.any(axis=1)[:, None, None] * 1.0
        return s._replace(c=c)

    name = _broken(
        "probe-local",
        round_,
        layout=field_layout(("x",), ("c",)),
        state=lambda p, x0: State(x0, np.zeros((len(x0), p.n_clients, x0.shape[1]))),
    )
    msg = _refusal(name)
    assert "the round is not client-local: client 0 taking part alone changes client 1's" in msg


def test_exact_oracle_and_bound_refuse_an_unknown_name_with_the_near_miss():
    prob = random_quadratic(4, 2, seed=0)
    with pytest.raises(FedTheoryError, match=r"unknown algorithm 'fedavgg' \(did you mean"):
        exact_rates(prob, "fedavgg", lr=0.1, local_steps=1)
    with pytest.raises(FedTheoryError, match="unknown algorithm 'fedavgg'") as exc:
        resolve_algorithm("fedavgg")
    assert "'fedavg'" in str(exc.value) and "FILE.py:NAME" in str(exc.value)


# --- the registry: notebooks, clashes, files, modules, entry points ------------------------------

CELL = """
from fedtheory.algorithms import Algorithm, register, field_layout
from fedtheory.algorithms.base import RoundDraw

@register("cell-alg", "defined in a notebook cell", display="CellAlg", affine=True,
          exact_layout=field_layout(("x",)))
def cell_alg(config):
    return Algorithm("cell-alg", lambda p, x0: x0, lambda s, p, d, rng=None: s, config)
"""


def test_a_notebook_cell_run_again_replaces_its_algorithm_with_a_warning(own_algorithms):
    first = {"__name__": "__main__"}
    exec(compile(CELL, "<cell>", "exec"), first)  # as Jupyter runs a cell in __main__
    again = {"__name__": "__main__"}
    with pytest.warns(UserWarning, match="'cell-alg' registered again by __main__: the new"):
        exec(compile(CELL, "<cell>", "exec"), again)
    assert info("cell-alg").builder is again["cell_alg"] is not first["cell_alg"]
    other = {"__name__": "another_module"}
    with pytest.raises(FedTheoryError, match="registered twice: by __main__ and by another_"):
        exec(compile(CELL, "<cell>", "exec"), other)


@pytest.mark.parametrize(
    "name, said",
    [("fedavg", "built-in"), ("FOCUS", "built-in"), ("ha-fed", "another spelling of 'hafed'")],
)
def test_a_builtin_name_cannot_be_registered_again(own_algorithms, name, said):
    code = CELL.replace('"cell-alg", "defined', f'"{name}", "defined')
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(FedTheoryError, match=said):
            exec(compile(code, "<cell>", "exec"), {"__name__": "__main__"})


def test_a_file_that_cannot_be_loaded_is_one_line(tmp_path, own_algorithms):
    bad = tmp_path / "bad.py"
    bad.write_text("x = 1\ny = 1 / 0\n")
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n")
    good = own_algorithms.examples / "fednova.py"
    cases = [
        (f"{tmp_path}/none.py:f", "no such file"),
        (
            f"{bad}:f",
            "cannot import " + str(bad) + ": ZeroDivisionError: division by zero (line 2)",
        ),
        (f"{broken}:f", "SyntaxError"),
        (f"{good}:fednov", "has no 'fednov' (did you mean 'fednova'?): it defines fednova"),
        (f"{good}:REFERENCE", "'REFERENCE' in " + str(good) + " is not an algorithm but a str"),
        ("no_such_module_xyz:f", "no module named 'no_such_module_xyz'"),
        ("not a module:f", "neither a .py file nor a module name"),
    ]
    for text, said in cases:
        with pytest.raises(FedTheoryError) as exc:
            resolve_algorithm(text)
        assert said in str(exc.value) and "\n" not in str(exc.value), (text, str(exc.value))
    assert not [m for m in sys.modules if m.startswith("fedtheory_user_bad")]


def test_a_file_is_imported_once_and_again_when_it_changes(tmp_path, own_algorithms):
    path = tmp_path / "mine.py"
    path.write_text(CELL)
    assert resolve_algorithm(f"{path}:cell_alg").name == "cell-alg"
    assert resolve_algorithm("mine.py:cell-alg", base_dir=tmp_path).source == f"{path}:cell-alg"
    assert resolve_algorithm(f"{path}:cell_alg").source == f"{path}:cell_alg"
    path.write_text(CELL.replace("defined in a notebook cell", "edited"))
    with pytest.warns(UserWarning, match="registered again"):
        resolve_algorithm(f"{path}:cell_alg")
    assert info("cell-alg").description == "edited"


def test_a_module_and_an_entry_point_load_by_name(tmp_path, monkeypatch, own_algorithms):
    pkg = tmp_path / "my_fl_algos.py"
    pkg.write_text(CELL.replace("cell-alg", "ep-alg"))
    dist = tmp_path / "my_fl_algos-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-fl-algos\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[fedtheory.algorithms]\nep-alg = my_fl_algos:cell_alg\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(FedTheoryError, match="unknown"):
        info("ep-alg")  # looking a name up imports nothing
    assert "my_fl_algos" not in sys.modules
    found = resolve_algorithm("EP-ALG")
    assert found == ("ep-alg", "ep-alg", None) and "my_fl_algos" in sys.modules
    assert resolve_algorithm("my_fl_algos:cell_alg") == ("ep-alg", "my_fl_algos:cell_alg", None)
    monkeypatch.delitem(sys.modules, "my_fl_algos")


def test_field_layout_refuses_what_it_cannot_read():
    with pytest.raises(AssumptionError, match="start with 'x'"):
        field_layout(("m", "x"))
    with pytest.raises(AssumptionError, match="x twice"):
        field_layout(("x",), ("x",))


def test_the_builtin_layout_is_unchanged_by_the_registry_changes():
    """fedavg keeps its own layout (u = x, server momentum m)."""
    assert info("fedavg").exact_layout is server_model_layout and info("fedavg").builtin
    assert isinstance(make_algorithm("fedavg", AlgorithmConfig(lr=0.1)), Algorithm)
