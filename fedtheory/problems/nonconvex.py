"""Smooth non-convex problems with known x*: one with the Polyak-Lojasiewicz condition, one without.

:class:`PLProblem` (PL, gradient descent converges linearly) and :class:`NonPLProblem` (no PL,
gradient descent converges sublinearly): the two parts of 003 Theorem 1 beyond strong convexity
(claim C4).

Karimi, Nutini and Schmidt 2016, "Linear Convergence of Gradient and Proximal-Gradient Methods
Under the Polyak-Lojasiewicz Condition" (ECML-PKDD), Section 2: g(t) = t^2 + 3 sin^2(t) is
non-convex and satisfies the PL inequality with mu = 1/32; g'' = 2 + 6 cos(2t) <= 8.

Federated version (claim C4, 003 Theorem 1 PL part): coordinate-wise
f_i(x) = sum_j g(x_j - s_j) + u_i^T x with sum_i u_i = 0, so
f(x) = (1/N) sum_i f_i(x) = sum_j g(x_j - s_j): x* = s, f* = 0, L = 8, mu_PL = 1/32, while each
f_i is non-convex with a different stationary set (``heterogeneity`` scales the u_i).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from fedtheory.backend import get_namespace, resolve_dtype
from fedtheory.problems.base import DeviceCache
from fedtheory.validation import PROBLEM_BYTES, check_int, check_memory, check_positive, check_seed

Array = Any


class _SeparableProblem(ABC):
    """f_i(x) = sum_j psi(x_j - s_j) + u_i^T x with sum_i u_i = 0, so f = sum_j psi(x_j - s_j),
    x* = s and f* = 0 for psi >= 0 with psi(0) = 0; subclasses give psi and psi'.

    ``offset`` scales the draw of s ~ N(0, offset^2 I); ``heterogeneity`` the client tilts u_i
    (standard normal, centred so they sum to zero); ``noise`` is additive Gaussian gradient
    noise sigma (with an ``rng``).
    """

    offset = 1.0
    f_star = 0.0

    def __init__(
        self,
        n_clients: int,
        dim: int,
        *,
        heterogeneity: float = 1.0,
        noise: float = 0.0,
        seed: int = 0,
        dtype: Any = None,
    ) -> None:
        self.dtype = resolve_dtype(dtype)
        self.n_clients = check_int("the number of clients", n_clients, minimum=1)
        self.dim = check_int("the dimension", dim, minimum=1)
        check_memory(
            f"a problem of {self.n_clients} clients x dimension {self.dim}",
            PROBLEM_BYTES * float(self.n_clients) * self.dim,
        )
        check_positive("the heterogeneity", heterogeneity, allow_zero=True)
        self.noise = check_positive("the gradient noise sigma", noise, allow_zero=True)
        rng = np.random.default_rng(check_seed(seed))
        self.s = (self.offset * rng.standard_normal(self.dim)).astype(self.dtype)
        u = rng.standard_normal((self.n_clients, self.dim))
        self.u = (heterogeneity * (u - u.mean(axis=0))).astype(self.dtype)
        self.x_star = self.s.astype(np.float64)
        self._dev = DeviceCache()

    @staticmethod
    @abstractmethod
    def _psi(xp: Any, t: Array) -> Array:
        """psi(t), elementwise."""

    @staticmethod
    @abstractmethod
    def _dpsi(xp: Any, t: Array) -> Array:
        """psi'(t), elementwise."""

    def grads(self, X: Array, rng: Any = None) -> Array:
        xp = get_namespace(X)
        s = self._dev.get("s", self.s, xp, X.dtype)
        u = self._dev.get("u", self.u, xp, X.dtype)
        G = self._dpsi(xp, X - s) + u
        if rng is not None and self.noise:
            G = G + self.noise * xp.asarray(rng.standard_normal(G.shape), dtype=G.dtype)
        return G

    def loss(self, x: Array) -> Array:
        xp = get_namespace(x)
        return self._psi(xp, x - self._dev.get("s", self.s, xp, x.dtype)).sum(axis=-1)

    def full_grad(self, x: Array) -> Array:
        xp = get_namespace(x)
        return self._dpsi(xp, x - self._dev.get("s", self.s, xp, x.dtype))


class PLProblem(_SeparableProblem):
    """f_i(x) = sum_j [(x_j - s_j)^2 + 3 sin^2(x_j - s_j)] + u_i^T x, sum_i u_i = 0.

    Parameters
    ----------
    n_clients, dim : int
    heterogeneity : float
        Scale of the client drifts u_i (standard normal, centred so they sum to zero).
    noise : float
        Additive Gaussian gradient noise sigma (with an ``rng``).
    seed : int
    dtype : float64 (default) or float32
    """

    L = 8.0
    mu = 1.0 / 32.0  # the PL constant of Karimi et al. (2016)
    offset = 2.0

    @staticmethod
    def _psi(xp: Any, t: Array) -> Array:
        return t * t + 3.0 * xp.sin(t) ** 2

    @staticmethod
    def _dpsi(xp: Any, t: Array) -> Array:
        return 2.0 * t + 3.0 * xp.sin(2.0 * t)


def _psi_curvature_max() -> float:
    """max_t psi''(t) for psi(t) = t^4 / (1 + t^2)^2: psi'' = 12 t^2 (1 - t^2) / (1 + t^2)^4 is
    largest at t^2 = u* = (5 - sqrt 17) / 4 (the root of 2u^2 - 5u + 1 in [0, 1])."""
    u = (5.0 - np.sqrt(17.0)) / 4.0
    return float(12.0 * u * (1.0 - u) / (1.0 + u) ** 4)


class NonPLProblem(_SeparableProblem):
    """A sum of non-convex robust losses with a degenerate minimum: smooth, non-convex, not PL.

    f_i(x) = sum_j psi(x_j - s_j) + u_i^T x with psi(t) = t^4 / (1 + t^2)^2 (the square of the
    Geman-McClure loss t^2 / (1 + t^2)) and sum_i u_i = 0, so
    f(x) = (1/N) sum_i f_i(x) = sum_j psi(x_j - s_j): x* = s, f* = 0.

    - Smooth: psi''(t) = 12 t^2 (1 - t^2) / (1 + t^2)^4, so every f_i is L-smooth with
      L = max psi'' = 0.9295... (at t^2 = (5 - sqrt 17) / 4).
    - Non-convex: psi'' < 0 for |t| > 1 (psi is bounded: a robust loss), and every f_i too.
    - Not PL: ||grad f||^2 / (f - f*) = sum_j 16 t_j^6 / (1 + t_j^2)^6 / sum_j psi(t_j) tends to 0
      as x -> x* (psi ~ t^4: the minimum is degenerate, psi''(0) = 0) and as |t| -> infinity,
      so no mu > 0 has ||grad f||^2 >= 2 mu (f - f*).
    - Sublinear: gradient descent near x* is t <- t - eta 4 t^3 (1 + O(t^2)), so
      t_k ~ (8 eta k)^(-1/2) and ||grad f(x_k)||^2 ~ 16 t_k^6 ~ k^(-3): polynomial, not
      geometric, decay (a test checks it). The O(1/R) bound of 003 Theorem 1 (non-convex part)
      on min_r ||grad f(x_r)||^2 is an upper bound this decay satisfies.

    Parameters
    ----------
    n_clients, dim : int
    heterogeneity : float
        Scale of the client tilts u_i (standard normal, centred so they sum to zero).
    noise : float
        Additive Gaussian gradient noise sigma (with an ``rng``).
    seed : int
        Draws s ~ N(0, I) (so x_0 = 0 starts about one unit from x*, near the degenerate
        minimum rather than on the loss's flat tails) and the u_i.
    dtype : float64 (default) or float32
    """

    L = _psi_curvature_max()
    mu = None  # no PL constant: the point of this problem

    @staticmethod
    def _psi(xp: Any, t: Array) -> Array:
        r = t * t / (1.0 + t * t)
        return r * r

    @staticmethod
    def _dpsi(xp: Any, t: Array) -> Array:
        q = 1.0 + t * t
        return 4.0 * t**3 / (q * q * q)
