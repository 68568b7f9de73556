"""Adaptive federated optimizers: FedAvg-style local SGD with an adaptive server step.

Reddi, Charles, Zaheer, Garrett, Rush, Konecny, Kumar and McMahan 2021, "Adaptive Federated
Optimization" (ICLR), Algorithm 2 (FedAdagrad, FedAdam, FedYogi); Wang, Lin and Chen 2022b,
"Communication-Efficient Adaptive Federated Learning" (ICML), FedAMSGrad (the FedAMS variant
with v_hat = max(v_hat, v)), as restated in 000 eq. (2) and Algorithm 1 lines 19-22.

Each one is :func:`fedtheory.algorithms.fedavg.build_fedavg` (the shared local-steps engine)
with the matching member of the one server-optimizer family
(:mod:`fedtheory.algorithms.server_opt`); they differ in the v line only, so they are one table
of variants. Defaults: beta1 = 0.9, beta2 = 0.99, eps = 1e-8, inside the root for FedAMSGrad
(000 Alg. 1 line 22) and outside for the others (Reddi et al.; ``eps_placement`` overrides).
"""

from __future__ import annotations

import math
from functools import partial

from fedtheory.algorithms.fedavg import build_fedavg
from fedtheory.algorithms.registry import ADAPTIVE_SETTINGS, Schedule, register

#: Why no adaptive server step has an exact oracle.
NOT_AFFINE = (
    "the adaptive server step divides the aggregated update by sqrt(v), and v is quadratic in "
    "the updates (Reddi et al. 2021 Algorithm 2; 000 eq. (2)), so a round is not affine"
)

#: The FedAMSGrad theorem's schedule (Wang et al. 2022b), which the study applies to the family.
SCHEDULE = Schedule(
    lambda R, K, M, N, n, m, c, c_l: (c * math.sqrt(K * M), c_l / math.sqrt(R * K * K)),
    "Wang et al. 2022b (as restated in 004 Sec. 5.1): eta = c sqrt(K M), eta_l = c_l / sqrt(R K^2)",
)

#: FedAMSGrad's rate (Wang et al. 2022b; 000 Sec. 3.1, 004 Sec. 3): O(sqrt(K) / sqrt(R M)) under
#: partial participation ("the dilemma of local steps"), O(1/sqrt(R K N)) under full.
FEDAMSGRAD_EXPONENTS = {
    "partial": {"K": 0.5, "R": -0.5, "M": -0.5},
    "full": {"K": -0.5, "R": -0.5, "M": -0.5},
}


def fedamsgrad_horizon(R: int, K: int, M: int) -> list[str]:
    """Wang et al. 2022b's condition R >= K M (000 Remark 4.8)."""
    return [f"R = {R} < K M = {K * M} (Wang et al. 2022b; 000 Remark 4.8)"] if R < K * M else []


#: (registry name, display name, server optimizer, description) of each variant.
VARIANTS = (
    (
        "fedamsgrad",
        "FedAMSGrad",
        "amsgrad",
        "FedAMSGrad: local SGD + AMSGrad server step (Wang et al. 2022b; 000 eq. 2)",
    ),
    (
        "fedadam",
        "FedAdam",
        "adam",
        "FedAdam: local SGD + Adam server step (Reddi et al. 2021, Alg. 2)",
    ),
    (
        "fedyogi",
        "FedYogi",
        "yogi",
        "FedYogi: local SGD + Yogi server step (Reddi et al. 2021, Alg. 2)",
    ),
    (
        "fedadagrad",
        "FedAdagrad",
        "adagrad",
        "FedAdagrad: local SGD + Adagrad server step (Reddi et al. 2021, Alg. 2)",
    ),
)

for _name, _display, _server, _description in VARIANTS:
    register(
        _name,
        _description,
        display=_display,
        uses=ADAPTIVE_SETTINGS,
        adaptive=True,
        not_exact=NOT_AFFINE,
        schedule=SCHEDULE,
        exponents=FEDAMSGRAD_EXPONENTS if _name == "fedamsgrad" else None,
        horizon=fedamsgrad_horizon if _name == "fedamsgrad" else None,
    )(partial(build_fedavg, server=_server, name=_name))
