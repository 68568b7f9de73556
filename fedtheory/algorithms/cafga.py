"""CAFGA: clustered-client adaptive federated learning with local gossip averaging.

"On the Data Heterogeneity in Adaptive Federated Learning" (TMLR 08/2024; seeds 000/001),
Algorithm 2 and Appendix D (Theorem D.3). N = C n clients in C disjoint clusters V_k of n
(contiguous blocks of client indices), one mixing matrix W_k per cluster. Round r::

    per cluster k: S_r^k sampled (m clients) for collecting updates      (Alg. 2 line 4)
    every client of V_k starts from x_r                                  (line 5)
    for t = 0..K-1:
        S_{r,t}^k re-sampled (m clients of V_k) for gradient computation  (line 7)
        i in S_{r,t}^k: x_i' = x_i - eta_l g_i;  others x_i' = x_i          (lines 9-14)
        X_{V_k} <- W_k X'_{V_k}   (gossip inside each cluster)            (line 15)
    Delta = (1/C) sum_k (1/|S_r^k|) sum_{i in S_r^k} (x_i - x_r)           (line 20)
    FedAMSGrad server step (000 Algorithm 1 lines 19-22)                  (line 21)

The per-cluster gossip is one batched matmul and the round is the adaptive-gossip round of
:mod:`fedtheory.algorithms.gossip`. With the ``cluster`` participation model (m per cluster) the
sets S_r^k and S_{r,t}^k are exactly Algorithm 2's; under any other model S_r^k is the part of
S_r that falls in cluster k, and clusters with no sampled client are left out of Delta's average.
``clusters`` sets C (default 1: AFGA on one cluster); ``topology`` is each W_k's graph.

Communication-adapted CAFGA (``cafga-adapted``; 000 Sec. 5: the adaptation of AFGA "can also be
applied here to CAFGA", Table 5's "CAFGA (a)"): only the clients of S_r^k are online; they start
from x_r, compute at every local step and gossip over a ring formed on S_r^k alone inside their
cluster (:func:`~fedtheory.algorithms.gossip.cluster_selected_ring`); Delta as Algorithm 2.
"""

from __future__ import annotations

import math

from fedtheory.algorithms.base import Algorithm, AlgorithmConfig
from fedtheory.algorithms.gossip import (
    GRAPH_SEED,
    RESAMPLE,
    SERVER,
    build_adapted_gossip,
    build_gossip_adaptive,
    cluster_average,
    cluster_gossip,
    cluster_rho,
    cluster_selected_rho,
    cluster_selected_ring,
)
from fedtheory.algorithms.registry import ADAPTIVE_SETTINGS, Schedule, register

#: The exponents of K, R and M of its O(.) rate (000 Thm D.3, in m), under either participation.
EXPONENTS = {
    "partial": {"K": -0.5, "R": -0.5, "M": -0.5},
    "full": {"K": -0.5, "R": -0.5, "M": -0.5},
}


def conditions(N: int, M: int, n: int, m: int, C: int, rho: float | None) -> list[str]:
    """000 Thm D.3: rho_max <= m/(m+n) (n clients per cluster, m sampled in each)."""
    from fedtheory.graphs.conditions import cafga_bound  # noqa: PLC0415  (the graphs pull SciPy into every simulate's start-up)

    bound = cafga_bound(n, m)
    if rho is not None and rho > bound + 1e-12:
        return [f"rho_max = {rho:.4g} > m/(m+n) = {bound:.4g} (000 Thm D.3)"]
    return []


#: 000 App. D's schedule, per cluster of n clients with m sampled (the adapted variant too).
SCHEDULE = Schedule(
    lambda R, K, M, N, n, m, c, c_l: (c * n * math.sqrt(K / m), c_l / math.sqrt(R * K * K)),
    "000 App. D (proof of Thm D.3, eq. 33): eta = c n sqrt(K / m), eta_l = c_l / sqrt(R K^2)",
)

REFERENCE = "000/001 (TMLR 2024) Algorithm 2 (CAFGA), Appendix D"
REFERENCE_ADAPTED = "000/001 (TMLR 2024) Section 5 and Table 5 (communication-adapted CAFGA)"


@register(
    "cafga",
    "CAFGA: per-cluster re-sampling + gossip W_k, FedAMSGrad server (000 Alg. 2)",
    display="CAFGA",
    uses=(*ADAPTIVE_SETTINGS, "topology", "clusters"),
    options=(RESAMPLE, GRAPH_SEED, SERVER),
    adaptive=True,
    gossip_rho=cluster_rho,
    broadcast=True,
    not_exact="CAFGA's FedAMSGrad server step divides by sqrt(v_hat) (000 Algorithm 2)",
    schedule=SCHEDULE,
    exponents=EXPONENTS,
    conditions=conditions,
)
def build_cafga(config: AlgorithmConfig) -> Algorithm:
    """CAFGA (000 Algorithm 2); ``resample=False`` computes on S_r^k only."""
    return build_gossip_adaptive(
        "cafga",
        config,
        mixing=cluster_gossip(config),
        compute="resampled" if config.option("resample") else "round",
        weights=cluster_average(config),
        reference=REFERENCE,
    )


@register(
    "cafga-adapted",
    "communication-adapted CAFGA: only S_r^k online, gossip on a ring over S_r^k in each cluster "
    "(000 Sec. 5, Table 5)",
    display="CAFGA (adapted)",
    uses=(*ADAPTIVE_SETTINGS, "topology", "clusters"),
    options=(SERVER,),
    adaptive=True,
    gossip_rho=cluster_selected_rho,
    not_exact="the adapted CAFGA's FedAMSGrad server step divides by sqrt(v_hat)",
    schedule=SCHEDULE,
)
def build_cafga_adapted(config: AlgorithmConfig) -> Algorithm:
    """Communication-adapted CAFGA (000 Sec. 5, Table 5). The clients of S_r^k start from x_r,
    compute at every local step and gossip over a ring formed on S_r^k alone inside cluster k
    (``topology`` ``ring``, the default, or ``complete``); the others stay offline and keep
    their last model. Delta = Algorithm 2's per-cluster average; FedAMSGrad server step."""
    C = config.clusters
    return build_adapted_gossip(
        "cafga-adapted",
        config,
        mixing=lambda mask, kind: cluster_selected_ring(mask, C, kind),
        weights=cluster_average(config),
        reference=REFERENCE_ADAPTED,
    )
