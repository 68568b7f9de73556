"""FedAvg with server momentum (FedAvgM, Hsu et al. 2019), written outside fedtheory as a
researcher writes an algorithm of their own (docs/own-algorithm.md).

The server keeps a velocity v and moves by it (Polyak's heavy ball on the clients' average
change)::

    i in S:  x_i <- x;  K steps  x_i <- x_i - eta_l grad f_i(x_i)
    Delta = sum_{i in S} w_i (x_i - x)
    v <- beta v + Delta
    x <- x + eta v

(w: the participation module's aggregation weights, zero off S). fedtheory's ``fedavg`` with
``--option server_momentum=beta`` keeps the average form m <- beta m + (1 - beta) Delta,
x <- x + eta' m: the same iterates for eta' = eta / (1 - beta) (m = (1 - beta) v).

    fedtheory rate --algorithm docs/examples/server_momentum.py:fedavgm --problem figure4 \\
        --participation full -K 3 --lr 6e-4 --global-lr 0.1 --option server_momentum=0.9
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from fedtheory.algorithms import Algorithm, AlgorithmConfig, Option, field_layout, register
from fedtheory.backend import get_namespace

REFERENCE = "Hsu, Qi and Brown 2019 (FedAvgM); Polyak 1964 (heavy ball)"


class FedAvgMState(NamedTuple):
    x: Any  # (S, d) the server model
    v: Any  # (S, d) the server's velocity


@register(
    "fedavgm",
    "FedAvg with server momentum, v <- beta v + Delta, x <- x + eta v (Hsu et al. 2019)",
    display="FedAvgM",
    uses=("global_lr",),
    options=(Option("server_momentum", 0.9, float, "the server's momentum beta", minimum=0.0),),
    affine=True,
    exact_layout=field_layout(server=("x", "v")),
)
def fedavgm(config: AlgorithmConfig) -> Algorithm:
    K, lr, eta = config.local_steps, config.lr, config.global_lr
    beta = config.option("server_momentum")

    def init(problem: Any, x0: Any) -> FedAvgMState:
        return FedAvgMState(x=x0, v=get_namespace(x0).zeros_like(x0))

    def round_(state: FedAvgMState, problem: Any, draw: Any, rng: Any = None) -> FedAvgMState:
        xp = get_namespace(state.x)
        X = xp.repeat(state.x[:, None, :], problem.n_clients, axis=1)  # every client starts at x
        for _ in range(K):
            X = X - lr * problem.grads(X, rng)
        w = xp.asarray(draw.weights, dtype=X.dtype)  # (S, N), zero off S
        delta = xp.einsum("sn,snd->sd", w, X - state.x[:, None, :])
        v = beta * state.v + delta
        return FedAvgMState(x=state.x + eta * v, v=v)

    return Algorithm(name="fedavgm", init=init, round=round_, config=config, reference=REFERENCE)


def per_client_round(
    problem: Any, x: np.ndarray, v: np.ndarray, mask: np.ndarray, weights: np.ndarray, *,
    lr: float, local_steps: int, global_lr: float = 1.0, server_momentum: float = 0.9,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """The same round for one seed, client by client in plain Python, on a quadratic
    f_i = 1/2 x^T H_i x - h_i^T x: the reference the batched round is checked against."""
    delta = np.zeros_like(x)
    for i in range(problem.n_clients):
        if not mask[i]:
            continue
        xi = x.copy()
        for _ in range(local_steps):
            xi = xi - lr * (problem.H[i] @ xi - problem.h[i])
        delta += weights[i] * (xi - x)
    v = server_momentum * v + delta
    return x + global_lr * v, v
