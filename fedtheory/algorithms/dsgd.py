"""DSGD: decentralized SGD with gossip averaging, no server.

Lian, Zhang, Zhang, Hsieh, Zhang and Liu 2017, "Can Decentralized Algorithms Outperform
Centralized Algorithms?" (NeurIPS), Algorithm 1 in the adapt-then-combine form of
docs/algorithms.md Section 4 (the baseline of 000 Appendix B, "Comparisons to Decentralized
Methods")::

    X <- W (X - eta_l G(X))        at every step, every client

A "round" of the simulator is K such steps (so rounds compare with the federated algorithms'
K local steps per round). There is no server: the reported server model is the clients'
average x_bar = (1/N) sum_i x_i, and the participation draw is not used (every client computes
and gossips at every step). ``--topology`` is the graph (default ring); the step is the shared
engine's gossip step.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from fedtheory.algorithms.base import Algorithm, AlgorithmConfig, broadcast_clients, client_metrics
from fedtheory.algorithms.gossip import GRAPH_SEED, MIXING, global_mixing, global_rho, gossip
from fedtheory.algorithms.local_steps import local_steps
from fedtheory.algorithms.registry import register

Array = Any

REFERENCE = "Lian et al. 2017 (D-PSGD), X <- W (X - eta_l G(X)); docs/algorithms.md Sec. 4"


class DSGDState(NamedTuple):
    x: Array  # (S, d) the clients' average (no server)
    X: Array  # (S, N, d) client models


@register(
    "dsgd",
    "DSGD: X <- W (X - eta_l G(X)), no server; x = clients' average (Lian et al.)",
    display="DSGD",
    uses=("topology",),
    options=(MIXING, GRAPH_SEED),
    gossip_rho=global_rho,
    affine=True,
    server_vectors=0,
    not_exact=(
        "DSGD has no server and ignores participation: its round X <- W (X - eta G(X)) is "
        "affine but couples clients through the gossip matrix, outside the client-local "
        "structure the exact oracle exploits (its rate is that of one deterministic matrix)"
    ),
)
def build_dsgd(config: AlgorithmConfig) -> Algorithm:
    K, lr = config.local_steps, config.lr
    cache: dict[int, Any] = {}

    def mix_for(n: int) -> Any:
        if n not in cache:
            cache[n] = gossip(global_mixing(config, n))
        return cache[n]

    if config.n_clients is not None:
        mix_for(int(config.n_clients))

    def init(problem: Any, x0: Array) -> DSGDState:
        mix_for(int(problem.n_clients))
        return DSGDState(x=x0, X=broadcast_clients(x0, problem.n_clients))

    def round_(state: DSGDState, problem: Any, draw: Any, rng: Any = None) -> DSGDState:
        X = local_steps(problem, state.X, K, lr, rng=rng, mix=mix_for(state.X.shape[1]))
        return DSGDState(x=X.mean(axis=1), X=X)

    return Algorithm(
        name="dsgd",
        init=init,
        round=round_,
        config=config,
        reference=REFERENCE,
        metrics=client_metrics(),
    )
