"""FOCUS and SG-FOCUS: Federated Optimization with exact Convergence via pUsh-pull Strategy.

Ying, Li and Yang, "Exact and Linear Convergence for Federated Learning under Arbitrary Client
Participation is Attainable" (NeurIPS 2025; seed 003, Algorithm 1), stated as in the authors'
own code for Figure 4 (docs/algorithms.md section 4). State: server model x, server tracker y, every
client's stored gradient g_prev_i (all zero at the start). Round r, for i in S_r::

    x_i <- x;  y_i <- 0
    for k = 0..K-1:
        if k > 0:  x_i <- x_i - eta y_i
        g <- grad f_i(x_i)                 (stochastic for SG-FOCUS)
        y_i <- y_i + g - g_prev_i;  g_prev_i <- g
    y <- y + y_i                           (a sum over S_r: the column-stochastic "push")
    x <- x - eta y                         (the same eta as locally)

By telescoping, y = sum_{i=1..N} g_prev_i after every round (the tracking property, claim C3):
FOCUS turns arbitrary participation into arbitrary gradient delay (003 Section 5.1).

Within a round the local sum telescopes too: after step k, y_i = g_k - g_prev_i(r), with
g_prev_i(r) the client's stored gradient at the start of round r. The code computes y_i that way
(one subtraction per step instead of accumulating differences: one pass over the (S, N, d)
arrays less per step, and fewer roundings); it equals the accumulated form in exact arithmetic
and differs from it in the last bits only.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from fedtheory.algorithms.base import (
    Algorithm,
    AlgorithmConfig,
    broadcast_clients,
    client_metrics,
    client_sum,
    pull,
    spread,
)
from fedtheory.algorithms.registry import register
from fedtheory.backend import get_namespace

Array = Any

REFERENCE = "Ying, Li and Yang 2025 (seed 003), Algorithm 1, as in the authors' Figure 4 notebook"


class FocusState(NamedTuple):
    x: Array  # (S, d) server model
    y: Array  # (S, d) server tracker: sum_i g_prev_i
    g_prev: Array  # (S, N, d) each client's latest stored gradient
    X: Array  # (S, N, d) each client's latest local model


def tracking_residual(state: FocusState) -> Array:
    """||y - sum_i g_prev_i|| per seed (zero up to rounding: claim C3)."""
    xp = get_namespace(state.y)
    return xp.linalg.norm(state.y - client_sum(state.g_prev), axis=-1)


def build_focus(config: AlgorithmConfig, stochastic: bool = False) -> Algorithm:
    """FOCUS (exact gradients) or SG-FOCUS (``stochastic=True``: the problem's stochastic
    gradients, drawn from the run's per-seed streams)."""
    K, eta = config.local_steps, config.lr

    def init(problem: Any, x0: Array) -> FocusState:
        xp = get_namespace(x0)
        X = broadcast_clients(x0, problem.n_clients)
        return FocusState(x=x0, y=xp.zeros_like(x0), g_prev=xp.zeros_like(X), X=X)

    def round_(state: FocusState, problem: Any, draw: Any, rng: Any = None) -> FocusState:
        xp = get_namespace(state.x)
        full = bool(draw.mask.all())  # full participation: skip the masks (same bits)
        X = pull(state.X, state.x, draw.mask)  # a new array, updated in place below
        m = None if full else spread(xp.asarray(draw.mask, dtype=X.dtype), X.shape[2])
        y_loc = xp.empty_like(X)
        tmp = xp.empty_like(X)
        for k in range(K):
            if k > 0:
                # y_loc is zero off S_r, so x_i moves for i in S_r only (m * y_loc == y_loc).
                X -= xp.multiply(y_loc, eta, out=tmp)
            g = problem.grads(X, rng if stochastic else None)
            # y_i = sum_{j <= k} (g_j - g_{j-1}) with g_{-1} = g_prev_i telescopes to
            # g_k - g_prev_i: one subtraction, not 2k + 1 roundings, and one pass less per step.
            xp.subtract(g, state.g_prev, out=y_loc)
            if m is not None:
                y_loc *= m
        if full:
            g_prev = g
        else:  # g_prev_i <- g_{K-1} for i in S_r (a copy: the state's array is not touched)
            g_prev = state.g_prev.copy()
            xp.copyto(g_prev, g, where=spread(xp.asarray(draw.mask, dtype=bool), X.shape[2]))
        y = state.y + client_sum(y_loc)
        return FocusState(x=state.x - eta * y, y=y, g_prev=g_prev, X=X)

    name = "sg-focus" if stochastic else "focus"
    return Algorithm(
        name=name,
        init=init,
        round=round_,
        config=config,
        reference=REFERENCE,
        metrics=client_metrics(tracking=lambda state, problem: tracking_residual(state)),
    )


@register(
    "focus",
    "FOCUS, push-pull with exact gradients (003 Algorithm 1)",
    display="FOCUS",
    affine=True,
)
def _focus(config: AlgorithmConfig) -> Algorithm:
    return build_focus(config, stochastic=False)


@register(
    "sg-focus",
    "SG-FOCUS, FOCUS with the problem's stochastic gradients (003 Sec. 5)",
    display="SG-FOCUS",
    affine=True,
)
def _sg_focus(config: AlgorithmConfig) -> Algorithm:
    return build_focus(config, stochastic=True)
