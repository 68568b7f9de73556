"""MIFA: Memory-augmented Impatient Federated Averaging.

Gu, Huang, Zhang and Zhang 2021, "Fast Federated Learning in the Presence of Arbitrary Device
Unavailability" (NeurIPS), Algorithm 1. The server stores every client's latest update U_i
(zero until its first participation); clients in S_r refresh theirs, and the server applies the
average over all N::

    i in S_r:  x_i <- x;  K local steps;  U_i <- x_i - x
    x <- x + eta_g (1/N) sum_{i=1..N} U_i

``variant="focus-notebook"`` stores U_i <- x_i^new - x_i^prev (the difference between the
client's consecutive local end points) as the FOCUS authors' Figure 4 notebook does; under full
participation both reduce to FedAvg.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from fedtheory.algorithms.base import (
    Algorithm,
    AlgorithmConfig,
    StateLayout,
    broadcast_clients,
    client_metrics,
    pull,
    zeros_fill,
)
from fedtheory.algorithms.local_steps import local_steps
from fedtheory.algorithms.registry import Option, register
from fedtheory.backend import get_namespace

Array = Any

REFERENCE = "Gu et al. 2021, MIFA, Algorithm 1"


class MifaState(NamedTuple):
    x: Array  # (S, d)
    X: Array  # (S, N, d) clients' latest local end points
    U: Array  # (S, N, d) stored updates


def _mifa_layout(name: str, config: Any, N: int, d: int) -> StateLayout:
    """MIFA (Gu et al. 2021): x and the stored updates U_i; the ``focus-notebook`` variant also
    reads the clients' last local end points X_i (U_i <- x_i - X_i)."""
    notebook = config.option("variant") == "focus-notebook"

    def encode(st: Any) -> tuple[Array, Array]:
        return st.x, (np.concatenate([st.U, st.X], axis=-1) if notebook else st.U)

    def decode(tpl: Any, u: Array, V: Array, fill: Callable = zeros_fill) -> Any:
        if notebook:
            return tpl._replace(x=u, U=V[..., :d], X=V[..., d:])
        return tpl._replace(x=u, U=V, X=fill(V.shape))

    if notebook:
        return StateLayout(name, d, 2 * d, d, encode, decode, "u = x; v_i = (U_i, X_i)")
    return StateLayout(name, d, d, d, encode, decode, "u = x; v_i = U_i")


@register(
    "mifa",
    "MIFA, server averages every client's latest stored update (Gu et al. 2021)",
    display="MIFA",
    uses=("global_lr",),
    options=(
        Option(
            "variant",
            "gu2021",
            str,
            "stored update: x_i - x (Gu et al.) or the notebook's",
            choices=("gu2021", "focus-notebook"),
        ),
    ),
    affine=True,
    exact_layout=_mifa_layout,
)
def build_mifa(config: AlgorithmConfig) -> Algorithm:
    K, lr, eta_g = config.local_steps, config.lr, config.global_lr
    variant = config.option("variant")

    def init(problem: Any, x0: Array) -> MifaState:
        xp = get_namespace(x0)
        X = broadcast_clients(x0, problem.n_clients)
        return MifaState(x=x0, X=X, U=xp.zeros_like(X))

    def round_(state: MifaState, problem: Any, draw: Any, rng: Any = None) -> MifaState:
        xp = get_namespace(state.x)
        X0 = pull(state.X, state.x, draw.mask)
        XK = local_steps(problem, X0, K, lr, compute=draw.mask, rng=rng, overwrite=True)
        base = state.x[:, None, :] if variant == "gu2021" else state.X
        U = xp.where(draw.mask[..., None], XK - base, state.U)
        x = state.x + eta_g * U.mean(axis=1)
        return MifaState(x=x, X=XK, U=U)

    return Algorithm(
        name="mifa",
        init=init,
        round=round_,
        config=config,
        reference=REFERENCE,
        metrics=client_metrics(),
    )
