"""The local-steps study (claims A2-A4), its CLI, and the 000 Table 7 communication-time model."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest

from fedtheory.analysis.comm_time import (
    TABLE5_ROUNDS_TO_78,
    TABLE7_HOURS,
    CommTimeModel,
    implied_round_time,
    rounds_to_target,
    time_to_target,
)
from fedtheory.cli import main
from fedtheory.errors import AssumptionError, FedTheoryError
from fedtheory.experiments.local_steps import (
    assumption_violations,
    fit_exponents,
    plot_local_steps,
    plot_rho_ablation,
    run_local_steps_study,
    run_rho_ablation,
    step_sizes,
    study_problem,
)
from fedtheory.experiments.time_to_target import run_time_to_target
from fedtheory.io import dumps


@pytest.fixture(scope="module")
def tiny():
    return run_local_steps_study(
        ["fedamsgrad", "afga", "hafed"],
        Ks=(1, 2, 4),
        Rs=(12, 24),
        Ms=(4,),
        topologies=("ring", "complete"),
        n_clients=12,
        clusters=2,
        dim=3,
        seeds=3,
        progress=False,
    )


def test_schedules_are_the_theorems():
    """000 Cor. 4.7, 004 Cor. 5.11, Wang et al. 2022b (as restated in 004 Sec. 5.1)."""
    kw = dict(R=100, K=4, M=5, N=50, c=0.1, c_l=2.0)
    assert step_sizes("afga", **kw) == pytest.approx((0.1 * 50 * 2 / 5, 2.0 / (10 * 4)))
    assert step_sizes("fedamsgrad", **kw) == pytest.approx((0.1 * math.sqrt(20), 2.0 / 40))
    assert step_sizes("hafed", **kw) == pytest.approx((0.1 * math.sqrt(20), 2.0 / 20))
    with pytest.raises(AssumptionError, match="constant"):
        step_sizes("afga", **{**kw, "c": 0.0})


def test_assumption_flags_name_the_violated_condition():
    """Setting 2 (N = 50, M = 5): only rho <= 5/55 meets 000 Thm 4.6; R < K M is flagged."""
    ring = assumption_violations("afga", R=500, K=24, M=5, N=50, rho=0.995)
    assert len(ring) == 1 and "M/(M+N) = 0.09091" in ring[0]
    assert assumption_violations("afga", R=500, K=24, M=5, N=50, rho=0.0) == []
    short = assumption_violations("fedamsgrad", R=100, K=24, M=5, N=50, rho=None)
    assert short == ["R = 100 < K M = 120 (Wang et al. 2022b; 000 Remark 4.8)"]
    # 004 default: 4 clusters of 8, m = 2, ring rho_max = 0.805 > 1/(2 sqrt 6) = 0.204.
    ha = assumption_violations("hafed", R=1000, K=48, M=8, N=32, rho=0.805, clusters=4)
    assert any("1/(2 sqrt(n-m))" in v for v in ha) and len(ha) == 1
    assert assumption_violations("dsgd", R=10, K=1, M=5, N=50, rho=0.5)[0].startswith("no rate")


def test_study_problem_has_the_requested_heterogeneity():
    p = study_problem("pl", 20, 4, sigma=0.3, sigma_g=2.5, seed=3)
    assert np.sqrt((p.u**2).sum(axis=1).mean()) == pytest.approx(2.5)
    assert p.noise == 0.3
    q = study_problem("quadratic", 20, 4, sigma=0.0, sigma_g=1.5, seed=3)
    assert q.sigma_g == pytest.approx(1.5)
    with pytest.raises(AssumptionError, match="unknown study problem"):
        study_problem("mnist", 20, 4, sigma=0.0, sigma_g=1.0)


def test_tiny_study_fits_and_flags(tiny):
    runs = tiny.runs
    assert len(runs) == 6 + 2 * 6 + 2 * 6  # fedamsgrad runs once, the gossip ones per graph
    assert all(r.avg.shape == (3,) and np.isfinite(r.avg).all() for r in runs)
    assert all((r.min <= r.avg + 1e-12).all() for r in runs)
    k_fit = tiny.fit("fedamsgrad", "K")
    assert k_fit.stated == 0.5 and k_fit.n_seeds == 3 and k_fit.x == [1.0, 2.0, 4.0]
    assert k_fit.ci_low <= k_fit.exponent <= k_fit.ci_high
    assert tiny.fit("afga", "K", "complete").stated == -0.5
    assert tiny.fit("afga", "R", "ring").stated == -0.5
    # R = 12 < K M = 16 at K = 4: outside Cor. 4.7, flagged, not dropped.
    r = next(r for r in runs if (r.algorithm, r.topology, r.R, r.K) == ("afga", "complete", 12, 4))
    assert r.outside == ["R = 12 < K M = 16 (000 Cor. 4.7)"]
    assert next(r for r in runs if r.algorithm == "afga" and r.topology == "ring").rho > 0.5
    hafed = next(r for r in runs if r.algorithm == "hafed" and r.topology == "complete")
    assert hafed.rho == pytest.approx(0.0, abs=1e-12) and hafed.clusters == 2

    d = json.loads(dumps(tiny.to_dict()))
    assert {"runs", "fits", "config", "rho_trends"} <= set(d)
    back = type(tiny).from_dict(d)  # the --json file re-plots without re-running
    assert back.table() == tiny.table()
    np.testing.assert_array_equal(back.runs[3].avg, tiny.runs[3].avg)
    assert "exponent" in tiny.table() and "outside assumptions" in tiny.table()


def test_fit_recovers_a_planted_exponent(tiny):
    """fit_exponents on runs whose metric is exactly 3 K^-0.5 (times a seed factor)."""

    runs = []
    for r in tiny.runs:
        if r.algorithm == "fedamsgrad" and r.R == 12:
            q = copy.copy(r)
            q.avg = 3.0 * r.K**-0.5 * np.array([1.0, 2.0, 0.5])
            q.min = q.avg / 2
            runs.append(q)
    (fit,) = [f for f in fit_exponents(runs) if f.variable == "K" and f.metric == "avg"]
    assert fit.exponent == pytest.approx(-0.5, abs=1e-12) and fit.agrees is False  # stated +1/2


def test_rho_ablation_and_plots(tmp_path, tiny):
    res = run_rho_ablation(
        ["afga"],
        topologies=("complete", "ring"),
        K=2,
        R=10,
        M=4,
        n_clients=12,
        dim=3,
        seeds=2,
        progress=False,
    )
    (trend,) = res.rho_trends
    assert trend["rho"][0] < trend["rho"][1] and trend["topologies"] == ["complete", "ring"]
    p1 = plot_local_steps(tiny, tmp_path / "k.png")
    p2 = plot_rho_ablation(res, tmp_path / "rho.png")
    assert p1.stat().st_size > 1000 and p2.stat().st_size > 1000


def test_study_cli_json_and_plot(tmp_path, capsys):
    out, png = tmp_path / "s.json", tmp_path / "s.png"
    args = [
        "study",
        "local-steps",
        "--algorithms",
        "fedamsgrad,afga",
        "--topologies",
        "complete",
        "--K",
        "1,2",
        "--R",
        "10",
        "--M",
        "2",
        "--N",
        "6",
        "--dim",
        "2",
        "--seeds",
        "2",
        "--json",
        str(out),
        "--plot",
        str(png),
    ]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "fedamsgrad" in text and "afga" in text and "wall time" in text
    data = json.loads(out.read_text())
    assert {f["algorithm"] for f in data["fits"]} == {"fedamsgrad", "afga"}
    assert png.stat().st_size > 1000


def test_study_cli_bad_input_is_one_line(capsys):
    assert main(["study", "local-steps", "--M", "60", "--N", "50", "--seeds", "1"]) == 2
    err = capsys.readouterr().err
    assert "exceed N = 50" in err and err.count("\n") == 1
    assert main(["study", "local-steps", "--algorithms", "nope", "--seeds", "1"]) == 2
    assert "unknown algorithm" in capsys.readouterr().err


# --- 000 Table 7 ---------------------------------------------------------------------------------
def test_time_to_target_runs_gossip_and_server_only_algorithms_side_by_side():
    """Each algorithm gets the settings it reads (FedAMSGrad no topology, CAFGA its clusters)."""
    res = run_time_to_target(
        ("fedamsgrad", "afga", "cafga"),
        (1.0,),
        rounds=3,
        local_steps=2,
        n_clients=10,
        clients_per_round=2,
        clusters=2,
        seeds=1,
    )
    assert set(res.results) == {"fedamsgrad", "afga", "cafga"}
    assert [t.algorithm for t in res.targets[1.0]] != []
    assert "1.0:" in repr(res) and len(repr(res)) < 200
    assert set(json.loads(res.to_json())) == {"model", "targets"}


def test_comm_time_per_round():
    """t_cc = 1.8 s, t_cs = 18 s (000 App. B.1.1), K = 24: FedAMSGrad 2 t_cs; AFGA adds the
    broadcast hop and K gossip transfers; DSGD has no server."""
    m = CommTimeModel()
    assert m.round_time("fedamsgrad", 24) == pytest.approx(36.0)
    assert m.round_time("afga", 24) == pytest.approx(36.0 + 25 * 1.8)
    assert m.round_time("afga-adapted", 24) == pytest.approx(36.0 + 24 * 1.8)
    assert m.round_time("dsgd", 24) == pytest.approx(24 * 1.8)
    assert CommTimeModel(down=0).round_time("fedamsgrad", 5) == pytest.approx(18.0)
    with pytest.raises(FedTheoryError, match="unknown algorithm 'nope'"):
        m.round_time("nope", 1)


def test_time_to_target():
    curves = np.array([[5.0, 3.0, 1.0, 0.5], [5.0, 4.0, 3.0, 2.0], [5.0, np.nan, 0.1, 0.1]])
    assert rounds_to_target(curves, 1.0).tolist() == [2.0, math.inf, 2.0]
    t = time_to_target(curves, 1.0, algorithm="afga", local_steps=24)
    assert t.seconds[0] == pytest.approx(2 * 81.0) and t.reached == 2
    assert t.median_hours == pytest.approx(2 * 81.0 / 3600)
    acc = rounds_to_target([[0.1, 0.5, 0.8]], 0.7, higher_is_better=True)
    assert acc.tolist() == [2.0]


def test_table7_implied_round_time_is_far_from_the_simple_model():
    """Table 7 with Table 5's 302 AFGA rounds implies ~2664 s per round, not 81 s."""
    implied = implied_round_time(TABLE7_HOURS["afga"][78], TABLE5_ROUNDS_TO_78["afga"])
    assert implied == pytest.approx(2664.0)
    assert implied / CommTimeModel().round_time("afga", 24) > 30
