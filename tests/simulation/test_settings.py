"""A run's settings are declared once (fedtheory.simulation.settings.SETTINGS): every command's
flags, every spec's keys and simulate's signature come from that table, with its help texts;
participation is built from flat settings in one place, for every command and spec."""

from __future__ import annotations

import argparse
import ast
import inspect
import json
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fedtheory
from fedtheory.algorithms.base import AlgorithmConfig
from fedtheory.bounds import spec as bound_spec
from fedtheory.cli import bound as bound_cli
from fedtheory.cli import build_parser, main
from fedtheory.cli import participation as participation_cli
from fedtheory.cli import rate as rate_cli
from fedtheory.cli import simulate as simulate_cli
from fedtheory.errors import AssumptionError, FedTheoryError, UnknownOptionError
from fedtheory.problems import make_problem
from fedtheory.simulation import simulate
from fedtheory.simulation.settings import SETTINGS, readers
from fedtheory.simulation.spec import PARTICIPATION_SETTINGS, RunSpec, build_participation
from fedtheory.sweep.spec import KEYS, normalize
from fedtheory.sweep.task import run_task

#: simulate's keywords that are no run setting (how it runs: blocks, processes, a bar).
SIMULATE_OWN = ("problem", "algorithm")


def _options(command: str) -> list[argparse.Action]:
    parser = build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [a for a in sub.choices[command]._actions if a.dest != "help"]


@pytest.mark.parametrize(
    "command, module",
    [("simulate", simulate_cli), ("rate", rate_cli), ("bound", bound_cli)],
)
def test_every_flag_is_a_setting_of_the_table_or_the_commands_own(command, module):
    """A flag is the table's setting (its spellings and its help, word for word) or one the
    command declares as its own (an output, a search budget); no own flag shadows a setting."""
    seen = set()
    for action in _options(command):
        if action.dest in SETTINGS:
            s = SETTINGS[action.dest]
            assert action.help == s.help, action.dest
            assert set(s.flags) <= set(action.option_strings), action.dest
            seen.add(action.dest)
        else:
            assert action.dest in module.OWN_FLAGS, f"{command} {action.option_strings}"
    assert not set(module.OWN_FLAGS) & set(SETTINGS)
    assert {"problem", "problem_file"} <= seen


def test_the_participation_command_takes_every_model_setting_from_the_table():
    by_dest = {a.dest: a for a in _options("participation")}
    for name in ("clients", *PARTICIPATION_SETTINGS):
        assert by_dest[name].help == SETTINGS[name].help
        assert set(SETTINGS[name].flags) <= set(by_dest[name].option_strings)
    # the spellings it has always had stay
    assert "--empty-policy" in by_dest["empty"].option_strings
    assert "--a" in by_dest["markov_a"].option_strings
    assert participation_cli.SETTINGS == ("clients", *PARTICIPATION_SETTINGS)


def test_rate_no_longer_fixes_the_server_step_and_the_proximal_weight():
    args = build_parser("rate").parse_args(["rate", "--algorithm", "fedavg"])
    assert args.global_lr is None and args.prox_mu is None  # the algorithm's own defaults


def test_sweep_and_bound_spec_keys_are_the_tables():
    for name, key in KEYS.items():
        assert key is SETTINGS[name]
    run = [bound_spec.SPELLED.get(k, k) for k in bound_spec.RUN_KEYS]
    assert set(run) <= set(SETTINGS)
    assert not set(bound_spec.BOUND_KEYS) & set(SETTINGS)
    assert set(bound_spec._TOP_KEYS) == {*bound_spec.RUN_KEYS, *bound_spec.BOUND_KEYS}
    assert set(bound_spec.PARTICIPATION) <= set(SETTINGS["participation"].choices) | {"markov"}


def test_simulate_signature_runspec_and_algorithm_config_are_checked_against_the_table():
    names = {s.keyword or k: k for k, s in SETTINGS.items()}
    for p in inspect.signature(simulate).parameters.values():
        if p.kind in (p.VAR_KEYWORD,) or p.name in SIMULATE_OWN:
            continue
        assert p.name in names, p.name
        want = SETTINGS[names[p.name]].default
        if p.name == "participation":
            want = None  # None or a model in Python; None is full participation
        elif p.name == "dtype":
            want = None  # float32 false: float64
        if p.default is not p.empty:
            assert p.default == want, p.name
    for f in fields(RunSpec):
        if f.name in SETTINGS and f.name not in ("participation", "rounds"):
            assert f.default == SETTINGS[f.name].default, f.name
    for f in fields(AlgorithmConfig):
        if f.name in ("n_clients", "options"):
            continue
        assert f.name in SETTINGS and "algorithm" in SETTINGS[f.name].reads
        assert f.default == SETTINGS[f.name].default, f.name


def _string_constants() -> list[str]:
    """Every string literal of the package's code but docstrings (implicit concatenation
    joined, as Python reads it)."""
    out = []
    for path in Path(fedtheory.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = set()
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
                docs.add(id(body[0].value))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if id(node) not in docs:
                    out.append(node.value)
    return out


def test_each_help_text_is_written_once_in_the_package():
    """grep finds each setting's help text once: in the table (a help text written again in
    the code, a flag's or a spec key's, is a second declaration; docstrings may quote it)."""
    texts = _string_constants()
    for name, s in SETTINGS.items():
        found = [t for t in texts if s.help in t]
        assert len(found) == 1, f"{name}: its help text is written {len(found)} times: {found}"


def test_readers_come_from_the_registries():
    assert "cluster participation" in readers("clusters") and "cafga" in readers("clusters")
    assert readers("empty") == ["bernoulli participation"]
    assert "fedprox" in readers("prox_mu") and "fedavg" not in readers("prox_mu")


# -- the one participation builder -----------------------------------------------------------
@pytest.fixture(scope="module")
def figure4():
    return make_problem("figure4")


def test_a_problem_lends_its_own_probabilities_to_weighted_everywhere(figure4, capsys, tmp_path):
    built = build_participation("weighted", figure4, clients_per_round=4)
    assert built.probabilities_from == "problem"
    assert np.array_equal(built.model.p, figure4.participation_p / figure4.participation_p.sum())
    mine = np.full(figure4.n_clients, 1 / figure4.n_clients)
    assert (
        build_participation(
            "weighted", figure4, clients_per_round=4, probabilities=mine
        ).probabilities_from
        == "given"
    )
    with pytest.raises(AssumptionError, match="needs probabilities"):  # N clients only: no p
        build_participation("weighted", figure4.n_clients, clients_per_round=4)
    # simulate, the command line and a sweep task: the same model, said where p came from
    argv = [
        "simulate",
        "--problem",
        "figure4",
        "--algorithm",
        "focus",
        "--participation",
        "weighted",
        "-M",
        "4",
        "-K",
        "3",
        "--lr",
        "1e-4",
        "-R",
        "50",
    ]
    assert main([*argv, "--json", str(tmp_path / "o.json")]) == 0
    said = capsys.readouterr().out
    out = json.loads((tmp_path / "o.json").read_text())
    assert out["probabilities_from"] == "problem" and "p: the problem's own (figure4)" in said
    res = simulate(
        figure4, "focus", "weighted", clients_per_round=4, local_steps=3, lr=1e-4, rounds=50
    )
    assert res.config["probabilities_from"] == "problem"
    assert np.array_equal(np.asarray(out["error"][0], dtype=float), res.error[0])
    spec = normalize(
        {
            "problem": "figure4",
            "algorithm": "focus",
            "participation": "weighted",
            "clients_per_round": 4,
            "local_steps": 3,
            "lr": 1e-4,
            "rounds": 50,
        }
    )
    task = run_task(spec.tasks()[0])
    assert np.array_equal(task.error[0], res.error[0])
    # rate's model (its exact rates take minutes on figure4's N = 16 under weighted draws)
    args = build_parser("rate").parse_args(["rate", *argv[1:-2]])
    built = rate_cli._participation(args, figure4)
    assert built.probabilities_from == "problem"
    assert np.array_equal(built.model.p, figure4.participation_p / figure4.participation_p.sum())


def test_every_model_setting_reaches_the_model_wherever_the_model_is_accepted(figure4, capsys):
    built = build_participation("bernoulli", 8, clients_per_round=2, empty="skip")
    assert built.model.empty == "skip"
    assert build_participation(
        "weighted", 8, clients_per_round=2, probabilities=np.full(8, 1 / 8), replace=True
    ).model.replace
    markov = build_participation("markov", 8, markov_a=0.2, markov_b=0.4, start="on").model
    assert np.allclose(markov.a, 0.2) and markov.describe()["start"] == "on"
    with pytest.raises(UnknownOptionError, match="uniform participation does not use 'empty'"):
        build_participation("uniform", 8, clients_per_round=2, empty="skip")
    with pytest.raises(UnknownOptionError, match="not participation settings"):
        build_participation("uniform", 8, clients_per_round=2, rounds=3)
    # the algorithm's clusters are not the model's: uniform participation ignores them
    assert build_participation("uniform", 8, clients_per_round=2, clusters=2).model.m == 2
    base = [
        "--problem",
        "quadratic",
        "--algorithm",
        "fedavg",
        "-K",
        "1",
        "--lr",
        "0.01",
        "--participation",
        "bernoulli",
        "-M",
        "3",
        "--json",
        "-",
    ]
    outs = []
    for empty in ("redraw", "skip"):
        assert main(["simulate", *base, "-R", "20", "--seeds", "3", "--empty", empty]) == 0
        outs.append(json.loads(capsys.readouterr().out)["error"])
    assert outs[0] != outs[1]  # another law of the draws
    assert main(["rate", *base, "--empty", "skip"]) == 0
    assert "skip" in json.dumps(json.loads(capsys.readouterr().out)["participation"])
    spec = normalize(
        {
            "problem": "quadratic",
            "algorithm": "fedavg",
            "participation": "bernoulli",
            "clients_per_round": 3,
            "empty": "skip",
            "local_steps": 1,
            "lr": 0.01,
            "rounds": 20,
            "seeds": 3,
        }
    )
    assert np.array_equal(run_task(spec.tasks()[0]).error, np.asarray(outs[1], dtype=float))


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(["local_steps", "clients_per_round", "lr", "global_lr", "beta1"]),
    value=st.one_of(st.integers(-3, 5), st.floats(-2.0, 3.0, allow_nan=False)),
)
def test_the_table_and_a_sweep_spec_accept_the_same_numbers(name, value):
    """A sweep key is checked by the table's declaration: a value the table refuses, the
    spec refuses (an int key refuses a float, as TOML keeps them apart)."""
    s = SETTINGS[name]
    if s.kind == "int" and isinstance(value, float):
        value_ok = False
    else:
        try:
            s.check(value)
            value_ok = True
        except AssumptionError:
            value_ok = False
    raw = {
        "problem": "quadratic",
        "algorithm": "fedavg",
        "local_steps": 1,
        "lr": 0.1,
        "rounds": 2,
        name: value,
    }
    try:
        normalize(raw)
        spec_ok = True
    except FedTheoryError:
        spec_ok = False
    assert spec_ok == value_ok
