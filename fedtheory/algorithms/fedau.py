"""FedAU: FedAvg with aggregation weights estimated online from participation intervals.

Wang and Ji 2023, "A Lightweight Method for Tackling Unknown Participation Statistics in
Federated Averaging" (arXiv:2306.03401), Algorithms 1 and 2. Every client i keeps a counter
R_i of rounds since its last participation (cut off at ``cutoff``) and the running mean omega_i
of its observed intervals, an estimate of 1/p_i. Each round, for every client::

    R_i <- R_i + 1
    if i in S_r or R_i = cutoff:
        omega_i <- R_i                               if M_i = 0
                   (M_i omega_i + R_i) / (M_i + 1)   otherwise
        M_i <- M_i + 1;  R_i <- 0

and the server takes ``x <- x + eta_g / N sum_{i in S_r} omega_i (x_i - x)`` (Algorithm 1,
``normalize="clients"``). The FOCUS authors' Figure 4 notebook divides by
``sum_{i in S_r} omega_i`` instead, with cutoff 10 (``normalize="weights"``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from fedtheory.algorithms.base import (
    Algorithm,
    AlgorithmConfig,
    aggregate,
    broadcast_clients,
    client_deltas,
    client_metrics,
    pull,
)
from fedtheory.algorithms.local_steps import local_steps
from fedtheory.algorithms.registry import Option, register
from fedtheory.backend import get_namespace

Array = Any

REFERENCE = "Wang and Ji 2023, FedAU (arXiv:2306.03401), Algorithms 1-2"


class FedAUState(NamedTuple):
    x: Array  # (S, d)
    X: Array  # (S, N, d)
    omega: Array  # (S, N) estimated aggregation weights (start at 1)
    count: Array  # (S, N) M_i: number of intervals observed
    interval: Array  # (S, N) R_i: rounds since the last observed interval ended


@register(
    "fedau",
    "FedAU, weights from online participation-interval estimates (Wang & Ji 2023)",
    display="FedAU",
    uses=("global_lr",),
    options=(
        Option("cutoff", 10, int, "interval cutoff (rounds)", minimum=1),
        Option(
            "normalize",
            "clients",
            str,
            "divide by N (Alg. 1) or by the sum of weights",
            choices=("clients", "weights"),
        ),
    ),
    not_exact=(
        "FedAU's aggregation weights are estimated online from each client's participation "
        "intervals (Wang and Ji 2023), so a round depends on the participation history, not "
        "only on the state and the current draw"
    ),
)
def build_fedau(config: AlgorithmConfig) -> Algorithm:
    K, lr, eta_g = config.local_steps, config.lr, config.global_lr
    cutoff, normalize = config.option("cutoff"), config.option("normalize")

    def init(problem: Any, x0: Array) -> FedAUState:
        xp = get_namespace(x0)
        S, N = x0.shape[0], problem.n_clients
        z = xp.zeros((S, N), dtype=x0.dtype)
        return FedAUState(
            x=x0, X=broadcast_clients(x0, N), omega=z + 1.0, count=z.copy(), interval=z.copy()
        )

    def round_(state: FedAUState, problem: Any, draw: Any, rng: Any = None) -> FedAUState:
        xp = get_namespace(state.x)
        R = state.interval + 1.0
        upd = draw.mask | (R >= cutoff)
        new = xp.where(state.count == 0, R, (state.count * state.omega + R) / (state.count + 1))
        omega = xp.where(upd, new, state.omega)
        count = state.count + upd
        interval = xp.where(upd, 0.0, R)
        X0 = pull(state.X, state.x, draw.mask)
        XK = local_steps(problem, X0, K, lr, compute=draw.mask, rng=rng, overwrite=True)
        w = xp.where(draw.mask, omega, 0.0)
        if normalize == "clients":
            w = w / state.X.shape[1]
        else:
            w = w / w.sum(axis=1, keepdims=True)
        x = state.x + eta_g * aggregate(client_deltas(XK, state.x), w)
        return FedAUState(x=x, X=XK, omega=omega, count=count, interval=interval)

    return Algorithm(
        name="fedau",
        init=init,
        round=round_,
        config=config,
        reference=REFERENCE,
        metrics=client_metrics(),
    )
