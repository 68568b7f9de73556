"""Output helpers: JSON that is either written whole or not at all, and progress bars."""

from __future__ import annotations

import io
import json
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from tqdm.auto import tqdm


def jsonable(obj: Any, *, arrays: bool = False) -> Any:
    """Convert NumPy/CuPy scalars and arrays (and nested containers) to plain JSON values.

    The one convention of every JSON fedtheory writes: a non-finite number (NaN, +-inf: a diverged
    seed, a metric that was not recorded) is ``null``, so ``np.array(d["error"], dtype=float)``
    reads it back as NaN and a reader in any language gets a number or nothing, never a string.
    Arrays are converted without a Python-level loop over their elements.

    With ``arrays=True`` numeric arrays stay arrays (on the host, C-contiguous, float32 widened
    to float64 as ``tolist`` would) for an encoder that writes them natively and writes their
    non-finite entries as ``null`` (:func:`dumps` uses orjson's ``OPT_SERIALIZE_NUMPY``): the
    same JSON values without a Python object per element.
    """
    if isinstance(obj, dict):
        return {str(k): jsonable(v, arrays=arrays) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v, arrays=arrays) for v in obj]
    if type(obj).__module__.startswith("cupy"):
        obj = obj.get()
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind == "c":
            raise TypeError("complex arrays have no JSON form")
        if arrays and obj.dtype.kind in "fiub" and obj.ndim > 0:
            wide = {"f": np.float64, "i": np.int64, "u": np.uint64, "b": np.bool_}
            return np.ascontiguousarray(obj, dtype=wide[obj.dtype.kind])
        if obj.dtype.kind == "f" and not np.isfinite(obj).all():
            out = obj.astype(object)
            out[~np.isfinite(obj)] = None
            return out.tolist()
        return obj.tolist()
    if isinstance(obj, np.bool_ | bool):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        f = float(obj)
        return f if math.isfinite(f) else None
    if isinstance(obj, Path):
        return str(obj)
    return obj


def dumps(obj: Any, *, indent: bool = True) -> str:
    """``obj`` as JSON text (the conventions of :func:`jsonable`), indented by two spaces or
    compact.

    Written by orjson, which serializes the arrays natively (about 15x faster than the standard
    encoder on a run's per-seed, per-round metrics); numbers read back as the same doubles. An
    object orjson refuses (an integer beyond 64 bits) goes through the standard encoder.
    """
    option = orjson.OPT_SERIALIZE_NUMPY | (orjson.OPT_INDENT_2 if indent else 0)
    try:
        return orjson.dumps(jsonable(obj, arrays=True), option=option).decode()
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(jsonable(obj), indent=2 if indent else None)


def write_atomic(path: str | os.PathLike, data: str | bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file and a rename: never half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes 0600; a written file gets open()'s mode
        with os.fdopen(fd, mode) as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def pyplot() -> Any:
    """``matplotlib.pyplot``, imported on first use.

    matplotlib is a core dependency, but importing pyplot costs about half a second, which every
    command would pay at start-up; so plotting code asks for it here. No backend is forced: a
    notebook keeps its inline backend, and a machine without a display gets matplotlib's
    non-interactive fallback (Agg).
    """
    import matplotlib.pyplot as plt  # noqa: PLC0415  (lazy: half a second at start-up)

    return plt


def figure_bytes(fig: Any, fmt: str = "png", **kw: Any) -> bytes:
    """``fig`` rendered as ``fmt`` (png, pdf, svg) without timestamps: same figure, same bytes."""
    buf = io.BytesIO()
    meta = {"CreationDate": None} if fmt == "pdf" else {"Software": None}
    fig.savefig(buf, format=fmt, metadata=meta, **kw)
    return buf.getvalue()


def save_figure(fig: Any, path: str | os.PathLike, **kw: Any) -> Path:
    """Save ``fig`` to ``path`` (format from its suffix) atomically and without timestamps.

    Keywords go to :meth:`matplotlib.figure.Figure.savefig` (``dpi``, ``bbox_inches``, ...).
    """
    path = Path(path)
    return write_atomic(path, figure_bytes(fig, path.suffix.lstrip(".").lower() or "png", **kw))


def emit_json(obj: Any, target: str | os.PathLike | None, *, indent: bool = True) -> None:
    """Print ``obj`` as JSON to stdout (``target`` is None or ``"-"``) or write it atomically
    (``indent=False``: compact, for large files that programs read)."""
    if target is None or str(target) == "-":
        sys.stdout.write(dumps(obj) + "\n")
    else:
        write_atomic(target, dumps(obj, indent=indent) + "\n")


def progress(iterable=None, *, total=None, desc=None, disable=False, **kw):
    """A tqdm progress bar on stderr, silent when ``disable`` or stderr is not a terminal."""

    quiet = disable or not sys.stderr.isatty() or os.environ.get("FEDTHEORY_NO_PROGRESS")
    return tqdm(iterable, total=total, desc=desc, disable=bool(quiet), file=sys.stderr, **kw)
