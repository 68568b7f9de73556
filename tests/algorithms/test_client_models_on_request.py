"""FOCUS, SCAFFOLD and the FedAvg family keep the clients' models X only when the consensus
metric (the one metric that reads them) is recorded; the server model's bits do not depend on
it, on any path of the round (full, partial with the slot layout, stochastic every-client)."""

from __future__ import annotations

import numpy as np
import pytest

from fedtheory.algorithms import make_algorithm
from fedtheory.errors import MetricNotRecordedError
from fedtheory.participation import make_participation
from fedtheory.problems import random_quadratic
from fedtheory.simulation import simulate

N, D, K = 6, 3, 2
ON_REQUEST = ["focus", "sg-focus", "scaffold", "fedavg", "fedprox", "fedadam"]
MODELS = {
    "full": lambda: None,
    "uniform": lambda: make_participation("uniform", N, 2),
    "bernoulli": lambda: make_participation("bernoulli", N, None, np.full(N, 0.4)),
    "weighted": lambda: make_participation("weighted", N, 3, np.linspace(1, 2, N) / 9.0),
}


@pytest.mark.parametrize("alg", ON_REQUEST)
@pytest.mark.parametrize("part", sorted(MODELS))
@pytest.mark.parametrize("noise", [0.0, 0.3])
def test_error_is_the_same_bits_with_and_without_the_clients_models(alg, part, noise):
    prob = random_quadratic(N, D, seed=3, noise=noise)
    kw = dict(rounds=12, seeds=3, seed=5, lr=0.05, local_steps=K)
    if alg == "fedprox":
        kw["prox_mu"] = 0.2
    lean = simulate(prob, alg, MODELS[part](), metrics=["error"], **kw)
    full = simulate(prob, alg, MODELS[part](), metrics=["error", "consensus"], **kw)
    assert np.array_equal(lean.error, full.error)
    assert np.array_equal(lean.x_final, full.x_final)
    assert np.isfinite(full.consensus).all()
    with pytest.raises(MetricNotRecordedError, match="consensus"):
        lean.consensus  # noqa: B018  (not recorded: the clients' models were not kept)


@pytest.mark.parametrize("alg", ON_REQUEST)
def test_the_state_carries_the_clients_models_only_for_the_consensus_metric(alg):
    prob = random_quadratic(N, D, seed=1)
    algo = make_algorithm(alg, problem=prob, lr=0.05, local_steps=K)
    x0 = np.zeros((2, D))
    assert algo.start(prob, x0).X is None
    assert algo.start(prob, x0, ["error", "grad_norm2"]).X is None
    kept = algo.start(prob, x0, ["consensus"]).X
    assert kept.shape == (2, N, D) and not kept.any()
