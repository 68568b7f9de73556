"""The dominant eigenvalue of a large matrix-free operator: Krylov-Schur (thick-restart Arnoldi).

The exact oracle's mean-square rate is the spectral radius of P -> E[M_S P M_S^T], an operator
on symmetric matrices with n_r (n_r + 1) / 2 unknowns (361,675 on the 003 Figure 4 problem)
that is applied, never formed. :func:`krylov_schur` computes its dominant eigenpair by the
Krylov-Schur method (Stewart 2001, "A Krylov-Schur algorithm for large eigenproblems", SIAM J.
Matrix Anal. Appl. 23(3)): Arnoldi steps with classical Gram-Schmidt and one
re-orthogonalization (Daniel, Gragg, Kaufman and Stewart 1976) build an orthonormal basis V_m
and T V_m = V_m H_m + v_{m+1} b^T; when the basis is full, the real Schur form of H_m is
reordered (LAPACK ``trsen``/``trexc``) so the ``keep`` wanted Ritz values come first, and the
first ``keep`` Schur vectors, with the same relation truncated, start the next cycle. The
wanted Ritz pair (theta, V q_1) has the residual ||T V q_1 - theta V q_1|| = |b^T q_1|,
read off at every restart without applying T.

Why not ARPACK's ``eigs`` (``k=1``)? The top of a mean-square spectrum is a dense cluster of
real eigenvalues (003 Figure 4, FOCUS, uniform 4 of 16: 0.824413, 0.823928, 0.823846,
0.823648, ... ; weighted 4 of 16, SCAFFOLD: eight eigenvalues within 4e-5 of 0.947704; the
d (d + 1) / 2 covariance modes of a d-dimensional slow or stale subspace). Every Krylov method
needs hundreds of applications there: measured on FOCUS, uniform 4 of 16, from the same start,
an unrestarted Arnoldi basis of 190 vectors still had the rate wrong by 2.7e-4 (300 vectors:
7e-6), ARPACK with 60 vectors needed 681 applications for tolerance 1e-10, and this
Krylov-Schur 671 (40 vectors, 20 kept; 60/30: 619) for a relative residual of 4.5e-10, about
90 applications per decade of the residual. Its gain is outside the operator: ARPACK's
restarts and orthogonalization of 60 vectors of 361,675 numbers cost as much as the operator
itself, here a third of that (docs/exact-rates.md has the measurements). Keeping half the
basis across a restart keeps the cluster's Ritz vectors, which ``k=1`` throws away.

The wanted eigenvalue is the one of largest real part (``which="LR"``, the Perron root of a
positive map: real, and no other eigenvalue has a larger modulus, so none has a larger real
part) or of largest modulus (``which="LM"``, any operator).

A relative residual r bounds the eigenvalue's error only up to its condition number, which is
large for these non-normal operators, and the residual this implementation reaches has a floor
of about 3e-11 to 5e-11 on Figure 4: at tolerance 1e-12 the values returned are 1.4e-7 below
(SCAFFOLD, uniform 4 of 16) and 5.2e-8 above (FOCUS) the top eigenvalues that ARPACK (k = 6,
tolerance 1e-13, residuals 1e-11 and 5e-12) finds on the same operator (docs/exact-rates.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import scipy.linalg as sla
from scipy.linalg.lapack import dtrexc, dtrsen

from fedtheory.errors import FedTheoryError

#: Arnoldi vectors of a cycle and Schur vectors kept across a restart (measured on the 003
#: Figure 4 FOCUS operator: 40/20 and 60/30 need 671 and 619 applications for 1e-9, and the
#: larger basis spends the saving on orthogonalization).
BASIS = 40
KEEP = 20
#: Applications after which :func:`krylov_schur` gives up.
MAX_APPLICATIONS = 20_000
#: Within a cycle, the wanted Ritz pair's residual is also read every this many applications
#: (a small dense Schur form): a warm start that converges early stops early.
CHECK = 10


class KrylovSchur(NamedTuple):
    """The dominant eigenpair found by :func:`krylov_schur`.

    Attributes
    ----------
    value : complex or float
        The Ritz value (a float when real).
    vector : ndarray or None
        Its unit Ritz vector (None for a complex eigenvalue).
    applications : int
        Applications of the operator.
    residual : float
        ||A v - value v|| / |value| as estimated by the Krylov-Schur relation.
    restarts : int
    """

    value: Any
    vector: np.ndarray | None
    applications: int
    residual: float
    restarts: int


def _schur_eigenvalues(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Real and imaginary parts of the eigenvalues of a real Schur form, block by block."""
    m = S.shape[0]
    wr, wi = np.diag(S).copy(), np.zeros(m)
    i = 0
    while i < m:  # 1x1 and 2x2 diagonal blocks
        if i + 1 < m and S[i + 1, i] != 0.0:
            a, b, c, d = S[i, i], S[i, i + 1], S[i + 1, i], S[i + 1, i + 1]
            disc = 0.25 * (a - d) ** 2 + b * c
            im = np.sqrt(-disc) if disc < 0 else 0.0
            wr[i] = wr[i + 1] = 0.5 * (a + d)
            wi[i], wi[i + 1] = im, -im
            i += 2
        else:
            i += 1
    return wr, wi


def _ordered_schur(H: np.ndarray, keep: int, which: str) -> tuple[np.ndarray, np.ndarray, int]:
    """The real Schur form S = Q^T H Q with the ``keep`` wanted eigenvalues leading (a complex
    pair is never split) and the most wanted one first; returns (S, Q, kept)."""
    S, Q = sla.schur(H, output="real")
    wr, wi = _schur_eigenvalues(S)
    score = wr if which == "LR" else np.hypot(wr, wi)
    order = np.argsort(-score, kind="stable")
    select = np.zeros(H.shape[0], dtype=np.int32)
    select[order[:keep]] = 1
    pair = np.flatnonzero(select & (wi != 0))
    select[np.where(wi[pair] > 0, pair + 1, pair - 1)] = 1  # both halves of a complex pair
    S, Q, wr, wi, kept, _, _, info = dtrsen(select, S, Q, job="N")
    if info != 0:
        raise FedTheoryError(f"reordering the Krylov-Schur form failed (LAPACK trsen: {info})")
    score = wr[:kept] if which == "LR" else np.hypot(wr[:kept], wi[:kept])
    top = int(np.argmax(score))
    if top:
        S, Q, info = dtrexc(S, Q, top + 1, 1)
        if info != 0:
            raise FedTheoryError(f"reordering the Krylov-Schur form failed (LAPACK trexc: {info})")
    return S, Q, int(kept)


def krylov_schur(
    apply: Callable[[np.ndarray], np.ndarray],
    v0: np.ndarray,
    *,
    tol: float = 1e-10,
    which: str = "LR",
    basis: int = BASIS,
    keep: int = KEEP,
    max_applications: int = MAX_APPLICATIONS,
    callback: Callable[[int, Any, float], None] | None = None,
    fallback: np.ndarray | None = None,
    accept: Callable[[Any, np.ndarray | None], bool] | None = None,
) -> KrylovSchur:
    """The dominant eigenpair of a real linear operator by Krylov-Schur (module docstring).

    Parameters
    ----------
    apply : callable
        ``apply(v) -> A v`` for a float64 vector (it must not keep ``v``).
    v0 : ndarray
        The start vector (e.g. the previous eigenvector of a nearby operator: a warm start).
    tol : float
        Stop when the wanted Ritz pair's relative residual is at most ``tol``.
    which : {"LR", "LM"}
        The eigenvalue of largest real part (the Perron root of a positive map) or of
        largest modulus.
    basis, keep : int
        Arnoldi vectors of a cycle and Schur vectors kept across a restart.
    max_applications : int
    callback : callable, optional
        ``callback(applications, value, residual)`` after every application (progress), with
        the wanted Ritz value and residual of the last finished cycle (None and inf before
        the first).
    fallback : ndarray, optional
        Where the Krylov space of ``v0`` is invariant (an exact eigenvector or a few of them:
        its Ritz values are eigenvalues, but not necessarily the wanted one), the basis goes on
        with this vector orthogonalized against it, as ARPACK does with a random one (for a
        positive map, the identity: every positive semidefinite eigenvector of the adjoint
        sees it). Without it, the invariant subspace's wanted Ritz pair is returned.
    accept : callable, optional
        ``accept(value, vector) -> bool``: a further test of a Ritz pair that passed the
        residual test (the oracle: the eigenvector of a positive map is positive semidefinite);
        a refused pair is not returned and the iteration goes on.

    Notes
    -----
    A Ritz pair is returned when its relative residual is at most ``tol`` and its Ritz value
    moved by at most ``tol`` (relative) since the previous reading. The second test guards
    against the transient Ritz values of a far-from-normal operator: early in the iteration a
    Ritz value can sit well outside the spectrum with a small residual (it is in the
    pseudospectrum), then move on; measured on FOCUS, Figure 4, uniform 4 of 16, a Ritz pair
    0.9038 (the rate is 0.8244) had a residual below 1e-4 after 20 applications. With
    ``which="LR"`` (a positive map) a complex wanted Ritz value is never returned either: the
    Perron root is real.

    Returns
    -------
    KrylovSchur

    Raises
    ------
    FedTheoryError
        When the residual is still above ``tol`` after ``max_applications``.
    """
    if which not in ("LR", "LM"):
        raise FedTheoryError(f"which must be 'LR' or 'LM', got {which!r}")
    n = int(v0.size)
    m = max(2, min(int(basis), n - 1))
    k = max(1, min(int(keep), m - 2))
    norm0 = float(np.linalg.norm(v0))
    if not np.isfinite(norm0) or norm0 == 0.0:
        raise FedTheoryError("the Krylov-Schur start vector is zero or not finite")
    V = np.empty((m + 1, n))
    H = np.zeros((m + 1, m))
    V[0] = v0 / norm0
    start, apps, restarts = 0, 0, 0
    value: Any = None
    residual = float("inf")
    spare = None if fallback is None else np.asarray(fallback, dtype=np.float64).reshape(-1)
    previous: list = [None]  # the wanted Ritz value at the last reading

    def done_with(value: Any, width: int, residual: float, vector: Any) -> bool:
        last, previous[0] = previous[0], value
        if residual > tol or (which == "LR" and width != 1) or last is None:
            return False
        if abs(value - last) > tol * abs(value):
            return False
        return accept is None or bool(accept(value, vector()))

    while True:
        done = m
        j = start
        while j < m:  # Arnoldi steps: CGS with one re-orthogonalization
            w = np.asarray(apply(V[j]), dtype=np.float64)
            apps += 1
            if callback is not None:
                callback(apps, value, residual)
            Vj = V[: j + 1]
            h = Vj @ w
            w -= h @ Vj
            h2 = Vj @ w
            w -= h2 @ Vj
            h += h2
            H[: j + 1, j] = h
            beta = float(np.linalg.norm(w))
            H[j + 1, j] = beta
            if not np.isfinite(beta):
                raise FedTheoryError("the operator returned a non-finite vector")
            if beta <= 1e-14 * max(float(np.abs(h).max(initial=0.0)), 1e-300):
                # an invariant subspace: go on with the fallback vector if there is one
                fresh = _orthonormal(spare, V[: j + 1]) if j + 1 < m else None
                spare = None
                if fresh is None:
                    done = j + 1  # its Ritz values are eigenvalues
                    break
                H[j + 1, j] = 0.0
                V[j + 1] = fresh
            else:
                V[j + 1] = w / beta
            j += 1
            if (j - start) % CHECK == 0 and j < m:  # converged within the cycle?
                S, Q, _, value, width, residual, _ = _ritz(H, j, k, which)
                ritz = lambda Q=Q, j=j, width=width: Q[:, 0] @ V[:j] if width == 1 else None  # noqa: E731
                if done_with(value, width, residual, ritz):
                    return KrylovSchur(value, ritz(), apps, residual, restarts)
        S, Q, kept, value, width, residual, b = _ritz(H, done, k, which, invariant=done < m)
        ritz = lambda Q=Q, done=done, width=width: Q[:, 0] @ V[:done] if width == 1 else None  # noqa: E731
        if done < m or done_with(value, width, residual, ritz):
            return KrylovSchur(value, ritz(), apps, residual, restarts)
        if apps >= max_applications:
            raise FedTheoryError(
                f"Krylov-Schur did not converge on the {n}-dimensional operator within "
                f"{apps} applications (relative residual {residual:.1e} > tol {tol:g})"
            )
        V[:kept] = Q[:, :kept].T @ V[:m]  # restart: the kept Schur vectors, then v_{m+1}
        V[kept] = V[m]
        H[:] = 0.0
        H[:kept, :kept] = S[:kept, :kept]
        H[kept, :kept] = b[:kept]
        start = kept
        restarts += 1


def _orthonormal(v: np.ndarray | None, V: np.ndarray) -> np.ndarray | None:
    """``v`` orthogonalized against the rows of ``V`` (twice) and normalized; None when it lies
    in their span (or is None)."""
    if v is None:
        return None
    w = v.copy()
    for _ in range(2):
        w -= (V @ w) @ V
    norm = float(np.linalg.norm(w))
    return w / norm if norm > 1e-8 * float(np.linalg.norm(v)) else None


def _ritz(H: np.ndarray, size: int, keep: int, which: str, *, invariant: bool = False) -> tuple:
    """The wanted Ritz pair of the Krylov-Schur decomposition of dimension ``size`` held in
    ``H`` (rows ``:size`` the Rayleigh quotient, row ``size`` the residual row): the ordered
    Schur form (S, Q, kept), the Ritz value, its width (1 real, 2 a complex pair), its relative
    residual and the residual row b = H[size, :size] Q (zero for an invariant subspace)."""
    S, Q, kept = _ordered_schur(H[:size, :size], min(keep, max(size - 1, 1)), which)
    b = np.zeros(size) if invariant else H[size, :size] @ Q
    wr, wi = _schur_eigenvalues(S[:2, :2] if size > 1 else S)
    value = float(wr[0]) if wi[0] == 0 else complex(wr[0], wi[0])
    width = 1 if wi[0] == 0 else 2
    residual = float(np.linalg.norm(b[:width])) / max(abs(value), 1e-300)
    return S, Q, kept, value, width, residual, b
