"""Built-in problems by name (the registry, :mod:`fedtheory.problems.registry`), and a user's
problem file: one constructor for every caller.

``fedtheory simulate --problem NAME``, ``fedtheory rate`` and ``fedtheory sweep`` build their
problem here, so a name means the same problem everywhere. A problem file is read once and
dispatched here on its ``kind``: none (or ``"least-squares"``), a least-squares problem
(:class:`~fedtheory.problems.ProblemFile`); ``"interpolation"``, a counterexample over smooth
strongly convex clients (:class:`~fedtheory.problems.InterpolatedProblem`), which only a
simulation can replay.
"""

from __future__ import annotations

import os
from typing import Any

from fedtheory.errors import FedTheoryError
from fedtheory.io import read_npz
from fedtheory.problems.interpolated import (
    INTERPOLATION_KIND,
    InterpolatedProblem,
    file_kind,
    read_interpolation,
)
from fedtheory.problems.quadratic import (
    LeastSquaresProblem,
    ProblemFile,
    QuadraticProblem,
)
from fedtheory.problems.registry import BUILTIN_PROBLEMS, problem_info

#: What a problem file is (messages about a file that is none).
PROBLEM_FILE_WHAT = (
    "a problem file (.npz: A (N, n, d), b (N, n), optional lam; or an interpolation file)"
)


def make_problem(
    name: str | None = None,
    *,
    path: str | os.PathLike | None = None,
    seed: int = 0,
    dtype: Any = None,
    exact: bool = False,
) -> QuadraticProblem | LeastSquaresProblem | InterpolatedProblem:
    """A built-in problem by ``name`` or a user's problem file from ``path``.

    Parameters
    ----------
    name : str, optional
        A registered built-in problem (:data:`BUILTIN_PROBLEMS`). Exactly one of ``name`` and ``path`` is given.
    path : path to an ``.npz`` file, optional
        Without a ``kind`` array: ``A`` (N, n, d), ``b`` (N, n), optional scalar ``lam``:
        f_i = 1/2 ||A_i x - b_i||^2 + lam/2 ||x||^2 (:class:`~fedtheory.problems.ProblemFile`).
        With ``kind = "interpolation"``: a counterexample's interpolation data
        (:class:`~fedtheory.problems.InterpolatedProblem`, :mod:`fedtheory.problems.interpolated`).
    seed : int
        Seed of the random built-in problems (``figure4`` is the authors' fixed draw).
    dtype : float64 (default) or float32
    exact : bool
        The caller computes exact rates (``fedtheory rate``, ``fedtheory bound``), which need a
        quadratic: an interpolation file is refused, saying to replay it with simulate.

    Raises
    ------
    FedTheoryError
        Neither or both of ``name`` and ``path``, an unknown name (the message lists them), a
        file of an unknown kind, an interpolation file with ``exact``.
    """
    if (name is None) == (path is None):
        raise FedTheoryError(
            "give exactly one problem: a built-in name "
            f"({', '.join(BUILTIN_PROBLEMS)}) or the path of an .npz file"
        )
    if path is not None:
        where = os.fsdecode(os.fspath(path))
        arrays = read_npz(path, what=PROBLEM_FILE_WHAT)
        if file_kind(arrays, where) == INTERPOLATION_KIND:
            if exact:
                raise FedTheoryError(
                    f"{where}: exact rates need a quadratic; this is an interpolation "
                    "counterexample: replay it with fedtheory simulate"
                )
            return InterpolatedProblem(read_interpolation(where, arrays), dtype=dtype)
        return ProblemFile(path, arrays=arrays, dtype=dtype)
    return problem_info(name).build(seed, dtype)
