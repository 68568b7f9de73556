"""The worst-case search: the gradient it climbs with (against finite differences of the
objective), its structured extremes, its coverage report, and the two corner cases a search
that only samples misses (both found at seeds 0-9 by benchmarks/bench_bounds.py --corners; two
seeds here)."""

from __future__ import annotations

import json
import math
import multiprocessing

import numpy as np
import pytest

from fedtheory.bounds import BoundSpec, check, implied_over, load_spec, named_instance, paper_bounds
from fedtheory.bounds.search import PATTERNS, _Climber, _draw, plan, planned, structured_draws
from fedtheory.cli import main


def _interior(spec: BoundSpec, draw):
    """The draw moved off the class's box faces (the clipping's kinks) and jittered, so that no
    two eigenvalues tie for the largest or smallest (the kinks of L = max_i L_i, mu)."""
    t = draw.theta.copy()
    jitter = np.random.default_rng(5).uniform(0.02, 0.06, t.size)
    for k, (lo, hi) in enumerate(draw.bounds(spec)):
        if lo is not None:
            t[k] = min(max(t[k], lo + jitter[k] * (hi - lo)), hi - jitter[k] * (hi - lo))
    return type(draw)(draw.N, draw.d, draw.K, draw.M, t, draw.label)


@pytest.mark.parametrize(
    "changes",
    [
        # a ratio objective through kappa_f, p_min, zeta2 and D2, Bernoulli weights drawn
        {"bound": "1 - eta*mu_f*K*N*p_min/(2*kappa_f) - 1e-3*zeta2/(1 + D2)"},
        # a free constant (the objective is the oriented c_i), weighted M of N
        {
            "participation": "weighted",
            "clients_per_round": 2,
            "bound": "1 - c*eta*mu*K*p_min",
            "constant": "c",
        },
        # the mean rate of FedAvg with a step set by L
        {
            "algorithm": "fedavg",
            "quantity": "mean_rate",
            "lr": "0.5/(K*L)",
            "bound": "1 - eta*mu_f/(2*kappa)",
        },
    ],
)
def test_the_climbing_gradient_is_the_objectives(changes):
    d = {
        "algorithm": "focus",
        "participation": "bernoulli",
        "clients": 4,
        "local_steps": 2,
        "lr": "1/(4*K*N*L)",
        "quantity": "mean_square_rate",
        "class": {"dim": 3, "L": 10.0, "mu": 1.0, "p_range": [0.05, 1.0]},
        **changes,
    }
    spec = BoundSpec.from_dict(d)
    draw = _interior(spec, _draw(spec, 7, 3))
    fun = _Climber(spec, draw, "test")
    f, g = fun(draw.theta)
    assert math.isfinite(f) and np.any(g != 0)
    rng = np.random.default_rng(0)
    for _ in range(2):
        u = rng.standard_normal(draw.theta.size)
        t = 1e-6
        fd = (fun(draw.theta + t * u)[0] - fun(draw.theta - t * u)[0]) / (2 * t)
        assert g @ u == pytest.approx(fd, rel=1e-4, abs=1e-9)


def test_structured_extremes_cover_every_pattern_and_setting():
    d = {
        "algorithm": "focus",
        "participation": "bernoulli",
        "clients": [4, 6, 8],
        "local_steps": [1, 3],
        "lr": "1/(4*K*N*L)",
        "quantity": "mean_square_rate",
        "bound": "1 - eta*mu_f",
        "class": {"dim": [2, 4], "L": 10.0, "mu": 1.0},
    }
    spec = BoundSpec.from_dict(d)
    draws = structured_draws(spec, 1000)
    labels = {x.label for x in draws}
    assert labels == {"extreme " + "/".join(p) for p in PATTERNS}
    assert {(x.N, x.d, x.K) for x in draws} == {
        (n, k, s) for n in (4, 8) for k in (2, 4) for s in (1, 3)
    }
    # the capped list still has every pattern and every extreme setting once
    few = structured_draws(spec, len(PATTERNS))
    assert {x.label for x in few} == labels
    # the patterns are what they say: "equal" has condition number 1, "one-L" one client at L
    for x in draws:
        q = x.parts(spec)
        if "equal" in x.label:
            assert np.ptp(q["lam"]) == 0
        if x.label.startswith("extreme one-L"):
            assert np.all(q["lam"][0] == 10.0) and np.all(q["lam"][1:] == 1.0)
        if x.label.endswith("rare"):
            assert q["r"][0] == 0.05 and np.all(q["r"][1:] == 1.0)


def test_the_budget_grows_with_the_class_dimension():
    small = BoundSpec.from_dict(
        {
            "algorithm": "fedavg",
            "clients": 4,
            "lr": "1/L_f",
            "quantity": "mean_rate",
            "bound": "1",
            "class": {"dim": 3, "L": 2.0, "mu": 1.0},
        }
    )
    big = BoundSpec.from_dict(
        {**small.to_dict(), "clients": 16, "class": {"dim": 10, "L": 2.0, "mu": 1.0}}
    )
    assert plan(small, 200).starts == 3 and plan(big, 200).starts == 7
    assert plan(big, 200).parameters == 16 * 10 + 16 * 45 + 16 * 10 + 10


#: Corner (i): gradient descent at eta = 1.005/L_f is (1 - eta mu_f)^2-fast only when
#: |1 - eta L_f| <= |1 - eta mu_f|, so the bound fails exactly for kappa_f in (1, 1.01005):
#: the ratio is 1 everywhere else (flat: no gradient, no Nelder-Mead climbs there).
CORNER_GD = {
    "algorithm": "fedavg",
    "participation": "full",
    "clients": 4,
    "local_steps": 1,
    "lr": "1.005/L_f",
    "quantity": "mean_square_rate",
    "bound": "(1 - eta*mu_f)**2",
    "class": {"dim": 3, "L": 10.0, "mu": 1.0},
}
#: Corner (ii): FOCUS under Bernoulli participation contracts like 1 - c eta mu_f K N with
#: c >= 0.065 on 250 random draws of this class at each of the seeds 0-9 (measured: the
#: smallest c_i over the draws is 0.065 to 0.30), but c_i = 0.052 where one client's spectrum
#: is at L, the others' at mu, and that client is rare (p = 0.05): the bound with c = 0.06 is
#: false, and the draws never come near the instance that breaks it.
CORNER_RARE = {
    "algorithm": "focus",
    "participation": "bernoulli",
    "clients": [4, 5, 6],
    "local_steps": [1, 2],
    "lr": "1/(4*K*N*L)",
    "quantity": "mean_square_rate",
    "bound": "1 - 0.06*eta*mu_f*K*N",
    "class": {"dim": [2, 3], "L": 10.0, "mu": 1.0, "p_range": [0.05, 1.0]},
}


@pytest.mark.parametrize("seed", [0, 7])
def test_a_violation_at_condition_numbers_1_to_1_01_is_found(seed):
    res = check(CORNER_GD, seed=seed)
    assert res.violated
    kf = res.worst.constants["kappa_f"]
    assert 1 < kf < 1.01005
    # the exact rate is the gradient-descent factor, |1 - eta L_f|^2 there
    assert res.worst.exact == pytest.approx(0.005**2, rel=1e-9)
    # ... and the random draws alone never come near: every one of them has ratio 1
    draws = [e for e in res.instances if e.label.startswith("draw ")]
    assert len(draws) == 200 and all(abs(e.ratio - 1) < 1e-9 for e in draws)


@pytest.mark.parametrize("seed", [0, 3])
def test_a_false_bound_only_a_rare_extreme_client_breaks_is_found(seed):
    res = check(CORNER_RARE, seed=seed)
    assert res.violated
    w = res.worst
    assert w.constants["p_min"] < 0.1 and w.constants["kappa"] > 9
    shape = {**CORNER_RARE, "bound": "1 - c*eta*mu_f*K*N", "constant": "c"}
    draws = [e for e in res.instances if e.label.startswith("draw ")]
    assert len(draws) == 200
    assert implied_over(shape, draws)["value"] > 0.06  # the draws alone say "holds"


def test_true_bounds_of_known_truth_still_hold():
    # gradient descent's exact factor is max(|1 - eta mu_f|, |1 - eta L_f|)^2 at any step
    for lr in ("1/L_f", "1.005/L_f", "1.9/L_f", "2/(L_f + mu_f)"):
        spec = {**CORNER_GD, "lr": lr, "bound": "Max(Abs(1 - eta*mu_f), Abs(1 - eta*L_f))**2"}
        res = check(spec, search=40, seed=1)
        assert not res.violated, (lr, res.sentence())
        assert res.worst.ratio == pytest.approx(1.0, abs=1e-9)


def test_the_report_says_what_the_search_covered():
    res = check(CORNER_GD, search=20, seed=0)
    cov = res.to_dict()["coverage"]
    assert cov["kappa_f"]["min"] == pytest.approx(1.0) and cov["kappa_f"]["class"] == [1.0, 10.0]
    assert cov["kappa_f"]["max"] > 5
    assert "The search reached kappa_f 1-" in res.sentence() or res.violated
    assert res.search["structured"] >= 1 and res.search["plan"]["starts"] == 3


def test_a_named_instance_takes_the_problems_own_setting_and_says_what_it_overrode():
    shipped = load_spec(paper_bounds()["focus-thm1-rate"])  # clients [4, 8], M [1, 2, 4]
    inst = named_instance(shipped, problem="figure4")
    assert inst.clients_per_round == 4 and inst.n_clients == 16  # 003 Figure 4's 4 of 16
    assert any("N = 16" in n and "clients = [4, 8]" in n for n in inst.notes)
    assert any(n.startswith("M = 4 (figure4's own setting)") for n in inst.notes)
    one = BoundSpec.from_dict({**shipped.to_dict(), "clients_per_round": 2, "problem": "figure4"})
    inst = named_instance(one, problem="quadratic")
    assert inst.clients_per_round == 2
    assert "--problem quadratic replaces the spec's problem = figure4" in inst.notes


def test_the_printed_result_gives_the_worst_instance_and_its_command(tmp_path, capsys):
    four = BoundSpec.from_dict({**CORNER_RARE, "clients": [4]})
    small = _draw(four, 0, 1).instance(four)
    npz = small.write(tmp_path / "four.npz")["problem_file"]
    toml = tmp_path / "rare.toml"
    toml.write_text(
        "\n".join(
            [
                'algorithm = "focus"',
                'participation = "bernoulli"',
                "clients = 8",
                "local_steps = [2, 1]",
                'lr = "1/(4*K*N*L)"',
                'quantity = "mean_square_rate"',
                'bound = "1 - 0.06*eta*mu_f*K*N"',
                "p = [0.5, 0.5, 0.9, 0.2]",
            ]
        )
    )
    out = tmp_path / "r.json"
    assert (
        main(["bound", str(toml), "--problem-file", npz, "--seeds", "0", "--json", str(out)]) == 0
    )
    text = capsys.readouterr().out
    assert "note: " + npz + " has N = 4 clients; the spec's clients = 8 apply" in text
    assert "note: K = 2 (the first of the spec's local_steps = [2, 1]" in text
    line = next(x for x in text.splitlines() if x.startswith("worst instance"))
    assert "N = 4, d = " in line and "K = 2" in line and "eta = " in line
    command = next(x for x in text.splitlines() if x.startswith("reproduce")).split(None, 1)[1]
    rate = tmp_path / "rate.json"
    assert main(command.split()[1:] + ["--json", str(rate)]) == 0
    w = json.loads(out.read_text())["worst"]
    assert json.loads(rate.read_text())["mean_square_rate"] == pytest.approx(w["exact"], rel=1e-12)


def test_a_shape_that_misses_the_dependence_on_k_says_so():
    # FOCUS's shape 1 - c eta mu K p_min over the shipped class at K = 1..12 (eta K L fixed):
    # per round FOCUS makes about one step of size eta N whatever K is, so the constant of the
    # binding instance falls like 1/K (7.8, 3.95, 2.65, 1.33, 0.665), and like 1/M (p_min =
    # M/N does not speed FOCUS up); the rate is linear in small steps, so eta is described.
    shipped = load_spec(paper_bounds()["focus-thm1-rate"]).to_dict()
    spec = {**shipped, "local_steps": [1, 2, 3, 6, 12], "lr": "0.05/(K*L)"}
    res = check(spec, search=40, seed=0)
    fit = res.to_dict()["shape_fit"]
    assert -1.1 < fit["K"]["ci"][0] <= fit["K"]["exponent"] <= fit["K"]["ci"][1] < -0.9
    assert fit["K"]["verdict"] == "does not describe"
    assert fit["M"]["verdict"] == "does not describe" and fit["M"]["exponent"] < -0.75
    assert fit["eta"]["verdict"] == "describes"
    assert "this shape does not describe the dependence on K" in res.sentence()
    c = np.array(fit["K"]["c"][0])  # the binding instance at K = 1, 2, 3, 6, 12
    assert c[0] / c[-1] == pytest.approx(12, rel=0.1)


def _daemon_search(queue) -> None:
    try:
        res = check(CORNER_GD, search=16, seed=2, refine=False, workers=2)
        queue.put([(e.label, e.exact) for e in res.instances])
    except Exception as exc:  # reported to the parent rather than left on stderr
        queue.put(repr(exc))


def test_a_search_inside_a_daemonic_process_runs_there_and_finds_the_same_instances():
    # a claim that ``fedtheory verify`` forks is daemonic and may not start a pool: the search
    # evaluates its draws in the process itself (draw i depends only on (seed, i))
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_daemon_search, args=(queue,), daemon=True)
    child.start()
    inside = queue.get(timeout=120)
    child.join(timeout=30)
    assert child.exitcode == 0
    here = check(CORNER_GD, search=16, seed=2, refine=False, workers=1)
    assert inside == [(e.label, e.exact) for e in here.instances]


def test_the_coverage_is_the_searchs_not_the_named_problems():
    # the built-in quadratic is not a member of the class (its own dimension and spectrum)
    res = check(CORNER_GD, search=12, seed=0, refine=False, problem="quadratic")
    named = res.instances[0]
    assert named.draw is None and named.sizes["d"] != 3
    cov = res.to_dict()["coverage"]
    assert cov["d"] == {"min": 3, "max": 3}
    assert cov["L_f"]["min"] >= 1.0 - 1e-12 and cov["L_f"]["max"] <= 10.0 + 1e-12


def test_an_ascents_instances_name_the_draw_or_extreme_it_began_at():
    # a floor has no gradient: the probe, then Nelder-Mead from the probe's best point
    res = check(load_spec(paper_bounds()["fedavg-thm2-floor"]), search=40, seed=0)
    climbed = [e.label for e in res.instances if " from " in e.label]
    assert any(x.startswith("refined from ") for x in climbed)
    assert all(x.count(" from ") == 1 for x in climbed), climbed


def test_the_search_reports_its_progress_in_a_log_and_finds_the_same_instances(monkeypatch, capsys):
    """``check(..., progress=True)`` off a terminal: lines counting the evaluations done of
    those planned (``[k/total]``) up to the total, the phase, the binding constant so far and
    the time left; the instances are the same as without progress, in one process or in two
    workers cut into pieces."""
    monkeypatch.delenv("FEDTHEORY_NO_PROGRESS", raising=False)
    spec = {**CORNER_RARE, "bound": "1 - c*eta*mu_f*K*N", "constant": "c"}
    quiet = check(spec, search=24, seed=3, workers=1)
    capsys.readouterr()
    loud = check(spec, search=24, seed=3, workers=2, progress=True)
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "bound search" in ln]
    assert [(e.label, e.exact) for e in loud.instances] == [
        (e.label, e.exact) for e in quiet.instances
    ]
    total = planned(BoundSpec.from_dict(spec), 24)
    counts = [int(ln[1 : ln.index("/")]) for ln in lines]
    assert counts == sorted(counts) and counts[-1] == total
    assert all(ln.startswith(f"[{k}/{total}]") for k, ln in zip(counts, lines, strict=True))
    assert any("24 random draws" in ln for ln in lines)
    assert any("structured extremes" in ln for ln in lines)
    assert any("ascent" in ln for ln in lines)
    assert any("s left" in ln for ln in lines)
    assert "binding c " in lines[-1]
    # the binding c reported is the smallest c_i of what was evaluated
    c = float(lines[-1].split("binding c ")[1].split(" ")[0])
    assert c == pytest.approx(min(e.c for e in loud.instances if e.condition_met), rel=1e-5)
