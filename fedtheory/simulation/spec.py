"""One run specification: what a run is, besides its problem and its algorithm's settings.

:class:`RunSpec` holds a run's settings; their names, defaults and ranges are
:data:`~fedtheory.simulation.settings.SETTINGS`'s. :func:`fedtheory.simulation.simulate` builds
one from its keywords, ``fedtheory simulate`` from its flags and a sweep task from its
configuration; :func:`~fedtheory.simulation.runner.plan_run` reads it.

:func:`build_participation` is the one place where flat settings (a model's name, clients per
round, probabilities, clusters, the empty-round policy, ...) become a participation model, for
every command and spec: :meth:`RunSpec.participation_model`, ``fedtheory rate``,
``fedtheory participation``, a sweep task and a bound's instances call it. A problem that
carries its own participation probabilities (``participation_p``, as the Figure 4 problem of
003 does) lends them to a model that takes a problem's draw weights (``weighted``) when none
are given, and the built model says where its p came from. "Clients per round" has one name
everywhere: ``clients_per_round`` (``-M/--clients-per-round`` on the command line).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from fedtheory.errors import AssumptionError, UnknownOptionError
from fedtheory.participation import (
    Full,
    ParticipationModel,
    load_vector,
    make_participation,
    model_info,
)
from fedtheory.participation.registry import WHAT
from fedtheory.simulation.settings import SETTINGS, defaults

__all__ = [
    "DIVERGENCE_GROWTH",
    "DIVERGENCE_WINDOW",
    "PARTICIPATION_SETTINGS",
    "BuiltParticipation",
    "RunSpec",
    "build_participation",
    "run_defaults",
]

_D = defaults()

#: A seed's error growing by this factor within :data:`DIVERGENCE_WINDOW` rounds is diverging.
DIVERGENCE_GROWTH = _D["divergence_growth"]
DIVERGENCE_WINDOW = _D["divergence_window"]

#: The settings a participation model reads besides its name (their ``key`` is the model's
#: keyword), in the table's order.
PARTICIPATION_SETTINGS = tuple(
    k for k, s in SETTINGS.items() if "participation" in s.reads and s.key is not None
)

#: Spellings of earlier versions, accepted with a DeprecationWarning.
_RENAMED = {"participation_m": "clients_per_round", "participation_p": "probabilities"}


@dataclass(frozen=True)
class BuiltParticipation:
    """A participation model built from flat settings, and where its probabilities came from.

    Attributes
    ----------
    model : ParticipationModel
    probabilities_from : {"given", "problem"} or None
        ``"problem"``: the problem's own ``participation_p`` (a model that takes draw weights,
        none given); ``"given"``: the caller's; None: the model reads none.
    """

    model: ParticipationModel
    probabilities_from: str | None = None


def _given(name: str, value: Any) -> bool:
    """A flat setting counts as given unless None or its default (callers pass them all)."""
    if value is None:
        return False
    default = SETTINGS[name].default
    return default is None or isinstance(value, np.ndarray) or value != default


def build_participation(
    participation: Any, problem: Any = None, **settings: Any
) -> BuiltParticipation:
    """The one builder of a participation model from flat settings.

    Parameters
    ----------
    participation : str, ParticipationModel or None
        A registered model name (:func:`~fedtheory.participation.model_names`), a built model
        (checked against the problem's number of clients) or None (full participation).
    problem : Problem or int, optional
        The problem (its ``n_clients`` and, for a model that takes draw weights, its own
        ``participation_p``), or just the number of clients N.
    **settings
        The participation settings of :data:`PARTICIPATION_SETTINGS` (``clients_per_round``,
        ``probabilities`` (an array or a ``.npy``/text path), ``clusters``, ``empty``,
        ``replace``, ``markov_a``, ``markov_b``, ``start``, ``trace``), by their table names.
        None or the default means "not given". ``clusters`` is also an algorithm setting: a
        model that does not read it ignores it.

    Returns
    -------
    BuiltParticipation

    Raises
    ------
    AssumptionError
        Settings given with no model name or with a built model, clients per round above N, a
        model built for another number of clients; what the model refuses or misses (it names
        what it reads).
    UnknownOptionError
        A setting the named model does not read, or a name that is no participation setting.
    """
    unknown = sorted(set(settings) - set(PARTICIPATION_SETTINGS))
    if unknown:
        raise UnknownOptionError(
            f"{', '.join(unknown)}: not participation settings (they are "
            f"{', '.join(PARTICIPATION_SETTINGS)})"
        )
    if problem is None or isinstance(problem, int | np.integer):
        n = None if problem is None else int(problem)
    else:
        n = int(problem.n_clients)
    given = {k: v for k, v in settings.items() if _given(k, v)}
    if participation is None or isinstance(participation, ParticipationModel):
        flat = [k for k in given if "algorithm" not in SETTINGS[k].reads]
        if flat:
            what = "no participation model" if participation is None else "a built model"
            raise AssumptionError(
                f"{', '.join(flat)} given with {what}: they only go with a participation "
                "model name, e.g. participation='uniform', clients_per_round=4"
            )
        if participation is None:
            return BuiltParticipation(Full(n))
        if n is not None and participation.n_clients != n:
            raise AssumptionError(
                f"the participation model has {participation.n_clients} clients but the "
                f"problem has {n}"
            )
        return BuiltParticipation(participation)
    if not isinstance(participation, str):
        raise AssumptionError(
            f"participation must be a model, a name or None, got {type(participation).__name__}"
        )
    entry = model_info(participation)
    kw: dict[str, Any] = {}
    for name, value in given.items():
        s = SETTINGS[name]
        if s.key not in entry.reads:
            if "algorithm" in s.reads:  # the algorithm's setting (CAFGA's clusters)
                continue
            raise UnknownOptionError(
                f"{entry.name} participation does not use {WHAT.get(s.key, repr(name))} (it reads "
                f"{', '.join(_reads(entry)) or 'only the number of clients N'})"
            )
        kw[s.key] = _flat_value(s, value, n)
    m = kw.get("m")
    if m is not None and n is not None and not 1 <= m <= n:
        raise AssumptionError(
            f"clients_per_round = {m} exceeds the N = {n} clients of the problem: it must lie "
            f"in [1, {n}]"
        )
    source = "given" if kw.get("p") is not None else None
    own = getattr(problem, "participation_p", None)
    if entry.problem_weights and kw.get("p") is None and own is not None:
        kw["p"], source = np.asarray(own, dtype=np.float64), "problem"
    m = kw.pop("m", None)
    p = kw.pop("p", None)
    return BuiltParticipation(make_participation(entry.name, n, m, p, **kw), source)


def _reads(entry: Any) -> list[str]:
    """The table names of the settings a registered model reads."""
    return [k for k in PARTICIPATION_SETTINGS if SETTINGS[k].key in entry.reads]


def _flat_value(s: Any, value: Any, n: int | None) -> Any:
    """A flat setting as the model's keyword wants it: a path of probabilities loaded, a rate
    given as one number spread to every client."""
    if s.kind == "path" and s.key == "p" and not isinstance(value, np.ndarray):
        if isinstance(value, str) or hasattr(value, "__fspath__"):
            return load_vector(value)
    if s.kind == "rate":
        if isinstance(value, str) or hasattr(value, "__fspath__"):
            return load_vector(value, s.name)
        if np.ndim(value) == 0:
            if n is None:
                raise AssumptionError(f"{s.name} as one number needs the number of clients N")
            return np.full(n, s.check(value), dtype=np.float64)
    if s.kind in ("int", "str", "bool") or (s.kind == "float" and np.ndim(value) == 0):
        return s.check(value)
    return value


@dataclass(frozen=True)
class RunSpec:
    """A run's settings (defaults and ranges: :data:`~fedtheory.simulation.settings.SETTINGS`;
    each checked by :meth:`checked` where :func:`~fedtheory.simulation.runner.plan_run` reads
    it).

    Attributes
    ----------
    rounds : int
        Communication rounds R.
    seeds, seed : int
        Number of seeds S and the root seed (>= 0).
    seed_ids : sequence of int, optional
        Which seeds of the root to run (default ``0..seeds-1``).
    participation : ParticipationModel, str or None
        A model, a registered name (built with the participation settings below) or None (full).
    clients_per_round, probabilities, clusters, empty, replace, markov_a, markov_b, start
        The participation settings (:func:`build_participation`).
    aggregation : {"mean", "weighted", "unbiased"}
    draws : array (S, R, N), optional
        Explicit participation masks (see :func:`~fedtheory.simulation.simulate`).
    x0 : array (d,) or (S, d), optional
    backend : str, optional
    dtype : float64 (default) or float32
    divergence_bound, divergence_growth, divergence_window : float, float, int
    average_from : int, optional
    record_every : int
    metrics : sequence of str or mapping, optional
    """

    rounds: int
    seeds: int = _D["seeds"]
    seed: int = _D["seed"]
    seed_ids: Sequence[int] | None = _D["seed_ids"]
    participation: Any = None
    clients_per_round: int | None = _D["clients_per_round"]
    probabilities: Any = _D["probabilities"]
    clusters: int | None = _D["clusters"]
    empty: str = _D["empty"]
    replace: bool = _D["replace"]
    markov_a: Any = _D["markov_a"]
    markov_b: Any = _D["markov_b"]
    start: str = _D["start"]
    trace: Any = _D["trace"]
    aggregation: str = _D["aggregation"]
    draws: Any = _D["draws"]
    x0: Any = _D["x0"]
    backend: str | None = _D["backend"]
    dtype: Any = None
    divergence_bound: float = _D["divergence_bound"]
    divergence_growth: float = _D["divergence_growth"]
    divergence_window: int = _D["divergence_window"]
    average_from: int | None = _D["average_from"]
    record_every: int = _D["record_every"]
    metrics: Sequence[str] | Mapping[str, Any] | None = _D["metrics"]

    @classmethod
    def split(
        cls, settings: Mapping[str, Any], reads: Sequence[str] | None = None
    ) -> tuple[RunSpec, dict[str, Any]]:
        """``settings`` as (the run's spec, the rest: the algorithm's settings).

        ``clusters`` is both a participation setting (``cluster`` participation: C equal
        clusters) and an algorithm setting (CAFGA, HA-Fed): it stays with the algorithm's
        settings, and the spec takes it too (only the spec, when ``reads``, the algorithm's
        accepted settings, lacks it and the model reads it). Earlier spellings
        (``participation_m``, ``participation_p``) are accepted with a DeprecationWarning.
        """
        settings = dict(settings)
        for old, new in _RENAMED.items():
            if old in settings:
                if new in settings and settings[new] is not None:
                    raise AssumptionError(f"give {new} or its older name {old}, not both")
                warnings.warn(f"{old} is now called {new}", DeprecationWarning, stacklevel=3)
                settings[new] = settings.pop(old)
        names = {f.name for f in fields(cls)} - {"clusters"}
        run = {k: settings.pop(k) for k in list(settings) if k in names}
        if settings.get("clusters") is not None:
            run["clusters"] = settings["clusters"]
            if reads is not None and "clusters" not in reads and _reads_clusters(run):
                del settings["clusters"]
        return cls(**run), settings

    def checked(self) -> RunSpec:
        """The spec with its numbers checked against the table (step 1 of
        :func:`~fedtheory.simulation.runner.plan_run`).

        Raises
        ------
        AssumptionError
            A negative count, a seed below 0, a non-positive divergence bound, a growth factor
            not above 1 (``math.inf`` turns the rule off), a window, ``record_every`` or
            ``average_from`` that is not a whole number in range.
        """
        S = SETTINGS
        S["seeds"].check(self.seeds)
        growth = self.divergence_growth
        if growth != math.inf:
            growth = S["divergence_growth"].check(growth)
            if not growth > 1:
                raise AssumptionError(
                    f"the divergence growth factor must be > 1 (math.inf turns the rule off), "
                    f"got {growth}"
                )
        S["divergence_bound"].check(self.divergence_bound)
        return replace(
            self,
            rounds=S["rounds"].check(self.rounds),
            seed=S["seed"].check(self.seed),
            divergence_growth=growth,
            divergence_window=S["divergence_window"].check(self.divergence_window),
            record_every=S["record_every"].check(self.record_every),
            average_from=S["average_from"].check(self.average_from),
        )

    def participation_settings(self) -> dict[str, Any]:
        """The participation settings of the spec, by their table names."""
        return {k: getattr(self, k) for k in PARTICIPATION_SETTINGS}

    def build_participation(self, problem: Any) -> BuiltParticipation:
        """The run's participation model on ``problem`` (or on N clients), and where its p
        came from (:func:`build_participation`)."""
        return build_participation(self.participation, problem, **self.participation_settings())

    def participation_model(self, problem: Any) -> ParticipationModel:
        """The run's participation model on ``problem`` (or on N clients):
        :func:`build_participation`'s model."""
        return self.build_participation(problem).model


def _reads_clusters(run: Mapping[str, Any]) -> bool:
    """Whether the run's participation model (a name) reads ``clusters``."""
    name = run.get("participation")
    return isinstance(name, str) and SETTINGS["clusters"].key in model_info(name).reads


def run_defaults() -> dict[str, Any]:
    """Each run setting's default (the table's: :func:`~fedtheory.simulation.settings.defaults`)."""
    return {f.name: _D[f.name] for f in fields(RunSpec) if f.name in _D}
