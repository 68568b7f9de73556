"""Build a participation model from a name and the numbers a command line provides."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from fedtheory.errors import AssumptionError, UnknownOptionError
from fedtheory.io import read_array
from fedtheory.participation.base import ParticipationModel
from fedtheory.participation.markov import Markov, default_markov_rates
from fedtheory.participation.models import (
    Bernoulli,
    Cyclic,
    Full,
    PerCluster,
    Trace,
    Uniform,
    Weighted,
    check_clients,
)
from fedtheory.validation import check_finite, check_int

#: Each model name and what it reads besides N: ``m`` (clients per round), ``p``
#: (probabilities) and its own keywords. Anything else given is an error naming it.
ACCEPTS: dict[str, tuple[str, ...]] = {
    "full": (),
    "uniform": ("m",),
    "weighted": ("m", "p", "replace"),
    "bernoulli": ("m", "p", "empty"),
    "markov": ("m", "a", "b", "start"),
    "cyclic": ("m", "pattern", "phase"),
    "cluster": ("m", "clusters", "n_clusters"),
    "trace": ("mask", "path", "cycle"),
}
NAMES = tuple(ACCEPTS)


def load_vector(path: str | Path, name: str = "probabilities") -> np.ndarray:
    """A 1-D float vector from ``.npy`` or a text file (:func:`fedtheory.io.read_array`).

    Raises
    ------
    FileNotFoundError
        No such file (``filename`` is ``path`` as given: the command line says
        ``no such file: PATH``).
    FedTheoryError
        A folder, an empty file, non-numeric text, binary junk, an ``.npz`` archive.
    AssumptionError
        A complex, string or object dtype, NaN/inf (naming the entry), or not a vector.
    """
    given = os.fsdecode(os.fspath(path))
    arr = read_array(given, what=f"a vector of {name}")
    arr = check_finite(f"{name} ({given})", arr)
    if arr.ndim != 1:
        raise AssumptionError(f"{name} ({given}) must be a vector, got shape {arr.shape}")
    return arr


def make_participation(
    name: str,
    n: int | None = None,
    m: int | None = None,
    p: Any = None,
    **kw: Any,
) -> ParticipationModel:
    """A participation model by name.

    Parameters
    ----------
    name : {"full", "uniform", "weighted", "bernoulli", "markov", "cyclic", "cluster", "trace"}
    n : int, optional
        Number of clients N (taken from ``p``, ``a`` or the trace when omitted).
    m : int, optional
        Clients per round M (uniform, weighted, cyclic, cluster: per cluster). Bernoulli without
        ``p`` uses p_i = M / N; Markov without ``a``/``b`` uses
        :func:`~fedtheory.participation.markov.default_markov_rates` (stationary M / N).
    p : array_like or path, optional
        Probabilities (weighted: draw weights summing to 1; bernoulli: p_i); a ``.npy``/text
        path is loaded.
    **kw
        Passed to the model: ``replace`` (weighted), ``empty`` (bernoulli), ``a``, ``b``,
        ``start`` (markov), ``pattern``, ``phase`` (cyclic), ``clusters`` (cluster; or
        ``n_clusters`` for equal contiguous clusters), ``mask``/``path``, ``cycle`` (trace).

    Raises
    ------
    AssumptionError
        Unknown name, missing or inconsistent numbers, invalid probabilities.
    UnknownOptionError
        (a ``TypeError`` too) an argument the model does not read, e.g. clients per round for
        full participation or a misspelled keyword; the message lists what it reads.
    """
    name = str(name).strip().lower()
    if name not in ACCEPTS:
        raise AssumptionError(
            f"unknown participation model {name!r}: choose one of {', '.join(NAMES)}"
        )
    given = {"m": m, "p": p, **kw}
    stray = [k for k, v in given.items() if v is not None and k not in ACCEPTS[name]]
    if stray:
        reads = ", ".join(ACCEPTS[name]) or "only the number of clients N"
        what = {"m": "clients per round M", "p": "probabilities p"}
        raise UnknownOptionError(
            f"{name} participation does not use {', '.join(what.get(k, repr(k)) for k in stray)}"
            f" (it reads {reads})"
        )
    if isinstance(p, str | os.PathLike):
        p = load_vector(p)
    if p is not None:
        p = check_finite("probabilities p", p)
        if n is not None and p.shape != (int(n),):
            raise AssumptionError(
                f"probabilities have {p.size} entries but the number of clients is {n}"
            )

    def need_n() -> int:
        if n is None:
            raise AssumptionError(f"participation {name!r} needs the number of clients N")
        return check_clients(n)

    def need_m() -> int:
        if m is None:
            raise AssumptionError(f"participation {name!r} needs clients per round M")
        return check_int("clients per round M", m)

    if name == "full":
        return Full(need_n())
    if name == "uniform":
        return Uniform(need_n(), need_m())
    if name == "weighted":
        if p is None:
            raise AssumptionError("weighted participation needs probabilities p (summing to 1)")
        return Weighted(p, need_m(), replace=bool(kw.get("replace", False)))
    if name == "bernoulli":
        if p is None:
            nn, mm = need_n(), need_m()
            if not 1 <= mm <= nn:
                raise AssumptionError(f"clients per round M = {mm} must lie in [1, N = {nn}]")
            p = np.full(nn, mm / nn)
        return Bernoulli(p, empty=kw.get("empty", "redraw"))
    if name == "markov":
        a, b = kw.get("a"), kw.get("b")
        if a is None or b is None:
            if a is not None or b is not None:
                raise AssumptionError("markov participation needs both a (off->on) and b (on->off)")
            nn, mm = need_n(), need_m()
            if not 1 <= mm <= nn:
                raise AssumptionError(f"clients per round M = {mm} must lie in [1, N = {nn}]")
            a, b = default_markov_rates(nn, mm)
        return Markov(a, b, start=kw.get("start", "stationary"))
    if name == "cyclic":
        if kw.get("pattern") is not None:
            return Cyclic(pattern=kw["pattern"], phase=kw.get("phase", 0))
        return Cyclic(need_n(), need_m(), phase=kw.get("phase", 0))
    if name == "cluster":
        clusters = kw.get("clusters")
        if clusters is None:
            nn = need_n()
            c = kw.get("n_clusters")
            c = 1 if c is None else check_int("the number of clusters C", c, minimum=1)
            if nn % c:
                raise AssumptionError(f"N = {nn} clients do not split into {c} equal clusters")
            clusters = np.repeat(np.arange(c), nn // c)
        return PerCluster(clusters, need_m())
    if name == "trace":
        if kw.get("mask") is not None:
            return Trace(kw["mask"], cycle=bool(kw.get("cycle", False)))
        if kw.get("path") is not None:
            return Trace.from_file(kw["path"], cycle=bool(kw.get("cycle", False)))
        raise AssumptionError("trace participation needs a mask or a path to an R x N file")
    raise AssertionError(f"{name} is in ACCEPTS but has no constructor")  # unreachable
