"""Build a participation model from a name and the numbers a command line provides, through
the registry (:mod:`fedtheory.participation.registry`) where each model declares what it reads."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from fedtheory.errors import AssumptionError, UnknownOptionError
from fedtheory.io import read_array
from fedtheory.participation.base import ParticipationModel
from fedtheory.participation.registry import WHAT, model_info
from fedtheory.validation import check_finite


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
    clients_per_round: int | None = None,
    p: Any = None,
    **kw: Any,
) -> ParticipationModel:
    """A participation model by name.

    Parameters
    ----------
    name : str
        A registered model (:func:`~fedtheory.participation.registry.model_names`).
    n : int, optional
        Number of clients N (taken from ``p``, ``a`` or the trace when omitted).
    clients_per_round : int, optional
        M (uniform, weighted, cyclic, cluster: per cluster; the one name of clients per round,
        ``-M/--clients-per-round`` on the command line, ``m`` in what a model reads). Bernoulli without
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
    info = model_info(name)
    if "m" in kw:  # the earlier name
        if clients_per_round is not None:
            raise AssumptionError("give clients_per_round or its older name m, not both")
        warnings.warn("m is now called clients_per_round", DeprecationWarning, stacklevel=2)
        clients_per_round = kw.pop("m")
    m = clients_per_round
    given = {"m": m, "p": p, **kw}
    stray = [k for k, v in given.items() if v is not None and k not in info.reads]
    if stray:
        reads = ", ".join(info.reads) or "only the number of clients N"
        raise UnknownOptionError(
            f"{info.name} participation does not use "
            f"{', '.join(WHAT.get(k, repr(k)) for k in stray)} (it reads {reads})"
        )
    if isinstance(p, str | os.PathLike):
        p = load_vector(p)
    if p is not None:
        p = check_finite("probabilities p", p)
        if n is not None and p.shape != (int(n),):
            raise AssumptionError(
                f"probabilities have {p.size} entries but the number of clients is {n}"
            )
    return info.build(n, m, p, **kw)
