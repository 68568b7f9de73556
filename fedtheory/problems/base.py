"""The problem interface every simulator and algorithm relies on.

Clients are rows: a problem evaluates all N clients' gradients at once on a stacked array of
client models ``X`` of shape ``(..., N, d)`` (leading axes are seeds). Nothing here loops over
clients in Python.

Optional subset gradients: a problem may also implement
``grads_at(Xs, clients, rng=None) -> (S, M, d)``, the gradients of the clients ``clients``
(an int array ``(S, M)``, client indices per seed) at their models ``Xs (S, M, d)``; row
``[s, m]`` is grad f_{clients[s, m]}(Xs[s, m]), stochastic with ``rng`` as in
:meth:`Problem.grads` (the draws then cover the M clients only, so they differ from the full
call's but are still a function of the seed). :func:`fedtheory.algorithms.local_steps.local_steps`
uses it when only M <= N/2 clients compute; it is not part of the Protocol below, so problems
without it stay valid and take the full path.

An optional attribute ``x0`` (array (d,)) is the problem's own start: a run that gives no
``x0`` starts there instead of at zero (a replayed counterexample,
:class:`~fedtheory.problems.InterpolatedProblem`, starts where its worst case started).

Two more optional members let the local-steps engine skip work; a problem without
them stays valid and is stepped one gradient at a time:

``stochastic`` (bool attribute or property)
    True when ``grads(X, rng)`` with an ``rng`` draws random gradients (noise, minibatches).
    False tells the engine that an ``rng`` changes nothing, so it may evaluate the gradients of
    the participating clients only, in any row layout (the Protocol allows any leading axes).
    A problem without it counts as stochastic whenever an ``rng`` is given.
``local_steps_map(lr, K, xp, dtype) -> (T, c)``
    For gradients affine in the model (quadratics): K exact steps x <- x - lr grad f_i(x) from
    any x equal ``x @ T[i] + c[i]`` (row form), ``T (N, d, d)``, ``c (N, d)``, in namespace
    ``xp`` and ``dtype``; for f_i = 1/2 x^T H_i x - h_i^T x, T_i = (I - lr H_i)^K and
    c_i = sum_{j<K} (I - lr H_i)^j lr h_i. Computed once and cached by the problem; the engine
    applies it with one (d, d) product per client instead of K gradient evaluations.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from fedtheory.backend import get_namespace
from fedtheory.errors import AssumptionError


@runtime_checkable
class Problem(Protocol):
    """A federated objective f(x) = (1/N) sum_i f_i(x) (docs/algorithms.md, Notation).

    Attributes
    ----------
    n_clients : int
        N.
    dim : int
        d, the length of a model vector.
    x_star, f_star : array or None
        The minimizer and minimum of f where known exactly (None otherwise).
    L, mu : float or None
        Smoothness and strong-convexity constants of f where known.
    """

    n_clients: int
    dim: int
    x_star: Any
    f_star: Any
    L: Any
    mu: Any

    def grads(self, X: Any, rng: Any = None) -> Any:
        """Every client's gradient at its own model: ``(..., N, d) -> (..., N, d)``.

        Row i of the result is grad f_i(X[..., i, :]). With ``rng`` (a
        :class:`numpy.random.Generator`) and a problem configured with gradient noise or
        minibatches, the gradients are stochastic; without ``rng`` they are exact.
        """

    def loss(self, x: Any) -> Any:
        """f(x) for server models ``x`` of shape ``(..., d)``; returns shape ``(...)``."""

    def full_grad(self, x: Any) -> Any:
        """grad f(x) = (1/N) sum_i grad f_i(x) for ``x`` of shape ``(..., d)``."""


def check_problem(problem: Any, name: str = "problem") -> Any:
    """``problem`` when it has what every run reads of a :class:`Problem` (``n_clients``,
    ``dim``, ``grads``).

    Raises
    ------
    AssumptionError
        Anything else (``None``, a path, an array), naming what was given and how to make one.
    """
    if not all(hasattr(problem, k) for k in ("n_clients", "dim", "grads")):
        what = type(problem).__name__ if problem is not None else "None"
        raise AssumptionError(
            f"{name} must be a problem (make_problem('quadratic'), random_quadratic(...), "
            f"ProblemFile(path), ...), got {what}"
        )
    return problem


class DeviceCache:
    """Copies of a problem's arrays in the namespace (and dtype) of the iterates.

    A problem keeps one (``self._dev = DeviceCache()``) and reads its arrays through
    ``self._dev.get(name, array, xp, dtype)``: the first call on a backend copies (to the GPU
    for CuPy), later calls reuse the copy.
    """

    def __init__(self) -> None:
        self._cache: dict = {}

    def get(self, name: str, arr: np.ndarray, xp: Any, dtype: Any) -> Any:
        key = (name, xp, np.dtype(dtype))
        out = self._cache.get(key)
        if out is None:
            out = self._cache[key] = xp.asarray(arr, dtype=dtype)
        return out


def client_matmul(X: Any, M: Any) -> Any:
    """``X[..., i, :] @ M[i]`` for every client row: ``(B, N, d), (N, d, e) -> (B, N, e)``, a
    new array.

    One GEMM per client over the B rows (NumPy and CuPy batch over the client axis). Both
    operands are strided views (client i's rows are ``d N`` apart), which BLAS reads and writes
    in place: no transposed copy on the way in or out, and the result stays client-minor.
    """
    xp = get_namespace(X)
    out = xp.empty(X.shape[:-1] + (M.shape[-1],), dtype=X.dtype)
    xp.matmul(X.transpose(1, 0, 2), M, out=out.transpose(1, 0, 2))
    return out
