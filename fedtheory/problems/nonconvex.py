"""A non-convex problem that satisfies the Polyak-Lojasiewicz condition, with known x*.

Karimi, Nutini and Schmidt 2016, "Linear Convergence of Gradient and Proximal-Gradient Methods
Under the Polyak-Lojasiewicz Condition" (ECML-PKDD), Section 2: g(t) = t^2 + 3 sin^2(t) is
non-convex and satisfies the PL inequality with mu = 1/32; g'' = 2 + 6 cos(2t) <= 8.

Federated version (claim C4, 003 Theorem 1 PL part): coordinate-wise
f_i(x) = sum_j g(x_j - s_j) + u_i^T x with sum_i u_i = 0, so
f(x) = (1/N) sum_i f_i(x) = sum_j g(x_j - s_j): x* = s, f* = 0, L = 8, mu_PL = 1/32, while each
f_i is non-convex with a different stationary set (``heterogeneity`` scales the u_i).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fedtheory.backend import get_namespace, resolve_dtype
from fedtheory.problems.quadratic import _DeviceCache
from fedtheory.validation import PROBLEM_BYTES, check_int, check_memory, check_positive, check_seed

Array = Any


class PLProblem:
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
        self.s = (2.0 * rng.standard_normal(self.dim)).astype(self.dtype)
        u = rng.standard_normal((self.n_clients, self.dim))
        self.u = (heterogeneity * (u - u.mean(axis=0))).astype(self.dtype)
        self.x_star = self.s.astype(np.float64)
        self._dev = _DeviceCache()

    def grads(self, X: Array, rng: Any = None) -> Array:
        xp = get_namespace(X)
        s = self._dev.get("s", self.s, xp, X.dtype)
        u = self._dev.get("u", self.u, xp, X.dtype)
        t = X - s
        G = 2.0 * t + 3.0 * xp.sin(2.0 * t) + u
        if rng is not None and self.noise:
            G = G + self.noise * xp.asarray(rng.standard_normal(G.shape), dtype=G.dtype)
        return G

    def loss(self, x: Array) -> Array:
        xp = get_namespace(x)
        t = x - self._dev.get("s", self.s, xp, x.dtype)
        return (t * t + 3.0 * xp.sin(t) ** 2).sum(axis=-1)

    def full_grad(self, x: Array) -> Array:
        xp = get_namespace(x)
        t = x - self._dev.get("s", self.s, xp, x.dtype)
        return 2.0 * t + 3.0 * xp.sin(2.0 * t)
