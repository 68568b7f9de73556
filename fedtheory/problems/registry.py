"""The problem registry: built-in problem names -> builders, declared next to each problem.

A problem module registers a builder ``build(seed, dtype) -> Problem`` with a one-line
description::

    @register_problem("quadratic", "random heterogeneous quadratics: N=16, d=20, condition 10")
    def _quadratic(seed, dtype):
        return random_quadratic(16, 20, seed=seed, dtype=dtype)

:func:`fedtheory.problems.make_problem` and every command (``simulate --problem``, ``rate``,
``bound``, sweeps) ask the registry, so a name means the same problem everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from fedtheory.errors import FedTheoryError
from fedtheory.validation import lookup

__all__ = ["BUILTIN_PROBLEMS", "ProblemInfo", "problem_info", "register_problem"]


@dataclass(frozen=True)
class ProblemInfo:
    """A built-in problem: its name, ``build(seed, dtype)`` and a one-line description."""

    name: str
    build: Callable[[int, Any], Any]
    description: str


_PROBLEMS: dict[str, ProblemInfo] = {}
_DESCRIPTIONS: dict[str, str] = {}

#: Built-in problem names and what they are, in registration order (a read-only view of the
#: registry; a user's data goes through ``make_problem(path=...)``).
BUILTIN_PROBLEMS = MappingProxyType(_DESCRIPTIONS)


def register_problem(name: str, description: str) -> Callable:
    """Decorator: register ``build(seed, dtype) -> Problem`` as the built-in problem ``name``."""

    def deco(build: Callable[[int, Any], Any]) -> Callable[[int, Any], Any]:
        if name in _PROBLEMS:
            raise ValueError(f"problem {name!r} is registered twice")
        _PROBLEMS[name] = ProblemInfo(name, build, description)
        _DESCRIPTIONS[name] = description
        return build

    return deco


def problem_info(name: Any) -> ProblemInfo:
    """The :class:`ProblemInfo` of ``name`` (case-insensitive).

    Raises
    ------
    FedTheoryError
        For an unknown name (the message lists the built-in ones).
    """
    return lookup(_PROBLEMS, name, "problem", error=FedTheoryError, hint=" or give an .npz file")
