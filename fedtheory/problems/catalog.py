"""Built-in problems by name (the registry, :mod:`fedtheory.problems.registry`), and a user's
least-squares file: one constructor for every caller.

``fedtheory simulate --problem NAME``, ``fedtheory rate`` and ``fedtheory sweep`` build their
problem here, so a name means the same problem everywhere.
"""

from __future__ import annotations

import os
from typing import Any

from fedtheory.errors import FedTheoryError
from fedtheory.problems.quadratic import LeastSquaresProblem, ProblemFile, QuadraticProblem
from fedtheory.problems.registry import BUILTIN_PROBLEMS, problem_info


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
    name : str, optional
        A registered built-in problem (:data:`BUILTIN_PROBLEMS`). Exactly one of ``name`` and ``path`` is given.
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
    return problem_info(name).build(seed, dtype)
