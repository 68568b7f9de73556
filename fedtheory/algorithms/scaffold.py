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
    Algorithm,
    AlgorithmConfig,
    StateLayout,
    aggregate,
    broadcast_clients,
    client_deltas,
    client_metrics,
    pull,
    zeros_fill,
)
from fedtheory.algorithms.local_steps import local_steps
from fedtheory.algorithms.registry import register
from fedtheory.backend import get_namespace

Array = Any

REFERENCE = "Karimireddy et al. 2020, SCAFFOLD, Algorithm 1 (option II)"


class ScaffoldState(NamedTuple):
    x: Array  # (S, d) server model
    X: Array  # (S, N, d) clients' latest local models
    c: Array  # (S, d) server control variate
    c_i: Array  # (S, N, d) client control variates


def _scaffold_layout(name: str, config: Any, N: int, d: int) -> StateLayout:
    """SCAFFOLD (Karimireddy et al. 2020, option II): x, the server control variate c and the
    client control variates c_i. c = mean_i c_i on reachable states; clients read c, so it stays
    a coordinate and the conserved direction c - mean_i c_i is removed by the reduction."""

    def encode(st: Any) -> tuple[Array, Array]:
        return np.concatenate([st.x, st.c], axis=-1), st.c_i

    def decode(tpl: Any, u: Array, V: Array, fill: Callable = zeros_fill) -> Any:
        return tpl._replace(x=u[:, :d], c=u[:, d:], c_i=V, X=fill(V.shape))

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

    def init(problem: Any, x0: Array) -> ScaffoldState:
        xp = get_namespace(x0)
        X = broadcast_clients(x0, problem.n_clients)
        return ScaffoldState(x=x0, X=X, c=xp.zeros_like(x0), c_i=xp.zeros_like(X))

    def round_(state: ScaffoldState, problem: Any, draw: Any, rng: Any = None) -> ScaffoldState:
        xp = get_namespace(state.x)
        N = state.X.shape[1]
        X0 = pull(state.X, state.x, draw.mask)
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
        return ScaffoldState(x=x, X=XK, c=c, c_i=state.c_i + delta_c)

    return Algorithm(
        name="scaffold",
        init=init,
        round=round_,
        config=config,
        reference=REFERENCE,
        metrics=client_metrics(),
    )
