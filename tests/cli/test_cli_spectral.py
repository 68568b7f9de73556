"""The `fedtheory spectral` contract: names, flags and JSON keys other tools rely on."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from fedtheory.cli import main
from fedtheory.graphs import closedforms as CF
from fedtheory.graphs.plot import plot_rho_versus_n, rho_versus_n

CONTRACT_KEYS = {"rho_norm", "rho_lambda2", "one_minus_rho", "doubly_stochastic", "connected", "n"}


def run(capsys, *argv):
    rc = main(["spectral", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_topology_json(capsys):
    rc, out, _ = run(capsys, "ring", "--n", "50", "--json")
    d = json.loads(out)
    assert rc == 0 and CONTRACT_KEYS <= d.keys()
    assert d["n"] == 50 and d["connected"] is True and d["doubly_stochastic"] is True
    assert round(d["rho_norm"], 3) == 0.995 and d["rho_lambda2"] == pytest.approx(d["rho_norm"])
    assert d["one_minus_rho"] == pytest.approx(CF.ring_gap(50)[1], rel=1e-12)
    assert d["closed_form"]["rho"] == pytest.approx(d["rho_norm"], abs=1e-12)


def test_matrix_json(capsys, tmp_path):
    W = np.full((8, 8), 1 / 8)
    np.save(tmp_path / "W.npy", W)
    rc, out, _ = run(capsys, "--matrix", str(tmp_path / "W.npy"), "--json")
    d = json.loads(out)
    assert rc == 0 and CONTRACT_KEYS <= d.keys() and d["n"] == 8 and d["rho_norm"] < 1e-12


def test_edges_metropolis_unless_weights(capsys, tmp_path):
    f = tmp_path / "edges.txt"
    f.write_text("# a star\n0 1\n0 2\n0 3\n")
    rc, out, _ = run(capsys, "--edges", str(f), "--json")
    d = json.loads(out)
    assert rc == 0 and d["weights"] == "metropolis" and d["n"] == 4
    assert d["rho_norm"] == pytest.approx(0.75)  # MH star: w_0j = 1/4, leaves keep 3/4
    f.write_text("0 1\n1 2\n2 3\n3 0\n")
    rc, out, _ = run(capsys, "--edges", str(f), "--weights", "uniform", "--json")
    assert rc == 0 and json.loads(out)["rho_norm"] == pytest.approx(CF.ring_gap(4)[0])


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda: np.ones((2, 3)) / 3, "square"),
        (lambda: np.array([[0.5, np.nan], [0.5, 0.5]]), "non-finite"),
        (lambda: np.array([[1.5, -0.5], [-0.5, 1.5]]), "negative entry"),
        (lambda: np.array([[0.5, 0.5], [0.3, 0.7]]), "not column stochastic: column 0"),
        (lambda: np.ones((1, 1)), "at least 2 nodes"),
    ],
)
def test_bad_matrix_one_line_no_traceback(capsys, tmp_path, make, needle):
    np.save(tmp_path / "W.npy", make())
    rc, out, err = run(capsys, "--matrix", str(tmp_path / "W.npy"), "--json")
    assert rc != 0 and out == ""
    assert len(err.strip().splitlines()) == 1 and needle in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["moebius", "--n", "5"], "unknown topology 'moebius'"),
        (["ring", "--n", "1"], "must be >= 2"),
        (["ring"], "needs -N/--clients"),
        (["hypercube", "--n", "12"], "power of 2"),
        (["path", "--n", "5", "--weights", "uniform"], "regular graph"),
        (["--matrix", "missing.npy"], "no such file"),
        (["--setting", "N=5,Q=1"], "unknown key"),
    ],
)
def test_bad_arguments_one_line(capsys, argv, needle):
    rc, _, err = run(capsys, *argv)
    assert rc != 0 and len(err.strip().splitlines()) == 1 and needle in err


def test_disconnected_is_reported_not_an_error(capsys, tmp_path):
    W = np.eye(5)
    W[:2, :2] = 0.5
    np.save(tmp_path / "W.npy", W)
    rc, out, err = run(capsys, "--matrix", str(tmp_path / "W.npy"), "--json")
    d = json.loads(out)
    assert rc == 0 and d["connected"] is False and d["rho_norm"] == 1.0
    assert d["one_minus_rho"] == 0.0 and "no gossip theorem applies" in err


def test_user_setting_and_clusters(capsys):
    rc, out, _ = run(
        capsys,
        "ring",
        "--n",
        "8",
        "--clusters",
        "4",
        "--setting",
        "N=32,M=8,C=4,m=2,K=48",
        "--json",
    )
    d = json.loads(out)
    assert rc == 0 and d["clusters_gaps"]["rho_max"] == pytest.approx(CF.ring_gap(8)[0])
    c = d["conditions"][0]
    assert c["hafed"]["holds"] is False and c["hafed"]["C_less_than_n"] is True
    assert c["d_tau_rho"] == pytest.approx(1 / CF.ring_gap(8)[1])


def test_report_table_json_and_text(capsys):
    argv = ["--report", "--draws", "2", "--topologies", "ring,complete,erdos-renyi"]
    rc, out, _ = run(capsys, *argv, "--json")
    d = json.loads(out)
    assert rc == 0 and len(d["settings"]) == 5 and len(d["paper_values"]) == 8
    rows = {r["topology"]: r for r in d["settings"][1]["rows"]}  # 000 Setting 2, N = 50, M = 5
    assert rows["complete"]["afga_holds"] is True and rows["ring"]["afga_holds"] is False
    assert rows["ring"]["afga_bound"] == pytest.approx(5 / 55)
    rc, out, _ = run(capsys, *argv, "--setting", "N=20,M=4,C=2,m=2")
    assert rc == 0 and "000 Setting 1" in out and "N=20,M=4,C=2,m=2" in out and "HA-Fed" in out


def test_plots(capsys, tmp_path):
    rc, out, _ = run(capsys, "ring", "--n", "8", "--plot", str(tmp_path / "g.png"), "--json")
    assert rc == 0 and (tmp_path / "g.png").stat().st_size > 1000

    data = rho_versus_n(("ring", "hypercube", "erdos-renyi"), (4, 8, 12), draws=2)
    assert data["hypercube"]["n"] == [4, 8]
    assert data["ring"]["rho"] == pytest.approx([CF.ring_gap(n)[0] for n in (4, 8, 12)])
    assert plot_rho_versus_n(tmp_path / "f.png", data).stat().st_size > 1000


def test_subprocess_once(tmp_path):
    # The real entry point: JSON on stdout, the warning for a disconnected W on stderr, exit 0.
    W = np.eye(4)
    W[:2, :2] = 0.5
    np.save(tmp_path / "W.npy", W)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "fedtheory",
            "spectral",
            "--matrix",
            str(tmp_path / "W.npy"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert CONTRACT_KEYS <= d.keys() and d["connected"] is False and d["rho_norm"] == 1.0
    assert "no gossip theorem applies" in r.stderr and "Traceback" not in r.stderr
