"""Per-round metrics: functions of ``(state, problem)`` that return one number per seed.

A metric takes an algorithm's state (a NamedTuple whose field ``x`` is the server model
``(S, d)``, the one field every state has) and the problem, and returns an array of shape
``(S,)`` in the state's namespace. The runner (:func:`fedtheory.simulation.simulate`) records
the three of :data:`RUNNER_METRICS`, which need only ``x`` and the problem; an algorithm
contributes the ones that need its own state (``Algorithm.metrics``: the clients' consensus
error for algorithms with client models, FOCUS's tracking residual), and a caller may pass its
own (the MLP's test accuracy). The runner never reads an algorithm's field names. By default a
run records ``error`` alone (``grad_norm2`` where x* is unknown: :func:`default_metric`), a few
operations on the (S, d) server models; ``f_minus_f_star`` and ``grad_norm2`` (a (d, d) product
per seed-round each, as much as a client's gradient on a quadratic) and the algorithm's own,
which read every client's row, are recorded on request (by name, or ``metrics="all"``), so a
default round costs what its participants cost.

One vocabulary: a metric has the same name in Python (``result.error``,
``simulate(metrics=["error"])``), in the JSON of ``fedtheory simulate``, in a sweep's Zarr store
and on the command line: ``error`` (||x_r - x*|| / ||x*||), ``f_minus_f_star``,
``grad_norm2``, ``consensus``, ``tracking_residual``. The earlier Python names (``rel_error``,
``subopt``, ``tracking``) still work, with a DeprecationWarning (:data:`RENAMED`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from fedtheory.backend import get_namespace, row_dots
from fedtheory.errors import AssumptionError

Array = Any
Metric = Callable[[Any, Any], Array]


def rel_error(state: Any, problem: Any) -> Array:
    """||x_r - x*|| / ||x*|| of the server model (NaN when x* is unknown; ||x*|| = 0 counts 1)."""
    x = state.x
    xp = get_namespace(x)
    if problem.x_star is None:
        return xp.full(x.shape[0], np.nan)
    x_star = np.asarray(problem.x_star, dtype=np.float64)
    e = x - xp.asarray(x_star, dtype=x.dtype)
    return xp.sqrt(row_dots(e)) / (float(np.linalg.norm(x_star)) or 1.0)


def subopt(state: Any, problem: Any) -> Array:
    """f(x_r) - f* (NaN when f* is unknown)."""
    x = state.x
    if problem.f_star is None:
        return get_namespace(x).full(x.shape[0], np.nan)
    return problem.loss(x) - problem.f_star


def grad_norm2(state: Any, problem: Any) -> Array:
    """||grad f(x_r)||^2, f = (1/N) sum_i f_i."""
    return row_dots(problem.full_grad(state.x))


#: The metrics the runner records for every algorithm (they read only the server model ``x``).
RUNNER_METRICS: dict[str, Metric] = {
    "error": rel_error,
    "f_minus_f_star": subopt,
    "grad_norm2": grad_norm2,
}

#: CF attributes of the runner's metrics, the one description of each that xarray results
#: (:meth:`~fedtheory.simulation.SimulationResult.to_xarray`) and sweep stores carry.
METRIC_ATTRS: dict[str, dict[str, str]] = {
    "error": {
        "long_name": "relative error ||x_r - x*|| / ||x*|| of the server model",
        "units": "1",
    },
    "f_minus_f_star": {"long_name": "suboptimality f(x_r) - f*", "units": "1"},
    "grad_norm2": {"long_name": "squared gradient norm ||grad f(x_r)||^2", "units": "1"},
}


def metric_attrs(name: str) -> dict[str, str]:
    """A metric's CF attributes (:data:`METRIC_ATTRS`; an algorithm's or a caller's own metric:
    its name as ``long_name``)."""
    return dict(METRIC_ATTRS.get(name, {"long_name": name}))


#: ``metrics="all"``: every metric the run can record (the runner's and the algorithm's own).
ALL = "all"

#: Runner metrics that need an attribute a problem may not have: x*, f*.
_UNKNOWABLE = {"error": "x_star", "f_minus_f_star": "f_star"}


def _knows(problem: Any, name: str) -> bool:
    return problem is None or getattr(problem, _UNKNOWABLE[name], None) is not None


def default_metric(problem: Any) -> str:
    """The metric a run records by default: ``error`` (||x_r - x*|| / ||x*||, a few operations
    on the (S, d) server models) where the problem knows x*, else ``grad_norm2``. It is also
    the divergence check's score."""
    return "error" if _knows(problem, "error") else "grad_norm2"


#: Earlier names of metrics -> their names now (accepted with a DeprecationWarning).
RENAMED = {"rel_error": "error", "subopt": "f_minus_f_star", "tracking": "tracking_residual"}


def current_name(name: str) -> str:
    """``name``, or its name now if it is an earlier one (with a DeprecationWarning)."""
    if name in RENAMED:
        warnings.warn(
            f"the metric {name!r} is now called {RENAMED[name]!r}",
            DeprecationWarning,
            stacklevel=3,
        )
        return RENAMED[name]
    return name


def select_metrics(
    requested: Sequence[str] | Mapping[str, Metric] | None, algorithm: Any, problem: Any = None
) -> tuple[dict[str, Metric], dict[str, Metric]]:
    """``(available, recorded)``: every metric a run of ``algorithm`` can record, and those asked
    for.

    ``requested`` is None (the default: :func:`default_metric`, the cheap ``error`` where the
    problem knows x*, else ``grad_norm2``), ``"all"`` (every metric the problem allows: the
    runner's three and the algorithm's own, the clients' ``consensus`` and FOCUS's
    ``tracking_residual``, which read every client's row each recorded round), a sequence of
    names among the available ones, or a mapping ``name -> metric`` (exactly those, e.g.
    ``{"accuracy": ...}``; a name may also map to None to pick the available metric of that
    name). ``f_minus_f_star`` and ``grad_norm2`` cost a (d, d) product per seed-round each, as
    much as a client's gradient on a quadratic: they are recorded on request.

    Raises
    ------
    AssumptionError
        An unknown name (the message lists the available ones) or a value that is not callable.
    """
    available = {**RUNNER_METRICS, **dict(getattr(algorithm, "metrics", {}) or {})}
    if requested is None:
        name = default_metric(problem)
        return available, {name: available[name]}
    if isinstance(requested, str):
        requested = [requested]
    if not isinstance(requested, Mapping) and list(requested) == [ALL]:
        requested = [m for m in available if m not in _UNKNOWABLE or _knows(problem, m)]
    if isinstance(requested, Mapping):
        recorded = {}
        for name, fn in requested.items():
            name = current_name(name) if fn is None else name
            fn = available.get(name) if fn is None else fn
            if not callable(fn):
                raise AssumptionError(
                    f"metric {name!r} must be a function of (state, problem) or one of "
                    f"{', '.join(available)}"
                )
            recorded[str(name)] = fn
        return {**available, **recorded}, recorded
    requested = [current_name(m) for m in requested]
    unknown = [m for m in requested if m not in available]
    if unknown:
        raise AssumptionError(
            f"unknown metrics {unknown} for {getattr(algorithm, 'name', 'this algorithm')}: "
            f"choose from {', '.join(available)}"
        )
    return available, {m: available[m] for m in requested}
