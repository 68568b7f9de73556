"""Stated bounds against exact rates (issue 21): truths known in closed form, planted falsehoods
the default search must find, the JSON contract, and counterexamples the CLI reproduces."""

from __future__ import annotations

import json
import math
import tomllib

import numpy as np
import pytest

from fedtheory.analysis.exact import exact_rates
from fedtheory.bounds import (
    CONSTANTS,
    BoundSpec,
    check,
    instance_constants,
    load_spec,
    paper_bounds,
    ratio,
)
from fedtheory.cli import main
from fedtheory.errors import FedTheoryError
from fedtheory.participation import make_participation
from fedtheory.problems import ProblemFile, random_quadratic

#: The minimal spec of issue 21, verbatim.
MINIMAL = """
algorithm = "fedavg"
participation = "full"
clients = 4
local_steps = 1
lr = "1/L_f"
quantity = "mean_square_rate"
bound = "(1 - eta*mu_f)**2"
condition = "eta <= 1/L_f"

[class]          # quadratic least-squares clients
dim = 3
L = 10.0         # every client's smoothness at most L
mu = 1.0         # every client's strong convexity at least mu
"""


@pytest.fixture
def minimal(tmp_path):
    path = tmp_path / "gd.toml"
    path.write_text(MINIMAL)
    return path


def _gd_factor(inst_problem, eta):
    lam = np.linalg.eigvalsh(inst_problem.H.mean(axis=0))
    return float(np.max(np.abs(1 - eta * lam)) ** 2)


def test_the_minimal_spec_works_as_written_and_gradient_descent_is_tight(minimal):
    res = check(minimal, search=40)
    assert not res.violated
    assert len(res.instances) >= 40
    # K = 1 full-participation FedAvg is gradient descent: max |1 - eta lambda|^2 exactly, and
    # at eta = 1/L_f that is (1 - eta mu_f)^2: every instance is tight.
    for e in res.instances:
        inst = e.draw.instance(res.spec)
        assert e.exact == pytest.approx(_gd_factor(inst.problem, e.eta), rel=1e-12)
        assert e.ratio == pytest.approx(1.0, abs=1e-9)
    assert res.worst.ratio == pytest.approx(1.0, abs=1e-9)


def test_the_default_search_finds_the_cube_false_and_the_cli_reproduces_it(minimal, tmp_path):
    cube = tmp_path / "cube.toml"
    cube.write_text(MINIMAL.replace("**2", "**3"))
    out = tmp_path / "out" / "cube.json"
    out.parent.mkdir()
    assert main(["bound", str(cube), "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    assert d["violated"] is True
    assert d["search"]["draws"] == 200  # the default budget
    w = d["worst"]
    assert {"stated", "exact", "ratio", "eta", "problem_file"} <= set(w)
    assert w["exact"] > w["stated"] * (1 + d["tolerance"])
    assert w["ratio"] == pytest.approx(1.5, rel=1e-9)  # log(s^3) / log(s^2)
    assert all({"stated", "exact", "condition_met"} <= set(i) for i in d["instances"])
    # The counterexample file through `fedtheory rate`: the same exact rate, above the bound.
    rate_json = tmp_path / "rate.json"
    argv = w["command"].split()[1:] + ["--json", str(rate_json)]
    assert argv[argv.index("--problem-file") + 1] == str(
        tmp_path / "out" / "cube-counterexample.npz"
    )
    assert main(argv) == 0
    r = json.loads(rate_json.read_text())
    assert r["mean_square_rate"] == pytest.approx(w["exact"], rel=1e-12)
    assert r["mean_square_rate"] > w["stated"]
    # ... and `fedtheory simulate` reads it too.
    sim = tmp_path / "sim.json"
    assert (
        main(
            [
                "simulate",
                "--problem-file",
                w["problem_file"],
                "--algorithm",
                "fedavg",
                "-R",
                "5",
                "-K",
                "1",
                "--lr",
                repr(w["eta"]),
                "--json",
                str(sim),
            ]
        )
        == 0
    )
    assert len(json.loads(sim.read_text())["error"][0]) == 6


def _focus_spec(participation: str, bound: str) -> dict:
    return {
        "algorithm": "focus",
        "participation": participation,
        "clients": [3, 4, 6],
        "local_steps": [1, 2, 3],
        "lr": "1/(4*K*N*L)",
        "quantity": "mean_square_rate",
        "bound": bound,
        "class": {"dim": [2, 3], "L": 10.0, "mu": 1.0, "p_range": [0.05, 1.0]},
    }


@pytest.mark.slow
def test_a_planted_rate_that_ignores_p_min_is_found_by_the_default_search(tmp_path):
    # FOCUS contracts like 1 - c eta mu_f K N with c ~ 0.65 under full participation on this
    # class; a rate that forgets p_min, with c = 0.5, holds there (control) and is false under
    # Bernoulli participation, where rarely sampled clients slow the tracking down.
    false_bound = "1 - eta*mu_f*K*N/2"
    control = check(_focus_spec("full", false_bound), search=60)
    assert not control.violated
    res = check(_focus_spec("bernoulli", false_bound), out_dir=tmp_path, name="planted")
    assert res.search["draws"] == 200
    assert res.violated
    w = res.worst
    assert w.exact > w.stated * (1 + res.spec.tolerance) and w.condition_met
    assert w.constants["p_min"] < 0.5  # the breaker is a rarely sampled client
    files = res.to_dict()["worst"]
    p = np.load(files["probabilities_file"])
    prob = ProblemFile(files["problem_file"])
    again = exact_rates(
        prob,
        "focus",
        make_participation("bernoulli", prob.n_clients, p=p),
        lr=w.eta,
        local_steps=w.sizes["K"],
    )
    assert again.mean_square_rate == pytest.approx(w.exact, rel=1e-10)


def test_a_free_constant_gives_the_implied_constant_and_its_argmax(minimal, tmp_path):
    spec = load_spec(minimal)
    shape = BoundSpec.from_dict({**spec.to_dict(), "bound": "(1 - c*eta*mu_f)**2", "constant": "c"})
    res = check(shape, search=30, out_dir=tmp_path, name="shape")
    imp = res.to_dict()["implied_constant"]
    # (1 - c eta mu_f)^2 = exact at c = 1 on every instance (GD at eta = 1/L_f): the largest
    # constant that bounds them all is 1.
    assert imp["value"] == pytest.approx(1.0, rel=1e-9)
    assert imp["direction"].startswith("largest")
    assert imp["problem_file"] and ProblemFile(imp["problem_file"]).n_clients == 4
    assert res.worst.ratio == pytest.approx(1.0, abs=1e-9)
    assert not res.violated


def test_a_floor_shape_implied_constant_grows_with_c(tmp_path):
    spec = {
        "algorithm": "fedavg",
        "participation": "uniform",
        "clients": 4,
        "clients_per_round": [1, 2],
        "lr": "0.1/L",
        "quantity": "stationary_mse",
        "bound": "c*eta*zeta2/mu_f",
        "constant": "c",
        "class": {"dim": 2, "L": 10.0, "mu": 1.0},
    }
    res = check(spec, search=20)
    imp = res.implied
    assert imp["direction"].startswith("smallest")
    cs = [e.c for e in res.instances if e.condition_met]
    assert imp["value"] == pytest.approx(max(cs))
    # at the implied constant the shape bounds every instance, with equality at the argmax;
    # clients with one common optimum (a structured extreme: zeta2 = 0) have a floor of 0 that
    # the oracle leaves as rounding below the tolerance floor, and the shape is rounding too
    for e in res.instances:
        assert e.stated >= e.exact * (1 - 1e-12) or (
            0 <= e.exact <= e.floor and 0 <= e.stated <= e.floor
        )


def test_rounds_to_is_the_first_round_of_the_exact_transient():
    spec = {
        "algorithm": "fedavg",
        "clients": 3,
        "lr": "1/L_f",
        "quantity": "rounds_to",
        "epsilon": 1e-4,
        "bound": "log(1/epsilon)/(eta*mu_f)",
        "problem": "quadratic",
    }
    res = check(spec, measure_seeds=1)
    e = res.instances[0]
    prob = random_quadratic(16, 20, seed=0)
    H = prob.H.mean(axis=0)
    P = np.eye(prob.dim) - e.eta * H
    err, x, r = prob.x_star @ prob.x_star, -prob.x_star, 0
    while x @ x > 1e-4 * err:
        x, r = P @ x, r + 1
    assert e.exact == r
    assert res.named["measured"]["rounds_to_epsilon"] == r  # one deterministic run


def test_focus_on_figure4_full_has_the_known_exact_rate():
    spec = {
        "algorithm": "focus",
        "local_steps": 3,
        "lr": 6e-4,
        "quantity": "mean_square_rate",
        "bound": "1 - c*eta*mu_f*K*N",
        "constant": "c",
        "problem": "figure4",
    }
    res = check(spec, measure_seeds=0)
    assert round(res.instances[0].exact, 4) == 0.3598
    c = res.implied["value"]
    assert 1 - c * 6e-4 * res.instances[0].constants["mu_f"] * 3 * 16 == pytest.approx(
        res.instances[0].exact, rel=1e-12
    )


def test_constants_of_an_instance():
    prob = random_quadratic(5, 3, seed=2)
    part = make_participation("uniform", 5, 2)
    c = instance_constants(prob, part, local_steps=2, lr=0.1)
    assert set(c) == set(CONSTANTS)
    assert c["p_min"] == pytest.approx(0.4) and c["q_min"] == pytest.approx(0.2)
    assert c["delta_q"] == pytest.approx(0.0, abs=1e-15)
    assert c["M"] == pytest.approx(2.0) and c["N"] == 5 and c["K"] == 2 and c["eta"] == 0.1
    assert c["zeta2"] == pytest.approx(prob.sigma_g**2, rel=1e-12)
    eig = np.linalg.eigvalsh(prob.H)
    assert c["L"] == pytest.approx(eig.max()) and c["mu"] == pytest.approx(eig.min())
    assert c["mu_f"] == pytest.approx(prob.mu) and c["L_f"] == pytest.approx(prob.L)
    assert math.isnan(c["rho"])
    ring = instance_constants(prob, part, local_steps=1, topology="ring")
    assert 0 < ring["rho"] < 1


def test_ratio_reads_rates_in_rounds():
    assert ratio(0.5, 0.25, True) == pytest.approx(0.5)  # the bound promises twice the rounds
    assert ratio(0.25, 0.5, True) == pytest.approx(2.0)
    assert ratio(0.5, 1.2, True) == math.inf
    assert ratio(0.5, 0.0, True) == 0.0
    assert ratio(2.0, 1.0, False) == 0.5


@pytest.mark.parametrize(
    "change, message",
    [
        ({"bound": "1 - eta*lambda_min"}, "unknown symbol(s) lambda_min; accepted: eta, K"),
        ({"bound": "__import__('os')"}, "calls __import__, which is not one of the functions"),
        ({"bogus": 1}, "unknown key(s) bogus"),
        ({"quantity": "speed"}, "quantity 'speed'"),
        ({"algorithm": "fedadam"}, "not affine"),
        ({"condition": "eta + 1"}, "must be an inequality"),
        ({"constant": "c"}, "does not appear in the bound"),
        ({"constant": "mu"}, "must be a new name"),
        ({"participation": "uniform"}, "needs clients_per_round"),
        ({"class": {"dim": 3, "L": 1.0, "mu": 2.0}}, "mu <= L"),
        ({"class": {"dim": 3, "L": 1.0}}, "[class] needs mu"),
        ({"lr": "eta/2"}, "unknown symbol(s) eta"),
    ],
)
def test_bad_specs_are_refused_naming_what_is_wrong(change, message):
    d = {**tomllib.loads(MINIMAL), **change}
    with pytest.raises(FedTheoryError, match=None) as exc:
        BoundSpec.from_dict(d)
    assert message in str(exc.value)


def test_rho_needs_a_topology_and_a_search_needs_a_class():
    d = tomllib.loads(MINIMAL)
    with pytest.raises(FedTheoryError, match="needs a graph"):
        check({**d, "bound": "1 - eta*mu_f*(1 - rho)"}, search=2)
    del d["class"]
    with pytest.raises(FedTheoryError, match="nothing to check"):
        check(d)


def test_the_cli_refuses_in_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('algorithm = "fedavg"\nbound = [')
    assert main(["bound", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("fedtheory: error:") and "not valid TOML" in err and "\n" not in err
    assert main(["bound", str(tmp_path / "missing.toml")]) == 2
    assert main(["bound", str(bad), "--search", "-1"]) == 2


def test_the_shipped_paper_bounds_load_and_say_what_is_stated():
    shipped = paper_bounds()
    assert len(shipped) >= 3
    for name, path in shipped.items():
        spec = load_spec(path)
        assert spec.source and spec.stated, name
        if spec.constant is None:  # a bound without a free constant must be stated as a number
            assert "stated" in spec.stated.lower(), name
