"""SCAFFOLD with control variates, option II.

Karimireddy, Kale, Mohri, Reddi, Stich and Suresh 2020, "SCAFFOLD: Stochastic Controlled
Averaging for Federated Learning" (ICML), Algorithm 1. Round r, for i in S_r::

    y_i <- x;  K steps  y_i <- y_i - eta_l (g_i(y_i) - c_i + c)
    c_i+ <- c_i - c + (x - y_i) / (K eta_l)                      (option II)
    x <- x + eta_g sum_i w_i (y_i - x)       (w: aggregation weights, 1/|S| in the paper)
    c <- c + (1/N) sum_{i in S_r} (c_i+ - c_i);   c_i <- c_i+

The server and control variates start at zero (the FOCUS authors' Figure 4 notebook does too).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from fedtheory.algorithms.base import (
    CLIENT_MODELS_ON_REQUEST,
    Algorithm,
    AlgorithmConfig,
    Participants,
    StateLayout,
    aggregate,
    broadcast_clients,
    client_deltas,
    client_metrics,
    initial_client_models,
    participant_weights,
    pull,
    round_layout,
    seed_sums,
    zeros_fill,
)
from fedtheory.algorithms.local_steps import local_steps, slot_steps, step_maps
from fedtheory.algorithms.registry import register
from fedtheory.backend import get_namespace

Array = Any

REFERENCE = "Karimireddy et al. 2020, SCAFFOLD, Algorithm 1 (option II)"


class ScaffoldState(NamedTuple):
    x: Array  # (S, d) server model
    X: Array | None  # (S, N, d) clients' latest local models (consensus only), or None
    c: Array  # (S, d) server control variate
    c_i: Array  # (S, N, d) client control variates


def _scaffold_layout(name: str, config: Any, N: int, d: int) -> StateLayout:
    """SCAFFOLD (Karimireddy et al. 2020, option II): x, the server control variate c and the
    client control variates c_i. c = mean_i c_i on reachable states; clients read c, so it stays
    a coordinate and the conserved direction c - mean_i c_i is removed by the reduction."""

    def encode(st: Any) -> tuple[Array, Array]:
        return np.concatenate([st.x, st.c], axis=-1), st.c_i

    def decode(tpl: Any, u: Array, V: Array, fill: Callable = zeros_fill) -> Any:
        X = None if tpl.X is None else fill(V.shape)
        return tpl._replace(x=u[:, :d], c=u[:, d:], c_i=V, X=X)

    return StateLayout(name, 2 * d, d, d, encode, decode, "u = (x, c); v_i = c_i")


@register(
    "scaffold",
    "SCAFFOLD, option II control variates (Karimireddy et al. 2020)",
    display="SCAFFOLD",
    uses=("global_lr",),
    server_vectors=2,
    affine=True,
    exact_layout=_scaffold_layout,
)
def build_scaffold(config: AlgorithmConfig) -> Algorithm:
    K, lr, eta_g = config.local_steps, config.lr, config.global_lr

    def init(problem: Any, x0: Array, *, client_models: bool = False) -> ScaffoldState:
        xp = get_namespace(x0)
        N = problem.n_clients
        c_i = xp.zeros((x0.shape[0], N, x0.shape[1]), dtype=x0.dtype)
        X = initial_client_models(x0, N, client_models)
        return ScaffoldState(x=x0, X=X, c=xp.zeros_like(x0), c_i=c_i)

    def round_(
        state: ScaffoldState, problem: Any, draw: Any, rng: Any = None, *, donate: bool = False
    ) -> ScaffoldState:
        exact = rng is None or not getattr(problem, "stochastic", True)
        if exact and not bool(draw.mask.all()):
            lay = round_layout(draw, problem)
            return _participants_round(state, problem, lay, draw, donate)
        xp = get_namespace(state.x)
        N = state.c_i.shape[1]
        # x in every row when the state keeps no X (the rows outside S_r have weight 0)
        X0 = (
            pull(state.X, state.x, draw.mask)
            if state.X is not None
            else broadcast_clients(state.x, N)
        )
        corr = state.c[:, None, :] - state.c_i
        XK = local_steps(
            problem, X0, K, lr, compute=draw.mask, rng=rng, correction=corr, overwrite=True
        )
        dy = client_deltas(XK, state.x)
        delta_c = -state.c[:, None, :] - dy / (K * lr)  # c_i+ - c_i
        sel = draw.mask[..., None]
        delta_c = xp.where(sel, delta_c, 0.0)
        x = state.x + eta_g * aggregate(dy, draw.weights)
        c = state.c + delta_c.sum(axis=1) / N
        X = None if state.X is None else XK
        return ScaffoldState(x=x, X=X, c=c, c_i=state.c_i + delta_c)

    def _participants_round(
        state: ScaffoldState, problem: Any, lay: Participants, draw: Any, donate: bool
    ) -> ScaffoldState:
        """Exact gradients under partial participation: the participants' rows only, in the
        client-major slot layout (the every-client path's arithmetic per row); c_i and the
        client models written back for i in S_r (into the given state's arrays when donated).
        """
        xp = get_namespace(state.x)
        S, N, d = state.c_i.shape
        x_s = state.x[lay.seed]  # (n, N, d): y_i <- x, per slot
        c_s = state.c[lay.seed]
        ci = state.c_i.reshape(S * N, d)[lay.src]
        kmap = step_maps(problem, lr, K, xp, x_s.dtype, tilted=True)
        start = x_s if kmap is not None else x_s.copy()  # the map returns a new array
        Y = slot_steps(problem, start, K, lr, lay, kmap=kmap, correction=c_s - ci)
        # y_i - x and c_i+ - c_i in the slot layout, each with the zero row that the missing
        # participants of ragged rounds read (seed_sums)
        buf = xp.empty((2, lay.n * lay.width + 1, d), dtype=Y.dtype)
        buf[:, -1] = 0
        dy, delta_c = (b[:-1].reshape(Y.shape) for b in buf)
        xp.subtract(Y, x_s, out=dy)
        xp.divide(dy, -(K * lr), out=delta_c)
        delta_c -= c_s  # c_i+ - c_i = -c + (x - y_i) / (K eta_l)
        w = participant_weights(draw.weights, lay, dy.dtype)
        x = state.x + eta_g * seed_sums(buf[0], lay, w)
        c = state.c + seed_sums(buf[1], lay) / N
        c_i = state.c_i if donate else state.c_i.copy()
        ci += delta_c  # c_i+ (ci is this round's gathered copy)
        c_i.reshape(S * N, d)[lay.rows] = ci.reshape(-1, d)[lay.slots]
        X = state.X
        if X is not None:  # the clients' models, for the consensus metric
            X = X if donate else X.copy()
            X.reshape(S * N, d)[lay.rows] = Y.reshape(-1, d)[lay.slots]
        return ScaffoldState(x=x, X=X, c=c, c_i=c_i)

    return Algorithm(
        name="scaffold",
        init=init,
        round=round_,
        config=config,
        reference=REFERENCE,
        metrics=client_metrics(),
        donates=True,
        uses_layout=True,
        state_for=CLIENT_MODELS_ON_REQUEST,
    )
