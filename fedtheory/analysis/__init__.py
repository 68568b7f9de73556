"""Analysis: closed forms on quadratics and rate fitting (docs/algorithms.md sections 5-6).

- :mod:`fedtheory.analysis.closed_forms`: x*, x_q*, FedAvg's full-participation fixed point
  (Li et al. 2019a) and its stationary mean under random participation.
- :mod:`fedtheory.analysis.rates`: linear rates with r^2, error floors, power-law exponents
  with confidence intervals over seeds.
"""

from fedtheory.analysis.closed_forms import (
    StationaryMean,
    fedavg_fixed_point,
    fedavg_stationary_mean,
    fedavg_stationary_mean_enumerated,
    local_affine_maps,
    optimum,
    weighted_optimum,
)
from fedtheory.analysis.rates import (
    LinearRate,
    PowerLaw,
    error_floor,
    fit_linear_rate,
    fit_power_law,
)

__all__ = [
    "LinearRate",
    "PowerLaw",
    "StationaryMean",
    "error_floor",
    "fedavg_fixed_point",
    "fedavg_stationary_mean",
    "fedavg_stationary_mean_enumerated",
    "fit_linear_rate",
    "fit_power_law",
    "local_affine_maps",
    "optimum",
    "weighted_optimum",
]
