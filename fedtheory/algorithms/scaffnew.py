"""Scaffnew / ProxSkip with a communication every K local steps.

Mishchenko, Malinovsky, Stich and Richtarik 2022, "ProxSkip: Yes! Local Gradient Steps Provably
Lead to Communication Acceleration! Finally!" (ICML), Algorithm 2 (Scaffnew), with the
communication coin replaced by a fixed period K (p = 1/K), and partial participation as in the
FOCUS authors' Figure 4 notebook. Round r, for i in S_r::

    h_i <- h_i + (x - x_i^prev) / (eta K)      (x_i^prev: i's last local end point)
    x_i <- x;  K steps  x_i <- x_i - eta (g_i(x_i) - h_i)
    x <- x + eta_g sum_i w_i (x_i - x)          (eta_g = 1: the average over S_r)

Under full participation sum_i h_i = 0, so the average of x_i equals Scaffnew's average of
x_i - (eta/p) h_i and the iterates are exactly Scaffnew's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

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

REFERENCE = "Mishchenko et al. 2022, ProxSkip/Scaffnew, Algorithm 2 (p = 1/K)"


class ScaffnewState(NamedTuple):
    x: Array  # (S, d)
    X: Array  # (S, N, d) clients' latest local end points
    h: Array  # (S, N, d) control variates


def _scaffnew_layout(name: str, config: Any, N: int, d: int) -> StateLayout:
    """Scaffnew (Mishchenko et al. 2022, p = 1/K): a participant's round reads its control
    variate h_i and its last local end point X_i only through h_i - X_i / (eta K) (its update
    h_i <- h_i + (x - X_i) / (eta K)), so that combination is the client coordinate."""
    scale = 1.0 / (config.lr * config.local_steps)

    def encode(st: Any) -> tuple[Array, Array]:
        return st.x, st.h - scale * st.X

    def decode(tpl: Any, u: Array, V: Array, fill: Callable = zeros_fill) -> Any:
        X = fill(V.shape)
        return tpl._replace(x=u, X=X, h=V + scale * X)

    return StateLayout(name, d, d, d, encode, decode, "u = x; v_i = h_i - X_i / (eta K)")


@register(
    "scaffnew",
    "Scaffnew/ProxSkip, communication every K steps (Mishchenko et al. 2022)",
    display="Scaffnew",
    uses=("global_lr",),
    affine=True,
    exact_layout=_scaffnew_layout,
)
def build_scaffnew(config: AlgorithmConfig) -> Algorithm:
    K, lr, eta_g = config.local_steps, config.lr, config.global_lr

    def init(problem: Any, x0: Array) -> ScaffnewState:
        xp = get_namespace(x0)
        X = broadcast_clients(x0, problem.n_clients)
        return ScaffnewState(x=x0, X=X, h=xp.zeros_like(X))

    def round_(state: ScaffnewState, problem: Any, draw: Any, rng: Any = None) -> ScaffnewState:
        xp = get_namespace(state.x)
        sel = draw.mask[..., None]
        h = xp.where(sel, state.h + (state.x[:, None, :] - state.X) / (lr * K), state.h)
        X0 = pull(state.X, state.x, draw.mask)
        XK = local_steps(
            problem, X0, K, lr, compute=draw.mask, rng=rng, correction=-h, overwrite=True
        )
        x = state.x + eta_g * aggregate(client_deltas(XK, state.x), draw.weights)
        return ScaffnewState(x=x, X=XK, h=h)

    return Algorithm(
        name="scaffnew",
        init=init,
        round=round_,
        config=config,
        reference=REFERENCE,
        metrics=client_metrics(),
    )
