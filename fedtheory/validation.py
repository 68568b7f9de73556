"""Input checks shared by every module. Each raises an error naming the violated assumption.

- :func:`as_real_array`: a real numeric array; complex, object, string, byte or date dtypes are
  refused naming the dtype (a complex matrix would otherwise lose its imaginary part silently).
- :func:`check_finite`, :func:`check_positive`, :func:`check_int`, :func:`check_probabilities`,
  :func:`check_tolerance`: numbers and vectors.
- :func:`check_seed`: a seed is None, an integer >= 0, a ``numpy.random.Generator`` or a
  ``SeedSequence``.
- :func:`check_memory`: refuse an allocation whose estimate exceeds the memory limit
  (:func:`memory_limit`: ``--max-memory`` / :func:`max_memory` where set, else the memory this
  machine has, :func:`available_memory`), saying the estimate and how to proceed.
- :func:`announce`: work estimated to take long says on stderr what it is doing, with its
  estimate, before it starts.
"""

from __future__ import annotations

import difflib
import math
import numbers
import os
import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

from fedtheory.backend import is_device_array, to_numpy
from fedtheory.errors import AssumptionError, SizeError

#: Bytes per entry a problem generator holds while it draws (the entries, their random draws
#: and a float64 copy or two): the memory check of problem sizes.
PROBLEM_BYTES = 32

#: dtype kinds that are real numbers: bool, signed and unsigned integers, floats.
REAL_KINDS = "biuf"

_KIND_NAMES = {
    "c": "complex",
    "O": "object",
    "U": "string",
    "S": "bytes",
    "V": "structured",
    "M": "datetime",
    "m": "timedelta",
}


def did_you_mean(word: Any, choices: Any) -> str:
    """``" (did you mean 'fedavg'?)"`` for the closest of ``choices`` to a misspelt ``word``
    (case-insensitive; difflib's ratio >= 0.6), or ``""`` when none is close: the one way every
    refusal of an unknown name suggests the near miss."""
    options = [str(c) for c in choices]
    lower = {c.lower(): c for c in options}
    close = difflib.get_close_matches(str(word).strip().lower(), list(lower), n=1)
    return f" (did you mean {lower[close[0]]!r}?)" if close else ""


def lookup(
    table: Mapping[str, Any],
    name: Any,
    what: str,
    *,
    error: type = AssumptionError,
    aliases: Mapping[str, str] | None = None,
    hint: str = "",
    sort: bool = False,
) -> Any:
    """The entry of a registry ``table`` called ``name`` (case-insensitive, through ``aliases``),
    or ``error`` naming the choices (in order, or sorted) and the near miss: the one way every
    registry refuses an unknown name (algorithms, participation models, problems)."""
    key = str(name).strip().lower()
    key = (aliases or {}).get(key, key)
    if key not in table:
        near = did_you_mean(key, [*table, *(aliases or {})])
        choices = ", ".join(sorted(table) if sort else table)
        raise error(f"unknown {what} {name!r}{near}: choose one of {choices}{hint}")
    return table[key]


def with_facts(table: Mapping[str, Any], **want: Any) -> list[str]:
    """The names of a registry ``table`` whose entries have every given fact (a ``None``
    value asks nothing): ``with_facts(models, exact_law=True)``."""
    return [
        k for k, v in table.items() if all(w is None or getattr(v, f) == w for f, w in want.items())
    ]


def as_real_array(name: str, a: Any, *, dtype: Any = np.float64) -> np.ndarray:
    """``a`` as a real array of ``dtype``; refuse complex, object, string and other non-real
    dtypes (naming the dtype), ragged nested lists and masked arrays with masked entries.

    Raises
    ------
    AssumptionError
        ``"W must be a real numeric array, got complex128 (complex numbers are not accepted:
        their imaginary part would be dropped)"``.
    """
    if is_device_array(a):
        a = to_numpy(a)
    if isinstance(a, np.ma.MaskedArray) and np.ma.count_masked(a):
        raise AssumptionError(
            f"{name} is a masked array with {np.ma.count_masked(a)} masked entries, whose mask "
            "would be ignored: fill them (a.filled(value)) or drop them first"
        )
    try:
        raw = np.asarray(a)
    except (ValueError, TypeError) as exc:  # ragged nested lists
        raise AssumptionError(f"{name} must be a rectangular numeric array ({exc})") from None
    kind = raw.dtype.kind
    if kind not in REAL_KINDS:
        what = _KIND_NAMES.get(kind, str(raw.dtype))
        extra = {
            "c": " (complex numbers are not accepted: their imaginary part would be dropped)",
            "U": " (numbers given as text: convert them first)",
            "O": " (mixed or non-numeric entries)",
        }.get(kind, "")
        raise AssumptionError(
            f"{name} must be a real numeric array, got {what} dtype {raw.dtype}{extra}"
        )
    return raw.astype(dtype, copy=False) if dtype is not None else raw


def check_finite(name: str, a: Any) -> np.ndarray:
    """``a`` as a float array; refuse a non-real dtype and NaN or inf, naming the first bad
    entry."""
    arr = as_real_array(name, a)
    bad = ~np.isfinite(arr)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssumptionError(f"{name} has a non-finite entry {arr[idx]} at index {idx}")
    return arr


def _as_float(name: str, value: Any) -> float:
    """A real scalar as a float; refuse strings, complex numbers, arrays and None."""
    if isinstance(value, bool | np.bool_) or isinstance(value, str | bytes):
        raise AssumptionError(f"{name} must be a real number, got {value!r}")
    if isinstance(value, complex | np.complexfloating):
        raise AssumptionError(f"{name} must be a real number, got the complex {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise AssumptionError(f"{name} must be a real number, got {value!r}") from None


def check_positive(name: str, value: float, *, allow_zero: bool = False) -> float:
    """A finite step size, variance or count that must be > 0 (or >= 0)."""
    v = _as_float(name, value)
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise AssumptionError(f"{name} must be finite and {bound}, got {value}")
    return v


def check_tolerance(name: str, value: Any) -> float:
    """A tolerance: finite and >= 0 (``atol=nan`` would make every comparison pass)."""
    return check_positive(f"the tolerance {name}", value, allow_zero=True)


def check_int(
    name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """An integer count (rounds, local steps, clients) with optional bounds."""
    if isinstance(value, bool | np.bool_ | str | bytes) or value is None:
        raise AssumptionError(f"{name} must be an integer, got {value!r}")
    try:
        ok = math.isfinite(float(value)) and int(value) == value
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        raise AssumptionError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if minimum is not None and v < minimum:
        raise AssumptionError(f"{name} must be >= {minimum}, got {v}")
    if maximum is not None and v > maximum:
        raise AssumptionError(f"{name} must be <= {maximum}, got {v}")
    return v


def check_seed(seed: Any, name: str = "the seed") -> Any:
    """A seed for :func:`numpy.random.default_rng`: None, an integer >= 0, a sequence of them,
    a Generator, BitGenerator or SeedSequence (returned unchanged; an integral float becomes an
    int).

    NumPy refuses a negative seed with a bare ``ValueError``; this names the argument.
    """
    if seed is None or isinstance(seed, np.random.Generator | np.random.SeedSequence):
        return seed
    if isinstance(seed, np.random.BitGenerator):
        return seed
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool | np.bool_):
        if seed < 0:
            raise AssumptionError(f"{name} must be an integer >= 0, got {seed}")
        return int(seed)
    if isinstance(seed, float) and seed.is_integer() and seed >= 0:
        return int(seed)
    if isinstance(seed, list | tuple | np.ndarray) and len(seed):  # entropy words
        for k, s in enumerate(np.ravel(np.asarray(seed, dtype=object))):
            check_seed(s, f"{name} (entry {k})")
        return seed
    raise AssumptionError(
        f"{name} must be an integer >= 0, a numpy Generator or a SeedSequence, got {seed!r}"
    )


def check_probabilities(
    name: str, p: Any, *, n: int | None = None, sums_to_one: bool = False, atol: float = 1e-10
) -> np.ndarray:
    """A vector of probabilities in [0, 1] (optionally of length n, optionally summing to 1)."""
    arr = check_finite(name, p)
    atol = check_tolerance("atol", atol)
    if arr.ndim != 1:
        raise AssumptionError(f"{name} must be a vector, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise AssumptionError(f"{name} must have {n} entries (one per client), got {arr.shape[0]}")
    out = np.flatnonzero((arr < 0) | (arr > 1))
    if out.size:
        i = int(out[0])
        raise AssumptionError(f"{name}[{i}] = {arr[i]} is outside [0, 1]")
    if sums_to_one and abs(arr.sum() - 1.0) > atol:
        raise AssumptionError(f"{name} must sum to 1, sums to {arr.sum():.12g}")
    return arr


# ---------------------------------------------------------------------------------------------
# Memory.


def _cgroup_room() -> int | None:
    """Bytes left under a container's memory limit (cgroup v2, else v1), or None."""
    for limit, used in (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        (
            "/sys/fs/cgroup/memory/memory.limit_in_bytes",
            "/sys/fs/cgroup/memory/memory.usage_in_bytes",
        ),
    ):
        try:
            with open(limit) as fh:
                text = fh.read().strip()
            if text == "max" or int(text) >= 1 << 60:  # no limit
                return None
            with open(used) as fh:
                return max(int(text) - int(fh.read().strip()), 0)
        except (OSError, ValueError):
            continue
    return None


def available_cores() -> int:
    """The number of cores this process may run on (its CPU affinity on Linux, else
    ``os.cpu_count()``): the default of ``fedtheory sweep --workers`` and ``fedtheory simulate
    --workers``."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def available_memory() -> int:
    """Bytes this process may still allocate: ``MemAvailable`` of /proc/meminfo where it exists
    (Linux), else the physical memory (``SC_PHYS_PAGES * SC_PAGE_SIZE``), and no more than a
    container's memory limit leaves; the environment variable ``FEDTHEORY_MEMORY_LIMIT`` (bytes, or
    a size such as ``4G``: :func:`parse_bytes`) caps it.

    Raises
    ------
    AssumptionError
        ``FEDTHEORY_MEMORY_LIMIT`` is set but is not a size.
    """
    avail = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        avail = None
    if avail is None:
        try:
            avail = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            avail = 1 << 62  # unknown: do not refuse
    room = _cgroup_room()
    if room is not None:
        avail = min(avail, room)
    cap = os.environ.get("FEDTHEORY_MEMORY_LIMIT")
    if cap:  # a size as --max-memory takes it; anything else is refused, never ignored
        avail = min(avail, parse_bytes(cap, "FEDTHEORY_MEMORY_LIMIT"))
    return int(avail)


def format_bytes(n: float) -> str:
    """``1.2e10`` -> ``"11.2 GiB"``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if abs(n) < 1024 or unit == "EiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


#: The limit set by :func:`max_memory` in this context: (bytes, how it was set), or None.
_MEMORY_LIMIT: ContextVar[tuple[int, str] | None] = ContextVar(
    "fedtheory_memory_limit", default=None
)

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}


def parse_bytes(text: Any, name: str = "the memory limit") -> int:
    """A size in bytes: a number (``1.5e9``) or a number and a binary unit (``4G``, ``512MiB``,
    ``2 GB``: K, M, G, T, P are powers of 1024, with an optional ``i`` and ``B``).

    Raises
    ------
    AssumptionError
        Not a size, or not > 0.
    """
    if isinstance(text, int | float) and not isinstance(text, bool):
        value = float(text)
    else:
        m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([kKmMgGtTpP]?)(?:i?[bB]?)\s*", str(text))
        try:
            value = float(m.group(1)) * _UNITS[m.group(2).lower()] if m else math.nan
        except ValueError:
            value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise AssumptionError(
            f"{name} must be a size such as 4G, 512M or 1.5e9 (bytes), got {text!r}"
        )
    return int(value)


@contextmanager
def max_memory(limit: Any, *, source: str = "max_memory") -> Iterator[None]:
    """Within the block, :func:`check_memory` refuses beyond ``limit`` (bytes or a size such as
    ``"4G"``, see :func:`parse_bytes`) instead of the memory available; None changes nothing.

    ``fedtheory COMMAND --max-memory 4G`` runs the command in this block (``source`` names the
    flag in messages).

    >>> with max_memory("1G"):                      # doctest: +SKIP
    ...     simulate(problem, "focus", rounds=10**6)  # refused: the estimate exceeds 1 GiB
    """
    if limit is None:
        yield
        return
    token = _MEMORY_LIMIT.set((parse_bytes(limit, source), source))
    try:
        yield
    finally:
        _MEMORY_LIMIT.reset(token)


def memory_limit() -> tuple[int, str]:
    """The limit :func:`check_memory` applies, and what it is: ``(bytes, "allowed by
    --max-memory")`` inside :func:`max_memory`, else ``(available_memory(), "of memory available
    on this machine")``."""
    set_ = _MEMORY_LIMIT.get()
    if set_ is not None:
        return set_[0], f"allowed by {set_[1]}"
    return available_memory(), "of memory available on this machine"


def check_memory(what: str, nbytes: float, *, hint: str | None = None) -> None:
    """Refuse ``what`` when its estimated ``nbytes`` exceed :func:`memory_limit`.

    ``hint`` says how to proceed (make it smaller); the message always adds how the limit is set.

    Raises
    ------
    SizeError
        ``"a dense 100000 x 100000 matrix needs about 74.5 GiB, more than the 21.3 GiB of memory
        available on this machine: <hint>; --max-memory SIZE (FEDTHEORY_MEMORY_LIMIT in the
        environment) sets the limit"``.
    """
    limit, where = memory_limit()
    if nbytes > limit:
        raise SizeError(
            f"{what} needs about {format_bytes(nbytes)}, more than the {format_bytes(limit)} "
            f"{where}: {hint + '; ' if hint else ''}--max-memory SIZE (FEDTHEORY_MEMORY_LIMIT in "
            "the environment) sets the limit"
        )


#: Work estimated to take longer than this says what it is doing on stderr before it starts.
LONG_WORK_SECONDS = 10.0


def format_seconds(seconds: float) -> str:
    """``95`` -> ``"about 2 min"``: a rough duration for an estimate."""
    if seconds < 90:
        return f"about {max(seconds, 1):.0f} s"
    if seconds < 90 * 60:
        return f"about {seconds / 60:.0f} min"
    if seconds < 72 * 3600:
        return f"about {seconds / 3600:.1f} h"
    if seconds < 3 * 365 * 86400:
        return f"about {seconds / 86400:.0f} days"
    return f"about {seconds / (365.25 * 86400):.2g} years"


def announce(what: str, *, seconds: float | None = None, nbytes: float | None = None) -> None:
    """Say on stderr what is about to run and its estimate, when it is estimated to take longer
    than :data:`LONG_WORK_SECONDS` (``fedtheory: the participation report of 3000000 clients:
    about 915.5 MiB of memory, about 15 s``). Silent otherwise, and when
    the environment sets ``FEDTHEORY_NO_PROGRESS``."""
    if seconds is None or seconds < LONG_WORK_SECONDS or os.environ.get("FEDTHEORY_NO_PROGRESS"):
        return
    parts = [] if nbytes is None else [f"about {format_bytes(nbytes)} of memory"]
    parts.append(format_seconds(seconds))
    print(f"fedtheory: {what}: {', '.join(parts)}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Time and processes.

#: The least time one local step takes, whatever the problem: one batched update of the
#: clients' rows from Python. Measured (``time.process_time``, 10^5 steps): 6.5 us per step
#: building the K-step map of one client of dimension 1 (``QuadraticProblem.local_steps_map``),
#: 20 us per step of FedAvg on 003 Figure 4 (16 clients, d = 50), 22 us per step and instance
#: of the exact oracle (FOCUS, 4 clients, d = 3). A lower bound: an estimate made with it is
#: never longer than the work.
STEP_SECONDS = 1e-6

#: Work whose estimate (a lower bound, :data:`STEP_SECONDS`) exceeds this many seconds is
#: refused before it starts; ``FEDTHEORY_TIME_LIMIT`` (seconds) in the environment sets it.
TIME_LIMIT_SECONDS = 3600.0

#: Local worker processes started per core, at most (:func:`worker_count`): the tasks are
#: compute-bound with one BLAS thread each, so more only contend for the cores, and each is a
#: Python process with numpy and fedtheory loaded.
WORKERS_PER_CORE = 2


def time_limit() -> float:
    """Seconds of work :func:`check_duration` allows: ``FEDTHEORY_TIME_LIMIT`` where set (a
    number of seconds > 0), else :data:`TIME_LIMIT_SECONDS`.

    Raises
    ------
    AssumptionError
        ``FEDTHEORY_TIME_LIMIT`` is set but is not a number of seconds > 0.
    """
    text = os.environ.get("FEDTHEORY_TIME_LIMIT")
    if not text:
        return TIME_LIMIT_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise AssumptionError(
            f"FEDTHEORY_TIME_LIMIT must be a number of seconds > 0, got {text[:40]!r}"
        )
    return value


def check_duration(what: str, seconds: float, *, hint: str) -> None:
    """Refuse ``what`` when its estimated duration (a lower bound) exceeds :func:`time_limit`;
    say what it is doing on stderr when it exceeds :data:`LONG_WORK_SECONDS`
    (:func:`announce`).

    Raises
    ------
    SizeError
        ``"1000000000000 local steps take at least about 12 days (1 us each at the least), more
        than the limit of about 60 min: <hint>; FEDTHEORY_TIME_LIMIT (seconds) sets the
        limit"``.
    """
    limit = time_limit()
    if not seconds <= limit:
        raise SizeError(
            f"{what} takes at least {format_seconds(seconds)}, more than the limit of "
            f"{format_seconds(limit)}: {hint}; FEDTHEORY_TIME_LIMIT (seconds) sets the limit"
        )
    announce(what, seconds=seconds)


def check_local_steps(steps: Any, what: str = "a pass of") -> int:
    """Refuse a loop of ``steps`` local steps whose least duration (:data:`STEP_SECONDS` each)
    exceeds :func:`time_limit`; the count as an int.

    Called where the steps run one after the other (the local-steps engine, the K-step maps of
    a quadratic), never where K costs nothing (closed forms)."""
    K = check_int("the number of local steps K", steps, minimum=1)
    limit = time_limit()
    if K * STEP_SECONDS > limit:
        raise SizeError(
            f"{what} {K} local steps takes at least {format_seconds(K * STEP_SECONDS)} "
            f"({STEP_SECONDS * 1e6:g} us per step at the least), more than the limit of "
            f"{format_seconds(limit)}: ask for fewer local steps K; FEDTHEORY_TIME_LIMIT "
            "(seconds) sets the limit"
        )
    return K


def worker_count(workers: Any, tasks: int | None = None, *, name: str = "workers") -> int:
    """How many local worker processes to start for ``workers`` asked and ``tasks`` to run: no
    more than the tasks, nor :data:`WORKERS_PER_CORE` per core this process may use
    (:func:`available_cores`). ``fedtheory simulate``, ``sweep``, ``verify`` and ``bound`` cap
    their ``--workers`` with it.

    Raises
    ------
    AssumptionError
        ``workers`` is not an integer >= 1.
    """
    n = check_int(name, workers, minimum=1)
    n = min(n, WORKERS_PER_CORE * available_cores())
    return max(1, min(n, tasks)) if tasks is not None else n
