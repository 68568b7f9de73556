"""A researcher's own algorithm on the command line: ``--algorithm FILE.py:NAME`` on simulate and
rate, ``algorithm = "FILE.py:NAME"`` in bound and sweep specs (relative to the spec), options
everywhere, and refusals that say the real reason (docs/own-algorithm.md)."""

from __future__ import annotations

import json
import shlex
import shutil

import numpy as np
import pytest

from fedtheory.analysis.exact import exact_rates
from fedtheory.cli import main
from fedtheory.errors import FedTheoryError
from fedtheory.participation import make_participation
from fedtheory.problems import make_problem
from fedtheory.sweep.spec import normalize


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def examples(own_algorithms):
    return own_algorithms.examples


def test_rate_of_a_file_algorithm_is_the_python_oracle(capsys, examples):
    alg = f"{examples}/fednova.py:fednova"
    base = [
        "rate",
        "--algorithm",
        alg,
        "--problem",
        "quadratic",
        "--participation",
        "uniform",
        "-M",
        "4",
        "-K",
        "3",
        "--lr",
        "0.02",
        "--json",
        "-",
    ]
    code, out, err = _run(capsys, *base)
    assert code == 0, err
    got = json.loads(out)
    prob = make_problem("quadratic", seed=0)
    res = exact_rates(prob, "fednova", make_participation("uniform", 16, 4), lr=0.02, local_steps=3)
    assert got["algorithm"] == "fednova"
    assert got["mean_square_rate"] == pytest.approx(res.mean_square_rate, rel=1e-12)
    code, out, _ = _run(capsys, *base, "--option", "normalized=false")
    assert code == 0 and json.loads(out)["stationary_mse"] != got["stationary_mse"]


def test_rate_takes_options_as_simulate_does(capsys):
    base = ["rate", "--algorithm", "fedavg", "--problem", "quadratic", "-K", "2", "--lr", "0.02"]
    code, out, err = _run(capsys, *base, "--option", "server_momentum=0.9")
    assert code == 0 and "server momentum m" in out, err
    code, _, err = _run(capsys, *base, "--option", "server_momentm=0.9")
    assert code == 2 and "fedavg has no setting 'server_momentm': it accepts" in err
    assert "server_momentum" in err and len(err.strip().splitlines()) == 1


def test_simulate_runs_a_file_algorithm_with_an_array_option(capsys, examples):
    steps = ",".join(["1", "2", "3", "2"] * 4)
    code, out, err = _run(
        capsys,
        "simulate",
        "--algorithm",
        f"{examples}/fednova.py:fednova",
        "--problem",
        "quadratic",
        "-R",
        "5",
        "-K",
        "3",
        "--lr",
        "0.02",
        "--seeds",
        "2",
        "--workers",
        "1",
        "--option",
        f"steps={steps}",
        "--json",
        "-",
    )
    assert code == 0, err
    got = json.loads(out)
    assert got["algorithm"] == "fednova" and got["settings"]["steps"] == [1, 2, 3, 2] * 4
    code, _, err = _run(
        capsys,
        "simulate",
        "--algorithm",
        f"{examples}/fednova.py:fednova",
        "--problem",
        "quadratic",
        "-R",
        "5",
        "-K",
        "3",
        "--lr",
        "0.02",
        "--option",
        "steps=1,2",
    )
    assert code == 2 and "needs one number of local steps in 1..K = 3 per client (16)" in err


@pytest.mark.parametrize("command", ["simulate", "rate"])
def test_help_says_that_a_file_is_run(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "FILE.py:NAME or MODULE:NAME" in text and "runs its code" in text


@pytest.mark.parametrize(
    "text, said",
    [
        ("fedavgg", "unknown algorithm 'fedavgg' (did you mean 'fedavg'?)"),
        ("nowhere.py:fednova", "no such file"),
        ("{examples}/fednova.py:fednov", "has no 'fednov' (did you mean 'fednova'?)"),
        ("{examples}/fednova.py:client_steps", "'client_steps' in"),
    ],
)
@pytest.mark.parametrize("command", ["simulate", "rate"])
def test_a_bad_algorithm_is_one_line(command, text, said, capsys, examples):
    code, _, err = _run(
        capsys,
        command,
        "--algorithm",
        text.format(examples=examples),
        "--problem",
        "quadratic",
        "-K",
        "1",
        "--lr",
        "0.1",
        "-R",
        "2",
    )
    assert code == 2 and said in err and len(err.strip().splitlines()) == 1, err


def _spec(path, **keys):
    lines = []
    for k, v in keys.items():
        if isinstance(v, dict):
            lines.append(f"[{k}]")
            lines += [f"{a} = {json.dumps(b)}" for a, b in v.items()]
        else:
            lines.insert(0, f"{k} = {json.dumps(v)}")
    path.write_text("\n".join(lines) + "\n")
    return path


GD = dict(
    clients=4, local_steps=1, lr="1/L_f", quantity="mean_square_rate", bound="(1 - eta*mu_f)**2"
)


@pytest.mark.parametrize(
    "algorithm, said",
    [
        ("fedavgg", "unknown algorithm 'fedavgg' (did you mean 'fedavg'?)"),
        ("FedAdam", "fedadam: no exact rate: the adaptive server step divides"),
        ("nowhere.py:x", "no such file"),
    ],
)
def test_bound_says_the_real_reason(algorithm, said, capsys, tmp_path):
    spec = _spec(tmp_path / "b.toml", algorithm=algorithm, problem="quadratic", **GD)
    code, _, err = _run(capsys, "bound", spec)
    assert code == 2 and said in err and len(err.strip().splitlines()) == 1, err
    assert "not affine" not in err or "fedadam" in err


def test_bound_spec_options_are_checked_and_used(capsys, tmp_path):
    base = dict(algorithm="fedavg", problem="quadratic", **GD)
    spec = _spec(tmp_path / "b.toml", options={"server_momentm": 0.5}, **base)
    code, _, err = _run(capsys, "bound", spec)
    assert code == 2 and "fedavg has no setting 'server_momentm': it accepts" in err
    spec = _spec(tmp_path / "c.toml", options={"global_lr": 0.5}, **base)
    code, _, err = _run(capsys, "bound", spec)
    assert code == 2 and "give global_lr as top-level keys" in err
    plain = json.loads(
        _run(capsys, "bound", _spec(tmp_path / "d.toml", **base), "--seeds", "0", "--json", "-")[1]
    )
    heavy = json.loads(
        _run(
            capsys,
            "bound",
            _spec(tmp_path / "e.toml", options={"server_momentum": 0.9}, **base),
            "--seeds",
            "0",
            "--json",
            "-",
        )[1]
    )
    assert heavy["worst"]["exact"] != pytest.approx(plain["worst"]["exact"], rel=1e-3)


def test_the_example_bounds_run_from_anywhere(capsys, examples, tmp_path, monkeypatch):
    """The specs name their algorithm relative to themselves; run from another folder."""
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(
        capsys, "bound", examples / "server_momentum_bound.toml", "--search", "8", "--json", "-"
    )
    assert code == 0, err
    heavy = json.loads(out)
    assert not heavy["violated"] and heavy["worst"]["ratio"] == pytest.approx(1.0, abs=1e-6)
    code, out, err = _run(
        capsys, "bound", examples / "fednova_bound.toml", "--search", "8", "--json", "-"
    )
    assert code == 0, err
    assert 0 < json.loads(out)["implied_constant"]["value"] < np.inf


def test_a_violated_bound_reproduces_with_the_file_and_its_options(capsys, examples, tmp_path):
    """The breaker's ``rate`` command names the algorithm's file and options: run, it gives the
    exact value the check reported."""
    shutil.copy(examples / "fednova.py", tmp_path / "my_algos.py")
    spec = _spec(
        tmp_path / "b.toml",
        algorithm="my_algos.py:fednova",
        clients=4,
        local_steps=2,
        lr="1/(2*L)",
        quantity="mean_square_rate",
        bound="0.5",
        options={"normalized": False},
        **{"class": {"dim": 2, "L": 4.0, "mu": 1.0}},
    )
    code, out, err = _run(
        capsys, "bound", spec, "--search", "8", "--json", "-", "--out-dir", tmp_path
    )
    assert code == 0, err
    worst = json.loads(out)["worst"]
    assert json.loads(out)["violated"]
    cmd = shlex.split(worst["command"])
    assert f"{tmp_path / 'my_algos.py'}:fednova" in cmd and "normalized=False" in cmd
    code, out, err = _run(capsys, *cmd[1:], "--json", "-")
    assert code == 0, err
    assert json.loads(out)["mean_square_rate"] == pytest.approx(worst["exact"], rel=1e-9)


def test_a_sweep_spec_names_algorithms_relative_to_itself(tmp_path, examples):
    shutil.copy(examples / "fednova.py", tmp_path / "my_algos.py")
    raw = dict(
        problem="quadratic",
        lr=0.02,
        local_steps=2,
        rounds=3,
        algorithm=["my_algos.py:fednova", "FOCUS"],
    )
    spec = normalize(raw, base_dir=tmp_path)
    assert spec.values["algorithm"] == (f"{tmp_path / 'my_algos.py'}:fednova", "focus")
    assert list(spec.hashable()["algorithm_files"]) == [f"{tmp_path / 'my_algos.py'}:fednova"]
    with pytest.raises(FedTheoryError, match=r"unknown algorithm 'fedavgg' \(did you mean"):
        normalize({**raw, "algorithm": "fedavgg"})
    # the hash covers the file's contents: an edited file is another spec, not an extension
    old = {**spec.to_dict(), "algorithm_files": spec.hashable()["algorithm_files"]}
    before = spec.hash
    with open(tmp_path / "my_algos.py", "a") as f:
        f.write("# edited\n")
    with pytest.warns(UserWarning, match="'fednova' registered again"):  # imported again
        edited = normalize(raw, base_dir=tmp_path)
    assert edited.hash != before and edited.differences(old) == ["algorithm_files"]
    assert edited.growth(old) is None
    one = normalize({**raw, "lr": [0.02]}, base_dir=tmp_path)
    two = normalize({**raw, "lr": [0.02, 0.03]}, base_dir=tmp_path)
    stored = {**one.to_dict(), "algorithm_files": one.hashable()["algorithm_files"]}
    assert two.growth(stored) == ["lr 1 -> 2"]  # the same file: the store may grow


def test_a_sweep_refuses_an_algorithm_of_this_session_only(own_algorithms):
    code = (
        "from fedtheory.algorithms import Algorithm, register\n"
        "@register('nb-alg', 'x', display='nb', not_exact='a probe')\n"
        "def nb(config):\n"
        "    return Algorithm('nb-alg', lambda p, x0: x0, lambda s, p, d, rng=None: s, config)\n"
    )
    exec(compile(code, "<cell>", "exec"), {"__name__": "__main__"})
    with pytest.raises(FedTheoryError, match="registered in this session only .*FILE.py:NAME"):
        normalize(dict(problem="quadratic", algorithm="nb-alg", lr=0.1, local_steps=1, rounds=1))


@pytest.mark.slow
def test_a_two_worker_sweep_imports_the_file_on_its_workers(tmp_path, examples, capsys):
    """Each Dask worker imports the spec's algorithm file itself (a file that records every
    import in a log): the store holds what simulate gives for the same seeds, options per
    algorithm included; checking and opening the store import nothing."""
    pytest.importorskip("xarray")
    import fedtheory.sweep  # noqa: PLC0415  (the sweep extra)
    from fedtheory.algorithms import resolve_algorithm  # noqa: PLC0415
    from fedtheory.simulation import simulate  # noqa: PLC0415

    log = tmp_path / "imports.log"
    text = (examples / "fednova.py").read_text()
    (tmp_path / "my_algos.py").write_text(
        text
        + f"\nimport os\nwith open({str(log)!r}, 'a') as _f:\n    _f.write(f'{{os.getpid()}}\\n')\n"
    )
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'problem = "quadratic"\nlr = 0.02\nlocal_steps = 3\nrounds = 6\nseeds = 4\n'
        'seed_block = 1\nparticipation = "uniform"\nclients_per_round = 4\n'
        '[algorithms."my_algos.py:fednova"]\n[algorithms."my_algos.py:fednova".options]\n'
        "normalized = false\n[algorithms.fedavg]\n[algorithms.fedavg.options]\n"
        "server_momentum = 0.5\n"
    )
    code, _, err = _run(capsys, "sweep", spec, "--store", tmp_path / "st", "--workers", "2")
    assert code == 0, err
    pids = set(log.read_text().split())
    assert len(pids) >= 2  # the driver and at least one worker imported the file
    ds = fedtheory.sweep.open(tmp_path / "st")
    name = resolve_algorithm(f"{tmp_path / 'my_algos.py'}:fednova").name
    prob = make_problem("quadratic", seed=0)
    model = make_participation("uniform", 16, 4)
    for k, (alg, opts) in enumerate(
        [(name, {"normalized": False}), ("fedavg", {"server_momentum": 0.5})]
    ):
        for s in range(4):
            ref = simulate(
                prob,
                alg,
                model,
                rounds=6,
                seeds=1,
                seed_ids=[s],
                lr=0.02,
                local_steps=3,
                metrics=("error",),
                **opts,
            )
            np.testing.assert_allclose(ds.error.values[k, s], ref.error[0], rtol=1e-12)
    log.unlink()
    assert _run(capsys, "sweep", "--check", tmp_path / "st")[0] == 0
    fedtheory.sweep.open(tmp_path / "st")
    assert not log.exists()  # reading a store runs no user code
