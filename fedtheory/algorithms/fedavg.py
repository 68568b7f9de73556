"""FedAvg / local SGD with a pluggable server optimizer.

McMahan et al. 2017, "Communication-Efficient Learning of Deep Networks from Decentralized Data"
(Algorithm 1); with a server step size and adaptive server optimizers as in Reddi et al. 2020,
"Adaptive Federated Optimization" (Algorithm 1); docs/algorithms.md section 4.

Round r (for every seed at once)::

    i in S_r:  x_i <- x;  K steps x_i <- x_i - eta_l g_i(x_i)
    Delta = sum_i w_i (x_i - x)         (w: the participation module's aggregation weights)
    x <- x + server_step(Delta)         (eta * Delta for the plain ``sgd`` server)

With ``global_lr = 1`` and the ``mean`` rule, x_{r+1} is the plain average of the participants'
models, as in the FOCUS authors' notebook. Clients outside S_r keep their last local model
(``X``) when the state carries them (``init(..., client_models=True)``, which the runner asks for
when the consensus error is recorded); otherwise the round's client rows live in a scratch
array that only the participants' rows of are written and read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from fedtheory.algorithms.base import (
    CLIENT_MODELS_ON_REQUEST,
    Algorithm,
    AlgorithmConfig,
    StateLayout,
    aggregate_deltas,
    client_metrics,
    initial_client_models,
    round_layout,
    zeros_fill,
)
from fedtheory.algorithms.local_steps import local_steps
from fedtheory.algorithms.registry import Option, register
from fedtheory.algorithms.server_opt import ServerOptState, server_optimizer
from fedtheory.backend import get_namespace

Array = Any

REFERENCE = "McMahan et al. 2017 (Algorithm 1); Reddi et al. 2020 (server optimizers)"


class FedAvgState(NamedTuple):
    x: Array  # (S, d) server model
    X: Array | None  # (S, N, d) every client's latest local model (consensus only), or None
    opt: ServerOptState


def build_fedavg(
    config: AlgorithmConfig,
    server: str = "sgd",
    name: str = "fedavg",
    prox_mu: float = 0.0,
    momentum: float = 0.0,
) -> Algorithm:
    """FedAvg with server optimizer ``server`` (``sgd``, ``adam``, ``yogi``, ``adagrad``,
    ``amsgrad``; see :mod:`fedtheory.algorithms.server_opt`), an optional proximal term
    ``prox_mu / 2 ||x_i - x||^2`` in the local objective (FedProx) and, for ``sgd``, server
    momentum ``momentum`` (FedAvgM); the adaptive servers take beta1 from ``config``."""
    opt = server_optimizer(
        server,
        config.global_lr,
        beta1=momentum if server == "sgd" else config.beta1,
        beta2=config.beta2,
        eps=config.eps,
        eps_placement=config.eps_placement,
    )
    K, lr = config.local_steps, config.lr

    def init(problem: Any, x0: Array, *, client_models: bool = False) -> FedAvgState:
        X = initial_client_models(x0, problem.n_clients, client_models)
        return FedAvgState(x=x0, X=X, opt=opt.init(x0))

    def round_(
        state: FedAvgState, problem: Any, draw: Any, rng: Any = None, *, donate: bool = False
    ) -> FedAvgState:
        # Partial participation: only the participants' rows are pulled, stepped and
        # aggregated (with ``donate``, in the given state's X: no copy of every client's row;
        # without X in the state, in a scratch array whose other rows are never read).
        lay = None if bool(draw.mask.all()) else round_layout(draw, problem)
        X, own = state.X, donate
        if X is None:
            xp = get_namespace(state.x)
            S, d = state.x.shape
            X, own = xp.empty((S, problem.n_clients, d), dtype=state.x.dtype), True
        XK = local_steps(
            problem,
            X,
            K,
            lr,
            compute=draw.mask,
            rng=rng,
            prox_mu=prox_mu,
            anchor=state.x,
            overwrite=own,
            layout=lay,
            start=state.x,
        )
        delta = aggregate_deltas(XK, state.x, draw.weights, draw.mask, lay)
        step, opt_state = opt.update(delta, state.opt)
        return FedAvgState(x=state.x + step, X=None if state.X is None else XK, opt=opt_state)

    return Algorithm(
        name=name,
        init=init,
        round=round_,
        config=config,
        reference=REFERENCE,
        metrics=client_metrics(),
        donates=True,
        uses_layout=True,
        state_for=CLIENT_MODELS_ON_REQUEST,
    )


def server_model_layout(name: str, config: Any, N: int, d: int) -> StateLayout:
    """FedAvg with the ``sgd`` server (McMahan et al. 2017) and FedProx (Li et al. 2020): the
    state the server model depends on is x, plus the server momentum m when beta1 > 0."""
    momentum = float(config.options.get("server_momentum", 0.0))  # FedProx has none

    def encode(st: Any) -> tuple[Array, Array]:
        u = np.concatenate([st.x, st.opt.m], axis=-1) if momentum else st.x
        return u, np.zeros((st.x.shape[0], N, 0))

    def decode(tpl: Any, u: Array, V: Array, fill: Callable = zeros_fill) -> Any:
        S = u.shape[0]
        m = u[:, d:] if momentum else fill((S, d))
        opt = tpl.opt._replace(m=m, v=fill((S, d)), v_hat=fill((S, d)))
        X = None if tpl.X is None else fill((S, N, d))
        return tpl._replace(x=u[:, :d], X=X, opt=opt)

    du = 2 * d if momentum else d
    words = "u = (x, server momentum m)" if momentum else "u = x"
    return StateLayout(name, du, 0, d, encode, decode, words)


@register(
    "fedavg",
    "FedAvg / local SGD, x <- x + eta * aggregate(x_i - x) (McMahan et al. 2017)",
    display="FedAvg",
    uses=("global_lr",),
    options=(
        Option(
            "server_momentum", 0.0, float, "server momentum beta (FedAvgM; 0: none)", minimum=0.0
        ),
    ),
    affine=True,
    exact_layout=server_model_layout,
    stated_rate=(
        "not stated: 003 Theorem 2 bounds the neighbourhood by drift, step-size and "
        "non-uniform-sampling terms whose formula is missing from the available text "
        "(docs/stated-bounds.md)"
    ),
)
def _fedavg(config: AlgorithmConfig) -> Algorithm:
    return build_fedavg(config, momentum=config.option("server_momentum"))
