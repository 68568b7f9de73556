"""FedNova, normalized averaging (Wang et al. 2020), written outside fedtheory as a researcher
writes an algorithm of their own (docs/own-algorithm.md).

Client i runs tau_i local gradient steps from the server model x; the numbers of steps differ
between clients (by default tau_i = 1 + (i mod K): the clients run 1, 2, ..., K steps). FedNova
divides each participant's change by its own number of steps and rescales the average by
tau_eff (Wang et al. 2020: local SGD, a_i = (1, ..., 1), ||a_i||_1 = tau_i, data weights
p_i = 1/N)::

    i in S:  x_i <- x;  tau_i steps  x_i <- x_i - eta_l grad f_i(x_i)
    d_i = (x - x_i) / tau_i                          (the normalized update)
    x  <- x - eta tau_eff sum_{i in S} w_i d_i,      tau_eff = (1/N) sum_{i=1..N} tau_i

(w: the participation module's aggregation weights, zero off S). With ``normalized = false``
it is FedAvg with the same heterogeneous steps, x <- x - eta sum_{i in S} w_i (x - x_i), whose
fixed point weighs client i by tau_i: the objective inconsistency FedNova removes.

tau_eff is a constant over all N clients. Computed from the draw instead, tau_eff =
sum_{i in S} w_i tau_i, the weights would enter squared; the round would no longer be linear in
them, and fedtheory's exact oracle refuses that version, naming the property that fails.

    fedtheory rate --algorithm docs/examples/fednova.py:fednova --problem figure4 \\
        --participation uniform -M 4 -K 3 --lr 1.5e-4
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from fedtheory.algorithms import Algorithm, AlgorithmConfig, Option, field_layout, register
from fedtheory.backend import get_namespace
from fedtheory.errors import AssumptionError

REFERENCE = "Wang, Liu, Liang, Joshi and Poor 2020 (FedNova), with local SGD"


class FedNovaState(NamedTuple):
    x: Any  # (S, d) the server model


def client_steps(local_steps: int, n_clients: int, steps: Any = None) -> np.ndarray:
    """tau_i of every client: ``steps`` (each in 1..K), or 1 + (i mod K)."""
    if steps is None:
        return 1 + np.arange(n_clients) % local_steps
    tau = np.asarray(steps)
    if tau.shape != (n_clients,) or not np.all((tau >= 1) & (tau <= local_steps)):
        raise AssumptionError(
            f"fednova option 'steps' needs one number of local steps in 1..K = {local_steps} "
            f"per client ({n_clients}), got {steps!r}"
        )
    return tau.astype(int)


@register(
    "fednova",
    "FedNova, normalized averaging of heterogeneous local steps (Wang et al. 2020)",
    display="FedNova",
    uses=("global_lr",),
    options=(
        Option("steps", None, np.ndarray, "tau_i per client (1 + (i mod K))", nullable=True),
        Option("normalized", True, bool, "normalized averaging (false: FedAvg, same steps)"),
    ),
    affine=True,
    exact_layout=field_layout(server=("x",)),
)
def fednova(config: AlgorithmConfig) -> Algorithm:
    lr, eta, normalized = config.lr, config.global_lr, config.option("normalized")
    if config.n_clients is not None:  # built for a problem: a bad ``steps`` is refused now
        client_steps(config.local_steps, config.n_clients, config.option("steps"))

    def init(problem: Any, x0: Any) -> FedNovaState:
        return FedNovaState(x=x0)

    def round_(state: FedNovaState, problem: Any, draw: Any, rng: Any = None) -> FedNovaState:
        xp = get_namespace(state.x)
        N = problem.n_clients
        tau = client_steps(config.local_steps, N, config.option("steps"))
        X = xp.repeat(state.x[:, None, :], N, axis=1)  # (S, N, d): every client starts at x
        for k in range(int(tau.max())):
            active = xp.asarray((k < tau).astype(X.dtype))[None, :, None]  # still stepping
            X = X - lr * active * problem.grads(X, rng)
        change = state.x[:, None, :] - X  # x - x_i
        if normalized:
            change = change * xp.asarray(tau.mean() / tau, dtype=X.dtype)[None, :, None]
        w = xp.asarray(draw.weights, dtype=X.dtype)  # (S, N), zero off S
        return FedNovaState(x=state.x - eta * xp.einsum("sn,snd->sd", w, change))

    return Algorithm(name="fednova", init=init, round=round_, config=config, reference=REFERENCE)


def per_client_round(
    problem: Any, x: np.ndarray, mask: np.ndarray, weights: np.ndarray, *, lr: float,
    local_steps: int, global_lr: float = 1.0, steps: Any = None, normalized: bool = True,
) -> np.ndarray:  # fmt: skip
    """The same round for one seed, client by client in plain Python, on a quadratic
    f_i = 1/2 x^T H_i x - h_i^T x: the reference the batched round is checked against."""
    tau = client_steps(local_steps, problem.n_clients, steps)
    tau_eff = tau.mean()
    total = np.zeros_like(x)
    for i in range(problem.n_clients):
        if not mask[i]:
            continue
        xi = x.copy()
        for _ in range(tau[i]):
            xi = xi - lr * (problem.H[i] @ xi - problem.h[i])
        total += weights[i] * (tau_eff * (x - xi) / tau[i] if normalized else x - xi)
    return x - global_lr * total
