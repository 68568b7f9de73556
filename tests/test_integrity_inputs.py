"""Integrity outside the sweep store: estimates before work, divergence by growth, and inputs
that were answered with a traceback or accepted as nonsense. Python: a typed
``FedTheoryError``; command line: exit 2 and one line (exit 3 for divergence when asked)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fedtheory.algorithms.base import seed_sequences
from fedtheory.cli import build_parser, main
from fedtheory.cli.participation import build_model
from fedtheory.errors import AssumptionError, FedTheoryError, UnknownOptionError
from fedtheory.problems import ProblemFile, make_problem
from fedtheory.simulation import simulate
from fedtheory.validation import (
    announce,
    check_int,
    check_memory,
    max_memory,
    memory_limit,
    parse_bytes,
)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, *argv) -> str:
    """The one error line of a refused command line."""
    code, _, err = run(capsys, *argv)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("fedtheory: error: "), err
    return lines[0]


# --- estimates before work --------------------------------------------------------------------


def test_parse_bytes():
    assert parse_bytes("4G") == 4 * 2**30 and parse_bytes("512MiB") == 512 * 2**20
    assert parse_bytes(" 2 GB") == 2 * 2**30 and parse_bytes("1.5e9") == 1_500_000_000
    assert parse_bytes(100) == 100 and parse_bytes("1k") == 1024
    for bad in ("", "x", "-1", "0", "1Q", "nan", "1e999", True, None):
        with pytest.raises(AssumptionError, match="must be a size such as 4G"):
            parse_bytes(bad)


def test_max_memory_sets_the_limit_of_every_estimate(monkeypatch):
    monkeypatch.setenv("FEDTHEORY_MEMORY_LIMIT", str(2**30))
    assert memory_limit() == (2**30, "of memory available on this machine")
    with max_memory("10M", source="--max-memory"):
        assert memory_limit() == (10 * 2**20, "allowed by --max-memory")
        with max_memory(None):  # None changes nothing
            assert memory_limit()[0] == 10 * 2**20
        with pytest.raises(AssumptionError) as err:
            check_memory("a thing", 2**25, hint="make it smaller")
        assert str(err.value) == (
            "a thing needs about 32.0 MiB, more than the 10.0 MiB allowed by --max-memory: make "
            "it smaller; --max-memory SIZE (FEDTHEORY_MEMORY_LIMIT in the environment) sets the "
            "limit"
        )
    with max_memory(2**40):  # above the memory available: the user's call
        check_memory("a large thing", 2**35)
    assert memory_limit()[0] == 2**30


def test_announce_says_long_work_only(monkeypatch, capsys):
    monkeypatch.delenv("FEDTHEORY_NO_PROGRESS", raising=False)
    announce("short work", seconds=2.0, nbytes=2**20)
    announce("long work", seconds=600.0, nbytes=3 * 2**30)
    assert capsys.readouterr().err == (
        "fedtheory: long work: about 3.0 GiB of memory, about 10 min\n"
    )
    monkeypatch.setenv("FEDTHEORY_NO_PROGRESS", "1")
    announce("long work", seconds=600.0)
    assert capsys.readouterr().err == ""


def test_a_huge_participation_table_is_refused_before_work(capsys):
    """10^8 clients ran for minutes: the report's memory is estimated from N first."""
    line = refused(
        capsys, "participation", "uniform", "-N", "100000000", "-M", "4", "--max-memory", "4G"
    )
    assert (
        "the participation report of 100000000 clients needs about 29.8 GiB, more than "
        "the 4.0 GiB allowed by --max-memory: ask for fewer clients -N" in line
    )


def test_a_huge_spectral_graph_is_refused_before_it_is_built(capsys):
    line = refused(capsys, "spectral", "erdos-renyi", "-N", "3000000", "--max-memory", "8G")
    assert (
        "the sparse spectral gap of the erdos-renyi graph on 3000000 nodes (9.25e+07 "
        "non-zeros) needs about 34.5 GiB, more than the 8.0 GiB" in line
    )


def test_the_memory_limit_flag_is_checked(capsys):
    line = refused(capsys, "participation", "full", "-N", "4", "--max-memory", "lots")
    assert "--max-memory must be a size such as 4G" in line
    code, out, _ = run(capsys, "participation", "full", "-N", "4", "--max-memory", "1G", "--json")
    assert code == 0 and json.loads(out)["n_clients"] == 4


def test_simulate_is_estimated_under_the_limit():
    problem = make_problem("quadratic")
    with max_memory("1M"), pytest.raises(AssumptionError, match="allowed by max_memory"):
        simulate(problem, "fedavg", rounds=2000, seeds=200, lr=0.01, local_steps=1)


# --- divergence by growth ---------------------------------------------------------------------


def _growth_held(err: np.ndarray, growth: float = 10.0, window: int = 50) -> list[int]:
    """The rounds where the rule of the runner's docstring holds, from a recorded curve."""
    base = max(1.0, err[0])
    return [
        r
        for r in range(1, len(err))
        if err[r] > base and err[r] >= growth * np.nanmin(err[max(r - window, 0) : r])
    ]


def test_slow_divergence_is_reported():
    """The issue's case: FedAvg at eta = 0.0055 (K = 2, figure4) grows its error tenfold in
    30 rounds and stays far below the 1e10 ceiling."""
    problem = make_problem("figure4")
    res = simulate(problem, "fedavg", rounds=30, seeds=3, lr=0.0055, local_steps=2)
    assert not res.diverged.any() and res.diverging.all()
    for s in range(3):
        assert res.diverging_at[s] == _growth_held(res.error[s])[0]
    assert res.error[:, -1].min() > 10 * res.error[:, 3].max()  # it did grow tenfold
    assert res.divergence_summary() == (
        "3 of 3 seeds diverging: the error grew 10x within 50 rounds to above its initial "
        f"value (first at round {res.diverging_at.min()})"
    )
    ok = simulate(problem, "fedavg", rounds=30, seeds=3, lr=0.0055, local_steps=1)
    assert not ok.diverging.any() and ok.divergence_summary() is None
    off = simulate(problem, "fedavg", rounds=30, lr=0.0055, local_steps=2, divergence_growth=np.inf)
    assert not off.diverging.any()


def test_a_transient_that_comes_back_is_not_divergence():
    """CAFGA at a large step: one seed's error spikes 10x above its start and comes back to
    below it by the last round; the rule held at a round, but the seed did not diverge."""
    problem = make_problem("least-squares", seed=0)
    res = simulate(
        problem,
        "cafga",
        "uniform",
        clients_per_round=4,
        rounds=300,
        lr=0.1,
        local_steps=2,
        seeds=8,
        topology="ring",
        clusters=4,
    )
    spiked = [s for s in range(8) if _growth_held(res.error[s])]
    assert spiked, "no transient in this run any more: pick another"
    for s in spiked:
        assert res.error[s, -1] <= max(1.0, res.error[s, 0])
    assert not res.diverging.any()


def test_divergence_settings_are_checked():
    problem = make_problem("quadratic")
    for kw, msg in [
        ({"divergence_growth": 1.0}, "growth factor must be > 1"),
        ({"divergence_growth": -2.0}, "growth factor must be finite and > 0"),
        ({"divergence_window": 0}, "divergence window must be >= 1"),
    ]:
        with pytest.raises(AssumptionError, match=msg):
            simulate(problem, "fedavg", rounds=3, lr=0.01, local_steps=1, **kw)


def test_simulate_fails_on_slow_divergence(capsys, tmp_path):
    argv = [
        "simulate",
        "--problem",
        "figure4",
        "--algorithm",
        "fedavg",
        "--lr",
        "0.0055",
        "-R",
        "30",
        "-K",
        "2",
        "--json",
        str(tmp_path / "out.json"),
    ]
    code, _, err = run(capsys, *argv)
    assert code == 0 and "1 of 1 seed diverging: the error grew 10x" in err
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["diverging"] == [True] and out["diverged"] == [False]
    code, _, err = run(capsys, *argv, "--fail-on-divergence")
    assert code == 3 and err.count("\n") == 1


def test_rate_says_divergence_when_a_rate_is_at_least_one(capsys):
    argv = ["rate", "--problem", "quadratic", "--algorithm", "fedavg", "-K", "1", "--json", "-"]
    code, out, err = run(capsys, *argv, "--lr", "5.0")
    res = json.loads(out)
    assert code == 0 and res["mean_rate"] > 1 and res["diverging"] is True
    # the human summary goes to stderr (stdout holds the JSON), the warning after it
    assert "mean rate           1.58" in err
    assert err.splitlines()[-1].startswith("fedtheory: warning: diverging: mean rate 1.58")
    code, _, _ = run(capsys, *argv, "--lr", "5.0", "--fail-on-divergence")
    assert code == 3
    code, out, err = run(capsys, *argv, "--lr", "1.0", "--fail-on-divergence")
    assert code == 0 and json.loads(out)["diverging"] is False and "warning" not in err


# --- inputs that were accepted as nonsense or crashed -----------------------------------------


def test_simulate_python_inputs():
    problem = make_problem("quadratic")
    run_ = lambda **kw: simulate(problem, "fedavg", rounds=3, lr=0.01, local_steps=1, **kw)  # noqa: E731
    with pytest.raises(AssumptionError, match="x0 must be a real numeric array, got complex"):
        run_(x0=np.full(problem.dim, 1 + 1j))
    with pytest.raises(AssumptionError, match="x0 has a non-finite entry nan"):
        run_(x0=np.full(problem.dim, np.nan))  # bad input, not a divergence
    with pytest.raises(AssumptionError, match=r"seed_ids\[0\] must be <= 9223372036854775807"):
        run_(seed_ids=[2**70])
    with pytest.raises(
        AssumptionError, match=r"draws\[0, 0, 0\] is 0.5: each entry must be 0 or 1"
    ):
        run_(draws=np.full((1, 3, 16), 0.5))
    ones = run_(draws=np.ones((1, 3, 16)))  # 0/1 numbers are a mask
    np.testing.assert_array_equal(ones.error, run_().error)
    with pytest.raises(AssumptionError, match=r"draws must have shape"):
        run_(draws=np.ones((1, 2, 16)))


def test_a_large_seed_id_is_its_spawned_child():
    """Seed s is SeedSequence(seed).spawn(...)[s]; built directly, a large id costs nothing."""
    direct = seed_sequences(7, 0, [0, 3, 17])
    spawned = np.random.SeedSequence(7).spawn(18)
    for d, s in zip(direct, [spawned[i] for i in (0, 3, 17)], strict=True):
        np.testing.assert_array_equal(d.generate_state(8), s.generate_state(8))
    assert seed_sequences(0, 0, [2**62])[0].spawn_key == (2**62,)
    with pytest.raises(AssumptionError, match="must be <= 9223372036854775807"):
        seed_sequences(0, 0, [2**63])
    assert check_int("k", 5, minimum=0, maximum=5) == 5


@pytest.mark.parametrize("shape", [(0, 3, 2), (4, 3, 0)])
def test_problem_files_without_clients_or_dimension(tmp_path, capsys, shape):
    path = tmp_path / "p.npz"
    np.savez(path, A=np.zeros(shape), b=np.zeros(shape[:2]))
    with pytest.raises(AssumptionError, match=rf"p.npz: A has shape \({shape[0]}, 3, "):
        ProblemFile(path)
    for cmd in (["simulate", "-R", "3"], ["rate"]):
        line = refused(
            capsys,
            *cmd,
            "--problem-file",
            str(path),
            "--algorithm",
            "fedavg",
            "-K",
            "1",
            "--lr",
            "0.01",
        )
        assert "a problem needs at least one client and dimension d >= 1" in line


def test_verify_refuses_an_empty_selection_and_two_outputs_on_stdout(capsys):
    assert "--only '' names no claim" in refused(capsys, "verify", "--only", "")
    line = refused(capsys, "verify", "--only", "G1", "--json", "-", "--html", "-")
    assert "--json and --html would both write to stdout" in line


def test_rate_refuses_flags_the_setting_does_not_read(capsys):
    base = ["rate", "--problem", "quadratic", "-K", "1", "--lr", "0.1"]
    line = refused(capsys, *base, "--algorithm", "focus", "--noise", "0.1")
    assert "focus uses exact gradients: --noise" in line
    line = refused(capsys, *base, "--algorithm", "fedavg", "--empty", "skip")
    assert "--participation full does not read it" in line
    code, out, _ = run(capsys, *base, "--algorithm", "fedavg", "--noise", "0.1", "--json", "-")
    assert code == 0 and json.loads(out)["noise"] == 0.1  # fedavg draws the noise


@pytest.mark.parametrize(
    "argv, message",
    [
        (["ring", "-N", "10", "--p", "0.3"], "the ring topology does not read --p"),
        (
            ["torus", "-N", "16", "--radius", "0.3"],
            "the torus topology does not read --radius (it reads --rows, --cols)",
        ),
        (["one-peer-exponential", "-N", "8", "--rows", "2"], "does not read --rows"),
        (["--p", "0.3"], "--p shapes a graph: give a TOPOLOGY"),
        (["-N", "10", "--weights", "metropolis"], "--clients, --weights shape a graph"),
        (["ring", "-N", "10", "--alpha", "0.1"], "--alpha is the step of --weights laplacian"),
    ],
)
def test_spectral_refuses_flags_the_graph_does_not_read(capsys, argv, message):
    assert message in refused(capsys, "spectral", *argv)


def test_spectral_matrix_is_used_as_it_is(capsys, tmp_path):
    np.save(tmp_path / "W.npy", np.full((4, 4), 0.25))
    line = refused(capsys, "spectral", "--matrix", str(tmp_path / "W.npy"), "--lazy")
    assert "--matrix is used as it is: --lazy would not change it" in line
    code, _, _ = run(capsys, "spectral", "erdos-renyi", "-N", "30", "--p", "0.3")
    assert code == 0


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["uniform", "-N", "10", "-M", "2", "--replace"],
            "uniform participation does not read --replace (it reads -N, --clients-per-round)",
        ),
        (["full", "-N", "10", "--a", "0.3"], "full participation does not read --a (it reads -N)"),
        (["uniform", "-N", "10", "-M", "2", "--empty-policy", "skip"], "does not read --empty"),
        (["uniform", "-N", "10", "-M", "2", "--seed", "3"], "--seed sets the draw of --plot"),
    ],
)
def test_participation_refuses_flags_the_model_does_not_read(capsys, argv, message):
    line = refused(capsys, "participation", *argv)
    assert message in line


def test_participation_flags_reach_the_model():
    args = build_parser("participation").parse_args(
        ["participation", "markov", "-N", "4", "-M", "2", "--start", "on"]
    )
    assert build_model(args).describe()["start"] == "on"
    with pytest.raises(UnknownOptionError):
        build_model(
            build_parser("participation").parse_args(
                ["participation", "cluster", "-N", "4", "-M", "1", "--trace", "t.npy"]
            )
        )


def test_refusals_are_fedtheory_errors():
    assert issubclass(UnknownOptionError, FedTheoryError)
