"""Stated bounds beside exact rates: type the bound you read in a paper, check it, break it.

A bound is data (:class:`BoundSpec`, a TOML file: :func:`load_spec`): an algorithm and its
setting, the quantity bounded (the exact mean-square or mean rate, the stationary floor, or the
rounds to a target), the bound as a sympy expression of the constants of :data:`CONSTANTS`
(computed from each instance by :func:`instance_constants`), the theorem's condition and,
for an O(.) shape, a free constant. :func:`check` evaluates it on one instance (stated, exact,
measured by simulation, rounds to epsilon) and searches an instance class for the instance that
breaks it, writing the counterexample as a problem file that ``fedtheory rate --problem-file``
reproduces; with a free constant it reports the implied constant. No tool does this for random
participation: PEPit/PESTO give worst cases of deterministic first-order methods only.

The papers' own bound files are under ``fedtheory/bounds/papers/`` (:func:`paper_bounds`);
docs/bounds.md has the format, the constants table and the tolerance; docs/stated-bounds.md
what each paper states.

Modules
-------
- :mod:`~fedtheory.bounds.spec`: the format, :class:`BoundSpec`, :func:`load_spec`.
- :mod:`~fedtheory.bounds.constants`: :data:`CONSTANTS`, :func:`instance_constants`.
- :mod:`~fedtheory.bounds.instances`: named instances, class draws, problem files.
- :mod:`~fedtheory.bounds.evaluate`: one instance: :func:`evaluate`, :class:`Evaluation`.
- :mod:`~fedtheory.bounds.search`: the worst-case search over the quadratic class.
- :mod:`~fedtheory.bounds.check`: :func:`check`, :class:`BoundCheck` (the quadratic class),
  implied constants.
- :mod:`~fedtheory.bounds.general`: :func:`check_general`, the class of every smooth strongly
  convex client by performance estimation (:mod:`fedtheory.analysis.pep`).
- :mod:`~fedtheory.bounds.classes`: :func:`check_classes`, one class or both side by side.
"""

from pathlib import Path

from fedtheory.bounds.check import BoundCheck, check, implied_over, measure
from fedtheory.bounds.classes import CLASS_CHOICES, ClassCheck, check_classes
from fedtheory.bounds.constants import CONSTANTS, instance_constants
from fedtheory.bounds.evaluate import Evaluation, evaluate, exact_value, ratio
from fedtheory.bounds.general import GENERAL, GeneralCheck, check_general
from fedtheory.bounds.instances import Instance, named_instance
from fedtheory.bounds.search import DEFAULT_SEARCH
from fedtheory.bounds.spec import (
    AFTER_ROUNDS,
    FUNCTION_CLASSES,
    QUANTITIES,
    RATE_QUANTITIES,
    TOLERANCE,
    BoundSpec,
    InstanceClass,
    load_spec,
)

#: The folder of the shipped bound files of the three papers.
PAPERS = Path(__file__).resolve().parent / "papers"


def paper_bounds() -> dict[str, Path]:
    """The shipped bound files, by stem (e.g. ``"focus-thm1-rate"``)."""
    return {p.stem: p for p in sorted(PAPERS.glob("*.toml"))}


__all__ = [
    "AFTER_ROUNDS",
    "CLASS_CHOICES",
    "CONSTANTS",
    "DEFAULT_SEARCH",
    "FUNCTION_CLASSES",
    "GENERAL",
    "PAPERS",
    "QUANTITIES",
    "RATE_QUANTITIES",
    "TOLERANCE",
    "BoundCheck",
    "BoundSpec",
    "ClassCheck",
    "Evaluation",
    "GeneralCheck",
    "Instance",
    "InstanceClass",
    "check",
    "check_classes",
    "check_general",
    "evaluate",
    "exact_value",
    "implied_over",
    "instance_constants",
    "load_spec",
    "measure",
    "named_instance",
    "paper_bounds",
    "ratio",
]
