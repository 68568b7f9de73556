"""Exact oracles: the exact per-round rates and floors of federated algorithms on quadratics.

On f_i(x) = 1/2 x^T H_i x - h_i^T x a round of FedAvg (sgd server), FedProx, SCAFFOLD, FOCUS,
SG-FOCUS (plus additive gradient noise), Scaffnew, MIFA or FedDyn is an affine map of the
algorithm's state z given the participation set S: z <- M_S z + c_S. This package reads M_S
and c_S off the algorithm's own ``round`` (and checks them against it), and computes exactly

* the mean rate rho(E[M_S]) and the mean-square rate rho(P -> E[M_S P M_S^T]), on the states
  reachable from the initialization;
* the fixed point shared by every M_S (FOCUS, SCAFFOLD: x*), or the stationary mean
  (I - E[M_S])^{-1} E[c_S];
* the stationary mean-square error lim_r E||x_r - x*||^2 (FedAvg's floor under random
  participation; SG-FOCUS's noise floor);

for full, uniform M-of-N, weighted M-of-N (with or without replacement), Bernoulli (with its
empty-round policy) and per-cluster participation from first- and second-order inclusion
probabilities, and Markov availability (small N) through the chain-augmented state.

Modules
-------
- :mod:`~fedtheory.analysis.exact.layouts`: which algorithms are affine, their coordinates.
- :mod:`~fedtheory.analysis.exact.extract`: the round model, read off ``round`` and verified;
  :func:`diagnose_round` names the property a round that fails the verification lacks.
- :mod:`~fedtheory.analysis.exact.law`: exact moments of the participation coefficients.
- :mod:`~fedtheory.analysis.exact.system`: mean and mean-square operators, reachable subspace.
- :mod:`~fedtheory.analysis.exact.oracle`: :func:`exact_rates`, :func:`exact_mse_curve`,
  :func:`largest_stable_lr`, :func:`problem_constants`.
- :mod:`~fedtheory.analysis.exact.sensitivity`: :func:`rate_gradient`, the rates' derivatives
  with respect to the Hessians, the step and the participation probabilities (left and right
  eigenvectors; the adjoint of the mean-square operator).
"""

from fedtheory.analysis.exact.extract import (
    NotQuadraticError,
    RoundModel,
    diagnose_round,
    extract_round_model,
    verify_round_model,
)
from fedtheory.analysis.exact.law import MarkovLaw, RoundLaw, participation_law
from fedtheory.analysis.exact.layouts import (
    AFFINE_ALGORITHMS,
    NO_LAYOUT,
    NOT_AFFINE,
    NotAffineError,
    StateLayout,
    check_affine,
    state_layout,
)
from fedtheory.analysis.exact.oracle import (
    ExactRates,
    ProblemConstants,
    StableStep,
    WarmStart,
    exact_mse_curve,
    exact_rates,
    largest_stable_lr,
    problem_constants,
    stated_rate,
)
from fedtheory.analysis.exact.system import AffineSystem, MarkovSystem

__all__ = [
    "AFFINE_ALGORITHMS",
    "NO_LAYOUT",
    "NOT_AFFINE",
    "AffineSystem",
    "ExactRates",
    "MarkovLaw",
    "MarkovSystem",
    "NotAffineError",
    "NotQuadraticError",
    "ProblemConstants",
    "RoundLaw",
    "RoundModel",
    "StableStep",
    "StateLayout",
    "WarmStart",
    "check_affine",
    "diagnose_round",
    "exact_mse_curve",
    "exact_rates",
    "extract_round_model",
    "largest_stable_lr",
    "participation_law",
    "problem_constants",
    "stated_rate",
    "state_layout",
    "verify_round_model",
]
