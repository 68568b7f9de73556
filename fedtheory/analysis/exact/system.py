"""The exact first- and second-moment dynamics of a random block-affine round.

Given a :class:`~fedtheory.analysis.exact.extract.RoundModel` (z' = M_S z + c_S + noise,
M_S = L0 + sum_k alpha_k(S) G_k with client-local G_k) and the law of alpha, this module builds

* the mean map E[M_S] (dense; its spectral radius is the *mean rate*);
* the mean-square operator T(P) = E[M_S P M_S^T] (matrix-free: its spectral radius is the
  *mean-square rate*, E||z_r - z*||^2 ~ rho(T)^r). Because M_S is linear in alpha,

      T(P) = L0 P L0^T + sum_k E[alpha_k] (G_k P L0^T + L0 P G_k^T)
                       + sum_{k,l} E[alpha_k alpha_l] G_k P G_l^T,

  and each G_k reads and writes only (u, v_j): one application costs O(K m^2 n + K N m dv^2)
  (m = du + dv) instead of a sum over the C(N, M) participation sets;
* the stationary mean (I - E[M_S])^{-1} E[c_S] and the stationary covariance C = T(C) + Q,
  Q = Cov(M_S mu + c_S) + E[noise covariance], hence lim_r E||x_r - x*||^2.

Reachable coordinates. A linear functional l(z) = a^T u + b^T sum_j v_j that every round
conserves (l^T M_S = l^T for every S of positive probability) is an eigenvalue 1 of every M_S
that no state reached from the initialization excites: SCAFFOLD's c - mean_i c_i, Scaffnew's
sum_i v_i + x / (eta_g kappa eta K) when every round has w = kappa s (a fixed number of
participants averaged plainly). Such functionals are found numerically (the left null space of
l^T (a0 (L0 - I) + sum_k a_k G_k) = 0 over a basis (a0, a) of the span of {(1, alpha(S))}, read
from the Gram matrix of the law), and each removes one server coordinate: with the conserved
values fixed by the initial state, u_T = Lu u_F + Lv sum_j v_j + b on every reachable state.
Rates, fixed points and floors are those of the reduced coordinates zeta = (u_F, v_1..v_N),
z = E zeta + z_b.

Markov availability is handled by the chain-augmented dynamics of the pairs (configuration,
state) (:class:`MarkovSystem`): per configuration q the maps are dense, and
mu_{q'} = sum_q P(q, q') (M_q mu_q + pi_q(r) c_q), Q_{q'} = sum_q P(q, q') M_q Q_q M_q^T + ...
(Costa, Fragoso and Marques 2005, "Discrete-Time Markov Jump Linear Systems", Ch. 3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sps
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigs, gmres
from threadpoolctl import threadpool_limits

from fedtheory.analysis.exact.extract import RoundModel
from fedtheory.analysis.exact.krylov import krylov_schur
from fedtheory.analysis.exact.law import MarkovLaw, RoundLaw
from fedtheory.errors import FedTheoryError

#: Relative tolerance on singular values for a functional to count as conserved.
CONSERVED_RTOL = 1e-9
#: Mean-square operators with at most this many unknowns are built as dense Kronecker sums.
DENSE_MAX = 4096
#: Dense eigenvalues (rather than a Krylov method) up to this many unknowns.
DENSE_EIG_MAX = 1024
#: ARPACK's Arnoldi vectors.
NCV = 60
#: ARPACK's restarts (each about NCV applications) for the one wanted eigenvalue before the
#: solve asks for a block of :data:`CLUSTER_K` instead: a top eigenvalue inside a cluster much
#: tighter than the tolerance is not one ARPACK can isolate. Measured on a bound search's ascent
#: (FOCUS, N = 16, d = 10, uniform 4 of 16, top eigenvalues 0.83997504894, 0.83997500819,
#: 0.83997496744, tolerance 1e-8, the same start): k = 1 64,381 applications (52.6 s of CPU),
#: k = 6 2,059, k = 10 880, k = 16 514. A Figure 4 rate takes 15-20 restarts.
ARPACK_RESTARTS = 50
#: Eigenvalues ARPACK is asked for where one alone did not converge.
CLUSTER_K = 16
#: The eigensolvers of :func:`spectral_radius` on large operators; the first is the default.
EIGENSOLVERS = ("arpack", "krylov-schur")
#: L0's server rows are multiplied as a sparse matrix below this fraction of non-zeros (FOCUS's
#: x <- x - eta sum_j y_j has 1 non-zero per column: 2% of the Figure 4 block) and from this
#: state dimension n on. Below it scipy.sparse's per-product overhead outweighs the flops saved:
#: CPU ms per application of FOCUS's operator, N = 16, uniform 4 of 16 (sparse / dense):
#: n = 170 0.566 / 0.435, n = 340 2.29 / 2.85, n = 850 27.1 / 27.9 (2026-11-28, one BLAS thread).
SPARSE_L0_DENSITY = 0.1
SPARSE_L0_MIN_N = 256


@dataclass(frozen=True)
class Reduction:
    """Reachable coordinates zeta = (u_F, V) and z = E zeta + z_b (see the module docstring).

    Attributes
    ----------
    free, tied : ndarray of int
        Server coordinates kept and removed.
    Lu : ndarray (r, |free|), Lv : ndarray (r, dv), b : ndarray (r,)
        u_tied = Lu u_free + Lv sum_j v_j + b.
    conserved : ndarray (r, du + dv)
        The conserved functionals (a, b) found.
    """

    free: np.ndarray
    tied: np.ndarray
    Lu: np.ndarray
    Lv: np.ndarray
    b: np.ndarray
    conserved: np.ndarray


def _swap(A: np.ndarray) -> np.ndarray:
    return np.swapaxes(A, -1, -2)


def spectral_radius(
    apply: Any,
    dim: int,
    *,
    dense: np.ndarray | None = None,
    v0: Any = None,
    tol: float = 1e-10,
    positive: bool = False,
    callback: Any = None,
    fallback: Any = None,
    solver: str = "arpack",
) -> tuple[float, np.ndarray | None, str, int]:
    """Largest |eigenvalue| of a matrix or a matrix-free operator.

    Returns ``(rho, eigenvector or None, method, applications)``: dense eigenvalues for a small
    matrix (at most :data:`DENSE_EIG_MAX` unknowns), otherwise the ``solver`` started from
    ``v0`` (a warm start; a fixed vector when None):

    - ``"arpack"`` (the default): :func:`scipy.sparse.linalg.eigs`, implicitly restarted
      Arnoldi, the one eigenvalue of largest magnitude, 60 Arnoldi vectors, to tolerance
      ``tol``; where that has not converged after :data:`ARPACK_RESTARTS` restarts (a top
      eigenvalue in a cluster tighter than ``tol``), the largest of a block of
      :data:`CLUSTER_K` (then with 120 vectors), every attempt from ``v0``. Its residual goes
      below 1e-11 on the 003 Figure 4 operators, which is what fixes their badly conditioned
      top eigenvalue to 1e-10 (docs/exact-rates.md).
    - ``"krylov-schur"`` (positive maps only; a general operator goes to ARPACK):
      :func:`~fedtheory.analysis.exact.krylov.krylov_schur` (40 Arnoldi vectors, 20 kept
      across a restart) until the relative residual of the wanted Ritz pair is
      at most ``tol``; about a third of ARPACK's cost outside the operator and a residual read
      at every restart (the progress line's time left), but a residual floor of 3e-11 to 5e-11
      on Figure 4 that leaves the rate 5e-8 to 1.4e-7 from ARPACK's there.

    ``positive`` says the operator is a positive map (a mean-square operator): its spectral
    radius is then its eigenvalue of largest real part (Perron-Frobenius for the cone of
    positive semidefinite matrices), which Krylov-Schur targets (ARPACK's largest magnitude is
    the same eigenvalue). The method string gives the relative residual ||A v - rho v|| /
    ||rho v|| of the result, computed with one more application. ``callback(applications,
    value, residual)`` is called after every application (ARPACK: ``value`` None and
    ``residual`` nan until it returns); ``fallback`` continues a Krylov-Schur basis where the
    start's Krylov space is invariant.
    """
    if solver not in EIGENSOLVERS:
        raise FedTheoryError(
            f"unknown eigensolver {solver!r}; choose one of {', '.join(EIGENSOLVERS)}"
        )
    if dense is not None and dim <= DENSE_EIG_MAX:
        lam = np.linalg.eigvals(dense)
        return float(np.abs(lam).max(initial=0.0)), None, f"dense eigenvalues ({dim} x {dim})", 0
    if dim <= 3:
        A = dense if dense is not None else np.stack([apply(e) for e in np.eye(dim)], axis=1)
        return float(np.abs(np.linalg.eigvals(A)).max(initial=0.0)), None, "dense", 0
    count = [0]

    def mv(v: np.ndarray) -> np.ndarray:
        count[0] += 1
        return dense @ v if dense is not None else apply(v)

    if v0 is None or np.shape(v0) != (dim,) or not np.any(v0):
        v0 = np.ones(dim)
    v0 = np.asarray(v0, dtype=np.float64)
    where = "the dense" if dense is not None else "the matrix-free"
    if solver == "krylov-schur" and positive:  # a general operator goes to ARPACK
        with threadpool_limits(limits=1, user_api="blas"):
            ks = krylov_schur(mv, v0, tol=tol, callback=callback, fallback=fallback)
            lam, v = ks.value, ks.vector
            res = _residual(mv, lam, v)
        how = (
            f"Krylov-Schur on {where} operator ({dim} unknowns, tol {tol:g}, {count[0]} "
            f"applications, relative residual {res:.0e})"
        )
        return float(abs(lam)), v, how, count[0]

    def counted(v: np.ndarray) -> np.ndarray:
        out = mv(v)
        if callback is not None:
            callback(count[0], None, float("nan"))
        return out

    op = LinearOperator((dim, dim), matvec=counted, dtype=np.float64)
    # the one wanted eigenvalue, then a block of CLUSTER_K where that did not converge (a top
    # eigenvalue inside a tight cluster), then the block with twice the Arnoldi vectors; every
    # attempt from the same start (ARPACK's own random start would depend on its earlier calls)
    attempts = [
        (1, min(dim - 1, NCV), ARPACK_RESTARTS),
        (CLUSTER_K, min(dim - 1, NCV), 20 * dim),
        (CLUSTER_K, min(dim - 1, 2 * NCV), 20 * dim),
    ]
    for k, ncv, restarts in attempts:
        if not k < ncv - 1:
            continue
        try:
            with threadpool_limits(limits=1, user_api="blas"):
                lam, vec = eigs(op, k=k, which="LM", v0=v0, tol=tol, ncv=ncv, maxiter=restarts)
        except ArpackNoConvergence:
            continue
        top = int(np.argmax(np.abs(lam)))
        value = complex(lam[top])
        v = np.real(vec[:, top]) if abs(value.imag) <= 1e-12 * abs(value) else None
        res = _residual(mv, value.real, v)
        block = "" if k == 1 else f", the largest of a block of {k}"
        how = (
            f"ARPACK eigs on {where} operator ({dim} unknowns, tol {tol:g}, {count[0]} "
            f"applications{block}, relative residual {res:.0e})"
        )
        return float(abs(value)), v, how, count[0]
    raise FedTheoryError(
        f"ARPACK did not converge on the {dim}-dimensional operator (tol {tol:g}); "
        "the exact rate could not be computed"
    )


def _residual(mv: Any, lam: Any, v: np.ndarray | None) -> float:
    """||A v - lam v|| / ||lam v|| (nan without a real eigenvector)."""
    if v is None:
        return float("nan")
    return float(np.linalg.norm(mv(v) - lam * v) / max(abs(lam) * np.linalg.norm(v), 1e-300))


def solve_fixed_point(
    apply: Any,
    rhs: np.ndarray,
    *,
    dense: np.ndarray | None = None,
    x0: Any = None,
    callback: Any = None,
) -> tuple[np.ndarray, str]:
    """Solve x = A(x) + rhs, i.e. (I - A) x = rhs: dense LU when ``dense`` is given, GMRES on
    the matrix-free operator otherwise (relative residual 1e-13; ``callback(iterations, None,
    residual)`` after every GMRES iteration)."""
    dim = rhs.size
    if dense is not None:
        return np.linalg.solve(np.eye(dim) - dense, rhs), f"dense solve ({dim} unknowns)"
    op = LinearOperator((dim, dim), matvec=lambda v: v - apply(v), dtype=np.float64)
    count = [0]
    scale = max(float(np.linalg.norm(rhs)), 1e-300)

    def cb(residual: Any) -> None:
        count[0] += 1
        if callback is not None:
            callback(count[0], None, float(residual) / scale)

    with threadpool_limits(limits=1, user_api="blas"):
        x, info = gmres(
            op,
            rhs,
            x0=x0,
            rtol=1e-13,
            atol=0.0,
            restart=80,
            maxiter=400,
            callback=cb,
            callback_type="pr_norm",
        )
    res = np.linalg.norm(op.matvec(x) - rhs) / max(np.linalg.norm(rhs), 1e-300)
    if info != 0 and res > 1e-9:
        raise FedTheoryError(
            f"GMRES did not solve the stationary second-moment equation ({dim} unknowns, "
            f"relative residual {res:.1e})"
        )
    return x, f"GMRES on the matrix-free operator ({dim} unknowns, residual {res:.0e})"


class AffineSystem:
    """The random affine round of ``model`` under a memoryless ``law``, on reachable coordinates.

    Parameters
    ----------
    model : RoundModel
    law : RoundLaw
    sigma : float
        Standard deviation of the additive gradient noise (used when the model has a noise
        response, i.e. the algorithm uses stochastic gradients).
    conserved_rtol : float
        Relative tolerance of the conserved-functional search.
    """

    def __init__(
        self,
        model: RoundModel,
        law: RoundLaw,
        sigma: float = 0.0,
        *,
        conserved_rtol: float = CONSERVED_RTOL,
    ) -> None:
        if law.n_clients != model.n_clients:
            raise FedTheoryError(
                f"the participation model has {law.n_clients} clients, the problem "
                f"{model.n_clients}"
            )
        self.model, self.law, self.sigma = model, law, float(sigma)
        N, du, dv = model.n_clients, model.du, model.dv
        self.N, self.du, self.dv, self.m, self.n = N, du, dv, du + dv, model.n
        self._generators(model, law)
        self.red = conserved_reduction(
            model, self._gram_basis(), self.beta, self.jk, rtol=conserved_rtol
        )
        self._prepare()

    # -- generators ---------------------------------------------------------------------------
    def _generators(self, model: RoundModel, law: RoundLaw) -> None:
        """Active channels (those with a non-zero block), merged into one when w = kappa s."""
        noise = model.noise if model.noise is not None else np.zeros(model.beta.shape[:3] + (0,))
        active = [
            c
            for c in range(2)
            if np.abs(model.beta[c]).max() > 0
            or np.abs(model.gamma[c]).max() > 0
            or np.abs(noise[c]).max(initial=0.0) > 0
        ]
        active = active or [0]
        N = model.n_clients
        self.active = active
        self.merged = len(active) == 2 and law.kappa is not None
        if self.merged:
            k = law.kappa
            beta = model.beta[0] + k[:, None, None] * model.beta[1]
            gamma = model.gamma[0] + k[:, None] * model.gamma[1]
            nz = noise[0] + k[:, None, None] * noise[1]
            self.beta, self.gamma, self.noise = beta, gamma, nz
            self.m1 = law.m1[0].copy()
            self.m2 = law.m2[0, :, 0, :].copy()
            self.channels = "s (w = kappa s merged)"
        else:
            K = len(active) * N
            self.beta = model.beta[active].reshape(K, self.m, self.m)
            self.gamma = model.gamma[active].reshape(K, self.m)
            self.noise = noise[active].reshape(K, self.m, noise.shape[-1])
            self.m1 = law.m1[active].reshape(-1)
            self.m2 = law.m2[np.ix_(active, range(N), active, range(N))].reshape(
                len(active) * N, len(active) * N
            )
            self.channels = "+".join("sw"[c] for c in active)
        self.K = self.beta.shape[0]
        self.C = self.K // N
        self.jk = np.tile(np.arange(N), self.C)
        self.cov = self.m2 - np.outer(self.m1, self.m1)
        # Cov(alpha) = F F^T on its range (eigenvalues below 1e-12 of the largest are rounding):
        # e_S = sum_k (alpha_k - E alpha_k) phi_k vanishes for every S iff Phi^T F = 0, a test
        # linear in the rounding of Phi (a variance would square it).
        lam, vec = np.linalg.eigh(0.5 * (self.cov + self.cov.T))
        keep = lam > 1e-12 * max(lam.max(initial=0.0), 1e-300)
        self.cov_factor = vec[:, keep] * np.sqrt(lam[keep])

    def _gram_basis(self) -> np.ndarray:
        """Basis (rows) of span{(1, alpha(S))}: the range of E[(1, alpha)(1, alpha)^T]."""
        G = np.block([[np.ones((1, 1)), self.m1[None, :]], [self.m1[:, None], self.m2]])
        lam, vec = np.linalg.eigh(G)
        keep = lam > 1e-12 * lam.max()
        return vec[:, keep].T

    # -- reduction ------------------------------------------------------------------------------
    def _prepare(self) -> None:
        red, du, dv, N = self.red, self.du, self.dv, self.N
        nF = red.free.size
        self.n_r = nF + N * dv
        E = np.zeros((self.n, self.n_r))
        E[red.free, np.arange(nF)] = 1.0
        E[red.tied, :nF] = red.Lu
        E[np.ix_(red.tied, nF + np.arange(N * dv))] = np.tile(red.Lv, (1, N))
        E[du:, nF:] = np.eye(N * dv)
        self.E = E
        self.keep = np.concatenate([red.free, du + np.arange(N * dv)])
        zb = np.zeros(self.n)
        zb[red.tied] = red.b
        self.zb = zb
        L0u = self.model.L0u
        # Constants with z_b folded in: c'_S = M_S z_b + c_S.
        self.f0 = self.model.f0 + L0u @ zb
        self.gam = self.gamma + self.beta[:, :, :du] @ zb[:du]
        # Operator tensors (module docstring): sums of m2-weighted blocks.
        b = self.beta
        buu, bvu, buv, bvv = b[:, :du, :du], b[:, du:, :du], b[:, :du, du:], b[:, du:, du:]
        m2 = self.m2
        K, C = self.K, self.C
        m2j = m2.reshape(K, C, N)  # m2[k, (c', j')]
        self.Auu_T = _swap(np.einsum("kl,lab->kab", m2, buu))
        self.Avu_T = _swap(np.einsum("kcj,cjab->kjab", m2j, bvu.reshape(C, N, dv, du)))
        self.Avu_T = self.Avu_T.transpose(0, 2, 1, 3).reshape(K, du, N * dv) if dv else None
        buv_k = np.einsum("kcj,cjab->kjab", m2j, buv.reshape(C, N, du, dv))  # (K, N, du, dv)
        self.Buv_T = buv_k.transpose(0, 1, 3, 2).reshape(K, N * dv, du)
        self.Bvv_T = _swap(np.einsum("kcj,cjab->kjab", m2j, bvv.reshape(C, N, dv, dv)))
        self.beta_u = np.ascontiguousarray(b[:, :, :du]).reshape(K * self.m, du)
        self.beta_v = np.ascontiguousarray(b[:, :, du:])
        self.bbar = np.einsum("k,kab->kab", self.m1, b).reshape(C, N, self.m, self.m).sum(0)
        self._ms_dense: np.ndarray | None = None
        # The upper strategy (:meth:`_ms_upper`): L0u^T as a sparse matrix when it is sparse,
        # the generators transposed, and, per pair (channel k, client j) with client(k) <= j,
        # the blocks that map the v rows of G_k P to the (v_client(k), v_j) block of the
        # quadratic term: [Avu_T[k][:, v_j]; Bvv_T[k, j]].
        L0T = np.ascontiguousarray(L0u.T)
        sparse = self.n >= SPARSE_L0_MIN_N and np.count_nonzero(L0T) <= SPARSE_L0_DENSITY * L0T.size
        self._L0T = sps.csr_array(L0T) if sparse else L0T
        self._L0 = sps.csr_array(L0u) if sparse else L0u
        self._beta_T = np.ascontiguousarray(_swap(b))
        iu, ju = np.triu_indices(N)
        self._pair_i, self._pair_j = iu, ju
        self._pair_k = (np.arange(C)[:, None] * N + iu[None, :]).reshape(-1)
        pj = np.tile(ju, C)
        if dv:
            A4 = self.Avu_T.reshape(K, du, N, dv)
            self._pair_B = np.ascontiguousarray(
                np.concatenate([A4[self._pair_k, :, pj, :], self.Bvv_T[self._pair_k, pj]], axis=1)
            )  # (pairs, m, dv)
        self._pair_pj = pj
        self._embedding: tuple | None = None

    # -- embedding ------------------------------------------------------------------------------
    def embed_rows(self, X: np.ndarray) -> np.ndarray:
        """E X for X of shape (..., n_r, k): reduced rows -> full rows."""
        red, du, N, dv = self.red, self.du, self.N, self.dv
        nF = red.free.size
        out = np.zeros(X.shape[:-2] + (self.n, X.shape[-1]))
        out[..., red.free, :] = X[..., :nF, :]
        if red.tied.size:
            Vsum = X[..., nF:, :].reshape(X.shape[:-2] + (N, dv, X.shape[-1])).sum(axis=-3)
            out[..., red.tied, :] = red.Lu @ X[..., :nF, :] + red.Lv @ Vsum + 0.0
        out[..., du:, :] = X[..., nF:, :]
        return out

    def embed_sym(self, P: np.ndarray) -> np.ndarray:
        """E P E^T (P symmetric, (..., n_r, n_r))."""
        if not self.red.tied.size:
            return P  # no conserved quantity: E = I
        return self.embed_rows(_swap(self.embed_rows(P)))

    def restrict_sym(self, P: np.ndarray) -> np.ndarray:
        if not self.red.tied.size:
            return P
        return P[..., self.keep[:, None], self.keep[None, :]]

    # -- mean dynamics --------------------------------------------------------------------------
    def mean_full(self) -> np.ndarray:
        """E[M_S] on the full coordinates (n x n, dense)."""
        du, N = self.du, self.N
        EM = np.zeros((self.n, self.n))
        EM[:du] = self.model.L0u
        EM[du:, du:] = np.eye(self.n - du)
        for j in range(N):  # scatter N local blocks, once
            idx = self.model.local_index(j)
            EM[np.ix_(idx, idx)] += self.bbar[j]
        return EM

    def mean_matrix(self) -> np.ndarray:
        """R E[M_S] E on the reduced coordinates."""
        return (self.mean_full() @ self.E)[self.keep]

    def mean_constant(self) -> np.ndarray:
        """R E[c'_S] (with z_b folded in)."""
        du = self.du
        c = np.zeros(self.n)
        c[:du] = self.f0
        add = (self.m1[:, None] * self.gam).reshape(self.C, self.N, self.m).sum(0)
        c[:du] += add[:, :du].sum(0)
        c[du:] += add[:, du:].reshape(-1)
        return c[self.keep]

    def full_state(self, zeta: np.ndarray) -> np.ndarray:
        return self.E @ zeta + self.zb

    def reduce_state(self, z: np.ndarray) -> np.ndarray:
        return np.asarray(z)[self.keep]

    def readout(self) -> tuple[np.ndarray, np.ndarray]:
        """(X_r (d, n_r), x_b (d,)) with x = X_r zeta + x_b (x = the first d server coordinates)."""
        d = self.model.dim
        return self.E[:d], self.zb[:d]

    # -- mean-square dynamics -------------------------------------------------------------------
    def _add_rows(self, out: np.ndarray, R: np.ndarray) -> None:
        """out += sum_j E_j R_j for per-client local rows R (..., N, m, k)."""
        du = self.du
        out[..., :du, :] += R[..., :du, :].sum(axis=-3)
        out[..., du:, :] += R[..., du:, :].reshape(out[..., du:, :].shape)

    def _ms_parts(self, P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(Z, X) with T(P) = E[M_S P M_S^T] = Z + X^T, P symmetric (..., n, n).

        Z = L0 P L0^T + X + sum_kl E[alpha_k alpha_l] G_k P G_l^T and X = sum_k E[alpha_k] G_k P
        L0^T; returning X apart lets a caller that needs one triangle skip a transposed sum.
        """
        du, dv, N, K, C, m = self.du, self.dv, self.N, self.K, self.C, self.m
        L0u = self.model.L0u
        lead = P.shape[:-2]
        # L0 P L0^T with L0 = [[L0u], [0, I]]: only rows and columns of u change.
        Z = P.copy()
        Bu = P[..., du:, :] @ L0u.T  # rows V, columns u of P L0^T
        Z[..., du:, :du] = Bu
        Z[..., :du, du:] = _swap(Bu)
        Z[..., :du, :du] = (L0u @ P) @ L0u.T
        # Y_k = beta_k (rows u and v_j of P) = beta_k^{.u} P_u + beta_k^{.v} P_{v_j}.
        Y = (self.beta_u @ P[..., :du, :]).reshape(lead + (K, m, self.n))
        if dv:
            PV = P[..., du:, :].reshape(lead + (N, dv, self.n))
            Y += self.beta_v @ (PV if C == 1 else PV[..., self.jk, :, :])
        # Cross terms sum_k E[alpha_k] G_k P L0^T (and its transpose).
        Yb = self.m1[:, None, None] * Y
        if C > 1:
            Yb = Yb.reshape(lead + (C, N, m, self.n)).sum(axis=-4)
        # (G P) L0^T: only the columns of u change (one GEMM over all rows).
        Yb[..., :du] = (Yb.reshape(-1, self.n) @ L0u.T).reshape(Yb.shape[:-1] + (du,))
        X = np.zeros(lead + (self.n, self.n))
        self._add_rows(X, Yb)
        Z += X
        # Quadratic terms sum_kl E[alpha_k alpha_l] G_k P G_l^T, column block by column block.
        Yu, YV = Y[..., :du], Y[..., du:]
        Rk = np.empty(Y.shape)
        Rk[..., :du] = Yu @ self.Auu_T
        if dv:
            Rk[..., :du] += YV @ self.Buv_T
            Rk[..., du:] = Yu @ self.Avu_T
            vv = np.swapaxes(YV.reshape(lead + (K, m, N, dv)), -2, -3) @ self.Bvv_T
            Rk[..., du:].reshape(lead + (K, m, N, dv))[...] += np.swapaxes(vv, -2, -3)
        if C > 1:
            Rk = Rk.reshape(lead + (C, N, m, self.n)).sum(axis=-4)
        self._add_rows(Z, Rk)
        return Z, X

    def _ms_upper(self, P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(Z, X) with triu(T(P)) = triu(Z) + triu(X^T) for one symmetric P (n, n): the terms of
        :meth:`_ms_parts`, with the quadratic term only on and above the block diagonal.

        The strategy every eigensolver application uses (tested against :meth:`_ms_parts`). L0
        is applied as a sparse matrix when it is sparse; Y_k = beta_k P_(loc k) (the local rows
        of G_k P) once; the cross term X = sum_k E[alpha_k] G_k P L0^T from Y; the quadratic
        term sum_kl E[alpha_k alpha_l] G_k P G_l^T in three parts: its u rows from
        W_l = sum_k E[alpha_k alpha_l] Y_k^u (one product with the moment matrix) times
        beta_l^T on the local columns of l (one batched product), and its (v_i, v_j) blocks
        for i <= j only (the lower ones are their transposes), one batched product over the
        pairs (channel k of client i, client j): N (N + 1) / 2 blocks instead of N^2. On the
        003 Figure 4 FOCUS state (n = 850, K = 16) this is about 400 MFLOP an application,
        half of the full operator's.
        """
        du, dv, N, K, C, m, n = self.du, self.dv, self.N, self.K, self.C, self.m, self.n
        L0, L0T, m1 = self._L0, self._L0T, self.m1
        # L0 P L0^T with L0 = [[L0u], [0, I]]: only rows and columns of u change.
        Z = P.copy()
        Bu = P[du:] @ L0T
        Z[du:, :du] = Bu
        Z[:du, du:] = Bu.T
        Z[:du, :du] = (L0 @ P) @ L0T
        # Y_k = beta_k (rows u and v_j of P).
        Y = np.empty((K, m, n))
        np.matmul(self.beta_u, P[:du], out=Y.reshape(K * m, n))
        if dv:
            PV = P[du:].reshape(N, dv, n)
            Y += self.beta_v @ (PV if C == 1 else PV[self.jk])
        # X = sum_k E[alpha_k] G_k P L0^T: (Y_k L0^T) keeps Y_k's v columns.
        YL = (Y.reshape(K * m, n) @ L0T).reshape(K, m, du)
        X = np.empty((n, n))
        X[:du] = (m1 @ Y[:, :du, :].reshape(K, du * n)).reshape(du, n)
        X[:du, :du] = (m1 @ YL[:, :du, :].reshape(K, du * du)).reshape(du, du)
        if dv and C == 1:
            np.multiply(m1[:, None, None], Y[:, du:, :], out=X[du:].reshape(N, dv, n))
            X[du:, :du] = (m1[:, None, None] * YL[:, du:, :]).reshape(N * dv, du)
        elif dv:
            w = m1.reshape(C, N)[..., None, None]
            X[du:] = (w * Y.reshape(C, N, m, n)[:, :, du:]).sum(0).reshape(N * dv, n)
            X[du:, :du] = (w * YL.reshape(C, N, m, du)[:, :, du:]).sum(0).reshape(N * dv, du)
        Z += X
        # Quadratic term, u rows: W_l = sum_k m2_kl Y_k^u on the local columns of l.
        W = (self.m2.T @ Y[:, :du, :].reshape(K, du * n)).reshape(K, du, n)
        Wloc = np.empty((K, du, m))
        Wloc[:, :, :du] = W[:, :, :du]
        if dv:
            Wloc[:, :, du:] = W[:, :, du:].reshape(K, du, N, dv)[np.arange(K), :, self.jk, :]
        R = Wloc @ self._beta_T  # (K, du, m): columns u and v_client(l)
        Z[:du, :du] += R[:, :, :du].sum(0)
        if not dv:
            return Z, X
        Ruv = R[:, :, du:].reshape(C, N, du, dv).sum(0) if C > 1 else R[:, :, du:]
        Z[:du, du:] += Ruv.transpose(1, 0, 2).reshape(du, N * dv)
        # (v_i, v_j) blocks, i <= j: [Y_k^v on u, Y_k^v on v_j] times the pair's block.
        pk, pj = self._pair_k, self._pair_pj
        G = np.concatenate(
            [Y[pk, du:, :du], Y[:, du:, du:].reshape(K, dv, N, dv)[pk, :, pj, :]], axis=2
        )
        blocks = G @ self._pair_B  # (pairs, dv, dv)
        if C > 1:
            blocks = blocks.reshape(C, -1, dv, dv).sum(0)
        Z[du:, du:].reshape(N, dv, N, dv)[self._pair_i, :, self._pair_j, :] += blocks
        return Z, X

    def ms_full(self, P: np.ndarray) -> np.ndarray:
        """T(P) = E[M_S P M_S^T] on the full coordinates, P symmetric (..., n, n)."""
        if P.ndim > 2:
            Z, X = self._ms_parts(P)
            Z += _swap(X)
            return Z
        Z, X = self._ms_upper(P)
        U = np.triu(Z) + np.triu(X.T)
        return U + np.triu(U, 1).T

    def ms_apply(self, P: np.ndarray) -> np.ndarray:
        """T on the reduced coordinates: R T(E P E^T) R^T (input symmetrized)."""
        P = 0.5 * (P + _swap(P))
        return self.restrict_sym(self.ms_full(self.embed_sym(P)))

    def reduced_generators(self) -> np.ndarray:
        """R G_k E for every active generator, dense (K, n_r, n_r) (small systems only)."""
        out = np.zeros((self.K, self.n, self.n))
        for k in range(self.K):  # K local blocks scattered once
            idx = self.model.local_index(int(self.jk[k]))
            out[k][np.ix_(idx, idx)] = self.beta[k]
        return (out @ self.E)[:, self.keep, :]

    def ms_dense(self) -> np.ndarray:
        """The (n_r^2 x n_r^2) matrix of P -> E[M_S P M_S^T] on the reduced coordinates:
        E[M kron M] = Mbar kron Mbar + sum_r F_r kron F_r, F_r = sum_k f_kr R G_k E with
        Cov(alpha) = f f^T (M_S is linear in alpha; small systems only)."""
        if self._ms_dense is None:
            Mbar = self.mean_matrix()
            T = np.kron(Mbar, Mbar)
            F = np.einsum("kr,kab->rab", self.cov_factor, self.reduced_generators())
            for Fr in F:  # rank of Cov(alpha) <= K terms
                T += np.kron(Fr, Fr)
            self._ms_dense = T
        return self._ms_dense

    def ms_vec(self, v: np.ndarray) -> np.ndarray:
        nr = self.n_r
        return self.ms_apply(v.reshape(nr, nr)).reshape(-1)

    def _triu(self) -> tuple[np.ndarray, np.ndarray]:
        """Flat positions of the upper triangle and of its mirror image in an n_r x n_r array."""
        if getattr(self, "_iu", None) is None:
            iu = np.triu_indices(self.n_r)
            shape = (self.n_r, self.n_r)
            self._iu = (np.ravel_multi_index(iu, shape), np.ravel_multi_index(iu[::-1], shape))
        return self._iu

    def pack(self, P: np.ndarray) -> np.ndarray:
        """The upper triangle of a symmetric P (n_r (n_r + 1) / 2 numbers)."""
        return P.reshape(-1).take(self._triu()[0])

    def _gather(self) -> np.ndarray:
        """For every flat position (a, b) of an n_r x n_r array, the packed position of
        (min(a, b), max(a, b)): unpacking is one gather (``take``), 3.3-4.4 times faster than
        scattering the triangle and its mirror (``put``; n_r = 170: 16.7 against 73.7 us,
        n_r = 850: 0.72 against 2.37 ms)."""
        if getattr(self, "_unpack_at", None) is None:
            up, lo = self._triu()
            at = np.empty(self.n_r * self.n_r, dtype=np.intp)
            at[up] = np.arange(up.size)
            at[lo] = np.arange(up.size)
            self._unpack_at = at
        return self._unpack_at

    def unpack(self, v: np.ndarray) -> np.ndarray:
        return np.asarray(v).take(self._gather()).reshape(self.n_r, self.n_r)

    def _embedded_positions(self) -> tuple[np.ndarray, np.ndarray]:
        """Flat positions, in an n x n array, of the reduced upper triangle (keep_a, keep_b),
        a <= b, and of its mirror image (keep is increasing, so they lie on and above, and on
        and below, the diagonal)."""
        if self._embedding is None:
            iu = np.triu_indices(self.n_r)
            rows, cols = self.keep[iu[0]], self.keep[iu[1]]
            shape = (self.n, self.n)
            self._embedding = (
                np.ravel_multi_index((rows, cols), shape),
                np.ravel_multi_index((cols, rows), shape),
            )
        return self._embedding

    def _embedded_gather(self) -> np.ndarray:
        """For every flat position of an n x n array, the packed position of its reduced
        entry (:meth:`_embedded_positions`), or the packed size (a zero appended to the packed
        vector) at the tied rows and columns."""
        if getattr(self, "_embed_at", None) is None:
            up, lo = self._embedded_positions()
            at = np.full(self.n * self.n, up.size, dtype=np.intp)
            at[up] = np.arange(up.size)
            at[lo] = np.arange(up.size)
            self._embed_at = at
        return self._embed_at

    def embed_packed(self, v: np.ndarray) -> np.ndarray:
        """E P E^T (n x n) for the symmetric P whose packed upper triangle is ``v``: P written
        at the kept coordinates, the tied rows u_T = Lu u_F + Lv sum_j v_j filled in."""
        if not self.red.tied.size:
            return self.unpack(v)
        red, du, dv, N, n = self.red, self.du, self.dv, self.N, self.n
        # one gather from v and a zero (the tied rows and columns, filled in below)
        P = np.append(v, 0.0).take(self._embedded_gather()).reshape(n, n)
        Rt = red.Lu @ P[red.free] + red.Lv @ P[du:].reshape(N, dv, n).sum(0)  # (r, n)
        P[red.tied, :] = Rt
        P[:, red.tied] = Rt.T
        P[np.ix_(red.tied, red.tied)] = (
            Rt[:, red.free] @ red.Lu.T + Rt[:, du:].reshape(-1, N, dv).sum(1) @ red.Lv.T
        )
        return P

    def ms_vech(self, v: np.ndarray) -> np.ndarray:
        """T on the packed upper triangles of symmetric matrices: T maps symmetric matrices to
        symmetric ones, so its spectral radius is that of this half-size operator, and Krylov
        vectors half as long halve the eigensolver's orthogonalization work. One application:
        :meth:`embed_packed`, :meth:`_ms_upper`, and the reduced upper triangle of
        Z + X^T taken from triu(Z) and tril(X) in one pass each."""
        Z, X = self._ms_upper(self.embed_packed(v))
        up, lo = self._embedded_positions()
        return Z.reshape(-1).take(up) + X.reshape(-1).take(lo)

    # -- stationary second moment ---------------------------------------------------------------
    def fluctuation(self, mu_full: np.ndarray) -> np.ndarray:
        """phi_k = G_k mu + g_k (local, (K, m)): e_S = sum_k (alpha_k - E alpha_k) phi_k is the
        centred one-round displacement at the stationary mean mu (full coordinates)."""
        loc = np.stack([mu_full[self.model.local_index(j)] for j in range(self.N)])
        return np.einsum("kab,kb->ka", self.beta, loc[self.jk]) + self.gamma

    def local_to_reduced(self, phi: np.ndarray) -> np.ndarray:
        """Embed local vectors phi (K, m) of their clients into reduced coordinates (K, n_r)."""
        full = np.zeros((phi.shape[0], self.n))
        full[:, : self.du] = phi[:, : self.du]
        for k in range(phi.shape[0]):  # K local blocks, once per stationary solve
            j = self.jk[k]
            full[k, self.du + j * self.dv : self.du + (j + 1) * self.dv] = phi[k, self.du :]
        return full[:, self.keep]

    def noise_cov(self) -> np.ndarray:
        """sigma^2 sum_j E[(sum_c alpha_cj Gamma_cj)(...)^T] on the reduced coordinates."""
        nr = self.n_r
        if self.sigma == 0.0 or self.noise.shape[-1] == 0:
            return np.zeros((nr, nr))
        full = np.zeros((self.n, self.n))
        for j in range(self.N):  # per client: its channels' responses and their moments
            ks = np.flatnonzero(self.jk == j)
            G = self.noise[ks]  # (c, m, q)
            Mjj = self.m2[np.ix_(ks, ks)]
            block = np.einsum("cd,caq,dbq->ab", Mjj, G, G)
            idx = self.model.local_index(j)
            full[np.ix_(idx, idx)] += block
        return self.sigma**2 * full[np.ix_(self.keep, self.keep)]


def conserved_reduction(
    model: RoundModel,
    basis: np.ndarray,
    beta: np.ndarray,
    jk: np.ndarray,
    *,
    rtol: float = CONSERVED_RTOL,
) -> Reduction:
    """Conserved functionals l(z) = a^T u + b^T sum_j v_j of every round and the reduction
    that removes one server coordinate per functional (module docstring).

    ``basis`` (rows (a0, a_1..a_K)) spans {(1, alpha(S))}; ``beta`` (K, m, m) are the active
    generators and ``jk`` their clients.

    Raises
    ------
    FedTheoryError
        When a conserved functional carries no server coordinate (not supported).
    """
    du, dv, N = model.du, model.dv, model.n_clients
    L0uu = model.L0u[:, :du]
    L0uv = model.L0u[:, du:].reshape(du, N, dv)
    rows = []
    for vec in basis:  # at most 1 + K basis vectors
        a0, a = vec[0], vec[1:]
        Bk = np.einsum("k,kab->kab", a, beta)
        Xuu = a0 * (L0uu - np.eye(du)) + Bk[:, :du, :du].sum(0)
        Xvu = Bk[:, du:, :du].sum(0)
        rows.append(np.concatenate([Xuu.T, Xvu.T], axis=1))  # u columns: du equations
        for j in range(N):
            ks = np.flatnonzero(jk == j)
            Xuv = a0 * L0uv[:, j] + Bk[ks, :du, du:].sum(0)
            Xvv = Bk[ks, du:, du:].sum(0)
            rows.append(np.concatenate([Xuv.T, Xvv.T], axis=1))  # v_j columns: dv equations
    A = np.concatenate(rows, axis=0)
    empty = np.zeros((0,), dtype=np.int64)
    if A.size == 0:
        return Reduction(
            np.arange(du),
            empty,
            np.zeros((0, du)),
            np.zeros((0, dv)),
            np.zeros(0),
            np.zeros((0, du + dv)),
        )
    if A.shape[0] < A.shape[1]:  # fewer equations than unknowns: pad to a square system
        A = np.concatenate([A, np.zeros((A.shape[1] - A.shape[0], A.shape[1]))])
    _, sv, vt = np.linalg.svd(A, full_matrices=False)
    null = vt[sv <= rtol * max(sv.max(initial=0.0), 1e-300)]
    r = null.shape[0]
    if r == 0:
        return Reduction(
            np.arange(du),
            empty,
            np.zeros((0, du)),
            np.zeros((0, dv)),
            np.zeros(0),
            np.zeros((0, du + dv)),
        )
    a_all, b_all = null[:, :du], null[:, du:]
    _, R, piv = sla.qr(a_all, pivoting=True, mode="economic")
    if abs(R[r - 1, r - 1]) <= 1e-8 * max(abs(R[0, 0]), 1e-300):
        raise FedTheoryError(
            f"{model.algorithm}: a conserved quantity of every round involves the clients' "
            "coordinates only, which the exact oracle cannot remove"
        )
    tied = np.sort(piv[:r])
    free = np.setdiff1d(np.arange(du), tied)
    AT, AF = a_all[:, tied], a_all[:, free]
    z0 = model.z0
    Q = a_all @ z0[:du] + b_all @ z0[du:].reshape(N, dv).sum(0)
    Lu = -np.linalg.solve(AT, AF)
    Lv = -np.linalg.solve(AT, b_all)
    b = np.linalg.solve(AT, Q)
    return Reduction(free, tied, Lu, Lv, b, null)


class MarkovSystem:
    """The chain-augmented dynamics of a round model under Markov availability.

    Per configuration q (the round's S) the reduced map M_q = R (L0 + sum_k alpha_k(q) G_k) E
    and constant c_q are dense; the first moments mu_q(r) = E[z_r 1{sigma_r = q}] and second
    moments Q_q(r) = E[z_r z_r^T 1{sigma_r = q}] obey

        mu_{q'} <- sum_q P(q, q') (M_q mu_q + p_q c_q),
        Q_{q'}  <- sum_q P(q, q') (M_q Q_q M_q^T + M_q mu_q c_q^T + c_q mu_q^T M_q^T
                                   + p_q (c_q c_q^T + noise_q)),

    with p_q the configuration's probability; the mean rate is the spectral radius of the first
    map's linear part, the mean-square rate that of Q -> sum_q P(q, .) M_q Q_q M_q^T.
    """

    def __init__(self, model: RoundModel, law: MarkovLaw, sigma: float = 0.0) -> None:
        self.model, self.law, self.sigma = model, law, float(sigma)
        N = model.n_clients
        # A memoryless stand-in law over the configurations (stationary weights) gives the
        # generators, the span of the draws and the reduction.
        live = law.pi > 0
        alpha = law.alpha[live]
        p = law.pi[live]
        m1 = np.einsum("k,kcj->cj", p, alpha)
        m2 = np.einsum("k,kcj,kdl->cjdl", p, alpha, alpha, optimize=True)
        stand_in = RoundLaw(N, m1, m2, None, False, law.method)
        self.sys = AffineSystem(model, stand_in, sigma)
        s = self.sys
        Q = law.states.shape[0]
        # Per-configuration coefficients of the active generators: (Q, K).
        coef = law.alpha[:, s.active, :].reshape(Q, -1)
        self.coef = coef
        EM0 = np.zeros((s.n, s.n))
        EM0[: s.du] = model.L0u
        EM0[s.du :, s.du :] = np.eye(s.n - s.du)
        Ms = np.broadcast_to(EM0, (Q, s.n, s.n)).copy()
        cs = np.zeros((Q, s.n))
        cs[:, : s.du] = s.f0
        for k in range(s.K):  # K local blocks scattered into Q dense maps
            idx = model.local_index(int(s.jk[k]))
            Ms[:, idx[:, None], idx[None, :]] += coef[:, k, None, None] * s.beta[k]
            cs[:, idx] += coef[:, k, None] * s.gam[k]
        self.M = (Ms @ s.E)[:, s.keep, :]  # (Q, n_r, n_r)
        self.c = cs[:, s.keep]
        self.n_r = s.n_r
        self.Q = Q
        nz = np.zeros((Q, s.n_r, s.n_r))
        if self.sigma > 0 and s.noise.shape[-1]:
            full = np.zeros((Q, s.n, s.n))
            for j in range(N):  # per client: (sum_c alpha_cj Gamma_cj) per configuration
                ks = np.flatnonzero(s.jk == j)
                G = np.einsum("qc,caz->qaz", coef[:, ks], s.noise[ks])
                idx = model.local_index(j)
                full[:, idx[:, None], idx[None, :]] += G @ _swap(G)
            nz = self.sigma**2 * full[:, s.keep[:, None], s.keep[None, :]]
        self.noise = nz

    def mean_apply(self, mu: np.ndarray) -> np.ndarray:
        """Linear part of the first-moment map on (Q, n_r)."""
        return self.law.P.T @ (self.M @ mu[..., None])[..., 0]

    def mean_matrix(self) -> np.ndarray:
        Q, nr = self.Q, self.n_r
        A = np.einsum("qp,qab->paqb", self.law.P, self.M)
        return A.reshape(Q * nr, Q * nr)

    def ms_apply(self, S: np.ndarray) -> np.ndarray:
        """S (..., Q, n_r, n_r) -> sum_q P(q, .) M_q S_q M_q^T (input symmetrized)."""
        S = 0.5 * (S + _swap(S))
        Y = self.M @ S @ _swap(self.M)
        lead = Y.shape[:-3]
        out = self.law.P.T @ Y.reshape(lead + (self.Q, -1))
        return out.reshape(Y.shape)

    def ms_vec(self, v: np.ndarray) -> np.ndarray:
        return self.ms_apply(v.reshape(self.Q, self.n_r, self.n_r)).reshape(-1)

    def ms_dense(self, chunk: int = 64) -> np.ndarray:
        """The (Q n_r^2)-square matrix of the second-moment map (small systems only)."""
        dim = self.Q * self.n_r * self.n_r
        basis = np.eye(dim).reshape(dim, self.Q, self.n_r, self.n_r)
        cols = [self.ms_apply(basis[i : i + chunk]).reshape(-1, dim) for i in range(0, dim, chunk)]
        return np.concatenate(cols).T
