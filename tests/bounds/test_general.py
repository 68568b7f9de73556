"""Bounds over the theorems' own class (fedtheory.bounds.general, fedtheory bound --class): a
floor that holds on quadratics and fails over smooth strongly convex clients, with a file whose
replay through simulate exceeds it; FOCUS's rate, the same factor on both classes; unbounded as
an answer; the spec's class keys; quadratic draws that meet the class bounds; refusals by
their message."""

from __future__ import annotations

import json
import math
import shlex
import tomllib

import numpy as np
import pytest

from fedtheory.bounds import (
    CONSTANTS,
    BoundSpec,
    check,
    check_classes,
    check_general,
    general,
    load_spec,
    paper_bounds,
)
from fedtheory.bounds.general import class_constants
from fedtheory.bounds.instances import participation_model
from fedtheory.cli import main
from fedtheory.errors import FedTheoryError, NotInterpolableError
from fedtheory.problems import make_problem
from fedtheory.simulation import simulate

pytest.importorskip("PEPit", reason="the optional extra 'pep' is not installed")

#: The worst floor over quadratics the feasibility study measured (PEPit's exact quadratic
#: class, N = 2, K = 2, eta = 0.05, mu = 1, L = 10, zeta2 = 1); the bound is set 10% above it.
QUADRATIC_FLOOR = 0.0017308
FLOOR = f"""
algorithm = "fedavg"
clients = 2
local_steps = 2
lr = 0.05
quantity = "stationary_mse"
bound = "{1.1 * QUADRATIC_FLOOR!r}"

[class]
dim = [1, 2]
L = 10.0
mu = 1.0
zeta2 = 1.0
"""


def _run(capsys, *args) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr()


def test_a_floor_that_holds_on_quadratics_is_violated_over_the_class_with_a_file(tmp_path, capsys):
    spec = tmp_path / "floor.toml"
    spec.write_text(FLOOR)
    out = tmp_path / "res.json"
    code, _ = _run(
        capsys, "bound", str(spec), "--class", "both", "--search", "24", "--json", str(out)
    )
    assert code == 0
    res = json.loads(out.read_text())
    q, g = res["classes"]["quadratic"], res["classes"]["smooth-strongly-convex"]
    assert not q["violated"] and q["class"] == "quadratic" and q["solver"]["name"] == "exact oracle"
    assert q["worst"]["exact"] <= QUADRATIC_FLOOR * (1 + 1e-5)
    assert g["violated"] and not g["unbounded"] and res["violated"]
    assert g["solver"]["name"] == "CLARABEL" and g["solver"]["cross_check"]["name"] == "SCS"
    assert g["worst"]["exact"] > 1.1 * QUADRATIC_FLOOR
    assert res["ratio"] >= 1 and "holds on the class searched" in res["sentence"]
    for key in ("violated", "worst", "instances", "class", "unbounded", "solver"):
        assert key in res and key in g and key in q
    assert set(res["worst"]) >= {"stated", "exact", "ratio", "eta", "problem_file"}
    # the file replays through simulate and exceeds the bound (the tightened class's worst)
    path = g["worst"]["problem_file"]
    assert path == res["worst"]["problem_file"] and g["worst"]["min_margin"] > 0
    words = shlex.split(g["worst"]["command"])[1:] + ["--json", str(tmp_path / "r.json")]
    code, _ = _run(capsys, *words)
    assert code == 0
    replay = json.loads((tmp_path / "r.json").read_text())
    got = (replay["final_error"][0] * np.linalg.norm(replay["x_star"])) ** 2
    assert got > 1.1 * QUADRATIC_FLOOR
    assert got == pytest.approx(g["worst"]["value"], rel=1e-6)


FOCUS_RATE = {
    "algorithm": "focus",
    "clients": 2,
    "local_steps": 2,
    "lr": 0.05,
    "rounds": 5,
    "quantity": "mean_square_rate",
    "bound": "0.81",
    "class": {"dim": 1, "L": 10.0, "mu": 1.0, "zeta2": 0.0},
}


def test_focus_full_participation_rate_is_the_same_factor_on_both_classes():
    # the worst quadratic rate (the search finds both clients at mu) and the general class's
    # estimate W(5)/W(4) (performance estimation)
    res = check_classes(FOCUS_RATE, functions="both", search=24, seed=0, cross_check=False)
    q = max(e.exact for e in res.quadratic.instances if e.defined)
    g = res.general.instances[0].exact
    assert g == pytest.approx(q, rel=1e-5)
    assert not res.quadratic.violated and not res.general.violated
    assert "estimate" in res.general.cases[0].setting["estimate"]


def test_unbounded_is_an_answer(tmp_path, capsys):
    spec = tmp_path / "floor.toml"
    spec.write_text(FLOOR.replace("zeta2 = 1.0", "").replace('bound = "', 'bound = "1 + 0*'))
    out = tmp_path / "res.json"
    code, err = _run(
        capsys, "bound", str(spec), "--class", "smooth-strongly-convex", "--json", str(out)
    )
    assert code == 0
    res = json.loads(out.read_text())
    assert res["unbounded"] and "zeta2" in res["lacks"]
    assert res["worst"]["exact"] is None  # inf, written as null
    assert res["solver"]["status"] in ("unbounded", "unbounded_inaccurate")
    assert res["worst"]["problem_file"] is None and "unbounded" in res["sentence"]


@pytest.mark.parametrize(
    "change,words",
    [
        ({"quantity": "mean_rate"}, "mean_rate is the spectral radius"),
        ({"quantity": "rounds_to", "bound": "10"}, "bound mse_after_rounds"),
        ({"bound": "d * 0.01"}, "dimension-free"),
        ({"noise": 0.1}, "exact gradients"),
        ({"participation": "uniform", "clients_per_round": 1}, "stationary distribution"),
    ],
)
def test_what_the_general_class_refuses_is_named(change, words):
    spec = {**{k: v for k, v in BoundSpec.from_dict(_floor_dict()).to_dict().items()}, **change}
    with pytest.raises(FedTheoryError, match=words):
        check_classes(spec, functions="smooth-strongly-convex")


def _floor_dict() -> dict:
    return tomllib.loads(FLOOR)


def test_the_class_keys_of_a_spec():
    spec = BoundSpec.from_dict(_floor_dict())
    assert spec.functions == "quadratic" and spec.instance_class.zeta2 == 1.0 and spec.D2 == 1.0
    general = {
        **_floor_dict(),
        "class": {
            "functions": "smooth-strongly-convex",
            "L": 10.0,
            "mu": 0.0,
            "zeta2": 1.0,
            "D2": 2.0,
        },
    }
    spec = BoundSpec.from_dict(general)
    assert spec.functions == "smooth-strongly-convex" and spec.D2 == 2.0
    with pytest.raises(FedTheoryError, match="mu = 0 and a class without dim"):
        check_classes(spec, functions="both")
    with pytest.raises(FedTheoryError, match="functions must be one of"):
        BoundSpec.from_dict({**_floor_dict(), "class": {"functions": "convex", "L": 1, "mu": 0}})
    with pytest.raises(FedTheoryError, match="needs dim"):
        BoundSpec.from_dict({**_floor_dict(), "class": {"L": 10.0, "mu": 0.0}})
    with pytest.raises(FedTheoryError, match="check_classes"):
        check(spec)
    # the general class's constants are the class's, every name of the table but eta
    part = participation_model(spec, 2, None, None)
    consts = class_constants(spec, part, 2, 2)
    assert set(consts) | {"eta"} == set(CONSTANTS)
    assert consts["L_f"] == 10.0 and consts["mu_f"] == 0.0 and consts["zeta2"] == 1.0
    assert math.isnan(consts["d"]) and consts["D2"] == 2.0


def test_quadratic_draws_meet_the_class_bounds_with_equality():
    spec = {**_floor_dict(), "quantity": "mse_after_rounds", "rounds": 2, "bound": "100"}
    spec["class"] = {**spec["class"], "zeta2": 2.0, "D2": 3.0}
    res = check(spec, search=12, refine=False)
    for e in res.instances:
        assert e.constants["zeta2"] == pytest.approx(2.0, rel=1e-9)
        assert e.constants["D2"] == pytest.approx(3.0, rel=1e-9)


@pytest.mark.parametrize(
    "quantity", ["mse_after_rounds", "f_minus_f_star_after_rounds", "grad_norm2_after_rounds"]
)
def test_quantities_after_rounds_on_a_quadratic_are_the_run(quantity):
    spec = {
        "algorithm": "fedavg",
        "clients": 3,
        "local_steps": 2,
        "lr": 0.02,
        "rounds": 3,
        "quantity": quantity,
        "bound": "100",
        "problem": "quadratic",
    }
    res = check(spec, measure_seeds=0)
    prob = make_problem("quadratic")
    run = simulate(prob, "fedavg", "full", rounds=3, lr=0.02, local_steps=2, seeds=1)
    x = np.asarray(run.x_final[0])
    want = {
        "mse_after_rounds": float((x - prob.x_star) @ (x - prob.x_star)),
        "f_minus_f_star_after_rounds": float(prob.loss(x) - prob.f_star),
        "grad_norm2_after_rounds": float(np.sum(prob.full_grad(x) ** 2)),
    }[quantity]
    assert res.instances[0].exact == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("name", ["focus-thm1-rate", "fedavg-thm2-floor"])
def test_the_papers_files_on_both_classes(name, tmp_path, capsys):
    out = tmp_path / "res.json"
    code, _ = _run(capsys, "bound", name, "--class", "both", "--search", "4", "--json", str(out))
    assert code == 0
    res = json.loads(out.read_text())
    g = res["classes"]["smooth-strongly-convex"]
    assert g["instances"] == [] and g["skipped"]  # past the cap, or a sampled floor
    assert res["classes"]["quadratic"]["implied_constant"]["value"] is not None
    assert name in paper_bounds()


#: Settings besides lr and K: FedProx's prox_mu (a FedAvg replay floors at 0.0025597, not
#: 0.0026212), the server step and an algorithm's own option.
RUN_SETTINGS = [
    {"algorithm": "fedprox", "prox_mu": 0.5},
    {
        "quantity": "mse_after_rounds",
        "rounds": 2,
        "global_lr": 0.5,
        "bound": "0.1",
        "options": {"server_momentum": 0.5},
    },
]


@pytest.mark.parametrize("change", RUN_SETTINGS)
def test_the_replay_command_runs_the_algorithm_that_was_checked(change, tmp_path, capsys):
    # the run's own settings travel with the file into the command that replays it
    spec = {**_floor_dict(), **change}
    res = check_classes(
        spec, functions="smooth-strongly-convex", out_dir=tmp_path, cross_check=False
    ).to_dict()
    assert res["violated"]
    w = res["worst"]
    out = tmp_path / "r.json"
    code, _ = _run(capsys, *shlex.split(w["command"])[1:], "--json", str(out))
    assert code == 0
    replay = json.loads(out.read_text())
    got = (replay["final_error"][0] * np.linalg.norm(replay["x_star"])) ** 2
    assert got == pytest.approx(w["value"], rel=1e-6)


def test_a_papers_file_past_the_caps_says_why_in_one_line():
    # every sampled setting of focus-thm1-rate.toml is refused by size: the sentence summarizes
    # the refusals' own numbers (k^R paths with k = C(N, M), or a Gram), not the first of them
    spec = load_spec(paper_bounds()["focus-thm1-rate"])
    res = check_general(spec, cross_check=False, refuse_unsolved=False)
    assert not res.instances and len(res.skipped) == len(spec.clients) * len(spec.clients_per_round)
    paths = []
    for s in res.skipped:
        N, M = (int(w.split("=")[1]) for w in s["label"].split() if w[0] in "NM")
        assert s["gram"] is not None or s["paths"] is not None
        if s["paths"] is not None and s["draws"] is not None:
            assert s["draws"] == math.comb(N, M) and s["paths"] == s["draws"] ** s["rounds"]
            if s["paths"] > 1:
                paths.append(s)
    sentence = res.sentence()
    assert "\n" not in sentence and sentence.startswith("Not checked")
    lo, hi = min(paths, key=lambda s: s["paths"]), max(paths, key=lambda s: s["paths"])
    assert f"{lo['draws']}^{lo['rounds']} to {hi['draws']}^{hi['rounds']}" in sentence
    assert f"each of the {len(res.skipped)} settings" in sentence and "reduce" in sentence
    assert res.table() == ""  # nothing solved: the sentence alone says so


@pytest.mark.parametrize("name", ["fedavg-thm2-floor-full", "focus-thm1-rate-full"])
def test_the_reduced_papers_files_solve_on_both_classes(name):
    # the papers' shapes restricted to full participation: every setting solved over the
    # general class, never below the quadratic worst found there, and an implied constant on
    # each class
    spec = load_spec(paper_bounds()[name])
    res = check_classes(spec, functions="both", search=6, seed=0, cross_check=False)
    g = res.general
    assert not g.skipped and len(g.instances) == len(spec.clients) * len(spec.local_steps)
    rows = [r for r in res.by_setting() if math.isfinite(r["quadratic"])]  # settings drawn
    assert rows
    for row in rows:
        assert row["ratio"] >= 1 - 1e-5, row
    for r in (res.quadratic, g):
        assert r.implied is not None and math.isfinite(r.implied["value"]) and not r.violated


def test_a_violation_whose_file_cannot_be_made_keeps_its_verdict(tmp_path, monkeypatch):
    # the tightened worst case missing an interpolation inequality in float64: no file, the
    # reason in the sentence and the JSON, the values and the verdict unchanged
    spec = BoundSpec.from_dict(_floor_dict())
    want = check_general(spec, cross_check=False)

    def refuse(*args, **kwargs):
        raise NotInterpolableError("client 0, pair (0, 1): margin -1e-12")

    monkeypatch.setattr(general, "write_counterexample", refuse)
    res = check_general(spec, cross_check=False, out_dir=tmp_path)
    assert res.violated and want.violated and res.worst.exact == want.worst.exact
    assert not list(tmp_path.iterdir())
    assert "no file: client 0, pair (0, 1)" in res.sentence()
    d = res.to_dict()
    assert d["worst"]["problem_file"] is None and "margin -1e-12" in d["worst"]["reason"]
