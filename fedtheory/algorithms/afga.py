"""AFGA and communication-adapted AFGA: adaptive federated learning with local gossip averaging.

"On the Data Heterogeneity in Adaptive Federated Learning" (TMLR 08/2024; seeds 000/001),
Algorithm 1, and Section 5 footnote 4 for the communication-adapted variant. Round r, for every
seed at once (algorithms.md Section 4)::

    S_r sampled (M clients) for collecting updates                       (Alg. 1 line 3)
    every client starts from x_r (S_r broadcast it by local comm.)        (line 4)
    for t = 0..K-1:
        S_{r,t} re-sampled (M clients) for gradient computation           (line 6)
        i in S_{r,t}: x_i' = x_i - eta_l g_i;  others: x_i' = x_i           (lines 8-13)
        X <- W X'   (all N clients gossip)                                (line 14)
    Delta = (1/|S_r|) sum_{i in S_r} (x_i - x_r)                          (lines 17-18)
    FedAMSGrad server step (eps inside the root by default)               (lines 19-22)

Every piece is a configuration of the shared engine: :func:`~fedtheory.algorithms.local_steps.
local_steps` (``compute`` = the re-sampled masks ``draw.step_masks`` drawn by the runner from
the same participation model, ``mix`` = W) and :func:`~fedtheory.algorithms.server_opt.
server_optimizer` (``amsgrad``). With ``--participation full`` every S_{r,t} is all N clients,
so AFGA is deterministic on a deterministic problem. With re-sampling off (S_{r,t} = S_r,
option ``resample=False``) and W = I it is FedAMSGrad exactly (000 Sec. 3.2; claim A1).

Communication-adapted AFGA (``afga-adapted``): only the clients of S_r are online; they start
from x_r, compute at every local step and gossip over a ring formed on S_r alone
(:func:`~fedtheory.algorithms.mixing.selected_ring`, one matrix per seed).

Options (``AlgorithmConfig.options``): ``resample`` (default True), ``mixing`` (an explicit
(N, N) matrix instead of ``topology``), ``graph_seed`` (seed of random topologies, default 0),
``server`` (the server optimizer, default ``amsgrad``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from fedtheory.algorithms.base import (
    Algorithm,
    AlgorithmConfig,
    aggregate,
    broadcast_clients,
    client_metrics,
    pull,
)
from fedtheory.algorithms.local_steps import gossip, local_steps
from fedtheory.algorithms.mixing import mixing_matrix, selected_ring
from fedtheory.algorithms.registry import register
from fedtheory.algorithms.server_opt import ServerOptState, server_optimizer
from fedtheory.backend import get_namespace
from fedtheory.errors import AssumptionError

Array = Any

REFERENCE = "000/001 (TMLR 2024) Algorithm 1 (AFGA); Wang et al. 2022b (FedAMSGrad server)"
REFERENCE_ADAPTED = "000/001 (TMLR 2024) Section 5, footnote 4 (communication-adapted AFGA)"


class GossipState(NamedTuple):
    x: Array  # (S, d) server model
    X: Array  # (S, N, d) every client's latest local model
    opt: ServerOptState


def make_server(config: AlgorithmConfig, default: str = "amsgrad") -> Any:
    """The FedAMSGrad server step of 000 Algorithm 1 lines 19-22 (or ``options['server']``)."""
    return server_optimizer(
        config.option("server", default),
        config.global_lr,
        beta1=config.beta1,
        beta2=config.beta2,
        eps=config.eps,
        eps_placement=config.eps_placement,
    )


def global_mixing(config: AlgorithmConfig, n: int) -> np.ndarray:
    """The (N, N) gossip matrix: ``options['mixing']`` if given, else ``config.topology``
    (default ring, the papers' default topology)."""
    W = config.option("mixing")
    if W is not None:
        from fedtheory.graphs.validate import check_mixing_matrix  # noqa: PLC0415

        W = np.asarray(check_mixing_matrix(W), dtype=np.float64)
        if W.shape != (n, n):
            raise AssumptionError(
                f"the mixing matrix must be ({n}, {n}) for N = {n}, got {W.shape}"
            )
        return W
    return mixing_matrix(config.topology or "ring", n, seed=int(config.option("graph_seed", 0)))


def build_gossip_adaptive(
    name: str,
    config: AlgorithmConfig,
    *,
    mixing: Callable[[int], Any],
    compute: str,
    weights: Callable[[Any, Any], Array] | None = None,
    reference: str = REFERENCE,
) -> Algorithm:
    """The shared round of AFGA, CAFGA and HA-Fed: broadcast x_r, K engine steps with gossip,
    Delta over the collecting set, adaptive server step.

    Parameters
    ----------
    name : str
    config : AlgorithmConfig
    mixing : callable ``N -> mix``
        The engine's ``mix`` argument (an (N, N) matrix or a callable ``(X, t) -> X``), built
        once per problem size N.
    compute : {"resampled", "round", "all"}
        Who computes at local step t: the re-sampled S_{r,t} (``draw.step_masks``), the round's
        S_r (re-sampling off), or every client (HA-Fed).
    weights : callable ``(draw, xp_array) -> (S, N)``, optional
        Aggregation weights of Delta; default ``draw.weights`` (the participation module's rule;
        1/|S_r| for ``mean``).
    reference : str
    """
    if compute not in ("resampled", "round", "all"):
        raise AssumptionError(f"compute must be 'resampled', 'round' or 'all', got {compute!r}")
    opt = make_server(config)
    K, lr = config.local_steps, config.lr
    cache: dict[int, Any] = {}

    def mix_for(n: int) -> Any:
        if n not in cache:
            cache[n] = mixing(n)
        return cache[n]

    if config.n_clients is not None:
        mix_for(int(config.n_clients))  # build (and validate) W now, not in the first round

    def init(problem: Any, x0: Array) -> GossipState:
        mix_for(int(problem.n_clients))
        return GossipState(x=x0, X=broadcast_clients(x0, problem.n_clients), opt=opt.init(x0))

    def round_(state: GossipState, problem: Any, draw: Any, rng: Any = None) -> GossipState:
        N = state.X.shape[1]
        X0 = broadcast_clients(state.x, N)  # 000 Alg. 1 line 4: every client starts at x_r
        if compute == "resampled":
            if draw.step_masks is None:
                raise AssumptionError(
                    f"{name} re-samples who computes at every local step: the round draw needs "
                    "step_masks (S, K, N) (the runner draws them from the participation model)"
                )
            who = draw.step_masks
        else:
            who = draw.mask if compute == "round" else None
        XK = local_steps(problem, X0, K, lr, compute=who, rng=rng, mix=mix_for(N))
        w = draw.weights if weights is None else weights(draw, state.x)
        delta = aggregate(XK - state.x[:, None, :], w)
        step, opt_state = opt.update(delta, state.opt)
        return GossipState(x=state.x + step, X=XK, opt=opt_state)

    return Algorithm(
        name=name,
        init=init,
        round=round_,
        config=config,
        needs_step_masks=compute == "resampled",
        reference=reference,
        metrics=client_metrics(),
    )


@register("afga", "AFGA: re-sampled local SGD + gossip X <- W X, FedAMSGrad server (000 Alg. 1)")
def build_afga(config: AlgorithmConfig) -> Algorithm:
    """AFGA (000 Algorithm 1). ``options['resample']=False`` sets S_{r,t} = S_r."""
    resample = bool(config.option("resample", True))

    return build_gossip_adaptive(
        "afga",
        config,
        mixing=lambda n: gossip(global_mixing(config, n)),
        compute="resampled" if resample else "round",
    )


@register(
    "afga-adapted",
    "communication-adapted AFGA: only S_r online, gossip on a ring over S_r (000 Sec. 5, fn. 4)",
)
def build_afga_adapted(config: AlgorithmConfig) -> Algorithm:
    """Communication-adapted AFGA (000 Section 5, footnote 4).

    The clients of S_r start from x_r, compute at every local step and gossip over a ring formed
    on S_r alone (``topology`` may be ``ring``, the default, or ``complete``); the others stay
    offline and keep their last model. Delta = aggregate over S_r; FedAMSGrad server step.
    """
    kind = config.topology or "ring"
    selected_ring(np.ones((1, 3), dtype=bool), kind)  # validate the topology name now
    opt = make_server(config)
    K, lr = config.local_steps, config.lr

    def init(problem: Any, x0: Array) -> GossipState:
        return GossipState(x=x0, X=broadcast_clients(x0, problem.n_clients), opt=opt.init(x0))

    def round_(state: GossipState, problem: Any, draw: Any, rng: Any = None) -> GossipState:
        xp = get_namespace(state.x)
        X0 = pull(state.X, state.x, draw.mask)
        W = xp.asarray(selected_ring(draw.mask, kind), dtype=state.x.dtype)  # (S, N, N)
        XK = local_steps(problem, X0, K, lr, compute=draw.mask, rng=rng, mix=gossip(W))
        delta = aggregate(XK - state.x[:, None, :], draw.weights)
        step, opt_state = opt.update(delta, state.opt)
        return GossipState(x=state.x + step, X=XK, opt=opt_state)

    return Algorithm(
        name="afga-adapted",
        init=init,
        round=round_,
        config=config,
        reference=REFERENCE_ADAPTED,
        metrics=client_metrics(),
    )
