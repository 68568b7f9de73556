"""The one local-steps engine: K gradient steps for all clients of all seeds at once.

Every algorithm that runs local (stochastic) gradient steps is a configuration of
:func:`local_steps`:

- FedAvg / local SGD (McMahan et al. 2017): ``compute=mask``;
- FedProx (Li et al. 2020, MLSys, eq. (2) solved inexactly by K gradient steps):
  ``prox_mu=mu, anchor=x``;
- SCAFFOLD (Karimireddy et al. 2020, Algorithm 1 line 10): ``correction = c - c_i``;
- Scaffnew / ProxSkip (Mishchenko et al. 2022, Algorithm 2): ``correction = -h_i``;
- AFGA (000 Algorithm 1 lines 7-13): ``compute`` = re-sampled masks per step, ``mix`` = the
  gossip step X <- W X (:mod:`fedtheory.algorithms.gossip`);
- HA-Fed (004 Algorithm 1), DSGD (``X <- W (X - eta G)``): ``mix`` = W or a per-cluster W_k.

One step t (t = 0..K-1), for every seed s and client i::

    g_i   = grad f_i(x_i) [+ noise]  + prox_mu (x_i - anchor_i) + correction_i
    x_i  <- x_i - lr * m_t[s, i] * g_i          (m_t: who computes at step t)
    X    <- mix(X, t)                           (X <- W X when mix is a matrix)

The engine computes by one of four named strategies (:data:`STRATEGIES`; ``strategy=`` names
one, else :func:`choose_strategy` picks the fastest that applies, on facts about the call and the
problem, never on an algorithm's name). Each is tested against ``stepwise``, the plain one: K
steps of every client's row, the mask scaling who moves.

``subset``: when step t's mask has the same number M <= N/2 of computing clients in every seed
and the problem offers the optional ``grads_at(Xs, clients, rng)`` (see
:class:`fedtheory.problems.base.Problem`), only those M rows are gathered, differentiated and
updated (the others' ``lr * 0 * g`` is skipped). Exact gradients agree with the full path to
rounding; stochastic ones draw from ``rng`` for the M clients only (same seed, same bits still).
Ragged counts (Bernoulli participation) and problems without ``grads_at`` take the full path,
unchanged.

Two more strategies compute in one pass:

- ``participants`` (exact gradients, one mask for every step, no mixing, a problem without
  ``grads_at``): the computing clients' rows are gathered once into the client-major slot layout
  of :class:`~fedtheory.algorithms.base.Participants` (padded to the same count per client, so
  ragged Bernoulli rounds need nothing else), stepped there (``problem.grads`` on that layout is
  one GEMM per client over the seeds in which it takes part for a quadratic) and scattered back
  once. The arithmetic of every row is the full path's; only the number of rows differs.
- ``affine-map``, every client's K steps in O(1) (also used inside ``participants``): no
  proximal term, no correction, a 0/1 mask, and a problem that offers ``local_steps_map``
  (e.g. a quadratic): K plain steps x <- x - lr (H_i x - h_i) are the
  affine map x -> P_i^K x + sum_{j<K} P_i^j lr h_i with P_i = I - lr H_i, one (d, d) product per
  client instead of K, the map computed once per run. It equals the step-by-step path to
  rounding (about 1e-15 relative, a test).

"Exact" means ``rng is None`` or a problem that says its gradients ignore ``rng``
(``problem.stochastic`` is False; without that attribute a problem counts as stochastic).

FOCUS's gradient tracking (003 Algorithm 1) is a configuration too: its steps 1..K-1 are
``correction = -g_prev_i`` (the client's stored gradient), then one more gradient
(:mod:`fedtheory.algorithms.focus`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from fedtheory.algorithms.base import (
    Participants,
    broadcast_clients,
    compressible,
    participants,
    pull,
    slot_grads,
    spread,
)
from fedtheory.backend import get_namespace, to_numpy
from fedtheory.errors import AssumptionError
from fedtheory.problems.base import client_matmul
from fedtheory.validation import check_local_steps, check_positive

Array = Any


def _mask_at(
    compute: Any, t: int, shape: tuple[int, int], xp: Any, host: np.ndarray | None = None
) -> Array | None:
    """The (S, N) mask of step t (as given), or None when every client computes; ``host``, a
    host copy of that mask, decides it without waiting for the device."""
    if compute is None:
        return None
    if callable(compute):
        m = compute(t)
    else:
        m = compute
        if getattr(m, "ndim", 0) == 3:  # (S, K, N): one mask per local step
            m = m[:, t, :]
    m = xp.asarray(m)
    if m.dtype == bool and bool((m if host is None else host).all()):
        return None  # everyone computes: skip the multiplication (same bits)
    if m.shape != shape:
        raise AssumptionError(
            f"the compute mask of local step {t} must have shape (seeds, clients) = {shape}, "
            f"got {m.shape}"
        )
    return m


def _subset(
    m: Array | None, N: int, xp: Any, host: np.ndarray | None = None
) -> tuple[Array, Array] | None:
    """``(idx, w)`` when mask ``m (S, N)`` has the same number M <= N/2 of nonzero entries in
    every seed: ``idx (S, M)`` the computing clients in increasing order, ``w (S, M)`` their
    mask values; None otherwise (the full path). ``host``, a host copy of ``m``, counts
    without waiting for the device."""
    if m is None:
        return None
    on = m != 0
    counts = (on if host is None else host != 0).sum(axis=1)
    M = int(counts[0])
    if M == 0 or 2 * M > N or not bool((counts == M).all()):
        return None
    idx = xp.argsort(~on, axis=1, kind="stable")[:, :M]
    return idx, xp.take_along_axis(m, idx, axis=1)


def _rows(A: Array, idx: Array) -> Array:
    """``A[s, idx[s, m], :]``: the (S, M, d) rows of ``A (S, N, d)`` named by ``idx (S, M)``."""
    xp = get_namespace(A)
    return xp.take_along_axis(A, idx[:, :, None], axis=1)


def _scaled_mask(m: Array | None, lr: float, d: int, dtype: Any) -> Array | None:
    """``lr * m`` spread to (S, N, d) (None: every client computes, scale by ``lr``)."""
    if m is None:
        return None
    return spread(lr * m.astype(dtype), d)


def _affine(
    X: Array, T: Array, c: Array, B: Array | None = None, *, correction: Array | None = None
) -> Array:
    """``X[..., i, :] @ T[i] + c[i]`` for every client row: ``(B, N, d) -> (B, N, d)`` (a new
    array; one GEMM per client over the B rows, read and written in place by strides); with a
    ``correction`` (constant over the steps: a tilt of the client objective by ``-correction``,
    :meth:`~fedtheory.problems.QuadraticProblem.tilt_map` ``B``), ``- correction[..., i, :] @
    B[i]`` more."""
    out = client_matmul(X, T)
    out += c
    if correction is not None:
        if correction.shape[1] != X.shape[1]:  # (S, 1, d): one correction per seed
            correction = broadcast_clients(correction[:, 0, :], X.shape[1])
        out -= client_matmul(correction, B)
    return out


def step_maps(
    problem: Any, lr: float, K: int, xp: Any, dtype: Any, *, tilted: bool = False
) -> tuple | None:
    """The problem's maps of K exact plain steps: ``(T, c)`` (``local_steps_map``), with the
    tilt map ``B`` (``tilt_map``) when ``tilted``, ``(T, c, B)``; None where the problem offers
    none (it is then stepped one gradient at a time)."""
    if not hasattr(problem, "local_steps_map") or (tilted and not hasattr(problem, "tilt_map")):
        return None
    T, c = problem.local_steps_map(lr, K, xp, dtype)
    return (T, c, problem.tilt_map(lr, K, xp, dtype)) if tilted else (T, c)


def _slot_rows(A: Array, lay: Participants) -> Array:
    """Rows of ``A`` in the slot layout: ``(S, N, d) -> (n, N, d)``; ``(S, 1, d)`` (one row per
    seed, as an anchor or a shared correction) is read by seed."""
    S, N, d = A.shape
    if N == 1:
        return A[:, 0, :][lay.seed]
    return A.reshape(S * N, d)[lay.src]


def slot_steps(
    problem: Any,
    Xs: Array,
    K: int,
    lr: float,
    layout: Participants,
    *,
    scale: Any = None,
    kmap: tuple | None = None,
    prox_mu: float = 0.0,
    anchor: Array | None = None,
    correction: Array | None = None,
) -> Array:
    """K exact local steps of rows in the client-major slot layout ``layout``
    (:class:`~fedtheory.algorithms.base.Participants`), ``Xs (n, u, d)``, updated in place and
    returned (or a new array: the K-step map ``kmap`` of every client, where the steps are
    plain).

    ``scale`` (default ``lr``) multiplies each gradient (``lr * m`` spread to the slots for
    per-client step weights); ``anchor`` and ``correction`` are in the slot layout too (a
    ``correction`` with the map needs its tilt map: ``kmap = (T, c, B)``,
    :meth:`LocalCall.kmap`). Every row's arithmetic is the every-client path's; only the number
    of rows differs.
    """
    if kmap is not None:
        return _affine(Xs, *(layout.take(a) for a in kmap), correction=correction)
    xp = get_namespace(Xs)
    scale = lr if scale is None else scale
    step = xp.empty_like(Xs)
    for _ in range(K):
        G = slot_grads(problem, Xs, layout)
        if prox_mu > 0:
            G = G + prox_mu * (Xs - anchor)
        if correction is not None:
            G = G + correction
        Xs -= xp.multiply(G, scale, out=step)
    return Xs


def _participants_steps(
    problem: Any,
    X: Array,
    K: int,
    lr: float,
    m: Array,
    *,
    kmap: tuple | None,
    prox_mu: float,
    anchor: Array | None,
    correction: Array | None,
    layout: Participants | None = None,
    start: Array | None = None,
) -> None:
    """K steps of the computing clients of mask ``m (S, N)`` only, in the slot layout
    (``layout``, or the mask's), from their rows of ``X`` or from the server model ``start``;
    ``X`` is updated in place (its other rows are not touched)."""
    S, N, d = X.shape
    lay = participants(m, compress=compressible(problem)) if layout is None else layout
    Xs = X.reshape(S * N, d)[lay.src] if start is None else start[lay.seed]
    scale = None
    if kmap is None and m.dtype != bool:  # per-client step weights lr * m[s, i]
        scale = spread(lr * m.astype(X.dtype).reshape(S * N)[lay.src], d)
    Xs = slot_steps(
        problem,
        Xs,
        K,
        lr,
        lay,
        scale=scale,
        kmap=kmap,
        prox_mu=prox_mu,
        anchor=_slot_rows(anchor, lay) if prox_mu > 0 else None,
        correction=None if correction is None else _slot_rows(correction, lay),
    )
    X.reshape(S * N, d)[lay.rows] = Xs.reshape(-1, d)[lay.slots]


def local_steps(
    problem: Any,
    X: Array,
    K: int,
    lr: float,
    *,
    compute: Any = None,
    rng: Any = None,
    prox_mu: float = 0.0,
    anchor: Array | None = None,
    correction: Array | None = None,
    mix: Callable[[Array, int], Array] | None = None,
    overwrite: bool = False,
    strategy: str | None = None,
    layout: Participants | None = None,
    start: Array | None = None,
) -> Array:
    """Run K local gradient steps on the stacked client models ``X`` of shape ``(S, N, d)``.

    Parameters
    ----------
    problem : Problem
        Gives ``grads(X, rng) -> (S, N, d)``.
    X : array, shape (S, N, d)
        Client models at the start of the local phase (not modified unless ``overwrite``).
    K : int
        Number of local steps (>= 1).
    lr : float
        Local step size eta_l (> 0).
    compute : None, array (S, N), array (S, K, N) or callable ``t -> (S, N)``
        Who computes at each step (others keep their model, but still gossip). None: everyone.
        A callable is where a participation model re-samples S_{r,t} at every step.
    rng : SeedRng or None
        Per-seed random streams for stochastic gradients; None: exact gradients.
    prox_mu : float
        Proximal weight mu (FedProx); the gradient gains ``mu (x_i - anchor_i)``.
    anchor : array (S, d) or (S, N, d), optional
        Proximal centre (the round's server model); required when ``prox_mu > 0``.
    correction : array (S, N, d) or (S, 1, d), optional
        A constant added to every local gradient (SCAFFOLD's ``c - c_i``, Scaffnew's ``-h_i``).
    mix : None or callable ``(X, t) -> X``
        Applied after every step (gossip ``X <- W X``: :func:`fedtheory.algorithms.gossip.gossip`).
    overwrite : bool
        The caller owns ``X`` (e.g. a fresh :func:`~fedtheory.algorithms.base.pull`): update it in
        place instead of copying it first.
    strategy : {None, "affine-map", "participants", "subset", "stepwise"}
        How to compute (:data:`STRATEGIES`); None takes the fastest that applies
        (:func:`choose_strategy`). Naming one that does not apply to the call is an error.
    layout : Participants, optional
        The slot layout of ``compute`` when the caller has it already (``participants``
        reuses it instead of building it again).
    start : array (S, d), optional
        The server model the computing clients start from (the model-assign of S_r,
        :func:`~fedtheory.algorithms.base.pull`), with one mask for every step: the
        ``participants`` strategy reads it per slot, the others pull it into ``X`` first
        (into ``X`` itself with ``overwrite``). None: ``X`` holds the starting models.

    Returns
    -------
    array, shape (S, N, d)
        The client models after K steps.

    Raises
    ------
    AssumptionError
        K < 1, lr <= 0, a mask of the wrong shape, prox_mu > 0 without an anchor, or a
        ``strategy`` that does not apply to the call.
    """
    K = check_local_steps(K)  # every strategy runs K steps (or K products) one after another
    lr = check_positive("the local step size", lr)
    prox_mu = check_positive("the proximal weight mu", prox_mu, allow_zero=True)
    xp = get_namespace(X)
    if prox_mu > 0:
        if anchor is None:
            raise AssumptionError("a proximal term (prox_mu > 0) needs an anchor model")
        anchor = anchor[:, None, :] if anchor.ndim == 2 else anchor
    if mix is not None and not callable(mix):
        raise AssumptionError(
            "mix must be a callable (X, t) -> X, e.g. fedtheory.algorithms.gossip.gossip(W)"
        )
    # One mask for every step (the usual ``compute=draw.mask``): read it once.
    fixed = compute is None or not (callable(compute) or getattr(compute, "ndim", 0) == 3)
    if start is not None and not fixed:
        raise AssumptionError("start needs one compute mask for every local step")
    call = LocalCall(
        problem,
        X,
        K,
        lr,
        compute,
        rng,
        prox_mu,
        anchor,
        correction,
        mix,
        overwrite,
        xp,
        fixed=fixed,
        mask=_mask_at(compute, 0, (X.shape[0], X.shape[1]), xp) if fixed else None,
        exact=rng is None or not getattr(problem, "stochastic", True),
        layout=layout,
        start=start,
    )
    name = choose_strategy(call) if strategy is None else _check_strategy(strategy, call)
    if start is not None and name != "participants":
        mask = xp.ones(X.shape[:2], dtype=bool) if compute is None else compute
        call.X = pull(X, start, mask, donate=overwrite, layout=layout)
        call.overwrite = True  # a pull of every row is a new array; the others, X given away
    return STRATEGIES[name](call)


@dataclass
class LocalCall:
    """One call of :func:`local_steps`, checked: what every strategy reads."""

    problem: Any
    X: Array
    K: int
    lr: float
    compute: Any
    rng: Any
    prox_mu: float
    anchor: Array | None
    correction: Array | None
    mix: Callable[[Array, int], Array] | None
    overwrite: bool
    xp: Any
    fixed: bool  # one mask for every step
    mask: Array | None  # that mask (None: every client computes, or per-step masks)
    exact: bool  # the gradients ignore rng
    layout: Participants | None = None  # the slot layout of ``mask``, when the caller has it
    start: Array | None = None  # the server model the computing clients start from

    @property
    def plain(self) -> bool:
        """Plain gradient steps (but for a constant correction): no proximal term, a 0/1
        mask."""
        m = self.mask
        return self.prox_mu == 0 and (m is None or m.dtype == bool)

    @cached_property
    def kmap(self) -> tuple | None:
        """The problem's K-step affine map ``(T, c)``, where the steps are plain and it offers
        one, with the tilt map ``B`` of a constant correction, ``(T, c, B)`` (asked once per
        call): K steps with gradient grad f_i(x) + corr_i are plain steps on f_i tilted by
        -corr_i (SCAFFOLD's c - c_i, Scaffnew's -h_i), x_K = x T + c - corr B."""
        if not self.plain:
            return None
        tilted = self.correction is not None
        return step_maps(self.problem, self.lr, self.K, self.xp, self.X.dtype, tilted=tilted)

    def owned(self) -> Array:
        """``X`` to update in place (a copy unless the caller gave it away)."""
        return self.X if self.overwrite else self.X.copy()


def _affine_map_steps(call: LocalCall) -> Array:
    """Strategy ``affine-map``: every client computes, K plain exact steps on a problem with
    ``local_steps_map`` (a quadratic): one affine map per client, K steps in O(1)."""
    return _affine(call.X, *call.kmap, correction=call.correction)


def _participants_only(call: LocalCall) -> Array:
    """Strategy ``participants``: one mask for every step, exact gradients, no mixing: only
    the computing clients' rows, gathered once into the slot layout (with the K-step map
    where the steps are plain)."""
    X = call.owned()
    _participants_steps(
        call.problem,
        X,
        call.K,
        call.lr,
        call.mask,
        kmap=call.kmap,
        prox_mu=call.prox_mu,
        anchor=call.anchor,
        correction=call.correction,
        layout=call.layout,
        start=call.start,
    )
    return X


def _subset_steps(call: LocalCall) -> Array:
    """Strategy ``subset``: step by step, and at a step where every seed has the same number
    M <= N/2 of computing clients, only those M rows through the problem's ``grads_at``."""
    return _stepwise(call, subset=True)


def _every_row_steps(call: LocalCall) -> Array:
    """Strategy ``stepwise``, the plain one every other is tested against: K steps of every
    client's row, the mask scaling who moves."""
    return _stepwise(call, subset=False)


def _stepwise(call: LocalCall, *, subset: bool) -> Array:
    problem, K, lr, xp, rng = call.problem, call.K, call.lr, call.xp, call.rng
    prox_mu, correction, mix, compute = call.prox_mu, call.correction, call.mix, call.compute
    anchor = call.anchor
    shape, d = (call.X.shape[0], call.X.shape[1]), call.X.shape[2]
    if prox_mu > 0 and anchor.shape[1] == 1:
        anchor = broadcast_clients(anchor[:, 0, :], shape[1])
    m = call.mask
    sub = _subset(m, shape[1], xp) if call.fixed and subset else None
    lm = _scaled_mask(m, lr, d, call.X.dtype) if call.fixed and sub is None else None
    X = call.owned()
    step = xp.empty_like(X)  # lr * m_t * g, in place: the problem's own array is never scaled
    seeds = xp.arange(shape[0])[:, None]
    # Per-step masks (S, K, N): one copy to the host decides every step's path, instead of a
    # few device syncs per step (O(1) host synchronizations per round, not O(K)).
    host = to_numpy(compute) if not call.fixed and not callable(compute) else None
    for t in range(K):
        if not call.fixed:
            mt = None if host is None else host[:, t, :]
            m = _mask_at(compute, t, shape, xp, mt)
            sub = _subset(m, shape[1], xp, mt) if subset else None
            lm = _scaled_mask(m, lr, d, X.dtype) if sub is None else None
        if sub is not None:
            # Only the M computing clients of every seed: gather, step, scatter back.
            idx, w = sub
            Xs = _rows(X, idx)
            G = problem.grads_at(Xs, idx, rng)
            if prox_mu > 0:
                G = G + prox_mu * (Xs - _rows(anchor, idx))
            if correction is not None:
                G = G + (correction if correction.shape[1] == 1 else _rows(correction, idx))
            X[seeds, idx] -= G * spread(lr * w.astype(X.dtype), d)
        else:
            G = problem.grads(X, rng)
            if prox_mu > 0:
                G = G + prox_mu * (X - anchor)
            if correction is not None:
                G = G + correction
            if lm is None:
                xp.multiply(G, lr, out=step)
            else:
                xp.multiply(G, lm, out=step)
            X -= step
        if mix is not None:
            X = mix(X, t)
    return X


#: The engine's strategies by name. Each computes what ``stepwise`` computes (to rounding; a
#: test compares every one with it); :func:`choose_strategy` picks one on facts about the call
#: and the problem, never on an algorithm's name.
STRATEGIES: dict[str, Callable[[LocalCall], Array]] = {
    "affine-map": _affine_map_steps,
    "participants": _participants_only,
    "subset": _subset_steps,
    "stepwise": _every_row_steps,
}


def applicable(call: LocalCall) -> list[str]:
    """The strategies that apply to ``call``, fastest first."""
    out = []
    one_pass = call.fixed and call.exact and call.mix is None
    if one_pass and call.mask is None and call.kmap is not None:
        out.append("affine-map")
    if one_pass and call.mask is not None:
        out.append("participants")
    if hasattr(call.problem, "grads_at"):
        out.append("subset")
    out.append("stepwise")
    return out


def choose_strategy(call: LocalCall) -> str:
    """The strategy :func:`local_steps` takes: the K-step map for every client where it
    applies; a problem with ``grads_at`` steps its participants per step (``subset``); else
    the participants in one pass where it applies; else ``stepwise``."""
    ok = applicable(call)
    if "affine-map" in ok:
        return "affine-map"
    if "subset" in ok and call.mask is not None:
        return "subset"
    return ok[0]


def _check_strategy(name: str, call: LocalCall) -> str:
    if name not in STRATEGIES:
        raise AssumptionError(
            f"unknown local-steps strategy {name!r}: choose one of {', '.join(STRATEGIES)}"
        )
    ok = applicable(call)
    if name not in ok:
        raise AssumptionError(
            f"the local-steps strategy {name!r} does not apply to this call (these do: "
            f"{', '.join(ok)})"
        )
    return name
