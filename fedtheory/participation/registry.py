"""The participation-model registry: names -> builders, with what each model reads.

A model module registers a builder next to its class, as algorithms do::

    @register_model("uniform", reads=("m",), description="M of N uniformly without replacement")
    def _uniform(n, m, p, **kw):
        return Uniform(need_clients("uniform", n), need_per_round("uniform", m))

:func:`fedtheory.participation.make_participation` and every command ask the registry
(:func:`model_info`, :func:`model_names`) which models exist, what each reads and whether the
exact oracles know its law; nobody keeps tables of model names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fedtheory.errors import AssumptionError
from fedtheory.participation.base import check_clients
from fedtheory.validation import check_int, lookup, with_facts

__all__ = [
    "ModelInfo",
    "model_info",
    "model_names",
    "need_clients",
    "need_per_round",
    "register_model",
]

#: What the keywords a model may read stand for, in refusals.
WHAT = {"m": "clients per round M", "p": "probabilities p"}


@dataclass(frozen=True)
class ModelInfo:
    """What the registry knows about a participation model.

    Attributes
    ----------
    name : str
    build : callable
        ``build(n, m, p, **kw) -> ParticipationModel`` (``p`` already loaded and checked finite).
    reads : tuple of str
        What it reads besides the number of clients N: ``m`` (clients per round), ``p``
        (probabilities) and its own keywords.
    description : str
        One line for the commands' help.
    exact_law : bool
        Its rounds are i.i.d. draws with a finite support or a Markov chain: the exact oracles
        of :mod:`fedtheory.analysis.exact` know its law (``fedtheory rate`` takes it).
    settings_only : bool
        It can be built from N, M, p and a number of clusters alone (``fedtheory simulate`` and
        sweeps take it); false for models that need a pattern or a trace file.
    problem_weights : bool
        Without probabilities it takes a problem's own draw weights, where the problem carries
        them (``participation_p``: the Figure 4 problem of 003).
    """

    name: str
    build: Callable[..., Any]
    reads: tuple[str, ...]
    description: str
    exact_law: bool = False
    settings_only: bool = True
    problem_weights: bool = False


_MODELS: dict[str, ModelInfo] = {}


def register_model(
    name: str,
    *,
    reads: tuple[str, ...],
    description: str,
    exact_law: bool = False,
    settings_only: bool = True,
    problem_weights: bool = False,
) -> Callable:
    """Decorator: register ``build(n, m, p, **kw)`` as the participation model ``name``."""

    def deco(build: Callable[..., Any]) -> Callable[..., Any]:
        if name in _MODELS:
            raise ValueError(f"participation model {name!r} is registered twice")
        _MODELS[name] = ModelInfo(
            name, build, tuple(reads), description, exact_law, settings_only, problem_weights
        )
        return build

    return deco


def model_names(*, exact_law: bool | None = None, settings_only: bool | None = None) -> list[str]:
    """Registered model names, optionally only those with the given facts."""
    return with_facts(_MODELS, exact_law=exact_law, settings_only=settings_only)


def model_info(name: Any) -> ModelInfo:
    """The :class:`ModelInfo` of ``name`` (case-insensitive).

    Raises
    ------
    AssumptionError
        For an unknown name (the message lists the known ones and the near miss).
    """
    return lookup(_MODELS, name, "participation model")


def need_clients(name: str, n: Any) -> int:
    """The number of clients N a model ``name`` needs (refused when missing)."""
    if n is None:
        raise AssumptionError(f"participation {name!r} needs the number of clients N")
    return check_clients(n)


def need_per_round(name: str, m: Any) -> int:
    """The clients per round M a model ``name`` needs (refused when missing)."""
    if m is None:
        raise AssumptionError(
            f"participation {name!r} needs clients_per_round M (--clients-per-round on the "
            "command line)"
        )
    return check_int("clients per round M", m)
