"""Graphs, mixing matrices and the spectral gap (docs/algorithms.md, Section 1; claims G1-G5).

Where things are:

- :mod:`~fedtheory.graphs.topologies`: adjacency constructors (ring, path, star, complete, torus,
  grid, hypercube, exponential, Erdos-Renyi, random geometric, networkx graphs, edge lists) and
  the static / one-peer exponential matrices of Ying et al. (2021).
- :mod:`~fedtheory.graphs.weights`: weight rules (uniform-degree, Metropolis-Hastings,
  max-degree, Laplacian, lazy, random symmetric weights).
- :mod:`~fedtheory.graphs.families`: :func:`mixing_matrix` by name, :func:`clustered`.
- :mod:`~fedtheory.graphs.validate`: stochasticity (of any matrix or stack: mixing matrices,
  and the participation matrices A_S, V_S, C_S of :mod:`fedtheory.matrices`) and connectivity
  checks naming the first violation.
- :mod:`~fedtheory.graphs.spectral`: :func:`spectral_gap` (rho = ||W - J||_2, |lambda_2|, and an
  accurate 1 - rho), per-cluster :func:`cluster_gaps`, :func:`sequence_gap`.
- :mod:`~fedtheory.graphs.closedforms`: sympy-derived closed forms (ring, complete, torus,
  hypercube, exponential).
- :mod:`~fedtheory.graphs.neighbors`: effective number of neighbours (Vogels et al. 2022).
- :mod:`~fedtheory.graphs.conditions`: AFGA / CAFGA / HA-Fed spectral-gap conditions.
- :mod:`~fedtheory.graphs.plot`: the graph with its weights, rho against n.
"""

from fedtheory.graphs.families import (
    FAMILIES,
    clustered,
    family,
    mixing_matrix,
    one_peer_exponential,
    weights_for,
)
from fedtheory.graphs.neighbors import effective_number_of_neighbors
from fedtheory.graphs.spectral import (
    ClusterGaps,
    SequenceGap,
    SpectralGap,
    cluster_gaps,
    rho,
    sequence_gap,
    spectral_gap,
)
from fedtheory.graphs.topologies import from_edges, from_networkx
from fedtheory.graphs.validate import (
    StochasticityReport,
    check_column_stochastic,
    check_mixing_matrix,
    check_row_stochastic,
    check_stochastic,
    is_connected,
    stochasticity_report,
)
from fedtheory.graphs.weights import lazy, metropolis_hastings, uniform_degree

__all__ = [
    "FAMILIES",
    "ClusterGaps",
    "SequenceGap",
    "SpectralGap",
    "StochasticityReport",
    "check_column_stochastic",
    "check_mixing_matrix",
    "check_row_stochastic",
    "check_stochastic",
    "cluster_gaps",
    "clustered",
    "effective_number_of_neighbors",
    "family",
    "from_edges",
    "from_networkx",
    "is_connected",
    "lazy",
    "metropolis_hastings",
    "mixing_matrix",
    "one_peer_exponential",
    "rho",
    "sequence_gap",
    "spectral_gap",
    "stochasticity_report",
    "uniform_degree",
    "weights_for",
]
