"""Quadratics, least squares and ridge: federated problems whose answers are linear solves.

f_i(x) = 1/2 x^T H_i x - h_i^T x + c_i, f = (1/N) sum_i f_i (docs/algorithms.md section 5). Least
squares / ridge is the special case H_i = A_i^T A_i + lam I, h_i = A_i^T b_i,
c_i = 1/2 ||b_i||^2, i.e. f_i(x) = 1/2 ||A_i x - b_i||^2 + lam/2 ||x||^2 (no 1/n scaling, as in
the FOCUS authors' Figure 4 notebook). All clients' gradients are one batched matrix product
over the client axis; nothing loops over clients.
"""

from __future__ import annotations

import os
from functools import cached_property
from typing import Any

import numpy as np

from fedtheory.backend import get_namespace, resolve_dtype, row_dots
from fedtheory.errors import AssumptionError, FedTheoryError
from fedtheory.io import read_npz
from fedtheory.problems.base import DeviceCache, client_matmul
from fedtheory.problems.registry import register_problem
from fedtheory.validation import (
    PROBLEM_BYTES,
    as_real_array,
    check_finite,
    check_int,
    check_local_steps,
    check_memory,
    check_positive,
    check_seed,
)

Array = Any

#: What a least-squares problem file is, for messages about a file that is not one.
FILE_WHAT = "an .npz archive (numpy.savez) with arrays A (N, n, d) and b (N, n)"


class QuadraticProblem:
    """f_i(x) = 1/2 x^T H_i x - h_i^T x + c_i with symmetric positive semidefinite H_i.

    Parameters
    ----------
    H : array, shape (N, d, d)
        Symmetric positive semidefinite Hessians.
    h : array, shape (N, d)
    c : array, shape (N,), optional
        Constants (they only shift f and f*).
    noise : float
        Standard deviation sigma of additive Gaussian gradient noise (stochastic gradients
        g_i = grad f_i + sigma xi, xi ~ N(0, I)); used only when ``grads`` gets an ``rng``.
    dtype : float64 (default) or float32

    Attributes
    ----------
    x_star, f_star : the minimizer and minimum of f (None if the mean Hessian is singular)
    L, mu : largest and smallest eigenvalue of the mean Hessian (smoothness, strong convexity)
    L_max : max_i lambda_max(H_i), the smoothness of the worst client
    sigma_g : sqrt((1/N) sum_i ||grad f_i(x*)||^2), the heterogeneity at the optimum

    Raises
    ------
    AssumptionError
        Shapes that do not match, non-finite entries, a non-symmetric or indefinite H_i.
    """

    def __init__(
        self, H: Any, h: Any, c: Any = None, *, noise: float = 0.0, dtype: Any = None
    ) -> None:
        self.dtype = resolve_dtype(dtype)
        H = check_finite("H", H)
        h = check_finite("h", h)
        if H.ndim != 3 or H.shape[1] != H.shape[2]:
            raise AssumptionError(f"H must have shape (N, d, d), got {H.shape}")
        if H.shape[0] < 1 or H.shape[1] < 1:
            raise AssumptionError(
                f"a problem needs at least one client and dimension d >= 1, got N = "
                f"{H.shape[0]} clients of dimension d = {H.shape[1]}"
            )
        if h.shape != H.shape[:2]:
            raise AssumptionError(f"h must have shape (N, d) = {H.shape[:2]}, got {h.shape}")
        asym = np.abs(H - np.swapaxes(H, 1, 2)).max(initial=0.0)
        if asym > 1e-10 * max(1.0, np.abs(H).max(initial=0.0)):
            raise AssumptionError(f"every H_i must be symmetric (max |H - H^T| = {asym:.3g})")
        H = 0.5 * (H + np.swapaxes(H, 1, 2))
        eig = np.linalg.eigvalsh(H)
        if eig.min() < -1e-10 * max(1.0, eig.max()):
            i = int(np.argmin(eig.min(axis=1)))
            raise AssumptionError(
                f"every H_i must be positive semidefinite: H_{i} has eigenvalue {eig[i].min():.3g}"
            )
        self.H = H.astype(self.dtype)
        self.h = h.astype(self.dtype)
        self.c = np.zeros(H.shape[0]) if c is None else check_finite("c", c).reshape(H.shape[0])
        self.noise = check_positive("the gradient noise sigma", noise, allow_zero=True)
        self.n_clients, self.dim = int(H.shape[0]), int(H.shape[1])
        self._client_eigs = eig
        self._dev = DeviceCache()

    # -- the Problem protocol ---------------------------------------------------------------
    def grads(self, X: Array, rng: Any = None) -> Array:
        """grad f_i(X[..., i, :]) for every client: ``(..., N, d) -> (..., N, d)``."""
        N, d = self.n_clients, self.dim
        if X.shape[-2:] != (N, d):
            raise AssumptionError(f"X must end with (clients, dim) = {(N, d)}, got {X.shape}")
        return self._add_noise(self._exact_grads(X, None), rng)

    def grads_of(self, X: Array, clients: Array) -> Array:
        """Exact gradients of a subset of the clients: row ``[..., j, :]`` of ``X (..., u, d)``
        is client ``clients[j]``'s model, and the result's is grad f_{clients[j]} there (one GEMM
        per listed client; the participants-only rounds of many clients use it, so a round
        costs what its participants cost)."""
        return self._exact_grads(X, clients)

    def _exact_grads(self, X: Array, clients: Array | None) -> Array:
        """H_i x_i - h_i for the clients along X's client axis (every client, or ``clients``):
        one GEMM per client, (B, d) @ (d, d), rows x_i^T H_i = (H_i x_i)^T (H symmetric)."""
        xp = get_namespace(X)
        H = self._dev.get("H", self.H, xp, X.dtype)
        h = self._dev.get("h", self.h, xp, X.dtype)
        if clients is not None:
            H, h = H[clients], h[clients]
        X3 = X if X.ndim == 3 else X.reshape((-1,) + X.shape[-2:])
        G = client_matmul(X3, H)
        G -= h
        return G if X.ndim == 3 else G.reshape(X.shape)

    @property
    def stochastic(self) -> bool:
        """True when :meth:`grads` with an ``rng`` draws random gradients (noise sigma > 0)."""
        return self.noise > 0

    def local_steps_map(self, lr: float, K: int, xp: Any = np, dtype: Any = None) -> tuple:
        """The affine map of K exact local gradient steps, ``(T (N, d, d), c (N, d))``.

        One step x <- x - lr (H_i x - h_i) is x <- P_i x + lr h_i with P_i = I - lr H_i, so K
        steps from x are P_i^K x + sum_{j<K} P_i^j lr h_i (docs/algorithms.md section 5, the FedAvg
        fixed point of Li et al. 2019a is built from the same P_i^K). In the row form of the
        simulator (client models are rows, P_i symmetric): ``x_K = x @ T[i] + c[i]``. Built in
        float64 by applying the K steps to the identity and to zero, once per
        ``(lr, K, namespace, dtype)`` and cached; then cast to ``dtype``.
        """
        return self._maps(lr, K, xp, dtype)[:2]

    def tilt_map(self, lr: float, K: int, xp: Any = np, dtype: Any = None) -> Array:
        """The input map of K exact steps on a tilted client objective, ``B (N, d, d)``.

        K steps x <- x - lr (grad f_i(x) - v) on f_i(x) - v^T x (a linear tilt v, constant over
        the steps) from x equal ``x @ T[i] + c[i] + v @ B[i]``, with (T, c) of
        :meth:`local_steps_map` and B_i = sum_{j<K} (I - lr H_i)^j lr (symmetric). FOCUS's local
        pass is such a tilt (003 Algorithm 1: x_k = x_{k-1} - eta (g_{k-1} - g_prev_i), so v =
        g_prev_i); built with the same loop as :meth:`local_steps_map` and cached with it.
        """
        return self._maps(lr, K, xp, dtype)[2]

    def _maps(self, lr: float, K: int, xp: Any, dtype: Any) -> tuple:
        """``(T, c, B)`` of K steps (see :meth:`local_steps_map`, :meth:`tilt_map`), built in
        float64 by applying the steps to the identity and to zero, once per ``(lr, K,
        namespace, dtype)``; then cast to ``dtype``."""
        dt = np.dtype(self.dtype if dtype is None else dtype)
        key = ("kmap", float(lr), int(K), xp, dt)
        cached = self._dev._cache.get(key)
        if cached is None:
            check_local_steps(K, "the map of")  # K products, one after the other
            H = self.H.astype(np.float64)
            d = self.dim
            eye = np.eye(d)
            P = eye - lr * H  # (N, d, d), symmetric
            T = np.broadcast_to(eye, H.shape).copy()
            B = np.zeros(H.shape)
            c = np.zeros(self.h.shape)
            lh = lr * self.h.astype(np.float64)
            for _ in range(int(K)):
                T = T @ P
                B = B @ P + lr * eye
                c = (c[:, None, :] @ P)[:, 0, :] + lh
            cached = tuple(xp.asarray(a, dtype=dt) for a in (T, c, B))
            self._dev._cache[key] = cached
        return cached

    def _add_noise(self, G: Array, rng: Any) -> Array:
        if rng is None or self.noise == 0.0:
            return G
        xp = get_namespace(G)
        return G + self.noise * xp.asarray(rng.standard_normal(G.shape), dtype=G.dtype)

    def client_losses(self, X: Array) -> Array:
        """f_i(X[..., i, :]): ``(..., N, d) -> (..., N)``."""
        xp = get_namespace(X)
        H = self._dev.get("H", self.H, xp, X.dtype)
        h = self._dev.get("h", self.h, xp, X.dtype)
        c = self._dev.get("c", self.c, xp, X.dtype)
        HX = xp.einsum("nde,...ne->...nd", H, X)
        return 0.5 * (X * HX).sum(axis=-1) - (X * h).sum(axis=-1) + c

    def loss(self, x: Array) -> Array:
        """f(x) = (1/N) sum_i f_i(x) for ``x`` of shape ``(..., d)``."""
        xp = get_namespace(x)
        Hb = self._dev.get("Hbar", self.H_mean, xp, x.dtype)
        hb = self._dev.get("hbar", self.h_mean, xp, x.dtype)
        return 0.5 * row_dots(x, x @ Hb) - row_dots(x, hb) + self._c_mean

    def full_grad(self, x: Array) -> Array:
        """grad f(x) = Hbar x - hbar for ``x`` of shape ``(..., d)``."""
        xp = get_namespace(x)
        Hb = self._dev.get("Hbar", self.H_mean, xp, x.dtype)
        hb = self._dev.get("hbar", self.h_mean, xp, x.dtype)
        return x @ Hb - hb

    # -- known answers ----------------------------------------------------------------------
    @cached_property
    def _c_mean(self) -> float:
        return float(self.c.mean())

    @cached_property
    def H_mean(self) -> np.ndarray:
        return self.H.astype(np.float64).mean(axis=0)

    @cached_property
    def h_mean(self) -> np.ndarray:
        return self.h.astype(np.float64).mean(axis=0)

    @cached_property
    def _eig_mean(self) -> np.ndarray:
        return np.linalg.eigvalsh(self.H_mean)

    @property
    def L(self) -> float:
        return float(self._eig_mean[-1])

    @property
    def mu(self) -> float:
        return float(max(self._eig_mean[0], 0.0))

    @property
    def L_max(self) -> float:
        return float(self._client_eigs.max())

    @property
    def condition_number(self) -> float:
        return self.L / self.mu if self.mu > 0 else float("inf")

    @cached_property
    def x_star(self) -> np.ndarray | None:
        if self._eig_mean[0] <= 1e-14 * max(1.0, self._eig_mean[-1]):
            return None
        return np.linalg.solve(self.H_mean, self.h_mean)

    @cached_property
    def f_star(self) -> float | None:
        if self.x_star is None:
            return None
        x = self.x_star
        return float(0.5 * x @ self.H_mean @ x - self.h_mean @ x + self.c.mean())

    @cached_property
    def sigma_g(self) -> float | None:
        if self.x_star is None:
            return None
        g = np.einsum("nde,e->nd", self.H.astype(np.float64), self.x_star) - self.h
        return float(np.sqrt((g**2).sum(axis=1).mean()))

    def client_optima(self) -> np.ndarray:
        """x_i* = H_i^{-1} h_i for every client (raises if some H_i is singular)."""
        if self._client_eigs.min() <= 0:
            raise AssumptionError("client optima need every H_i positive definite")
        return np.linalg.solve(self.H.astype(np.float64), self.h.astype(np.float64)[..., None])[
            ..., 0
        ]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(N={self.n_clients}, d={self.dim})"


class LeastSquaresProblem(QuadraticProblem):
    """Least squares / ridge: f_i(x) = 1/2 ||A_i x - b_i||^2 + lam/2 ||x||^2.

    Parameters
    ----------
    A : array, shape (N, n, d)
        Client i's rows (n per client).
    b : array, shape (N, n)
    lam : float
        Ridge weight >= 0.
    noise : float
        Additive Gaussian gradient noise sigma (used with an ``rng``).
    batch_size : int, optional
        Minibatch stochastic gradients instead: (n/B) A_iB^T (A_iB x - b_iB) + lam x over B rows
        drawn uniformly with replacement per client and seed (unbiased).
    dtype : float64 (default) or float32
    """

    def __init__(
        self,
        A: Any,
        b: Any,
        lam: float = 0.0,
        *,
        noise: float = 0.0,
        batch_size: int | None = None,
        dtype: Any = None,
    ) -> None:
        A = check_finite("A", A)
        b = check_finite("b", b)
        if A.ndim != 3:
            raise AssumptionError(f"A must have shape (clients, rows, dim), got {A.shape}")
        if A.shape[0] < 1 or A.shape[2] < 1:
            raise AssumptionError(
                f"A has shape {A.shape}: a problem needs at least one client and dimension "
                "d >= 1 (A is (clients, rows, dim))"
            )
        if b.ndim == 3 and b.shape[-1] == 1:
            b = b[..., 0]
        if b.shape != A.shape[:2]:
            raise AssumptionError(
                f"b must have shape (clients, rows) = {A.shape[:2]}, got {b.shape}"
            )
        lam = check_positive("the ridge weight lam", lam, allow_zero=True)
        d = A.shape[2]
        H = np.einsum("nkd,nke->nde", A, A) + lam * np.eye(d)
        h = np.einsum("nkd,nk->nd", A, b)
        c = 0.5 * (b**2).sum(axis=1)
        super().__init__(H, h, c, noise=noise, dtype=dtype)
        self.A = A.astype(self.dtype)
        self.b = b.astype(self.dtype)
        self.lam = lam
        self.batch_size = None
        if batch_size is not None:
            self.batch_size = check_int("the minibatch size", batch_size, minimum=1)

    @property
    def stochastic(self) -> bool:
        """True when :meth:`grads` with an ``rng`` draws random gradients (noise or minibatches)."""
        return self.noise > 0 or self.batch_size is not None

    def grads(self, X: Array, rng: Any = None) -> Array:
        if rng is None or self.batch_size is None:
            return super().grads(X, rng)
        xp = get_namespace(X)
        if X.ndim != 3:
            raise AssumptionError("minibatch gradients need X of shape (seeds, clients, dim)")
        S, N, d = X.shape
        n, B = self.A.shape[1], self.batch_size
        # indices drawn on the host (a SeedRng moves them to X's device); the rows are gathered
        # where X lives, never by np.asarray on a device array
        idx = xp.asarray(rng.integers(0, n, size=(S, N, B)))
        clients = xp.arange(N)[None, :, None]
        A = self._dev.get("A", self.A, xp, X.dtype)[clients, idx]  # (S, N, B, d)
        b = self._dev.get("b", self.b, xp, X.dtype)[clients, idx]
        r = xp.einsum("snbd,snd->snb", A, X) - b
        G = (n / B) * xp.einsum("snbd,snb->snd", A, r) + self.lam * X
        return self._add_noise(G, rng)


class ProblemFile(LeastSquaresProblem):
    """A user's least-squares / ridge problem from an ``.npz`` file.

    The file holds ``A`` (N, n, d), ``b`` (N, n) (or (N, n, 1)) and optionally a scalar ``lam``
    (f_i = 1/2 ||A_i x - b_i||^2 + lam/2 ||x||^2); ``arrays``: the file's arrays, already read
    by :func:`fedtheory.io.read_npz` (:func:`fedtheory.problems.make_problem` reads a file once
    and dispatches on its ``kind``). Its minimizer x* must be unique, since
    every error the simulator reports is relative to it: a file whose mean Hessian
    (1/N) sum_i A_i^T A_i + lam I is singular (too few rows, collinear columns, lam = 0) is
    refused, naming its rank, rather than giving all-NaN error curves.

    Raises
    ------
    FileNotFoundError
        The file does not exist (``filename`` is the path as given).
    FedTheoryError / AssumptionError
        A folder, a ``.npy`` file or text instead of an ``.npz`` archive, a damaged archive, a
        missing array, a complex, string or object dtype, wrong shapes, NaN/inf entries,
        lam < 0, or no unique minimizer; every message names the path.
    """

    def __init__(self, path: str | os.PathLike, *, arrays: dict | None = None, **kw: Any) -> None:
        self.path = os.fsdecode(os.fspath(path))
        data = read_npz(self.path, what=FILE_WHAT) if arrays is None else arrays
        for key in ("A", "b"):
            if key not in data:
                raise FedTheoryError(f"{self.path} has no array {key!r} (it has {sorted(data)})")
        lam = data.get("lam", 0.0)
        if np.ndim(lam) != 0:
            raise AssumptionError(f"lam in {self.path} must be a scalar, got shape {np.shape(lam)}")
        lam = as_real_array(f"lam in {self.path}", lam)
        try:
            super().__init__(
                as_real_array(f"A in {self.path}", data["A"]),
                as_real_array(f"b in {self.path}", data["b"]),
                float(lam),
                **kw,
            )
        except AssumptionError as exc:  # name the file: "A has shape ..." alone is not enough
            msg = str(exc)
            raise AssumptionError(msg if self.path in msg else f"{self.path}: {msg}") from None
        if self.x_star is None:
            N, n, d = self.A.shape
            rank = int(np.linalg.matrix_rank(self.H_mean))
            why = f"only {N * n} rows for d = {d}" if N * n < d else "collinear columns"
            raise AssumptionError(
                f"{self.path}: the minimizer x* is not unique ({why}: the mean Hessian "
                f"(1/N) sum_i A_i^T A_i + lam I has rank {rank} < d = {d}); relative errors "
                "need a unique x*: add a ridge weight lam > 0 to the file"
            )


def figure4_probabilities(n: int = 16) -> np.ndarray:
    """The arbitrary-participation weights of 003 Figure 4, drawn as the authors' notebook does:
    legacy ``numpy.random.seed(5)``, ``rand(n) + 0.01``, normalized (for n = 16 these are the
    Figure 4 probabilities; other n give the same recipe's weights for another client count)."""
    n = check_int("the number of clients n", n, minimum=1)
    p = np.random.RandomState(5).rand(n) + 0.01
    return p / p.sum()


def figure4_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The FOCUS paper's Figure 4 data, drawn as the authors' notebook draws it.

    Legacy ``numpy.random.seed(1234)``, then in this order ``rand(8000)``,
    ``randn(8000, 50)``, ``randn(50, 1)``, ``0.1 * randn(8000, 1)``; A = diag((u + 1)/2) G,
    b = A x_o + noise; client i gets rows i, i + 16, ... (003 Figure 4; docs/algorithms.md sec. 5).

    Returns
    -------
    A : (16, 500, 50), b : (16, 500), x_o : (50,), p : (16,)
        ``p`` are the arbitrary-participation probabilities: legacy ``seed(5)``,
        ``rand(16) + 0.01``, normalized.
    """
    # RandomState(seed) is the legacy global generator's stream, without touching global state.
    rs = np.random.RandomState(1234)
    u = rs.rand(8000)
    G = rs.randn(8000, 50)
    x_o = rs.randn(50, 1)
    ns = 0.1 * rs.randn(8000, 1)
    A = ((u + 1) / 2)[:, None] * G
    b = A @ x_o + ns
    p = np.random.RandomState(5).rand(16) + 0.01
    p = p / p.sum()
    A_c = np.stack([A[i::16] for i in range(16)])
    b_c = np.stack([b[i::16, 0] for i in range(16)])
    return A_c, b_c, x_o[:, 0], p


def figure4_problem(dtype: Any = None) -> LeastSquaresProblem:
    """The least-squares problem of 003 Figure 4 (N = 16, n = 500, d = 50, lam = 0).

    The returned problem carries ``participation_p`` (the arbitrary-participation
    probabilities), ``clients_per_round`` (4: the figure's partial-participation regimes draw 4
    of the 16 clients) and ``x_o`` (the generating model).
    """
    A, b, x_o, p = figure4_data()
    prob = LeastSquaresProblem(A, b, 0.0, dtype=dtype)
    prob.participation_p = p
    prob.clients_per_round = 4
    prob.x_o = x_o
    prob.name = "figure4"  # the built-in name (problems.registry)
    return prob


def random_quadratic(
    n_clients: int,
    dim: int,
    *,
    condition: float = 10.0,
    heterogeneity: float = 1.0,
    noise: float = 0.0,
    identical: bool = False,
    seed: int = 0,
    dtype: Any = None,
) -> QuadraticProblem:
    """Heterogeneous strongly convex quadratics with tunable conditioning and drift.

    H_i = Q_i diag(lambda) Q_i^T with eigenvalues log-spaced in [1/condition, 1] and a random
    rotation Q_i per client (the same Q for every client when ``identical``), local optima
    x_i* = z + heterogeneity * e_i (z, e_i standard normal), h_i = H_i x_i*.
    ``identical=True`` makes every f_i the same (003 Corollary 3).
    """
    n_clients = check_int("the number of clients", n_clients, minimum=1)
    dim = check_int("the dimension", dim, minimum=1)
    check_memory(
        f"{n_clients} quadratics of dimension {dim} (N d^2 Hessian entries)",
        PROBLEM_BYTES * float(n_clients) * dim * dim,
    )
    check_positive("the condition number", condition)
    if condition < 1:
        raise AssumptionError(f"the condition number must be >= 1, got {condition}")
    check_positive("the heterogeneity", heterogeneity, allow_zero=True)
    rng = np.random.default_rng(check_seed(seed))
    lam = np.logspace(-np.log10(condition), 0.0, dim)
    nq = 1 if identical else n_clients
    Q = np.linalg.qr(rng.standard_normal((nq, dim, dim)))[0]
    H = np.einsum("nij,j,nkj->nik", Q, lam, Q)
    H = np.broadcast_to(H, (n_clients, dim, dim)).copy()
    z = rng.standard_normal(dim)
    e = rng.standard_normal((n_clients, dim))
    xs = z + (0.0 if identical else heterogeneity) * e
    h = np.einsum("nij,nj->ni", H, xs)
    return QuadraticProblem(H, h, noise=noise, dtype=dtype)


def random_least_squares(
    n_clients: int,
    n_samples: int,
    dim: int,
    *,
    heterogeneity: float = 1.0,
    lam: float = 0.0,
    noise: float = 0.0,
    label_noise: float = 0.1,
    batch_size: int | None = None,
    seed: int = 0,
    dtype: Any = None,
) -> LeastSquaresProblem:
    """Synthetic federated least squares: client i draws rows A_i ~ N(0, I) (scaled per row as
    in 003 Figure 4) and labels b_i = A_i (x_o + heterogeneity * e_i) + label_noise * xi."""
    n_clients = check_int("the number of clients", n_clients, minimum=1)
    n_samples = check_int("the rows per client", n_samples, minimum=1)
    dim = check_int("the dimension", dim, minimum=1)
    check_memory(
        f"least squares of {n_clients} clients x {n_samples} rows x dimension {dim}",
        PROBLEM_BYTES * float(n_clients) * (n_samples * dim + dim * dim),
    )
    rng = np.random.default_rng(check_seed(seed))
    A = rng.standard_normal((n_clients, n_samples, dim))
    A *= ((rng.random((n_clients, n_samples)) + 1) / 2)[..., None]
    x_o = rng.standard_normal(dim)
    xs = x_o + heterogeneity * rng.standard_normal((n_clients, dim))
    b = np.einsum("nkd,nd->nk", A, xs) + label_noise * rng.standard_normal((n_clients, n_samples))
    return LeastSquaresProblem(A, b, lam, noise=noise, batch_size=batch_size, dtype=dtype)


# --------------------------------------------------------------------------------------------
# The built-in problems of the command line (``--problem NAME``), registered in this order.


@register_problem(
    "figure4", "003 Figure 4 least squares: N=16, 500 rows each, d=50 (authors' data)"
)
def _figure4(seed: int, dtype: Any) -> LeastSquaresProblem:
    return figure4_problem(dtype=dtype)  # the authors' fixed draw: the seed is not read


@register_problem("quadratic", "random heterogeneous quadratics: N=16, d=20, condition 10")
def _quadratic(seed: int, dtype: Any) -> QuadraticProblem:
    return random_quadratic(16, 20, seed=seed, dtype=dtype)


@register_problem("least-squares", "random heterogeneous least squares: N=16, 100 rows, d=20")
def _least_squares(seed: int, dtype: Any) -> LeastSquaresProblem:
    return random_least_squares(16, 100, 20, seed=seed, dtype=dtype)
