"""The ``fedtheory participation`` command: JSON contract, errors, plot."""

import json

import numpy as np
import pytest

from fedtheory.cli import main


def run(capsys, *argv):
    code = main(["participation", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def files(tmp_path):
    u = np.random.default_rng(0).random(16) + 0.01
    np.save(tmp_path / "p.npy", u / u.sum())
    np.save(tmp_path / "pb.npy", np.linspace(0.05, 0.5, 16))
    bad = np.linspace(0.05, 0.5, 16)
    bad[3] = 1.5
    np.save(tmp_path / "bad.npy", bad)
    bad[3] = np.nan
    np.save(tmp_path / "nan.npy", bad)
    np.save(tmp_path / "p30.npy", np.full(30, 1 / 30))
    return tmp_path


@pytest.mark.parametrize("policy", ["redraw", "skip"])
def test_bernoulli_json_contract(capsys, files, policy):
    code, out, _ = run(
        capsys,
        "bernoulli",
        "--probabilities",
        str(files / "pb.npy"),
        "--empty-policy",
        policy,
        "--json",
    )
    assert code == 0
    rep = json.loads(out)
    p = np.linspace(0.05, 0.5, 16)
    p0 = np.prod(1 - p)
    want_pi = p if policy == "skip" else p / (1 - p0)
    np.testing.assert_allclose(rep["inclusion"], want_pi, rtol=1e-12)
    assert rep["method"] == "exact"
    np.testing.assert_allclose(sum(rep["q_mean"]), 1.0, atol=1e-12)
    assert len(rep["stderr"]) == 16 and max(rep["stderr"]) == 0
    # larger p -> larger weight, and every q_i < pi_i (client i shares the round)
    assert np.all(np.diff(rep["q_mean"]) > 0)


def test_uniform_weighted_markov_json(capsys, files):
    code, out, _ = run(capsys, "uniform", "--clients", "16", "--clients-per-round", "4", "--json")
    rep = json.loads(out)
    assert code == 0 and rep["method"] == "exact"
    np.testing.assert_allclose(rep["inclusion"], 0.25)
    np.testing.assert_allclose(rep["q_mean"], 1 / 16)

    code, out, _ = run(
        capsys,
        "weighted",
        "--clients-per-round",
        "4",
        "--probabilities",
        str(files / "p.npy"),
        "--json",
    )
    rep = json.loads(out)
    assert code == 0 and rep["method"] == "exact"
    assert rep["inclusion_method"] == "exact dynamic program"
    np.testing.assert_allclose(sum(rep["inclusion"]), 4.0, atol=1e-12)

    code, out, _ = run(capsys, "markov", "--clients", "16", "--clients-per-round", "4", "--json")
    rep = json.loads(out)
    assert code == 0 and rep["method"] == "exact"
    np.testing.assert_allclose(rep["inclusion"], 0.25)
    assert rep["model"]["mixing_time"][0] == 2.0


def test_weighted_monte_carlo_reports_stderr(capsys, files):
    code, out, _ = run(
        capsys, "weighted", "-M", "3", "--probabilities", str(files / "p30.npy"), "--json"
    )
    rep = json.loads(out)
    assert code == 0 and rep["method"] == "monte-carlo"
    se = np.array(rep["stderr"])
    assert np.all(se > 0)
    # uniform weights: exact pi = 3/30; the estimate sits within 4 standard errors
    z = np.abs(np.array(rep["inclusion"]) - 0.1) / np.array(rep["inclusion_stderr"])
    assert np.all(z < 4)


@pytest.mark.parametrize(("name", "needle"), [("bad.npy", "p[3] = 1.5"), ("nan.npy", "index (3,)")])
def test_bad_probability_file_is_one_line(capsys, files, name, needle):
    code, out, err = run(capsys, "bernoulli", "--probabilities", str(files / name), "--json")
    assert code != 0 and out == ""
    assert len(err.strip().splitlines()) == 1 and needle in err


def test_text_table_and_plot(capsys, files):
    png = files / "raster.png"
    code, out, _ = run(capsys, "cyclic", "-N", "6", "-M", "4", "--plot", str(png))
    assert code == 0 and png.stat().st_size > 1000
    assert "cyclic: N = 6" in out and "exact enumeration" in out
