"""A sweep store never returns wrong data (issue 23): checksums, repair on resume, ``--check``,
one driver per store, estimates before work, no empty store left behind.

Every test compares with one uninterrupted run of :data:`SPEC` on this module's one-worker Dask
cluster; a task run again there gives the same bits (same block, same BLAS, same machine), so
"repaired" is checked bit for bit, through plain ``xarray.open_zarr``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedtheory.cli import main
from fedtheory.errors import FedTheoryError, StoreError, StoreInUseError
from fedtheory.sweep import Engine, check, normalize
from fedtheory.sweep import open as open_sweep
from fedtheory.sweep import run as run_sweep
from fedtheory.sweep.store import LOCK_FILE, STORE_FORMAT, StoreLock, checksums
from fedtheory.validation import max_memory

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")

#: 8 small tasks: 2 algorithms x 2 step sizes x 2 seed blocks of 2 seeds.
SPEC = {
    "problem": "quadratic",
    "algorithm": ["fedavg", "focus"],
    "lr": [0.01, 0.02],
    "local_steps": 2,
    "rounds": 12,
    "seeds": 4,
    "seed_block": 2,
}


@pytest.fixture(scope="module")
def engine():
    with Engine(workers=1) as eng:
        yield eng


@pytest.fixture(scope="module")
def reference(engine, tmp_path_factory):
    """The uninterrupted store and its contents."""
    path = tmp_path_factory.mktemp("ref") / "store"
    summary = run_sweep(SPEC, path, scheduler=engine.address, progress=False)
    assert summary["tasks_run"] == 8 and summary["tasks_repaired"] == 0
    return path, xr.open_zarr(path).load()


def _copy(reference, tmp_path: Path) -> Path:
    dst = tmp_path / "store"
    shutil.copytree(reference[0], dst)
    return dst


def _resume(engine, path: Path) -> dict:
    return run_sweep(SPEC, path, scheduler=engine.address, progress=False)


def _same(path: Path, reference) -> None:
    """Plain xarray reads the store as the uninterrupted run, bit for bit (attributes too)."""
    xr.testing.assert_identical(xr.open_zarr(path).load(), reference[1])
    xr.testing.assert_identical(open_sweep(path).load(), reference[1])


# --- checksums ------------------------------------------------------------------------------


def test_checksums_cover_every_value_and_the_place():
    rng = np.random.default_rng(0)
    values = {
        "error": rng.random((2, 5)),
        "x_final": rng.random((2, 3)),
        "diverged": np.array([False, True]),
        "diverged_at": np.array([-1, 3]),
        "diverging": np.array([False, False]),
        "diverging_at": np.array([-1, -1]),
    }
    base = checksums((0, 1), (4, 5), values)
    assert base.dtype == np.uint64 and base[0] != base[1] and 0 not in base
    for name, arr in values.items():  # any one value changed changes its seed's checksum only
        changed = {**values, name: arr.copy()}
        changed[name][1] = ~arr[1] if arr.dtype == bool else arr[1] + 1
        got = checksums((0, 1), (4, 5), changed)
        assert got[0] == base[0] and got[1] != base[1], name
    assert not np.array_equal(checksums((1, 0), (4, 5), values), base)  # another grid point
    assert not np.array_equal(checksums((0, 1), (6, 7), values), base)  # other seeds
    nan = {**values, "error": np.where(values["error"] > 2, 0.0, -np.nan)}
    assert np.array_equal(
        checksums((0, 1), (4, 5), nan),  # one NaN: as Zarr reads it back
        checksums((0, 1), (4, 5), {**nan, "error": np.abs(nan["error"])}),
    )


def test_a_fresh_store_checks_complete(reference, capsys):
    report = check(reference[0])
    assert report.complete and report.counts() == {"complete": 8, "incomplete": 0, "damaged": 0}
    assert reference[1].attrs["fedtheory_store"] == STORE_FORMAT == "fedtheory-sweep-3"
    assert set(reference[1].data_vars) >= {"checksum", "diverging", "diverging_at"}
    assert main(["sweep", "--check", str(reference[0]), "--json", "-"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["tasks_total"], out["tasks_complete"], out["tasks_damaged"]) == (8, 8, 0)
    assert [t["state"] for t in out["tasks"]] == ["complete"] * 8


# --- damage: found by --check and open, repaired by a resume --------------------------------


@pytest.mark.parametrize(
    "damage, reason",
    [
        ("delete", "differ from its checksum"),
        ("truncate", "unreadable chunk of error"),
        ("garbage", "unreadable chunk of error"),
    ],
)
def test_a_damaged_chunk_is_found_refused_and_repaired(
    engine, reference, tmp_path, capsys, damage, reason
):
    """The issue's cases: a deleted chunk read back as NaN marked complete; a truncated or
    garbage chunk that resume called complete and reading failed on with a RuntimeError."""
    path = _copy(reference, tmp_path)
    chunk = path / "error" / "c" / "1" / "0" / "1" / "0"  # focus, lr 0.01, seeds 2-3
    if damage == "delete":
        chunk.unlink()
    elif damage == "truncate":
        chunk.write_bytes(chunk.read_bytes()[:10])
    else:
        chunk.write_bytes(os.urandom(200))
    report = check(path)
    assert report.counts() == {"complete": 7, "incomplete": 0, "damaged": 1}
    bad = next(t for t in report.tasks if t.state == "damaged")
    assert bad.index == 5 and "algorithm='focus', lr=0.01, seeds 2-3" in bad.task
    assert reason in bad.reason
    with pytest.raises(StoreError, match=r"1 damaged task: task 5 .*run the sweep again"):
        open_sweep(path)
    assert main(["sweep", "--check", str(path)]) == 1
    assert "task 5 (algorithm='focus', lr=0.01, seeds 2-3): damaged" in capsys.readouterr().out
    summary = _resume(engine, path)
    assert (summary["tasks_skipped"], summary["tasks_run"], summary["tasks_repaired"]) == (7, 1, 1)
    _same(path, reference)
    assert check(path).complete


def test_damaged_metadata_and_coordinates_are_rewritten(engine, reference, tmp_path):
    path = _copy(reference, tmp_path)
    (path / "error" / "zarr.json").unlink()
    coord = path / "lr" / "c" / "0"
    coord.write_bytes(coord.read_bytes()[:-3] + b"xyz")
    root = path / "zarr.json"
    root.write_bytes(root.read_bytes()[:200])  # not JSON any more, but names the spec's hash?
    report = check(path)
    assert "not JSON" in report.problem and not report.intact
    with pytest.raises(StoreError, match="is damaged, its metadata"):
        open_sweep(path)
    with pytest.raises(StoreError, match="not JSON"):  # the hash is cut off: not repaired
        _resume(engine, path)
    shutil.copy(reference[0] / "zarr.json", root)
    assert check(path).metadata == ["error/zarr.json", "lr/c/0"]
    summary = _resume(engine, path)
    assert summary["metadata_repaired"] == ["error/zarr.json", "lr/c/0"]
    assert summary["tasks_run"] == 0
    _same(path, reference)


def test_metadata_another_zarr_writes_otherwise_is_not_damage(engine, reference, tmp_path):
    """Another zarr version may lay out zarr.json otherwise or choose other codec defaults: what
    a read depends on is compared (shape, dtype, chunks, fill value, attributes; coordinates by
    value), so an upgrade does not make every store "damaged"; a resume rewrites the text."""
    path = _copy(reference, tmp_path)
    meta_path = path / "error" / "zarr.json"
    meta = json.loads(meta_path.read_text())
    meta["codecs"][1]["configuration"]["level"] = 3
    meta_path.write_text(json.dumps(dict(reversed(list(meta.items())))))
    assert check(path).complete
    xr.testing.assert_identical(open_sweep(path).load(), reference[1])
    summary = _resume(engine, path)
    assert summary["metadata_repaired"] == [] and summary["tasks_run"] == 0
    assert meta_path.read_bytes() == (reference[0] / "error" / "zarr.json").read_bytes()
    lr = zarr.open_array(path / "lr", mode="r+")
    lr[...] = np.array([0.01, 0.03])  # a coordinate that decodes to other values is damage
    assert check(path).metadata == ["lr/c/0"]
    assert _resume(engine, path)["metadata_repaired"] == ["lr/c/0"]
    _same(path, reference)


def test_a_damaged_root_naming_the_spec_is_rewritten(engine, reference, tmp_path):
    path = _copy(reference, tmp_path)
    root = path / "zarr.json"
    text = root.read_bytes()
    root.write_bytes(b"[" + text[1:])  # broken JSON, the spec hash still there
    summary = _resume(engine, path)
    assert summary["metadata_repaired"] == ["zarr.json"] and summary["tasks_run"] == 0
    _same(path, reference)


def test_a_store_of_the_old_format_is_refused(reference, tmp_path):
    path = _copy(reference, tmp_path)
    root = path / "zarr.json"
    meta = json.loads(root.read_text())
    meta["attributes"]["fedtheory_store"] = "fedtheory-sweep-1"
    root.write_text(json.dumps(meta))
    for call in (
        lambda: run_sweep(SPEC, path, workers=1, progress=False),
        lambda: open_sweep(path),
        lambda: check(path),
    ):
        with pytest.raises(StoreError, match="has format fedtheory-sweep-1, this fedtheory reads"):
            call()


# --- the property: resume repairs or refuses, never returns other data -----------------------

DAMAGE = st.lists(
    st.tuples(
        st.sampled_from(["remove", "flip", "truncate", "garbage"]),
        st.integers(0, 10**6),  # which file (modulo their number)
        st.integers(0, 10**6),  # where in it (modulo its size)
        st.binary(min_size=1, max_size=8),
    ),
    min_size=1,
    max_size=3,
)


def _damage(path: Path, ops: list) -> None:
    for op, which, where, data in ops:
        files = sorted(p for p in path.rglob("*") if p.is_file())
        f = files[which % len(files)]
        blob = f.read_bytes()
        at = where % max(len(blob), 1)
        if op == "remove":
            f.unlink()
        elif op == "flip":
            f.write_bytes(blob[:at] + bytes(b ^ 0xFF for b in data) + blob[at + len(data) :])
        elif op == "truncate":
            f.write_bytes(blob[:at])
        else:
            f.write_bytes(data * 40)


#: How the property test's examples ended (a store that is always refused would be no test).
OUTCOMES: dict[str, int] = {}


def test_resume_repairs_any_damage_or_refuses_in_one_line(engine, reference, tmp_path):
    """1 to 3 of: a file removed, bytes flipped, a file truncated or replaced by junk, anywhere
    in the store (chunks, metadata, coordinates, the lock file). A resume then either repairs
    it, bit for bit as the uninterrupted run through plain xarray, or refuses in one line, and
    then a reader is refused too (or reads the right data)."""
    OUTCOMES.clear()

    @settings(
        max_examples=20,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(ops=DAMAGE)
    def damaged(ops):
        path = tmp_path / "store"
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(reference[0], path)
        _damage(path, ops)
        try:
            _resume(engine, path)
        except FedTheoryError as exc:
            assert "\n" not in str(exc)
            OUTCOMES["refused"] = OUTCOMES.get("refused", 0) + 1
            try:
                ds = open_sweep(path).load()
            except FedTheoryError:
                return
            xr.testing.assert_identical(ds, reference[1])  # if it reads, the right data
            return
        assert check(path).complete  # what fedtheory.sweep.open verifies before it reads
        xr.testing.assert_identical(xr.open_zarr(path, chunks=None).load(), reference[1])
        OUTCOMES["repaired"] = OUTCOMES.get("repaired", 0) + 1

    damaged()
    assert sum(OUTCOMES.values()) == 20 and OUTCOMES.get("repaired", 0) >= 12, OUTCOMES


# --- one driver per store --------------------------------------------------------------------


def test_one_driver_per_store_and_a_killed_driver_leaves_no_lock(
    engine, reference, tmp_path, capsys
):
    path = _copy(reference, tmp_path)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; "
            "from fedtheory.sweep.store import StoreLock; StoreLock(Path(sys.argv[1])).acquire(); "
            "print('locked', flush=True); time.sleep(120)",
            str(path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(
            StoreInUseError,
            match=rf"in use by another fedtheory sweep \(pid "
            rf"{holder.pid} on .*\): one driver per store",
        ):
            _resume(engine, path)
        code = main(
            [
                "sweep",
                "--no-progress",
                str(_spec_file(tmp_path)),
                "--store",
                str(path),
                "--scheduler",
                engine.address,
            ]
        )
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and "in use by another fedtheory sweep" in err[0]
    finally:
        holder.send_signal(signal.SIGKILL)  # as a driver killed mid-sweep
        holder.wait(timeout=30)
        holder.stdout.close()
    assert (path / LOCK_FILE).is_file()  # the file stays; its lock went with the process
    assert _resume(engine, path)["tasks_skipped"] == 8


def test_a_link_planted_as_the_lock_is_refused_and_never_written_through(
    engine, reference, tmp_path, capsys
):
    """``ln -s victim.txt STORE/.fedtheory-lock``, then a sweep: the victim used to be emptied."""
    path = _copy(reference, tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (path / LOCK_FILE).unlink(missing_ok=True)
    (path / LOCK_FILE).symlink_to(victim)
    with pytest.raises(StoreError, match=f"holds {LOCK_FILE}, a symbolic link"):
        _resume(engine, path)
    assert victim.read_text() == "precious\n"
    code = main(
        [
            "sweep",
            "--no-progress",
            str(_spec_file(tmp_path)),
            "--store",
            str(path),
            "--scheduler",
            engine.address,
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "symbolic link" in err[0]
    assert victim.read_text() == "precious\n" and (path / LOCK_FILE).is_symlink()
    with pytest.raises(StoreError, match="is a symbolic link .never written through"):
        StoreLock(path).acquire()  # the lock itself opens without following a link
    assert victim.read_text() == "precious\n"
    (path / LOCK_FILE).unlink()
    os.mkfifo(path / LOCK_FILE)  # a FIFO in its place: refused too, never blocked on
    with pytest.raises(StoreError, match=f"holds {LOCK_FILE}, a FIFO"):
        _resume(engine, path)


def _alarm(seconds: int):
    """Fail (not hang) a block that takes longer than ``seconds``."""

    def ring(*_):
        raise AssertionError(f"blocked for more than {seconds} s")

    signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)


@pytest.mark.parametrize("where", ["error/c/1/0/1/0", "zarr.json", "lr/c/0"])
def test_a_fifo_in_the_store_is_refused_by_check_open_and_resume(
    engine, reference, tmp_path, capsys, where
):
    """A FIFO where a chunk or the metadata belongs used to hang ``sweep --check``, ``open``
    and the resume (zarr opened it and waited for a writer)."""
    path = _copy(reference, tmp_path)
    (path / where).unlink()
    os.mkfifo(path / where)
    _alarm(60)
    try:
        for call in (
            lambda: check(path),
            lambda: open_sweep(path),
            lambda: open_sweep(path, verify=False),
            lambda: _resume(engine, path),
        ):
            with pytest.raises(StoreError, match=f"holds {where}, a FIFO, where only files"):
                call()
        code = main(["sweep", "--check", str(path)])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and "a FIFO" in err[0]
    finally:
        signal.alarm(0)
    assert (path / where).exists()  # refused, not removed: the user's to look at


def _spec_file(tmp_path: Path) -> Path:
    lines = [f"{k} = {json.dumps(v)}" for k, v in SPEC.items()]
    path = tmp_path / "spec.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


# --- errors leave no store behind; sizes are refused before work ------------------------------


def test_an_error_leaves_no_empty_store_behind(tmp_path, capsys):
    spec = _spec_file(tmp_path)
    code = main(
        ["sweep", str(spec), "--store", str(tmp_path / "new"), "--scheduler", "notanaddress"]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "cannot reach the Dask scheduler at notanaddress" in err[0]
    assert not (tmp_path / "new").exists()
    (tmp_path / "empty").mkdir()  # a directory given empty is left empty
    with pytest.raises(FedTheoryError, match="cannot reach the Dask scheduler"):
        run_sweep(SPEC, tmp_path / "empty", scheduler="notanaddress", progress=False)
    assert list((tmp_path / "empty").iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "spec.toml"]


def test_workers_and_scheduler_together_are_refused(tmp_path, capsys):
    """With the core count as the default, argparse took ``--workers 2`` on a 2-core machine
    for an unset flag and ran on the scheduler."""
    spec = _spec_file(tmp_path)
    for n in ("1", "2", str(os.cpu_count())):
        code = main(
            [
                "sweep",
                str(spec),
                "--store",
                str(tmp_path / "s"),
                "--workers",
                n,
                "--scheduler",
                "tcp://127.0.0.1:9",
            ]
        )
        err = capsys.readouterr().err
        assert code == 2 and "not allowed with argument" in err, err
    assert not (tmp_path / "s").exists()


def test_a_million_point_grid_is_refused_with_its_estimate(tmp_path):
    grid = {
        **SPEC,
        "algorithm": "fedavg",
        "lr": [1e-6 * (i + 1) for i in range(1000)],
        "local_steps": list(range(1, 1001)),
        "seeds": 10,
        "seed_block": 10,
    }
    with pytest.raises(FedTheoryError) as err:
        run_sweep(grid, tmp_path / "big", workers=1, progress=False)
    msg = str(err.value)
    assert "the sweep of 1000000 tasks (1000 x 1000 grid points x 1 seed blocks" in msg
    assert "8000000 chunk files" in msg and "GiB of driver memory" in msg
    assert "raise --max-tasks" in msg and "\n" not in msg
    assert not (tmp_path / "big").exists()


def test_the_driver_memory_estimate_and_its_limit(tmp_path):
    many = {**SPEC, "seeds": 40, "seed_block": 1}  # 160 tasks: 2.5 MiB of driver memory
    with max_memory("1M"), pytest.raises(FedTheoryError) as err:
        run_sweep(many, tmp_path / "s", workers=1, progress=False)
    assert "the driver of the sweep of 160 tasks" in str(err.value)
    assert "needs about 2.5 MiB, more than the 1.0 MiB allowed by max_memory" in str(err.value)
    assert not (tmp_path / "s").exists()


def test_check_refuses_a_spec_or_a_non_store(tmp_path, capsys):
    assert main(["sweep", "--check", str(tmp_path)]) == 2
    assert "no sweep store at" in capsys.readouterr().err
    assert main(["sweep", str(_spec_file(tmp_path)), "--check", str(tmp_path)]) == 2
    assert "leave out SPEC" in capsys.readouterr().err
    assert main(["sweep", str(_spec_file(tmp_path))]) == 2
    assert "give SPEC.toml and --store DIR" in capsys.readouterr().err


def test_spec_lists_of_a_million_values_are_checked_at_once():
    spec = normalize({**SPEC, "lr": [1e-9 * (i + 1) for i in range(10**6)]})
    assert spec.n_tasks == 2 * 10**6 * 2
    with pytest.raises(FedTheoryError, match=r"lists 0.5 twice"):
        normalize({**SPEC, "lr": [0.1, 0.5, 0.2, 0.5]})
    with pytest.raises(FedTheoryError, match=r"'local_steps' in spec lists 1 twice"):
        normalize({**SPEC, "local_steps": [1, 2, 1]})
    with pytest.raises(FedTheoryError, match="must be > 0, got -1.0"):
        normalize({**SPEC, "lr": [0.1] + [-1.0]})
