"""HA-Fed: hybrid adaptive federated optimization with local gossip inside clusters.

"Accelerating Adaptive Federated Optimization with Local Gossip Communications" (seed 004),
Algorithm 1 (full participation) and its partial-participation variant (Section 4, Theorem 5.8).
C clusters of n clients (contiguous blocks), mixing matrix W_k per cluster. Round t::

    every client of every cluster starts from x_t                        (Alg. 1 line 5)
    for s = 0..tau-1: every client takes a local SGD step, then
        X_{V_k} <- W_k X_{V_k}  (gossip inside the cluster)               (lines 7-9)
    Delta = (1/C) sum_k (1/n) sum_{i in V_k} (x_i - x_t)                  (line 14)
    FedAMSGrad server step                                                (lines 15-18)

Partial participation (004 Section 4): the server samples m clients per cluster; they broadcast
x_t in their cluster, every cluster client still trains and gossips, and only the sampled ones
send Delta_i: Delta = (1/C) sum_k (1/m) sum_{i in S^k} Delta_i. One code path covers both: the
aggregation weights come from the round's mask (all clients under ``--participation full``).
With a complete graph in each cluster (rho_max = 0) every client of a cluster holds the same
model after the last gossip step, so partial participation gives full participation's iterates
(004 Remark 5.9; a test).
"""

from __future__ import annotations

import math

from fedtheory.algorithms.base import Algorithm, AlgorithmConfig
from fedtheory.algorithms.gossip import (
    GRAPH_SEED,
    SERVER,
    build_gossip_adaptive,
    cluster_average,
    cluster_gossip,
    cluster_rho,
)
from fedtheory.algorithms.registry import ADAPTIVE_SETTINGS, Schedule, register

#: The exponents of K, R and M of its O(.) rate (004 Cor. 5.11), under either participation.
EXPONENTS = {
    "partial": {"K": -0.5, "R": -0.5, "M": -0.5},
    "full": {"K": -0.5, "R": -0.5, "M": -0.5},
}


def conditions(N: int, M: int, n: int, m: int, C: int, rho: float | None) -> list[str]:
    """004 Cor. 5.11: rho_max <= 1/(2 sqrt(n - m)) and C < n."""
    from fedtheory.graphs.conditions import hafed_bound  # noqa: PLC0415  (the graphs pull SciPy into every simulate's start-up)

    out = []
    bound = hafed_bound(n, m)
    if rho is not None and rho > bound + 1e-12:
        out.append(f"rho_max = {rho:.4g} > 1/(2 sqrt(n-m)) = {bound:.4g} (004 Cor. 5.11)")
    if C >= n:
        out.append(f"C = {C} clusters >= n = {n} clients per cluster (004 Cor. 5.11)")
    return out


def horizon(R: int, K: int, M: int) -> list[str]:
    """004 Cor. 5.11: R > K M."""
    return [f"R = {R} <= K M = {K * M} (004 Cor. 5.11)"] if R <= K * M else []


#: 004 Cor. 5.11's schedule.
SCHEDULE = Schedule(
    lambda R, K, M, N, n, m, c, c_l: (c * math.sqrt(K * M), c_l / math.sqrt(R * K)),
    "004 Cor. 5.11: eta = c sqrt(K M), eta_l = c_l / sqrt(R K)",
)

REFERENCE = "004 Algorithm 1 (HA-Fed, full) and Section 4 / Theorem 5.8 (partial participation)"


@register(
    "hafed",
    "HA-Fed: all clients train + gossip W_k per cluster, FedAMSGrad (004 Alg. 1)",
    display="HA-Fed",
    uses=(*ADAPTIVE_SETTINGS, "topology", "clusters"),
    options=(GRAPH_SEED, SERVER),
    adaptive=True,
    gossip_rho=cluster_rho,
    broadcast=True,
    not_exact="HA-Fed's FedAMSGrad server step divides by sqrt(v_hat) (004 Algorithm 1)",
    schedule=SCHEDULE,
    exponents=EXPONENTS,
    conditions=conditions,
    horizon=horizon,
)
def build_hafed(config: AlgorithmConfig) -> Algorithm:
    """HA-Fed (004 Algorithm 1; partial participation when the round's mask is not full)."""
    return build_gossip_adaptive(
        "hafed",
        config,
        mixing=cluster_gossip(config),
        compute="all",
        weights=cluster_average(config),
        reference=REFERENCE,
    )
