"""One vocabulary across subcommands: --json [OUT], -N/--clients, -M/--clients-per-round,
algorithm names in any case, --help with defaults and an example, one-line usage errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fedtheory.cli import SUBCOMMANDS, build_parser, main


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_help_shows_defaults_and_an_example(name, capsys):
    with pytest.raises(SystemExit) as done:
        main([name, "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert "examples:" in text and f"fedtheory {name}" in text.split("examples:")[1]
    if name not in ("figures", "study"):  # valued options show their default ("study" has
        # only sub-studies; test_cli_vocabulary checks their help via "study rho")
        assert "(default:" in text


@pytest.mark.parametrize(
    "argv",
    [
        ["spectral", "ring", "-N", "8"],
        ["participation", "uniform", "-N", "6", "-M", "2"],
        [
            "simulate",
            "--problem",
            "quadratic",
            "--algorithm",
            "FOCUS",
            "-R",
            "3",
            "-K",
            "1",
            "--lr",
            "0.01",
            "--participation",
            "uniform",
            "-M",
            "4",
        ],
    ],
)
def test_json_bare_dash_and_file_mean_the_same_everywhere(argv, capsys, tmp_path):
    bare_code, bare, _ = _run(capsys, *argv, "--json")
    dash_code, dash, _ = _run(capsys, *argv, "--json", "-")
    target = tmp_path / "o.json"
    file_code, printed, _ = _run(capsys, *argv, "--json", str(target))
    assert bare_code == dash_code == file_code == 0
    drop = ("wall_time_s",)  # the one field that is a measurement of the machine
    a, b, c = (
        {k: v for k, v in json.loads(t).items() if k not in drop}
        for t in (bare, dash, target.read_text())
    )
    assert a == b == c
    assert str(target) not in bare and not printed.lstrip().startswith("{")


def test_study_subcommands_show_defaults(capsys):
    for sub in ("local-steps", "rho"):
        with pytest.raises(SystemExit):
            main(["study", sub, "--help"])
        text = capsys.readouterr().out
        assert "(default: 0.05)" in text and "examples:" in text


def test_client_counts_have_one_spelling_with_old_aliases(capsys):
    new = _run(capsys, "spectral", "ring", "--clients", "10", "--json")
    old = _run(capsys, "spectral", "ring", "--n", "10", "--json")
    assert new[0] == old[0] == 0 and json.loads(new[1]) == json.loads(old[1])
    args = build_parser().parse_args(["study", "local-steps", "--N", "20", "--M", "2,4"])
    assert args.clients == 20 and args.clients_per_round == [2, 4]
    args = build_parser().parse_args(
        ["study", "rho", "-N", "20", "-M", "4", "--algorithms", "AFGA"]
    )
    assert args.clients == 20 and args.clients_per_round == 4 and args.algorithms == ["afga"]
    args = build_parser().parse_args(["nn", "-N", "20", "-M", "4", "--algorithms", "FedAvg"])
    assert args.clients == 20 and args.clients_per_round == 4 and args.algorithms == ["fedavg"]


def test_algorithm_names_in_any_case(capsys):
    codes = []
    for name in ("SCAFFOLD", "Scaffold", "scaffold"):
        code, out, err = _run(
            capsys,
            "simulate",
            "--problem",
            "quadratic",
            "--algorithm",
            name,
            "-R",
            "2",
            "-K",
            "1",
            "--lr",
            "0.01",
            "--json",
        )
        codes.append(code)
        assert json.loads(out)["algorithm"] == "scaffold", err
    assert codes == [0, 0, 0]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["simulate", "--algorithm", "fedsgd"], "unknown algorithm 'fedsgd'"),
        (["simulate", "--rounds", "ten"], "argument --rounds/-R: invalid int value"),
        (["spectral", "--json", "a", "--bogus"], "unrecognized arguments: --bogus"),
        (["nosuch"], "invalid choice: 'nosuch'"),
        (["study", "rho", "--algorithms", "AFGA,xyz"], "unknown algorithm 'xyz'"),
    ],
)
def test_usage_errors_are_one_line_and_exit_two(argv, needle, capsys):
    code, _, err = _run(capsys, *argv)
    assert code == 2 and err.count("\n") == 1 and needle in err and "usage:" not in err


def test_simulate_settings_the_algorithm_does_not_read_are_refused(capsys):
    """--topology for FedAvg would silently do nothing: one line naming what FedAvg reads."""
    code, _, err = _run(
        capsys,
        "simulate",
        "--problem",
        "quadratic",
        "--algorithm",
        "fedavg",
        "-R",
        "2",
        "-K",
        "1",
        "--lr",
        "0.01",
        "--topology",
        "ring",
    )
    assert code == 2 and "fedavg does not use topology" in err and "global_lr" in err


def test_simulate_option_sets_a_typed_algorithm_option(capsys):
    base = [
        "simulate",
        "--problem",
        "quadratic",
        "--algorithm",
        "fedau",
        "-R",
        "5",
        "-K",
        "1",
        "--lr",
        "0.01",
        "--participation",
        "uniform",
        "-M",
        "3",
        "--json",
    ]
    a = json.loads(_run(capsys, *base, "--option", "cutoff=2")[1])
    b = json.loads(_run(capsys, *base)[1])
    assert a["settings"]["cutoff"] == 2 and b["settings"]["cutoff"] == 10
    assert not np.allclose(np.array(a["error"], dtype=float), np.array(b["error"], dtype=float))
    code, _, err = _run(capsys, *base, "--option", "cutof=2")
    assert code == 2 and "fedau has no setting 'cutof'" in err
    code, _, err = _run(capsys, *base, "--option", "cutoff=two")
    assert code == 2 and "option 'cutoff' must be int" in err


def test_simulate_starts_without_the_heavy_modules(modules_loaded_by):
    """``fedtheory simulate`` pays for what it uses: sympy (the graphs' closed forms) and
    scipy.stats (confidence intervals) cost 1.4 s of start-up together, and SciPy as a whole
    (the graphs of gossip algorithms, sparse inputs, a logistic problem's x*) 0.3-0.5 s more;
    they are imported on first use, not by a server algorithm's run (benchmarks/bench_simulator.py
    measures the whole command)."""
    code = (
        "from fedtheory.cli import main; "
        "main(['simulate', '--problem', 'figure4', '--algorithm', 'focus', '-R', '3', '-K', '1', "
        "'--lr', '1e-4'])"
    )
    assert modules_loaded_by(code, ("sympy", "scipy.stats", "scipy")) == []
    partial = code.replace(
        "'1e-4'", "'1e-4', '--participation', 'uniform', '--clients-per-round', '4'"
    )
    assert modules_loaded_by(partial, ("scipy",)) == []


@pytest.mark.parametrize(
    "argv, near",
    [
        (["simulate", "--participation", "unifrom"], "did you mean 'uniform'?"),
        (["simulate", "--problem", "figure4", "--roundz", "3"], "did you mean '--rounds'?"),
        (["simulate", "--algorithm", "fedavgg"], "did you mean 'fedavg'?"),
        (["verify", "--only", "C11"], "did you mean 'C1'?"),
        (["figures", "figur4"], "did you mean 'figure4'?"),
        (["spectral", "rng", "-N", "5"], "did you mean 'ring'?"),
        (["participation", "unform", "-N", "4", "-M", "2"], "did you mean 'uniform'?"),
        (["nn", "--algorithms", "fedav"], "did you mean 'fedavg'?"),
    ],
)
def test_a_near_miss_is_suggested_in_the_one_line(argv, near, capsys):
    """A misspelt choice, flag or name is refused in one line that suggests the near miss."""
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and near in err[0]


def test_lists_are_comma_separated_and_steps_and_rounds_have_one_spelling():
    """``-K/--local-steps`` and ``-R/--rounds`` in every subcommand that takes them (``--K``,
    ``--R`` stay as aliases of the study's); lists are comma separated everywhere."""
    local = build_parser("study").parse_args(["study", "local-steps", "-K", "1,2", "-R", "10"])
    assert local.Ks == [1, 2] and local.Rs == [10]
    old = build_parser("study").parse_args(["study", "local-steps", "--K", "4", "--R", "5,6"])
    assert old.Ks == [4] and old.Rs == [5, 6]
    rho = build_parser("study").parse_args(["study", "rho", "--local-steps", "3", "--rounds", "9"])
    assert (rho.K, rho.R) == (3, 9)
    nn = build_parser("nn").parse_args(["nn", "--algorithms", "FedAvg,AFGA", "--hidden", "8,4"])
    assert nn.algorithms == ["fedavg", "afga"] and nn.hidden == [8, 4]
    assert (nn.rounds, nn.local_steps) == (100, 10)
