"""JSON out: the one convention (non-finite numbers as ``null``), orjson's fast encoder, and
:func:`emit_json` through the one writer.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from fedtheory.backend import is_device_array, to_numpy
from fedtheory.io.writing import write_atomic


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
    if is_device_array(obj):
        obj = to_numpy(obj)
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


def emit_json(obj: Any, target: str | os.PathLike | None, *, indent: bool = True) -> None:
    """Write ``obj`` as JSON (non-finite numbers as ``null``) to ``target`` through
    :func:`write_atomic`; ``None`` or ``"-"`` is standard output, always indented (``indent=False``:
    compact, for large files that programs read)."""
    to_stdout = target is None or os.fspath(target) == "-"
    text = dumps(obj, indent=indent or to_stdout)
    write_atomic("-" if to_stdout else target, text + "\n")


class renamed:
    """A method's earlier name, kept for callers: it calls the method by its name now, with a
    DeprecationWarning (a result object's ``as_dict`` is its ``to_dict``)."""

    def __init__(self, new: str) -> None:
        self.new = new
        self.old = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.old = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        warnings.warn(
            f"{type(obj).__name__}.{self.old}() is now called {self.new}()",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(obj, self.new)
