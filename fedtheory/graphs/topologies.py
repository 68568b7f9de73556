"""Topologies: the communication graphs of docs/algorithms.md, Section 1.

Every constructor returns the *adjacency* of an undirected simple graph as a symmetric
``scipy.sparse.csr_array`` of 0/1 float64 entries with an empty diagonal; a weight rule of
:mod:`fedtheory.graphs.weights` turns it into a mixing matrix. Two families are defined by their
mixing matrices directly and live here too: the static exponential graph and the one-peer
exponential graph of Ying et al. (2021), which are directed (non-symmetric) but doubly stochastic.

Randomized families (Erdos-Renyi, random geometric, random weights) take a ``seed`` and are
vectorized (no per-node Python loop), so a 10^6-node random geometric graph builds in seconds.

References
----------
.. [000] "On the Data Heterogeneity in Adaptive Federated Learning" (seed 000), Sec. 6.2.
.. [004] "Accelerating Adaptive Federated Optimization with Local Gossip Communications" (seed
   004), Sec. 6.
.. [Ying21] B. Ying, K. Yuan, Y. Chen, H. Hu, P. Pan, W. Yin, "Exponential Graph is Provably
   Efficient for Decentralized Deep Training", NeurIPS 2021.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from fedtheory.errors import AssumptionError, FedTheoryError
from fedtheory.io import check_input_file
from fedtheory.validation import (
    as_real_array,
    check_int,
    check_memory,
    check_positive,
    check_seed,
)

#: Peak bytes per non-zero while an adjacency and its weights are built (index arrays, COO and
#: CSR copies; measured about 60 on K_3000).
BYTES_PER_NONZERO = 64


def _check_n(n: Any, minimum: int = 2) -> int:
    return check_int("n (number of nodes)", n, minimum=minimum)


def adjacency_from_edges(i: Any, j: Any, n: int) -> sp.csr_array:
    """Symmetric 0/1 adjacency of the undirected graph with edges ``(i[k], j[k])``.

    Self-loops are dropped and repeated edges merged, so the result is a simple graph.
    """
    i = np.asarray(i, dtype=np.int64).ravel()
    j = np.asarray(j, dtype=np.int64).ravel()
    keep = i != j
    i, j = i[keep], j[keep]
    rows = np.concatenate([i, j])
    cols = np.concatenate([j, i])
    idx = np.int32 if n < 2**31 - 1 else np.int64
    A = sp.csr_array((np.ones(rows.size), (rows.astype(idx), cols.astype(idx))), shape=(n, n))
    A.sum_duplicates()
    A.data[:] = 1.0
    return A


def empty(n: int) -> sp.csr_array:
    """The graph with no edges: its uniform-degree matrix is W = I (no gossip)."""
    n = _check_n(n)
    return sp.csr_array((n, n), dtype=np.float64)


def ring(n: int) -> sp.csr_array:
    """Cycle C_n: node k talks to k - 1 and k + 1 (mod n). For n = 2 it is a single edge."""
    n = _check_n(n)
    k = np.arange(n)
    return adjacency_from_edges(k, (k + 1) % n, n)


def path(n: int) -> sp.csr_array:
    """Path P_n: node k talks to k - 1 and k + 1 without wrap-around."""
    n = _check_n(n)
    k = np.arange(n - 1)
    return adjacency_from_edges(k, k + 1, n)


def star(n: int) -> sp.csr_array:
    """Star: node 0 (the hub) talks to every other node; leaves talk only to the hub."""
    n = _check_n(n)
    k = np.arange(1, n)
    return adjacency_from_edges(np.zeros_like(k), k, n)


def complete(n: int) -> sp.csr_array:
    """Complete graph K_n ("fully connected" in 000 Sec. 6.2).

    Raises
    ------
    AssumptionError
        When its n^2 non-zeros would not fit in memory (the message says the estimate).
    """
    n = _check_n(n)
    check_memory(
        f"the complete graph on {n} nodes ({n * n:.3g} non-zeros)", BYTES_PER_NONZERO * n * n
    )
    i, j = np.triu_indices(n, k=1)
    return adjacency_from_edges(i, j, n)


def torus_shape(n: int, rows: int | None = None, cols: int | None = None) -> tuple[int, int]:
    """The (rows, cols) of a torus with n nodes: the most square factorization unless given."""
    n = _check_n(n)
    if rows is None and cols is None:
        rows = max(d for d in range(1, math.isqrt(n) + 1) if n % d == 0)
        cols = n // rows
    elif rows is None:
        rows = n // check_int("cols", cols, minimum=1)
    elif cols is None:
        cols = n // check_int("rows", rows, minimum=1)
    rows = check_int("rows", rows, minimum=1)
    cols = check_int("cols", cols, minimum=1)
    if rows * cols != n:
        raise AssumptionError(f"a torus needs rows * cols = n: {rows} * {cols} != {n}")
    return rows, cols


def _grid_edges(rows: int, cols: int, wrap: bool) -> tuple[np.ndarray, np.ndarray]:
    idx = np.arange(rows * cols).reshape(rows, cols)
    if wrap:
        right = np.roll(idx, -1, axis=1)
        down = np.roll(idx, -1, axis=0)
        return (
            np.concatenate([idx.ravel(), idx.ravel()]),
            np.concatenate([right.ravel(), down.ravel()]),
        )
    return (
        np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()]),
        np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()]),
    )


def torus(n: int, rows: int | None = None, cols: int | None = None) -> sp.csr_array:
    """2-D torus (grid with wrap-around) of ``rows x cols = n`` nodes, node ``r * cols + c``.

    With the default shape the factorization closest to a square is used (a prime n gives a
    1 x n torus, i.e. a ring).
    """
    rows, cols = torus_shape(n, rows, cols)
    i, j = _grid_edges(rows, cols, wrap=True)
    return adjacency_from_edges(i, j, rows * cols)


def grid(n: int, rows: int | None = None, cols: int | None = None) -> sp.csr_array:
    """2-D grid (no wrap-around) of ``rows x cols = n`` nodes."""
    rows, cols = torus_shape(n, rows, cols)
    i, j = _grid_edges(rows, cols, wrap=False)
    return adjacency_from_edges(i, j, rows * cols)


def hypercube(n: int) -> sp.csr_array:
    """Hypercube Q_d on n = 2^d nodes: i and j are neighbours when they differ in one bit."""
    n = _check_n(n)
    d = n.bit_length() - 1
    if 1 << d != n:
        raise AssumptionError(f"a hypercube needs n to be a power of 2, got n = {n}")
    k = np.arange(n)
    i = np.repeat(k, d)
    j = i ^ np.tile(1 << np.arange(d), n)
    return adjacency_from_edges(i, j, n)


def exponential_offsets(n: int) -> np.ndarray:
    """Offsets 2^0, 2^1, ..., 2^(tau-1) with tau = ceil(log2 n) of the exponential graph."""
    n = _check_n(n)
    tau = max(1, math.ceil(math.log2(n)))
    return (1 << np.arange(tau)) % n


def exponential(n: int) -> sp.csr_array:
    """Undirected support of the static exponential graph: i ~ i +- 2^j (mod n).

    For the directed graph and its weights of Ying et al. (2021) use
    :func:`static_exponential_matrix`.
    """
    n = _check_n(n)
    k = np.arange(n)
    offs = exponential_offsets(n)
    return adjacency_from_edges(np.repeat(k, offs.size), (k[:, None] + offs).ravel() % n, n)


def static_exponential_matrix(n: int) -> sp.csr_array:
    """Mixing matrix of the static exponential graph (Ying et al. 2021, Sec. 3).

    ``w_ij = 1 / (tau + 1)`` for ``j = i`` and ``j = i + 2^k (mod n)``, ``k = 0..tau-1``,
    ``tau = ceil(log2 n)``. It is a circulant, doubly stochastic and, for n > 2, not symmetric.
    """
    n = _check_n(n)
    offs = np.unique(np.concatenate([[0], exponential_offsets(n)]))
    k = np.arange(n)
    rows = np.repeat(k, offs.size)
    cols = (k[:, None] + offs).ravel() % n
    return sp.csr_array((np.full(rows.size, 1.0 / offs.size), (rows, cols)), shape=(n, n))


def one_peer_exponential_matrices(n: int) -> list[sp.csr_array]:
    """The time-varying one-peer exponential graph (Ying et al. 2021, Sec. 4).

    Round t uses ``W_t = (I + P^(2^(t mod tau))) / 2`` where ``P`` is the cyclic shift and
    ``tau = ceil(log2 n)``: every node averages with exactly one peer. The list holds one period
    ``W_0, ..., W_(tau-1)``; for n a power of 2 their product is exactly ``11^T / n``.
    """
    n = _check_n(n)
    k = np.arange(n)
    out = []
    for off in exponential_offsets(n):
        rows = np.concatenate([k, k])
        cols = np.concatenate([k, (k + off) % n])
        W = sp.csr_array((np.full(2 * n, 0.5), (rows, cols)), shape=(n, n))
        W.sum_duplicates()
        out.append(W)
    return out


def _rng(seed: Any) -> np.random.Generator:
    return np.random.default_rng(check_seed(seed))


def erdos_renyi(n: int, p: float | None = None, seed: Any = None) -> sp.csr_array:
    """Erdos-Renyi G(n, p): each of the n(n-1)/2 pairs is an edge independently with prob. p.

    Sampled without visiting every pair: the edge count is drawn as Binomial(n(n-1)/2, p) and
    that many distinct pairs are drawn uniformly, which is exactly G(n, p). The default
    ``p = 2 log(n) / n`` (capped at 1) is twice the connectivity threshold.
    """
    n = _check_n(n)
    if p is None:
        p = min(1.0, 2.0 * math.log(n) / n)
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise AssumptionError(f"the edge probability p must lie in [0, 1], got {p}")
    rng = _rng(seed)
    pairs = n * (n - 1) // 2
    m = int(rng.binomial(pairs, p))
    if m > pairs // 2:
        chosen = rng.permutation(pairs)[:m]
    else:
        chosen = np.empty(0, dtype=np.int64)
        while chosen.size < m:
            extra = rng.integers(0, pairs, size=int(1.1 * (m - chosen.size)) + 16)
            chosen = np.unique(np.concatenate([chosen, extra]))
        chosen = rng.permutation(chosen)[:m]
    # pair index -> (i, j), i < j, enumerating row by row of the strict upper triangle.
    chosen = np.sort(chosen).astype(np.int64)
    starts = np.arange(n, dtype=np.int64) * (2 * n - np.arange(n, dtype=np.int64) - 1) // 2
    i = np.searchsorted(starts, chosen, side="right") - 1
    j = chosen - starts[i] + i + 1
    return adjacency_from_edges(i, j, n)


def default_radius(n: int, dim: int = 2) -> float:
    """Radius ``sqrt(2 log n / (pi n))`` of a random geometric graph in [0, 1]^2 (twice the
    connectivity threshold in area: the expected degree is about 2 log n); for ``dim != 2`` the
    radius whose ball volume is ``2 log(n) / n``."""
    vol = 2.0 * math.log(max(n, 2)) / n
    unit_ball = math.pi ** (dim / 2) / math.gamma(dim / 2 + 1)
    return (vol / unit_ball) ** (1.0 / dim)


def random_geometric(
    n: int, radius: float | None = None, seed: Any = None, dim: int = 2
) -> sp.csr_array:
    """Random geometric graph: n uniform points in [0, 1]^dim, an edge when closer than radius.

    Pairs are found with a k-d tree (``scipy.spatial.cKDTree.query_pairs``), so 10^6 nodes take
    seconds. Default radius: :func:`default_radius`.
    """

    n = _check_n(n)
    dim = check_int("dim", dim, minimum=1)
    r = default_radius(n, dim) if radius is None else check_positive("radius", radius)
    pts = _rng(seed).random((n, dim))
    from scipy.spatial import cKDTree  # noqa: PLC0415  (0.2 s at start-up; only this graph)

    pairs = cKDTree(pts).query_pairs(r, output_type="ndarray")
    return adjacency_from_edges(pairs[:, 0], pairs[:, 1], n)


def from_networkx(G: Any) -> sp.csr_array:
    """Adjacency of any networkx graph, nodes numbered in ``G``'s node order (weights ignored).

    Directed graphs are symmetrized: gossip needs the undirected support.
    """

    n = G.number_of_nodes()
    _check_n(n)
    import networkx as nx  # noqa: PLC0415  (0.1 s at start-up; a user's graph brings it)

    A = nx.to_scipy_sparse_array(G, nodelist=list(G.nodes()), weight=None, format="coo")
    return adjacency_from_edges(A.row, A.col, n)


def from_edges(edges: Any, n: int | None = None) -> sp.csr_array:
    """Adjacency from an edge list: an (m, 2) array of non-negative integer node ids.

    ``n`` defaults to the largest id + 1. Self-loops are ignored, repeated edges merged.
    """
    e = as_real_array("the edge list", edges, dtype=None)
    if e.ndim != 2 or e.shape[1] != 2:
        raise AssumptionError(f"an edge list needs two integer columns, got shape {e.shape}")
    if e.size == 0:
        raise AssumptionError("the edge list is empty")
    ef = np.asarray(e, dtype=float)
    if not np.all(np.isfinite(ef)) or np.any(ef != np.round(ef)):
        bad = int(np.argwhere(~np.isfinite(ef) | (ef != np.round(ef)))[0, 0])
        raise AssumptionError(f"edge list row {bad} is not a pair of integers: {e[bad].tolist()}")
    e = ef.astype(np.int64)
    if e.min() < 0:
        bad = int(np.argwhere(e < 0)[0, 0])
        raise AssumptionError(f"edge list row {bad} has a negative node id: {e[bad].tolist()}")
    n = int(e.max()) + 1 if n is None else _check_n(n)
    if e.max() >= n:
        raise AssumptionError(f"edge list names node {int(e.max())} but n = {n}")
    n = _check_n(n)
    check_memory(f"a graph on {n} nodes", 8.0 * (n + 1) + BYTES_PER_NONZERO * 2 * e.shape[0])
    return adjacency_from_edges(e[:, 0], e[:, 1], n)


def load_edges(path: str | Path) -> np.ndarray:
    """Read an edge list file: two integer columns (whitespace or comma separated, '#' comments).

    Raises
    ------
    FileNotFoundError
        No such file (``filename`` is ``path`` as given).
    FedTheoryError
        A folder, binary content, a line without two columns, a non-number.
    """
    try:
        text = check_input_file(path).read_text()
    except UnicodeDecodeError:
        raise FedTheoryError(f"{path}: not an edge list (binary content)") from None
    rows = [ln.split("#", 1)[0].replace(",", " ").split() for ln in text.splitlines()]
    rows = [r for r in rows if r]
    for k, r in enumerate(rows):
        if len(r) != 2:
            raise FedTheoryError(f"{path}: line {k + 1} has {len(r)} columns, expected 2")
    try:
        return np.array([[float(a), float(b)] for a, b in rows]).reshape(-1, 2)
    except ValueError as exc:
        raise FedTheoryError(f"{path}: not a list of integer pairs ({exc})") from None
