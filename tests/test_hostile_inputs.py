"""Hostile and careless inputs: each is one line and exit 2 on the command line or a typed
``FedTheoryError`` in Python, before the work, within seconds, with nothing written.

Sizes are estimated before work (K local steps, worker counts, a bound check's cost), outputs
that would overwrite each other are refused, a spec's settings are checked in one place, every
door through which text reaches the program is data (docs/reliability.md, "What each input is
trusted with"), and Ctrl-C is one line at any moment. The expression parser's own tests are in
tests/bounds/test_expressions.py; the store's files in tests/sweep/test_sweep_integrity.py.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from fedtheory.bounds import BoundSpec, InstanceClass, check, load_spec
from fedtheory.cli import main
from fedtheory.errors import (
    AssumptionError,
    BackendUnavailableError,
    FedTheoryError,
    SettingError,
    SizeError,
)
from fedtheory.parallel import Engine
from fedtheory.participation import Trace, make_participation
from fedtheory.problems import random_quadratic
from fedtheory.simulation import simulate
from fedtheory.validation import (
    WORKERS_PER_CORE,
    as_real_array,
    available_cores,
    available_memory,
    check_local_steps,
    time_limit,
    worker_count,
)

BASE = {
    "algorithm": "fedavg",
    "clients": 4,
    "local_steps": 1,
    "lr": "1/L_f",
    "quantity": "mean_square_rate",
    "bound": "(1 - eta*mu_f)**2",
    "condition": "eta <= 1/L_f",
    "class": {"dim": 3, "L": 10.0, "mu": 1.0},
}


def _cli(capsys, *argv) -> tuple[int, str, float]:
    """Exit status, the one stderr line (asserted one), seconds."""
    t0 = time.perf_counter()
    code = main([str(a) for a in argv])
    seconds = time.perf_counter() - t0
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return code, lines[0], seconds


def _toml(d: dict) -> str:
    top = [f"{k} = {json.dumps(v)}" for k, v in d.items() if k != "class"]
    cls = [f"{k} = {json.dumps(v)}" for k, v in d.get("class", {}).items()]
    return "\n".join(top + (["[class]", *cls] if cls else [])) + "\n"


# --- sizes before work ---------------------------------------------------------------------------
def test_a_trillion_local_steps_are_refused_at_once_with_the_estimate(capsys):
    """``rate -K 1e12`` and ``simulate -K 1e12 -R 1`` printed nothing for minutes."""
    for argv in (
        ["rate", "--problem", "figure4", "--algorithm", "fedavg", "-K", 10**12, "--lr", 1e-4],
        [
            "simulate",
            "--problem",
            "figure4",
            "--algorithm",
            "fedavg",
            "-K",
            10**12,
            "-R",
            1,
            "--lr",
            1e-4,
            "--workers",
            1,
        ],
    ):
        code, line, seconds = _cli(capsys, *argv)
        assert code == 2 and seconds < 10, (line, seconds)
        assert "1000000000000 local steps takes at least about" in line and "limit" in line
    with pytest.raises(SizeError, match="more than the limit of about 60 min"):
        check_local_steps(10**12)
    assert check_local_steps(10**6) == 10**6  # 1 s at the least: allowed


def test_the_time_limit_is_set_by_the_environment_and_checked(monkeypatch):
    monkeypatch.setenv("FEDTHEORY_TIME_LIMIT", "0.5")
    assert time_limit() == 0.5
    with pytest.raises(SizeError, match="limit of about 1 s"):
        check_local_steps(10**6)
    for bad in ("soon", "-1", "nan", "inf"):
        monkeypatch.setenv("FEDTHEORY_TIME_LIMIT", bad)
        with pytest.raises(AssumptionError, match="FEDTHEORY_TIME_LIMIT must be a number"):
            time_limit()


def test_a_memory_limit_in_the_environment_is_a_size_or_refused(monkeypatch):
    monkeypatch.setenv("FEDTHEORY_MEMORY_LIMIT", "1G")
    assert available_memory() <= 2**30
    monkeypatch.setenv("FEDTHEORY_MEMORY_LIMIT", "lots")  # ignored silently before
    with pytest.raises(AssumptionError, match="FEDTHEORY_MEMORY_LIMIT must be a size"):
        available_memory()


def test_a_million_local_steps_in_a_bound_spec_are_refused_by_the_checks_estimate(tmp_path, capsys):
    spec = tmp_path / "k.toml"
    spec.write_text(_toml({**BASE, "local_steps": 1_000_000}))
    code, line, seconds = _cli(capsys, "bound", spec, "--seeds", 0)
    assert code == 2 and seconds < 20
    assert "the check of 250 instance(s) with up to K = 1000000 local steps takes at least" in line


@pytest.mark.parametrize(
    "change, says",
    [
        ({"clients": 1_000_000}, "class instance of 1000000 clients of dimension 3 needs about"),
        ({"class": {"dim": 100_000, "L": 10.0, "mu": 1.0}}, "4 clients of dimension 100000"),
        (
            {"quantity": "mse_after_rounds", "bound": "D2", "rounds": 10**9},
            "4 instance(s) with up to K = 1 local steps and R = 1000000000 rounds takes at least",
        ),
    ],
)
def test_huge_bound_sizes_are_refused_by_an_estimate_not_numpys_allocation(change, says):
    t0 = time.process_time()
    with pytest.raises(SizeError, match=re.escape(says)):
        check({**BASE, **change}, search=4, refine=False)
    assert time.process_time() - t0 < 1.0  # before any instance is drawn


def test_the_exact_transient_is_sized_before_its_rounds(monkeypatch):
    """``exact_mse_curve(rounds=1e12)`` was NumPy's allocation error (7.28 TiB); 1e9 rounds
    would have run for hours (here 1e6 rounds against a 1 s limit: 8 MB, at least 20 s)."""
    from fedtheory.analysis.exact import exact_mse_curve  # noqa: PLC0415

    prob = random_quadratic(2, 1, seed=0)
    monkeypatch.setenv("FEDTHEORY_TIME_LIMIT", "1")
    for rounds, says in (
        (10**12, "the exact transient of 1000000000000 rounds needs about"),
        (10**6, "the exact transient of 1000000 rounds takes at least about 20 s"),
    ):
        t0 = time.process_time()
        with pytest.raises(SizeError, match=says):
            exact_mse_curve(prob, "fedavg", rounds=rounds, lr=0.05, local_steps=1)
        assert time.process_time() - t0 < 1.0
    assert exact_mse_curve(prob, "fedavg", rounds=3, lr=0.05, local_steps=1).shape == (4,)


def test_the_exact_oracle_refuses_a_round_it_cannot_hold():
    from fedtheory.analysis.exact import exact_rates  # noqa: PLC0415
    from fedtheory.participation import make_participation  # noqa: PLC0415
    from fedtheory.validation import max_memory  # noqa: PLC0415

    prob = random_quadratic(300, 3, seed=0)
    with max_memory("16M"), pytest.raises(SizeError, match="reading focus's round on 300 clients"):
        exact_rates(prob, "focus", make_participation("full", 300), lr=1e-3, local_steps=1)


def test_the_noise_response_of_many_gradient_calls_is_refused_by_its_memory_estimate():
    """FedAvg's exact oracle reads the response to gradient noise of every gradient call: its
    array grows as K^2 and was refused by NumPy's allocation error (4.66 TiB at K = 1000 on
    003 Figure 4) after the round had been read."""
    from fedtheory.analysis.exact import exact_rates  # noqa: PLC0415
    from fedtheory.participation import make_participation  # noqa: PLC0415
    from fedtheory.problems import random_least_squares  # noqa: PLC0415
    from fedtheory.validation import max_memory  # noqa: PLC0415

    prob = random_least_squares(4, 5, 3, seed=0)
    with max_memory("64M"), pytest.raises(SizeError, match="response to gradient noise of 300"):
        exact_rates(
            prob,
            "fedavg",
            make_participation("full", 4),
            lr=1e-3,
            local_steps=300,
            noise=0.1,
            verify=False,
        )  #  read only where sigma > 0


def test_worker_counts_are_capped_as_simulate_caps_them():
    """``sweep --workers 1000`` started 1000 Dask workers on 2 cores; ``verify --workers`` the
    same. At most the tasks, and at most WORKERS_PER_CORE per core."""
    cap = WORKERS_PER_CORE * available_cores()
    assert worker_count(1000) == cap
    assert worker_count(1000, tasks=3) == min(3, cap)
    assert Engine(workers=1000).workers == cap  # nothing started
    assert Engine(workers=1000, tasks=2).workers == min(2, cap)
    assert Engine(scheduler="tcp://127.0.0.1:1").workers is None  # a cluster's own
    for bad in (0, -1, 2.5, "2"):
        with pytest.raises(AssumptionError):
            worker_count(bad)


def test_a_sweeps_missing_backend_is_refused_before_dask_starts(tmp_path, monkeypatch):
    from fedtheory.sweep import run as run_sweep  # noqa: PLC0415

    def started(*a, **k):
        raise AssertionError("Dask was started")

    monkeypatch.setattr(Engine, "__enter__", started)
    monkeypatch.setattr("fedtheory.backend._cupy_or_none", lambda: None)
    spec = {
        "problem": "quadratic",
        "algorithm": "fedavg",
        "lr": 0.01,
        "local_steps": 1,
        "rounds": 3,
        "seeds": 2,
        "backend": "cupy",
    }
    with pytest.raises(BackendUnavailableError, match="CuPy is not installed"):
        run_sweep(spec, tmp_path / "store", workers=1, progress=False)
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize(
    "change, says",
    [
        ({"seeds": 10**12}, "the sweep of 1 tasks (1 grid points x 1 seed blocks"),
        ({"seeds": 10**12, "seed_block": 1}, "1000000000000 seed blocks"),
        (
            {"local_steps": 10**12},
            "a pass of 1000000000000 local steps takes at least about 12 days",
        ),
        ({"local_steps": [1, 10**12]}, "a pass of 1000000000000 local steps"),
    ],
)
def test_a_sweeps_sizes_are_refused_by_their_estimate_before_dask_starts(
    change, says, tmp_path, monkeypatch
):
    """Seeds were cut into blocks (a list of 1e12 seeds: MemoryError, "out of memory") before
    the size was estimated; K was first sized on a Dask worker, after start-up."""
    from fedtheory.sweep import run as run_sweep  # noqa: PLC0415

    def started(*a, **k):
        raise AssertionError("Dask was started")

    monkeypatch.setattr(Engine, "__enter__", started)
    spec = {
        "problem": "quadratic",
        "algorithm": "fedavg",
        "lr": 0.01,
        "local_steps": 1,
        "rounds": 3,
        "seeds": 2,
        **change,
    }
    t0 = time.process_time()
    with pytest.raises(FedTheoryError, match=re.escape(says)):  # memory, disk or time
        run_sweep(spec, tmp_path / "store", workers=1, progress=False)
    assert time.process_time() - t0 < 1.0 and not (tmp_path / "store").exists()


# --- outputs -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv, says",
    [
        (
            ["verify", "--only", "G1", "--json", "-", "--markdown", "-"],
            "--json and --markdown would both write to stdout",
        ),
        (
            ["verify", "--only", "G1", "--json", "-", "--html", "-"],
            "--json and --html would both write to stdout",
        ),
        (
            ["verify", "--only", "G1", "--json", "same.out", "--html", "same.out"],
            "--json same.out and --html same.out name the same file",
        ),
        (
            ["verify", "--only", "G1", "--html", "same.out", "--markdown", "./same.out"],
            "--html same.out and --markdown ./same.out name the same file",
        ),
        (
            ["verify", "--only", "G1", "--json", "same.out", "--markdown", "link.out"],
            "name the same file",
        ),
        (
            [
                "simulate",
                "--problem",
                "figure4",
                "--algorithm",
                "fedavg",
                "-R",
                "2",
                "-K",
                "1",
                "--lr",
                "1e-4",
                "--json",
                "a.json",
                "--out",
                "a.json",
            ],
            "name the same file",
        ),
    ],
)
def test_two_outputs_on_one_file_or_on_stdout_are_refused_before_the_work(
    argv, says, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "link.out").symlink_to(tmp_path / "same.out")  # a link to the other name
    ran = []
    monkeypatch.setattr("fedtheory.cli.verify._run", lambda *a, **k: ran.append(a) or 0)
    monkeypatch.setattr("fedtheory.cli.simulate.simulate", lambda *a, **k: ran.append(a))
    code, line, _ = _cli(capsys, *argv)
    assert code == 2 and says in line and not ran
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.out"]  # nothing written


def test_devnull_may_take_every_output(capsys, monkeypatch):
    monkeypatch.setattr("fedtheory.cli.verify._run", lambda *a, **k: 0)
    assert main(["verify", "--only", "G1", "--json", os.devnull, "--html", os.devnull]) == 0


# --- a bound spec's settings, checked in one place -----------------------------------------------
@pytest.mark.parametrize(
    "change, says",
    [
        ({"tolerance": math.nan}, "tolerance must be finite"),
        ({"tolerance": -1.0}, "tolerance must be >= 0"),
        ({"global_lr": 0}, "global_lr must be > 0, got 0"),
        ({"global_lr": -1}, "global_lr must be > 0, got -1"),
        ({"prox_mu": -1}, "prox_mu must be >= 0, got -1"),
        ({"p": [1.5, 0.5, 0.5, 0.5]}, "p[0] = 1.5 is outside (0, 1]"),
        ({"p": [0.0, 0.5, 0.5, 0.5]}, "p[0] = 0.0 is outside (0, 1]"),
        ({"condition": "eta"}, "the condition 'eta' must be an inequality"),
        ({"bound": "η*L"}, "U+03B7"),
        ({"bound": "e"}, "unknown symbol(s) e;"),
        ({"bound": "e1"}, "unknown symbol(s) e1;"),
        ({"seeds": [4, 8]}, "seeds must be an integer"),
        ({"local_steps": 1.5}, "local_steps must be an integer"),
        ({"algorithm": 3}, "algorithm must be a string"),
    ],
)
def test_invalid_settings_are_named_by_the_constructor_and_from_dict_alike(change, says):
    """``BoundSpec(..., tolerance=nan)`` used to skip the checks ``from_dict`` made (a bound
    violated by a factor of 2 was reported as "Holds ... worst ratio 2"); invalid settings
    ended as "No instance meets the condition: nothing to check", exit 0."""
    d = {**BASE, **change}
    with pytest.raises(FedTheoryError) as by_dict:
        BoundSpec.from_dict(d)
    kw = {("instance_class" if k == "class" else k): v for k, v in d.items()}
    with pytest.raises(FedTheoryError) as by_constructor:
        BoundSpec(**kw)
    assert says in str(by_dict.value) and str(by_dict.value) == str(by_constructor.value)


def test_the_instance_class_checks_in_its_constructor_too():
    with pytest.raises(AssumptionError, match=r"\[class\] L must be finite"):
        InstanceClass(dim=(3,), L=math.nan, mu=1.0)
    with pytest.raises(AssumptionError, match="mu <= L"):
        InstanceClass(dim=(3,), L=1.0, mu=2.0)
    assert InstanceClass(dim=[3, 4], L=10, mu=1).dim == (3, 4)  # normalized as from a table
    general = InstanceClass(dim=(), L=1.0, mu=0.0, functions="smooth-strongly-convex")
    assert general.mu == 0.0 and general.dim == ()
    for kw, says in [
        ({"functions": "convex"}, "functions must be one of"),
        ({"D2": -1.0}, "D2 must be > 0"),
        ({"zeta2": math.nan}, "zeta2 must be finite"),
        ({"dim": ()}, "needs dim"),
    ]:
        with pytest.raises(AssumptionError, match=says):
            InstanceClass(**{"dim": (3,), "L": 10.0, "mu": 1.0, **kw})


@pytest.mark.parametrize("lr, eta", [("-1/L_f", "-0.1"), ("0*L_f", "0.0"), ("sqrt(-L_f)", "nan")])
def test_a_step_size_that_is_not_positive_is_an_error_of_the_spec_not_nothing_to_check(
    lr, eta, tmp_path, capsys
):
    with pytest.raises(SettingError, match=re.escape(f"lr = '{lr}' gives eta = {eta}")):
        check({**BASE, "lr": lr}, search=4, refine=False)
    spec = tmp_path / "lr.toml"
    spec.write_text(_toml({**BASE, "lr": lr}))
    code, line, _ = _cli(capsys, "bound", spec, "--search", 4, "--seeds", 0)
    assert code == 2 and "a step size must be a finite number > 0" in line


def test_a_bound_not_finite_anywhere_is_refused_naming_where():
    with pytest.raises(
        AssumptionError, match=re.escape("bound 'exp(1000*L)' is not finite at draw")
    ):
        check({**BASE, "bound": "exp(1000*L)"}, search=4, refine=False)


def test_a_valid_single_constant_bound_is_accepted():
    res = check({**BASE, "quantity": "stationary_mse", "bound": "1*D2"}, search=4, refine=False)
    assert res.worst is not None and res.worst.stated == res.worst.constants["D2"]


@pytest.mark.parametrize("command", ["bound", "sweep"])
def test_a_toml_array_nested_3000_deep_is_one_line(command, tmp_path, capsys):
    spec = tmp_path / "deep.toml"
    spec.write_text("a = " + "[" * 3000 + "]" * 3000 + "\n")
    argv = [command, spec] + (["--store", tmp_path / "s"] if command == "sweep" else [])
    code, line, _ = _cli(capsys, *argv)
    assert code == 2 and "nests arrays or tables too deeply" in line
    with pytest.raises(FedTheoryError, match="too deeply"):
        load_spec(spec)


# --- the minor cases -----------------------------------------------------------------------------
def test_a_one_dimensional_trace_file_is_refused_as_ambiguous(tmp_path):
    path = tmp_path / "t.npy"
    np.save(path, np.array([1, 0, 1], dtype=bool))
    with pytest.raises(AssumptionError, match="holds one row or one column .3 values."):
        Trace.from_file(path)
    np.save(path, np.array([[1, 1, 1]], dtype=bool))
    assert Trace.from_file(path).n_rounds == 1  # one round, written as 1 x N


def test_simulate_refuses_what_is_not_a_run(capsys):
    prob = random_quadratic(3, 2, seed=0)
    kw = dict(rounds=3, lr=0.1, local_steps=1)
    with pytest.raises(AssumptionError, match="problem must be a problem .* got None"):
        simulate(None, "fedavg", **kw)
    with pytest.raises(AssumptionError, match=r"seed_ids\[0\] and seed_ids\[1\] are both 1"):
        simulate(prob, "fedavg", seed_ids=[1, 1], **kw)
    with pytest.raises(AssumptionError, match="seed_ids is empty"):
        simulate(prob, "fedavg", seed_ids=[], **kw)
    draws = np.array([[[1, 0, 0], [0, 0, 0], [0, 0, 1]]], dtype=bool)
    with pytest.raises(AssumptionError, match=r"draws\[0, 1\] has no participant"):
        simulate(prob, "fedavg", "uniform", clients_per_round=1, seeds=1, draws=draws, **kw)
    code, line, _ = _cli(
        capsys,
        "simulate",
        "--problem",
        "quadratic",
        "--algorithm",
        "fedavg",
        "-R",
        0,
        "-K",
        1,
        "--lr",
        0.1,
    )
    assert code == 2 and "--rounds R must be >= 1, got 0" in line


def test_an_empty_round_is_a_draw_of_bernoulli_participation_that_keeps_it():
    prob = random_quadratic(3, 2, seed=0)
    draws = np.array([[[1, 0, 0], [0, 0, 0], [0, 0, 1]]], dtype=bool)
    model = make_participation("bernoulli", 3, p=np.full(3, 0.5), empty="skip")
    res = simulate(prob, "fedavg", model, seeds=1, draws=draws, rounds=3, lr=0.1, local_steps=1)
    assert res.error[0, 2] == res.error[0, 1]  # nobody took part: the model stays


def test_masked_entries_are_refused_not_dropped():
    a = np.ma.masked_array([[0.5, 0.5], [0.5, 0.5]], mask=[[0, 1], [0, 0]])
    with pytest.raises(AssumptionError, match="masked array with 1 masked entries"):
        as_real_array("W", a)
    from fedtheory.graphs import spectral_gap  # noqa: PLC0415

    with pytest.raises(AssumptionError, match="W is a masked array"):
        spectral_gap(a)
    assert as_real_array("W", np.ma.masked_array([1.0, 2.0])).tolist() == [1.0, 2.0]


@pytest.mark.parametrize(
    "text, says",
    [
        ("0.5,0.5\n0.5,abc\n", "line 2, field 2 is 'abc', not a number"),
        ("# W\n0.5,0.5\n\n0.5\n", "line 4 has 1 number, line 2 has 2"),
        ("1,,2\n", "line 1, field 2 is '', not a number"),
    ],
)
def test_a_bad_csv_matrix_is_named_by_line_and_field_in_our_words(text, says, tmp_path, capsys):
    path = tmp_path / "W.csv"
    path.write_text(text)
    code, line, _ = _cli(capsys, "spectral", "--matrix", path)
    assert code == 2 and says in line and "usecols" not in line


# --- every door: text is data --------------------------------------------------------------------
def test_a_sweep_spec_names_are_looked_up_never_imported_or_evaluated(tmp_path, capsys):
    marker = tmp_path / "PWNED"
    run = f"__import__('os').system('touch {marker}')"
    for key in ("problem", "algorithm", "participation", "topology", "backend"):
        spec = tmp_path / f"{key}.toml"
        spec.write_text(
            _toml(
                {
                    "problem": "quadratic",
                    "algorithm": "fedavg",
                    "lr": 0.01,
                    "local_steps": 1,
                    "rounds": 3,
                    "seeds": 2,
                    key: run,
                }
            )
        )
        code, line, _ = _cli(capsys, "sweep", spec, "--store", tmp_path / "s", "--workers", 1)
        assert code == 2 and not marker.exists(), line
    assert not (tmp_path / "s").exists()


def test_verify_only_is_a_list_of_names(capsys):
    code, line, _ = _cli(capsys, "verify", "--only", "C1;__import__('os')")
    assert code == 2 and "unknown claim id" in line


def _pickled_npz(path: Path, **arrays) -> None:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    path.write_bytes(buf.getvalue())


def test_problem_and_matrix_files_are_read_without_pickle(tmp_path, capsys):
    """An object array in a ``.npy``/``.npz`` is a pickle: np.load(allow_pickle=False) refuses
    it, and nothing of it is unpickled."""
    marker = tmp_path / "PWNED"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    w = tmp_path / "W.npy"
    np.save(w, np.array([Payload()], dtype=object), allow_pickle=True)
    code, line, _ = _cli(capsys, "spectral", "--matrix", w)
    assert code == 2 and not marker.exists(), line
    prob = tmp_path / "p.npz"
    _pickled_npz(prob, A=np.array([Payload()], dtype=object), b=np.ones((1, 1)))
    code, line, _ = _cli(
        capsys, "rate", "--problem-file", prob, "--algorithm", "fedavg", "-K", 1, "--lr", 0.1
    )
    assert code == 2 and not marker.exists(), line
    with zipfile.ZipFile(prob) as z:
        assert any(n.startswith("A") for n in z.namelist())  # the payload was there


def test_a_stores_attributes_are_json_data(tmp_path):
    """A store's spec is JSON in its attributes: read with json.loads and normalized like a spec
    file, so a hostile attribute names nothing that runs."""
    pytest.importorskip("zarr")
    from fedtheory.sweep import check as check_store  # noqa: PLC0415

    marker = tmp_path / "PWNED"
    store = tmp_path / "s"
    store.mkdir()
    hostile = {
        "problem": f"__import__('os').system('touch {marker}')",
        "algorithm": "fedavg",
        "lr": 0.1,
        "local_steps": 1,
        "rounds": 2,
    }
    root = {
        "zarr_format": 3,
        "node_type": "group",
        "attributes": {
            "fedtheory_store": "fedtheory-sweep-3",
            "fedtheory_spec": json.dumps(hostile),
        },
    }
    (store / "zarr.json").write_text(json.dumps(root))
    out = check_store(store)
    assert out.problem and "cannot be read" in out.problem and not marker.exists()


# --- Ctrl-C --------------------------------------------------------------------------------------
@pytest.mark.parametrize("delay", [0.5, 3.0])
def test_ctrl_c_is_one_line_and_acted_on_at_once(delay, tmp_path):
    """A terminal's Ctrl-C (SIGINT to the process group) in the first second (imports) used to
    print a 57-line traceback; ``simulate`` with worker processes took 12-34 s to act on it."""
    argv = [
        sys.executable,
        "-m",
        "fedtheory",
        "simulate",
        "--problem",
        "figure4",
        "--algorithm",
        "focus",
        "--participation",
        "uniform",
        "-M",
        "4",
        "-K",
        "3",
        "--lr",
        "1e-4",
        "-R",
        "3000",
        "--seeds",
        "1000",
        "--workers",
        "2",
        "--json",
        str(tmp_path / "out.json"),
    ]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    time.sleep(delay)
    t0 = time.perf_counter()
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    seconds = time.perf_counter() - t0
    assert err.strip().splitlines() == ["fedtheory: error: interrupted"], err
    assert proc.returncode == 2 and seconds < 3, seconds
    assert list(tmp_path.iterdir()) == []  # nothing half-written


def test_dask_task_arguments_are_plain_data():
    """What travels to Dask workers (a sweep's tasks, ``verify --workers``'s claim ids and
    contexts) unpickles with only fedtheory's, NumPy's and Python's own classes: data, no code."""
    import pickle  # noqa: PLC0415

    from fedtheory.sweep import normalize  # noqa: PLC0415
    from fedtheory.verify import Context  # noqa: PLC0415

    class OnlyData(pickle.Unpickler):
        def find_class(self, module, name):
            if module.split(".")[0] in (
                "fedtheory",
                "builtins",
                "numpy",
                "pathlib",
                "copyreg",
                "collections",
                "_codecs",
            ):
                return super().find_class(module, name)
            raise pickle.UnpicklingError(f"{module}.{name}")

    spec = normalize(
        {
            "problem": "quadratic",
            "algorithm": ["fedavg", "focus"],
            "lr": 0.01,
            "local_steps": 1,
            "rounds": 3,
            "seeds": 2,
        }
    )
    for item in [*spec.tasks(), ("C1", Context())]:
        assert OnlyData(io.BytesIO(pickle.dumps(item))).load() is not None


def test_the_notebooks_builder_takes_names_from_its_own_table(tmp_path):
    import importlib.util  # noqa: PLC0415

    path = Path(__file__).parents[1] / "notebooks" / "build_notebooks.py"
    mod_spec = importlib.util.spec_from_file_location("build_notebooks", path)
    builder = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(builder)  # the repository's own script
    assert builder.build(["../../../tmp/x.ipynb", "__import__('os')"]) == []  # nothing written


def test_the_backend_in_the_environment_is_a_name(monkeypatch):
    from fedtheory.backend import get_backend  # noqa: PLC0415

    monkeypatch.setenv("FEDTHEORY_BACKEND", "__import__('os').system('true')")
    with pytest.raises(BackendUnavailableError, match="unknown array backend"):
        get_backend()
