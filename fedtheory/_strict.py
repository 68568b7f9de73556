"""The strict backend: NumPy on the CPU, with CuPy's host/device boundary.

No GPU has run fedtheory's CuPy path, so a GPU user's first run would be its first test. The
commonest failures of NumPy code moved to CuPy are at the boundary between host and device: an
implicit conversion of a device array to NumPy (``np.asarray``, a SciPy or matplotlib call), a
NumPy function CuPy does not have, host randomness mixed into device arithmetic, and Python
control flow (``float(x)``, ``if x.any():``) that waits for the device in a hot loop. The strict
backend (``get_backend("strict")``, ``FEDTHEORY_BACKEND=strict``) makes each of them visible on
any machine:

- its arrays, :class:`StrictArray`, are not NumPy arrays: ``__array__`` and the mixing of a
  NumPy array into device arithmetic raise :class:`~fedtheory.errors.HostConversionError`
  naming the caller's ``file:line``, where CuPy raises ``TypeError``; the only way out is
  :func:`fedtheory.backend.to_numpy`;
- its namespace, :data:`STRICT`, and its arrays offer only the functions and methods CuPy
  provides (:data:`CUPY_FUNCTIONS`, :data:`CUPY_LINALG`, :data:`CUPY_NDARRAY_METHODS`); anything
  else raises :class:`~fedtheory.errors.NotInCuPyError`;
- reductions return 0-d arrays, as CuPy's do (NumPy returns host scalars), and every conversion
  of a device array to a Python scalar (``float``, ``int``, ``bool``, ``operator.index``,
  ``item``, ``tolist``, ``in``), every result whose size depends on the data (``nonzero``,
  boolean-mask indexing) and every :func:`~fedtheory.backend.to_numpy` is a host
  synchronization, allowed (CuPy allows them) but tallied per thread by
  :func:`count_host_syncs`, with its call site.

Design: a wrapper class over a private :class:`numpy.ndarray` using NumPy's override protocols
(NEP 13 ``__array_ufunc__``, NEP 18 ``__array_function__``), chosen over ``array-api-strict``
because fedtheory is written against NumPy's API, as CuPy mirrors it (``xp.einsum``,
``out=`` arguments, in-place ufuncs, ``np.errstate``): the array API standard would mean a port
of every module, and its namespace is not the one CuPy users run. The arithmetic is NumPy's own
on the same shapes, so results equal the NumPy backend's bit for bit.

Randomness stays on the host (:class:`numpy.random.Generator`, moved with ``xp.asarray``, the
one explicit host-to-device door): the strict namespace has no ``random`` module.

References
----------
.. [1] CuPy v13 documentation, "Comparison Table" (NumPy / CuPy APIs),
   https://docs.cupy.dev/en/v13.4.1/reference/comparison.html, and "Differences between CuPy
   and NumPy" (reductions return 0-d arrays; implicit conversion to NumPy raises TypeError).
.. [2] NEP 13, "A mechanism for overriding Ufuncs"; NEP 18, "A dispatch mechanism for NumPy's
   high level array functions".
"""

from __future__ import annotations

import collections
import contextlib
import functools
import os
import sys
import threading
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from fedtheory.errors import HostConversionError, NotInCuPyError

#: The CuPy release whose documented NumPy compatibility the allow-lists below follow.
CUPY_VERSION = "13.4"

#: Module-level functions and ufuncs CuPy 13 provides under NumPy's name ("Comparison Table",
#: Module-Level section, of the CuPy v13 documentation [1]_): the part of the table fedtheory's
#: array code may reach. A name missing here raises NotInCuPyError on the strict backend; add
#: one only after checking it against the table for CUPY_VERSION.
CUPY_FUNCTIONS = frozenset(
    """
    abs absolute add all allclose amax amin angle any append arange arccos arccosh arcsin
    arcsinh arctan arctan2 arctanh argmax argmin argpartition argsort argwhere around array
    array_equal array_split asanyarray asarray ascontiguousarray asfortranarray atleast_1d
    atleast_2d atleast_3d average bincount bitwise_and bitwise_not bitwise_or bitwise_xor
    broadcast_arrays broadcast_to can_cast cbrt ceil choose clip column_stack concatenate conj
    conjugate copy copysign copyto corrcoef cos cosh count_nonzero cov cross cumprod cumsum
    deg2rad degrees diag diagflat diagonal diff divide divmod dot dsplit dstack einsum empty
    empty_like equal exp exp2 expand_dims expm1 eye fabs fill_diagonal fix flatnonzero flip
    fliplr flipud float_power floor floor_divide fmax fmin fmod frexp full full_like gcd
    greater greater_equal histogram hsplit hstack hypot identity imag indices inner interp
    invert isclose iscomplex isfinite isin isinf isnan isreal isscalar kron lcm ldexp
    left_shift less less_equal linspace log log10 log1p log2 logaddexp logaddexp2
    logical_and logical_not logical_or logical_xor logspace matmul max maximum mean median
    meshgrid min minimum mod modf moveaxis multiply nan_to_num nanargmax nanargmin nancumsum
    nanmax nanmean nanmin nanstd nansum nanvar ndim negative nextafter nonzero not_equal ones
    ones_like outer pad partition percentile positive power prod ptp put quantile rad2deg
    radians ravel ravel_multi_index real reciprocal remainder repeat reshape result_type
    right_shift rint roll rollaxis rot90 round searchsorted select shape sign signbit sin sinc
    sinh size sort split sqrt square squeeze stack std subtract sum swapaxes take
    take_along_axis tan tanh tensordot tile trace transpose tri tril triu true_divide
    trunc unique unravel_index var vdot vsplit vstack where zeros zeros_like
    """.split()
)

#: ``cupy.linalg`` in CuPy 13 (the same table's Linear Algebra section): no ``eig``, ``eigvals``
#: or ``cond`` there.
CUPY_LINALG = frozenset(
    """
    cholesky det eigh eigvalsh inv lstsq matrix_power matrix_rank norm pinv qr slogdet solve
    svd tensorinv tensorsolve
    """.split()
)

#: Methods of ``cupy.ndarray`` (CuPy 13 API reference, ``cupy.ndarray``) that NumPy's ndarray
#: shares; ``get``/``set`` (host transfers) are left out: :func:`fedtheory.backend.to_numpy` is
#: the only exit.
CUPY_NDARRAY_METHODS = frozenset(
    """
    all any argmax argmin argpartition argsort astype choose clip compress conj conjugate copy
    cumprod cumsum diagonal dot fill flatten max mean min nonzero partition prod put ravel
    repeat reshape round sort squeeze std sum swapaxes take trace transpose var view
    """.split()
)

#: Names CuPy re-exports from NumPy itself (dtypes, constants, type helpers): the same objects.
_SAME_OBJECTS = {
    name: getattr(np, name)
    for name in """
    bool_ int8 int16 int32 int64 intp uint8 uint16 uint32 uint64 uintp float16 float32 float64
    complex64 complex128 dtype finfo iinfo issubdtype promote_types newaxis inf nan pi e
    euler_gamma number integer floating complexfloating generic
    """.split()
}

#: Functions whose output size depends on the data: CuPy reads a count back from the device
#: before it allocates the result, a host synchronization like a scalar read (so is indexing
#: with a boolean array). Tallied as ``sizes`` by :func:`count_host_syncs`.
DATA_DEPENDENT_SIZES = frozenset({"argwhere", "flatnonzero", "nonzero", "unique"})

#: Functions of the namespace that take host data explicitly (host -> device, as in CuPy).
_HOST_IN = frozenset({"asarray", "array", "asanyarray"})

_THIS_FILE = os.path.abspath(__file__)
#: Frames a call site is never in: this module and the backend's doors (``to_numpy``).
_SKIP_FILES = (_THIS_FILE, os.path.join(os.path.dirname(_THIS_FILE), "backend.py"))
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__))
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(_THIS_FILE))


# --------------------------------------------------------------------------------------------
# Call sites and the host-synchronization tally.
# --------------------------------------------------------------------------------------------


def call_site() -> str:
    """``file:line (in function)`` of the first caller outside this module, the backend module
    and NumPy (paths inside the repository relative to it)."""
    frame = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if path not in _SKIP_FILES and not path.startswith(_NUMPY_DIR + os.sep):
            if path.startswith(_PACKAGE_ROOT + os.sep):
                path = os.path.relpath(path, _PACKAGE_ROOT)
            return f"{path}:{frame.f_lineno} (in {frame.f_code.co_name})"
        frame = frame.f_back
    return "<unknown>"


@dataclass
class SyncCount:
    """Host synchronizations seen while a :func:`count_host_syncs` block ran in this thread.

    Attributes
    ----------
    scalars : int
        Device values read as Python scalars (``float``, ``int``, ``bool``, ``index``,
        ``item``, ``tolist``, ``in``): each waits for the device.
    sizes : int
        Results whose size depends on the data (:data:`DATA_DEPENDENT_SIZES`, indexing with a
        boolean array): CuPy reads the size back from the device.
    transfers : int
        :func:`fedtheory.backend.to_numpy` calls on device arrays (a copy to the host).
    sites : collections.Counter
        ``"file:line (in function)" -> count`` of all kinds.
    """

    scalars: int = 0
    sizes: int = 0
    transfers: int = 0
    sites: collections.Counter = field(default_factory=collections.Counter)

    @property
    def total(self) -> int:
        """All host synchronizations: scalar reads, data-dependent sizes and transfers."""
        return self.scalars + self.sizes + self.transfers


_LOCAL = threading.local()


def _tally(kind: str) -> None:
    counters = getattr(_LOCAL, "counters", None)
    if not counters:
        return
    site = call_site()
    for c in counters:
        setattr(c, kind, getattr(c, kind) + 1)
        c.sites[site] += 1


@contextlib.contextmanager
def count_host_syncs() -> Iterator[SyncCount]:
    """Count this thread's host synchronizations of strict arrays inside the block.

    >>> with count_host_syncs() as syncs:  # doctest: +SKIP
    ...     simulate(problem, "fedavg", rounds=10, backend="strict")
    >>> syncs.total, syncs.sites.most_common(3)  # doctest: +SKIP
    """
    count = SyncCount()
    counters = _LOCAL.__dict__.setdefault("counters", [])
    counters.append(count)
    try:
        yield count
    finally:
        counters.remove(count)


# --------------------------------------------------------------------------------------------
# Crossing the boundary.
# --------------------------------------------------------------------------------------------


def _mixing_error(a: np.ndarray) -> HostConversionError:
    return HostConversionError(
        f"a NumPy array of shape {a.shape} meets a device array at {call_site()}: move it with "
        "xp.asarray first (CuPy raises TypeError for host arrays in device arithmetic)"
    )


def _unwrap(obj: Any, host_ok: bool = False) -> Any:
    """Device arrays to their private ndarray, through lists, tuples and dicts; a host ndarray
    (of dimension >= 1, a 0-d one is a scalar) is refused unless ``host_ok``."""
    if isinstance(obj, StrictArray):
        return obj._a
    if isinstance(obj, np.ndarray):
        if obj.ndim and not host_ok:
            raise _mixing_error(obj)
        return obj
    if type(obj) in (list, tuple):
        return type(obj)(_unwrap(o, host_ok) for o in obj)
    if type(obj) is dict:
        return {k: _unwrap(v, host_ok) for k, v in obj.items()}
    return obj


def _wrap(obj: Any) -> Any:
    """NumPy results as device arrays (scalars as 0-d arrays, as CuPy returns them)."""
    if isinstance(obj, np.ndarray | np.generic):
        return StrictArray(np.asarray(obj))
    if isinstance(obj, tuple):
        items = [_wrap(o) for o in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
    if isinstance(obj, list):
        return [_wrap(o) for o in obj]
    return obj


def _not_in_cupy(name: str, where: str) -> NotInCuPyError:
    return NotInCuPyError(
        f"{where}{name} is not provided by CuPy {CUPY_VERSION} (its Comparison Table), so the "
        f"strict backend refuses it (at {call_site()})"
    )


class StrictArray(NDArrayOperatorsMixin):
    """A device array of the strict backend: a private :class:`numpy.ndarray` that refuses
    implicit conversion to NumPy and offers only CuPy's methods (see the module docstring).

    Build one with the namespace (``get_backend("strict").asarray(host_array)``); leave with
    :func:`fedtheory.backend.to_numpy`.
    """

    __slots__ = ("_a",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, a: np.ndarray) -> None:
        self._a = a

    # -- what CuPy refuses --------------------------------------------------------------------
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise HostConversionError(
            f"implicit conversion of a device array to a NumPy array at {call_site()}: use "
            "fedtheory.backend.to_numpy (CuPy raises TypeError here)"
        )

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_a":
            raise AttributeError(name)
        if name not in CUPY_NDARRAY_METHODS:
            raise _not_in_cupy(name, "the array method ")
        method = getattr(self._a, name)
        sized = name in DATA_DEPENDENT_SIZES

        @functools.wraps(method)
        def call(*args: Any, **kwargs: Any) -> Any:
            if sized:
                _tally("sizes")
            return _wrap(method(*_unwrap(args), **_unwrap(kwargs)))

        return call

    # -- NEP 13 / NEP 18 ----------------------------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if ufunc.__name__ not in CUPY_FUNCTIONS:
            raise _not_in_cupy(ufunc.__name__, "the ufunc ")
        out = kwargs.get("out")
        if out is not None:
            if any(not isinstance(o, StrictArray) for o in out):
                raise HostConversionError(
                    f"a ufunc writes into a host array at {call_site()} (CuPy writes only into "
                    "device arrays)"
                )
        kwargs = _unwrap({k: v for k, v in kwargs.items() if k != "out"})
        if out is not None:
            kwargs["out"] = tuple(o._a for o in out)
        result = getattr(ufunc, method)(*_unwrap(inputs), **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _wrap(result)

    def __array_function__(self, func: Any, kinds: Any, args: Any, kwargs: Any) -> Any:
        allowed = CUPY_LINALG if func.__module__.endswith("linalg") else CUPY_FUNCTIONS
        if func.__name__ not in allowed:
            raise _not_in_cupy(func.__name__, f"{func.__module__}.")
        if func.__name__ in DATA_DEPENDENT_SIZES:
            _tally("sizes")
        return _wrap(func(*_unwrap(args), **_unwrap(kwargs)))

    # -- host synchronizations (allowed, tallied) ---------------------------------------------
    def _sync(self) -> np.ndarray:
        _tally("scalars")
        return self._a

    def __bool__(self) -> bool:
        return bool(self._sync())

    def __float__(self) -> float:
        return float(self._sync())

    def __int__(self) -> int:
        return int(self._sync())

    def __index__(self) -> int:
        return self._sync().__index__()

    def __complex__(self) -> complex:
        return complex(self._sync())

    def item(self, *args: Any) -> Any:
        return self._sync().item(*args)

    def tolist(self) -> Any:
        return self._sync().tolist()

    def __contains__(self, value: Any) -> bool:
        return value in self._sync()

    # -- array protocol CuPy shares -----------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self._a.shape

    @property
    def dtype(self) -> np.dtype:
        return self._a.dtype

    @property
    def ndim(self) -> int:
        return self._a.ndim

    @property
    def size(self) -> int:
        return self._a.size

    @property
    def nbytes(self) -> int:
        return self._a.nbytes

    @property
    def itemsize(self) -> int:
        return self._a.itemsize

    @property
    def strides(self) -> tuple:
        return self._a.strides

    @property
    def flags(self) -> Any:
        return self._a.flags

    @property
    def T(self) -> StrictArray:
        return StrictArray(self._a.T)

    @property
    def real(self) -> StrictArray:
        return StrictArray(self._a.real)

    @property
    def imag(self) -> StrictArray:
        return StrictArray(self._a.imag)

    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self) -> Iterator[StrictArray]:
        return (StrictArray(np.asarray(row)) for row in self._a)

    def __getitem__(self, key: Any) -> StrictArray:
        return _wrap(self._a[_index(key)])

    def __setitem__(self, key: Any, value: Any) -> None:
        self._a[_index(key)] = _unwrap(value, host_ok=True)

    def __copy__(self) -> StrictArray:
        return StrictArray(self._a.copy())

    def __deepcopy__(self, memo: dict) -> StrictArray:
        return StrictArray(self._a.copy())

    def __repr__(self) -> str:  # a debugging view (CuPy's repr copies to the host too)
        return "strict_" + repr(self._a)

    def __str__(self) -> str:
        return str(self._a)

    def __format__(self, spec: str) -> str:
        return format(self._sync(), spec)


def _index(key: Any) -> Any:
    """An index unwrapped (host index arrays allowed, as CuPy moves them); a boolean device
    array in it is a data-dependent size, tallied."""
    keys = key if isinstance(key, tuple) else (key,)
    if any(isinstance(k, StrictArray) and k.dtype == bool and k.ndim for k in keys):
        _tally("sizes")
    return _unwrap(key, host_ok=True)


def host_copy(a: StrictArray) -> np.ndarray:
    """A NumPy copy of a strict array, tallied as a transfer (:func:`fedtheory.backend.to_numpy`
    is the public door; this is its strict branch)."""
    _tally("transfers")
    return a._a.copy()


# --------------------------------------------------------------------------------------------
# The namespace.
# --------------------------------------------------------------------------------------------


def _function(name: str, func: Any) -> Any:
    host_ok = name in _HOST_IN
    sized = name in DATA_DEPENDENT_SIZES

    @functools.wraps(func)
    def call(*args: Any, **kwargs: Any) -> Any:
        if sized:
            _tally("sizes")
        out = kwargs.get("out")
        if isinstance(func, np.ufunc) and any(isinstance(a, StrictArray) for a in args):
            return func(*args, **kwargs)  # dispatches to StrictArray.__array_ufunc__
        result = func(*_unwrap(args, host_ok), **_unwrap(kwargs, host_ok))
        return out if isinstance(out, StrictArray) else _wrap(result)

    return call


class StrictNamespace(types.ModuleType):
    """A module-like namespace that offers only ``allowed`` names of ``source`` (NumPy or
    ``numpy.linalg``), wrapped to take and return :class:`StrictArray`."""

    def __init__(self, name: str, source: Any, allowed: frozenset, prefix: str) -> None:
        super().__init__(name, f"The strict backend's {prefix or 'array'} namespace.")
        self._source, self._allowed, self._prefix = source, allowed, prefix

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self._allowed:
            if name == "random":
                raise NotInCuPyError(
                    "the strict backend has no random module: fedtheory draws on the host with "
                    "numpy Generators and moves the draws with xp.asarray (same bits on every "
                    f"backend) (at {call_site()})"
                )
            raise _not_in_cupy(name, self._prefix)
        fn = _function(name, getattr(self._source, name))
        setattr(self, name, fn)
        return fn

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | self._allowed)


#: The strict namespace, what ``get_backend("strict")`` returns (``__name__ == "strict"``).
STRICT = StrictNamespace("strict", np, CUPY_FUNCTIONS, "")
STRICT.linalg = StrictNamespace("strict.linalg", np.linalg, CUPY_LINALG, "linalg.")
STRICT.ndarray = StrictArray
for _name, _obj in _SAME_OBJECTS.items():
    setattr(STRICT, _name, _obj)
STRICT.bool = np.bool_
del _name, _obj
