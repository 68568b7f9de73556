"""Sweeps that outgrow one process: a grid of simulations as Dask tasks in a resumable Zarr store.

A sweep spec (a TOML table, :mod:`fedtheory.sweep.spec`) names a problem, an algorithm and the
flags of ``fedtheory simulate``; every key given as a list is swept (cartesian product). Each
grid point and block of ``seed_block`` seeds is one task (:func:`fedtheory.sweep.task.run_task`,
one batched :func:`~fedtheory.simulation.simulate` call), run on Dask
(:mod:`fedtheory.sweep.engine`): a local cluster of worker processes with one BLAS thread each,
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
``error`` with one dimension per swept key plus ``seed`` and ``round``, ``x_final``,
``diverged``, ``diverged_at`` and ``complete``. The driver writes each task's region, then its
completion flags, as the task finishes, so running the same sweep on the same store again skips
the complete tasks: a driver killed with SIGKILL loses at most the tasks in flight, a worker
killed mid-task is re-run by Dask. A store made from another spec is refused.

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

import os
import time
from pathlib import Path
from typing import Any

from fedtheory._version import __version__
from fedtheory.errors import FedTheoryError
from fedtheory.sweep.engine import Engine, map_tasks
from fedtheory.sweep.spec import KEYS, Spec, Task, load_spec, normalize
from fedtheory.sweep.store import SweepStore, open_dataset
from fedtheory.sweep.task import TaskResult, check_spec, run_task

# ``open`` is public (``fedtheory.sweep.open``) but not in __all__: a star import would shadow
# the builtin.
__all__ = [
    "KEYS",
    "Engine",
    "Spec",
    "Task",
    "TaskResult",
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


def run(
    spec: Spec | dict | str | os.PathLike,
    store: str | os.PathLike,
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: bool = True,
) -> dict:
    """Run a sweep into ``store``, skipping the tasks it already holds.

    Parameters
    ----------
    spec : dict, path of a TOML file, or Spec
        The sweep (:data:`fedtheory.sweep.spec.KEYS`); relative paths in a TOML file are
        relative to the file, in a dict to the working directory.
    store : path
        Directory of the Zarr store: created when absent (or empty), resumed when it holds a
        store made from the same spec.
    workers : int, optional
        Local Dask worker processes (default: the cores available). Not with ``scheduler``.
    scheduler : str, optional
        Address of a running Dask scheduler.
    progress : bool
        A progress bar on stderr while tasks run.

    Returns
    -------
    dict
        ``tasks_total``, ``tasks_skipped`` (already complete in the store), ``tasks_run``,
        ``store`` (absolute path), ``seconds`` (wall time of this call), ``spec_hash``,
        ``dims`` (name -> length), ``engine`` (where the tasks ran; None when none ran),
        ``seeds_diverged`` (over the store's complete tasks), ``fedtheory_version``.

    Raises
    ------
    FedTheoryError
        Bad spec, a store from another spec, an unwritable store or a full disk (the store
        keeps its complete tasks), a task that failed (naming it), the extra not installed.
    """
    t0 = time.perf_counter()
    spec = _as_spec(spec)
    engine = Engine(workers=workers, scheduler=scheduler)  # checks the arguments, starts nothing
    dim = check_spec(spec)
    tasks = spec.tasks()
    st = SweepStore.open_or_create(store, spec, dim)
    done = st.completed(tasks)
    todo = [t for t in tasks if t.index not in done]
    if todo:
        st.check_writable()
        with engine:
            for i, result in engine.map(
                run_task,
                todo,
                progress=progress,
                desc="sweep",
                name="fedtheory-sweep",
                describe=lambda t: t.describe(spec),
            ):
                st.write(todo[i], result)
    dims = {k: len(v) for k, v in spec.swept.items()}
    dims.update(seed=spec.values["seeds"], round=spec.values["rounds"] + 1, component=dim)
    return {
        "tasks_total": len(tasks),
        "tasks_skipped": len(done),
        "tasks_run": len(todo),
        "store": str(st.path),
        "seconds": time.perf_counter() - t0,
        "spec_hash": spec.hash,
        "dims": dims,
        "engine": engine.describe() if todo else None,
        "seeds_diverged": st.count_diverged(),
        "fedtheory_version": __version__,
    }


def open(store: str | os.PathLike | Path) -> Any:  # the name; shadows open() here only
    """The sweep store at ``store`` as a lazy :class:`xarray.Dataset`.

    ``ds.error`` has one dimension per swept key plus ``seed`` and ``round``; seeds of tasks
    not yet run hold NaN and ``ds.complete`` False. The spec is ``ds.attrs["fedtheory_spec"]``.
    """
    return open_dataset(store)
