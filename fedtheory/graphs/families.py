"""Named topology families: one entry point from a name and n to a mixing matrix.

:func:`mixing_matrix` is what the command line, the settings table and the simulators use:
``mixing_matrix("ring", 50)`` is the ring of 000 Sec. 6.2 with weights 1/3. Each family has a
default weight rule (uniform-degree on regular graphs, Metropolis-Hastings otherwise, the rule of
Ying et al. for the static exponential graph, random symmetric weights for "complete-random").
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from fedtheory.errors import AssumptionError, UnknownOptionError
from fedtheory.graphs import topologies as T
from fedtheory.graphs.weights import apply_rule, lazy, random_weights
from fedtheory.validation import check_int, check_memory, check_seed, did_you_mean

DENSE_OUTPUT_MAX = 2048
"""``format="auto"`` returns a dense array up to this n and a CSR array above it."""


@dataclass(frozen=True)
class Family:
    """A topology family: its adjacency constructor, default weights and whether it is random."""

    name: str
    adjacency: Callable[..., sp.csr_array]
    default_weights: str
    random: bool
    description: str


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("ring", T.ring, "uniform", False, "cycle; weights 1/3 (000 Sec. 6.2)"),
        Family("path", T.path, "metropolis", False, "path without wrap-around"),
        Family("star", T.star, "metropolis", False, "hub node 0 and n-1 leaves"),
        Family("complete", T.complete, "uniform", False, "balanced fully connected, W = 11^T/n"),
        Family(
            "complete-random",
            T.complete,
            "random",
            True,
            "unbalanced fully connected: random symmetric weights (000 Sec. 6.2, fn. 6)",
        ),
        Family("torus", T.torus, "uniform", False, "2-D torus (params rows, cols)"),
        Family("grid", T.grid, "metropolis", False, "2-D grid without wrap-around"),
        Family("hypercube", T.hypercube, "uniform", False, "hypercube, n = 2^d"),
        Family(
            "exponential",
            T.exponential,
            "exponential",
            False,
            "static exponential graph (Ying et al. 2021), directed, weights 1/(tau+1)",
        ),
        Family(
            "erdos-renyi",
            T.erdos_renyi,
            "metropolis",
            True,
            "Erdos-Renyi G(n, p) (param p, default 2 log(n)/n)",
        ),
        Family(
            "identity",
            T.empty,
            "uniform",
            False,
            "no edges: W = I, no gossip (disconnected: outside Assumption 4.5 for n > 1)",
        ),
        Family(
            "random-geometric",
            T.random_geometric,
            "metropolis",
            True,
            "random geometric graph in [0,1]^2 (param radius)",
        ),
    )
}
ALIASES = {
    "random": "erdos-renyi",  # the "random" graph of 000 Sec. 6.2 (the paper does not name it)
    "balanced": "complete",  # "balanced fully connected", 000 Sec. 6.2
    "none": "identity",
    "er": "erdos-renyi",
    "erdos_renyi": "erdos-renyi",
    "rgg": "random-geometric",
    "random_geometric": "random-geometric",
    "geometric": "random-geometric",
    "cycle": "ring",
    "full": "complete",
    "fully-connected": "complete",
    "unbalanced": "complete-random",
    "complete_random": "complete-random",
    "static-exponential": "exponential",
}
TIME_VARYING = ("one-peer-exponential",)


def family(name: str) -> Family:
    """The :class:`Family` called ``name`` (aliases such as ``er`` and ``rgg`` accepted)."""
    key = str(name).strip().lower().replace("_", "-")
    key = ALIASES.get(key, key)
    if key not in FAMILIES:
        choices = ", ".join([*FAMILIES, *TIME_VARYING])
        near = did_you_mean(key, [*FAMILIES, *TIME_VARYING, *ALIASES])
        raise AssumptionError(f"unknown topology {name!r}{near}: choose one of {choices}")
    return FAMILIES[key]


def family_parameters(topology: str) -> tuple[str, ...]:
    """The keyword parameters the adjacency constructor of ``topology`` reads (besides n and
    seed), e.g. ``("rows", "cols")`` for the torus."""
    fam = family(topology)
    if fam.default_weights == "exponential":
        return ()
    sig = inspect.signature(fam.adjacency).parameters
    return tuple(k for k in sig if k not in ("n", "seed"))


def estimated_nonzeros(topology: str, n: int, **params: Any) -> float:
    """About how many non-zeros the mixing matrix of ``topology`` on n nodes has (diagonal
    included; the expectation for random families), to refuse sizes that cannot fit in memory
    before building anything."""
    name = family(topology).name
    log2n = math.ceil(math.log2(max(n, 2)))
    if name in ("complete", "complete-random"):
        return float(n) * n
    if name in ("ring", "path", "star"):
        return 3.0 * n
    if name in ("torus", "grid"):
        return 5.0 * n
    if name in ("hypercube", "exponential"):
        return (2.0 * log2n + 1.0) * n
    if name == "identity":
        return float(n)
    if name == "erdos-renyi":
        p = params.get("p")
        p = min(1.0, 2.0 * math.log(n) / n) if p is None else float(p)
        return n + p * n * (n - 1.0) if math.isfinite(p) else float(n)
    if name == "random-geometric":
        dim = params.get("dim") or 2
        r = params.get("radius")
        r = T.default_radius(n, dim) if r is None else float(r)
        if not math.isfinite(r) or r >= math.sqrt(dim):  # the ball covers the unit cube
            return float(n) * n
        ball = math.pi ** (dim / 2) / math.gamma(dim / 2 + 1) * r**dim
        return n + min(ball, 1.0) * n * (n - 1.0)
    return float(n) * n  # unknown: assume dense


def check_size(topology: str, n: int, *, dense: bool = False, **params: Any) -> None:
    """Refuse a mixing matrix whose construction would not fit in memory, with the estimate
    (about :data:`~fedtheory.graphs.topologies.BYTES_PER_NONZERO` bytes per non-zero while it is
    built, plus ``8 n^2`` for a dense copy)."""
    nnz = estimated_nonzeros(topology, n, **params)
    need = T.BYTES_PER_NONZERO * nnz + (8.0 * n * n if dense else 0.0)
    what = f"the {'dense ' if dense else ''}{family(topology).name} mixing matrix on {n} nodes"
    check_memory(f"{what} ({nnz:.3g} non-zeros)", need)


def _output(W: sp.csr_array, fmt: str) -> Any:
    if fmt not in ("auto", "dense", "sparse"):
        raise AssumptionError(f"format must be auto, dense or sparse, got {fmt!r}")
    if fmt == "dense" or (fmt == "auto" and W.shape[0] <= DENSE_OUTPUT_MAX):
        return W.toarray()
    return sp.csr_array(W)


def weights_for(
    A: Any,
    rule: str,
    *,
    alpha: float | None = None,
    seed: Any = None,
    make_lazy: bool = False,
    fmt: str = "auto",
) -> Any:
    """Apply a weight rule (and optionally laziness) to an adjacency matrix."""
    W = apply_rule(A, rule, alpha=alpha, seed=seed)
    return _output(lazy(W) if make_lazy else W, fmt)


def mixing_matrix(
    topology: str,
    n: int,
    *,
    weights: str | None = None,
    lazy_weights: bool = False,
    seed: Any = None,
    alpha: float | None = None,
    format: str = "auto",
    **params: Any,
) -> Any:
    """The mixing matrix W of a named topology on n nodes.

    Parameters
    ----------
    topology : str
        One of :data:`FAMILIES` (``ring``, ``path``, ``star``, ``complete``,
        ``complete-random``, ``torus``, ``grid``, ``hypercube``, ``exponential``,
        ``erdos-renyi``, ``random-geometric``).
    n : int
        Number of nodes, >= 2.
    weights : str, optional
        ``uniform``, ``metropolis``, ``max-degree``, ``laplacian`` or ``random``; default: the
        family's own (see :class:`Family`).
    lazy_weights : bool
        Return ``(W + I) / 2``.
    seed : int or Generator, optional
        For random families and random weights.
    alpha : float, optional
        Step of the Laplacian rule ``I - alpha L``.
    format : {"auto", "dense", "sparse"}
        Dense ``ndarray`` up to :data:`DENSE_OUTPUT_MAX` nodes with ``auto``, CSR above.
    **params
        Family parameters: ``rows``/``cols`` (torus, grid), ``p`` (erdos-renyi), ``radius``
        and ``dim`` (random-geometric).

    Raises
    ------
    AssumptionError
        Unknown topology or weight rule, n < 2, a negative seed, a rule that does not fit the
        graph (e.g. uniform-degree weights on an irregular graph), or a size whose memory
        estimate exceeds what this machine has (the message says the estimate; for the spectral
        gap of a large named topology see :func:`~fedtheory.graphs.spectral.topology_gap`,
        which answers from a closed form where one exists).
    """
    fam = family(topology)
    n = check_int("n (number of nodes)", n, minimum=2)
    seed = check_seed(seed)
    if format not in ("auto", "dense", "sparse"):
        raise AssumptionError(f"format must be auto, dense or sparse, got {format!r}")
    dense = format == "dense" or (format == "auto" and n <= DENSE_OUTPUT_MAX)
    check_size(fam.name, n, dense=dense, **params)
    rule = weights or fam.default_weights
    if rule == "exponential":
        if fam.name != "exponential":
            raise AssumptionError("the 'exponential' weight rule only fits the exponential graph")
        W = T.static_exponential_matrix(n)
        return _output(lazy(W) if lazy_weights else W, format)
    kw = dict(params)
    reads = family_parameters(fam.name)
    stray = sorted(k for k, v in kw.items() if v is not None and k not in reads)
    if stray:
        raise UnknownOptionError(
            f"topology {fam.name!r} does not read {', '.join(map(repr, stray))} "
            f"(it reads {', '.join(reads) or 'no parameters besides n'})"
        )
    if fam.name in ("erdos-renyi", "random-geometric"):
        kw["seed"] = seed
    A = fam.adjacency(n, **kw)
    return weights_for(A, rule, alpha=alpha, seed=seed, make_lazy=lazy_weights, fmt=format)


def one_peer_exponential(n: int) -> list[Any]:
    """One period of the one-peer exponential graph (time-varying; Ying et al. 2021, Sec. 4)."""
    n = check_int("n (number of nodes)", n, minimum=2)
    tau = max(1, math.ceil(math.log2(n)))
    check_memory(
        f"one period of the one-peer exponential graph on {n} nodes",
        T.BYTES_PER_NONZERO * 2.0 * n * tau,
    )
    return [_output(W, "auto") for W in T.one_peer_exponential_matrices(n)]


def clustered(
    C: int, n: int, topology: str = "ring", *, seed: Any = None, **kw: Any
) -> tuple[Any, np.ndarray]:
    """Block-diagonal W of C disjoint clusters of n nodes (000 Sec. 5 / App. D, 004 Sec. 4).

    Each cluster gets ``mixing_matrix(topology, n, ...)``; random families draw each cluster
    with its own child seed. Returns ``(W, labels)`` with ``labels[i]`` the cluster of node i.
    """
    C = check_int("C (number of clusters)", C, minimum=1)
    n = check_int("n (nodes per cluster)", n, minimum=2)
    nnz = C * estimated_nonzeros(topology, n, **kw)
    check_memory(f"{C} clusters of {n} nodes ({nnz:.3g} non-zeros)", T.BYTES_PER_NONZERO * nnz)
    seeds = np.random.SeedSequence(check_seed(seed)).spawn(C)
    blocks = [
        sp.csr_array(
            mixing_matrix(topology, n, seed=np.random.default_rng(s), format="sparse", **kw)
        )
        for s in seeds
    ]
    W = sp.block_diag(blocks, format="csr")
    return _output(sp.csr_array(W), "auto"), np.repeat(np.arange(C), n)


__all__ = [
    "FAMILIES",
    "Family",
    "clustered",
    "family",
    "mixing_matrix",
    "one_peer_exponential",
    "random_weights",
    "weights_for",
]
