"""The algorithm interface: pure ``init``/``round`` pairs on stacked state.

Every federated algorithm of :mod:`fedtheory.algorithms` is an :class:`Algorithm`: a name, a
configuration, and two pure functions

``init(problem, x0) -> state``
    ``x0`` is the initial server model of shape ``(S, d)`` (S seeds, leading batch axis). The
    state is a :class:`typing.NamedTuple` whose field ``x`` is the server model ``(S, d)``; client
    arrays are ``(S, N, d)`` (clients are rows).
``round(state, problem, draw, rng) -> state``
    One communication round. ``draw`` is a :class:`RoundDraw` (who participates, with which
    aggregation weights, and optionally who computes at every local step); ``rng`` is ``None``
    (deterministic gradients) or a :class:`SeedRng`, one independent NumPy stream per seed.

Nothing here loops over clients or seeds: a round is a few array operations written against the
namespace ``xp`` of the state (NumPy or CuPy), so 100 seeds cost one batched computation.
Randomness is drawn on the host by :class:`numpy.random.Generator` (same seed, same bits on every
backend) and moved to the arrays' device.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from fedtheory.backend import get_namespace, row_dots, to_numpy
from fedtheory.errors import AssumptionError
from fedtheory.io import renamed
from fedtheory.validation import check_int, check_positive, check_seed

Array = Any


class RoundDraw(NamedTuple):
    """What the participation model decided for one round, for all seeds at once.

    Attributes
    ----------
    mask : array of bool, shape (S, N)
        ``mask[s, i]`` is True when client i is in S_r for seed s.
    weights : array of float, shape (S, N)
        Aggregation weights (zero off S_r); each row sums to one for the ``mean`` and
        ``weighted`` rules of the participation module, to |S|/(N p) in expectation for
        ``unbiased``.
    r : int
        The round index (0-based).
    step_masks : array of bool, shape (S, K, N), or None
        Who computes at local step t (AFGA's re-sampled sets S_{r,t}, 000 Algorithm 1); None
        when the algorithm does not re-sample (then ``mask`` is used at every step).
    counts : array of int, shape (S, N), or None
        Multiplicities for sampling with replacement (None otherwise).
    layout : Participants or None
        The round's participant layout (:func:`participants`), where the runner prepared it
        for an algorithm that reads it (:attr:`Algorithm.uses_layout`; built from ``mask``
        otherwise, :func:`round_layout`). Only under partial participation.
    """

    mask: Array
    weights: Array
    r: int = 0
    step_masks: Array | None = None
    counts: Array | None = None
    layout: Any = None


@dataclass(frozen=True)
class AlgorithmConfig:
    """Hyper-parameters shared by the algorithms (the ``fedtheory simulate`` flags).

    Attributes
    ----------
    lr : float
        Local step size eta_l (FOCUS: the single step size eta, local and server).
    local_steps : int
        K, local steps per round.
    global_lr : float
        Server step size eta (1.0 = plain model averaging for FedAvg).
    beta1, beta2, eps : float
        Server-optimizer constants (000 Algorithm 1; defaults 0.9, 0.99, 1e-8).
    eps_placement : {"inside", "outside"} or None
        sqrt(v_hat + eps) (000 Algorithm 1 line 22) or sqrt(v_hat) + eps (000 eq. (2)); None
        means the optimizer's own default.
    prox_mu : float
        FedProx proximal weight mu.
    topology : str or None
        Gossip graph name for the gossip algorithms.
    clusters : int or None
        Number of clusters C for the clustered algorithms.
    n_clients : int or None
        N, filled in by :func:`fedtheory.algorithms.registry.make_algorithm` from the problem.
    options : dict
        The algorithm's own settings, declared with their types and defaults where it is
        registered (e.g. ``{"cutoff": 10}`` for FedAU; :class:`~fedtheory.algorithms.registry.
        Option`).
    """

    lr: float = 1e-3
    local_steps: int = 1
    global_lr: float = 1.0
    beta1: float = 0.9
    beta2: float = 0.99
    eps: float = 1e-8
    eps_placement: str | None = None
    prox_mu: float = 0.0
    topology: str | None = None
    clusters: int | None = None
    n_clients: int | None = None
    options: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_positive("the local step size lr", self.lr)
        check_int("the number of local steps K", self.local_steps, minimum=1)
        check_positive("the global step size", self.global_lr)
        check_positive("prox_mu", self.prox_mu, allow_zero=True)
        if self.eps_placement not in (None, "inside", "outside"):
            raise AssumptionError(
                f"eps_placement must be 'inside' or 'outside', got {self.eps_placement!r}"
            )

    def option(self, name: str) -> Any:
        """The value of the algorithm's declared option ``name`` (filled with its default by
        :func:`~fedtheory.algorithms.registry.make_algorithm`)."""
        if name not in self.options:
            raise KeyError(
                f"option {name!r} is not set: build the algorithm with make_algorithm(), which "
                "fills every declared option with its default"
            )
        return self.options[name]

    as_dict = renamed("to_dict")

    def to_dict(self) -> dict[str, Any]:
        """The hyper-parameters as a flat dict (options inlined; ``n_clients`` left out)."""
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "options"}
        out.pop("n_clients")
        return {**out, **self.options}


@dataclass(frozen=True)
class Algorithm:
    """A federated algorithm as a pure pair of functions (see the module docstring).

    Attributes
    ----------
    name : str
        The registry name (``fedavg``, ``focus``, ...).
    init : callable
        ``init(problem, x0 (S, d)) -> state`` (a NamedTuple with field ``x``).
    round : callable
        ``round(state, problem, draw: RoundDraw, rng: SeedRng | None) -> state``.
    config : AlgorithmConfig
    needs_step_masks : bool
        True when ``round`` reads ``draw.step_masks`` (who computes at each local step).
    reference : str
        The paper (and algorithm/equation) the update rule follows.
    metrics : mapping of str to callable
        Per-round metrics that need this algorithm's own state, ``metric(state, problem) ->
        (S,)`` (e.g. ``consensus`` for algorithms with client models, FOCUS's ``tracking_residual``);
        the runner records them next to its own (:mod:`fedtheory.simulation.metrics`).
    donates : bool
        ``round`` takes the keyword ``donate``: with ``donate=True`` the caller gives the state
        away and the round may write the new client arrays into the old ones (the participants'
        rows only, instead of copying every client's row: a round's cost proportional to the
        participants). The runner donates when it keeps no earlier state; ``round`` without it
        stays pure.
    uses_layout : bool
        ``round`` reads the participant layout of a partial round (:func:`round_layout`): the
        runner prepares the layouts of many rounds at once (:func:`participants_of_rounds`)
        and hands each in ``draw.layout``.
    state_for : mapping of str to str
        Metric name -> the keyword of ``init`` that makes the state carry what the metric
        reads and the server model never does (``{"consensus": "client_models"}``: FOCUS,
        SCAFFOLD and the FedAvg family keep the clients' models X only when asked). The
        runner passes ``keyword=True`` for each recorded metric named here
        (:meth:`start`); ``round`` keeps such a field where the state has it and leaves it
        None otherwise, and the server model's bits do not depend on it.
    """

    name: str
    init: Callable[..., Any]
    round: Callable[..., Any]
    config: AlgorithmConfig
    needs_step_masks: bool = False
    reference: str = ""
    metrics: Mapping[str, Callable[[Any, Any], Any]] = field(default_factory=dict)
    donates: bool = False
    uses_layout: bool = False
    state_for: Mapping[str, str] = field(default_factory=dict)

    def start(self, problem: Any, x0: Array, metrics: Any = ()) -> Any:
        """``init(problem, x0)`` with the state the named ``metrics`` read
        (:attr:`state_for`)."""
        want = {self.state_for[m]: True for m in metrics if m in self.state_for}
        return self.init(problem, x0, **want)


class SeedRng:
    """One independent :class:`numpy.random.Generator` per seed, used as one generator.

    Draws whose leading axis is the seed axis are taken seed by seed from each seed's own stream
    and stacked, so a batched run of S seeds produces, for seed s, exactly the bits of a
    single-seed run of seed s. Draws are made on the host and moved to ``xp``'s device.

    Parameters
    ----------
    seeds : sequence of int or of numpy.random.SeedSequence
        One entry per seed (leading axis S).
    xp : module, optional
        Array namespace of the results (NumPy by default).
    """

    def __init__(self, seeds: Sequence[Any], xp: Any = np) -> None:
        self.generators = [np.random.default_rng(s) for s in seeds]
        self.xp = xp

    def __len__(self) -> int:
        return len(self.generators)

    def _check(self, size: Any) -> tuple[int, ...]:
        size = (size,) if np.isscalar(size) else tuple(size)
        if not size or size[0] != len(self.generators):
            raise AssumptionError(
                f"a batched random draw needs the seed axis first: size {size} does not start "
                f"with the number of seeds {len(self.generators)}"
            )
        return size

    def _stack(self, draws: list) -> Array:
        return self.xp.asarray(np.stack(draws))

    def standard_normal(self, size: Any, dtype: Any = np.float64) -> Array:
        size = self._check(size)
        return self._stack([g.standard_normal(size[1:], dtype=dtype) for g in self.generators])

    def normal(self, loc: float = 0.0, scale: float = 1.0, size: Any = None) -> Array:
        return loc + scale * self.standard_normal(size)

    def random(self, size: Any) -> Array:
        size = self._check(size)
        return self._stack([g.random(size[1:]) for g in self.generators])

    def integers(self, low: int, high: int | None = None, size: Any = None) -> Array:
        size = self._check(size)
        return self._stack([g.integers(low, high, size=size[1:]) for g in self.generators])

    def uniform(self, low: float = 0.0, high: float = 1.0, size: Any = None) -> Array:
        return low + (high - low) * self.random(size)


#: The largest seed id: ids are int64 in results and sweep stores.
MAX_SEED_ID = 2**63 - 1


def seed_sequences(seed: int, n_seeds: int, seed_ids: Sequence[int] | None = None) -> list:
    """Per-seed :class:`numpy.random.SeedSequence` children of ``seed``.

    Seed s of a run is ``SeedSequence(seed).spawn(...)[s]``, so a single-seed run of seed s
    (``seed_ids=[s]``) reproduces the batched run's seed s bit for bit. That child is built
    directly, ``SeedSequence(seed, spawn_key=(s,))`` (what ``spawn`` makes), so a large id costs
    nothing; ids are int64 (at most 2**63 - 1), as results and sweep stores hold them.
    """
    seed = check_seed(seed)
    ids = (
        list(range(n_seeds))
        if seed_ids is None
        else [
            check_int(f"seed_ids[{k}]", i, minimum=0, maximum=MAX_SEED_ID)
            for k, i in enumerate(seed_ids)
        ]
    )
    if not ids:
        raise AssumptionError("seed_ids is empty: a run needs at least one seed")
    root = np.random.SeedSequence(seed)
    return [
        np.random.SeedSequence(root.entropy, spawn_key=(i,), pool_size=root.pool_size) for i in ids
    ]


class Participants(NamedTuple):
    """A round's participating (seed, client) pairs, laid out to compute on them only.

    Client-major slots: slot ``(j, i)`` holds client i in the j-th seed (in increasing seed order)
    in which it takes part, and there are ``n`` slots per client, the most seeds any one client
    takes part in. An ``(n, N, d)`` array in this layout holds every participant's row once, plus
    padding slots where a client takes part in fewer than ``n`` seeds. Its column i holds client-i
    models only, so ``problem.grads`` evaluates it as it is (the Problem protocol allows any
    leading axes): for a quadratic one GEMM per client over the seeds in which it takes part,
    ``n N`` rows instead of the full path's ``S N`` (about ``M/N`` of them for M-of-N
    participation). Padding slots copy seed 0's row of their client: they compute something
    finite and are never read back.

    Compressed columns (``participants(mask, compress=True)``): where some clients take part in
    no seed of the round (many clients, few per round: N = 10,000, M = 100), the columns are
    the ``u`` clients that do (``clients``), and an ``(n, u, d)`` slot array holds their rows
    only; a problem evaluates it through ``grads_of(X, clients)`` (:func:`slot_grads`). The
    round's work is then proportional to its participants, not to N. Below, N reads u there.

    Attributes
    ----------
    n : int
        Slots per client, ``max_i #{s : mask[s, i]}``.
    m : int
        The most participants any seed has in the round.
    seed : array of int, shape (n, N)
        The seed of each slot (padding: 0).
    src : array of int, shape (n, N)
        The row ``s N + i`` of each slot in an ``(S N, d)`` view of an ``(S, N, d)`` array
        (padding: ``i``).
    rows, slots : arrays of int, shape (P,)
        The P participants in seed-major order: their rows ``s N + i`` and their slots
        ``j N + i`` (``(n N, d)`` view of the slot layout).
    by_seed : array of int, shape (m, S)
        ``by_seed[k, s]``: the slot of seed s's k-th participant (in client order); seeds with
        fewer than m participants (ragged counts, e.g. Bernoulli participation) point at slot
        ``n N``, one row past the layout, which a caller keeps at zero.
    clients : array of int, shape (u,), or None
        The clients of the compressed columns (None: every client, u = N).
    width : int
        The number of columns u (N when not compressed).
    rows_by_seed : array of int, shape (m, S)
        ``rows_by_seed[k, s]``: the row ``s N + i`` of seed s's k-th participant; the missing
        ones of ragged rounds point at the seed's row ``s N`` and are flagged in ``valid``.
    valid : array of bool, shape (m, S), or None
        Which entries of ``by_seed`` and ``rows_by_seed`` are participants (None: all, the same
        count in every seed).
    """

    n: int
    m: int
    seed: Array
    src: Array
    rows: Array
    slots: Array
    by_seed: Array
    rows_by_seed: Array
    valid: Array | None = None
    clients: Array | None = None
    width: int = 0

    def take(self, A: Array) -> Array:
        """Per-client data ``A (N, ...)`` for the layout's columns: ``A[clients]`` where the
        columns are compressed, else ``A`` itself."""
        return A if self.clients is None else A[self.clients]


def participants(mask: Array, *, compress: bool = False) -> Participants:
    """The :class:`Participants` layout of a round mask ``(S, N)`` (bool, or nonzero = taking
    part). Every array is in the mask's namespace; a few small integer operations, no loop.

    ``compress``: the columns are the clients that take part in some seed, where they are at
    most half of the N (fewer columns, each client's per-client data gathered; the caller's
    problem then needs ``grads_of``, :func:`slot_grads`)."""
    xp = get_namespace(mask)
    on = mask if mask.dtype == bool else xp.asarray(mask) != 0
    N = on.shape[1]
    clients = None
    if compress:
        clients = xp.nonzero(on.any(axis=0))[0]
        if 2 * clients.shape[0] > N:  # gathering most clients' data costs more than it saves
            clients = None
        else:
            on = on[:, clients]
    return _layouts(on[None], N, clients)[0]


def participants_of_rounds(masks: Array, *, compress: bool = False) -> list[Participants]:
    """The :class:`Participants` layouts of several rounds' masks ``(R, S, N)``: the layouts of
    :func:`participants` round by round, each array a slice of arrays computed once for all R
    rounds, so a round's layout costs a few slices instead of a dozen array operations (the
    runner prepares them for an algorithm that asks, in chunks of rounds:
    :attr:`Algorithm.uses_layout`). ``compress`` layouts, whose columns differ from round to
    round, are built round by round."""
    xp = get_namespace(masks)
    on = masks if masks.dtype == bool else xp.asarray(masks) != 0
    if compress:
        return [participants(on[r], compress=True) for r in range(on.shape[0])]
    return _layouts(on, on.shape[2], None)


def _layouts(on: Array, N: int, clients: Array | None) -> list[Participants]:
    """The layouts of R rounds' boolean masks ``on (R, S, u)`` whose columns are the clients
    ``clients (u,)`` (None: every client, u = N): the one computation behind
    :func:`participants` and :func:`participants_of_rounds`."""
    xp = get_namespace(on)
    R, S, u = on.shape
    # rank[r, s, j]: seeds up to s in which column j takes part (int32: half the time of int64)
    rank = xp.cumsum(on, axis=1, dtype=xp.int32)
    cell = xp.flatnonzero(on)  # round-major, then seed-major: r S u + s u + j
    r_idx = cell // (S * u)
    rest = cell - r_idx * (S * u)  # s u + j
    s_idx = rest // u
    j_idx = rest - s_idx * u
    rows = s_idx * N + (j_idx if clients is None else clients[j_idx])
    slots = (rank.reshape(-1)[cell] - 1) * u + j_idx
    counts = on.sum(axis=2)  # (R, S) participants per seed
    # the numbers that set the shapes, for every round in one read of the device
    n_r, m_r, p_r = to_numpy(
        xp.stack([rank[:, -1, :].max(axis=1), counts.max(axis=1), counts.sum(axis=1)])
        if S * u
        else xp.zeros((3, R), dtype=xp.int64)
    ).tolist()
    soff, poff = [0], [0]
    for r in range(R):
        soff.append(soff[-1] + n_r[r] * u)
        poff.append(poff[-1] + p_r[r])
    start = xp.asarray(np.asarray(soff[:-1], dtype=np.int64))
    size = xp.asarray(np.diff(np.asarray(soff, dtype=np.int64)))
    src = (xp.arange(soff[-1]) - xp.repeat(start, size)) % u  # padding: seed 0's row of the
    if clients is not None:  # column's client
        src = clients[src]
    src[start[r_idx] + slots] = rows
    seed = src // N
    ragged = any(m_r[r] * S != p_r[r] for r in range(R))
    # each participant's rank among its seed's participants (ragged rounds only)
    k_all = xp.cumsum(on, axis=2).reshape(-1)[cell] - 1 if ragged else None
    out = []
    for r in range(R):
        n, m, a, b, c, d = n_r[r], m_r[r], poff[r], poff[r + 1], soff[r], soff[r + 1]
        rws, sl = rows[a:b], slots[a:b]
        valid = None
        if m * S == b - a:  # the same count in every seed: no padding
            by_seed, rows_by_seed = sl.reshape(S, m).T, rws.reshape(S, m).T
        else:
            k, s = k_all[a:b], s_idx[a:b]
            by_seed = xp.full((m, S), n * u, dtype=rws.dtype)
            by_seed[k, s] = sl
            rows_by_seed = xp.repeat(xp.arange(S, dtype=rws.dtype)[None, :] * N, m, axis=0)
            rows_by_seed[k, s] = rws
            valid = xp.zeros((m, S), dtype=bool)
            valid[k, s] = True
        out.append(
            Participants(
                n=n,
                m=m,
                seed=seed[c:d].reshape(n, u),
                src=src[c:d].reshape(n, u),
                rows=rws,
                slots=sl,
                by_seed=by_seed,
                rows_by_seed=rows_by_seed,
                valid=valid,
                clients=clients,
                width=u,
            )
        )
    return out


def round_layout(draw: Any, problem: Any) -> Participants:
    """The participant layout of a round: the one the runner prepared (``draw.layout``), else
    built from ``draw.mask`` (compressed where the problem allows, :func:`compressible`)."""
    if draw.layout is not None:
        return draw.layout
    return participants(draw.mask, compress=compressible(problem))


def slot_grads(problem: Any, Xs: Array, layout: Participants) -> Array:
    """Exact gradients of the rows of a slot array ``Xs (n, u, d)``: ``problem.grads`` where
    the columns are every client, ``problem.grads_of(Xs, clients)`` where they are compressed
    (:func:`participants` with ``compress``).

    Raises
    ------
    AssumptionError
        A compressed layout for a problem without ``grads_of``.
    """
    if layout.clients is None:
        return problem.grads(Xs, None)
    if not hasattr(problem, "grads_of"):
        raise AssumptionError(
            f"{type(problem).__name__} has no grads_of(X, clients): build its participants "
            "layout without compress"
        )
    return problem.grads_of(Xs, layout.clients)


#: Participant layouts compress their columns (:func:`participants`) for problems of at least
#: this many clients: below it every client takes part in some seed of a block anyway, and
#: finding the clients that do costs one more read of the device per round.
COMPRESS_CLIENTS = 256


def compressible(problem: Any) -> bool:
    """Whether a problem's participant layouts compress their columns (:func:`participants`):
    it evaluates a subset of its clients (``grads_of``) and has at least
    :data:`COMPRESS_CLIENTS` of them."""
    return hasattr(problem, "grads_of") and int(problem.n_clients) >= COMPRESS_CLIENTS


def seed_sums(values: Array, layout: Participants, weights: Array | None = None) -> Array:
    """sum over each seed's participants of ``values`` in the slot layout: ``(n N + 1, d) ->
    (S, d)``; row ``n N`` of ``values`` must be zero (it stands in for missing participants).

    The terms are added one after the other in client order (a sum over the slot axis of a
    contiguous ``(m, S, d)`` gather), so a seed's sum depends on its own participants only,
    whatever the other seeds of the block do. With ``weights (m, S)`` (in the order of
    ``layout.by_seed``): sum_k w[k, s] values[by_seed[k, s]], by :func:`weighted_sums`.
    """
    xp = get_namespace(values)
    V = xp.take(values, layout.by_seed, axis=0)  # (m, S, d)
    return V.sum(axis=0) if weights is None else weighted_sums(V, weights)


def weighted_sums(V: Array, w: Array) -> Array:
    """sum_k w[k, s] V[k, s, :] for every s: ``(m, S, d), (m, S) -> (S, d)``.

    One small product per seed, ``(1, m) @ (m, d)``: a seed's sum reads its own rows only.
    On NumPy 3x faster than ``(V * w[..., None]).sum(axis=0)``, whose operand broadcast along
    the last axis runs d-long inner loops (200 seeds, m = 4, d = 50: 14 us against 44).
    """
    xp = get_namespace(V)
    return xp.matmul(w.T[:, None, :], V.transpose(1, 0, 2))[:, 0, :]


def participant_sum(values: Array, weights: Array, layout: Participants, x: Array) -> Array:
    """sum over each seed's participants of ``w_i (v_i - x)``: ``values (S, N, d)``, ``weights
    (S, N)``, the server model ``x (S, d)`` -> ``(S, d)``.

    Reads the participants' M rows of each seed only (``layout.rows_by_seed``), not all N:
    the cost of a round's aggregation is proportional to the participants. The terms are added
    in client order, one after the other, so a seed's sum depends on its own participants only.
    """
    xp = get_namespace(values)
    S, N, d = values.shape
    D = xp.take(values.reshape(S * N, d), layout.rows_by_seed, axis=0)  # (m, S, d): new
    D -= x
    if layout.valid is not None:  # ragged counts: the padding reads a real row
        D = xp.where(layout.valid[..., None], D, 0.0)
    return weighted_sums(D, participant_weights(weights, layout, values.dtype))


def participant_weights(weights: Array, layout: Participants, dtype: Any) -> Array:
    """The aggregation weights ``(S, N)`` of each seed's participants, ``(m, S)`` in the order
    of ``layout.rows_by_seed`` (and of ``layout.by_seed``); 0 for the padding of ragged
    rounds."""
    xp = get_namespace(layout.rows_by_seed)
    w = xp.asarray(weights, dtype=dtype)
    w = xp.take(w.reshape(w.shape[0] * w.shape[1]), layout.rows_by_seed)
    return w if layout.valid is None else xp.where(layout.valid, w, 0.0)


def aggregate_deltas(
    X: Array, x: Array, weights: Array, mask: Array, layout: Participants | None = None
) -> Array:
    """Delta = sum_{i in S_r} w_i (x_i - x), the server's aggregate of the clients' updates:
    ``X (S, N, d)``, ``x (S, d)``, ``weights (S, N)`` (zero off S_r), ``mask (S, N)`` -> ``(S, d)``.

    Under partial participation only the participants' rows are read
    (:func:`participant_sum`, with ``layout``, the mask's layout where the caller has it: a
    layout says the participation is partial); under full participation every row
    (:func:`aggregate`). Every algorithm that aggregates model deltas over S_r calls this one
    function, so two algorithms that coincide (AFGA with W = I and no re-sampling, and
    FedAMSGrad) give the same bits.
    """
    if layout is None:
        if bool(mask.all()):
            return aggregate(client_deltas(X, x), weights)
        layout = participants(mask)
    return participant_sum(X, weights, layout, x)


def aggregate(values: Array, weights: Array) -> Array:
    """sum_i w_i v_i over clients: ``(S, N, d), (S, N) -> (S, d)``.

    One small matrix product per seed, ``(1, N) @ (N, d)`` (BLAS), rather than an einsum: on
    NumPy this is about 3x faster at (S, N, d) = (100, 16, 50). The sum over 16 terms is taken in
    BLAS's order, so it can differ from ``einsum``'s in the last bits.
    """
    xp = get_namespace(values)
    w = xp.asarray(weights, dtype=values.dtype)
    return xp.matmul(w[:, None, :], values)[:, 0, :]


def client_sum(values: Array) -> Array:
    """sum_i v_i over the client axis: ``(S, N, d) -> (S, d)``.

    A matrix product with a vector of ones. NumPy's ``values.sum(axis=1)`` reduces over the
    middle axis in short inner loops of length d and is about 7x slower at (100, 16, 50).
    """
    xp = get_namespace(values)
    ones = xp.ones((1, 1, values.shape[1]), dtype=values.dtype)
    return xp.matmul(ones, values)[:, 0, :]


def spread(values: Array, d: int, dtype: Any = None) -> Array:
    """Per-client values ``(S, N)`` as a contiguous ``(S, N, d)`` array, constant along d.

    A real array, not a broadcast view: NumPy's arithmetic on an operand broadcast along the last
    axis runs d-long inner loops and is 3-8x slower than on a full array, while filling the full
    array is a single fast copy. Multiplying by the result gives the same bits as multiplying
    by ``values[..., None]``.
    """
    xp = get_namespace(values)
    out = xp.empty(tuple(values.shape) + (d,), dtype=values.dtype if dtype is None else dtype)
    out[...] = values[..., None]
    return out


def expand(mask: Array, dtype: Any) -> Array:
    """A boolean (S, N) mask as a (S, N, 1) float array that multiplies client rows."""
    xp = get_namespace(mask)
    return xp.asarray(mask, dtype=dtype)[..., None]


def broadcast_clients(x: Array, n_clients: int) -> Array:
    """The server model ``(S, d)`` copied to every client: ``(S, N, d)`` (a new array).

    ``repeat`` along the seed axis: whole rows copied, about 1.6x faster on NumPy than filling
    the array from a view broadcast along its middle axis (d-long inner loops); same values.
    """
    xp = get_namespace(x)
    return xp.repeat(x, n_clients, axis=0).reshape(x.shape[0], n_clients, x.shape[1])


def client_deltas(X: Array, x: Array) -> Array:
    """``X - x[:, None, :]``: every client's model minus the server model, ``(S, N, d)``.

    Same bits as the broadcast subtraction, about 1.6x faster on NumPy (see
    :func:`broadcast_clients`).
    """
    xp = get_namespace(X)
    out = broadcast_clients(x, X.shape[1])
    return xp.subtract(X, out, out=out)


def pull(
    X: Array, x: Array, mask: Array, *, donate: bool = False, layout: Participants | None = None
) -> Array:
    """Clients in S copy the server model (the model-assign matrix A_S, docs/algorithms.md sec. 3).

    Returns an ``(S, N, d)`` array: row i is ``x`` where ``mask[:, i]`` holds, else ``X``'s.
    The participants' rows are written by index (M rows per seed), not by a masked pass over
    every row: into a copy of ``X``, or into ``X`` itself when the caller gives it away
    (``donate``, :attr:`Algorithm.donates`), which makes the cost proportional to the
    participants. ``layout``, the mask's :class:`Participants` (partial participation) where the
    caller has it, names the rows without asking the device again.
    """
    xp = get_namespace(X)
    if layout is None and bool(mask.all()):  # full participation: everyone starts from x
        return broadcast_clients(x, X.shape[1])
    S, N, d = X.shape
    out = X if donate else X.copy()
    if layout is None:
        s_idx, i_idx = xp.nonzero(xp.asarray(mask))
        rows = s_idx * N + i_idx
    else:
        rows = layout.rows
        s_idx = rows // N
    out.reshape(S * N, d)[rows] = x[s_idx]
    return out


def consensus(X: Array) -> Array:
    """(1/N) sum_i ||x_i - x_bar||^2 per seed for client models ``X (S, N, d)``: ``(S,)``.

    One dot product per seed: on NumPy :func:`numpy.vecdot` (:func:`row_dots`), elsewhere a
    batched (1 x Nd) (Nd x 1) ``matmul``, the same numbers bit for bit.
    """
    n = X.shape[1]
    dev = client_deltas(X, client_sum(X) / n).reshape(X.shape[0], -1)
    return row_dots(dev) / n


def client_metrics(**more: Callable[[Any, Any], Any]) -> dict[str, Callable[[Any, Any], Any]]:
    """The metrics of an algorithm whose state keeps every client's latest local model in
    ``X (S, N, d)``: their ``consensus`` error, plus the algorithm's own ``more``."""
    return {"consensus": lambda state, problem: consensus(state.X), **more}


#: :attr:`Algorithm.state_for` of an algorithm whose state carries the clients' models X only
#: for the ``consensus`` metric (``init(..., client_models=True)``).
CLIENT_MODELS_ON_REQUEST = {"consensus": "client_models"}


def initial_client_models(x0: Array, n_clients: int, keep: bool) -> Array | None:
    """The clients' models at the start, ``(S, N, d)`` copies of ``x0``, when the state keeps
    them (``keep``), else None."""
    return broadcast_clients(x0, n_clients) if keep else None


@dataclass(frozen=True)
class StateLayout:
    """Coordinates z = (u, v_1, ..., v_N) of an affine algorithm's state, in which the exact
    oracles of :mod:`fedtheory.analysis.exact` read its round as z <- M_S z + b_S.

    Each algorithm declares its layout where it is registered (``exact_layout=``).

    Attributes
    ----------
    algorithm : str
    du, dv : int
        Number of server and per-client coordinates (the first ``dim`` server coordinates are
        the server model x).
    dim : int
        d, the model dimension.
    encode : callable
        ``encode(state) -> (u (S, du), V (S, N, dv))``: linear in the state's fields.
    decode : callable
        ``decode(template, u, V, fill) -> state``: a state whose ``encode`` is ``(u, V)``;
        ``fill(shape)`` provides the fields the server model never reads (zeros when
        extracting, random when verifying that they are indeed unread).
    coordinates : str
        The coordinates in words, e.g. ``"u = x; v_i = g_prev_i (y = sum_i v_i)"``.
    """

    algorithm: str
    du: int
    dv: int
    dim: int
    encode: Callable[[Any], tuple[Array, Array]]
    decode: Callable[..., Any]
    coordinates: str


def zeros_fill(shape: tuple[int, ...]) -> np.ndarray:
    """The default ``fill`` of :attr:`StateLayout.decode`: zeros for the fields never read."""
    return np.zeros(shape)


def field_layout(
    server: Sequence[str] = ("x",), clients: Sequence[str] = ()
) -> Callable[..., StateLayout]:
    """The exact layout (``register(..., exact_layout=...)``) of an algorithm whose state is a
    NamedTuple of model-sized arrays: ``server`` fields ``(S, d)`` (the first is ``x``) are the
    server coordinates u, ``clients`` fields ``(S, N, d)`` the per-client coordinates v_i; every
    other field is declared unread by the server model (the exact oracle's verification fills
    it with random values and checks that the round does not depend on it).

    Examples
    --------
    A server model and a server momentum, nothing per client (FedAvg with server momentum)::

        @register("fedavgm", ..., affine=True, exact_layout=field_layout(("x", "m")))
    """
    server, clients = tuple(server), tuple(clients)
    if not server or server[0] != "x":
        raise AssumptionError(f"the server fields of a layout start with 'x', got {server}")
    twice = sorted({f for f in (*server, *clients) if (*server, *clients).count(f) > 1})
    if twice:
        raise AssumptionError(f"a layout names each field once, got {', '.join(twice)} twice")
    words = f"u = ({', '.join(server)})" + (f"; v_i = ({', '.join(clients)})" if clients else "")

    def layout(name: str, config: Any, n_clients: int, dim: int) -> StateLayout:
        d = int(dim)

        def encode(st: Any) -> tuple[Array, Array]:
            xp = get_namespace(st.x)
            u = xp.concatenate([getattr(st, f) for f in server], axis=-1)
            if not clients:
                return u, xp.zeros((u.shape[0], int(n_clients), 0), dtype=u.dtype)
            return u, xp.concatenate([getattr(st, f) for f in clients], axis=-1)

        def decode(tpl: Any, u: Array, V: Array, fill: Callable = zeros_fill) -> Any:
            given = {f: u[:, k * d : (k + 1) * d] for k, f in enumerate(server)}
            given |= {f: V[:, :, k * d : (k + 1) * d] for k, f in enumerate(clients)}
            missing = [f for f in given if f not in tpl._fields]
            if missing:
                raise AssumptionError(
                    f"{name}: its exact layout names the field(s) {', '.join(missing)}, which "
                    f"its state {type(tpl).__name__} does not have ({', '.join(tpl._fields)})"
                )
            rest = {f: fill(np.shape(getattr(tpl, f))) for f in tpl._fields if f not in given}
            return tpl._replace(**given, **rest)

        return StateLayout(name, len(server) * d, len(clients) * d, d, encode, decode, words)

    return layout
