"""The sweep's Zarr store: one region per task with its checksums, verified on every read and
resume; a format version; one driver at a time.

Layout (Zarr format 3, consolidated metadata, so ``xarray.open_zarr(DIR)`` opens it as a
Dataset). ``K...`` stands for one dimension per axis of the grid
(:attr:`fedtheory.sweep.spec.Spec.axes`, in the order of :data:`fedtheory.sweep.spec.KEYS`): a
swept key's dimension has its values as coordinate, the ``zip`` and ``run`` dimensions have one
coordinate per key they set (``algorithm(run)``, ``global_lr(run)``, ...). Every variable and
coordinate has CF ``long_name`` and ``units`` (none for strings); every setting fixed over the
grid is a root attribute under its key's name:

================  ==========================  ==========================================
variable          dimensions                  meaning
================  ==========================  ==========================================
``error``         (K..., seed, round)         ||x_r - x*|| / ||x*|| (NaN: not yet run, or
                                              from the seed's divergence on)
``x_final``       (K..., seed, component)     final server model (NaN-padded to the
                                              largest problem dimension of the grid)
``diverged``      (K..., seed)                the seed diverged (and was frozen)
``diverged_at``   (K..., seed)                round of divergence, -1 if none
``diverging``     (K..., seed)                its error grew tenfold within 50 rounds to
                                              above its start (it kept running)
``diverging_at``  (K..., seed)                round it was flagged, -1 if none
``checksum``      (K..., seed)                BLAKE2b-64 of the seed's values above and its
                                              place in the grid (0: none)
``complete``      (K..., seed)                the task holding this seed wrote its data
================  ==========================  ==========================================

Every variable is chunked by task: one chunk per grid point along the swept dimensions and
``seed_block`` seeds along ``seed``, so a task's region is whole chunks that no other task
touches. zarr-python (>= 3.1.3) writes each chunk to a temporary file and renames it into
place, so a chunk is always either absent (read as the fill value) or whole. A task's data is
written first, then its checksums, then its ``complete`` flags: a writer killed in between
leaves the task incomplete, and the next run does it again.

Integrity. The attributes hold the store format (``fedtheory_store``, :data:`STORE_FORMAT`:
format 2 added the checksums, format 3 the zip and algorithms tables, CF attributes and the
fixed settings as attributes), the normalized spec (``fedtheory_spec``, JSON, with its files'
digests in ``fedtheory_spec_files``), its hash (``fedtheory_spec_hash``) and the version of
fedtheory that made it (``fedtheory_version``, provenance, not checked). Everything but the
tasks' data follows from the spec: the metadata and coordinates are compared with a store made
afresh from it (:func:`_skeleton`). A task counts as complete only when its flags are set and
every seed's values hash to its checksum; a missing, truncated or altered chunk makes the task
*damaged*. A resume (:meth:`SweepStore.open_or_create`) rewrites damaged metadata and runs
damaged tasks again; a read (:func:`open_dataset`) and ``fedtheory sweep --check``
(:func:`check_store`) verify everything and never return data that fail it.

One driver per store: a driver holds an exclusive ``flock`` on ``DIR/.fedtheory-lock`` while it
runs (:class:`StoreLock`). The kernel releases it when the process ends, however it ends, so a
driver killed with SIGKILL leaves nothing stuck; a second driver is refused in one line naming
the first. On NFS, Linux takes the lock on the server (NFSv4 byte-range locks); platforms
without ``fcntl`` take no lock. Readers take none.

The store is created in a temporary directory beside ``DIR`` and renamed into place, so ``DIR``
is either absent or a whole store. zarr, xarray and dask are the optional sweep extra, imported
lazily (:func:`~fedtheory.parallel.sweep_module`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import stat
import tempfile
import time
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from fedtheory._version import __version__
from fedtheory.errors import FedTheoryError, StoreError, StoreInUseError
from fedtheory.io import renamed
from fedtheory.parallel import sweep_module
from fedtheory.simulation.metrics import DIMENSION_ATTRS, METRIC_ATTRS, MODEL_DIM, RESULT_ATTRS
from fedtheory.sweep.spec import (
    ALGORITHM_FILES,
    KEYS,
    PATH_KEYS,
    TEXT_KINDS,
    Spec,
    Task,
    from_stored,
)
from fedtheory.sweep.task import TaskResult

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: no lock
    fcntl = None  # type: ignore[assignment]

#: Value of the store attribute ``fedtheory_store``: the kind of store and its format version.
STORE_FORMAT = "fedtheory-sweep-3"
_FORMAT_PREFIX = "fedtheory-sweep-"
#: Why a store of an older format is refused (never read as if it were of this one).
_OLD_FORMATS = {
    "fedtheory-sweep-1": "a store without checksums cannot be verified",
    "fedtheory-sweep-2": "its spec has no zip or algorithms tables and its checksums name format 2",
}


class Variable(NamedTuple):
    """One variable of the store: its extra dimension after ``seed`` (or None), dtype, fill
    value, CF ``long_name`` and ``units``, and a longer description."""

    extra: str | None
    dtype: Any
    fill: Any
    long_name: str
    units: str
    description: str


#: The store's variables (their CF attributes those of an xarray result:
#: :data:`~fedtheory.simulation.metrics.RESULT_ATTRS`).
def _var(name: str, extra: str | None, dtype: Any, fill: Any, description: str) -> Variable:
    attrs = RESULT_ATTRS[name]
    return Variable(extra, dtype, fill, attrs["long_name"], attrs["units"], description)


VARIABLES = {
    "error": Variable(
        "round",
        np.float64,
        np.nan,
        METRIC_ATTRS["error"]["long_name"],
        METRIC_ATTRS["error"]["units"],
        "the runner's error metric, x_0 = 0",
    ),
    "x_final": _var(
        "x_final", MODEL_DIM, np.float64, np.nan, "the server model x_R after the last round"
    ),
    "diverged": _var("diverged", None, np.bool_, False, "the seed diverged and was frozen"),
    "diverged_at": _var("diverged_at", None, np.int64, -1, "round of divergence (-1: none)"),
    "diverging": _var(
        "diverging",
        None,
        np.bool_,
        False,
        "the error grew by the divergence growth factor within the "
        "divergence window to above its start (the seed kept running)",
    ),
    "diverging_at": _var(
        "diverging_at", None, np.int64, -1, "round the seed was flagged as diverging (-1: none)"
    ),
    "checksum": Variable(
        None,
        np.uint64,
        0,
        "checksum of the seed's values",
        "1",
        "BLAKE2b-64 of the seed's values and place (0: none)",
    ),
    "complete": Variable(
        None,
        np.bool_,
        False,
        "task complete",
        "1",
        "the task holding this seed has written its data",
    ),
}

#: CF attributes of the dimensions that are not spec keys (those of an xarray result).
DIMENSIONS = DIMENSION_ATTRS

#: The variables a seed's checksum covers, in the order they are hashed.
DATA = ("error", "x_final", "diverged", "diverged_at", "diverging", "diverging_at")

#: The lock file of the driver, inside the store.
LOCK_FILE = ".fedtheory-lock"

#: At most about this many bytes of the store are read at once while it is verified.
SLAB_BYTES = 64 * 2**20
#: Driver memory per task: Task objects and Dask's scheduler and client state (measured about
#: 13 KiB per task at 4000 tasks on a local cluster, 7 KiB of it Dask's).
TASK_BYTES = 16 * 1024
#: Disk space a chunk file takes at least (one file-system block).
FILE_BYTES = 4096
#: The default largest number of tasks of one sweep (``max_tasks``, ``--max-tasks``).
MAX_TASKS = 100_000


# --- checksums -------------------------------------------------------------------------------


def _canonical(values: Any) -> np.ndarray:
    """A variable's values as the bytes a checksum covers: float64 with one NaN, uint8, int64."""
    a = np.asarray(values)
    if a.dtype.kind == "f":
        a = np.where(np.isnan(a), np.nan, a).astype("<f8")
    elif a.dtype.kind == "b":
        a = a.astype(np.uint8)
    else:
        a = a.astype("<i8")
    return np.ascontiguousarray(a)


def checksums(point: tuple, seed_ids: Any, values: dict) -> np.ndarray:
    """Each seed's checksum (uint64): BLAKE2b-64 of its place (grid point, seed id) and its
    values of :data:`DATA` (``values[name]`` has the seeds on its first axis)."""
    canon = [_canonical(values[name]) for name in DATA]
    prefix = f"{STORE_FORMAT}:{','.join(map(str, point))}:"
    out = np.empty(len(seed_ids), dtype=np.uint64)
    for k, s in enumerate(seed_ids):
        h = hashlib.blake2b(f"{prefix}{int(s)}".encode(), digest_size=8)
        for a in canon:
            h.update(a[k].tobytes())
        out[k] = int.from_bytes(h.digest(), "little")
    return out


# --- the verification of tasks ---------------------------------------------------------------


@dataclass(frozen=True)
class TaskCheck:
    """The state of one task in a store: ``complete`` (flags set, checksums match),
    ``incomplete`` (not yet run, or interrupted) or ``damaged`` (``reason`` says how)."""

    index: int
    task: str
    state: str
    reason: str = ""

    as_dict = renamed("to_dict")

    def to_dict(self) -> dict:
        return {"index": self.index, "task": self.task, "state": self.state, "reason": self.reason}


def _first_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}{': ' + text if text else ''}"


def _region(task: Task) -> tuple:
    a, b = task.seed_ids[0], task.seed_ids[-1] + 1
    return tuple(slice(i, i + 1) for i in task.point) + (slice(a, b),)


def _blocks(spec: Spec, tasks: list[Task], per_point: float) -> list[tuple[tuple, list[Task]]]:
    """The tasks in groups of grid points read at once: a run of at most ``SLAB_BYTES`` along
    the last swept dimension, the others fixed; with the region that covers them."""
    shape = spec.grid_shape
    by_point: dict[tuple, list[Task]] = {}
    for t in tasks:
        by_point.setdefault(t.point, []).append(t)
    if not shape:
        return [((), tasks)] if tasks else []
    run = max(1, int(SLAB_BYTES // max(per_point, 1.0)))
    groups: dict[tuple, list[Task]] = {}
    for point, ts in by_point.items():
        groups.setdefault(point[:-1] + (point[-1] // run,), []).extend(ts)
    out = []
    for key, ts in groups.items():
        a = key[-1] * run
        b = min(a + run, shape[-1])
        out.append((tuple(slice(i, i + 1) for i in key[:-1]) + (slice(a, b),), ts))
    return out


def verify_tasks(
    group: Any, spec: Spec, tasks: list[Task], *, read_incomplete: bool = False
) -> list[TaskCheck]:
    """Every task's :class:`TaskCheck`, from its flags, its checksums and its data.

    A chunk that cannot be read (truncated, garbage) makes its task damaged. The store is read
    in slabs of about :data:`SLAB_BYTES`; a slab that cannot be read is read task by task.
    ``read_incomplete`` also reads incomplete tasks' data (a reader must not meet a chunk it
    cannot decode); a resume runs them again anyway.
    """
    arrays = {name: group[name] for name in VARIABLES}
    S = spec.values["seeds"]
    per_point = (
        8.0 * S * sum(int(np.prod(arrays[n].shape[len(spec.swept) + 1 :])) or 1 for n in VARIABLES)
    )
    lead = len(spec.swept)
    checks: dict[int, TaskCheck] = {}

    def damaged(t: Task, why: str) -> None:  # the first reason found; over "incomplete"
        if checks.get(t.index, TaskCheck(0, "", "")).state != "damaged":
            checks[t.index] = TaskCheck(t.index, t.describe(spec), "damaged", why)

    def read(name: str, region: tuple, ts: list[Task]) -> dict[int, np.ndarray]:
        """Each task's values of ``name`` (seeds first), from one read of ``region`` or, when
        that fails, one read per task."""
        arr = arrays[name]
        try:
            block = np.asarray(arr[region])
        except Exception:  # a chunk the codec cannot decode: find which task's, one by one
            out = {}
            for t in ts:
                try:
                    out[t.index] = np.asarray(arr[_region(t)]).reshape(
                        (len(t.seed_ids),) + arr.shape[lead + 1 :]
                    )
                except Exception as exc:
                    damaged(t, f"an unreadable chunk of {name} ({_first_line(exc)})")
            return out
        start = [s.start for s in region]
        out = {}
        for t in ts:
            at = tuple(p - s for p, s in zip(t.point, start, strict=True))
            out[t.index] = block[at][t.seed_ids[0] : t.seed_ids[-1] + 1]
        return out

    for region, ts in _blocks(spec, tasks, per_point):
        flags = read("complete", region, ts)
        done = [t for t in ts if t.index in flags and flags[t.index].all()]
        for t in ts:
            if t.index in flags and not flags[t.index].all():
                checks[t.index] = TaskCheck(t.index, t.describe(spec), "incomplete")
        todo = ts if read_incomplete else done
        if not todo:
            continue
        sums = read("checksum", region, done) if done else {}
        values = {name: read(name, region, todo) for name in DATA}
        for t in done:
            if t.index in checks:  # a chunk of it could not be read
                continue
            want = checksums(t.point, t.seed_ids, {n: values[n][t.index] for n in DATA})
            if not np.array_equal(want, sums[t.index]):
                bad = int(np.flatnonzero(want != sums[t.index])[0])
                damaged(
                    t,
                    f"seed {t.seed_ids[bad]}'s values differ from its checksum (a chunk "
                    "missing or altered)",
                )
    for t in tasks:
        checks.setdefault(t.index, TaskCheck(t.index, t.describe(spec), "complete"))
    return [checks[t.index] for t in tasks]


# --- metadata: the store made afresh from the spec --------------------------------------------


def _attrs(spec: Spec, version: str = __version__) -> dict:
    """The attributes of a store made from ``spec``: each fixed setting under its key's name
    (:attr:`Spec.fixed`), the spec as JSON (files by their digests), its hash, the format."""
    hashable = spec.hashable()
    files = {
        k: hashable[k]
        for k in (*PATH_KEYS, ALGORITHM_FILES)
        if k in hashable and (k == ALGORITHM_FILES or spec.values[k] is not None)
    }
    return {
        **spec.fixed,  # the settings that do not change over the grid, as plain values
        "fedtheory_store": STORE_FORMAT,
        "fedtheory_version": version,
        "fedtheory_spec": json.dumps(spec.to_dict()),
        "fedtheory_spec_files": json.dumps(files),
        "fedtheory_spec_hash": spec.hash,
        "description": "fedtheory sweep: see fedtheory.sweep.store for the layout",
    }


def _skeleton(target: Path, spec: Spec, dim: int, attrs: dict) -> None:
    """Write the metadata and coordinates of a store of ``spec`` (no data) to ``target``, a
    directory that does not exist yet."""
    xr = sweep_module("xarray")
    dask_array = sweep_module("dask.array")
    axes = spec.axes
    S, B, R = spec.values["seeds"], spec.values["seed_block"], spec.values["rounds"]
    coords: dict[str, Any] = {}
    for axis in axes:
        for key in axis.keys:
            coords[key] = xr.Variable(axis.name, _coordinate(key, axis.values(key)), attrs=_cf(key))
    lengths = {"seed": S, "round": R + 1, MODEL_DIM: dim}
    for name, cf in DIMENSIONS.items():
        coords[name] = xr.Variable(name, np.arange(lengths[name]), attrs=cf)
    base_dims = (*(a.name for a in axes), "seed")
    base_shape = (*spec.grid_shape, S)
    base_chunks = (1,) * len(axes) + (B,)
    data_vars, encoding = {}, {}
    for name, var in VARIABLES.items():
        dims, shape, chunks = base_dims, base_shape, base_chunks
        if var.extra is not None:
            dims, shape = dims + (var.extra,), shape + (lengths[var.extra],)
            chunks = chunks + (lengths[var.extra],)
        # one lazy chunk, never computed: the store's chunks are set by the encoding, and a
        # graph of one task per store chunk would cost memory in proportion to the grid
        lazy = dask_array.full(shape, var.fill, dtype=var.dtype, chunks=shape)
        cf = {"long_name": var.long_name, "units": var.units, "description": var.description}
        data_vars[name] = xr.Variable(dims, lazy, attrs=cf)
        encoding[name] = {"chunks": chunks, "fill_value": var.fill}
    ds = xr.Dataset(data_vars, coords=coords, attrs=attrs)
    with warnings.catch_warnings():
        # Consolidated metadata is a zarr-python extension of format 3; readers without it
        # read each array's own zarr.json, which is there as well.
        warnings.filterwarnings("ignore", message="Consolidated metadata is currently not")
        ds.to_zarr(
            target, mode="w-", compute=False, encoding=encoding, consolidated=True, zarr_format=3
        )


def _cf(key: str) -> dict:
    """The CF attributes of a spec key's coordinate: ``long_name``, and ``units`` for numbers."""
    k = KEYS[key]
    return {"long_name": k.long_name, **({"units": k.units} if k.units is not None else {})}


def _coordinate(key: str, values: tuple) -> np.ndarray:
    """A key's values along an axis as a coordinate: strings as plain (object) strings, an
    unset value (an algorithm that leaves the key unset) as NaN, or "" for strings."""
    if KEYS[key].kind in TEXT_KINDS:
        return np.array(["" if v is None else v for v in values], dtype=object)
    if any(v is None for v in values):
        return np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    return np.array(values)


_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
    stat.S_IFSOCK: "a socket",
}


def check_entries(path: Path) -> None:
    """Refuse a store that holds anything but regular files and folders, told by ``lstat``
    (a link is not followed, a FIFO not opened): zarr would block opening a FIFO or a device
    where a chunk belongs, and read or repair through a link.

    Raises
    ------
    StoreError
        Naming the first such entry and what it is.
    """
    todo = [path]
    while todo:
        try:
            entries = list(os.scandir(todo.pop()))
        except OSError:
            continue  # unreadable: the read that needs it says so
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                todo.append(Path(entry.path))
            elif not entry.is_file(follow_symlinks=False):
                try:
                    kind = _KINDS.get(stat.S_IFMT(entry.stat(follow_symlinks=False).st_mode))
                except OSError:
                    kind = None
                raise StoreError(
                    f"the store {path} holds {Path(entry.path).relative_to(path)}, "
                    f"{kind or 'not a regular file'}, where only files and folders belong: "
                    "remove it (a store's chunks and metadata are files it writes itself)"
                )


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


#: The fields of an array's metadata that decide what a read returns. The codecs are left out:
#: a codec that cannot decode shows in the chunks it cannot read, one that decodes to other
#: values in the checksums (and in the coordinates' values), and zarr's defaults and layout of
#: its JSON may change between its versions, which must not make a store "damaged".
_FIELDS = (
    "shape",
    "data_type",
    "chunk_grid",
    "chunk_key_encoding",
    "fill_value",
    "attributes",
    "dimension_names",
    "node_type",
    "zarr_format",
)


def _view(meta: Any) -> Any:
    """What of a ``zarr.json`` a read depends on (:data:`_FIELDS`, for the consolidated
    metadata of every array too)."""
    if not isinstance(meta, dict):
        return meta
    out: dict[str, Any] = {k: meta.get(k) for k in _FIELDS}
    cons = meta.get("consolidated_metadata")
    if isinstance(cons, dict) and isinstance(cons.get("metadata"), dict):
        out["consolidated"] = {k: _view(v) for k, v in cons["metadata"].items()}
    return out


def _same_file(path: Path, skeleton: Path, rel: str) -> bool:
    """The file ``rel`` of the store means what the skeleton's does: its metadata's
    :func:`_view`, a coordinate chunk's decoded values."""
    try:
        mine = (path / rel).read_bytes()
    except OSError:
        return False
    theirs = (skeleton / rel).read_bytes()
    if mine == theirs:
        return True
    if rel.endswith("zarr.json"):
        try:
            return _view(json.loads(mine)) == _view(json.loads(theirs))
        except ValueError:
            return False
    zarr = sweep_module("zarr")  # a coordinate's chunk: compare the values it decodes to
    name = rel.split("/")[0]
    try:
        a = zarr.open_array(path / name, mode="r", zarr_format=3)[...]
        b = zarr.open_array(skeleton / name, mode="r", zarr_format=3)[...]
    except Exception:
        return False
    a, b = np.asarray(a), np.asarray(b)
    nan = a.dtype.kind == "f"  # a coordinate of a key some algorithms leave unset holds NaN
    return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=nan)


def _differences(path: Path, skeleton: Path, *, exact: bool = False) -> list[str]:
    """The files of ``skeleton`` that ``path`` lacks or holds damaged (:func:`_same_file`);
    with ``exact``, every file whose bytes differ (the same meaning written by another version
    of zarr included)."""
    out = []
    for rel in _files(skeleton):
        if exact:
            try:
                same = (path / rel).read_bytes() == (skeleton / rel).read_bytes()
            except OSError:
                same = False
        else:
            same = _same_file(path, skeleton, rel)
        if not same:
            out.append(rel)
    return out


def _read_root(path: Path) -> tuple[dict | None, str]:
    """The attributes of the store's ``zarr.json`` (None when it is not JSON), and its text.
    Anything there but a regular file (a FIFO would block the read) is refused as
    :func:`check_entries` refuses it."""
    try:
        if not stat.S_ISREG(os.lstat(path / "zarr.json").st_mode):
            check_entries(path)
        text = (path / "zarr.json").read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise StoreError(f"cannot read {path / 'zarr.json'}: {exc.strerror or exc}") from None
    try:
        root = json.loads(text)
        attrs = root.get("attributes")
        return (attrs if isinstance(attrs, dict) else None), text
    except (ValueError, AttributeError):
        return None, text


def stored_spec(path: str | os.PathLike) -> dict | None:
    """The spec a store at ``path`` was made from (its hashable dict, files' digests
    included), or None when there is no store there or its metadata cannot say (opening it
    then says why)."""
    try:
        attrs, _ = _read_root(Path(path))
        spec = json.loads(attrs["fedtheory_spec"])
        spec.update(json.loads(attrs.get("fedtheory_spec_files", "{}")))
    except (FedTheoryError, ValueError, TypeError, KeyError, AttributeError):
        return None
    return spec if isinstance(spec, dict) else None


def _check_format(path: Path, attrs: dict) -> None:
    kind = attrs.get("fedtheory_store")
    if kind == STORE_FORMAT:
        return
    if isinstance(kind, str) and kind.startswith(_FORMAT_PREFIX):
        why = _OLD_FORMATS.get(kind, "a format this fedtheory does not know")
        raise StoreError(
            f"the store {path} has format {kind}, this fedtheory reads {STORE_FORMAT} ({why}): "
            "run the sweep into a new store"
        )
    raise StoreError(f"{path} is a Zarr store but not a fedtheory sweep store")


# --- one driver per store --------------------------------------------------------------------


class StoreLock:
    """An exclusive ``flock`` on ``DIR/.fedtheory-lock``, held by the driver while it runs.

    The kernel drops it when the process ends (a driver killed with SIGKILL included), so it is
    never left stuck; the file says who holds it, for the message of a second driver.
    """

    def __init__(self, path: Path) -> None:
        self.path = path / LOCK_FILE
        self.fd: int | None = None

    def acquire(self) -> StoreLock:
        """Take the lock, or raise :class:`StoreInUseError` naming the driver that holds it."""
        if fcntl is None:
            return self
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(self.path, flags, 0o644)  # a link planted in its place is not followed
        except OSError as exc:
            if self.path.is_symlink():
                raise StoreError(
                    f"cannot lock the store: its lock file {self.path} is a symbolic link (never "
                    "written through): remove it"
                ) from None
            raise StoreError(f"cannot lock the store: {exc.strerror or exc}: {self.path}") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise StoreError(
                f"cannot lock the store: its lock file {self.path} is not a regular file: remove it"
            )
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 300, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise StoreInUseError(
                f"the store {self.path.parent} is in use by another fedtheory sweep ({holder}): "
                "one driver per store; wait for it to finish (a driver that was killed releases "
                "it at once)"
            ) from None
        os.ftruncate(fd, 0)
        when = time.strftime("%Y-%m-%d %H:%M:%S")
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()} since {when}\n".encode(), 0)
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the last descriptor drops the flock
            self.fd = None


# --- the driver's store ----------------------------------------------------------------------


class SweepStore:
    """An open, locked, verified sweep store: which tasks are complete, and writing a task.

    Use :meth:`open_or_create` and :meth:`close` (or ``with``); the driver is the only writer.

    Attributes
    ----------
    created : bool
        This call made the store.
    repaired : list of str
        Files of metadata or coordinates that were missing or damaged and were rewritten.
    extended : list of str
        What the store grew by when ``spec`` extends the spec that made it (``"seed 4 -> 8"``).
    """

    def __init__(
        self,
        path: Path,
        group: Any,
        spec: Spec,
        lock: StoreLock,
        created: bool,
        repaired: list[str],
        keep_dir: bool = False,
    ) -> None:
        self.path = path
        self.keep_dir = keep_dir
        self.group = group
        self.spec = spec
        self.lock = lock
        self.created = created
        self.repaired = repaired
        self.n_swept = len(spec.swept)
        self.dim = int(group["x_final"].shape[-1])
        self.written = 0
        self.extended: list[str] = []

    def __enter__(self) -> SweepStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Release the lock."""
        self.lock.release()

    def remove(self) -> None:
        """Remove a store this call created (after an error, before any task was written), so
        that no empty store is left behind; a directory that existed before stays, empty."""
        if self.created and not self.written:
            remove_store(self.path, keep_dir=self.keep_dir)

    @classmethod
    def open_or_create(cls, path: str | os.PathLike, spec: Spec, dim: int) -> SweepStore:
        """Open and lock the store at ``path`` made from ``spec``, or create it (``dim``: the
        length of x_final); missing or damaged metadata and coordinates are rewritten.

        Raises
        ------
        StoreInUseError
            Another driver holds the store.
        StoreError
            A store of another format or made from another spec (naming the keys that
            differ), or metadata so damaged that the spec that made it cannot be told.
        FedTheoryError
            ``path`` holds something else (a file, a non-empty directory that is not a sweep
            store), or it cannot be created (unwritable place, full disk).
        """
        zarr = sweep_module("zarr")
        path = Path(path).expanduser().absolute()
        if path.exists() and not path.is_dir():
            raise FedTheoryError(f"the store {path} exists and is not a directory")
        created, keep_dir = False, path.is_dir()
        if os.path.lexists(path / "zarr.json"):
            check_entries(path)
        if not path.is_dir() or not any(path.iterdir()):
            created = _create(path, spec, dim)
        elif not (path / "zarr.json").is_file():
            raise FedTheoryError(
                f"{path} is not empty and not a fedtheory sweep store (no zarr.json): give a new "
                "directory"
            )
        lock = StoreLock(path).acquire()
        try:
            repaired, grown = [], []
            if not created:
                repaired, grown = _resume_metadata(path, spec, dim)
            try:
                group = zarr.open_group(path, mode="r+", zarr_format=3)
            except Exception as exc:
                raise StoreError(f"cannot open the store {path}: {_first_line(exc)}") from None
            store = cls(path, group, spec, lock, created, repaired, keep_dir)
            store.extended = grown
            return store
        except BaseException:
            lock.release()
            if created:
                remove_store(path, keep_dir=keep_dir)
            raise

    def verify(self, tasks: list[Task]) -> list[TaskCheck]:
        """Every task's :class:`TaskCheck` (:func:`verify_tasks`)."""
        return verify_tasks(self.group, self.spec, tasks)

    def completed(self, tasks: list[Task]) -> set[int]:
        """Indices of the tasks that are complete and whose data match their checksums."""
        return {c.index for c in self.verify(tasks) if c.state == "complete"}

    def count_diverged(self) -> tuple[int, int]:
        """Seeds of complete tasks flagged as diverged, and as diverging (but not diverged)."""
        try:
            done = np.asarray(self.group["complete"][...], dtype=bool)
            div = np.asarray(self.group["diverged"][...], dtype=bool)
            growing = np.asarray(self.group["diverging"][...], dtype=bool)
        except Exception as exc:
            raise StoreError(f"cannot read the store {self.path}: {_first_line(exc)}") from None
        return int((done & div).sum()), int((done & growing & ~div).sum())

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

    def write(self, task: Task, result: TaskResult, *, again: bool = False) -> None:
        """Write ``task``'s region: its data, then its checksums, then its ``complete`` flags
        (``again``: a damaged task, whose flags are cleared first).

        Raises
        ------
        FedTheoryError
            The write failed (full disk, unwritable store); the chunks already in the store are
            whole and this task stays incomplete.
        """
        sel = _region(task)
        lead = (1,) * self.n_swept
        n = len(task.seed_ids)
        x = np.full((n, self.dim), np.nan)
        x[:, : result.x_final.shape[1]] = result.x_final
        data = {
            "error": result.error,
            "x_final": x,
            "diverged": result.diverged,
            "diverged_at": result.diverged_at,
            "diverging": result.diverging,
            "diverging_at": result.diverging_at,
        }
        data["checksum"] = checksums(task.point, task.seed_ids, data)
        data["complete"] = np.ones(n, dtype=bool)  # last: the task is complete once written
        writes = list(data.items())
        if again:  # a damaged task: incomplete until its new flags are written
            writes.insert(0, ("complete", np.zeros(n, dtype=bool)))
        try:
            for name, values in writes:
                arr = self.group[name]
                extra = (slice(None),) if arr.ndim > len(sel) else ()
                arr[sel + extra] = np.asarray(values).reshape(lead + np.shape(values))
        except OSError as exc:
            raise FedTheoryError(
                f"cannot write task {task.index} ({task.describe(self.spec)}) to the store "
                f"{self.path}: {exc.strerror or exc}; the store keeps its complete tasks and "
                "running the same command again resumes"
            ) from None
        self.written += 1


def _stored_dim(text: str) -> int | None:
    """The length of ``x_final``'s last axis in a store's root ``zarr.json`` (None: unknown)."""
    try:
        return int(json.loads(text)["consolidated_metadata"]["metadata"]["x_final"]["shape"][-1])
    except (ValueError, KeyError, TypeError, IndexError):
        return None


def _resume_metadata(path: Path, spec: Spec, dim: int) -> tuple[list[str], list[str]]:
    """Check that the store at ``path`` was made from ``spec``, or from a spec that ``spec``
    extends (:meth:`~fedtheory.sweep.spec.Spec.growth`), and rewrite its metadata and
    coordinates where they differ from a store made afresh from ``spec``.

    Returns
    -------
    (list of str, list of str)
        The damaged files rewritten, and what the store grew by (empty: not extended). An
        extension rewrites only metadata and coordinates: every chunk of data keeps its place
        (the axes grow at their ends, chunks are one grid point by ``seed_block`` seeds), so
        the stored tasks stay complete and only the new ones run.
    """
    attrs, text = _read_root(path)
    version = __version__
    grown: list[str] = []
    if attrs is None:  # not JSON: its spec hash still names the spec that made it?
        if not (spec.hash in text and STORE_FORMAT in text):
            raise StoreError(
                f"the metadata of the store {path} is damaged ({path / 'zarr.json'} is not "
                "JSON) and do not name this spec: give another --store"
            )
    else:
        _check_format(path, attrs)
        if attrs.get("fedtheory_spec_hash") != spec.hash:
            try:
                old = json.loads(attrs.get("fedtheory_spec", "{}"))
                old.update(json.loads(attrs.get("fedtheory_spec_files", "{}")))
            except (ValueError, TypeError, AttributeError):
                old = {}
            keys = spec.differences(old)
            if keys:  # else only the hash attribute is damaged: rewritten below
                grown = spec.growth(old) or []
                if not grown:  # no extension: refused as any store of another spec
                    hint = spec.seeds_hint(old) or (
                        "give another --store, or the spec it was made from (its attribute "
                        "fedtheory_spec)"
                    )
                    raise StoreError(
                        f"the store {path} was made from a different spec (it differs in "
                        f"{', '.join(keys)}): {hint}"
                    )
                before = _stored_dim(text)
                if before != dim:
                    raise StoreError(
                        f"extending the store {path} ({', '.join(grown)}) would change the "
                        f"length of x_final from {before} to {dim} (a larger problem): give "
                        "another --store"
                    )
        if isinstance(attrs.get("fedtheory_version"), str):
            version = attrs["fedtheory_version"]
    skeleton = path / f".fedtheory-skeleton-{uuid.uuid4().hex[:8]}"
    try:
        _skeleton(skeleton, spec, dim, _attrs(spec, version))
        repaired = [] if grown else _differences(path, skeleton)  # damaged: reported
        # rewritten: the damaged files and those another version of zarr wrote otherwise
        for rel in _differences(path, skeleton, exact=True):
            (path / rel).parent.mkdir(parents=True, exist_ok=True)
            os.replace(skeleton / rel, path / rel)  # atomic, on the store's file system
    except OSError as exc:
        raise FedTheoryError(
            f"cannot repair the metadata of the store {path}: {exc.strerror or exc}"
        ) from None
    finally:
        shutil.rmtree(skeleton, ignore_errors=True)
    return repaired, grown


def _create(path: Path, spec: Spec, dim: int) -> bool:
    """Write the empty store beside ``path``, then rename it into place; False when another
    driver made it first (``path`` is then a non-empty directory)."""
    tmp = path.parent / f".{path.name}.creating-{uuid.uuid4().hex[:8]}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _skeleton(tmp, spec, dim, _attrs(spec))
        try:
            os.rename(tmp, path)  # atomic; onto an empty directory too
        except OSError:
            if (path / "zarr.json").is_file():  # made by another driver meanwhile
                return False
            raise
        return True
    except OSError as exc:
        raise FedTheoryError(f"cannot create the store {path}: {exc.strerror or exc}") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def remove_store(path: Path, *, keep_dir: bool = False) -> None:
    """Remove a store a driver created and wrote no task to; with ``keep_dir`` the directory
    itself stays, empty (it was there before)."""
    if not keep_dir:
        shutil.rmtree(path, ignore_errors=True)
        return
    for child in list(path.iterdir()) if path.is_dir() else []:
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


# --- reading and checking ---------------------------------------------------------------------


@dataclass
class StoreCheck:
    """What :func:`check_store` found: the store's spec, its damaged metadata files and every
    task's state.

    Attributes
    ----------
    path : str
    spec : Spec or None
        The spec the store holds (None when its metadata cannot be read).
    spec_hash : str
        The hash of that spec (as computed from it).
    metadata : list of str
        Metadata and coordinate files that are missing or differ from what the spec makes
        (a resume rewrites them); the tasks are not verified then.
    tasks : list of TaskCheck
    problem : str
        Why the store cannot be used at all (empty when it can).
    """

    path: str
    spec: Spec | None = None
    spec_hash: str = ""
    metadata: list = field(default_factory=list)
    tasks: list = field(default_factory=list)
    problem: str = ""

    def counts(self) -> dict[str, int]:
        out = {"complete": 0, "incomplete": 0, "damaged": 0}
        for t in self.tasks:
            out[t.state] += 1
        return out

    @property
    def intact(self) -> bool:
        """No damage: metadata as the spec makes it, no damaged task (some may be incomplete)."""
        return not self.problem and not self.metadata and not self.counts()["damaged"]

    @property
    def complete(self) -> bool:
        """Intact and every task complete."""
        return self.intact and bool(self.tasks) and self.counts()["complete"] == len(self.tasks)

    as_dict = renamed("to_dict")

    def to_dict(self) -> dict:
        counts = self.counts()
        return {
            "store": self.path,
            "format": STORE_FORMAT,
            "spec_hash": self.spec_hash or None,
            "tasks_total": len(self.tasks),
            "tasks_complete": counts["complete"],
            "tasks_incomplete": counts["incomplete"],
            "tasks_damaged": counts["damaged"],
            "metadata_damaged": list(self.metadata),
            "problem": self.problem,
            "tasks": [t.to_dict() for t in self.tasks],
        }


def check_store(path: str | os.PathLike, *, read_incomplete: bool = True) -> StoreCheck:
    """The state of every task of the store at ``path``, running nothing and writing nothing.

    The spec is the one the store holds (its files are not read again). Metadata and coordinates
    are compared with a store made afresh from it in a temporary directory; then, if they are
    intact, every task is verified (:func:`verify_tasks`).

    Raises
    ------
    FedTheoryError
        No store at ``path`` (no ``zarr.json``).
    """
    zarr = sweep_module("zarr")
    path = Path(path).expanduser().absolute()
    if os.path.lexists(path / "zarr.json"):
        check_entries(path)
    if not (path / "zarr.json").is_file():
        raise FedTheoryError(f"no sweep store at {path} (no zarr.json)")
    out = StoreCheck(str(path))
    attrs, _ = _read_root(path)
    if attrs is None:
        out.problem = f"its metadata {path / 'zarr.json'} is not JSON"
        return out
    _check_format(path, attrs)
    try:
        stored = json.loads(attrs["fedtheory_spec"])
        files = json.loads(attrs.get("fedtheory_spec_files", "{}"))
        spec, digest = from_stored(stored, files, str(path))
        consolidated = json.loads((path / "zarr.json").read_text())["consolidated_metadata"]
        dim = int(consolidated["metadata"]["x_final"]["shape"][-1])
    except (KeyError, TypeError, ValueError, IndexError, FedTheoryError) as exc:
        out.problem = f"its metadata cannot be read ({_first_line(exc)})"
        return out
    out.spec, out.spec_hash = spec, digest
    if digest != attrs.get("fedtheory_spec_hash"):
        out.metadata = ["zarr.json"]  # the spec and its hash disagree
    with tempfile.TemporaryDirectory(prefix="fedtheory-check-") as tmp:
        _skeleton(Path(tmp) / "store", spec, dim, attrs)
        out.metadata = sorted(set(out.metadata) | set(_differences(path, Path(tmp) / "store")))
    if out.metadata:
        return out
    try:
        group = zarr.open_group(path, mode="r", zarr_format=3)
    except Exception as exc:
        out.problem = f"it cannot be opened ({_first_line(exc)})"
        return out
    out.tasks = verify_tasks(group, spec, spec.tasks(), read_incomplete=read_incomplete)
    return out


def damage_line(check: StoreCheck, limit: int = 3) -> str:
    """One line saying what is wrong with a store (for a refusal)."""
    if check.problem:
        return check.problem
    if check.metadata:
        shown = ", ".join(check.metadata[:limit]) + (", ..." if len(check.metadata) > limit else "")
        return f"its metadata or coordinates are damaged ({shown})"
    bad = [t for t in check.tasks if t.state == "damaged"]
    shown = "; ".join(f"task {t.index} ({t.task}): {t.reason}" for t in bad[:limit])
    return f"{len(bad)} damaged task{'s' if len(bad) != 1 else ''}: {shown}" + (
        "; ..." if len(bad) > limit else ""
    )


def open_dataset(path: str | os.PathLike, *, verify: bool = True) -> Any:
    """The store at ``path`` as a lazy :class:`xarray.Dataset` (see the module for its layout),
    after :func:`check_store` found it intact (``verify=False`` skips that, trusting the store).

    Raises
    ------
    StoreError
        A damaged store (naming what is damaged; running the sweep again on it repairs it), or a
        Zarr store that is not a fedtheory sweep store of this format.
    FedTheoryError
        No store there.
    """
    xr = sweep_module("xarray")
    path = Path(path).expanduser()
    if verify:
        check = check_store(path)
        if not check.intact:
            raise StoreError(
                f"the sweep store {path} is damaged, {damage_line(check)}: run the sweep again on "
                "it to repair it (fedtheory sweep SPEC --store DIR); fedtheory sweep --check DIR "
                "lists every task"
            )
    else:
        if os.path.lexists(path / "zarr.json"):
            check_entries(path)
        if not (path / "zarr.json").is_file():
            raise FedTheoryError(f"no sweep store at {path} (no zarr.json)")
    try:
        ds = xr.open_zarr(path)
    except Exception as exc:
        raise StoreError(f"cannot read the store {path}: {_first_line(exc)}") from None
    if ds.attrs.get("fedtheory_store") != STORE_FORMAT:
        _check_format(path, ds.attrs)
    # the coordinates of the zip and run axes in memory (a few values per grid point), so that
    # ds.groupby("algorithm") and ds.where(ds.algorithm == ...) work on the lazy dataset
    lazy = [k for k, c in ds.coords.items() if k not in ds.indexes and c.chunks is not None]
    return ds.assign_coords({k: ds[k].compute() for k in lazy}) if lazy else ds
