"""fedtheory: check the theory of federated optimization numerically.

The package is layered as the science is: graphs -> participation -> matrices -> problems ->
algorithms -> simulation -> analysis -> experiments -> verification, figures and the command line.

Citations: docstrings cite the papers whose claims fedtheory checks by the keys 000/001, 003 and
004 ("003 Algorithm 1") and the other sources by author and year ("Karimireddy et al. 2020");
docs/references.md resolves every key to a full reference, docs/algorithms.md states the
algorithms as implemented and docs/claims.md is the claim catalog.
"""

from fedtheory._version import __version__
from fedtheory.backend import get_backend, get_namespace, to_numpy
from fedtheory.errors import AssumptionError, BackendUnavailableError, FedTheoryError

__all__ = [
    "AssumptionError",
    "BackendUnavailableError",
    "FedTheoryError",
    "__version__",
    "get_backend",
    "get_namespace",
    "to_numpy",
]
