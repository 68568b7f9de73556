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

from typing import Any, NamedTuple

from fedtheory.algorithms.base import (
    Algorithm,
    AlgorithmConfig,
    broadcast_clients,
    client_metrics,
    pull,
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
