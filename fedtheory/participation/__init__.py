"""Participation models: who takes part in each round (003, Section 3.1, Assumption 1).

Every model draws all rounds of many seeds at once, ``model.sample(rounds, seeds, seed)`` ->
array (seeds, rounds, N) (bool masks; int multiplicities for weighted sampling with
replacement), gives FedAvg aggregation weights with ``model.weights(draw, rule)`` and reports
inclusion probabilities pi_i and effective weights q_i with how they were obtained (exact closed
form, dynamic program, enumeration, or Monte Carlo with a standard error).

Examples
--------
>>> from fedtheory.participation import make_participation
>>> model = make_participation("uniform", 16, 4)
>>> model.sample(rounds=10, seeds=3, seed=0).shape
(3, 10, 16)
>>> model.inclusion_probabilities().value[:2]
array([0.25, 0.25])
"""

from fedtheory.participation.base import (
    EXACT_CLOSED_FORM,
    EXACT_DP,
    EXACT_ENUMERATION,
    MONTE_CARLO,
    RULES,
    Estimate,
    ParticipationModel,
)
from fedtheory.participation.factory import load_vector, make_participation
from fedtheory.participation.markov import Markov, MemorylessChainWarning, default_markov_rates
from fedtheory.participation.models import (
    Bernoulli,
    Cyclic,
    Full,
    PerCluster,
    Trace,
    Uniform,
    Weighted,
)
from fedtheory.participation.plot import plot_participation
from fedtheory.participation.registry import ModelInfo, model_info, model_names, register_model

__all__ = [
    "EXACT_CLOSED_FORM",
    "EXACT_DP",
    "EXACT_ENUMERATION",
    "MONTE_CARLO",
    "RULES",
    "Bernoulli",
    "Cyclic",
    "Estimate",
    "Full",
    "Markov",
    "MemorylessChainWarning",
    "ModelInfo",
    "ParticipationModel",
    "PerCluster",
    "Trace",
    "Uniform",
    "Weighted",
    "default_markov_rates",
    "load_vector",
    "make_participation",
    "model_info",
    "model_names",
    "plot_participation",
    "register_model",
]
