"""Gossip between clients: the shared plumbing of AFGA, CAFGA, HA-Fed and DSGD.

The graphs and their weights come from :mod:`fedtheory.graphs` (topologies, weight rules,
spectra); this module turns an algorithm's ``topology`` / ``clusters`` settings into the steps
the local-steps engine applies after every local step, and holds the one adaptive-gossip round
those algorithms share:

- :func:`gossip`: ``X <- W X`` over the client axis (one W, or one per seed);
- :func:`gossip_matrix`: the dense, connected doubly stochastic W of a topology on n clients
  (000 Assumption 4.5), and :func:`global_mixing` for an algorithm's configuration;
- :func:`cluster_mixing`, :func:`block_gossip`, :func:`cluster_weights`: C clusters of n clients
  with one W_k each (000 Algorithm 2 line 15, 004 Algorithm 1 line 9) and the per-cluster
  average of Delta (000 Algorithm 2 line 20);
- :func:`selected_ring`: the ring formed on S_r alone (000 Section 5, footnote 4);
- :func:`build_gossip_adaptive`: broadcast x_r, K engine steps with gossip, Delta over the
  collecting set, adaptive server step (000 Algorithms 1-2, 004 Algorithm 1);
- :func:`global_rho`, :func:`cluster_rho`, :func:`selected_rho`: the spectral gap an algorithm
  runs with, rho = ||W - 11^T/n||_2 (000 Assumption 4.5), rho_max = max_k rho_k for clusters
  (000 Theorem D.3, 004 Corollary 5.11); the registry stores one of them per gossip algorithm.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np

from fedtheory.algorithms.base import (
    Algorithm,
    AlgorithmConfig,
    aggregate_deltas,
    broadcast_clients,
    client_metrics,
    participants,
    pull,
)
from fedtheory.algorithms.local_steps import local_steps
from fedtheory.algorithms.registry import Option
from fedtheory.algorithms.server_opt import SERVER_OPTIMIZERS, ServerOptState, server_optimizer
from fedtheory.backend import get_namespace, to_numpy
from fedtheory.errors import AssumptionError
from fedtheory.validation import check_int

Array = Any

#: The server optimizer of the adaptive-gossip algorithms (000 Algorithm 1 lines 19-22).
SERVER = Option(
    "server", "amsgrad", str, "adaptive server optimizer", choices=tuple(SERVER_OPTIMIZERS)
)
#: Seed of random gossip graphs (the same graph for every simulation seed).
GRAPH_SEED = Option("graph_seed", 0, int, "seed of random gossip graphs", minimum=0)
#: Re-sample who computes at every local step (000 Algorithm 1 line 6).
RESAMPLE = Option("resample", True, bool, "re-sample S_{r,t} at every local step (000 Alg. 1)")
#: An explicit gossip matrix instead of ``topology``.
MIXING = Option(
    "mixing",
    None,
    np.ndarray,
    "explicit (N, N) doubly stochastic W instead of topology",
    nullable=True,
)


def _graphs() -> ModuleType:
    """:mod:`fedtheory.graphs`, imported when a gossip algorithm is built: it brings SciPy
    (sparse matrices, eigensolvers), 0.3-0.5 s of a start-up that ``fedtheory simulate`` of a
    server algorithm never needs."""
    import fedtheory.graphs  # noqa: PLC0415  (0.3-0.5 s of SciPy at start-up; gossip only)

    return fedtheory.graphs


def gossip(W: Array) -> Callable[[Array, int], Array]:
    """The mixing step ``X <- W X`` over the client axis of ``X`` of shape ``(S, N, d)``.

    ``W`` is ``(N, N)`` (one graph for every seed) or ``(S, N, N)`` (one per seed, e.g. a
    time-varying graph drawn per seed).
    """

    def mix(X: Array, t: int) -> Array:
        xp = get_namespace(X)
        return xp.matmul(xp.asarray(W, dtype=X.dtype), X)

    return mix


def gossip_matrix(topology: str, n: int, *, seed: int = 0) -> np.ndarray:
    """The dense doubly stochastic gossip matrix of ``topology`` on ``n`` clients.

    :func:`fedtheory.graphs.mixing_matrix` with the family's default weights (uniform degree
    1/(deg + 1) on regular graphs: the ring gets 1/3 as in 000 Sec. 6.2 and 004 Sec. 6, the
    complete graph 11^T/n; Metropolis-Hastings on Erdos-Renyi and random geometric graphs;
    random symmetric weights for ``complete-random``), required to be connected (000
    Assumption 4.5) unless it is ``identity`` (no gossip). A single client gets W = [[1]].

    Raises
    ------
    AssumptionError
        Unknown topology, a topology that does not exist on n nodes, or a random graph that came
        out disconnected.
    """
    n = check_int("the number of clients n", n, minimum=1)
    name = _graphs().family(topology).name
    if n == 1:
        return np.eye(1)
    W = _graphs().mixing_matrix(name, n, seed=seed, format="dense")
    return np.asarray(_graphs().check_mixing_matrix(W, require_connected=name != "identity"))


def global_mixing(config: AlgorithmConfig, n: int) -> np.ndarray:
    """The (N, N) gossip matrix of an algorithm: its ``mixing`` option if given, else its
    ``topology`` (default ring, the papers' default) drawn with option ``graph_seed``."""
    W = config.option("mixing")
    if W is not None:
        W = np.asarray(_graphs().check_mixing_matrix(W), dtype=np.float64)
        if W.shape != (n, n):
            raise AssumptionError(
                f"the mixing matrix must be ({n}, {n}) for N = {n}, got {W.shape}"
            )
        return W
    return gossip_matrix(config.topology or "ring", n, seed=config.option("graph_seed"))


def cluster_sizes(n_clients: int, n_clusters: int | None) -> tuple[int, int]:
    """(C, n) with N = C n; C defaults to 1.

    Raises
    ------
    AssumptionError
        When N clients do not split into C equal clusters (000 Sec. 5: N = C n).
    """
    N = check_int("the number of clients N", n_clients, minimum=1)
    C = 1 if n_clusters is None else check_int("the number of clusters C", n_clusters, minimum=1)
    if N % C:
        raise AssumptionError(
            f"N = {N} clients do not split into C = {C} equal clusters (000 Sec. 5 needs N = C n)"
        )
    return C, N // C


def cluster_mixing(
    topology: str, n_clusters: int, cluster_size: int, *, seed: int = 0
) -> np.ndarray:
    """Per-cluster mixing matrices W_k stacked as ``(C, n, n)`` (000 Algorithm 2, 004 Alg. 1).

    The blocks of :func:`fedtheory.graphs.clustered` (cluster k is the contiguous block of
    clients ``k n .. (k + 1) n - 1``; random families draw each cluster from its own child of
    ``seed``).
    """
    C = check_int("the number of clusters C", n_clusters, minimum=1)
    n = check_int("the cluster size n", cluster_size, minimum=1)
    name = _graphs().family(topology).name
    if name == "identity" or n == 1:
        return np.broadcast_to(np.eye(n), (C, n, n)).copy()
    W, _ = _graphs().clustered(C, n, name, seed=seed)
    W = np.asarray(W.toarray() if hasattr(W, "toarray") else W, dtype=np.float64)
    idx = np.arange(C)[:, None] * n + np.arange(n)[None, :]  # (C, n) client ids per cluster
    return W[idx[:, :, None], idx[:, None, :]]


def config_cluster_mixing(config: AlgorithmConfig, n_clients: int) -> np.ndarray:
    """The ``(C, n, n)`` W_k of a clustered algorithm's ``topology``, ``clusters`` and
    ``graph_seed``."""
    C, n = cluster_sizes(n_clients, config.clusters)
    return cluster_mixing(config.topology or "ring", C, n, seed=config.option("graph_seed"))


def block_gossip(Wk: Any) -> Callable[[Array, int], Array]:
    """The per-cluster gossip step: ``X (S, C n, d) -> W_k`` applied to each cluster block.

    One batched matmul of ``(C, n, n)`` with ``X`` viewed as ``(S, C, n, d)``; no loop over
    clusters or clients.
    """
    Wk = np.asarray(to_numpy(Wk), dtype=np.float64)
    if Wk.ndim != 3 or Wk.shape[1] != Wk.shape[2]:
        raise AssumptionError(f"per-cluster matrices must have shape (C, n, n), got {Wk.shape}")
    C, n = Wk.shape[0], Wk.shape[1]
    cache: dict = {}

    def mix(X: Array, t: int) -> Array:
        xp = get_namespace(X)
        key = (xp.__name__, X.dtype)
        if key not in cache:
            cache[key] = xp.asarray(Wk, dtype=X.dtype)
        S, N, d = X.shape
        if N != C * n:
            raise AssumptionError(f"X has {N} clients but the clusters hold C n = {C * n}")
        return xp.matmul(cache[key], X.reshape(S, C, n, d)).reshape(S, N, d)

    return mix


def cluster_weights(mask: Array, n_clusters: int) -> Array:
    """Weights of Delta = (1/C') sum_k (1/|S^k|) sum_{i in S^k} (000 Alg. 2 line 20).

    ``mask`` (S, N) with contiguous clusters of n = N / C; C' counts the clusters with at least
    one sampled client (C' = C under per-cluster sampling). Returns (S, N).
    """
    xp = get_namespace(mask)
    S, N = mask.shape
    m = xp.asarray(mask, dtype=xp.float64).reshape(S, n_clusters, N // n_clusters)
    counts = m.sum(axis=-1, keepdims=True)  # |S^k|
    per = m / xp.maximum(counts, 1.0)
    nonempty = (counts[..., 0] > 0).sum(axis=-1)  # C'
    return (per / xp.maximum(nonempty, 1)[:, None, None]).reshape(S, N)


def selected_ring(mask: Any, kind: str = "ring") -> np.ndarray:
    """Per-seed mixing matrices ``(S, N, N)`` of a ring (or complete graph) formed on S_r alone.

    000 Section 5, footnote 4 (communication-adapted AFGA): the M selected clients form a new
    ring in increasing client order and gossip over it with uniform-degree weights 1/(deg + 1)
    (1/3 for M >= 3, 1/2 for M = 2, 1 for M = 1); the unselected clients are offline (identity
    rows). ``kind="complete"`` gives 1/M on the selected block instead. Built with vectorized
    index arithmetic: no loop over seeds or clients.

    Parameters
    ----------
    mask : array of bool, shape (S, N)
        S_r for every seed (sizes may differ between seeds).
    kind : {"ring", "complete"}

    Returns
    -------
    ndarray, shape (S, N, N), each doubly stochastic.
    """
    m = np.asarray(to_numpy(mask), dtype=bool)
    if m.ndim != 2:
        raise AssumptionError(f"the round's mask must have shape (seeds, clients), got {m.shape}")
    S, N = m.shape
    kind = str(kind).strip().lower()
    counts = m.sum(axis=1)  # M_s
    W = np.zeros((S, N, N))
    if kind == "complete":
        sel = m[:, :, None] & m[:, None, :]
        W = sel / np.maximum(counts, 1)[:, None, None]
    elif kind == "ring":
        order = np.argsort(~m, axis=1, kind="stable")  # selected clients first, by index
        pos = np.argsort(order, axis=1, kind="stable")  # position of client i in that order
        Ms = np.maximum(counts, 1)[:, None]
        s_idx = np.broadcast_to(np.arange(S)[:, None], (S, N))
        nxt = np.take_along_axis(order, (pos + 1) % Ms, axis=1)
        prv = np.take_along_axis(order, (pos - 1) % Ms, axis=1)
        deg = np.clip(counts - 1, 0, 2)  # M_s = 0 (an empty round): no selected row
        w = np.broadcast_to((1.0 / (deg + 1.0))[:, None], (S, N))
        i_idx = np.broadcast_to(np.arange(N)[None, :], (S, N))
        s, i, j1, j2, ww = s_idx[m], i_idx[m], nxt[m], prv[m], w[m]
        # assignment (not accumulation): for M = 2 both neighbours are the same client.
        W[s, i, j1] = ww
        W[s, i, j2] = ww
        W[s, i, i] = ww
    else:
        raise AssumptionError(
            f"communication-adapted gossip forms a ring or a complete graph on S_r, not {kind!r}"
        )
    off = ~m
    s_off, i_off = np.nonzero(off)
    W[s_off, i_off, i_off] = 1.0
    return W


def cluster_selected_ring(mask: Any, n_clusters: int, kind: str = "ring") -> np.ndarray:
    """Per-seed mixing matrices ``(S, N, N)`` of communication-adapted CAFGA: inside each of the
    C contiguous clusters, a ring (or complete graph) formed on the cluster's selected clients
    alone (:func:`selected_ring` per cluster; 000 Sec. 5: the communication adaptation "can
    also be applied here to CAFGA"); block diagonal, unselected clients offline (identity)."""
    m = np.asarray(to_numpy(mask), dtype=bool)
    if m.ndim != 2:
        raise AssumptionError(f"the round's mask must have shape (seeds, clients), got {m.shape}")
    S, N = m.shape
    C, n = cluster_sizes(N, n_clusters)
    blocks = selected_ring(m.reshape(S * C, n), kind).reshape(S, C, n, n)
    W = np.zeros((S, N, N))
    for k in range(C):  # C blocks (a handful), every seed at once
        W[:, k * n : (k + 1) * n, k * n : (k + 1) * n] = blocks[:, k]
    return W


def global_rho(config: AlgorithmConfig, n_clients: int, clients_per_round: int | None) -> float:
    """rho = ||W - 11^T/N||_2 of the N-client graph (AFGA, DSGD; 000 Assumption 4.5)."""
    W = global_mixing(config, n_clients)
    return 0.0 if n_clients == 1 else float(_graphs().rho(W))


def cluster_rho(config: AlgorithmConfig, n_clients: int, clients_per_round: int | None) -> float:
    """rho_max = max_k ||W_k - 11^T/n||_2 over the clusters (000 Thm D.3, 004 Cor. 5.11)."""
    Wk = config_cluster_mixing(config, n_clients)
    return 0.0 if Wk.shape[-1] == 1 else float(_graphs().cluster_gaps(list(Wk)).rho_max)


def selected_rho(config: AlgorithmConfig, n_clients: int, clients_per_round: int | None) -> float:
    """rho of the ring (or complete graph) on the M clients of S_r (000 Section 5, fn. 4)."""
    M = check_int("clients per round M", clients_per_round or n_clients, minimum=1)
    return 0.0 if M <= 2 else float(_graphs().rho(gossip_matrix(config.topology or "ring", M)))


def cluster_selected_rho(
    config: AlgorithmConfig, n_clients: int, clients_per_round: int | None
) -> float:
    """rho of the ring (or complete graph) on the m = M / C selected clients of a cluster
    (communication-adapted CAFGA)."""
    C, _ = cluster_sizes(n_clients, config.clusters)
    M = check_int("clients per round M", clients_per_round or n_clients, minimum=1)
    m = max(M // C, 1)
    return 0.0 if m <= 2 else float(_graphs().rho(gossip_matrix(config.topology or "ring", m)))


class GossipState(NamedTuple):
    x: Array  # (S, d) server model
    X: Array  # (S, N, d) every client's latest local model
    opt: ServerOptState


def adaptive_server(config: AlgorithmConfig) -> Any:
    """The adaptive server step of 000 Algorithm 1 lines 19-22 (option ``server``, default
    ``amsgrad``: FedAMSGrad)."""
    return server_optimizer(
        config.option("server"),
        config.global_lr,
        beta1=config.beta1,
        beta2=config.beta2,
        eps=config.eps,
        eps_placement=config.eps_placement,
    )


def build_gossip_adaptive(
    name: str,
    config: AlgorithmConfig,
    *,
    mixing: Callable[[int], Any],
    compute: str,
    weights: Callable[[Any, Any], Array] | None = None,
    reference: str = "",
) -> Algorithm:
    """The shared round of AFGA, CAFGA and HA-Fed: broadcast x_r, K engine steps with gossip,
    Delta over the collecting set, adaptive server step.

    Parameters
    ----------
    name : str
    config : AlgorithmConfig
    mixing : callable ``N -> mix``
        The engine's ``mix`` argument (an (N, N) matrix or a callable ``(X, t) -> X``), built
        once per problem size N.
    compute : {"resampled", "round", "all"}
        Who computes at local step t: the re-sampled S_{r,t} (``draw.step_masks``), the round's
        S_r (re-sampling off), or every client (HA-Fed).
    weights : callable ``(draw, x) -> (S, N)``, optional
        Aggregation weights of Delta; default ``draw.weights`` (the participation module's rule;
        1/|S_r| for ``mean``).
    reference : str
    """
    if compute not in ("resampled", "round", "all"):
        raise AssumptionError(f"compute must be 'resampled', 'round' or 'all', got {compute!r}")
    opt = adaptive_server(config)
    K, lr = config.local_steps, config.lr
    cache: dict[int, Any] = {}

    def mix_for(n: int) -> Any:
        if n not in cache:
            cache[n] = mixing(n)
        return cache[n]

    if config.n_clients is not None:
        mix_for(int(config.n_clients))  # build (and validate) W now, not in the first round

    def init(problem: Any, x0: Array) -> GossipState:
        mix_for(int(problem.n_clients))
        return GossipState(x=x0, X=broadcast_clients(x0, problem.n_clients), opt=opt.init(x0))

    def round_(state: GossipState, problem: Any, draw: Any, rng: Any = None) -> GossipState:
        N = state.X.shape[1]
        X0 = broadcast_clients(state.x, N)  # 000 Alg. 1 line 4: every client starts at x_r
        if compute == "resampled":
            if draw.step_masks is None:
                raise AssumptionError(
                    f"{name} re-samples who computes at every local step: the round draw needs "
                    "step_masks (S, K, N) (the runner draws them from the participation model)"
                )
            who = draw.step_masks
        else:
            who = draw.mask if compute == "round" else None
        XK = local_steps(problem, X0, K, lr, compute=who, rng=rng, mix=mix_for(N))
        w = draw.weights if weights is None else weights(draw, state.x)
        delta = aggregate_deltas(XK, state.x, w, draw.mask)
        step, opt_state = opt.update(delta, state.opt)
        return GossipState(x=state.x + step, X=XK, opt=opt_state)

    return Algorithm(
        name=name,
        init=init,
        round=round_,
        config=config,
        needs_step_masks=compute == "resampled",
        reference=reference,
        metrics=client_metrics(),
    )


def cluster_gossip(config: AlgorithmConfig) -> Callable[[int], Any]:
    """``N -> mix``: the per-cluster gossip step of a clustered algorithm's configuration."""
    return lambda n_clients: block_gossip(config_cluster_mixing(config, n_clients))


def cluster_average(config: AlgorithmConfig) -> Callable[[Any, Any], Array]:
    """``(draw, x) -> (S, N)``: Delta's per-cluster average weights (000 Alg. 2 line 20), in
    the dtype of x."""

    def w(draw: Any, x: Array) -> Array:
        C, _ = cluster_sizes(draw.mask.shape[1], config.clusters)
        return get_namespace(x).asarray(cluster_weights(draw.mask, C), dtype=x.dtype)

    return w


def build_adapted_gossip(
    name: str,
    config: AlgorithmConfig,
    *,
    mixing: Callable[[Any, str], np.ndarray],
    weights: Callable[[Any, Any], Array] | None = None,
    reference: str = "",
) -> Algorithm:
    """The shared round of the communication-adapted variants (000 Section 5, footnote 4;
    Table 5): only the clients of S_r are online; they start from x_r, compute at every local
    step and gossip with ``mixing(mask, kind)`` (``(S, N, N)`` per seed: a ring or complete
    graph on S_r, or on each cluster's part of it), the others keep their last model; Delta over
    S_r (``weights``, default ``draw.weights``); the adaptive server step of 000 Alg. 1.

    ``config.topology`` is ``ring`` (default) or ``complete``, checked when built.
    """
    kind = config.topology or "ring"
    selected_ring(np.ones((1, 3), dtype=bool), kind)  # validate the topology name now
    opt = adaptive_server(config)
    K, lr = config.local_steps, config.lr

    def init(problem: Any, x0: Array) -> GossipState:
        return GossipState(x=x0, X=broadcast_clients(x0, problem.n_clients), opt=opt.init(x0))

    def round_(state: GossipState, problem: Any, draw: Any, rng: Any = None) -> GossipState:
        xp = get_namespace(state.x)
        lay = None if bool(draw.mask.all()) else participants(draw.mask)
        X0 = pull(state.X, state.x, draw.mask, layout=lay)
        W = xp.asarray(mixing(draw.mask, kind), dtype=state.x.dtype)  # (S, N, N)
        XK = local_steps(problem, X0, K, lr, compute=draw.mask, rng=rng, mix=gossip(W))
        w = draw.weights if weights is None else weights(draw, state.x)
        delta = aggregate_deltas(XK, state.x, w, draw.mask, lay)
        step, opt_state = opt.update(delta, state.opt)
        return GossipState(x=state.x + step, X=XK, opt=opt_state)

    return Algorithm(
        name=name,
        init=init,
        round=round_,
        config=config,
        reference=reference,
        metrics=client_metrics(),
    )
