"""Which federated algorithms are affine on quadratics, and the coordinates of their state.

On f_i(x) = 1/2 x^T H_i x - h_i^T x every gradient is affine in the model, so a round of an
algorithm that only adds, scales and averages models and gradients is an affine map of its
state given the participation draw: z <- M_S z + c_S. This module records, per algorithm, the
facts the exact oracle needs, each declared where the algorithm is registered
(:func:`fedtheory.algorithms.registry.register`: ``affine``, ``exact_layout``, ``not_exact``);
this module reads them:

* :func:`check_affine`: why an algorithm has no exact oracle (its round is *not* affine, or it
  is affine outside the client-local structure; a refusal names the reason);
* :func:`state_layout`: for every affine algorithm, the coordinates z = (u, v_1, ..., v_N) of
  the state that the server model depends on: server coordinates u (the first d of them are the
  server model x) and per-client coordinates v_i, and how they are read from (``encode``) and
  written into (``decode``) the algorithm's own NamedTuple state.

The coordinates are the algorithm's fields minus what the server model never reads (the
clients' latest local models ``X`` of FedAvg, FOCUS, SCAFFOLD, MIFA, FedDyn: a participant
restarts from x, a non-participant's stale model is never aggregated) and minus aggregates the
state keeps redundantly (FOCUS's tracker y = sum_i g_prev_i, FedDyn's h = mean_i grad_i): those
are recomputed from the client coordinates by ``decode``. A redundant coordinate would be a
conserved direction of every M_S, an eigenvalue 1 that no reachable state excites. Redundancies
that are read *by the clients* (SCAFFOLD's c = mean_i c_i) or that depend on the participation
law (Scaffnew under a fixed number of participants) stay coordinates here and are removed by
the conserved-quantity reduction of :mod:`fedtheory.analysis.exact.system`.

Whether ``encode``/``decode`` are right is not assumed: the extracted round model is compared
with the algorithm's own ``round`` on random states, with random values in every field that a
layout declares unread (:func:`fedtheory.analysis.exact.extract.verify_round_model`).
"""

from __future__ import annotations

from typing import Any

from fedtheory.algorithms.base import StateLayout
from fedtheory.algorithms.registry import info, names
from fedtheory.errors import FedTheoryError

__all__ = [
    "AFFINE_ALGORITHMS",
    "NOT_AFFINE",
    "NO_LAYOUT",
    "NotAffineError",
    "StateLayout",
    "check_affine",
    "state_layout",
]


class NotAffineError(FedTheoryError):
    """The algorithm's round is not an affine map of its state on this problem (or the exact
    oracle has no coordinates for it); the message says why."""


#: Algorithms the exact oracle supports (an affine round with a declared state layout).
AFFINE_ALGORITHMS: tuple[str, ...] = tuple(n for n in names() if info(n).exact_layout)
#: Algorithms whose round is not an affine map of the state, and why (the registry's words).
NOT_AFFINE: dict[str, str] = {n: info(n).not_exact for n in names(affine=False)}
#: Algorithms whose round is affine but which the oracle does not model, and why.
NO_LAYOUT: dict[str, str] = {
    n: info(n).not_exact for n in names(affine=True) if info(n).exact_layout is None
}


def check_affine(name: str) -> None:
    """Raise :class:`NotAffineError` naming why ``name`` has no exact affine round model
    (the reason its registration declares)."""
    alg = info(name)
    if not alg.affine:
        raise NotAffineError(f"{alg.name}: no exact rate: {alg.not_exact}")
    if alg.exact_layout is None:
        raise NotAffineError(
            f"{alg.name}: no exact rate: {alg.not_exact} "
            f"(supported: {', '.join(AFFINE_ALGORITHMS)})"
        )


def state_layout(algorithm: Any, n_clients: int, dim: int) -> StateLayout:
    """The :class:`StateLayout` of a built :class:`~fedtheory.algorithms.Algorithm`.

    Raises
    ------
    NotAffineError
        For an algorithm without an exact layout (the message says why).
    """
    check_affine(algorithm.name)
    layout = info(algorithm.name).exact_layout
    return layout(algorithm.name, algorithm.config, int(n_clients), int(dim))
