"""Array backends: code is written once against a namespace ``xp`` (NumPy or CuPy).

CuPy mirrors NumPy's API, so the namespace *is* the module: ``xp = get_namespace(X)`` gives
``numpy`` for NumPy arrays and ``cupy`` for CuPy arrays, and the same lines run on both.
A user picks the backend with ``get_backend("cupy")`` or the ``FEDTHEORY_BACKEND`` environment
variable (``numpy`` by default). Asking for CuPy where there is no usable GPU raises
:class:`~fedtheory.errors.BackendUnavailableError` with one sentence that says why.

A third backend, ``"strict"`` (:mod:`fedtheory._strict`), runs on the CPU with CuPy's boundary:
its arrays refuse implicit conversion to NumPy, offer only CuPy's functions, and tally every host
synchronization, so the CuPy path is tested on machines without a GPU. :func:`to_numpy` is the
one way from any backend's arrays to the host.

Randomness is drawn on the host with :class:`numpy.random.Generator` and moved to the device, so
the same seed gives the same bits on every backend.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any

import numpy as np

from fedtheory._strict import STRICT, StrictArray, count_host_syncs, host_copy
from fedtheory.errors import BackendUnavailableError

__all__ = [
    "BACKENDS",
    "ENV_VAR",
    "asarray",
    "count_host_syncs",
    "get_backend",
    "get_namespace",
    "gpu_available",
    "is_device_array",
    "resolve_dtype",
    "to_numpy",
]

BACKENDS = ("numpy", "cupy", "strict")
ENV_VAR = "FEDTHEORY_BACKEND"


def _cupy_or_none() -> ModuleType | None:
    try:
        import cupy  # noqa: PLC0415  (optional extra fedtheory[gpu])
    except Exception:
        return None
    return cupy


def gpu_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    cp = _cupy_or_none()
    if cp is None:
        return False
    try:
        return cp.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def get_backend(name: str | None = None) -> ModuleType:
    """Return the array module for ``name`` (``"numpy"``, ``"cupy"`` or ``"strict"``).

    ``None`` reads ``FEDTHEORY_BACKEND`` and falls back to NumPy.

    Raises
    ------
    BackendUnavailableError
        For an unknown name, or for CuPy on a machine without CuPy or without a GPU.
    """
    name = (name or os.environ.get(ENV_VAR) or "numpy").strip().lower()
    if name == "numpy":
        return np
    if name == "strict":
        return STRICT
    if name != "cupy":
        raise BackendUnavailableError(
            f"unknown array backend {name!r}: choose one of {', '.join(BACKENDS)}"
        )
    cp = _cupy_or_none()
    if cp is None:
        raise BackendUnavailableError(
            "the CuPy backend was requested but CuPy is not installed "
            "(pip install 'fedtheory[gpu]' on a machine with a CUDA GPU)"
        )
    if not gpu_available():
        raise BackendUnavailableError(
            "the CuPy backend was requested but no CUDA GPU is visible on this machine"
        )
    return cp


def get_namespace(*arrays: Any) -> ModuleType:
    """The array namespace of ``arrays``: ``cupy`` if any is a CuPy array, the strict namespace
    if any is a strict array, else ``numpy``."""
    for a in arrays:
        if isinstance(a, StrictArray):
            return STRICT
        mod = type(a).__module__
        if mod.startswith("cupy"):
            import cupy  # noqa: PLC0415  (optional extra fedtheory[gpu])

            return cupy
    return np


def asarray(a: Any, xp: ModuleType | None = None, dtype: Any = None) -> Any:
    """``a`` as an array of namespace ``xp`` (default: the configured backend)."""
    xp = get_backend() if xp is None else xp
    return xp.asarray(a, dtype=dtype)


def is_device_array(a: Any) -> bool:
    """True for an array that lives off the host: a CuPy array or a strict-backend array."""
    return isinstance(a, StrictArray) or type(a).__module__.startswith("cupy")


def to_numpy(a: Any) -> np.ndarray:
    """A NumPy copy of ``a`` whatever its backend (``cupy.asnumpy`` for device arrays).

    The one way from a device array to the host; on the strict backend each call is tallied as
    a host transfer (:func:`count_host_syncs`).
    """
    if isinstance(a, StrictArray):
        return host_copy(a)
    if type(a).__module__.startswith("cupy"):
        return a.get()
    return np.asarray(a)


def resolve_dtype(dtype: Any = None) -> np.dtype:
    """float64 by default; float32 on request. Anything else is refused."""
    dt = np.dtype(np.float64 if dtype is None else dtype)
    if dt not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise BackendUnavailableError(f"dtype must be float64 or float32, got {dt}")
    return dt


def row_dots(A: Any, B: Any = None) -> Any:
    """``A[..., :] @ B[..., :]`` (``B`` default ``A``) for every row: ``(..., n) -> (...)``.

    On NumPy through :func:`numpy.vecdot`; on other namespaces (CuPy has no ``vecdot``) as the
    batched product (..., 1, n) @ (..., n, 1), which gives the same bits (tested). Both are
    one pass: ``(A * B).sum(axis=-1)`` reduces over a short last axis about 3x slower (the
    runner's metrics every round), and NumPy's batched product of that shape goes to a threaded
    BLAS call per row that took 0.7-1.3 s for 63 rows of 32,000 (N = 1600, d = 20) with two
    OpenBLAS threads on the shared 2-core machine, against 0.5 ms for ``vecdot``.
    """
    B = A if B is None else B
    xp = get_namespace(A)
    if xp is np:
        return np.vecdot(A, B)
    return xp.matmul(A[..., None, :], B[..., :, None])[..., 0, 0]
