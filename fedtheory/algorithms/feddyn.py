"""FedDyn: federated learning with dynamic regularization.

Acar, Zhao, Matas, Mattina, Whatmough and Saligrama 2021, "Federated Learning Based on Dynamic
Regularization" (ICLR), Algorithm 1 (a baseline of 000 Section 6). Round t, for k in P_t::

    theta_k = argmin_theta  L_k(theta) - <grad_k, theta> + alpha/2 ||theta - theta^{t-1}||^2
    grad_k <- grad_k - alpha (theta_k - theta^{t-1})          (grad_k starts at 0)
    h <- h - alpha (1/N) sum_{k in P_t} (theta_k - theta^{t-1})
    theta^t = (1/|P_t|) sum_{k in P_t} theta_k - h / alpha

The local problem is solved inexactly by K gradient steps of the shared engine: the gradient of
the local objective is grad L_k(theta) + alpha (theta - theta^{t-1}) - grad_k, i.e. a proximal
term (``prox_mu = alpha``, anchor theta^{t-1}) plus the constant correction ``-grad_k``. The
average over P_t uses the participation module's weights (``mean``: 1/|P_t|, as in the paper).
alpha is ``options['alpha']`` or, when unset, ``--prox-mu`` (default 0.01 when both are unset).
x* is a fixed point for any K (with h = 0 and grad_k = grad L_k(x*)).
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
    client_metrics,
    zeros_fill,
)
from fedtheory.algorithms.local_steps import local_steps
from fedtheory.algorithms.registry import Option, register
from fedtheory.backend import get_namespace
from fedtheory.validation import check_positive

Array = Any

REFERENCE = "Acar et al. 2021, FedDyn, Algorithm 1 (ICLR)"


class FedDynState(NamedTuple):
    x: Array  # (S, d) server model theta^t
    X: Array  # (S, N, d) clients' latest local models
    grad: Array  # (S, N, d) clients' stored grad_k
    h: Array  # (S, d) server state h


def _feddyn_layout(name: str, config: Any, N: int, d: int) -> StateLayout:
    """FedDyn (Acar et al. 2021): x and the clients' grad_k; the server state h equals
    mean_k grad_k on reachable states and only the server reads it, so it is recomputed."""

    def encode(st: Any) -> tuple[Array, Array]:
        return st.x, st.grad

    def decode(tpl: Any, u: Array, V: Array, fill: Callable = zeros_fill) -> Any:
        return tpl._replace(x=u, grad=V, h=V.mean(axis=1), X=fill(V.shape))

    return StateLayout(name, d, d, d, encode, decode, "u = x; v_i = grad_i (h = mean_i v_i)")


@register(
    "feddyn",
    "FedDyn, dynamic regularization, K-step inexact local solve (Acar et al. 2021)",
    display="FedDyn",
    uses=("prox_mu",),
    options=(
        Option(
            "alpha",
            None,
            float,
            "regularization alpha (None: prox_mu if > 0, else 0.01)",
            nullable=True,
            minimum=0.0,
        ),
    ),
    affine=True,
    exact_layout=_feddyn_layout,
)
def build_feddyn(config: AlgorithmConfig) -> Algorithm:
    alpha = config.option("alpha")
    if alpha is None:
        alpha = config.prox_mu if config.prox_mu > 0 else 0.01
    alpha = check_positive("FedDyn's regularization weight alpha", alpha)
    K, lr = config.local_steps, config.lr

    def init(problem: Any, x0: Array) -> FedDynState:
        xp = get_namespace(x0)
        X = broadcast_clients(x0, problem.n_clients)
        return FedDynState(x=x0, X=X, grad=xp.zeros_like(X), h=xp.zeros_like(x0))

    def round_(state: FedDynState, problem: Any, draw: Any, rng: Any = None) -> FedDynState:
        xp = get_namespace(state.x)
        N = state.X.shape[1]
        sel = draw.mask[..., None]
        X0 = broadcast_clients(state.x, N)
        XK = local_steps(
            problem,
            X0,
            K,
            lr,
            compute=draw.mask,
            rng=rng,
            prox_mu=alpha,
            anchor=state.x,
            correction=-state.grad,
        )
        moved = xp.where(sel, XK - state.x[:, None, :], 0.0)
        grad = state.grad - alpha * moved
        h = state.h - alpha * moved.sum(axis=1) / N
        x = aggregate(XK, draw.weights) - h / alpha
        X = xp.where(sel, XK, state.X)
        return FedDynState(x=x, X=X, grad=grad, h=h)

    return Algorithm(
        name="feddyn",
        init=init,
        round=round_,
        config=config,
        reference=REFERENCE,
        metrics=client_metrics(),
    )
