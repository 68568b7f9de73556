"""Adaptive federated optimizers: FedAvg-style local SGD with an adaptive server step.

Reddi, Charles, Zaheer, Garrett, Rush, Konecny, Kumar and McMahan 2021, "Adaptive Federated
Optimization" (ICLR), Algorithm 2 (FedAdagrad, FedAdam, FedYogi); Wang, Lin and Chen 2022b,
"Communication-Efficient Adaptive Federated Learning" (ICML), FedAMSGrad (the FedAMS variant
with v_hat = max(v_hat, v)), as restated in 000 eq. (2) and Algorithm 1 lines 19-22.

Each one is :func:`fedtheory.algorithms.fedavg.build_fedavg` (the shared local-steps engine)
with the matching member of the one server-optimizer family
(:mod:`fedtheory.algorithms.server_opt`); they differ in the v line only. Defaults: beta1 =
0.9, beta2 = 0.99, eps = 1e-8, inside the root for FedAMSGrad (000 Alg. 1 line 22) and outside
for the others (Reddi et al.; ``--eps-placement`` overrides).
"""

from __future__ import annotations

from fedtheory.algorithms.base import Algorithm, AlgorithmConfig
from fedtheory.algorithms.fedavg import build_fedavg
from fedtheory.algorithms.registry import ADAPTIVE_SETTINGS, register


@register(
    "fedamsgrad",
    "FedAMSGrad: local SGD + AMSGrad server step (Wang et al. 2022b; 000 eq. 2)",
    display="FedAMSGrad",
    uses=ADAPTIVE_SETTINGS,
    adaptive=True,
)
def build_fedamsgrad(config: AlgorithmConfig) -> Algorithm:
    return build_fedavg(config, server="amsgrad", name="fedamsgrad")


@register(
    "fedadam",
    "FedAdam: local SGD + Adam server step (Reddi et al. 2021, Alg. 2)",
    display="FedAdam",
    uses=ADAPTIVE_SETTINGS,
    adaptive=True,
)
def build_fedadam(config: AlgorithmConfig) -> Algorithm:
    return build_fedavg(config, server="adam", name="fedadam")


@register(
    "fedyogi",
    "FedYogi: local SGD + Yogi server step (Reddi et al. 2021, Alg. 2)",
    display="FedYogi",
    uses=ADAPTIVE_SETTINGS,
    adaptive=True,
)
def build_fedyogi(config: AlgorithmConfig) -> Algorithm:
    return build_fedavg(config, server="yogi", name="fedyogi")


@register(
    "fedadagrad",
    "FedAdagrad: local SGD + Adagrad server step (Reddi et al. 2021, Alg. 2)",
    display="FedAdagrad",
    uses=ADAPTIVE_SETTINGS,
    adaptive=True,
)
def build_fedadagrad(config: AlgorithmConfig) -> Algorithm:
    return build_fedavg(config, server="adagrad", name="fedadagrad")
