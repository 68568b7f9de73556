"""The ``fedtheory simulate`` contract: flags, JSON keys, one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fedtheory.cli import main
from fedtheory.problems import LeastSquaresProblem


@pytest.fixture()
def npz(tmp_path):
    rng = np.random.default_rng(0)
    A = rng.standard_normal((6, 10, 3))
    b = rng.standard_normal((6, 10))
    f = tmp_path / "p.npz"
    np.savez(f, A=A, b=b, lam=0.1)
    return f, A, b


def _run(args, capsys):
    code = main(["simulate", *args])
    out, err = capsys.readouterr()
    return code, out, err


BASE = ["--rounds", "20", "--local-steps", "2", "--lr", "0.01"]


@pytest.mark.parametrize("part", ["full", "uniform", "weighted", "bernoulli", "markov"])
def test_contract_json(npz, tmp_path, capsys, part):
    f, A, b = npz
    p = tmp_path / "p.npy"
    np.save(p, np.full(6, 1 / 6))
    out = tmp_path / "o.json"
    extra = [] if part == "full" else ["--clients-per-round", "2"]
    if part in ("weighted",):
        extra += ["--probabilities", str(p)]
    code, _, err = _run(
        [
            "--problem-file",
            str(f),
            "--algorithm",
            "focus",
            "--participation",
            part,
            *extra,
            *BASE,
            "--seeds",
            "3",
            "--seed",
            "4",
            "--json",
            str(out),
        ],
        capsys,
    )
    assert code == 0, err
    d = json.loads(out.read_text())
    for key in ("algorithm", "rounds", "x_star", "error", "x_final"):
        assert key in d
    assert d["algorithm"] == "focus" and d["rounds"] == 20
    err_arr = np.array(d["error"])
    assert err_arr.shape == (3, 21) and np.allclose(err_arr[:, 0], 1.0)  # x_0 = 0
    xs = LeastSquaresProblem(A, b, 0.1).x_star
    assert np.allclose(d["x_star"], xs)
    xf = np.array(d["x_final"])
    assert xf.shape == (3, 3)
    assert np.allclose(np.linalg.norm(xf - xs, axis=1) / np.linalg.norm(xs), err_arr[:, -1])


@pytest.mark.parametrize("alg", ["fedavg", "scaffold", "focus", "sg-focus", "fedau", "mifa"])
def test_contract_algorithms(npz, capsys, alg):
    f, _, _ = npz
    code, out, err = _run(
        ["--problem-file", str(f), "--algorithm", alg.upper(), *BASE, "--json", "-"], capsys
    )  # any case; --json - prints the JSON (only) to stdout
    assert code == 0, err
    assert json.loads(out)["algorithm"] == alg


def test_list(capsys):
    code, out, _ = _run(["--list"], capsys)
    assert code == 0
    for word in ("fedavg", "scaffold", "focus", "sg-focus", "fedau", "mifa", "figure4", "markov"):
        assert word in out


def test_bad_input_one_line_nonzero(npz, tmp_path, capsys):
    f, A, b = npz
    bad_shape = tmp_path / "shape.npz"
    np.savez(bad_shape, A=A, b=b[:, :4])
    nan = tmp_path / "nan.npz"
    A2 = A.copy()
    A2[0, 0, 0] = np.nan
    np.savez(nan, A=A2, b=b)
    ok = ["--problem-file", str(f), "--algorithm", "fedavg"]
    cases = [
        (
            ["--problem-file", str(tmp_path / "missing.npz"), "--algorithm", "fedavg", *BASE],
            "no such file",
        ),
        (["--problem-file", str(bad_shape), "--algorithm", "fedavg", *BASE], "shape"),
        (["--problem-file", str(nan), "--algorithm", "fedavg", *BASE], "non-finite"),
        ([*ok, "--rounds", "5", "--local-steps", "2", "--lr", "0"], "step size"),
        ([*ok, "--rounds", "5", "--local-steps", "2", "--lr", "-1"], "step size"),
        ([*ok, "--rounds", "5", "--local-steps", "0", "--lr", "0.1"], "local steps"),
        ([*ok, "--participation", "uniform", "--clients-per-round", "7", *BASE], "exceeds"),
        (["--problem-file", str(f), "--algorithm", "nope", *BASE], "unknown algorithm"),
        ([*ok, "--participation", "weighted", "--clients-per-round", "2", *BASE], "probabilit"),
    ]
    for args, msg in cases:
        code, _, err = _run(args, capsys)
        assert code != 0
        lines = err.strip().splitlines()
        assert len(lines) == 1 and msg in lines[0].lower(), (args, err)


def test_divergence_is_reported_not_a_crash(npz, tmp_path, capsys):
    f, _, _ = npz
    out = tmp_path / "d.json"
    code, _, err = _run(
        [
            "--problem-file",
            str(f),
            "--algorithm",
            "fedavg",
            "--rounds",
            "80",
            "--local-steps",
            "3",
            "--lr",
            "5",
            "--json",
            str(out),
        ],
        capsys,
    )
    assert code == 0, err
    d = json.loads(out.read_text())
    assert d["diverged"] == [True] and d["error"][0][-1] is None


def test_full_participation_refuses_clients_per_round(npz, capsys):
    """All clients take part: a client count would be recorded but not used (one line)."""
    f, _, _ = npz
    code, _, err = _run(
        [
            "--problem-file",
            str(f),
            "--algorithm",
            "focus",
            "--participation",
            "full",
            "--clients-per-round",
            "3",
            *BASE,
        ],
        capsys,
    )
    assert code == 2 and err.count("\n") == 1
    assert "full participation does not use clients per round M" in err


def test_cluster_participation_samples_m_per_cluster(npz, tmp_path, capsys):
    """``--participation cluster``: m clients in each of C equal clusters (000 Algorithm 2)."""
    f, _, _ = npz
    out = tmp_path / "o.json"
    args = ["--problem-file", str(f), "--algorithm", "cafga", "--participation", "cluster"]
    args += ["--clusters", "2", "--clients-per-round", "1", *BASE, "--json", str(out)]
    code, _, err = _run(args, capsys)
    assert code == 0, err
    assert len(json.loads(out.read_text())["error"][0]) == 21
    code, _, err = _run([*args[:-6], "--clusters", "4", "-M", "1", *BASE], capsys)
    assert code == 2 and "clusters = 4 must divide the N = 6 clients into equal clusters" in err
    assert err.count("\n") == 1
    code, _, err = _run([*args[:-6], "--clusters", "2", "-M", "4", *BASE], capsys)
    assert code == 2 and "clients_per_round = 4 exceeds the cluster size n = 3" in err


def test_metrics_on_demand_and_the_rounds_recorded(npz, tmp_path, capsys):
    """``--record-every K`` records the metrics at 0, K, 2K, ... and the last round (null in
    between, listed in ``recorded_rounds``); ``--metrics`` computes only those named; the
    recorded values are the every-round run's, bit for bit."""
    f, _, _ = npz
    every, sparse = tmp_path / "every.json", tmp_path / "sparse.json"
    head = [
        "--problem-file",
        str(f),
        "--algorithm",
        "focus",
        "--participation",
        "uniform",
        "-M",
        "2",
    ]
    assert _run([*head, *BASE, "--json", str(every)], capsys)[0] == 0
    args = [*head, *BASE, "--record-every", "6", "--metrics", "error", "--json", str(sparse)]
    assert _run(args, capsys)[0] == 0
    a, b = json.loads(every.read_text()), json.loads(sparse.read_text())
    assert b["recorded_rounds"] == [0, 6, 12, 18, 20] and a["recorded_rounds"] == list(range(21))
    for r in range(21):
        if r in b["recorded_rounds"]:
            assert b["error"][0][r] == a["error"][0][r]
        else:
            assert b["error"][0][r] is None
    assert "tracking_residual" not in b and "grad_norm2" not in b  # not asked: not there
    code, _, err = _run([*head, *BASE, "--metrics", "eror"], capsys)
    assert code == 2 and "unknown metrics ['eror']" in err
