"""AFGA and communication-adapted AFGA: adaptive federated learning with local gossip averaging.

"On the Data Heterogeneity in Adaptive Federated Learning" (TMLR 08/2024; seeds 000/001),
Algorithm 1, and Section 5 footnote 4 for the communication-adapted variant. Round r, for every
seed at once (docs/algorithms.md Section 4)::

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
the same participation model, ``mix`` = W) and the adaptive-gossip round of
:mod:`fedtheory.algorithms.gossip` with the ``amsgrad`` server optimizer. With ``--participation full`` every S_{r,t} is all N clients,
so AFGA is deterministic on a deterministic problem. With re-sampling off (S_{r,t} = S_r,
option ``resample=False``) and W = I it is FedAMSGrad exactly (000 Sec. 3.2; claim A1).

Communication-adapted AFGA (``afga-adapted``): only the clients of S_r are online; they start
from x_r, compute at every local step and gossip over a ring formed on S_r alone
(:func:`~fedtheory.algorithms.gossip.selected_ring`, one matrix per seed).

Options are declared with their registration below (``resample``, ``mixing``, ``graph_seed``,
``server``).
"""

from __future__ import annotations

import math
from typing import Any

from fedtheory.algorithms.base import (
    Algorithm,
    AlgorithmConfig,
)
from fedtheory.algorithms.gossip import (
    GRAPH_SEED,
    MIXING,
    RESAMPLE,
    SERVER,
    build_adapted_gossip,
    build_gossip_adaptive,
    global_mixing,
    global_rho,
    gossip,
    selected_rho,
    selected_ring,
)
from fedtheory.algorithms.registry import ADAPTIVE_SETTINGS, Schedule, register

#: The exponents of K, R and M of its O(.) rate (000 Cor. 4.7), under either participation.
EXPONENTS = {
    "partial": {"K": -0.5, "R": -0.5, "M": -0.5},
    "full": {"K": -0.5, "R": -0.5, "M": -0.5},
}


def conditions(N: int, M: int, n: int, m: int, C: int, rho: float | None) -> list[str]:
    """000 Thm 4.6: rho <= M/(M+N)."""
    from fedtheory.graphs.conditions import afga_bound  # noqa: PLC0415  (the graphs pull SciPy into every simulate's start-up)

    bound = afga_bound(N, M)
    if rho is not None and rho > bound + 1e-12:
        return [f"rho = {rho:.4g} > M/(M+N) = {bound:.4g} (000 Thm 4.6)"]
    return []


def horizon(R: int, K: int, M: int) -> list[str]:
    """000 Cor. 4.7: R >= K M."""
    return [f"R = {R} < K M = {K * M} (000 Cor. 4.7)"] if R < K * M else []


#: 000 Thm 4.6 / Cor. 4.7's schedule (the adapted variant runs with the same).
SCHEDULE = Schedule(
    lambda R, K, M, N, n, m, c, c_l: (c * N * math.sqrt(K) / M, c_l / math.sqrt(R * K * K)),
    "000 Thm 4.6 / Cor. 4.7: eta = c N sqrt(K) / M, eta_l = c_l / sqrt(R K^2)",
)

Array = Any

REFERENCE = "000/001 (TMLR 2024) Algorithm 1 (AFGA); Wang et al. 2022b (FedAMSGrad server)"
REFERENCE_ADAPTED = "000/001 (TMLR 2024) Section 5, footnote 4 (communication-adapted AFGA)"


@register(
    "afga",
    "AFGA: re-sampled local SGD + gossip X <- W X, FedAMSGrad server (000 Alg. 1)",
    display="AFGA",
    uses=(*ADAPTIVE_SETTINGS, "topology"),
    options=(RESAMPLE, MIXING, GRAPH_SEED, SERVER),
    adaptive=True,
    gossip_rho=global_rho,
    broadcast=True,
    not_exact="AFGA's FedAMSGrad server step divides by sqrt(v_hat) (000 Algorithm 1 line 22)",
    schedule=SCHEDULE,
    exponents=EXPONENTS,
    conditions=conditions,
    horizon=horizon,
)
def build_afga(config: AlgorithmConfig) -> Algorithm:
    """AFGA (000 Algorithm 1). ``resample=False`` sets S_{r,t} = S_r."""
    return build_gossip_adaptive(
        "afga",
        config,
        mixing=lambda n: gossip(global_mixing(config, n)),
        compute="resampled" if config.option("resample") else "round",
        reference=REFERENCE,
    )


@register(
    "afga-adapted",
    "communication-adapted AFGA: only S_r online, gossip on a ring over S_r (000 Sec. 5, fn. 4)",
    display="AFGA (adapted)",
    uses=(*ADAPTIVE_SETTINGS, "topology"),
    options=(SERVER,),
    adaptive=True,
    gossip_rho=selected_rho,
    not_exact="the adapted AFGA's FedAMSGrad server step divides by sqrt(v_hat)",
    schedule=SCHEDULE,
)
def build_afga_adapted(config: AlgorithmConfig) -> Algorithm:
    """Communication-adapted AFGA (000 Section 5, footnote 4).

    The clients of S_r start from x_r, compute at every local step and gossip over a ring formed
    on S_r alone (``topology`` may be ``ring``, the default, or ``complete``); the others stay
    offline and keep their last model. Delta = aggregate over S_r; FedAMSGrad server step.
    """
    return build_adapted_gossip(
        "afga-adapted", config, mixing=selected_ring, reference=REFERENCE_ADAPTED
    )
