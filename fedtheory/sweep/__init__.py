"""Sweeps that outgrow one process: a grid of simulations as Dask tasks in a resumable Zarr store.

A sweep spec (a TOML table, :mod:`fedtheory.sweep.spec`) names a problem, an algorithm and the
flags of ``fedtheory simulate``; every key given as a list is swept (cartesian product), a
``[zip]`` table pairs lists into one axis, and ``[algorithms.NAME]`` tables give each algorithm
its own settings on one ``run`` axis (docs/sweeps.md). Each
grid point and block of ``seed_block`` seeds is one task (:func:`fedtheory.sweep.task.run_task`,
one batched :func:`~fedtheory.simulation.simulate` call), run on Dask
(:mod:`fedtheory.parallel`): a local cluster of worker processes with one BLAS thread each,
or a running scheduler, e.g. of a Slurm cluster::

    from dask_jobqueue import SLURMCluster     # pip install dask-jobqueue
    cluster = SLURMCluster(cores=1, processes=1, memory="4GB", walltime="02:00:00",
                           job_script_prologue=["export OMP_NUM_THREADS=1",
                                                "export OPENBLAS_NUM_THREADS=1"])
    cluster.scale(jobs=32)
    fedtheory.sweep.run("spec.toml", "/shared/run.zarr", scheduler=cluster.scheduler_address)

The workers need fedtheory installed and read ``problem_file`` / ``probabilities`` at their
paths (a shared file system); the store need not be visible to them: the driver alone writes
it, as results come back.

Results go to a Zarr store (:mod:`fedtheory.sweep.store`) that ``xarray.open_zarr(DIR)`` opens:
``error`` with one dimension per axis plus ``seed`` and ``round``, ``x_final``,
``diverged``, ``diverged_at``, ``diverging``, ``diverging_at``, ``checksum`` and ``complete``,
each with CF ``long_name`` and ``units``; the settings fixed over the grid are attributes.
The driver writes each task's region, then its checksums and completion flags, as the task
finishes, so running the same sweep on the same store again skips the complete tasks: a driver
killed with SIGKILL loses at most the tasks in flight, a worker killed mid-task is re-run by
Dask. A resume verifies every task against its checksums and runs damaged ones again (a chunk
deleted, truncated or altered), and rewrites damaged metadata; :func:`open` and :func:`check`
verify the store and never return data that fail it. One driver runs per store (a lock that the
kernel drops when the driver ends, however it ends); a store made from another spec is refused,
unless the spec extends it (more seeds, values appended to an axis): then the store grows and
only the new tasks run.

Size is estimated before any work: the number of tasks (at most ``max_tasks``, 100000 by
default), the driver's memory (refused beyond the memory limit, ``--max-memory``) and the store's
size on disk (refused beyond the free space).

dask, zarr and xarray are an optional extra (``pip install 'fedtheory[sweep]'``): this package
imports them only when a sweep runs or a store is opened.

Examples
--------
>>> spec = {"problem": "quadratic", "algorithm": ["focus", "fedavg"], "lr": [0.01, 0.02],
...         "local_steps": 2, "rounds": 50, "seeds": 4}
>>> summary = run(spec, "sweep.zarr", workers=2)          # doctest: +SKIP
>>> ds = open("sweep.zarr")                               # doctest: +SKIP
>>> ds.error.isel(round=-1).median("seed")                # doctest: +SKIP
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from fedtheory._version import __version__
from fedtheory.backend import get_backend
from fedtheory.errors import FedTheoryError
from fedtheory.parallel import Engine, map_tasks, sweep_module
from fedtheory.simulation.metrics import MODEL_DIM
from fedtheory.sweep.spec import KEYS, Spec, Task, load_spec, normalize
from fedtheory.sweep.store import (
    FILE_BYTES,
    MAX_TASKS,
    SLAB_BYTES,
    TASK_BYTES,
    VARIABLES,
    StoreCheck,
    SweepStore,
    check_store,
    open_dataset,
    stored_spec,
)
from fedtheory.sweep.task import TaskResult, check_spec, run_task
from fedtheory.validation import check_int, check_memory, format_bytes

# ``open`` is public (``fedtheory.sweep.open``) but not in __all__: a star import would shadow
# the builtin.
__all__ = [
    "KEYS",
    "Engine",
    "Spec",
    "StoreCheck",
    "Task",
    "TaskResult",
    "check",
    "estimate",
    "load_spec",
    "map_tasks",
    "normalize",
    "run",
    "run_task",
]


def _as_spec(spec: Spec | dict | str | os.PathLike) -> Spec:
    if isinstance(spec, Spec):
        return spec
    if isinstance(spec, dict):
        return normalize(spec)
    if isinstance(spec, str | os.PathLike):
        return load_spec(spec)
    raise FedTheoryError(
        f"a sweep spec is a dict, a TOML file or a Spec, got {type(spec).__name__}"
    )


def estimate(spec: Spec, dim: int) -> dict:
    """The size of a sweep before any work: ``tasks``, ``files`` (chunk files at most),
    ``store_bytes`` (uncompressed data plus a block per file) and ``driver_bytes`` (the driver's
    memory: :data:`~fedtheory.sweep.store.TASK_BYTES` per task and a slab of the store read at
    once while it is verified)."""
    S, R = spec.values["seeds"], spec.values["rounds"]
    points = math.prod(spec.grid_shape)
    per_seed = sum(
        np.dtype(var.dtype).itemsize * {"round": R + 1, MODEL_DIM: dim, None: 1}[var.extra]
        for var in VARIABLES.values()
    )
    files = spec.n_tasks * len(VARIABLES)
    return {
        "tasks": spec.n_tasks,
        "files": files,
        "store_bytes": float(points) * S * per_seed + float(files) * FILE_BYTES,
        "driver_bytes": float(spec.n_tasks) * TASK_BYTES
        + min(SLAB_BYTES, float(points) * S * per_seed),
    }


def _check_size(spec: Spec, dim: int, store: Path, max_tasks: int) -> dict:
    """Refuse a sweep beyond ``max_tasks``, the memory limit or the free disk space, naming
    the estimate and how to proceed."""
    size = estimate(spec, dim)
    grid = " x ".join(map(str, spec.grid_shape)) or "1"
    what = (
        f"the sweep of {size['tasks']} tasks ({grid} grid points x {spec.n_seed_blocks} "
        f"seed blocks; a store of up to {size['files']} chunk files, "
        f"{format_bytes(size['store_bytes'])})"
    )
    if size["tasks"] > max_tasks:
        raise FedTheoryError(
            f"{what} has more than --max-tasks {max_tasks} tasks: each costs Dask about "
            f"{format_bytes(TASK_BYTES)} of driver memory and a few ms, and the store "
            f"{len(VARIABLES)} files ({format_bytes(size['driver_bytes'])} of driver memory in "
            "all): sweep fewer points per store (split the grid), or raise --max-tasks"
        )
    check_memory(
        f"the driver of {what}",
        size["driver_bytes"],
        hint="sweep fewer points per store (split the grid), or fewer seed blocks",
    )
    if not (store / "zarr.json").is_file():
        where = next(p for p in (store, *store.parents) if p.exists())
        free = shutil.disk_usage(where).free
        if size["store_bytes"] > free:
            raise FedTheoryError(
                f"{what} needs up to {format_bytes(size['store_bytes'])} of disk, more than the "
                f"{format_bytes(free)} free at {where}: put the store elsewhere or sweep less"
            )
    return size


def _say(progress: bool, line: str) -> None:
    """A line on stderr saying what the sweep is doing (with the progress bar)."""
    if progress:
        print(f"sweep: {line}", file=sys.stderr, flush=True)


def _report_repairs(progress: bool, repaired: list[str], damaged: dict) -> None:
    if repaired:
        _say(progress, f"rewrote damaged metadata: {', '.join(repaired)}")
    if damaged:
        first = next(iter(damaged.values()))
        _say(
            progress,
            f"{len(damaged)} damaged task(s) run again (task {first.index}, "
            f"{first.task}: {first.reason}{'; ...' if len(damaged) > 1 else ''})",
        )


def run(
    spec: Spec | dict | str | os.PathLike,
    store: str | os.PathLike,
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: bool = True,
    max_tasks: int = MAX_TASKS,
) -> dict:
    """Run a sweep into ``store``, skipping the tasks it already holds complete and intact.

    Parameters
    ----------
    spec : dict, path of a TOML file, or Spec
        The sweep (:data:`fedtheory.sweep.spec.KEYS`); relative paths in a TOML file are
        relative to the file, in a dict to the working directory.
    store : path
        Directory of the Zarr store: created when absent (or empty), resumed when it holds a
        store made from the same spec: damaged tasks are run again, damaged metadata rewritten.
        A store made from a spec that ``spec`` extends (more seeds, values appended to axes:
        :meth:`~fedtheory.sweep.spec.Spec.growth`) grows, and only the new tasks run.
    workers : int, optional
        Local Dask worker processes (default: the cores available). Not with ``scheduler``.
    scheduler : str, optional
        Address of a running Dask scheduler.
    progress : bool
        Say on stderr what the sweep does (its size, the store's state) and show a progress
        bar while tasks run.
    max_tasks : int
        Refuse a sweep of more tasks (default :data:`~fedtheory.sweep.store.MAX_TASKS`).

    Returns
    -------
    dict
        ``tasks_total``, ``tasks_skipped`` (complete and intact in the store), ``tasks_run``,
        ``tasks_repaired`` (of those run, the ones that were damaged), ``extended`` (what the
        store grew by, ``["seed 4 -> 8"]``, when ``spec`` extends the spec that made it; else
        empty), ``metadata_repaired``
        (files rewritten), ``store`` (absolute path), ``seconds`` (wall time of this call),
        ``spec_hash``, ``dims`` (name -> length), ``engine`` (where the tasks ran; None when
        none ran), ``seeds_diverged`` and ``seeds_diverging`` (over the store's complete tasks),
        ``probabilities_from_problem`` (the problems whose own participation probabilities a
        ``weighted`` model given none takes, as figure4's), ``estimate`` (:func:`estimate`), ``fedtheory_version``.

    Raises
    ------
    FedTheoryError
        Bad spec, a sweep beyond ``max_tasks``, the memory limit or the free disk, a store
        from another spec (:class:`~fedtheory.errors.StoreError`) or in use by another driver
        (:class:`~fedtheory.errors.StoreInUseError`), an unwritable store or a full disk (the
        store keeps its complete tasks), a task that failed (naming it), the extra not
        installed. A store this call created is removed again when the call fails before any
        task is written.
    """
    t0 = time.perf_counter()
    path = Path(store).expanduser().absolute()
    spec = _as_spec(spec).on_store(stored_spec(path))  # more seeds: the store's block kept
    max_tasks = check_int("max_tasks", max_tasks, minimum=1)
    engine = Engine(workers=workers, scheduler=scheduler, tasks=spec.n_tasks)  # starts nothing
    if scheduler is None and spec.values.get("backend"):  # local workers have this machine's
        get_backend(spec.values["backend"])  # backends: one missing is refused before Dask
    if spec.n_tasks > max_tasks:  # before the grid's problems are built: refused at once
        _check_size(spec, 0, path, max_tasks)
    checked = check_spec(spec)
    dim = checked.dim
    size = _check_size(spec, dim, path, max_tasks)
    for module in ("zarr", "xarray", "dask"):  # a missing extra is one line, before anything
        sweep_module(module)
    tasks = spec.tasks()
    with SweepStore.open_or_create(path, spec, dim) as st:
        try:
            checks = st.verify(tasks) if not st.created else []
            done = {c.index for c in checks if c.state == "complete"}
            damaged = {c.index: c for c in checks if c.state == "damaged"}
            todo = [t for t in tasks if t.index not in done]
            if st.extended:
                _say(
                    progress,
                    f"extending the store ({', '.join(st.extended)}): {len(done)} tasks kept",
                )
            if todo:
                st.check_writable()
                with engine:  # what it does, once nothing but a task can fail
                    _say(
                        progress,
                        f"running {len(todo)} of {len(tasks)} tasks on a "
                        f"{engine.describe()}; store up to "
                        f"{format_bytes(size['store_bytes'])} in {size['files']} "
                        f"chunk files, driver about "
                        f"{format_bytes(size['driver_bytes'])}",
                    )
                    _report_repairs(progress, st.repaired, damaged)
                    for i, result in engine.map(
                        run_task,
                        todo,
                        progress=progress,
                        desc="sweep",
                        name="fedtheory-sweep",
                        describe=lambda t: t.describe(spec),
                    ):
                        st.write(todo[i], result, again=todo[i].index in damaged)
            else:
                _report_repairs(progress, st.repaired, damaged)
            seeds_diverged, seeds_diverging = st.count_diverged()
        except BaseException:
            st.remove()  # a store made by this call that holds no task is not left behind
            raise
    dims = {a.name: len(a.points) for a in spec.axes}
    dims.update({"seed": spec.values["seeds"], "round": spec.values["rounds"] + 1, MODEL_DIM: dim})
    return {
        "tasks_total": len(tasks),
        "tasks_skipped": len(done),
        "tasks_run": len(todo),
        "tasks_repaired": len(damaged),
        "extended": st.extended,
        "metadata_repaired": st.repaired,
        "store": str(st.path),
        "seconds": time.perf_counter() - t0,
        "spec_hash": spec.hash,
        "dims": dims,
        "engine": engine.describe() if todo else None,
        "seeds_diverged": seeds_diverged,
        "seeds_diverging": seeds_diverging,
        "probabilities_from_problem": list(checked.problem_p),
        "estimate": size,
        "fedtheory_version": __version__,
    }


def check(store: str | os.PathLike) -> StoreCheck:
    """The state of every task of the store (complete, incomplete or damaged, and why), and
    its damaged metadata, running nothing (:func:`fedtheory.sweep.store.check_store`)."""
    return check_store(store)


def open(store: str | os.PathLike | Path, *, verify: bool = True) -> Any:  # shadows open() here
    """The sweep store at ``store`` as a lazy :class:`xarray.Dataset`.

    ``ds.error`` has one dimension per axis plus ``seed`` and ``round``; seeds of tasks
    not yet run hold NaN and ``ds.complete`` False. The spec is ``ds.attrs["fedtheory_spec"]``.
    The store is verified first (metadata, coordinates and every task's checksums): a damaged
    store is refused with :class:`~fedtheory.errors.StoreError`, naming what is damaged (running
    the sweep again repairs it). ``verify=False`` skips that (it reads the whole store once).
    """
    return open_dataset(store, verify=verify)
