"""``fedtheory.sweep``: spec, grid, equality with simulate, resume, faults.

Equality: a sweep task is ``simulate(..., seeds=len(block), seed_ids=block)``, so its numbers are
compared *bit for bit* with that call run on a worker of the same Dask cluster (same shapes,
same BLAS thread count, same machine), and to 1e-12 relative with an in-process ``simulate`` over
all seeds at once (other operation shapes may round differently in the last bit).

One local Dask cluster of two worker processes serves the module (``engine``); the SIGKILL test
starts the CLI in its own process, with its own cluster, as a user would.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import cloudpickle
import numpy as np
import pytest

from fedtheory.cli import main
from fedtheory.errors import FedTheoryError
from fedtheory.participation import make_participation
from fedtheory.problems import make_problem
from fedtheory.simulation import simulate
from fedtheory.sweep import Engine, load_spec, map_tasks, normalize
from fedtheory.sweep import open as open_sweep
from fedtheory.sweep import run as run_sweep
from fedtheory.sweep.spec import KEYS, LATER_KEYS

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")

# Helpers below run on the Dask workers, which cannot import this test module by name.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

ROOT = Path(__file__).resolve().parents[2]

#: 24 small tasks: 2 algorithms x 2 step sizes (0.03 diverges) x 2 K x 3 seed blocks (2, 2, 1).
FAST = {
    "problem": "least-squares",
    "algorithm": ["scaffold", "fedavg"],
    "participation": "uniform",
    "clients_per_round": 4,
    "lr": [0.01, 0.03],
    "local_steps": [1, 2],
    "rounds": 60,
    "seeds": 5,
    "seed_block": 2,
    "seed": 3,
}

#: 16 tasks of a few tenths of a second each: long enough to kill something mid-sweep.
SLOW_TOML = """
problem = "figure4"
algorithm = ["focus", "fedavg"]
participation = "uniform"
clients_per_round = 4
lr = [1e-4, 2e-4, 3e-4, 4e-4]
local_steps = [2, 4]
rounds = 1000
seeds = 4
"""


@pytest.fixture(scope="module")
def engine():
    with Engine(workers=2) as eng:
        yield eng


@pytest.fixture(scope="module")
def fast_store(engine, tmp_path_factory):
    path = tmp_path_factory.mktemp("fast") / "store"
    summary = run_sweep(FAST, path, scheduler=engine.address, progress=False)
    return path, summary


@pytest.fixture(scope="module")
def slow_reference(engine, tmp_path_factory):
    """An uninterrupted sweep of SLOW_TOML on the module's cluster."""
    d = tmp_path_factory.mktemp("slow")
    spec = d / "slow.toml"
    spec.write_text(SLOW_TOML)
    run_sweep(spec, d / "reference", scheduler=engine.address, progress=False)
    return spec, xr.open_zarr(d / "reference").load()


def _n_complete_tasks(store: Path) -> int:
    """Tasks whose seeds are all flagged complete (SLOW_TOML: one task per grid point)."""
    if not (store / "zarr.json").is_file():
        return 0
    done = zarr.open_group(store, mode="r")["complete"][...]
    return int(done.all(axis=-1).sum())


# --- the spec --------------------------------------------------------------------------------


def test_spec_defaults_order_and_hash():
    a = normalize(
        {
            "lr": [0.1, 0.2],
            "algorithm": ["focus", "fedavg"],
            "problem": "quadratic",
            "local_steps": 1,
            "rounds": 5,
        }
    )
    # dimensions follow KEYS, not the table's order; ints for float keys become floats
    assert list(a.swept) == ["algorithm", "lr"]
    assert a.values["seeds"] == 1 and a.values["seed_block"] == 1 and a.values["global_lr"] == 1.0
    b = normalize(
        {
            "problem": "quadratic",
            "rounds": 5,
            "local_steps": 1,
            "algorithm": ["focus", "fedavg"],
            "lr": [0.1, 0.2],
            "global_lr": 1,
        }
    )
    assert a.hash == b.hash  # same normalized spec, written differently
    c = normalize({**b.to_dict(), "lr": [0.1, 0.3]})
    assert c.hash != a.hash
    d = normalize({**b.to_dict(), "lr": 0.1})  # a scalar is not a one-point sweep
    assert d.hash != normalize({**b.to_dict(), "lr": [0.1]}).hash
    # every key but those added after the first stores, which a spec holds only when set
    assert set(a.to_dict()) == set(KEYS) - set(LATER_KEYS)
    skip = normalize({**a.to_dict(), "participation": "bernoulli", "empty": "skip"})
    assert skip.to_dict()["empty"] == "skip" and skip.hash != a.hash


def test_spec_files_are_hashed_by_content_and_relative_to_the_toml(tmp_path):
    rng = np.random.default_rng(0)
    sub = tmp_path / "runs"
    sub.mkdir()
    np.savez(sub / "p.npz", A=rng.standard_normal((4, 6, 3)), b=rng.standard_normal((4, 6)))
    toml = sub / "s.toml"
    toml.write_text(
        'problem_file = "p.npz"\nalgorithm = "focus"\nlr = 0.1\nlocal_steps = 1\nrounds = 3\n'
    )
    spec = load_spec(toml)
    assert spec.values["problem_file"] == str((sub / "p.npz").resolve())
    h = spec.hash
    moved = tmp_path / "q.npz"
    (sub / "p.npz").rename(moved)
    same = normalize({**spec.to_dict(), "problem_file": str(moved)})
    assert same.hash == h  # moving the file keeps the hash
    np.savez(moved, A=rng.standard_normal((4, 6, 3)), b=rng.standard_normal((4, 6)))
    assert normalize({**spec.to_dict(), "problem_file": str(moved)}).hash != h


BASE = {"problem": "quadratic", "algorithm": "focus", "lr": 0.1, "local_steps": 1, "rounds": 5}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"learning_rate": 0.1}, "unknown key 'learning_rate' in spec: valid keys are problem,"),
        ({"lr": None}, "needs the key 'lr'"),
        ({"rounds": [5, 10]}, "key 'rounds' in spec cannot be swept"),
        ({"seed": [0, 1]}, "key 'seed' in spec cannot be swept"),
        ({"lr": []}, "key 'lr' in spec is an empty list"),
        ({"lr": [0.1, 0.1]}, "key 'lr' in spec lists 0.1 twice"),
        ({"local_steps": 2.5}, "key 'local_steps' in spec must be an integer, got 2.5"),
        ({"local_steps": 0}, "key 'local_steps' in spec must be >= 1, got 0"),
        ({"lr": -1.0}, "key 'lr' in spec must be > 0, got -1.0"),
        ({"lr": "fast"}, "key 'lr' in spec must be a number"),
        ({"lr": {"a": 1}}, "key 'lr' in spec must be a float or a list of them"),
        ({"float32": "yes"}, "key 'float32' in spec must be true or false"),
        ({"participation": "sometimes"}, "key 'participation' in spec is 'sometimes': choose"),
        ({"algorithm": ["focus", "fedsgdx"]}, "unknown algorithm 'fedsgdx'"),
        ({"problem_file": "nowhere.npz"}, "key 'problem_file' in spec: no such file"),
        ({"problem": None}, "needs exactly one of 'problem'"),
    ],
)
def test_spec_errors_name_the_key(change, message):
    raw = {**BASE, **change}
    raw = {k: v for k, v in raw.items() if v is not None}
    with pytest.raises(FedTheoryError) as err:
        normalize(raw)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_spec_file_errors(tmp_path):
    with pytest.raises(FedTheoryError, match="no such spec file"):
        load_spec(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("lr = [0.1,\n")
    with pytest.raises(FedTheoryError, match="bad.toml is not valid TOML"):
        load_spec(bad)


def test_grid_and_tasks_cover_every_seed_of_every_point_once():
    spec = normalize(FAST)
    tasks = spec.tasks()
    assert spec.grid_shape == (2, 2, 2)  # algorithm, local_steps, lr (KEYS order)
    assert list(spec.swept) == ["algorithm", "local_steps", "lr"]
    assert spec.seed_blocks() == [(0, 1), (2, 3), (4,)]
    assert len(tasks) == 8 * 3 and [t.index for t in tasks] == list(range(24))
    seen = np.zeros(spec.grid_shape + (5,), dtype=int)
    for t in tasks:
        for k, i in zip(spec.swept, t.point, strict=True):
            assert t.config[k] == spec.swept[k][i]
        seen[t.point + (list(t.seed_ids),)] += 1
    assert (seen == 1).all()
    # C order of the swept dimensions, seed blocks innermost
    assert [t.point for t in tasks[:4]] == [(0, 0, 0)] * 3 + [(0, 0, 1)]


def test_bad_combinations_are_refused_before_any_task(tmp_path):
    spec = {**BASE, "participation": "uniform", "clients_per_round": [4, 17]}
    with pytest.raises(FedTheoryError, match="at clients_per_round=17: clients_per_round = 17 "):
        run_sweep(spec, tmp_path / "s", workers=1)
    spec = {**BASE, "participation": "cluster", "clients_per_round": 2}
    with pytest.raises(FedTheoryError, match="'cluster' needs clusters C"):
        run_sweep(spec, tmp_path / "s", workers=1)
    assert not (tmp_path / "s").exists()  # nothing is created for a spec that cannot run


def test_the_core_package_does_not_import_the_extra(modules_loaded_by):
    code = (
        "import fedtheory, fedtheory.simulation, fedtheory.cli, fedtheory.sweep; "
        "fedtheory.cli.build_parser()"
    )
    assert modules_loaded_by(code, ("dask", "distributed", "zarr", "xarray")) == []


def test_missing_extra_is_one_line(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(
        'problem = "quadratic"\nalgorithm = "focus"\nlr = 0.1\nlocal_steps = 1\nrounds = 3\n'
    )
    code = (
        "import sys; sys.modules['zarr'] = None; from fedtheory.cli import main; "
        f"sys.exit(main(['sweep', {str(spec)!r}, '--store', {str(tmp_path / 'st')!r}]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "fedtheory: error: fedtheory sweep needs zarr: pip install 'fedtheory[sweep]'"
    ]


# --- the engine ------------------------------------------------------------------------------


def _env(name):
    return os.environ.get(name)


def _initial_env(names):
    """These variables as this process was started with them (Linux), not as changed since."""
    raw = Path("/proc/self/environ").read_bytes().split(b"\0")
    env = dict(item.decode().split("=", 1) for item in raw if b"=" in item)
    return [env.get(n) for n in names]


def _die_once(args):
    """Kill this worker process the first time (marker file), then return the item."""
    marker, item = args
    if item == 0 and not os.path.exists(marker):
        Path(marker).write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return item * item


def _fail_on_three(x):
    if x == 3:
        raise ValueError("three is not allowed")
    time.sleep(0.05)
    return x


@pytest.mark.skipif(
    sys.platform != "linux",
    reason="reads a worker's start-up environment from /proc/self/environ, which only Linux has",
)
def test_workers_start_with_one_blas_thread(monkeypatch):
    names = ["OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"]
    for name in names:
        monkeypatch.setenv(name, "3")
    with Engine(workers=1) as eng:
        assert [os.environ[n] for n in names] == ["3"] * 3  # the driver's environment is kept
        [(_, started_with)] = list(eng.map(_initial_env, [names], progress=False))
    # in the worker's environment from its start, so the BLAS numpy loaded there has one thread
    assert started_with == ["1", "1", "1"]


@pytest.mark.skipif(
    sys.platform != "linux",
    reason="reads a worker's start-up environment from /proc/self/environ, which only Linux has",
)
def test_workers_keep_the_allocators_own_trim_threshold(monkeypatch):
    """Dask's default worker environment sets MALLOC_TRIM_THRESHOLD_=65536, with which a sweep
    task took 1.7x its CPU time in a plain process (every round's arrays went back to the OS and
    were faulted in again); local workers start without it."""
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    with Engine(workers=1) as eng:
        [(_, started_with)] = list(
            eng.map(_initial_env, [["MALLOC_TRIM_THRESHOLD_"]], progress=False)
        )
    assert started_with == [None]


def test_a_worker_that_dies_mid_task_is_replaced_and_nothing_is_lost(engine, tmp_path):
    marker = str(tmp_path / "died")
    out = dict(engine.map(_die_once, [(marker, i) for i in range(6)], progress=False))
    assert Path(marker).exists()  # a worker really died mid-task
    assert out == {i: i * i for i in range(6)}
    engine.client.wait_for_workers(2, timeout=60)


def test_a_failing_task_is_one_line_naming_it(engine):
    with pytest.raises(FedTheoryError) as err:
        list(engine.map(_fail_on_three, range(6), progress=False, describe=lambda x: f"x={x}"))
    assert str(err.value) == "task 3 (x=3) failed: ValueError: three is not allowed"


def test_engine_arguments(monkeypatch):
    with pytest.raises(FedTheoryError, match="not both"):
        Engine(workers=2, scheduler="tcp://127.0.0.1:1")
    with pytest.raises(FedTheoryError, match="workers must be >= 1"):
        Engine(workers=0)
    monkeypatch.setattr("fedtheory.parallel.CONNECT_TIMEOUT", "1s")
    with pytest.raises(
        FedTheoryError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9"
    ):
        list(map_tasks(_env, ["X"], scheduler="tcp://127.0.0.1:9", progress=False))


# --- results ---------------------------------------------------------------------------------


def _reference(config, seed_ids):
    """``simulate`` for one grid point and block, as a user would call it."""
    problem = make_problem(config["problem"], seed=config["seed"])
    model = make_participation("uniform", problem.n_clients, config["clients_per_round"])
    return simulate(
        problem,
        config["algorithm"],
        model,
        rounds=config["rounds"],
        seeds=len(seed_ids),
        seed=config["seed"],
        seed_ids=list(seed_ids),
        lr=config["lr"],
        local_steps=config["local_steps"],
    )


def test_results_equal_simulate(engine, fast_store):
    path, summary = fast_store
    assert summary["tasks_total"] == 24 and summary["tasks_run"] == 24
    assert summary["tasks_skipped"] == 0 and summary["store"] == str(path.absolute())
    ds = xr.open_zarr(path).load()  # what the issue promises: plain xarray opens it
    assert ds.error.dims == ("algorithm", "local_steps", "lr", "seed", "round")
    assert list(ds.algorithm.values) == ["scaffold", "fedavg"]
    assert list(ds.lr.values) == [0.01, 0.03] and list(ds.local_steps.values) == [1, 2]
    assert ds.sizes["seed"] == 5 and ds.sizes["round"] == 61
    assert bool(ds.complete.all())
    assert json.loads(ds.attrs["fedtheory_spec"])["lr"] == [0.01, 0.03]
    assert ds.attrs["fedtheory_spec_hash"] == normalize(FAST).hash
    assert summary["seeds_diverged"] == int(ds.diverged.sum()) > 0  # lr = 0.03 diverges
    spec = normalize(FAST)
    tasks = spec.tasks()
    # bit for bit: the same call on a worker of the same cluster
    futures = [engine.client.submit(_reference, t.config, t.seed_ids, pure=False) for t in tasks]
    for task, fut in zip(tasks, futures, strict=True):
        ref = fut.result()
        got = ds.isel(dict(zip(spec.swept, task.point, strict=True)))
        got = got.isel(seed=list(task.seed_ids))
        np.testing.assert_array_equal(got.error.values, ref.error)
        np.testing.assert_array_equal(got.x_final.values, ref.x_final)
        np.testing.assert_array_equal(got.diverged.values, ref.diverged)
        np.testing.assert_array_equal(got.diverged_at.values, ref.diverged_at)
    # to 1e-12 relative: all five seeds at once, in this process (other shapes, other BLAS)
    for point in np.ndindex(*spec.grid_shape):
        at = dict(zip(spec.swept, point, strict=True))
        config = {**tasks[0].config, **{k: spec.swept[k][i] for k, i in at.items()}}
        ref = _reference(config, range(5))
        got = ds.isel(at)
        # error = ||x - x*|| / ||x*|| is already scaled by ||x*||: models that agree to 1e-15
        # of ||x*|| give errors within 1e-14 absolute, however small the error itself is
        np.testing.assert_allclose(got.error.values, ref.error, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(got.x_final.values, ref.x_final, rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(got.diverged.values, ref.diverged)


def test_open_and_rerun_skips_everything(engine, fast_store, tmp_path):
    path, _ = fast_store
    before = xr.open_zarr(path).load()
    xr.testing.assert_identical(open_sweep(path).load(), before)
    again = run_sweep(FAST, path, scheduler=engine.address, progress=False)
    assert (again["tasks_skipped"], again["tasks_run"], again["engine"]) == (24, 0, None)
    xr.testing.assert_identical(xr.open_zarr(path).load(), before)
    with pytest.raises(FedTheoryError, match="no sweep store at"):
        open_sweep(tmp_path)


def test_a_store_from_another_spec_is_refused(engine, fast_store):
    path, _ = fast_store
    before = xr.open_zarr(path).load()
    with pytest.raises(FedTheoryError) as err:
        run_sweep({**FAST, "rounds": 61, "seeds": 6}, path, workers=1, progress=False)
    assert str(err.value) == (
        f"the store {path.absolute()} was made from a different spec (it differs in rounds, "
        "seeds): give another --store, or the spec it was made from (its attribute "
        "fedtheory_spec)"
    )
    xr.testing.assert_identical(xr.open_zarr(path).load(), before)


def test_an_empty_directory_becomes_the_store(engine, tmp_path):
    small = {**FAST, "algorithm": "fedavg", "lr": 0.01, "local_steps": 1, "seeds": 2}
    (tmp_path / "empty").mkdir()
    summary = run_sweep(small, tmp_path / "empty", scheduler=engine.address, progress=False)
    assert summary["tasks_run"] == 1 and summary["dims"] == {
        "seed": 2,
        "round": 61,
        "component": 20,
    }
    ds = xr.open_zarr(tmp_path / "empty")
    assert ds.error.dims == ("seed", "round") and bool(ds.complete.all())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]  # no temporary left behind


def test_stores_that_cannot_be_made(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(FedTheoryError, match=r"cannot create the store .*file/store: "):
        run_sweep(FAST, tmp_path / "file" / "store", workers=1)
    with pytest.raises(FedTheoryError, match="exists and is not a directory"):
        run_sweep(FAST, tmp_path / "file", workers=1)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(FedTheoryError, match="not empty and not a fedtheory sweep store"):
        run_sweep(FAST, tmp_path / "other", workers=1)
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine"


def test_full_disk_is_one_line_and_the_store_stays_readable(
    engine, fast_store, tmp_path, monkeypatch
):
    """The 5th task's x_final chunk cannot be written: ENOSPC, as from a full disk."""
    store = tmp_path / "full"
    real_set = zarr.storage.LocalStore.set
    writes = {"x_final": 0}

    async def set_or_fail(self, key, value):
        if key.startswith("x_final/c"):
            writes["x_final"] += 1
            if writes["x_final"] >= 5:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return await real_set(self, key, value)

    monkeypatch.setattr(zarr.storage.LocalStore, "set", set_or_fail)
    with pytest.raises(FedTheoryError) as err:
        run_sweep(FAST, store, scheduler=engine.address, progress=False)
    msg = str(err.value)
    assert "No space left on device" in msg and "running the same command again resumes" in msg
    assert "\n" not in msg
    ds = xr.open_zarr(store).load()  # readable: every chunk there is whole
    done = ds.complete.values
    tasks = normalize(FAST).tasks()
    assert sum(bool(done[t.point + (list(t.seed_ids),)].all()) for t in tasks) == 4
    monkeypatch.setattr(zarr.storage.LocalStore, "set", real_set)
    summary = run_sweep(FAST, store, scheduler=engine.address, progress=False)
    assert (summary["tasks_skipped"], summary["tasks_run"]) == (4, 20)
    xr.testing.assert_identical(xr.open_zarr(store).load(), xr.open_zarr(fast_store[0]).load())


# --- faults ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_driver_killed_with_sigkill_resumes_to_the_uninterrupted_store(
    engine, slow_reference, tmp_path
):
    spec, reference = slow_reference
    store = tmp_path / "killed"
    cmd = [
        sys.executable,
        "-m",
        "fedtheory",
        "sweep",
        str(spec),
        "--store",
        str(store),
        "--workers",
        "2",
        "--no-progress",
    ]
    proc = subprocess.Popen(
        cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 120
        while _n_complete_tasks(store) < 3 and proc.poll() is None:
            assert time.monotonic() < deadline, "the sweep did not start"
            time.sleep(0.02)
        assert proc.poll() is None, "the sweep ended before it could be killed: lengthen it"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        time.sleep(0.5)  # its workers exit when the driver's pipe closes; make sure of it
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    killed_at = _n_complete_tasks(store)
    assert 3 <= killed_at < 16
    partial = xr.open_zarr(store).load()  # readable after the kill
    assert int(partial.complete.all("seed").sum()) == killed_at

    out = tmp_path / "summary.json"
    code = main(
        [
            "sweep",
            str(spec),
            "--store",
            str(store),
            "--scheduler",
            engine.address,
            "--json",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    summary = json.loads(out.read_text())
    assert summary["tasks_total"] == 16
    assert (summary["tasks_skipped"], summary["tasks_run"]) == (killed_at, 16 - killed_at)
    assert isinstance(summary["seconds"], float) and summary["store"] == str(store)
    xr.testing.assert_identical(xr.open_zarr(store).load(), reference)


@pytest.mark.slow
def test_worker_killed_mid_sweep_loses_nothing(engine, slow_reference, tmp_path):
    spec, reference = slow_reference
    client = engine.client
    pids = client.run(os.getpid)
    box: dict = {}

    def sweep() -> None:
        try:
            box["summary"] = run_sweep(
                spec, tmp_path / "w", scheduler=engine.address, progress=False
            )
        except BaseException as exc:  # handed to the test thread
            box["error"] = exc

    thread = threading.Thread(target=sweep)
    thread.start()
    victim, deadline = None, time.monotonic() + 60
    while victim is None and time.monotonic() < deadline:
        busy = [a for a, keys in client.processing().items() if keys and a in pids]
        victim = busy[0] if busy and _n_complete_tasks(tmp_path / "w") >= 1 else None
        time.sleep(0.02)
    assert victim is not None, "no task ever ran"
    os.kill(pids[victim], signal.SIGKILL)
    thread.join(timeout=180)
    assert "error" not in box, box.get("error")
    assert box["summary"]["tasks_run"] == 16
    assert pids[victim] not in client.run(os.getpid).values()  # the worker was replaced
    xr.testing.assert_identical(xr.open_zarr(tmp_path / "w").load(), reference)
    client.wait_for_workers(2, timeout=60)


def test_the_sweeps_notebook_exists():
    assert (ROOT / "notebooks" / "05_sweeps.ipynb").is_file()


def test_weighted_without_probabilities_takes_the_problems_own_and_says_so(engine, tmp_path):
    """figure4 carries its own draw weights: a ``weighted`` sweep point given none runs with
    them (to 1e-12 of ``simulate`` with ``p = participation_p`` given), the summary names the
    problem, and a sweep whose model takes no weights names none."""
    spec = {
        "problem": "figure4",
        "algorithm": "focus",
        "participation": "weighted",
        "clients_per_round": 4,
        "local_steps": 3,
        "lr": 1e-4,
        "rounds": 20,
        "seeds": 2,
    }
    summary = run_sweep(spec, tmp_path / "w", scheduler=engine.address, progress=False)
    assert summary["probabilities_from_problem"] == ["figure4"]
    prob = make_problem("figure4", seed=0)
    model = make_participation("weighted", prob.n_clients, 4, prob.participation_p)
    ref = simulate(prob, "focus", model, rounds=20, seeds=2, local_steps=3, lr=1e-4)
    got = xr.open_zarr(tmp_path / "w").load()
    np.testing.assert_allclose(got.error.values, ref.error, rtol=1e-12, atol=1e-14)
    uniform = {**spec, "participation": "uniform"}
    other = run_sweep(uniform, tmp_path / "u", scheduler=engine.address, progress=False)
    assert other["probabilities_from_problem"] == []
