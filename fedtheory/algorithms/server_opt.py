"""One server-optimizer transform family: FedAvg's server step, FedAdam, FedYogi, FedAdagrad,
FedAMSGrad (optax style: ``init(x) -> state``, ``update(delta, state) -> (step, state)``).

The server receives a pseudo-gradient Delta (the aggregate of the clients' x_i - x, shape
(S, d)) and moves ``x <- x + step``. With m, v, v_hat starting at zero (Reddi et al. 2020,
"Adaptive Federated Optimization", Algorithm 2; Wang et al. 2022b; 000 eq. (2) and
Algorithm 1 lines 19-22)::

    m     <- beta1 m + (1 - beta1) Delta
    v     <- beta2 v + (1 - beta2) Delta^2                  (adam, amsgrad)
           | v - (1 - beta2) Delta^2 sign(v - Delta^2)       (yogi)
           | v + Delta^2                                     (adagrad)
    v_hat <- max(v_hat, v)  (amsgrad)  |  v  (others)
    step   = eta m / sqrt(v_hat + eps)     (eps "inside": 000 Algorithm 1 line 22)
           | eta m / (sqrt(v_hat) + eps)   (eps "outside": 000 eq. (2), Reddi et al.)

and ``sgd`` (FedAvg, McMahan et al. 2017 with a server step size): step = eta Delta
(with beta1 > 0 it becomes server momentum, FedAvgM). The optimizers differ in the v line only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from fedtheory.backend import get_namespace
from fedtheory.errors import AssumptionError
from fedtheory.validation import check_positive

Array = Any

#: Optimizer names and their default eps placement.
SERVER_OPTIMIZERS = {
    "sgd": None,
    "adam": "outside",
    "yogi": "outside",
    "adagrad": "outside",
    "amsgrad": "inside",
}


class ServerOptState(NamedTuple):
    """Moments of the server optimizer, each (S, d) (zeros for ``sgd`` without momentum)."""

    m: Array
    v: Array
    v_hat: Array


def _v_adam(v: Array, d2: Array, beta2: float, xp: Any) -> Array:
    return beta2 * v + (1.0 - beta2) * d2


def _v_yogi(v: Array, d2: Array, beta2: float, xp: Any) -> Array:
    return v - (1.0 - beta2) * d2 * xp.sign(v - d2)


def _v_adagrad(v: Array, d2: Array, beta2: float, xp: Any) -> Array:
    return v + d2


_V_UPDATES: dict[str, Callable[..., Array]] = {
    "adam": _v_adam,
    "amsgrad": _v_adam,
    "yogi": _v_yogi,
    "adagrad": _v_adagrad,
}


@dataclass(frozen=True)
class ServerOptimizer:
    """A server optimizer: ``init(x) -> state``; ``update(delta, state) -> (step, state)``.

    Attributes
    ----------
    kind : str
        One of :data:`SERVER_OPTIMIZERS`.
    lr : float
        The server step size eta.
    beta1, beta2, eps : float
    eps_placement : {"inside", "outside"} or None
    """

    kind: str = "sgd"
    lr: float = 1.0
    beta1: float = 0.0
    beta2: float = 0.99
    eps: float = 1e-8
    eps_placement: str | None = None

    def init(self, x: Array) -> ServerOptState:
        xp = get_namespace(x)
        z = xp.zeros_like(x)
        return ServerOptState(m=z, v=z.copy(), v_hat=z.copy())

    def update(self, delta: Array, state: ServerOptState) -> tuple[Array, ServerOptState]:
        """The server step for pseudo-gradient ``delta`` (S, d): apply as ``x + step``."""
        xp = get_namespace(delta)
        m = delta if self.beta1 == 0.0 else self.beta1 * state.m + (1.0 - self.beta1) * delta
        if self.kind == "sgd":
            return self.lr * m, ServerOptState(m=m, v=state.v, v_hat=state.v_hat)
        v = _V_UPDATES[self.kind](state.v, delta * delta, self.beta2, xp)
        v_hat = xp.maximum(state.v_hat, v) if self.kind == "amsgrad" else v
        if self.eps_placement == "inside":
            denom = xp.sqrt(v_hat + self.eps)
        else:
            denom = xp.sqrt(v_hat) + self.eps
        return self.lr * m / denom, ServerOptState(m=m, v=v, v_hat=v_hat)


def server_optimizer(
    kind: str = "sgd",
    lr: float = 1.0,
    *,
    beta1: float | None = None,
    beta2: float = 0.99,
    eps: float = 1e-8,
    eps_placement: str | None = None,
) -> ServerOptimizer:
    """Build a server optimizer, validating its constants.

    Parameters
    ----------
    kind : {"sgd", "adam", "yogi", "adagrad", "amsgrad"}
    lr : float
        Server step size eta > 0.
    beta1 : float, optional
        First-moment decay in [0, 1); default 0 for ``sgd`` (plain FedAvg), 0.9 otherwise.
    beta2 : float
        Second-moment decay in [0, 1) (default 0.99, the papers' value).
    eps : float
        Numerical constant > 0 (default 1e-8).
    eps_placement : {"inside", "outside"}, optional
        Default: "inside" for amsgrad (000 Algorithm 1 line 22), "outside" for the others.

    Raises
    ------
    AssumptionError
        Unknown kind, lr <= 0, betas outside [0, 1), eps <= 0, unknown placement.
    """
    if kind not in SERVER_OPTIMIZERS:
        raise AssumptionError(
            f"unknown server optimizer {kind!r}: choose one of {', '.join(SERVER_OPTIMIZERS)}"
        )
    check_positive("the server step size", lr)
    beta1 = (0.0 if kind == "sgd" else 0.9) if beta1 is None else float(beta1)
    for name, b in (("beta1", beta1), ("beta2", beta2)):
        if not 0.0 <= b < 1.0:
            raise AssumptionError(f"{name} must lie in [0, 1), got {b}")
    check_positive("eps", eps)
    placement = eps_placement or SERVER_OPTIMIZERS[kind]
    if placement not in (None, "inside", "outside"):
        raise AssumptionError(f"eps_placement must be 'inside' or 'outside', got {placement!r}")
    return ServerOptimizer(
        kind=kind,
        lr=float(lr),
        beta1=beta1,
        beta2=float(beta2),
        eps=float(eps),
        eps_placement=placement,
    )
