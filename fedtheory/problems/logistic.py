"""Logistic and softmax regression, convex and with a non-convex regularizer.

- :class:`LogisticProblem`: f_i(x) = (1/n) sum_k log(1 + exp(-b_ik a_ik^T x)) + lam/2 ||x||^2
  with labels b in {-1, +1} (the FOCUS authors' notebook's logistic model); optionally plus the
  smooth non-convex regularizer ``ncvx * sum_j x_j^2 / (1 + x_j^2)`` (Antoniadis, Gijbels and
  Nikolova 2011; the standard smooth non-convex test problem of e.g. Wang et al. 2019
  "SpiderBoost"), which makes f a general smooth non-convex function (claim C4, O(1/R)).
- :class:`SoftmaxRegressionProblem`: multinomial logistic regression, and
  :func:`leaf_synthetic_problem` on LEAF's Synthetic(alpha, beta) (Li et al. 2020, FedProx,
  Section 5.1), drawn by :func:`fedtheory.problems.nn.data.leaf_synthetic`.

Gradients of all clients are einsums over stacked (N, n, d) data; x* is computed once by
Newton's method (logistic) or L-BFGS (softmax) on the full objective when it is strongly convex.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np

from fedtheory.backend import get_namespace, resolve_dtype
from fedtheory.errors import AssumptionError
from fedtheory.problems.base import DeviceCache
from fedtheory.problems.nn.data import leaf_synthetic
from fedtheory.validation import check_finite, check_int, check_positive, check_seed

Array = Any


def _sigmoid(xp: Any, z: Array) -> Array:
    return 0.5 * (1.0 + xp.tanh(0.5 * z))


class LogisticProblem:
    """Federated (regularized) logistic regression with labels in {-1, +1}.

    Parameters
    ----------
    A : array (N, n, d)
    b : array (N, n) of -1 / +1
    lam : float
        Ridge weight >= 0 (lam > 0 makes f lam-strongly convex and x* unique).
    ncvx : float
        Weight of the non-convex regularizer sum_j x_j^2 / (1 + x_j^2) (>= 0). With ncvx > 0,
        x*, f* and mu are not reported (None): the metric is ||grad f||^2.
    noise : float
        Additive Gaussian gradient noise sigma (with an ``rng``).
    dtype : float64 (default) or float32
    """

    def __init__(
        self,
        A: Any,
        b: Any,
        lam: float = 0.0,
        *,
        ncvx: float = 0.0,
        noise: float = 0.0,
        dtype: Any = None,
    ) -> None:
        self.dtype = resolve_dtype(dtype)
        A = check_finite("A", A)
        b = check_finite("b", b)
        if A.ndim != 3 or b.shape != A.shape[:2]:
            raise AssumptionError(f"A must be (N, n, d) and b (N, n); got {A.shape} and {b.shape}")
        if not np.isin(b, (-1.0, 1.0)).all():
            raise AssumptionError("logistic labels b must be -1 or +1")
        self.A = A.astype(self.dtype)
        self.b = b.astype(self.dtype)
        self.lam = check_positive("the ridge weight lam", lam, allow_zero=True)
        self.ncvx = check_positive("the non-convex regularizer weight", ncvx, allow_zero=True)
        self.noise = check_positive("the gradient noise sigma", noise, allow_zero=True)
        self.n_clients, self.n_samples, self.dim = (int(s) for s in A.shape)
        self._dev = DeviceCache()

    def _arrays(self, xp: Any, dtype: Any) -> tuple[Array, Array]:
        return self._dev.get("A", self.A, xp, dtype), self._dev.get("b", self.b, xp, dtype)

    def grads(self, X: Array, rng: Any = None) -> Array:
        """All clients' gradients at their own models: ``(..., N, d) -> (..., N, d)``."""
        xp = get_namespace(X)
        A, b = self._arrays(xp, X.dtype)
        z = xp.einsum("nkd,...nd->...nk", A, X)
        s = -b * _sigmoid(xp, -b * z)
        G = xp.einsum("nkd,...nk->...nd", A, s) / self.n_samples + self.lam * X
        if self.ncvx:
            G = G + self.ncvx * 2.0 * X / (1.0 + X * X) ** 2
        if rng is not None and self.noise:
            G = G + self.noise * xp.asarray(rng.standard_normal(G.shape), dtype=G.dtype)
        return G

    def loss(self, x: Array) -> Array:
        """f(x) for ``x`` of shape ``(..., d)``."""
        xp = get_namespace(x)
        A, b = self._arrays(xp, x.dtype)
        z = xp.einsum("nkd,...d->...nk", A, x)
        val = xp.logaddexp(0.0, -b * z).mean(axis=(-2, -1)) + 0.5 * self.lam * (x * x).sum(-1)
        if self.ncvx:
            val = val + self.ncvx * (x * x / (1.0 + x * x)).sum(axis=-1)
        return val

    def full_grad(self, x: Array) -> Array:
        """grad f(x) for ``x`` of shape ``(..., d)``."""
        xp = get_namespace(x)
        X = xp.broadcast_to(x[..., None, :], x.shape[:-1] + (self.n_clients, self.dim))
        return self.grads(X).mean(axis=-2)

    @property
    def L(self) -> float:
        """sigma_max(A)^2 / (4 N n) + lam (+ 2 ncvx, the regularizer's curvature bound)."""
        flat = self.A.reshape(-1, self.dim).astype(np.float64)
        s = np.linalg.norm(flat, 2) ** 2
        return float(s / (4.0 * flat.shape[0]) + self.lam + 2.0 * self.ncvx)

    @property
    def mu(self) -> float | None:
        return None if self.ncvx else float(self.lam)

    @cached_property
    def x_star(self) -> np.ndarray | None:
        """Newton's method on the full objective (lam > 0 and no non-convex term only)."""
        if self.ncvx or self.lam <= 0:
            return None
        A = self.A.reshape(-1, self.dim).astype(np.float64)
        b = self.b.reshape(-1).astype(np.float64)
        m = A.shape[0]
        x = np.zeros(self.dim)
        for _ in range(100):
            z = A @ x
            s = 1.0 / (1.0 + np.exp(b * z))
            g = -(A.T @ (b * s)) / m + self.lam * x
            H = (A.T * (s * (1 - s))) @ A / m + self.lam * np.eye(self.dim)
            step = np.linalg.solve(H, g)
            x = x - step
            if np.linalg.norm(step) <= 1e-15 * max(1.0, np.linalg.norm(x)):
                break
        return x

    @cached_property
    def f_star(self) -> float | None:
        return None if self.x_star is None else float(self.loss(self.x_star))


def random_logistic(
    n_clients: int,
    n_samples: int,
    dim: int,
    *,
    heterogeneity: float = 1.0,
    lam: float = 1e-2,
    ncvx: float = 0.0,
    noise: float = 0.0,
    seed: int = 0,
    dtype: Any = None,
) -> LogisticProblem:
    """Heterogeneous logistic data as in the FOCUS authors' notebook: rows
    diag((u + 1)/2) G, client models x_o + heterogeneity * e_i, labels from the logistic law."""
    rng = np.random.default_rng(check_seed(seed))
    A = rng.standard_normal((n_clients, n_samples, dim))
    A *= ((rng.random((n_clients, n_samples)) + 1) / 2)[..., None]
    xs = rng.standard_normal(dim) + heterogeneity * rng.standard_normal((n_clients, dim))
    pr = 1.0 / (1.0 + np.exp(-np.einsum("nkd,nd->nk", A, xs)))
    b = np.where(rng.random((n_clients, n_samples)) <= pr, 1.0, -1.0)
    return LogisticProblem(A, b, lam, ncvx=ncvx, noise=noise, dtype=dtype)


class SoftmaxRegressionProblem:
    """Multinomial logistic regression; the model x stacks W (C, F) and the bias (C,).

    f_i(x) = (1/n) sum_k -log softmax(W a_ik + c)_{y_ik} + lam/2 ||x||^2, d = C (F + 1).

    Parameters
    ----------
    A : array (N, n, F)
    y : int array (N, n) with labels in 0..C-1
    n_classes : int
    lam : float
        Ridge weight (> 0 gives a unique x*, computed by L-BFGS).
    noise : float
        Additive Gaussian gradient noise sigma.
    """

    def __init__(
        self,
        A: Any,
        y: Any,
        n_classes: int,
        lam: float = 1e-2,
        *,
        noise: float = 0.0,
        dtype: Any = None,
    ) -> None:
        self.dtype = resolve_dtype(dtype)
        A = check_finite("A", A)
        y = np.asarray(y)
        C = check_int("the number of classes", n_classes, minimum=2)
        if A.ndim != 3 or y.shape != A.shape[:2]:
            raise AssumptionError(f"A must be (N, n, F) and y (N, n); got {A.shape}, {y.shape}")
        if y.min() < 0 or y.max() >= C:
            raise AssumptionError(f"labels must lie in 0..{C - 1}")
        self.A = A.astype(self.dtype)
        self.Y = np.eye(C, dtype=self.dtype)[y]  # (N, n, C) one-hot
        self.n_classes, self.n_features = C, int(A.shape[2])
        self.lam = check_positive("the ridge weight lam", lam, allow_zero=True)
        self.noise = check_positive("the gradient noise sigma", noise, allow_zero=True)
        self.n_clients, self.n_samples = int(A.shape[0]), int(A.shape[1])
        self.dim = C * (self.n_features + 1)
        self._dev = DeviceCache()

    def _split(self, X: Array) -> tuple[Array, Array]:
        C, F = self.n_classes, self.n_features
        W = X[..., : C * F].reshape(X.shape[:-1] + (C, F))
        return W, X[..., C * F :]

    def _probs(self, X: Array, xp: Any) -> tuple[Array, Array]:
        A = self._dev.get("A", self.A, xp, X.dtype)
        W, c = self._split(X)
        z = xp.einsum("nkf,...ncf->...nkc", A, W) + c[..., None, :]
        z = z - z.max(axis=-1, keepdims=True)
        e = xp.exp(z)
        return e / e.sum(axis=-1, keepdims=True), z

    def grads(self, X: Array, rng: Any = None) -> Array:
        xp = get_namespace(X)
        A = self._dev.get("A", self.A, xp, X.dtype)
        Y = self._dev.get("Y", self.Y, xp, X.dtype)
        P, _ = self._probs(X, xp)
        E = (P - Y) / self.n_samples
        gW = xp.einsum("...nkc,nkf->...ncf", E, A)
        gc = E.sum(axis=-2)
        G = xp.concatenate([gW.reshape(X.shape[:-1] + (-1,)), gc], axis=-1) + self.lam * X
        if rng is not None and self.noise:
            G = G + self.noise * xp.asarray(rng.standard_normal(G.shape), dtype=G.dtype)
        return G

    def _bcast(self, x: Array) -> Array:
        xp = get_namespace(x)
        return xp.broadcast_to(x[..., None, :], x.shape[:-1] + (self.n_clients, self.dim))

    def loss(self, x: Array) -> Array:
        xp = get_namespace(x)
        Y = self._dev.get("Y", self.Y, xp, x.dtype)
        P, z = self._probs(self._bcast(x), xp)
        logp = z - xp.log(xp.exp(z).sum(axis=-1, keepdims=True))
        return -(Y * logp).sum(axis=-1).mean(axis=(-2, -1)) + 0.5 * self.lam * (x * x).sum(-1)

    def full_grad(self, x: Array) -> Array:
        return self.grads(self._bcast(x)).mean(axis=-2)

    @property
    def L(self) -> float:
        """A bound: (1/2) max_k ||(a_k, 1)||^2 + lam (softmax Hessian <= I/2 per sample)."""
        a2 = (self.A.astype(np.float64) ** 2).sum(axis=-1).max() + 1.0
        return float(0.5 * a2 + self.lam)

    @property
    def mu(self) -> float:
        return float(self.lam)

    @cached_property
    def x_star(self) -> np.ndarray | None:
        if self.lam <= 0:
            return None

        def fg(x: np.ndarray) -> tuple[float, np.ndarray]:
            return float(self.loss(x)), np.asarray(self.full_grad(x), dtype=np.float64)

        opts = {"gtol": 1e-12, "ftol": 0.0, "maxiter": 5000}
        from scipy.optimize import minimize  # noqa: PLC0415  (0.2 s of SciPy at start-up; x* only)

        res = minimize(fg, np.zeros(self.dim), jac=True, method="L-BFGS-B", options=opts)
        #: ||grad f(x*)|| as computed: x* is numerical here, not a closed form.
        self.x_star_grad_norm = float(np.linalg.norm(fg(res.x)[1]))
        return res.x

    @cached_property
    def f_star(self) -> float | None:
        return None if self.x_star is None else float(self.loss(self.x_star))


def leaf_synthetic_problem(
    alpha: float,
    beta: float,
    n_clients: int = 30,
    *,
    samples: int = 50,
    lam: float = 1e-2,
    noise: float = 0.0,
    seed: int = 0,
    n_features: int = 60,
    n_classes: int = 10,
    iid: bool = False,
    dtype: Any = None,
) -> SoftmaxRegressionProblem:
    """Softmax regression on LEAF Synthetic(alpha, beta) (Li et al. 2020, FedProx, Sec. 5.1).

    The same number of samples per device (``samples``) keeps the data stacked; LEAF's power-law
    device sizes are available from :func:`fedtheory.problems.nn.data.leaf_synthetic` directly.
    """

    rng = np.random.default_rng(check_seed(seed))
    s = check_int("samples per device", samples, minimum=1)
    dev = leaf_synthetic(
        alpha, beta, n_clients, rng, n_features=n_features, n_classes=n_classes, samples=s, iid=iid
    )
    A = np.stack([X for X, _ in dev])
    y = np.stack([yy for _, yy in dev])
    return SoftmaxRegressionProblem(A, y, n_classes, lam, noise=noise, dtype=dtype)
