"""Built-in problems by name, and a user's least-squares file: one constructor for every caller.

``fedtheory simulate --problem NAME``, ``fedtheory rate`` and ``fedtheory sweep`` build their
problem here, so a name means the same problem everywhere.
"""

from __future__ import annotations

import os
from typing import Any

from fedtheory.errors import FedTheoryError
from fedtheory.problems.quadratic import (
    LeastSquaresProblem,
    ProblemFile,
    QuadraticProblem,
    figure4_problem,
    random_least_squares,
    random_quadratic,
)

#: Built-in problem names and what they are (a user's data goes through ``path``).
BUILTIN_PROBLEMS = {
    "figure4": "003 Figure 4 least squares: N=16, 500 rows each, d=50 (authors' data)",
    "quadratic": "random heterogeneous quadratics: N=16, d=20, condition 10",
    "least-squares": "random heterogeneous least squares: N=16, 100 rows, d=20",
}


def make_problem(
    name: str | None = None,
    *,
    path: str | os.PathLike | None = None,
    seed: int = 0,
    dtype: Any = None,
) -> QuadraticProblem | LeastSquaresProblem:
    """A built-in problem by ``name`` or a user's least-squares problem from ``path``.

    Parameters
    ----------
    name : {"figure4", "quadratic", "least-squares"}, optional
        See :data:`BUILTIN_PROBLEMS`. Exactly one of ``name`` and ``path`` is given.
    path : path to an ``.npz`` file, optional
        ``A`` (N, n, d), ``b`` (N, n), optional scalar ``lam``:
        f_i = 1/2 ||A_i x - b_i||^2 + lam/2 ||x||^2 (:class:`~fedtheory.problems.ProblemFile`).
    seed : int
        Seed of the random built-in problems (``figure4`` is the authors' fixed draw).
    dtype : float64 (default) or float32

    Raises
    ------
    FedTheoryError
        Neither or both of ``name`` and ``path``, or an unknown name (the message lists them).
    """
    if (name is None) == (path is None):
        raise FedTheoryError(
            "give exactly one problem: a built-in name "
            f"({', '.join(BUILTIN_PROBLEMS)}) or the path of an .npz file"
        )
    if path is not None:
        return ProblemFile(path, dtype=dtype)
    key = str(name).strip().lower()
    if key == "figure4":
        return figure4_problem(dtype=dtype)
    if key == "quadratic":
        return random_quadratic(16, 20, seed=seed, dtype=dtype)
    if key == "least-squares":
        return random_least_squares(16, 100, 20, seed=seed, dtype=dtype)
    raise FedTheoryError(
        f"unknown problem {name!r}: choose one of {', '.join(BUILTIN_PROBLEMS)} "
        "or give an .npz file"
    )
