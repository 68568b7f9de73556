"""The sweep's Zarr store: one region per task, a completion flag per seed, resume, spec check.

Layout (Zarr format 3, consolidated metadata, so ``xarray.open_zarr(DIR)`` opens it as a
Dataset). ``K...`` stands for one dimension per swept key, in the order of
:data:`fedtheory.sweep.spec.KEYS`, each with its swept values as coordinate:

===============  ==========================  ==========================================
variable         dimensions                  meaning
===============  ==========================  ==========================================
``error``        (K..., seed, round)         ||x_r - x*|| / ||x*|| (NaN: not yet run, or
                                             from the seed's divergence on)
``x_final``      (K..., seed, component)     final server model (NaN-padded to the
                                             largest problem dimension of the grid)
``diverged``     (K..., seed)                the seed diverged (and was frozen)
``diverged_at``  (K..., seed)                round of divergence, -1 if none
``complete``     (K..., seed)                the task holding this seed wrote its data
===============  ==========================  ==========================================

Every variable is chunked by task: one chunk per grid point along the swept dimensions and
``seed_block`` seeds along ``seed``, so a task's region is whole chunks that no other task
touches. zarr-python (>= 3.1.3) writes each chunk to a temporary file and renames it into
place, so a chunk is always either absent (read as the fill value) or whole. A task's data is
written first and its ``complete`` flags last: a writer killed in between leaves the task
incomplete, and the next run does it again. The store is created in a temporary directory beside
``DIR`` and renamed into place, so ``DIR`` is either absent or a whole store. The attributes hold
the normalized spec (``fedtheory_spec``, JSON), its hash (``fedtheory_spec_hash``) and the
version of fedtheory that made it (``fedtheory_version``).

zarr, xarray and dask are the optional sweep extra, imported lazily (:func:`require`).
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from fedtheory._version import __version__
from fedtheory.errors import FedTheoryError
from fedtheory.sweep.engine import require
from fedtheory.sweep.spec import PATH_KEYS, Spec, Task
from fedtheory.sweep.task import TaskResult

#: Value of the store attribute ``fedtheory_store``: what kind of store this is.
STORE_FORMAT = "fedtheory-sweep-1"

#: The store's data variables: (extra dimension, dtype, fill value, description).
VARIABLES = {
    "error": ("round", np.float64, np.nan, "relative error ||x_r - x*|| / ||x*||, x_0 = 0"),
    "x_final": ("component", np.float64, np.nan, "final server model x_R"),
    "diverged": (None, np.bool_, False, "the seed diverged and was frozen"),
    "diverged_at": (None, np.int64, -1, "round of divergence (-1: none)"),
    "complete": (None, np.bool_, False, "the task holding this seed has written its data"),
}


def _zarr_error(path: Path, exc: Exception) -> FedTheoryError:
    return FedTheoryError(f"cannot read the store {path}: {type(exc).__name__}: {exc}")


class SweepStore:
    """An open sweep store: which tasks are complete, and writing one task's region.

    Use :meth:`open_or_create`; the driver is the only writer.
    """

    def __init__(self, path: Path, group: Any, spec: Spec) -> None:
        self.path = path
        self.group = group
        self.spec = spec
        self.n_swept = len(spec.swept)
        self.dim = int(group["x_final"].shape[-1])

    @classmethod
    def open_or_create(cls, path: str | os.PathLike, spec: Spec, dim: int) -> SweepStore:
        """Open the store at ``path`` made from ``spec``, or create it (``dim``: x_final length).

        Raises
        ------
        FedTheoryError
            ``path`` holds something else (a file, a non-empty directory that is not a sweep
            store), a store made from a different spec (naming the keys that differ), or it
            cannot be created (unwritable place, full disk).
        """
        zarr = require("zarr")
        path = Path(path).expanduser().absolute()
        if path.exists() and not path.is_dir():
            raise FedTheoryError(f"the store {path} exists and is not a directory")
        if path.is_dir() and any(path.iterdir()):
            if not (path / "zarr.json").is_file():
                raise FedTheoryError(
                    f"{path} is not empty and not a fedtheory sweep store: give a new directory"
                )
        else:
            _create(path, spec, dim)
        try:
            group = zarr.open_group(path, mode="r+", zarr_format=3)
            attrs = dict(group.attrs)
        except Exception as exc:
            raise _zarr_error(path, exc) from None
        if attrs.get("fedtheory_store") != STORE_FORMAT:
            raise FedTheoryError(f"{path} is a Zarr store but not a fedtheory sweep store")
        if attrs.get("fedtheory_spec_hash") != spec.hash:
            old = json.loads(attrs.get("fedtheory_spec", "{}"))
            old.update(json.loads(attrs.get("fedtheory_spec_files", "{}")))  # files by content
            keys = spec.differences(old)
            raise FedTheoryError(
                f"the store {path} was made from a different spec"
                f"{' (it differs in ' + ', '.join(keys) + ')' if keys else ''}: give another "
                "--store, or the spec it was made from (its attribute fedtheory_spec)"
            )
        return cls(path, group, spec)

    def _region(self, task: Task) -> tuple:
        a, b = task.seed_ids[0], task.seed_ids[-1] + 1
        return tuple(slice(i, i + 1) for i in task.point) + (slice(a, b),)

    def completed(self, tasks: list[Task]) -> set[int]:
        """Indices of the tasks whose every seed is flagged complete."""
        try:
            done = np.asarray(self.group["complete"][...], dtype=bool)
        except Exception as exc:
            raise _zarr_error(self.path, exc) from None
        return {t.index for t in tasks if done[self._region(t)].all()}

    def count_diverged(self) -> int:
        """Seeds of complete tasks flagged as diverged."""
        try:
            done = np.asarray(self.group["complete"][...], dtype=bool)
            div = np.asarray(self.group["diverged"][...], dtype=bool)
        except Exception as exc:
            raise _zarr_error(self.path, exc) from None
        return int((done & div).sum())

    def check_writable(self) -> None:
        """Write and remove a probe file: an unwritable store is refused before any task runs."""
        probe = self.path / f".write-probe-{uuid.uuid4().hex}"
        try:
            probe.write_bytes(b"probe")
            probe.unlink()
        except OSError as exc:
            raise FedTheoryError(
                f"the store {self.path} is not writable: {exc.strerror or exc}"
            ) from None

    def write(self, task: Task, result: TaskResult) -> None:
        """Write ``task``'s region: its data first, then its ``complete`` flags.

        Raises
        ------
        FedTheoryError
            The write failed (full disk, unwritable store); the chunks already in the store are
            whole and this task stays incomplete.
        """
        sel = self._region(task)
        lead = (1,) * self.n_swept
        n = len(task.seed_ids)
        x = np.full((n, self.dim), np.nan)
        x[:, : result.x_final.shape[1]] = result.x_final
        data = {
            "error": result.error,
            "x_final": x,
            "diverged": result.diverged,
            "diverged_at": result.diverged_at,
            "complete": np.ones(n, dtype=bool),  # last: the task is complete once this is written
        }
        try:
            for name, values in data.items():
                arr = self.group[name]
                extra = (slice(None),) if arr.ndim > len(sel) else ()
                arr[sel + extra] = np.asarray(values).reshape(lead + np.shape(values))
        except OSError as exc:
            raise FedTheoryError(
                f"cannot write task {task.index} ({task.describe(self.spec)}) to the store "
                f"{self.path}: {exc.strerror or exc}; the store keeps its complete tasks and "
                "running the same command again resumes"
            ) from None


def _create(path: Path, spec: Spec, dim: int) -> None:
    """Write the empty store (metadata and coordinates only) beside ``path``, then rename."""
    xr = require("xarray")
    dask_array = require("dask.array")
    swept = spec.swept
    S, B, R = spec.values["seeds"], spec.values["seed_block"], spec.values["rounds"]
    coords: dict[str, Any] = {}
    for key, vals in swept.items():
        arr = np.array(vals)
        coords[key] = arr.astype(object) if arr.dtype.kind == "U" else arr
    coords["seed"] = np.arange(S)
    coords["round"] = np.arange(R + 1)
    coords["component"] = np.arange(dim)
    lengths = {"round": R + 1, "component": dim}
    base_dims = (*swept, "seed")
    base_shape = (*spec.grid_shape, S)
    base_chunks = (1,) * len(swept) + (B,)
    data_vars, encoding = {}, {}
    for name, (extra, dtype, fill, desc) in VARIABLES.items():
        dims, shape, chunks = base_dims, base_shape, base_chunks
        if extra is not None:
            dims, shape, chunks = (
                dims + (extra,),
                shape + (lengths[extra],),
                chunks + (lengths[extra],),
            )
        lazy = dask_array.full(shape, fill, dtype=dtype, chunks=chunks)  # never computed
        data_vars[name] = xr.Variable(dims, lazy, attrs={"description": desc})
        encoding[name] = {"chunks": chunks, "fill_value": fill}
    files = {k: spec.hashable()[k] for k in PATH_KEYS if spec.values[k] is not None}
    attrs = {
        "fedtheory_store": STORE_FORMAT,
        "fedtheory_version": __version__,
        "fedtheory_spec": json.dumps(spec.to_dict()),
        "fedtheory_spec_files": json.dumps(files),
        "fedtheory_spec_hash": spec.hash,
        "description": "fedtheory sweep: see fedtheory.sweep.store for the layout",
    }
    ds = xr.Dataset(data_vars, coords=coords, attrs=attrs)
    tmp = path.parent / f".{path.name}.creating-{uuid.uuid4().hex[:8]}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with warnings.catch_warnings():
            # Consolidated metadata is a zarr-python extension of format 3; readers without it
            # read each array's own zarr.json, which is there as well.
            warnings.filterwarnings("ignore", message="Consolidated metadata is currently not")
            ds.to_zarr(
                tmp, mode="w-", compute=False, encoding=encoding, consolidated=True, zarr_format=3
            )
        os.rename(tmp, path)  # atomic; onto an empty directory too
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError):
            raise FedTheoryError(f"cannot create the store {path}: {exc.strerror or exc}") from None
        raise


def open_dataset(path: str | os.PathLike) -> Any:
    """The store at ``path`` as a lazy :class:`xarray.Dataset` (see the module for its layout).

    Raises
    ------
    FedTheoryError
        No store there, or a Zarr store that is not a fedtheory sweep store.
    """
    xr = require("xarray")
    path = Path(path).expanduser()
    if not (path / "zarr.json").is_file():
        raise FedTheoryError(f"no sweep store at {path} (no zarr.json)")
    try:
        ds = xr.open_zarr(path)
    except Exception as exc:
        raise _zarr_error(path, exc) from None
    if ds.attrs.get("fedtheory_store") != STORE_FORMAT:
        raise FedTheoryError(f"{path} is a Zarr store but not a fedtheory sweep store")
    return ds
