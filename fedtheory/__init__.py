"""fedtheory: check the theory of federated optimization numerically.

The package is layered as the science is: graphs -> participation -> matrices -> problems ->
algorithms -> simulation -> analysis -> experiments -> verification, figures and the command line.

Citations: docstrings cite the papers whose claims fedtheory checks by the keys 000/001, 003 and
004 ("003 Algorithm 1") and the other sources by author and year ("Karimireddy et al. 2020");
docs/references.md resolves every key to a full reference, docs/algorithms.md states the
algorithms as implemented and docs/claims.md is the claim catalog.

The main entry points are here, imported on first use so that ``import fedtheory`` stays fast
(no SciPy, no simulation engine until one is touched): :func:`simulate`, :func:`spectral_gap`,
:func:`mixing_matrix`, :func:`make_participation`, the problem constructors
(:func:`make_problem`, :func:`random_quadratic`, ...) and :mod:`verify` (the claim catalog;
``fedtheory.verify.run("C1")``).

Examples
--------
>>> import fedtheory
>>> P = fedtheory.random_quadratic(8, 3, seed=0)
>>> fedtheory.simulate(P, "focus", "uniform", clients_per_round=3, lr=0.05, rounds=20, seeds=2)
... # doctest: +SKIP
SimulationResult: focus, Uniform participation, 2 seeds (root seed 0) x 20 rounds, ...
"""

import importlib

from fedtheory._version import __version__
from fedtheory.errors import AssumptionError, BackendUnavailableError, FedTheoryError

#: Top-level name -> the module that defines it (imported on first access, PEP 562; even NumPy
#: waits: the ``fedtheory`` command starts from here, and Ctrl-C during its imports is then one
#: line, :mod:`fedtheory.__main__`).
_LAZY = {
    "get_backend": "fedtheory.backend",
    "get_namespace": "fedtheory.backend",
    "to_numpy": "fedtheory.backend",
    "simulate": "fedtheory.simulation",
    "SimulationResult": "fedtheory.simulation",
    "spectral_gap": "fedtheory.graphs",
    "mixing_matrix": "fedtheory.graphs",
    "make_participation": "fedtheory.participation",
    "make_problem": "fedtheory.problems",
    "random_quadratic": "fedtheory.problems",
    "random_logistic": "fedtheory.problems",
    "random_least_squares": "fedtheory.problems",
    "figure4_problem": "fedtheory.problems",
    "leaf_synthetic_problem": "fedtheory.problems",
}
#: Subpackages reachable as attributes without an explicit import.
_LAZY_MODULES = ("verify",)


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # the next access is a plain lookup
        return value
    if name in _LAZY_MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *_LAZY_MODULES})


__all__ = [
    *_LAZY,
    *_LAZY_MODULES,
    "AssumptionError",
    "BackendUnavailableError",
    "FedTheoryError",
    "__version__",
]
