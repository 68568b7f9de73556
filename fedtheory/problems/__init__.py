"""Problems with known answers (docs/algorithms.md section 5).

Every problem implements :class:`~fedtheory.problems.base.Problem`: ``grads(X (..., N, d), rng)``
for all clients at once, ``loss``, ``full_grad``, and ``x_star``, ``f_star``, ``L``, ``mu``
where they are known. :mod:`fedtheory.problems.interpolated` checks, saves and replays
counterexamples over smooth strongly convex clients (interpolation data).
"""

from fedtheory.problems.base import Problem, check_problem
from fedtheory.problems.catalog import BUILTIN_PROBLEMS, make_problem
from fedtheory.problems.interpolated import (
    InterpolatedProblem,
    InterpolationData,
    check_interpolation,
    load_interpolated,
    lowest_interpolant,
    read_interpolation,
    write_interpolation_file,
)
from fedtheory.problems.logistic import (
    LogisticProblem,
    SoftmaxRegressionProblem,
    leaf_synthetic_problem,
    random_logistic,
)
from fedtheory.problems.nonconvex import PLProblem
from fedtheory.problems.quadratic import (
    LeastSquaresProblem,
    ProblemFile,
    QuadraticProblem,
    figure4_data,
    figure4_probabilities,
    figure4_problem,
    random_least_squares,
    random_quadratic,
)
from fedtheory.problems.registry import ProblemInfo, problem_info, register_problem

__all__ = [
    "check_problem",
    "BUILTIN_PROBLEMS",
    "make_problem",
    "InterpolatedProblem",
    "InterpolationData",
    "check_interpolation",
    "load_interpolated",
    "lowest_interpolant",
    "read_interpolation",
    "write_interpolation_file",
    "ProblemInfo",
    "problem_info",
    "register_problem",
    "LeastSquaresProblem",
    "LogisticProblem",
    "PLProblem",
    "SoftmaxRegressionProblem",
    "leaf_synthetic_problem",
    "random_logistic",
    "Problem",
    "ProblemFile",
    "QuadraticProblem",
    "figure4_data",
    "figure4_probabilities",
    "figure4_problem",
    "random_least_squares",
    "random_quadratic",
]
