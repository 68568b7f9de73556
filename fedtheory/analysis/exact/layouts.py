"""Which federated algorithms are affine on quadratics, and the coordinates of their state.

On f_i(x) = 1/2 x^T H_i x - h_i^T x every gradient is affine in the model, so a round of an
algorithm that only adds, scales and averages models and gradients is an affine map of its
state given the participation draw: z <- M_S z + c_S. This module records, per algorithm, the
facts the exact oracle needs:

* :data:`NOT_AFFINE`: the algorithms whose round is *not* affine, with the reason (a refusal
  names it);
* :func:`state_layout`: for every affine algorithm, the coordinates z = (u, v_1, ..., v_N) of
  the state that the server model depends on: server coordinates u (the first d of them are the
  server model x) and per-client coordinates v_i, and how they are read from (``encode``) and
  written into (``decode``) the algorithm's own NamedTuple state.

The coordinates are the algorithm's fields minus what the server model never reads (the
clients' latest local models ``X`` of FedAvg, FOCUS, SCAFFOLD, MIFA, FedDyn: a participant
restarts from x, a non-participant's stale model is never aggregated) and minus aggregates the
state keeps redundantly (FOCUS's tracker y = sum_i g_prev_i, FedDyn's h = mean_i grad_i): those
are recomputed from the client coordinates by ``decode``. A redundant coordinate would be a
conserved direction of every M_S, an eigenvalue 1 that no reachable state excites. Redundancies
that are read *by the clients* (SCAFFOLD's c = mean_i c_i) or that depend on the participation
law (Scaffnew under a fixed number of participants) stay coordinates here and are removed by
the conserved-quantity reduction of :mod:`fedtheory.analysis.exact.system`.

Whether ``encode``/``decode`` are right is not assumed: the extracted round model is compared
with the algorithm's own ``round`` on random states, with random values in every field that a
layout declares unread (:func:`fedtheory.analysis.exact.extract.verify_round_model`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedtheory.algorithms.registry import info
from fedtheory.errors import FedTheoryError

Array = Any


class NotAffineError(FedTheoryError):
    """The algorithm's round is not an affine map of its state on this problem (or the exact
    oracle has no coordinates for it); the message says why."""


_ADAPTIVE = (
    "the adaptive server step divides the aggregated update by sqrt(v), and v is quadratic in "
    "the updates (Reddi et al. 2021 Algorithm 2; 000 eq. (2)), so a round is not affine"
)

#: Algorithms whose round is not an affine map of the state, and why.
NOT_AFFINE: dict[str, str] = {
    "fedadam": _ADAPTIVE,
    "fedyogi": _ADAPTIVE,
    "fedadagrad": _ADAPTIVE,
    "fedamsgrad": _ADAPTIVE,
    "afga": "AFGA's FedAMSGrad server step divides by sqrt(v_hat) (000 Algorithm 1 line 22)",
    "cafga": "CAFGA's FedAMSGrad server step divides by sqrt(v_hat) (000 Algorithm 2)",
    "hafed": "HA-Fed's FedAMSGrad server step divides by sqrt(v_hat) (004 Algorithm 1)",
    "afga-adapted": "the adapted AFGA's FedAMSGrad server step divides by sqrt(v_hat)",
    "cafga-adapted": "the adapted CAFGA's FedAMSGrad server step divides by sqrt(v_hat)",
    "fedau": (
        "FedAU's aggregation weights are estimated online from each client's participation "
        "intervals (Wang and Ji 2023), so a round depends on the participation history, not "
        "only on the state and the current draw"
    ),
}

#: Algorithms whose round is affine (the registry's ``affine`` fact) but which the oracle does
#: not model, and why.
NO_LAYOUT: dict[str, str] = {
    "dsgd": (
        "DSGD has no server and ignores participation: its round X <- W (X - eta G(X)) is "
        "affine but couples clients through the gossip matrix, outside the client-local "
        "structure the exact oracle exploits (its rate is that of one deterministic matrix)"
    ),
}


@dataclass(frozen=True)
class StateLayout:
    """Coordinates z = (u, v_1, ..., v_N) of an affine algorithm's state.

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


def _zeros_like_fill(shape: tuple[int, ...]) -> np.ndarray:
    return np.zeros(shape)


def _server_model_layout(name: str, config: Any, N: int, d: int) -> StateLayout:
    """FedAvg with the ``sgd`` server (McMahan et al. 2017) and FedProx (Li et al. 2020): the
    state the server model depends on is x, plus the server momentum m when beta1 > 0."""
    momentum = float(config.options.get("server_momentum", 0.0))  # FedProx has none

    def encode(st: Any) -> tuple[Array, Array]:
        u = np.concatenate([st.x, st.opt.m], axis=-1) if momentum else st.x
        return u, np.zeros(st.X.shape[:2] + (0,))

    def decode(tpl: Any, u: Array, V: Array, fill: Callable = _zeros_like_fill) -> Any:
        S = u.shape[0]
        m = u[:, d:] if momentum else fill((S, d))
        opt = tpl.opt._replace(m=m, v=fill((S, d)), v_hat=fill((S, d)))
        return tpl._replace(x=u[:, :d], X=fill((S, N, d)), opt=opt)

    du = 2 * d if momentum else d
    words = "u = (x, server momentum m)" if momentum else "u = x"
    return StateLayout(name, du, 0, d, encode, decode, words)


def _focus_layout(name: str, config: Any, N: int, d: int) -> StateLayout:
    """FOCUS / SG-FOCUS (003 Algorithm 1): x and every client's stored gradient g_prev_i; the
    tracker y equals sum_i g_prev_i on every reachable state (the tracking property, 003 Sec.
    5.1), so it is recomputed rather than carried."""

    def encode(st: Any) -> tuple[Array, Array]:
        return st.x, st.g_prev

    def decode(tpl: Any, u: Array, V: Array, fill: Callable = _zeros_like_fill) -> Any:
        return tpl._replace(x=u, y=V.sum(axis=1), g_prev=V, X=fill(V.shape))

    return StateLayout(name, d, d, d, encode, decode, "u = x; v_i = g_prev_i (y = sum_i v_i)")


def _scaffold_layout(name: str, config: Any, N: int, d: int) -> StateLayout:
    """SCAFFOLD (Karimireddy et al. 2020, option II): x, the server control variate c and the
    client control variates c_i. c = mean_i c_i on reachable states; clients read c, so it stays
    a coordinate and the conserved direction c - mean_i c_i is removed by the reduction."""

    def encode(st: Any) -> tuple[Array, Array]:
        return np.concatenate([st.x, st.c], axis=-1), st.c_i

    def decode(tpl: Any, u: Array, V: Array, fill: Callable = _zeros_like_fill) -> Any:
        return tpl._replace(x=u[:, :d], c=u[:, d:], c_i=V, X=fill(V.shape))

    return StateLayout(name, 2 * d, d, d, encode, decode, "u = (x, c); v_i = c_i")


def _scaffnew_layout(name: str, config: Any, N: int, d: int) -> StateLayout:
    """Scaffnew (Mishchenko et al. 2022, p = 1/K): a participant's round reads its control
    variate h_i and its last local end point X_i only through h_i - X_i / (eta K) (its update
    h_i <- h_i + (x - X_i) / (eta K)), so that combination is the client coordinate."""
    scale = 1.0 / (config.lr * config.local_steps)

    def encode(st: Any) -> tuple[Array, Array]:
        return st.x, st.h - scale * st.X

    def decode(tpl: Any, u: Array, V: Array, fill: Callable = _zeros_like_fill) -> Any:
        X = fill(V.shape)
        return tpl._replace(x=u, X=X, h=V + scale * X)

    return StateLayout(name, d, d, d, encode, decode, "u = x; v_i = h_i - X_i / (eta K)")


def _mifa_layout(name: str, config: Any, N: int, d: int) -> StateLayout:
    """MIFA (Gu et al. 2021): x and the stored updates U_i; the ``focus-notebook`` variant also
    reads the clients' last local end points X_i (U_i <- x_i - X_i)."""
    notebook = config.option("variant") == "focus-notebook"

    def encode(st: Any) -> tuple[Array, Array]:
        return st.x, (np.concatenate([st.U, st.X], axis=-1) if notebook else st.U)

    def decode(tpl: Any, u: Array, V: Array, fill: Callable = _zeros_like_fill) -> Any:
        if notebook:
            return tpl._replace(x=u, U=V[..., :d], X=V[..., d:])
        return tpl._replace(x=u, U=V, X=fill(V.shape))

    if notebook:
        return StateLayout(name, d, 2 * d, d, encode, decode, "u = x; v_i = (U_i, X_i)")
    return StateLayout(name, d, d, d, encode, decode, "u = x; v_i = U_i")


def _feddyn_layout(name: str, config: Any, N: int, d: int) -> StateLayout:
    """FedDyn (Acar et al. 2021): x and the clients' grad_k; the server state h equals
    mean_k grad_k on reachable states and only the server reads it, so it is recomputed."""

    def encode(st: Any) -> tuple[Array, Array]:
        return st.x, st.grad

    def decode(tpl: Any, u: Array, V: Array, fill: Callable = _zeros_like_fill) -> Any:
        return tpl._replace(x=u, grad=V, h=V.mean(axis=1), X=fill(V.shape))

    return StateLayout(name, d, d, d, encode, decode, "u = x; v_i = grad_i (h = mean_i v_i)")


_LAYOUTS: dict[str, Callable[[str, Any, int, int], StateLayout]] = {
    "fedavg": _server_model_layout,
    "fedprox": _server_model_layout,
    "focus": _focus_layout,
    "sg-focus": _focus_layout,
    "scaffold": _scaffold_layout,
    "scaffnew": _scaffnew_layout,
    "mifa": _mifa_layout,
    "feddyn": _feddyn_layout,
}

#: Algorithms the exact oracle supports (their round is affine on quadratics).
AFFINE_ALGORITHMS: tuple[str, ...] = tuple(_LAYOUTS)


def check_affine(name: str) -> None:
    """Raise :class:`NotAffineError` naming why ``name`` has no exact affine round model.

    Whether a round is affine is the registry's fact (``info(name).affine``); this module adds
    why not (:data:`NOT_AFFINE`) and the coordinates where it is."""
    if not info(name).affine:
        why = NOT_AFFINE.get(name, "its round is not an affine map of its state")
        raise NotAffineError(f"{name}: no exact rate: {why}")
    if name not in _LAYOUTS:
        why = NO_LAYOUT.get(name, "the exact oracle knows no affine state layout for it")
        raise NotAffineError(
            f"{name}: no exact rate: {why} (supported: {', '.join(AFFINE_ALGORITHMS)})"
        )


def state_layout(algorithm: Any, n_clients: int, dim: int) -> StateLayout:
    """The :class:`StateLayout` of a built :class:`~fedtheory.algorithms.Algorithm`.

    Raises
    ------
    NotAffineError
        For an algorithm in :data:`NOT_AFFINE` or without a layout.
    """
    check_affine(algorithm.name)
    return _LAYOUTS[algorithm.name](algorithm.name, algorithm.config, int(n_clients), int(dim))
