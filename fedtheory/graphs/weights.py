"""Weight rules: from an adjacency matrix to a doubly stochastic mixing matrix W.

docs/algorithms.md, Section 1: uniform-degree (``1 / (deg + 1)`` on a regular graph: the ring gets
1/3 as in 000 Sec. 6.2 and 004 Sec. 6), Metropolis-Hastings, max-degree, lazy ``(W + I) / 2``,
Laplacian ``I - alpha L``, and random symmetric weights on a given support (the "unbalanced fully
connected" topology of 000 Sec. 6.2, footnote 6). Every rule is vectorized over edges and keeps
the sparse format of its input.

References
----------
.. [XB04] L. Xiao, S. Boyd, "Fast linear iterations for distributed averaging", Systems &
   Control Letters 53 (2004): max-degree and Metropolis-Hastings weights, ``W = I - alpha L``.
.. [Sink] R. Sinkhorn, P. Knopp, "Concerning nonnegative matrices and doubly stochastic
   matrices", Pacific J. Math. 21 (1967): the symmetric scaling used for random weights.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from fedtheory.errors import AssumptionError
from fedtheory.validation import check_seed

WEIGHT_RULES = ("uniform", "metropolis", "max-degree", "laplacian", "random")


def degrees(A: Any) -> np.ndarray:
    """Node degrees of a 0/1 adjacency matrix (dense or sparse)."""
    return np.asarray(sp.csr_array(A).sum(axis=1)).ravel()


def _laplacian(A: sp.csr_array) -> sp.csr_array:
    return (sp.diags_array(degrees(A)) - A).tocsr()


def uniform_degree(A: Any) -> sp.csr_array:
    """``W = (A + I) / (d + 1)`` on a d-regular graph (ring: 1/3, torus: 1/5, K_n: 1/n).

    Raises
    ------
    AssumptionError
        If the graph is not regular: then ``1/(deg+1)`` is not doubly stochastic.
    """
    A = sp.csr_array(A, dtype=np.float64)
    d = degrees(A)
    bad = np.flatnonzero(d != d[0])
    if bad.size:
        i = int(bad[0])
        raise AssumptionError(
            f"uniform-degree weights 1/(deg+1) need a regular graph: node 0 has degree "
            f"{int(d[0])} but node {i} has degree {int(d[i])} (use metropolis weights)"
        )
    return ((A + sp.eye_array(A.shape[0], format="csr")) / (d[0] + 1.0)).tocsr()


def metropolis_hastings(A: Any) -> sp.csr_array:
    """``w_ij = 1 / (1 + max(d_i, d_j))`` on edges, ``w_ii = 1 - sum_j w_ij`` (Xiao-Boyd 2004).

    Symmetric and doubly stochastic on any graph, with ``w_ii >= 1 / (1 + d_i) > 0``.
    """
    A = sp.csr_array(A, dtype=np.float64)
    d = degrees(A)
    C = A.tocoo()
    w = 1.0 / (1.0 + np.maximum(d[C.row], d[C.col]))
    off = sp.csr_array((w, (C.row, C.col)), shape=A.shape)
    diag = 1.0 - np.asarray(off.sum(axis=1)).ravel()
    return (off + sp.diags_array(diag)).tocsr()


def max_degree(A: Any) -> sp.csr_array:
    """``W = I - L / d_max`` (Xiao-Boyd 2004, "max-degree weights").

    Nodes of maximal degree get no self-weight, so on a bipartite regular graph (an even ring)
    W has eigenvalue -1 and rho = 1: apply :func:`lazy` to fix that.
    """
    A = sp.csr_array(A, dtype=np.float64)
    dmax = degrees(A).max()
    if dmax == 0:
        raise AssumptionError("the graph has no edges, so max-degree weights are undefined")
    return laplacian_weights(A, 1.0 / dmax)


def laplacian_weights(A: Any, alpha: float | None = None) -> sp.csr_array:
    """``W = I - alpha L`` with ``L = D - A`` the graph Laplacian (Xiao-Boyd 2004).

    ``alpha`` defaults to ``1 / (d_max + 1)``. Non-negativity needs ``0 < alpha <= 1 / d_max``.
    """
    A = sp.csr_array(A, dtype=np.float64)
    dmax = float(degrees(A).max())
    if alpha is None:
        alpha = 1.0 / (dmax + 1.0)
    alpha = float(alpha)
    if not (np.isfinite(alpha) and 0 < alpha <= 1.0 / max(dmax, 1e-300) * (1 + 1e-12)):
        raise AssumptionError(
            f"Laplacian weights I - alpha L are non-negative only for 0 < alpha <= 1/d_max = "
            f"{1.0 / dmax:.6g}, got alpha = {alpha}"
        )
    n = A.shape[0]
    return (sp.eye_array(n, format="csr") - alpha * _laplacian(A)).tocsr()


def lazy(W: Any) -> Any:
    """The lazy version ``(W + I) / 2``: same eigenvectors, eigenvalues moved into [0, 1]."""
    if sp.issparse(W):
        return ((W + sp.eye_array(W.shape[0], format="csr")) / 2.0).tocsr()
    W = np.asarray(W, dtype=np.float64)
    return (W + np.eye(W.shape[0])) / 2.0


def random_weights(
    A: Any, seed: Any = None, *, tol: float = 1e-15, max_iter: int = 10_000
) -> sp.csr_array:
    """Random symmetric doubly stochastic weights on the support of ``A`` plus self-loops.

    Draws ``B_ij = B_ji ~ U(0, 1)`` on edges and the diagonal, then scales symmetrically,
    ``W = diag(x) B diag(x)``, with the Sinkhorn-Knopp fixed point ``x <- sqrt(x / (B x))``; the
    last rounding error of the row sums is moved to the (positive) diagonal. On the complete
    graph this is the "unbalanced fully connected" topology of 000 Sec. 6.2 (footnote 6).
    """
    A = sp.csr_array(A, dtype=np.float64)
    n = A.shape[0]
    rng = np.random.default_rng(check_seed(seed))
    U = sp.triu(A, k=1, format="coo")
    w = rng.random(U.nnz)
    B = sp.csr_array((w, (U.row, U.col)), shape=(n, n))
    B = (B + B.T + sp.diags_array(rng.random(n) + 0.05)).tocsr()
    x = 1.0 / np.sqrt(np.asarray(B.sum(axis=1)).ravel())
    for _ in range(max_iter):
        Bx = B @ x
        if np.max(np.abs(x * Bx - 1.0)) < tol:
            break
        x = np.sqrt(x / Bx)
    W = (sp.diags_array(x) @ B @ sp.diags_array(x)).tocsr()
    W = (W + W.T) / 2.0
    fix = 1.0 - np.asarray(W.sum(axis=1)).ravel()
    return (W + sp.diags_array(fix)).tocsr()


def apply_rule(A: Any, rule: str, *, alpha: float | None = None, seed: Any = None) -> sp.csr_array:
    """Apply the weight rule named ``rule`` (one of :data:`WEIGHT_RULES`) to adjacency ``A``."""
    rule = rule.strip().lower().replace("_", "-")
    if rule in ("uniform", "uniform-degree", "ring"):
        return uniform_degree(A)
    if rule in ("metropolis", "metropolis-hastings", "mh"):
        return metropolis_hastings(A)
    if rule in ("max-degree", "maxdegree"):
        return max_degree(A)
    if rule == "laplacian":
        return laplacian_weights(A, alpha)
    if rule == "random":
        return random_weights(A, seed)
    raise AssumptionError(f"unknown weight rule {rule!r}: choose one of {', '.join(WEIGHT_RULES)}")
