"""Stochastic-matrix view of federated learning (003, Sections 3-4, Appendices C-D).

Index 0 is the server, 1..N the clients; a state is the (N+1) x d stack of server and client
models. For a participation set S (a mask of length N) and aggregation weights w (zero off S):

* :func:`model_assign` A_S (pull, row stochastic, 003 eq. (4)): row i in S is e_0^T (client i
  copies the server); the server's and non-participants' rows are identity rows.
* :func:`model_average` V_S (aggregate, row stochastic, 003 eq. (4)): row 0 is
  (1 - eta sum_S w_i) e_0^T + eta sum_{i in S} w_i e_i^T (eta = 1: the plain weighted average);
  other rows are identity rows.
* :func:`collect` C_S (push, column stochastic, 003 Section 3): column i in S is e_0 (its
  content is summed onto the server, leaving the client with 0); other columns identity columns.
* :func:`activation` D_S = diag(0, 1{1 in S}, ..., 1{N in S}) (003 eq. (7)).
* :func:`round_matrix` W_S of Appendix C's all-clients-pull reformulation (003 eqs. (33)-(36)):
  every client pulls and trains, only S is averaged, so after the round every node holds the
  server's new model: W_S = A_[N] V_S = 1 (w_0, w)^T, a matrix with identical rows.

Each builder accepts a single mask (N,) or a batch (..., N). Dense output has shape
(..., N+1, N+1); ``sparse=True`` (the default once N+1 > :data:`SPARSE_FROM`) returns a
``scipy.sparse.csr_array`` with O(N) non-zeros for a single mask, so 10^5 clients never need an
(N+1)^2 array. The rank-one round matrix is returned as a
:class:`scipy.sparse.linalg.LinearOperator` in the sparse case.

Expectations over a participation model (:func:`expected_matrices`): E[A_S], E[V_S], E[C_S],
E[D_S] and E[W_S] are affine in the inclusion probabilities pi_i = P(i in S) and the expected
weights E[w_i], so they are exact wherever the model's pi and q are exact, and Monte Carlo
(with standard errors) otherwise. E[W_S] = 1 r^T with r = (E w_0, E w): identical rows, and r is
its left eigenvector (003 eq. (37)).

One-index algorithms (003 Section 4): :func:`fedavg_mixing_sequence` and
:func:`fedavg_matrix_form` (eqs. (6a)-(6c)), :func:`focus_mixing_sequence` and
:func:`focus_matrix_form` (eqs. (13)-(14) in the form of the authors' code, docs/algorithms.md
Section 4). Products of row-stochastic matrices and their rank-one limit:
:func:`ergodicity_coefficient`, :func:`product_convergence`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from fedtheory.errors import AssumptionError
from fedtheory.graphs.validate import check_row_stochastic
from fedtheory.participation.base import (
    MONTE_CARLO,
    ParticipationModel,
    check_rule,
    monte_carlo_moments,
)
from fedtheory.validation import check_finite, check_int, check_positive

#: Matrices of order N+1 above this size are built sparse unless ``sparse=False``.
SPARSE_FROM = 2048


# --------------------------------------------------------------------------------------------
# helpers
def _mask(mask: Any) -> np.ndarray:
    m = np.asarray(mask)
    if m.ndim == 0:
        raise AssumptionError("a participation mask must have one entry per client")
    if m.dtype != bool:
        if not np.issubdtype(m.dtype, np.number) or np.any(m < 0):
            raise AssumptionError(
                "a participation mask must be boolean or non-negative multiplicities"
            )
        m = m > 0
    return m


def _weights(mask: np.ndarray, weights: Any) -> np.ndarray:
    if weights is None:
        c = mask.astype(np.float64)
        tot = c.sum(axis=-1, keepdims=True)
        return np.divide(c, tot, out=np.zeros_like(c), where=tot > 0)
    w = check_finite("aggregation weights w", weights)
    if w.shape != mask.shape:
        raise AssumptionError(
            f"aggregation weights have shape {w.shape}, the participation mask {mask.shape}"
        )
    off = np.argwhere((w != 0) & ~mask)
    if off.size:
        idx = tuple(int(i) for i in off[0])
        raise AssumptionError(
            f"aggregation weight {w[idx]} at {idx} belongs to a client outside S: weights must "
            "be zero off the participation set"
        )
    return w


def _use_sparse(n1: int, sparse: bool | None, batch: bool) -> bool:
    use = n1 > SPARSE_FROM if sparse is None else bool(sparse)
    if use and batch:
        raise AssumptionError("sparse matrices are built for one participation set at a time")
    return use


def _identity_stack(shape: tuple[int, ...], n1: int) -> np.ndarray:
    return np.broadcast_to(np.eye(n1), (*shape, n1, n1)).copy()


# --------------------------------------------------------------------------------------------
# the four matrices of 003 Section 3 and the round matrix of Appendix C
def model_assign(mask: Any, *, sparse: bool | None = None):
    """A_S, the model-assign (pull) matrix of 003 eq. (4): row stochastic.

    Row i (1-based client index) is e_0^T when client i is in S, else e_i^T; row 0 is e_0^T.
    """
    m = _mask(mask)
    n1 = m.shape[-1] + 1
    if _use_sparse(n1, sparse, m.ndim > 1):
        rows = np.arange(n1)
        cols = np.concatenate([[0], np.where(m, 0, np.arange(1, n1))])
        return sp.csr_array((np.ones(n1), (rows, cols)), shape=(n1, n1))
    A = _identity_stack(m.shape[:-1], n1)
    rows = A[..., 1:, :]
    rows[m] = np.eye(n1)[0]
    return A


def model_average(mask: Any, weights: Any = None, *, server_lr: float = 1.0, sparse=None):
    """V_S, the model-average (aggregate) matrix of 003 eq. (4).

    Row 0 is (1 - eta sum_S w_i) e_0^T + eta sum_{i in S} w_i e_i^T, other rows identity rows.
    With eta = ``server_lr`` = 1 and weights summing to 1 over S it is the plain weighted
    average; it is row stochastic (non-negative, rows summing to 1) whenever
    eta sum_S w_i <= 1 and w >= 0. An empty S gives the identity.

    Parameters
    ----------
    mask : array_like of bool, shape (..., N)
    weights : array_like, shape (..., N), optional
        Zero off S; default 1/|S| on S.
    server_lr : float
        Global step eta of x <- x + eta sum_i w_i (x_i - x).
    """
    m = _mask(mask)
    w = server_lr * _weights(m, weights)
    n1 = m.shape[-1] + 1
    w0 = 1.0 - w.sum(axis=-1)
    if _use_sparse(n1, sparse, m.ndim > 1):
        on = np.flatnonzero(m)
        rows = np.concatenate([[0], np.zeros(on.size, dtype=np.int64), np.arange(1, n1)])
        cols = np.concatenate([[0], on + 1, np.arange(1, n1)])
        data = np.concatenate([[w0], w[on], np.ones(n1 - 1)])
        return sp.csr_array((data, (rows, cols)), shape=(n1, n1))
    V = _identity_stack(m.shape[:-1], n1)
    V[..., 0, 0] = w0
    V[..., 0, 1:] = w
    return V


def collect(mask: Any, *, sparse: bool | None = None):
    """C_S, the collect (push) matrix of 003 Section 3: column stochastic.

    Column i is e_0 when client i is in S (its content is added onto the server and the client
    is left with 0), else e_i; column 0 is e_0. That is C_S = A_S^T (push is pull transposed),
    and it is built that way.
    """
    A = model_assign(mask, sparse=sparse)
    if sp.issparse(A):
        return A.T.tocsr()
    return np.ascontiguousarray(np.swapaxes(A, -1, -2))


def activation(mask: Any, *, sparse: bool | None = None):
    """D_S = diag(0, 1{1 in S}, ..., 1{N in S}) of 003 eq. (7): who computes local steps."""
    m = _mask(mask)
    n1 = m.shape[-1] + 1
    diag = np.concatenate([np.zeros((*m.shape[:-1], 1)), m.astype(np.float64)], axis=-1)
    if _use_sparse(n1, sparse, m.ndim > 1):
        return sp.diags_array(diag, format="csr")
    D = np.zeros((*m.shape[:-1], n1, n1))
    idx = np.arange(n1)
    D[..., idx, idx] = diag
    return D


def round_matrix(
    mask: Any, weights: Any = None, *, server: bool = True, server_lr: float = 1.0, sparse=None
):
    """The round matrix of Appendix C's all-clients-pull reformulation (003 eqs. (33)-(36)).

    Every client pulls the server model and trains; only S is averaged, and at the next pull
    every node receives the new server model: W_S = A_[N] V_S = 1 r^T with
    r = (1 - eta sum_S w_i, eta w). All rows are identical, for every S.

    Parameters
    ----------
    server : bool
        ``True``: the (N+1) x (N+1) matrix with the server at index 0. ``False``: the N x N
        client-only form 1 w^T of Appendix C (S must be non-empty and eta = 1, so that the rows
        are stochastic without the server).
    sparse : bool, optional
        Return a rank-one :class:`scipy.sparse.linalg.LinearOperator` (x -> 1 (r . x)) instead
        of a dense array (default once the order exceeds :data:`SPARSE_FROM`).
    """
    m = _mask(mask)
    w = server_lr * _weights(m, weights)
    if server:
        row = np.concatenate([1.0 - w.sum(axis=-1, keepdims=True), w], axis=-1)
    else:
        if np.any(~m.any(axis=-1)):
            raise AssumptionError(
                "the client-only round matrix 1 w^T needs a non-empty S (an empty round "
                "leaves the server model in place: use server=True)"
            )
        row = w
    n = row.shape[-1]
    if _use_sparse(n, sparse, m.ndim > 1):
        return rank_one_operator(row)
    return np.broadcast_to(row[..., None, :], (*row.shape[:-1], n, n)).copy()


def rank_one_operator(row: np.ndarray) -> LinearOperator:
    """The n x n matrix 1 row^T as a LinearOperator (O(n) memory)."""
    row = np.asarray(row, dtype=np.float64)
    n = row.size

    def matvec(x):
        return np.full(n, row @ np.ravel(x))

    def matmat(X):
        return np.broadcast_to(row @ X, (n, X.shape[1])).copy()

    def rmatvec(y):
        return row * np.sum(y)

    def rmatmat(Y):
        return row[:, None] * Y.sum(axis=0)[None, :]

    return LinearOperator(
        (n, n), matvec=matvec, matmat=matmat, rmatvec=rmatvec, rmatmat=rmatmat, dtype=np.float64
    )


# --------------------------------------------------------------------------------------------
# stochasticity checks, left eigenvectors, products
def _dense(M) -> np.ndarray:
    if sp.issparse(M):
        return M.toarray()
    if isinstance(M, LinearOperator):
        return M @ np.eye(M.shape[1])
    return np.asarray(M, dtype=np.float64)


def left_eigenvector(M, *, tol: float = 1e-12, maxiter: int = 100_000) -> np.ndarray:
    """The left Perron vector q of a row-stochastic M: q^T M = q^T, q >= 0, sum q = 1.

    Dense: the null space of (M - I)^T with the normalisation appended, solved by least squares
    (the chain must have a single closed class, e.g. E[W_S] or E[A_S]). Sparse or
    LinearOperator: power iteration on M^T, stopped when the l1 change is below ``tol``.

    Raises
    ------
    AssumptionError
        When M is not row stochastic, or the eigenvector is not unique (several closed classes).
    """
    if sp.issparse(M) or isinstance(M, LinearOperator):
        n = M.shape[0]
        q = np.full(n, 1.0 / n)
        for _ in range(maxiter):
            nq = M.T @ q if sp.issparse(M) else M.rmatvec(q)
            nq = np.asarray(nq).ravel()
            nq = nq / nq.sum()
            if np.abs(nq - q).sum() < tol:
                return nq
            q = nq
        raise AssumptionError(
            f"power iteration for the left eigenvector did not converge in {maxiter} steps"
        )
    A = _dense(M)
    check_row_stochastic("M", A)
    n = A.shape[0]
    lhs = np.vstack([(A - np.eye(n)).T, np.ones((1, n))])
    rhs = np.concatenate([np.zeros(n), [1.0]])
    q, *_ = np.linalg.lstsq(lhs, rhs, rcond=None)
    sv = np.linalg.svd(A - np.eye(n), compute_uv=False)
    if n > 1 and sv[-2] < 1e-10:
        raise AssumptionError(
            "the left eigenvector for eigenvalue 1 is not unique: M has several closed classes"
        )
    return q


def ergodicity_coefficient(P) -> np.ndarray:
    """Dobrushin's coefficient tau(P) = 1/2 max_{i,j} ||P_i. - P_j.||_1 (batch over leading axes).

    tau = 0 exactly when all rows are identical (P = 1 r^T, rank one); tau(PQ) <= tau(P) tau(Q)
    for row-stochastic P, Q.
    """
    A = _dense(P) if not isinstance(P, np.ndarray) else P
    n = A.shape[-1]
    if n <= 64:
        diff = np.abs(A[..., :, None, :] - A[..., None, :, :]).sum(axis=-1)
        return 0.5 * diff.max(axis=(-1, -2))
    # O(n^2) memory: one row against all rows at a time
    tau = np.zeros(A.shape[:-2])
    for i in range(A.shape[-2]):
        d = np.abs(A[..., i : i + 1, :] - A).sum(axis=-1).max(axis=-1)
        tau = np.maximum(tau, 0.5 * d)
    return tau


@dataclass(frozen=True)
class ProductConvergence:
    """Products P_t = M_t ... M_1 of a sequence of row-stochastic matrices.

    Attributes
    ----------
    tau : ndarray, shape (T,)
        Ergodicity coefficient of P_t (0 = rank one, identical rows).
    product : ndarray, shape (n, n)
        The last product P_T.
    limit : ndarray, shape (n,)
        Mean row of P_T: the row r of the rank-one limit 1 r^T when tau[-1] is ~0.
    """

    tau: np.ndarray
    product: np.ndarray
    limit: np.ndarray


def product_convergence(mats: Sequence[Any] | np.ndarray) -> ProductConvergence:
    """Left products P_t = M_t M_{t-1} ... M_1 and their distance to a rank-one matrix.

    Row stochastic matrices are closed under products, so every P_t is row stochastic; when the
    sequence is "ergodic" (e.g. every client is eventually pulled), tau(P_t) -> 0 and
    P_t -> 1 r^T (weak ergodicity).
    """
    seq = [_dense(M) for M in mats]
    if not seq:
        raise AssumptionError("product_convergence needs at least one matrix")
    P = np.eye(seq[0].shape[0])
    tau = np.empty(len(seq))
    for t, M in enumerate(seq):  # a sequential product: the loop is over time
        P = M @ P
        tau[t] = ergodicity_coefficient(P)
    return ProductConvergence(tau, P, P.mean(axis=0))


# --------------------------------------------------------------------------------------------
# expectations over a participation model
@dataclass(frozen=True)
class ExpectedMatrices:
    """E[A_S], E[V_S], E[C_S], E[D_S] and E[W_S] over one round of a participation model.

    Expectations are over *all* rounds (an empty, skipped round contributes identities and
    w = 0). ``row`` = (E w_0, E w_1, ..., E w_N) is the common row of E[W_S] and its left
    eigenvector; ``q`` = E[w | S non-empty] are the effective weights per executed round
    (``row[1:] = (1 - p_empty) q``). Dense for small N, sparse (W as a rank-one operator) for
    large N.
    """

    A: Any
    V: Any
    C: Any
    D: Any
    W: Any
    pi: np.ndarray
    q: np.ndarray
    row: np.ndarray
    p_empty: float
    method: str
    pi_stderr: np.ndarray
    q_stderr: np.ndarray


def expected_from_moments(pi: np.ndarray, row: np.ndarray, *, sparse: bool | None = None):
    """E[A_S], E[V_S], E[C_S], E[D_S], E[W_S] from pi_i = P(i in S) and row = (E w_0, E w)."""
    pi = np.asarray(pi, dtype=np.float64)
    row = np.asarray(row, dtype=np.float64)
    n1 = pi.size + 1
    idx = np.arange(1, n1)
    if _use_sparse(n1, sparse, False):
        zeros = np.zeros(n1 - 1, dtype=np.int64)
        a_rows = np.concatenate([[0], idx, idx])
        a_cols = np.concatenate([[0], zeros, idx])
        A = sp.csr_array((np.concatenate([[1.0], pi, 1 - pi]), (a_rows, a_cols)), shape=(n1, n1))
        v_rows = np.concatenate([np.zeros(n1, dtype=np.int64), idx])
        v_cols = np.concatenate([np.arange(n1), idx])
        V = sp.csr_array((np.concatenate([row, np.ones(n1 - 1)]), (v_rows, v_cols)), shape=(n1, n1))
        C = A.T.tocsr()
        D = sp.diags_array(np.concatenate([[0.0], pi]), format="csr")
        W = rank_one_operator(row)
        return A, V, C, D, W
    A = np.eye(n1)
    A[idx, idx] = 1 - pi
    A[idx, 0] = pi
    V = np.eye(n1)
    V[0] = row
    C = A.T.copy()
    D = np.diag(np.concatenate([[0.0], pi]))
    W = np.broadcast_to(row, (n1, n1)).copy()
    return A, V, C, D, W


def expected_matrices(
    model: ParticipationModel,
    rule: str = "mean",
    *,
    method: str = "auto",
    sparse: bool | None = None,
    rounds: int = 200,
    seeds: int = 200,
    seed: Any = 0,
) -> ExpectedMatrices:
    """E[A_S], E[V_S], E[C_S], E[D_S] and E[W_S] of one round of ``model`` (003 eq. (5), (37)).

    Parameters
    ----------
    model : ParticipationModel
    rule : {"mean", "weighted", "unbiased"}
        Aggregation weights (see :meth:`ParticipationModel.weights`).
    method : {"auto", "exact", "monte-carlo"}
        ``"auto"``/``"exact"`` use the model's exact pi and q (closed form, dynamic program or
        enumeration) where it has them; ``"exact"`` raises if it does not. ``"monte-carlo"``
        averages ``seeds`` runs of ``rounds`` rounds drawn with ``seed``; the standard errors are
        over runs (batch means, valid for Markov chains too).
    """
    check_rule(rule)
    if method not in ("auto", "exact", "monte-carlo"):
        raise AssumptionError(f"method must be auto, exact or monte-carlo, got {method!r}")
    n = model.n_clients
    if method in ("auto", "exact"):
        pi_e = model.inclusion_probabilities()
        q_e = model.effective_weights(rule)
        p0 = model.empty_probability()
        if method == "exact" and not (pi_e.exact and q_e.exact):
            raise AssumptionError(
                f"{type(model).__name__} with N = {n} has no exact inclusion probabilities or "
                "effective weights: use method='monte-carlo'"
            )
        wsum = (1 - p0) * q_e.value
        row = np.concatenate([[1.0 - wsum.sum()], wsum])
        meth = q_e.method if q_e.exact and pi_e.exact else MONTE_CARLO
        mats = expected_from_moments(pi_e.value, row, sparse=sparse)
        return ExpectedMatrices(
            *mats, pi_e.value, q_e.value, row, p0, meth, pi_e.stderr, q_e.stderr
        )
    seeds = check_int("seeds", seeds, minimum=2)
    mom = monte_carlo_moments(model, rule, rounds, seeds, seed)
    ok = mom.executed > 0
    pi, row, q = mom.pi_runs.mean(0), mom.row_runs.mean(0), mom.q_runs[ok].mean(0)
    mats = expected_from_moments(pi, row, sparse=sparse)
    p_empty = float(1.0 - mom.executed.sum() / (mom.rounds * mom.executed.size))
    return ExpectedMatrices(
        *mats,
        pi,
        q,
        row,
        p_empty,
        MONTE_CARLO,
        mom.pi_runs.std(0, ddof=1) / np.sqrt(mom.pi_runs.shape[0]),
        mom.q_runs[ok].std(0, ddof=1) / np.sqrt(max(int(ok.sum()), 1)),
    )


# --------------------------------------------------------------------------------------------
# one-index FedAvg and FOCUS (003 Section 4)
class FedAvgSequence(NamedTuple):
    """Per-index matrices of FedAvg in one index k = rK + t (003 eqs. (6a)-(6c)).

    ``pull[k]`` = A_S at t = 0 else I; ``activation[k]`` = D_S; ``average[k]`` = V_S at
    t = K-1 else I; ``mixing[k]`` = A_{k+1} V_k, the single matrix of eq. (8)
    x^{k+1} = W_k (x^k - eta D_k grad F(x^k)) once the first pull ``pull[0]`` is applied to x^0.
    Stacked dense arrays of shape (R K, N+1, N+1).
    """

    pull: np.ndarray
    activation: np.ndarray
    average: np.ndarray
    mixing: np.ndarray


def _check_draws(masks: Any, weights: Any) -> tuple[np.ndarray, np.ndarray]:
    m = _mask(masks)
    if m.ndim != 2:
        raise AssumptionError(f"masks must be (rounds, N), got shape {m.shape}")
    return m, _weights(m, weights)


def fedavg_mixing_sequence(
    masks: Any, weights: Any = None, local_steps: int = 1, *, server_lr: float = 1.0
) -> FedAvgSequence:
    """The FedAvg mixing sequence for R rounds of K local steps (003 eqs. (6)-(8)), dense."""
    m, w = _check_draws(masks, weights)
    K = check_int("local steps K", local_steps, minimum=1)
    R, n = m.shape
    n1 = n + 1
    T = R * K
    t = np.arange(T) % K
    r = np.arange(T) // K
    eye = np.broadcast_to(np.eye(n1), (T, n1, n1))
    pull = np.where((t == 0)[:, None, None], model_assign(m[r]), eye)
    act = activation(m[r])
    average = np.where(
        (t == K - 1)[:, None, None], model_average(m[r], w[r], server_lr=server_lr), eye
    )
    nxt = np.concatenate([pull[1:], np.eye(n1)[None]], axis=0)
    mixing = nxt @ average
    return FedAvgSequence(pull, act, average, mixing)


GradFn = Callable[[np.ndarray], np.ndarray]


def _stack_grad(grad: GradFn, X: np.ndarray) -> np.ndarray:
    """grad F of the stacked state: the server row has f_0 = 0 (003 Section 4.1, footnote)."""
    G = np.zeros_like(X)
    G[1:] = grad(X[1:])
    return G


def fedavg_matrix_form(
    grad: GradFn,
    x0: Any,
    masks: Any,
    weights: Any = None,
    *,
    local_steps: int = 1,
    lr: float,
    server_lr: float = 1.0,
    sparse: bool | None = None,
) -> np.ndarray:
    """FedAvg run as the matrix recursion (6a)-(6c) of 003: returns every one-index iterate.

    For k = rK + t:  X <- A_k X (pull, t = 0);  X <- X - lr D_k grad F(X) (local step);
    X <- V_k X (aggregate, t = K-1), with grad F the stacked client gradients (server row 0).

    Parameters
    ----------
    grad : callable
        ``grad(Xc)`` -> (N, d): all clients' gradients at their models ``Xc`` (N, d).
    x0 : array_like, shape (d,) or (N+1, d)
        Initial server model (copied to every client) or the full initial stack.
    masks : array_like, shape (R, N)
        Participation draws (bool, or multiplicities).
    weights : array_like, shape (R, N), optional
        Aggregation weights (zero off S); default 1/|S|.

    Returns
    -------
    ndarray, shape (R K + 1, N+1, d)
        The state after each one-index step (index 0: the initial state); the server model
        after round r is ``out[(r + 1) K, 0]``.
    """
    m, w = _check_draws(masks, weights)
    K = check_int("local steps K", local_steps, minimum=1)
    check_positive("lr", lr, allow_zero=True)
    R, n = m.shape
    X = _initial_stack(x0, n)
    out = np.empty((R * K + 1, *X.shape))
    out[0] = X
    use_sparse = _use_sparse(n + 1, sparse, False)
    for r in range(R):  # the recursion is sequential in time
        A = model_assign(m[r], sparse=use_sparse)
        D = activation(m[r], sparse=use_sparse)
        V = model_average(m[r], w[r], server_lr=server_lr, sparse=use_sparse)
        for t in range(K):
            if t == 0:
                X = A @ X
            X = X - lr * (D @ _stack_grad(grad, X))
            if t == K - 1:
                X = V @ X
            out[r * K + t + 1] = X
    return out


class FocusSequence(NamedTuple):
    """Per-index matrices of FOCUS in one index k = rK + t (003 eqs. (13)-(14)).

    ``pull[k]`` = A_S at t = 0 else I (row stochastic); ``activation[k]`` = D_S;
    ``push[k]`` = C_S at t = K-1 else I (column stochastic); ``server[k]`` = e_0 e_0^T at
    t = K-1 else 0 (the server step x <- x - eta y).
    """

    pull: np.ndarray
    activation: np.ndarray
    push: np.ndarray
    server: np.ndarray


def focus_mixing_sequence(masks: Any, local_steps: int = 1) -> FocusSequence:
    """The FOCUS matrix sequence for R rounds of K local steps (see :func:`focus_matrix_form`)."""
    m = _mask(masks)
    if m.ndim != 2:
        raise AssumptionError(f"masks must be (rounds, N), got shape {m.shape}")
    K = check_int("local steps K", local_steps, minimum=1)
    R, n = m.shape
    n1 = n + 1
    T = R * K
    t = np.arange(T) % K
    r = np.arange(T) // K
    eye = np.broadcast_to(np.eye(n1), (T, n1, n1))
    last = (t == K - 1)[:, None, None]
    pull = np.where((t == 0)[:, None, None], model_assign(m[r]), eye)
    push = np.where(last, collect(m[r]), eye)
    e00 = np.zeros((n1, n1))
    e00[0, 0] = 1.0
    server = np.where(last, e00, 0.0)
    return FocusSequence(pull, activation(m[r]), push, server)


def focus_matrix_form(
    grad: GradFn,
    x0: Any,
    masks: Any,
    *,
    local_steps: int = 1,
    lr: float,
    y0: Any = None,
    sparse: bool | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """FOCUS run as a push-pull matrix recursion (003 eqs. (13)-(14), Algorithm 1).

    State: X, Y (N+1, d) and the stored gradients G (G_0 = 0). For k = rK + t::

        X <- A_k X                      (t = 0: pull, row stochastic)
        X <- X - lr D_S Y               (t > 0: local step along the tracker)
        Y <- Y + D_S (grad F(X) - G);  G <- G + D_S (grad F(X) - G)
        Y <- C_S Y;  X <- X - lr e_0 e_0^T Y   (t = K-1: push, column stochastic; server step)

    C_S adds each participant's tracker onto the server's and leaves the client with 0, which is
    Algorithm 1's reset y_i <- 0. Column stochasticity preserves 1^T Y, so 1^T Y = 1^T G at all
    times (the tracking property): the server's y is the sum of every client's latest gradient.

    Returns
    -------
    X, Y : ndarray, shape (R K + 1, N+1, d)
        Iterates after every one-index step (index 0: initial state).
    """
    m = _mask(masks)
    if m.ndim != 2:
        raise AssumptionError(f"masks must be (rounds, N), got shape {m.shape}")
    K = check_int("local steps K", local_steps, minimum=1)
    check_positive("lr", lr, allow_zero=True)
    R, n = m.shape
    X = _initial_stack(x0, n)
    Y = np.zeros_like(X)
    if y0 is not None:
        Y[0] = check_finite("y0", y0)
    G = np.zeros_like(X)
    Xs = np.empty((R * K + 1, *X.shape))
    Ys = np.empty_like(Xs)
    Xs[0], Ys[0] = X, Y
    use_sparse = _use_sparse(n + 1, sparse, False)
    for r in range(R):  # sequential in time
        A = model_assign(m[r], sparse=use_sparse)
        D = activation(m[r], sparse=use_sparse)
        C = collect(m[r], sparse=use_sparse)
        for t in range(K):
            if t == 0:
                X = A @ X
            else:
                X = X - lr * (D @ Y)
            delta = D @ (_stack_grad(grad, X) - G)
            Y = Y + delta
            G = G + delta
            if t == K - 1:
                Y = C @ Y
                X = X.copy()
                X[0] = X[0] - lr * Y[0]
            Xs[r * K + t + 1], Ys[r * K + t + 1] = X, Y
    return Xs, Ys


def _initial_stack(x0: Any, n: int) -> np.ndarray:
    x0 = check_finite("x0", x0)
    if x0.ndim == 1:
        return np.broadcast_to(x0, (n + 1, x0.size)).copy()
    if x0.ndim == 2 and x0.shape[0] == n + 1:
        return x0.copy()
    raise AssumptionError(
        f"x0 must be a model (d,) or a stack (N+1, d) = ({n + 1}, d), got {x0.shape}"
    )
