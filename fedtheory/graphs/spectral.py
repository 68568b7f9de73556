"""The spectral gap rho of a mixing matrix, computed accurately in its own right.

000 and 004 call ``rho = ||W - 11^T/n||_2`` the spectral gap (000 Asm. 4.5, 004 Asm. 5.5); other
works use ``|lambda_2(W)|``. :func:`spectral_gap` reports both (claim G4):

- ``rho_norm = ||W - J||_2`` with ``J = 11^T / n``;
- ``rho_lambda2`` = the second largest eigenvalue *modulus* of W, i.e. the spectral radius of
  ``W - J`` (the eigenvalue 1 of the consensus direction removed). For symmetric W the two agree
  (``rho = max(|lambda_2|, |lambda_n|)``); for non-normal doubly stochastic W,
  ``rho_lambda2 <= rho_norm`` and the inequality can be strict.

``one_minus_rho`` is never computed as ``1.0 - rho``: for a ring of 10^6 nodes ``1 - rho`` is
about 1.3e-11 and ``1.0 - rho`` would keep four digits. It is the Rayleigh quotient of the
Laplacian-like matrix ``I - W`` at the computed eigenvector ``v`` written as a sum of squares,

    1 - lambda_2 = sum_{i<j} w_ij (v_i - v_j)^2 / ||v||^2,
    1 + lambda_n = (sum_{i<j} w_ij (v_i + v_j)^2 + 2 sum_i w_ii v_i^2) / ||v||^2,

which has no cancellation and is accurate to second order in the eigenvector error. For
non-symmetric W, ``||W - J||_2^2 = lambda_2(W^T W)`` (``W^T W`` is symmetric doubly stochastic),
so ``1 - rho = (1 - lambda_2(W^T W)) / (1 + rho)`` with the same formula applied to ``W^T W``.

Paths: dense (``numpy.linalg.eigh``/``svd``) for small n; sparse for large n, where ``v`` comes
from Lanczos on the pseudo-inverse of ``L = I - W`` (a sparse LU of the grounded Laplacian in a
reverse Cuthill-McKee ordering, exact when its bandwidth is small, e.g. rings and paths) or, for
2-D-like graphs whose LU would fill in, from LOBPCG on ``L`` with the all-ones vector deflated
and an algebraic-multigrid preconditioner (pyamg).
"""

from __future__ import annotations

import math
import warnings as _warnings
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pyamg
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from scipy.sparse.csgraph import reverse_cuthill_mckee, shortest_path

from fedtheory.errors import AssumptionError, FedTheoryError
from fedtheory.graphs.closedforms import closed_form
from fedtheory.graphs.families import estimated_nonzeros, family, mixing_matrix
from fedtheory.graphs.validate import DEFAULT_ATOL, check_mixing_matrix, components, is_symmetric
from fedtheory.validation import announce, check_int, check_memory, check_seed, check_tolerance

DENSE_MAX = 500
"""Largest n for which ``method="auto"`` uses the dense path."""

DENSE_BYTES = 64
"""Bytes per entry of W the dense path may hold at once (copies of W, W - J, W^T W,
eigenvectors and LAPACK workspace: about eight n x n float64 arrays)."""

#: Peak bytes per non-zero of W on the sparse path (W, I - W and I + W, the AMG hierarchy,
#: LOBPCG's blocks): measured about 290 on Erdos-Renyi graphs of 3e4 and 1e5 nodes.
SPARSE_BYTES = 400
#: Seconds per non-zero of W on the sparse path: measured 2e-5 to 2.5e-5 on the same graphs
#: (two cores shared); an order of magnitude, for saying that long work has started.
SPARSE_SECONDS = 2e-5
#: Seconds per non-zero to build a random mixing matrix (1.5 s for 2.4e6 on the same cores).
BUILD_SECONDS = 7e-7


CLOSED_FORM_NONZEROS = 10**7
""":func:`topology_gap` with ``method="auto"`` answers from the closed form (where one exists)
once the mixing matrix would have more non-zeros than this, e.g. complete graphs above 3162
nodes, rings above 3.3 million."""


def check_sparse_size(what: str, nnz: float, *, say: bool = True) -> None:
    """Refuse the sparse path on ``nnz`` non-zeros beyond the memory limit
    (:data:`SPARSE_BYTES` each), and (``say``) say that it starts when it is long."""
    need = SPARSE_BYTES * float(nnz)
    what = f"{what} ({nnz:.3g} non-zeros)"
    check_memory(what, need, hint="use a graph with fewer nodes or edges")
    if say:
        announce(what, seconds=SPARSE_SECONDS * nnz, nbytes=need)


NO_THEOREM = (
    "W is disconnected ({k} components): null(I - W) != span(1) and rho = 1, so no gossip "
    "theorem applies (000 Asm. 4.5, 004 Asm. 5.5)"
)


PERIODIC = (
    "W is periodic (period {p}; e.g. a bipartite graph without self-weights): it has an "
    "eigenvalue of modulus 1 besides the consensus one, rho = 1, gossip does not converge and "
    "no gossip theorem applies (use lazy weights)"
)


def period(W: Any) -> int:
    """Period of the strongly connected graph of W: the gcd of ``d(i) + 1 - d(j)`` over its edges
    ``i -> j``, with ``d`` the BFS distance from node 0 (1 means aperiodic, i.e. primitive W)."""

    C = sp.csr_array(W).tocoo()
    keep = C.data > 0
    r, c = C.row[keep], C.col[keep]
    if np.any(r == c):
        return 1
    G = sp.csr_array((np.ones(r.size), (r, c)), shape=W.shape)
    d = shortest_path(G, directed=True, unweighted=True, indices=0)
    return int(np.gcd.reduce(np.abs(d[r] + 1 - d[c]).astype(np.int64)))


@dataclass(frozen=True)
class SpectralGap:
    """Spectral quantities of a doubly stochastic mixing matrix.

    Attributes
    ----------
    n : int
        Number of nodes.
    rho_norm : float
        ``||W - 11^T/n||_2``, the spectral gap of 000 Asm. 4.5 / 004 Asm. 5.5.
    rho_lambda2 : float or None
        Second largest eigenvalue modulus of W (``|lambda_2|``), None if not computed.
    one_minus_rho : float
        ``1 - rho_norm``, computed from ``I - W`` (never as ``1.0 - rho_norm``).
    lambda2, lambda_min : float or None
        Second largest and smallest eigenvalue (symmetric W only).
    symmetric, doubly_stochastic, connected : bool
    n_components : int
        Connected components of the graph of W (``dim null(I - W)``).
    method : str
        How each number was obtained.
    warnings : tuple of str
    """

    n: int
    rho_norm: float
    rho_lambda2: float | None
    one_minus_rho: float
    lambda2: float | None
    lambda_min: float | None
    symmetric: bool
    doubly_stochastic: bool
    connected: bool
    n_components: int
    method: str
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["warnings"] = list(self.warnings)
        return d


# ---------------------------------------------------------------------------------------------
# Sum-of-squares forms of I - S and I + S for a symmetric doubly stochastic S.


def _upper(S: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Strict upper triangle (rows, cols, weights) and diagonal of a symmetric matrix."""
    if sp.issparse(S):
        C = sp.triu(S, k=1, format="coo")
        return C.row, C.col, C.data, np.asarray(sp.csr_array(S).diagonal())
    S = np.asarray(S)
    i, j = np.nonzero(np.triu(S, k=1))
    return i, j, S[i, j], np.diag(S).copy()


def laplacian_form(S: Any, v: np.ndarray, *, plus: bool = False) -> float:
    """``v^T (I - S) v / v^T v`` (or ``I + S`` with ``plus``) as a sum of non-negative terms.

    Valid for symmetric S with unit row sums: ``I - S = sum_{i<j} s_ij (e_i - e_j)(e_i - e_j)^T``
    and ``I + S = sum_{i<j} s_ij (e_i + e_j)(e_i + e_j)^T + 2 diag(s_ii)``.
    """
    v = np.asarray(v, dtype=np.float64)
    i, j, w, d = _upper(S)
    if plus:
        num = np.sum(w * (v[i] + v[j]) ** 2) + 2.0 * np.sum(d * v * v)
    else:
        num = np.sum(w * (v[i] - v[j]) ** 2)
    return float(num / np.dot(v, v))


def _deflate(v: np.ndarray) -> np.ndarray:
    return v - v.mean()


# ---------------------------------------------------------------------------------------------
# Dense path.


def _dense_symmetric(S: np.ndarray) -> tuple[float, float, float, float]:
    """(lambda_2, lambda_min, 1 - lambda_2, 1 + lambda_min) of a connected symmetric DS S."""
    vals, vecs = np.linalg.eigh(S)
    g2 = laplacian_form(S, _deflate(vecs[:, -2]))
    gn = laplacian_form(S, vecs[:, 0], plus=True)
    return float(vals[-2]), float(vals[0]), g2, gn


def _dense(
    W: np.ndarray, sym: bool
) -> tuple[float, float | None, float, float | None, float | None, str]:
    n = W.shape[0]
    if sym:
        S = (W + W.T) / 2.0
        l2, lmin, g2, gn = _dense_symmetric(S)
        rho = max(l2, -lmin, 0.0)
        return rho, rho, min(g2, gn), l2, lmin, "dense: numpy.linalg.eigh; 1-rho from I -+ W"
    M = W - 1.0 / n
    rho = float(np.linalg.norm(M, 2))
    slem = float(np.max(np.abs(np.linalg.eigvals(M))))
    S = W.T @ W
    S = (S + S.T) / 2.0
    _, _, gS, _ = _dense_symmetric(S)
    return (
        rho,
        slem,
        gS / (1.0 + rho),
        None,
        None,
        "dense: svd and eigvals of W - J; 1-rho from I - W^T W",
    )


# ---------------------------------------------------------------------------------------------
# Sparse path.


def _grounded_pinv(L: sp.csr_array) -> tuple[sla.LinearOperator, str]:
    """``L^+`` of a connected graph Laplacian as an operator, via an exact sparse LU of L with
    node 0 grounded (row and column removed), in reverse Cuthill-McKee order."""

    n = L.shape[0]
    Lr = sp.csr_array(L[1:, 1:])
    perm = reverse_cuthill_mckee(Lr, symmetric_mode=True)
    Lp = sp.csc_array(Lr[perm][:, perm])
    lu = sla.splu(Lp, permc_spec="NATURAL", diag_pivot_thresh=0.0, options={"SymmetricMode": True})
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size)

    def matvec(b: np.ndarray) -> np.ndarray:
        b = np.asarray(b, dtype=np.float64).ravel()
        b = b - b.mean()
        x = np.zeros(n)
        x[1:] = lu.solve(b[1:][perm])[inv]
        return x - x.mean()

    return sla.LinearOperator((n, n), matvec=matvec, dtype=np.float64), "grounded-LU(RCM)"


def _rcm_bandwidth(L: sp.csr_array) -> int:

    perm = reverse_cuthill_mckee(sp.csr_array(L), symmetric_mode=True)
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size)
    C = sp.csr_array(L).tocoo()
    return int(np.max(np.abs(inv[C.row] - inv[C.col]))) if C.nnz else 0


def _fiedler_lu(L: sp.csr_array, tol: float, seed: int) -> np.ndarray:
    op, _ = _grounded_pinv(L)
    n = L.shape[0]
    v0 = _deflate(np.random.default_rng(seed).standard_normal(n))
    _, vecs = sla.eigsh(op, k=1, which="LA", tol=tol, v0=v0)
    return _deflate(vecs[:, 0])


def _fiedler_amg(L: sp.csr_array, tol: float, seed: int) -> np.ndarray:

    n = L.shape[0]
    ml = pyamg.smoothed_aggregation_solver(
        L, B=np.ones((n, 1)), symmetry="symmetric", max_coarse=500
    )
    M = ml.aspreconditioner(cycle="V")
    X = np.random.default_rng(seed).standard_normal((n, 2))
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore")
        vals, vecs = sla.lobpcg(
            L, X, M=M, Y=np.ones((n, 1)), largest=False, tol=max(tol, 1e-9), maxiter=400
        )
    return _deflate(vecs[:, int(np.argmin(vals))])


def _sparse_symmetric(
    S: sp.csr_array, tol: float, seed: int, solver: str, psd: bool = False
) -> tuple[float, float | None, float, str]:
    """(lambda_2, lambda_min or None, 1 - rho, method) of a connected symmetric DS sparse S
    (``psd``: S is known to be positive semi-definite, e.g. ``W^T W``, so ``lambda_min >= 0``)."""
    n = S.shape[0]
    L = (sp.eye_array(n, format="csr") - S).tocsr()
    if solver == "auto":
        bw = _rcm_bandwidth(L)
        solver = "lu" if bw * n <= 4e7 else "amg"
    if solver == "lu":
        v = _fiedler_lu(L, tol, seed)
        how = "Lanczos on L^+ (grounded sparse LU, RCM order)"
    elif solver == "amg":
        v = _fiedler_amg(L, tol, seed)
        how = "LOBPCG on L with 1 deflated, pyamg preconditioner"
    else:
        raise FedTheoryError(f"unknown sparse solver {solver!r}: choose auto, lu or amg")
    g2 = laplacian_form(S, v)
    l2 = 1.0 - g2
    res = float(np.linalg.norm(L @ v - g2 * v) / np.linalg.norm(v))
    how += f", eigen-residual {res:.1e}"
    # 1 + lambda_min >= 2 min_i s_ii (Gershgorin): enough whenever it exceeds 1 - lambda_2.
    bound = 1.0 if psd else 2.0 * float(np.min(S.diagonal()))
    if bound >= g2:
        return (
            l2,
            None,
            g2,
            (
                f"sparse: {how}; 1-lambda_2 = Rayleigh quotient of I - W; |lambda_n| <= lambda_2 "
                + (
                    "as W^T W is positive semi-definite"
                    if psd
                    else f"by Gershgorin (1 + lambda_n >= {bound:.3g})"
                )
            ),
        )
    v0 = np.random.default_rng(seed + 1).standard_normal(n)
    _, vecs = sla.eigsh(S, k=1, which="SA", tol=tol, v0=v0, maxiter=20 * n)
    gn = laplacian_form(S, vecs[:, 0], plus=True)
    return (
        l2,
        gn - 1.0,
        min(g2, gn),
        (f"sparse: {how}; 1-lambda_2 from I - W, 1+lambda_n from I + W (Lanczos)"),
    )


def _sparse(
    W: sp.csr_array, sym: bool, tol: float, seed: int, solver: str
) -> tuple[float, float | None, float, float | None, float | None, str]:
    n = W.shape[0]
    if sym:
        S = ((W + W.T) / 2.0).tocsr()
        l2, lmin, g, how = _sparse_symmetric(S, tol, seed, solver)
        rho = max(l2, -lmin if lmin is not None else -np.inf, 0.0)
        # rho from the accurate gap when lambda_2 attains it (no rounding of a value near 1).
        return rho, rho, g, l2, lmin, how
    S = (W.T @ W).tocsr()
    S = ((S + S.T) / 2.0).tocsr()
    lS, _, gS, how = _sparse_symmetric(S, tol, seed, solver, psd=True)
    rho = math.sqrt(max(lS, 0.0))
    one_minus = gS / (1.0 + rho)

    def mv(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x).ravel()
        return W @ x - np.full(n, x.mean())

    op = sla.LinearOperator((n, n), matvec=mv, dtype=np.float64)
    try:
        ev = sla.eigs(
            op,
            k=1,
            which="LM",
            tol=tol,
            maxiter=50 * n,
            v0=np.random.default_rng(seed).standard_normal(n),
        )[0]
        slem: float | None = float(np.abs(ev[0]))
    except sla.ArpackNoConvergence:
        slem = None
    return (
        rho,
        slem,
        one_minus,
        None,
        None,
        (f"sparse: rho^2 = lambda_2(W^T W), {how} on W^T W; |lambda_2| by Arnoldi on W - J"),
    )


def _checked_input(
    W: Any, method: str, atol: float, tol: float, dense_max: int, seed: Any
) -> tuple[Any, str, float, int, int]:
    """Step 1 of :func:`spectral_gap`: the arguments checked, the method chosen and the size
    estimated before any work (W, method, tol, dense_max, seed)."""
    if method not in ("auto", "dense", "sparse"):
        raise FedTheoryError(f"unknown method {method!r}: choose auto, dense or sparse")
    tol = check_tolerance("tol", tol)
    dense_max = check_int("dense_max", dense_max, minimum=0)
    seed = check_seed(seed)
    if not isinstance(seed, int):
        raise AssumptionError(f"the seed of spectral_gap must be an integer >= 0, got {seed!r}")
    W = check_mixing_matrix(W, kind="doubly", atol=atol)
    n = int(W.shape[0])
    if method == "auto":
        method = "dense" if n <= dense_max else "sparse"
    if method == "dense":
        check_memory(f"the dense spectral gap of a {n} x {n} matrix", DENSE_BYTES * n * n)
    else:
        nnz = W.nnz if sp.issparse(W) else np.count_nonzero(W)
        check_sparse_size(f"the sparse spectral gap of a graph on {n} nodes", nnz)
    return W, method, tol, dense_max, seed


def _gap_one(W: Any, sym: bool, dense_max: int) -> SpectralGap | None:
    """Step 2 of :func:`spectral_gap`: the graph facts that make ||W - J||_2 = 1 without an
    eigensolver (disconnected, periodic, or W^T W disconnected), or None."""
    n = int(W.shape[0])
    k, _ = components(W)
    if k > 1:
        return SpectralGap(
            n=n,
            rho_norm=1.0,
            rho_lambda2=1.0,
            one_minus_rho=0.0,
            lambda2=1.0 if sym else None,
            lambda_min=None,
            symmetric=sym,
            doubly_stochastic=True,
            connected=False,
            n_components=k,
            method=f"graph components (scipy.sparse.csgraph): eigenvalue 1 has multiplicity {k}",
            warnings=(NO_THEOREM.format(k=k),),
        )
    per = period(W)
    if per > 1:
        return SpectralGap(
            n=n,
            rho_norm=1.0,
            rho_lambda2=1.0,
            one_minus_rho=0.0,
            lambda2=None,
            lambda_min=-1.0 if sym else None,
            symmetric=sym,
            doubly_stochastic=True,
            connected=True,
            n_components=1,
            method=f"graph period (BFS levels): W is periodic with period {per}, so it has the "
            f"eigenvalues exp(2 pi i k / {per}) of modulus 1",
            warnings=(PERIODIC.format(p=per),),
        )
    if not sym:
        kS, _ = components(sp.csr_array(W).T @ sp.csr_array(W))
        if kS > 1:
            slem = (
                _dense(W.toarray() if sp.issparse(W) else W, False)[1] if n <= dense_max else None
            )
            return SpectralGap(
                n=n,
                rho_norm=1.0,
                rho_lambda2=slem,
                one_minus_rho=0.0,
                lambda2=None,
                lambda_min=None,
                symmetric=False,
                doubly_stochastic=True,
                connected=True,
                n_components=1,
                method=f"graph components of W^T W ({kS}): ||W - J||_2^2 = lambda_2(W^T W) = 1",
                warnings=(
                    "||W - J||_2 = 1 although W is connected and aperiodic: W^T W is "
                    "disconnected, so one gossip step need not contract and the theorems' "
                    "rho < 1 fails",
                ),
            )
    return None


def spectral_gap(
    W: Any,
    *,
    method: str = "auto",
    solver: str = "auto",
    atol: float = DEFAULT_ATOL,
    tol: float = 1e-12,
    dense_max: int = DENSE_MAX,
    seed: int = 0,
) -> SpectralGap:
    """The spectral gap of a doubly stochastic mixing matrix (000 Asm. 4.5, 004 Asm. 5.5).

    Parameters
    ----------
    W : array_like or scipy.sparse matrix, shape (n, n)
        Doubly stochastic, non-negative.
    method : {"auto", "dense", "sparse"}
        ``auto``: dense for ``n <= dense_max``, sparse above.
    solver : {"auto", "lu", "amg"}
        Sparse eigen-solver for ``I - W``: exact grounded LU (banded graphs) or multigrid LOBPCG.
    atol : float
        Tolerance of the stochasticity checks.
    tol : float
        Eigen-solver tolerance (sparse path).
    seed : int
        Start vectors of the iterative solvers.

    Returns
    -------
    SpectralGap

    Raises
    ------
    AssumptionError
        If W has a complex, object or string dtype, is not square, not finite, has a negative
        entry, or is not doubly stochastic (the message names the first offending row or
        column); a NaN or negative ``atol``/``tol``; a negative seed; the dense path for an n
        whose memory estimate exceeds what this machine has (the message says the estimate).

    Notes
    -----
    A disconnected W is valid: it is reported with ``connected=False``, ``rho_norm = 1``,
    ``one_minus_rho = 0`` and a warning that no gossip theorem applies (claim G3).

    Examples
    --------
    >>> from fedtheory.graphs import mixing_matrix, spectral_gap
    >>> round(spectral_gap(mixing_matrix("ring", 50)).rho_norm, 3)  # 000 Sec. 6.2
    0.995
    """
    W, method, tol, dense_max, seed = _checked_input(W, method, atol, tol, dense_max, seed)
    n = int(W.shape[0])
    sym = is_symmetric(W, atol)
    degenerate = _gap_one(W, sym, dense_max)
    if degenerate is not None:
        return degenerate
    if method == "dense":
        Wd = W.toarray() if sp.issparse(W) else W
        rho, slem, g, l2, lmin, how = _dense(Wd, sym)
    else:
        rho, slem, g, l2, lmin, how = _sparse(sp.csr_array(W), sym, tol, seed, solver)
    rho = min(max(rho, 0.0), 1.0)
    return SpectralGap(
        n=n,
        rho_norm=float(rho),
        rho_lambda2=None if slem is None else float(min(slem, 1.0)),
        one_minus_rho=float(min(max(g, 0.0), 1.0)),  # 1 - rho lies in [0, 1] as rho does
        lambda2=l2,
        lambda_min=lmin,
        symmetric=sym,
        doubly_stochastic=True,
        connected=True,
        n_components=1,
        method=how,
        warnings=(),
    )


#: Named topologies whose default weights have a closed-form gap, and whether W is symmetric.
CLOSED_FORM_FAMILIES = {
    "ring": True,
    "complete": True,
    "torus": True,
    "hypercube": True,
    "exponential": False,
}


def topology_gap(
    topology: str,
    n: int,
    *,
    weights: str | None = None,
    lazy_weights: bool = False,
    alpha: float | None = None,
    seed: Any = None,
    method: str = "auto",
    solver: str = "auto",
    atol: float = DEFAULT_ATOL,
    tol: float = 1e-12,
    **params: Any,
) -> SpectralGap:
    """The spectral gap of the named topology on n nodes, from its closed form when it has one
    and building the matrix would be costly, else from the matrix.

    ``fedtheory spectral TOPOLOGY -N n`` asks this: ``topology_gap("complete", 100_000)``
    answers rho = 0 at once, where the matrix would hold 10^10 non-zeros.

    Parameters
    ----------
    topology, n, weights, lazy_weights, alpha, seed, **params
        As for :func:`~fedtheory.graphs.families.mixing_matrix`.
    method : {"auto", "closed-form", "dense", "sparse"}
        ``auto``: the closed form (:mod:`fedtheory.graphs.closedforms`) when the family's
        default weights are used, it has one on n nodes (ring, complete, torus, hypercube,
        exponential for n a power of 2) and the matrix would have more than
        :data:`CLOSED_FORM_NONZEROS` non-zeros; otherwise :func:`spectral_gap` of the matrix
        (``dense``/``sparse`` choose its path). ``closed-form`` insists on the closed form.
    solver, atol, tol
        As for :func:`spectral_gap`.

    Raises
    ------
    AssumptionError
        As :func:`~fedtheory.graphs.families.mixing_matrix` and :func:`spectral_gap`; also
        ``method="closed-form"`` where there is none.
    """
    fam = family(topology)
    n = check_int("n (number of nodes)", n, minimum=2)
    if method not in ("auto", "closed-form", "dense", "sparse"):
        raise FedTheoryError(
            f"unknown method {method!r}: choose auto, closed-form, dense or sparse"
        )
    default = weights in (None, fam.default_weights) and not lazy_weights and alpha is None
    cf = None
    if default and fam.name in CLOSED_FORM_FAMILIES and method in ("auto", "closed-form"):
        cf = closed_form(fam.name, n, **{k: v for k, v in params.items() if v is not None})
    if method == "closed-form" and cf is None:
        raise AssumptionError(
            f"no closed form for the {fam.name} topology on {n} nodes with these weights "
            f"(closed forms: {', '.join(CLOSED_FORM_FAMILIES)} with their default weights)"
        )
    nnz = estimated_nonzeros(fam.name, n, **params)
    big = nnz > CLOSED_FORM_NONZEROS
    if cf is not None and (method == "closed-form" or big):
        check_tolerance("atol", atol)
        rho_cf, gap = cf
        return SpectralGap(
            n=n,
            rho_norm=float(rho_cf),
            rho_lambda2=float(rho_cf),
            one_minus_rho=float(gap),
            lambda2=None,
            lambda_min=None,
            symmetric=CLOSED_FORM_FAMILIES[fam.name],
            doubly_stochastic=True,
            connected=True,
            n_components=1,
            method=f"closed form of the {fam.name} with its default weights "
            "(graphs.closedforms, derived with sympy); no matrix built",
        )
    if method == "sparse" or (method != "dense" and n > DENSE_MAX):  # refused before building
        where = f"the {fam.name} graph on {n} nodes"
        check_sparse_size(f"the sparse spectral gap of {where}", nnz, say=False)
        announce(f"building the {fam.name} mixing matrix on {n} nodes", seconds=BUILD_SECONDS * nnz)
    W = mixing_matrix(
        fam.name,
        n,
        weights=weights,
        lazy_weights=lazy_weights,
        alpha=alpha,
        seed=seed,
        format="dense" if method == "dense" else "auto",
        **params,
    )
    return spectral_gap(
        W, method="auto" if method == "closed-form" else method, solver=solver, atol=atol, tol=tol
    )


def rho(W: Any, **kw: Any) -> float:
    """Shorthand for ``spectral_gap(W).rho_norm``."""
    return spectral_gap(W, **kw).rho_norm


@dataclass(frozen=True)
class ClusterGaps:
    """Per-cluster spectral gaps of a clustered (block-diagonal) topology (000 Asm. D.2).

    ``rho_k[k] = ||W_k - 11^T/n_k||_2`` and ``rho_max = max_k rho_k`` (000 Thm D.3, 004 Thm 5.6).
    """

    sizes: tuple[int, ...]
    rho_k: tuple[float, ...]
    one_minus_rho_k: tuple[float, ...]
    rho_max: float
    one_minus_rho_max: float
    connected: tuple[bool, ...]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def cluster_gaps(W: Any, labels: Any = None, **kw: Any) -> ClusterGaps:
    """Spectral gap of every cluster of a block-diagonal W, or of a list of blocks ``W_k``.

    Parameters
    ----------
    W : matrix or sequence of matrices
        A block-diagonal mixing matrix, or the list of cluster matrices.
    labels : array of int, optional
        Cluster of each node; default: the connected components of W's graph.
    """
    if isinstance(W, list | tuple):
        blocks = list(W)
    else:
        W = check_mixing_matrix(W, atol=kw.get("atol", DEFAULT_ATOL))
        if labels is None:
            _, labels = components(W)
        labels = np.asarray(labels)
        if labels.shape != (W.shape[0],):
            raise AssumptionError(f"labels must have one entry per node ({W.shape[0]})")
        Wc = sp.csr_array(W)
        blocks = []
        for c in np.unique(labels):
            idx = np.flatnonzero(labels == c)
            outside = Wc[idx][:, np.setdiff1d(np.arange(W.shape[0]), idx)]
            if outside.nnz and np.max(np.abs(outside.data)) > 0:
                raise AssumptionError(
                    f"W is not block diagonal for the given clusters: cluster {c} has weight "
                    "on nodes outside it"
                )
            blocks.append(Wc[idx][:, idx])
    # A single node is its own average: W_k - J = 0, rho_k = 0.
    res = [
        (1, 0.0, 1.0, True)
        if B.shape[0] == 1
        else (lambda g: (g.n, g.rho_norm, g.one_minus_rho, g.connected))(spectral_gap(B, **kw))
        for B in blocks
    ]
    k = int(np.argmin([r[2] for r in res]))
    return ClusterGaps(
        sizes=tuple(int(r[0]) for r in res),
        rho_k=tuple(float(r[1]) for r in res),
        one_minus_rho_k=tuple(float(r[2]) for r in res),
        rho_max=float(res[k][1]),
        one_minus_rho_max=float(res[k][2]),
        connected=tuple(bool(r[3]) for r in res),
    )


@dataclass(frozen=True)
class SequenceGap:
    """Spectral gaps of a time-varying sequence ``W_0, ..., W_(T-1)`` and of its product."""

    rho_each: tuple[float, ...]
    rho_product: float
    one_minus_rho_product: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def sequence_gap(Ws: Any, **kw: Any) -> SequenceGap:
    """Per-round rho and the rho of one period's product ``W_(T-1) ... W_0`` (dense).

    For the one-peer exponential graph with n a power of 2 the product is exactly ``11^T/n``
    (Ying et al. 2021, Thm 1), so its rho is 0 while each round has rho = 1 for n > 2.
    """
    mats = [check_mixing_matrix(W, atol=kw.get("atol", DEFAULT_ATOL)) for W in Ws]
    if not mats:
        raise AssumptionError("the sequence of mixing matrices is empty")
    n = mats[0].shape[0]
    check_memory(f"the dense product of {len(mats)} {n} x {n} matrices", DENSE_BYTES * n * n)
    P = np.eye(mats[0].shape[0])
    for W in mats:
        P = (W.toarray() if sp.issparse(W) else W) @ P
    prod = spectral_gap(P, method="dense", **kw)
    return SequenceGap(
        rho_each=tuple(spectral_gap(W, **kw).rho_norm for W in mats),
        rho_product=prod.rho_norm,
        one_minus_rho_product=prod.one_minus_rho,
    )
