"""The ``fedtheory rate`` contract (issue 13): flags, JSON keys, one-line exit-2 refusals."""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pytest

from fedtheory.analysis.exact import exact_rates
from fedtheory.cli import main
from fedtheory.cli.rate import _SolveProgress
from fedtheory.participation import make_participation
from fedtheory.problems import LeastSquaresProblem

KEYS = ("mean_rate", "mean_square_rate", "state_dim", "method")


@pytest.fixture()
def npz(tmp_path):
    rng = np.random.default_rng(0)
    A = rng.standard_normal((5, 8, 3))
    b = rng.standard_normal((5, 8))
    f = tmp_path / "p.npz"
    np.savez(f, A=A, b=b, lam=0.1)
    return f, LeastSquaresProblem(A, b, 0.1)


def _run(args, capsys):
    code = main(["rate", *args])
    out, err = capsys.readouterr()
    return code, out, err


BASE = ["--local-steps", "2", "--lr", "0.01"]


@pytest.mark.parametrize("part", ["full", "uniform", "weighted", "bernoulli"])
def test_contract_json_file(npz, tmp_path, capsys, part):
    f, prob = npz
    p = tmp_path / "p.npy"
    np.save(p, np.array([0.1, 0.2, 0.3, 0.25, 0.15]))
    out = tmp_path / "o.json"
    extra = [] if part == "full" else ["--clients-per-round", "2"]
    if part in ("weighted", "bernoulli"):
        extra += ["--probabilities", str(p)]
    code, said, err = _run(
        [
            "--problem-file",
            str(f),
            "--algorithm",
            "focus",
            "--participation",
            part,
            *extra,
            *BASE,
            "--json",
            str(out),
        ],
        capsys,
    )
    assert code == 0, err
    # --json OUT prints the same human summary as without it, then where the JSON went
    _, plain, _ = _run(
        ["--problem-file", str(f), "--algorithm", "focus", "--participation", part, *extra, *BASE],
        capsys,
    )
    assert plain.strip() and said == plain + f"wrote {out}\n"
    d = json.loads(out.read_text())
    for key in (*KEYS, "fixed_point", "stationary_mean", "stationary_mse"):
        assert key in d
    model = {
        "full": make_participation("full", 5),
        "uniform": make_participation("uniform", 5, 2),
        "weighted": make_participation("weighted", 5, 2, p=np.load(p)),
        "bernoulli": make_participation("bernoulli", 5, 2, np.load(p)),
    }[part]
    ref = exact_rates(prob, "focus", model, lr=0.01, local_steps=2)
    assert d["mean_square_rate"] == pytest.approx(ref.mean_square_rate, rel=1e-12)
    assert d["state_dim"] == 3 + 5 * 3
    np.testing.assert_allclose(d["fixed_point"], prob.x_star, rtol=1e-9)  # FOCUS is exact
    assert d["stationary_mse"] < 1e-20


def test_json_stdout_and_floor_of_fedavg(capsys):
    code, out, err = _run(
        [
            "--problem",
            "quadratic",
            "--algorithm",
            "fedavg",
            "--participation",
            "uniform",
            "-M",
            "4",
            "-K",
            "3",
            "--lr",
            "0.05",
            "--json",
            "-",
        ],
        capsys,
    )
    assert code == 0, err
    d = json.loads(out)  # stdout holds the JSON only; the summary went to stderr
    assert "mean-square rate" in err and "wrote" not in err + out
    assert set(KEYS) <= set(d)
    assert d["fixed_point"] is None and d["stationary_mse"] > 0
    assert d["stationary_mse"] == pytest.approx(d["stationary_bias2"] + d["stationary_variance"])
    assert d["constants"]["step_products"]["eta_K_L"] == pytest.approx(
        0.15 * max(d["constants"]["L_i"])
    )
    assert d["stated"].startswith("not stated")


def test_human_summary(capsys):
    code, out, _ = _run(
        ["--problem", "quadratic", "--algorithm", "scaffold", "-K", "2", "--lr", "0.05"], capsys
    )
    assert code == 0
    assert "mean-square rate" in out and "fixed point" in out and "stated rate" in out


def test_largest_stable_lr_flag(capsys):
    code, out, err = _run(
        [
            "--problem",
            "quadratic",
            "--algorithm",
            "fedavg",
            "-K",
            "2",
            "--lr",
            "0.05",
            "--largest-stable-lr",
            "--json",
            "-",
        ],
        capsys,
    )
    assert code == 0, err
    s = json.loads(out)["largest_stable_lr"]
    assert s["rate_lo"] < 1 and s["lo"] < s["hi"] <= s["lo"] * (1 + 1e-3)
    assert s["rate_hi"] is None or s["rate_hi"] >= 1  # None: unstable already in the mean


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--algorithm", "fedadam"], "sqrt"),
        (["--algorithm", "fedau"], "participation history"),
        (["--algorithm", "nosuch"], "unknown algorithm"),
        (["--algorithm", "focus", "--participation", "uniform"], "--clients-per-round"),
        (["--algorithm", "focus", "--participation", "uniform", "-M", "40"], "must lie in"),
        (["--algorithm", "focus", "--lr", "-1"], "--lr"),
    ],
)
def test_refusals_are_one_line_exit_2(npz, capsys, args, match):
    f, _ = npz
    base = {"--lr": "0.01", "--local-steps": "2"}
    for i in range(0, len(args) - 1):
        if args[i] in base:
            base.pop(args[i])
    flat = [x for kv in base.items() for x in kv]
    code, out, err = _run(["--problem-file", str(f), *flat, *args], capsys)
    assert code == 2
    assert match in err and len(err.strip().splitlines()) == 1 and not out


def test_missing_flags_and_bad_files(tmp_path, capsys):
    code, _, err = _run(["--algorithm", "focus"], capsys)
    assert code == 2 and "--local-steps" in err and "--lr" in err
    code, _, err = _run(["--algorithm", "focus", *BASE], capsys)
    assert code == 2 and "--problem-file F.npz or --problem NAME" in err
    bad = tmp_path / "bad.npz"
    bad.write_text("not an archive")
    code, _, err = _run(["--problem-file", str(bad), "--algorithm", "focus", *BASE], capsys)
    assert code == 2 and "npz" in err and len(err.strip().splitlines()) == 1
    code, _, err = _run(
        ["--problem-file", str(tmp_path / "none.npz"), "--algorithm", "focus", *BASE], capsys
    )
    assert code == 2 and "no such file" in err
    np.savez(tmp_path / "noA.npz", b=np.zeros((2, 3)))
    code, _, err = _run(
        ["--problem-file", str(tmp_path / "noA.npz"), "--algorithm", "focus", *BASE], capsys
    )
    assert code == 2 and "'A'" in err


def test_help_has_defaults_and_an_example(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["rate", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "(default: full)" in out and "fedtheory rate --problem" in out


def test_rate_progress_in_a_log_every_few_seconds_with_the_time_left(monkeypatch, capsys):
    """``fedtheory rate``'s solver progress off a terminal: a line at most every 10 s of the
    solve (the solver reports after every application), each with the applications done, the
    current rate and residual, and, once the residual falls, the time left to the tolerance."""
    monkeypatch.delenv("FEDTHEORY_NO_PROGRESS", raising=False)
    clock = [100.0]
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])
    progress = _SolveProgress(1e-10)
    residual, value = float("inf"), None
    for apps in range(1, 301):  # 0.7 s an application; a cycle every 20, residual / 3 each
        clock[0] += 0.7
        progress("mean-square rate", apps, value, residual)
        if apps % 20 == 0:
            value, residual = 0.8244125, (1e-2 if residual == float("inf") else residual / 3)
    progress.close()
    lines = capsys.readouterr().err.splitlines()
    seconds = [float(line.rsplit(" ", 2)[-2]) for line in lines]
    gaps = np.diff(seconds)
    assert len(lines) >= 15 and gaps.max() <= 15
    assert lines[0].startswith("[") and "first cycle" in lines[0]
    last = lines[-1]
    assert int(last[1 : last.index("]")]) >= 300 - 15  # a line within 10 s of the end
    assert "mean-square rate 0.8244125000" in last and "s left" in last
    # the residual falls by 3 every 20 applications: the applications left to 1e-10 are exact
    residual = float(last.split("residual ")[1].split(",")[0])
    more = int(last.split("(")[1].split(" more applications")[0])
    assert abs(more - 20 * math.log(residual / 1e-10) / math.log(3)) <= 2
