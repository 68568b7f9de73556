"""Federated algorithms as pure ``init``/``round`` pairs on stacked state (fedjax/optax style).

Interface (:mod:`fedtheory.algorithms.base`)
--------------------------------------------
An :class:`Algorithm` has ``init(problem, x0) -> state`` and
``round(state, problem, draw, rng) -> state``:

- ``x0``: initial server model, shape ``(S, d)``; S seeds are a leading batch axis.
- ``state``: a NamedTuple whose field ``x`` is the server model ``(S, d)`` (the one field the
  runner reads); per-client arrays are ``(S, N, d)`` (clients are rows). An algorithm adds the
  metrics that need its own fields on ``Algorithm.metrics`` (``client_metrics()``: the
  clients' consensus error; FOCUS: its tracking residual).
- ``draw``: a :class:`RoundDraw` ``(mask (S, N) bool, weights (S, N) float, r, step_masks,
  counts)``: who participates, the aggregation weights (zero off S_r; made by the
  participation module's ``model.weights(draw, rule)``), the round index, and, for algorithms
  with ``needs_step_masks=True``, who computes at each local step ``(S, K, N)``.
- ``rng``: ``None`` or a :class:`SeedRng` (one NumPy stream per seed, so a batched run
  reproduces every single-seed run bit for bit).

Shared pieces
-------------
- :func:`fedtheory.algorithms.local_steps.local_steps`: the one local-steps engine (masks of who
  computes, per-step re-sampling, gossip ``X <- W X`` after every step, proximal term, control
  variate correction, stochastic gradients).
- :func:`fedtheory.algorithms.server_opt.server_optimizer`: ``sgd`` (FedAvg server step),
  ``adam``, ``yogi``, ``adagrad``, ``amsgrad`` with eps ``inside`` / ``outside`` the square
  root; ``init(x) -> state``, ``update(delta, state) -> (step, state)``, ``x <- x + step``.
- :mod:`fedtheory.algorithms.gossip`: the gossip step ``X <- W X``, per-cluster gossip, the
  ring on S_r, and the adaptive-gossip round AFGA, CAFGA and HA-Fed share.
- :mod:`fedtheory.algorithms.registry`: ``register(name, description, display=..., uses=...,
  options=..., adaptive=..., gossip_rho=..., affine=...)`` decorates a builder
  ``builder(config: AlgorithmConfig) -> Algorithm`` and declares what it reads and what it is;
  ``make_algorithm(name, config, problem=..., **settings)`` builds one (an unknown setting is
  an error listing the valid ones); ``info(name)``, ``names(gossip=True)``,
  ``display_name(name)`` and ``available()`` answer questions about them. A new algorithm
  module is imported at the end of this file, which registers it.
- A researcher's own algorithm (docs/own-algorithm.md) registers the same way from a file, a
  module, a notebook or an installed package (entry points of the group
  ``fedtheory.algorithms``); ``resolve_algorithm("path/to/file.py:NAME")`` loads it (the one
  place that imports a user's code) and :func:`field_layout` declares the exact oracle's
  coordinates of a flat state.

Algorithms here (each file cites its paper): ``fedavg``, ``fedprox``, ``scaffold``, ``fedau``,
``mifa``, ``scaffnew``, ``focus``, ``sg-focus``, ``feddyn``, ``fedamsgrad``, ``fedadam``,
``fedyogi``, ``fedadagrad``, ``afga``, ``afga-adapted``, ``cafga``, ``hafed``, ``dsgd``. Runs go
through :func:`fedtheory.simulation.simulate`.
"""

from fedtheory.algorithms.base import (
    Algorithm,
    AlgorithmConfig,
    RoundDraw,
    SeedRng,
    StateLayout,
    aggregate,
    broadcast_clients,
    field_layout,
    pull,
    seed_sequences,
)
from fedtheory.algorithms.gossip import gossip
from fedtheory.algorithms.local_steps import local_steps
from fedtheory.algorithms.registry import (
    ENTRY_POINT_GROUP,
    AlgorithmInfo,
    Option,
    ResolvedAlgorithm,
    available,
    display_name,
    gossip_rho,
    info,
    make_algorithm,
    names,
    register,
    resolve_algorithm,
)
from fedtheory.algorithms.server_opt import ServerOptimizer, ServerOptState, server_optimizer

__all__ = [
    "ENTRY_POINT_GROUP",
    "Algorithm",
    "ResolvedAlgorithm",
    "StateLayout",
    "field_layout",
    "resolve_algorithm",
    "AlgorithmInfo",
    "Option",
    "display_name",
    "gossip_rho",
    "info",
    "names",
    "AlgorithmConfig",
    "RoundDraw",
    "SeedRng",
    "ServerOptState",
    "ServerOptimizer",
    "aggregate",
    "available",
    "broadcast_clients",
    "gossip",
    "local_steps",
    "make_algorithm",
    "pull",
    "register",
    "seed_sequences",
    "server_optimizer",
]

# Importing an algorithm module registers its algorithms; one direct import each, after the
# shared pieces above that they use.
from fedtheory.algorithms import (  # noqa: F401, I001  (the imports register the algorithms)
    fedavg,
    fedprox,
    scaffold,
    fedau,
    mifa,
    scaffnew,
    focus,
    adaptive,
    afga,
    cafga,
    hafed,
    dsgd,
    feddyn,
)
