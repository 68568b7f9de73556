"""One run specification: what a run is, besides its problem and its algorithm's settings.

:class:`RunSpec` is the one declaration of a run's settings, their defaults and their checks.
:func:`fedtheory.simulation.simulate` builds one from its keywords, ``fedtheory simulate`` from
its flags and a sweep task from its configuration; :func:`~fedtheory.simulation.runner.plan_run`
reads it. Its :meth:`RunSpec.participation_model` is the one builder of a participation model
from flat settings (a name, clients per round, probabilities, clusters). "Clients per round" has
one name everywhere: ``clients_per_round`` (``-M/--clients-per-round`` on the command line).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from fedtheory.errors import AssumptionError
from fedtheory.participation import Full, ParticipationModel, make_participation
from fedtheory.validation import check_int, check_positive

__all__ = ["DIVERGENCE_GROWTH", "DIVERGENCE_WINDOW", "RunSpec", "run_defaults"]

#: A seed's error growing by this factor within :data:`DIVERGENCE_WINDOW` rounds is diverging.
DIVERGENCE_GROWTH = 10.0
DIVERGENCE_WINDOW = 50

#: Spellings of earlier versions, accepted with a DeprecationWarning.
_RENAMED = {"participation_m": "clients_per_round", "participation_p": "probabilities"}


@dataclass(frozen=True)
class RunSpec:
    """A run's settings (every one checked where :func:`~fedtheory.simulation.runner.plan_run`
    reads it; the defaults are this class's).

    Attributes
    ----------
    rounds : int
        Communication rounds R.
    seeds, seed : int
        Number of seeds S and the root seed (>= 0).
    seed_ids : sequence of int, optional
        Which seeds of the root to run (default ``0..seeds-1``).
    participation : ParticipationModel, str or None
        A model, a registered name (built with the next three settings), or None (full).
    clients_per_round : int, optional
        M (per cluster for ``cluster``); only with a model name.
    probabilities : array, optional
        p (weighted: draw weights; bernoulli: p_i); only with a model name.
    clusters : int, optional
        C equal contiguous clusters of ``cluster`` participation.
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
    seeds: int = 1
    seed: int = 0
    seed_ids: Sequence[int] | None = None
    participation: Any = None
    clients_per_round: int | None = None
    probabilities: Any = None
    clusters: int | None = None
    aggregation: str = "mean"
    draws: Any = None
    x0: Any = None
    backend: str | None = None
    dtype: Any = None
    divergence_bound: float = 1e10
    divergence_growth: float = DIVERGENCE_GROWTH
    divergence_window: int = DIVERGENCE_WINDOW
    average_from: int | None = None
    record_every: int = 1
    metrics: Sequence[str] | Mapping[str, Any] | None = None

    @classmethod
    def split(
        cls, settings: Mapping[str, Any], reads: Sequence[str] | None = None
    ) -> tuple[RunSpec, dict[str, Any]]:
        """``settings`` as (the run's spec, the rest: the algorithm's settings).

        ``clusters`` is both a participation setting (``cluster`` participation: C equal
        clusters) and an algorithm setting (CAFGA, HA-Fed): it stays with the algorithm's
        settings, and the spec takes it too under ``cluster`` participation (only the spec,
        when ``reads``, the algorithm's accepted settings, lacks it). Earlier spellings
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
        if run.get("participation") == "cluster" and settings.get("clusters") is not None:
            run["clusters"] = settings["clusters"]
            if reads is not None and "clusters" not in reads:
                del settings["clusters"]
        return cls(**run), settings

    def checked(self) -> RunSpec:
        """The spec with its numbers checked (step 1 of
        :func:`~fedtheory.simulation.runner.plan_run`).

        Raises
        ------
        AssumptionError
            A negative count, a seed below 0, a non-positive divergence bound, a growth factor
            not above 1 (``math.inf`` turns the rule off), a window, ``record_every`` or
            ``average_from`` that is not a whole number in range.
        """
        check_int("the number of seeds", self.seeds, minimum=1)
        growth = self.divergence_growth
        if growth != math.inf:
            growth = check_positive("the divergence growth factor", growth)
            if not growth > 1:
                raise AssumptionError(
                    f"the divergence growth factor must be > 1 (math.inf turns the rule off), "
                    f"got {growth}"
                )
        check_positive("the divergence bound", self.divergence_bound)
        average_from = self.average_from
        return replace(
            self,
            rounds=check_int("the number of rounds R", self.rounds, minimum=0),
            seed=check_int("the seed", self.seed, minimum=0),
            divergence_growth=growth,
            divergence_window=check_int("the divergence window", self.divergence_window, minimum=1),
            record_every=check_int("record_every", self.record_every, minimum=1),
            average_from=None
            if average_from is None
            else check_int("average_from", average_from, minimum=0),
        )

    def participation_model(self, n_clients: int) -> ParticipationModel:
        """The run's participation model on ``n_clients`` clients: the one builder from flat
        settings (simulate's keywords, the command line's flags, a sweep task's keys).

        Raises
        ------
        AssumptionError
            Clients per round, probabilities or clusters without a model name, or a model
            built for another number of clients; what the model refuses (it names what it
            reads).
        """
        model = self.participation
        flat = {
            "clients_per_round": self.clients_per_round,
            "probabilities": self.probabilities,
            "clusters": self.clusters,
        }
        if model is None or isinstance(model, ParticipationModel):
            given = [k for k, v in flat.items() if v is not None]
            if given:
                what = "no participation model" if model is None else "a built model"
                raise AssumptionError(
                    f"{', '.join(given)} given with {what}: they only go with a participation "
                    "model name, e.g. participation='uniform', clients_per_round=4"
                )
            if model is None:
                return Full(n_clients)
            if model.n_clients != n_clients:
                raise AssumptionError(
                    f"the participation model has {model.n_clients} clients but the problem "
                    f"has {n_clients}"
                )
            return model
        if not isinstance(model, str):
            raise AssumptionError(
                f"participation must be a model, a name or None, got {type(model).__name__}"
            )
        m, p, clusters = self.clients_per_round, self.probabilities, self.clusters
        if m is not None and m > n_clients:
            raise AssumptionError(
                f"clients_per_round = {m} exceeds the N = {n_clients} clients of the problem"
            )
        if model == "cluster":  # m per cluster of C equal contiguous clusters (000 Alg. 2)
            if m is None or clusters is None:
                raise AssumptionError(
                    "participation 'cluster' needs clusters C and clients_per_round m (per cluster)"
                )
            if n_clients % clusters:
                raise AssumptionError(
                    f"clusters = {clusters} must divide the N = {n_clients} clients into equal "
                    "clusters"
                )
            if m > n_clients // clusters:
                raise AssumptionError(
                    f"clients_per_round = {m} exceeds the cluster size n = {n_clients // clusters}"
                )
            return make_participation("cluster", n_clients, m, n_clusters=clusters)
        if model == "bernoulli" and p is None and m is None:
            raise AssumptionError(
                "participation 'bernoulli' needs probabilities or clients_per_round"
            )
        return make_participation(model, n_clients, m, p)


def run_defaults() -> dict[str, Any]:
    """Each run setting's default (the command line and the sweep read theirs here)."""
    return {f.name: f.default for f in fields(RunSpec) if f.name != "rounds"}
