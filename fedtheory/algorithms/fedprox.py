"""FedProx: FedAvg whose local objective carries a proximal term.

Li, Sahu, Zaheer, Sanjabi, Talwalkar and Smith 2020, "Federated Optimization in Heterogeneous
Networks" (MLSys; Algorithm 2): client i approximately minimizes
h_i(w) = f_i(w) + mu/2 ||w - x||^2, here by K gradient steps
``w <- w - eta_l (grad f_i(w) + mu (w - x))`` (the local-steps engine's ``prox_mu``); the server
aggregates as FedAvg. mu = 0 is FedAvg exactly.
"""

from __future__ import annotations

from dataclasses import replace

from fedtheory.algorithms.base import Algorithm, AlgorithmConfig
from fedtheory.algorithms.fedavg import build_fedavg, server_model_layout
from fedtheory.algorithms.registry import register

REFERENCE = "Li et al. 2020, Federated Optimization in Heterogeneous Networks, Algorithm 2"


@register(
    "fedprox",
    "FedProx, local steps on f_i + mu/2 ||x_i - x||^2 (Li et al. 2020)",
    display="FedProx",
    uses=("global_lr", "prox_mu"),
    affine=True,
    exact_layout=server_model_layout,
)
def build_fedprox(config: AlgorithmConfig) -> Algorithm:
    alg = build_fedavg(config, name="fedprox", prox_mu=config.prox_mu)
    return replace(alg, reference=REFERENCE)
