"""Derivatives of the exact rates: how the mean and mean-square rates move with the Hessians,
the step size and the participation probabilities.

A simple eigenvalue rho of an operator A moves as d rho = u^T (dA) v / (u^T v), u and v its left
and right eigenvectors (Kato 1995, "Perturbation Theory for Linear Operators", II.2; Magnus 1985,
"On differentiating eigenvalues and eigenvectors", Econometric Theory 1). For the mean-square
operator T(P) = E[M_S P M_S^T] (:mod:`fedtheory.analysis.exact.system`) with right eigenvector V
and left eigenvector U (the top eigenvector of the adjoint T*(Q) = E[M_S^T Q M_S], both positive
semidefinite), and M_S = L0 + sum_k alpha_k G_k,

    <U, dT(V)> = 2 E[<U M_S V, dM_S>]
               = 2 sum_k <W_k, d beta_k> + 2 <U E[M_S] V, dL0>
                 + sum_k dE[alpha_k] <U, G_k V L0^T + L0 V G_k^T>
                 + sum_kl dE[alpha_k alpha_l] <U, G_k V G_l^T>,

with W_k = (U E[alpha_k M_S] V) restricted to client k's block (u, v_j): one pass gives the
derivative with respect to every client's local block at once. The blocks beta_k are read off
the algorithm's own round (:func:`~fedtheory.analysis.exact.extract.extract_round_model`), so
their derivatives with respect to the Hessians are finite differences of that extraction along
the d(d + 1)/2 symmetric unit directions, every client perturbed at once (client j's blocks
depend on H_j only); with respect to the step size, one more extraction; with respect to the
participation probabilities, one law per client. No eigen-solve beyond the two that give V and
U. The mean rate rho(E[M_S]) is the same with the dense left and right eigenvectors of E[M_S].

:func:`rate_gradient` returns the value and its derivatives; :func:`ms_adjoint` is T* on the
reduced coordinates (tested against <Q, T(P)> = <T*(Q), P>).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg as sla

from fedtheory.analysis.exact.extract import build_algorithm, extract_round_model
from fedtheory.analysis.exact.law import participation_law
from fedtheory.analysis.exact.oracle import _system, one_blas_thread
from fedtheory.analysis.exact.system import AffineSystem, spectral_radius
from fedtheory.errors import AssumptionError, FedTheoryError

#: Mean-square operators with at most this many unknowns get dense left and right eigenvectors.
DENSE_VECTORS_MAX = 256
#: Quantities :func:`rate_gradient` differentiates.
GRADIENT_QUANTITIES = ("mean_square_rate", "mean_rate")
_SQRT_EPS = float(np.sqrt(np.finfo(np.float64).eps))


@dataclass(frozen=True)
class RateGradient:
    """An exact rate and its derivatives.

    Attributes
    ----------
    quantity : {"mean_square_rate", "mean_rate"}
    value : float
        The rate (as :func:`~fedtheory.analysis.exact.exact_rates` gives it).
    d_H : ndarray (N, d, d)
        d value / d H_j (symmetric: the Frobenius gradient over symmetric H_j).
    d_lr : float
        d value / d eta, every other input fixed.
    d_p : ndarray (N,) or None
        d value / d p_i through the participation law (None without ``participation_at``).
    vector : ndarray or None
        The right eigenvector the solve ended with (a warm start for a nearby setting).
    method : str
        How the derivatives were obtained.
    seconds : float
    """

    quantity: str
    value: float
    d_H: np.ndarray
    d_lr: float
    d_p: np.ndarray | None
    vector: np.ndarray | None
    method: str
    seconds: float


# -- the adjoint of the mean-square operator ------------------------------------------------------
def _l0_full(s: AffineSystem) -> np.ndarray:
    L0 = np.eye(s.n)
    L0[: s.du] = s.model.L0u
    return L0


def _blocks(s: AffineSystem, X: np.ndarray) -> np.ndarray:
    """X[idx_j, idx_l] for every pair of clients: (N, N, m, m)."""
    du, dv, N = s.du, s.dv, s.N
    out = np.empty((N, N, s.m, s.m))
    out[:, :, :du, :du] = X[:du, :du]
    if dv:
        Xv = X[du:, du:].reshape(N, dv, N, dv).transpose(0, 2, 1, 3)
        out[:, :, du:, du:] = Xv
        out[:, :, :du, du:] = X[:du, du:].reshape(du, N, dv).transpose(1, 0, 2)[None]
        out[:, :, du:, :du] = X[du:, :du].reshape(N, dv, du)[:, None]
    return out


def _scatter(s: AffineSystem, Z: np.ndarray) -> np.ndarray:
    """sum_{j,l} P_j^T Z[j, l] P_l for per-pair blocks Z (N, N, m, m): an (n, n) matrix."""
    du, dv, N = s.du, s.dv, s.N
    out = np.zeros((s.n, s.n))
    out[:du, :du] = Z[:, :, :du, :du].sum(axis=(0, 1))
    if dv:
        out[:du, du:] = Z[:, :, :du, du:].sum(axis=0).transpose(1, 0, 2).reshape(du, N * dv)
        out[du:, :du] = Z[:, :, du:, :du].sum(axis=1).reshape(N * dv, du)
        out[du:, du:] = Z[:, :, du:, du:].transpose(0, 2, 1, 3).reshape(N * dv, N * dv)
    return out


def _pairs(s: AffineSystem, Qb: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """left_k^T Qb[j_k, j_l] right_l for every pair of generators: (K, K, m, m)."""
    jk = s.jk
    return np.swapaxes(left, 1, 2)[:, None] @ Qb[jk][:, jk] @ right[None]


def _per_clients(s: AffineSystem, Zk: np.ndarray) -> np.ndarray:
    """Sum generator pairs (K, K, ...) into client pairs (N, N, ...)."""
    C, N = s.C, s.N
    return Zk.reshape(C, N, C, N, *Zk.shape[2:]).sum(axis=(0, 2))


def ms_adjoint_full(s: AffineSystem, Q: np.ndarray) -> np.ndarray:
    """T*(Q) = E[M_S^T Q M_S] on the full coordinates, Q symmetric (n, n)."""
    du, N, L0u = s.du, s.N, s.model.L0u
    # X = Q L0 and L0^T X with L0 = [[L0u], [0, I]]: only the columns (rows) of u are mixed.
    X = Q[:, :du] @ L0u
    X[:, du:] += Q[:, du:]
    out = L0u.T @ X[:du]
    out[du:] += X[du:]
    # sum_k E[alpha_k] G_k^T Q L0 (+ its transpose): rows idx_j of beta_k^T X[idx_j].
    Xb = np.concatenate(
        [np.broadcast_to(X[:du], (N, du, s.n)), X[du:].reshape(N, s.dv, s.n)], axis=1
    )
    Rk = s.m1[:, None, None] * (np.swapaxes(s.beta, 1, 2) @ Xb[s.jk])
    R = Rk.reshape(s.C, N, s.m, s.n).sum(axis=0)
    cross = np.zeros((s.n, s.n))
    cross[:du] = R[:, :du].sum(axis=0)
    cross[du:] = R[:, du:].reshape(N * s.dv, s.n)
    out += cross + cross.T
    # sum_kl E[alpha_k alpha_l] G_k^T Q G_l.
    Zk = _pairs(s, _blocks(s, Q), s.beta, s.beta) * s.m2[:, :, None, None]
    out += _scatter(s, _per_clients(s, Zk))
    return out


def ms_adjoint(s: AffineSystem, Q: np.ndarray) -> np.ndarray:
    """T_r*(Q) = E^T T*(R^T Q R) E on the reduced coordinates (Q symmetric (n_r, n_r)): the
    adjoint of :meth:`AffineSystem.ms_apply` in the Frobenius inner product."""
    Q = 0.5 * (Q + Q.T)
    if not s.red.tied.size:
        return ms_adjoint_full(s, Q)
    full = np.zeros((s.n, s.n))
    full[np.ix_(s.keep, s.keep)] = Q
    return s.E.T @ ms_adjoint_full(s, full) @ s.E


def _embed_sym(s: AffineSystem, P: np.ndarray) -> np.ndarray:
    return s.embed_sym(P)


def _restrict_adjoint(s: AffineSystem, U: np.ndarray) -> np.ndarray:
    if not s.red.tied.size:
        return U
    full = np.zeros((s.n, s.n))
    full[np.ix_(s.keep, s.keep)] = U
    return full


# -- contractions: the derivative as a linear functional of (beta, L0u, m1, m2) --------------------
@dataclass
class _Contraction:
    """d value = Re[<g_beta, d beta> + <g_L0, d L0u> + <g_m1, d m1> + <g_m2, d m2>]."""

    beta: np.ndarray  # (K, m, m)
    L0: np.ndarray  # (du, n)
    m1: np.ndarray  # (K,)
    m2: np.ndarray | None  # (K, K)

    def apply(self, d_beta, d_L0, d_m1=None, d_m2=None) -> float:
        val = np.sum(self.beta * d_beta) + np.sum(self.L0 * d_L0)
        if d_m1 is not None:
            val += np.sum(self.m1 * d_m1)
        if d_m2 is not None and self.m2 is not None:
            val += np.sum(self.m2 * d_m2)
        return float(np.real(val))

    def per_client(self, s: AffineSystem, d_beta: np.ndarray) -> np.ndarray:
        """<g_beta_k, d beta_k> summed over each client's generators: (N,)."""
        v = np.real(np.einsum("kab,kab->k", self.beta, d_beta))
        return v.reshape(s.C, s.N).sum(axis=0)


def _ms_contraction(s: AffineSystem, U: np.ndarray, V: np.ndarray) -> _Contraction:
    """Derivative of rho(T) given U, V (full coordinates, symmetric), divided by <U, V>."""
    uv = float(np.vdot(U, V))
    L0 = _l0_full(s)
    A = U @ L0 @ V
    Ub, Vb = _blocks(s, U), _blocks(s, V)
    jk = s.jk
    Ajj = _blocks(s, A)[np.arange(s.N), np.arange(s.N)]  # (N, m, m)
    # W_k = E[alpha_k] A_jj + sum_l E[alpha_k alpha_l] U_{j_k j_l} beta_l V_{j_l j_k}.
    BV = np.einsum("lab,lkbc->lkac", s.beta, Vb[jk][:, jk], optimize=True)
    W = s.m1[:, None, None] * Ajj[jk]
    W += np.einsum("kl,klab,lkbc->kac", s.m2, Ub[jk][:, jk], BV, optimize=True)
    Mbar = s.mean_full()
    g_L0 = 2 * (U @ Mbar @ V)[: s.du] / uv
    g_m1 = 2 * np.einsum("kab,kab->k", Ajj[jk], s.beta) / uv
    # <U, G_k V G_l^T> = tr(U_{l k} beta_k V_{k l} beta_l^T)
    g_m2 = (
        np.einsum(
            "lkab,kbc,klcd,lad->kl", Ub[jk][:, jk], s.beta, Vb[jk][:, jk], s.beta, optimize=True
        )
        / uv
    )
    return _Contraction(2 * W / uv, g_L0, g_m1, g_m2)


def _mean_contraction(s: AffineSystem, lam: complex, u: np.ndarray, v: np.ndarray) -> _Contraction:
    """Derivative of |lam| for the eigenvalue lam of R E[M_S] E with left/right vectors u, v."""
    uf = np.zeros(s.n, dtype=complex)
    uf[s.keep] = u
    vf = s.E @ v
    uv = np.vdot(u, v)
    if abs(lam) == 0 or abs(uv) <= 1e-12 * np.linalg.norm(u) * np.linalg.norm(v):
        raise FedTheoryError(
            "the mean rate is not differentiable here (an eigenvalue 0, or a defective top "
            "eigenvalue whose left and right eigenvectors are orthogonal)"
        )
    c = np.conj(lam) / (abs(lam) * uv)
    G = c * np.outer(np.conj(uf), vf)  # d lam = <conj(u_f) v_f^T, dM>
    Gjj = _blocks_complex(s, G)
    jk = s.jk
    g_beta = s.m1[:, None, None] * Gjj[jk]
    g_m1 = np.einsum("kab,kab->k", Gjj[jk], s.beta)
    return _Contraction(g_beta, G[: s.du], g_m1, None)


def _blocks_complex(s: AffineSystem, X: np.ndarray) -> np.ndarray:
    """X[idx_j, idx_j] for every client: (N, m, m)."""
    return np.stack([X[np.ix_(s.model.local_index(j), s.model.local_index(j))] for j in range(s.N)])


# -- channels of a perturbed model or law, as the base system merges them ------------------------
def _channels(s: AffineSystem, model: Any, law: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(beta (K, m, m), m1 (K,), m2 (K, K)) of ``model`` under ``law`` in the base system's
    channel layout (merged w = kappa s, or the active channels stacked)."""
    N, m = s.N, s.m
    if s.merged:
        if law.kappa is None:
            raise FedTheoryError("the perturbed law no longer has w = kappa s")
        k = law.kappa
        beta = model.beta[0] + k[:, None, None] * model.beta[1]
        return beta, law.m1[0].copy(), law.m2[0, :, 0, :].copy()
    act = s.active
    beta = model.beta[act].reshape(len(act) * N, m, m)
    m1 = law.m1[act].reshape(-1)
    m2 = law.m2[np.ix_(act, range(N), act, range(N))].reshape(len(act) * N, len(act) * N)
    return beta, m1, m2


class _Perturbed:
    """Problems with the Hessians moved, for the finite differences of the extraction."""

    def __init__(self, H: np.ndarray, h: np.ndarray) -> None:
        self.H, self.h = H, h
        self.n_clients, self.dim = H.shape[0], H.shape[1]
        self.batch_size = None
        self.noise = 0.0


def _sym_basis(d: int) -> list[tuple[int, int]]:
    return [(a, b) for a in range(d) for b in range(a, d)]


# -- the entry point -----------------------------------------------------------------------------
@one_blas_thread
def rate_gradient(
    problem: Any,
    algorithm: str,
    participation: Any = None,
    *,
    quantity: str = "mean_square_rate",
    lr: float,
    local_steps: int,
    rule: str = "mean",
    global_lr: float | None = None,
    prox_mu: float | None = None,
    options: dict | None = None,
    participation_at: Callable[[np.ndarray], Any] | None = None,
    p: np.ndarray | None = None,
    tol: float = 1e-10,
    v0: np.ndarray | None = None,
) -> RateGradient:
    """An exact rate and its derivatives with respect to H_j, eta and p (module docstring).

    Parameters
    ----------
    problem : QuadraticProblem
    algorithm : str
        A registry name of an affine algorithm.
    participation : ParticipationModel, optional
        A memoryless model (Markov availability is not supported here).
    quantity : {"mean_square_rate", "mean_rate"}
    lr, local_steps, rule, global_lr, prox_mu, options
        As :func:`~fedtheory.analysis.exact.exact_rates`.
    participation_at : callable, optional
        ``participation_at(p)`` builds the participation model at probabilities ``p`` (with
        ``p`` the current ones): gives ``d_p`` by one law per client.
    tol : float
        ARPACK tolerance of the two eigen-solves.
    v0 : ndarray, optional
        Warm start of the right eigenvector (``vector`` of a nearby setting).

    Returns
    -------
    RateGradient

    Raises
    ------
    FedTheoryError
        Markov participation; a top eigenvalue that is not simple and real where the derivative
        needs it (the rate is then not differentiable there).
    """
    if quantity not in GRADIENT_QUANTITIES:
        raise AssumptionError(
            f"quantity {quantity!r}: derivatives are for {', '.join(GRADIENT_QUANTITIES)}"
        )
    t0 = time.perf_counter()
    kw = {
        "lr": lr,
        "local_steps": local_steps,
        "rule": rule,
        "global_lr": global_lr,
        "prox_mu": prox_mu,
        "options": options,
    }
    s = _system(problem, algorithm, participation, verify=False, **kw).system
    if not isinstance(s, AffineSystem):
        raise FedTheoryError("rate derivatives need a memoryless participation model")
    vector = None
    squared = quantity == "mean_square_rate" and s.law.deterministic
    if quantity == "mean_rate" or squared:
        lam, vl, vr = sla.eig(s.mean_matrix(), left=True, right=True)
        top = int(np.argmax(np.abs(lam)))
        value = float(abs(lam[top]))
        con = _mean_contraction(s, lam[top], vl[:, top], vr[:, top])
        if squared:  # rho_ms = rho_mean^2 under a deterministic draw
            scale = 2 * value
            value = value**2
            con = _Contraction(scale * con.beta, scale * con.L0, scale * con.m1, None)
        how = "dense left and right eigenvectors of E[M_S]" + (
            " (mean-square rate = mean rate^2: deterministic draw)" if squared else ""
        )
    else:
        value, U, V, vector, how = _ms_vectors(s, v0, tol)
        con = _ms_contraction(s, _restrict_adjoint(s, U), _embed_sym(s, V))
    base_beta = s.beta
    alg = build_algorithm(
        algorithm,
        problem,
        lr=lr,
        local_steps=local_steps,
        global_lr=global_lr,
        prox_mu=prox_mu,
        options=options,
    )
    H = np.asarray(problem.H, dtype=np.float64)
    hvec = np.asarray(problem.h, dtype=np.float64)
    N, d = H.shape[:2]
    scale = max(1.0, float(np.abs(H).max()))
    step = _SQRT_EPS * scale
    d_H = np.zeros((N, d, d))
    for a, b in _sym_basis(d):  # d(d + 1)/2 extractions, every client moved at once
        Hp = H.copy()
        Hp[:, a, b] += step
        if a != b:
            Hp[:, b, a] += step
        mod = extract_round_model(_Perturbed(Hp, hvec), alg, noise=False, verify=False)
        dbeta = (_channels(s, mod, s.law)[0] - base_beta) / step
        g = con.per_client(s, dbeta)
        if a == b:
            d_H[:, a, a] = g
        else:
            d_H[:, a, b] = d_H[:, b, a] = g / 2
    # The step size: one more extraction (the server rows may move too).
    h_lr = _SQRT_EPS * lr
    alg2 = build_algorithm(
        algorithm,
        problem,
        lr=lr + h_lr,
        local_steps=local_steps,
        global_lr=global_lr,
        prox_mu=prox_mu,
        options=options,
    )
    mod = extract_round_model(problem, alg2, noise=False, verify=False)
    d_lr = con.apply(
        (_channels(s, mod, s.law)[0] - base_beta) / h_lr, (mod.L0u - s.model.L0u) / h_lr
    )
    d_p = None
    if participation_at is not None and p is not None:
        p = np.asarray(p, dtype=np.float64)
        d_p = np.zeros(p.size)
        beta0, m10, m20 = _channels(s, s.model, s.law)
        for i in range(p.size):  # one law per client
            hp = _SQRT_EPS * max(p[i], 1e-3)
            pp = p.copy()
            pp[i] += hp
            law = participation_law(participation_at(pp), rule)
            beta1, m11, m21 = _channels(s, s.model, law)
            d_p[i] = con.apply(
                (beta1 - beta0) / hp, np.zeros_like(s.model.L0u), (m11 - m10) / hp, (m21 - m20) / hp
            )
    method = (
        f"{how}; d/dH by {len(_sym_basis(d))} forward differences of the extracted round "
        "(every client at once), d/deta by one"
        + ("" if d_p is None else f", d/dp by {p.size} laws")
    )
    return RateGradient(
        quantity, float(value), d_H, float(d_lr), d_p, vector, method, time.perf_counter() - t0
    )


def _ms_vectors(s: AffineSystem, v0: Any, tol: float) -> tuple:
    """(rho, U, V, vector, how): the mean-square rate with its left and right eigenvectors on
    the reduced coordinates (symmetric matrices), and the right one as a warm start.

    Dense eigenvectors for at most :data:`DENSE_VECTORS_MAX` unknowns; otherwise ARPACK
    (:func:`~fedtheory.analysis.exact.system.spectral_radius`) on T (packed upper triangles
    without a conserved quantity) and on its adjoint :func:`ms_adjoint`, the adjoint started
    from the right eigenvector."""
    nr = s.n_r
    dim = nr * nr
    if dim <= DENSE_VECTORS_MAX:
        lam, vl, vr = sla.eig(s.ms_dense(), left=True, right=True)
        top = int(np.argmax(np.abs(lam)))
        if abs(lam[top].imag) > 1e-12 * abs(lam[top]):
            raise FedTheoryError("the top eigenvalue of the mean-square operator is not real")
        V = np.real(vr[:, top]).reshape(nr, nr)
        U = np.real(vl[:, top]).reshape(nr, nr)
        how = f"dense left and right eigenvectors of the mean-square operator ({dim} x {dim})"
        return float(abs(lam[top])), _sym(U), _sym(V), None, how
    packed = not s.red.tied.size
    if packed:
        size = nr * (nr + 1) // 2
        fwd, adj = s.ms_vech, lambda u: s.pack(ms_adjoint(s, s.unpack(u)))
        to_mat = s.unpack
    else:
        size = dim
        fwd = s.ms_vec
        adj = lambda u: ms_adjoint(s, u.reshape(nr, nr)).reshape(-1)  # noqa: E731
        to_mat = lambda u: u.reshape(nr, nr)  # noqa: E731
    # Start from w w^T, w the dominant right (left) eigenvector of E[M_S]: semidefinite, like
    # the Perron vectors of the positive maps T and T* (the oracle's start, for the right one).
    lam, wl, wr = sla.eig(s.mean_matrix(), left=True, right=True)
    top = int(np.argmax(np.abs(lam)))

    def start(w: np.ndarray) -> np.ndarray:
        W = np.real(np.outer(w, w.conj()))
        return s.pack(W) if packed else W.reshape(-1)

    if v0 is None or np.shape(v0) != (size,):
        v0 = start(wr[:, top])
    rho, v, how_v, _ = spectral_radius(fwd, size, v0=v0, tol=tol)
    if v is None:
        raise FedTheoryError("the top eigenvalue of the mean-square operator is not real")
    rho_u, u, how_u, _ = spectral_radius(adj, size, v0=start(wl[:, top]), tol=tol)
    if u is None or abs(rho_u - rho) > 1e-6 * max(rho, 1e-300):
        raise FedTheoryError(
            f"the adjoint's top eigenvalue {rho_u:.12g} is not the rate {rho:.12g}: the top "
            "eigenvalue of the mean-square operator is not simple"
        )
    how = f"right eigenvector by {how_v}; left by {how_u} of the adjoint"
    return rho, _sym(to_mat(u)), _sym(to_mat(v)), v, how


def _sym(X: np.ndarray) -> np.ndarray:
    X = 0.5 * (X + X.T)
    # the Perron vectors of a positive map are semidefinite: fix the sign
    return -X if np.trace(X) < 0 else X


__all__ = ["GRADIENT_QUANTITIES", "RateGradient", "ms_adjoint", "ms_adjoint_full", "rate_gradient"]
