"""Checks of the mixing-matrix assumptions, each naming the first violation.

Assumption 4.5 of 000 (and 5.5 of 004): ``W in [0, 1]^{n x n}``, ``W 1 = 1``, ``1^T W = 1^T`` and
``null(I - W) = span(1)``, the last being equivalent, for a doubly stochastic W, to the graph of W
being connected (claim G3; the counter-example ``diag(W_2, I_{n-2})`` of 000 App. C is not).

:func:`check_mixing_matrix` raises :class:`~fedtheory.errors.AssumptionError` with messages such
as ``"W is not column stochastic: column 3 sums to 0.97"``; :func:`stochasticity_report` reports
the same facts without raising.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import LinearOperator

from fedtheory.errors import AssumptionError
from fedtheory.validation import as_real_array, check_tolerance

DEFAULT_ATOL = 1e-10


def as_matrix(W: Any, name: str = "W") -> np.ndarray | sp.csr_array:
    """``W`` as a float64 NumPy array or CSR array; refuse a complex, object or string dtype
    (naming it), non-square, NaN/inf and empty input."""
    if sp.issparse(W):
        as_real_array(name, np.empty(0, dtype=W.dtype))  # refuse a complex or object dtype
        M = sp.csr_array(W, dtype=np.float64)
        data = M.data
    else:
        M = as_real_array(name, W)
        data = M
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise AssumptionError(f"{name} must be a square matrix, got shape {M.shape}")
    if M.shape[0] < 2:
        raise AssumptionError(f"{name} must have at least 2 nodes, got n = {M.shape[0]}")
    bad = ~np.isfinite(data)
    if bad.any():
        if sp.issparse(M):
            C = M.tocoo()
            k = int(np.flatnonzero(~np.isfinite(C.data))[0])
            idx = (int(C.row[k]), int(C.col[k]))
        else:
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssumptionError(f"{name} has a non-finite entry {M[idx]} at {idx}")
    return M


def _first(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


def row_sums(W: Any) -> np.ndarray:
    return np.asarray(W.sum(axis=1)).ravel()


def col_sums(W: Any) -> np.ndarray:
    return np.asarray(W.sum(axis=0)).ravel()


def negative_entry(W: Any, atol: float = 0.0) -> tuple[int, int, float] | None:
    """The first entry (row-major) below ``-atol``, or None."""
    if sp.issparse(W):
        C = sp.csr_array(W).tocoo()
        neg = np.flatnonzero(C.data < -atol)
        if not neg.size:
            return None
        order = np.lexsort((C.col[neg], C.row[neg]))
        k = neg[order[0]]
        return int(C.row[k]), int(C.col[k]), float(C.data[k])
    hits = np.argwhere(np.asarray(W) < -atol)
    if not hits.size:
        return None
    i, j = (int(v) for v in hits[0])
    return i, j, float(W[i, j])


def _sum_violation(W: Any, axis: int, atol: float, name: str) -> str | None:
    """The first row (axis=1) or column (axis=0) of a dense or sparse W whose sum is not 1."""
    sums = row_sums(W) if axis == 1 else col_sums(W)
    i = _first(~(np.abs(sums - 1.0) <= atol))  # NaN sums count as violations
    if i is None:
        return None
    kind = "row" if axis == 1 else "column"
    return f"{name} is not {kind} stochastic: {kind} {i} sums to {sums[i]:.12g}"


def row_violation(W: Any, atol: float = DEFAULT_ATOL, name: str = "W") -> str | None:
    return _sum_violation(W, 1, atol, name)


def col_violation(W: Any, atol: float = DEFAULT_ATOL, name: str = "W") -> str | None:
    return _sum_violation(W, 0, atol, name)


def neg_violation(W: Any, atol: float = 0.0, name: str = "W") -> str | None:
    hit = negative_entry(W, atol)
    if hit is None:
        return None
    i, j, v = hit
    return f"{name} has a negative entry {name}[{i}, {j}] = {v:.6g} (weights must lie in [0, 1])"


def _as_stack(M: Any, name: str = "W") -> list:
    """The matrices of ``M``: one dense or sparse matrix, a LinearOperator (made dense), or the
    (n, n) slices of a dense stack (..., n, n)."""
    if sp.issparse(M):
        as_real_array(name, np.empty(0, dtype=M.dtype))
        return [sp.csr_array(M)]
    if isinstance(M, LinearOperator):
        return [M @ np.eye(M.shape[1])]
    arr = as_real_array(name, M)
    if arr.ndim < 2:
        raise AssumptionError(f"{name} must be a matrix or a stack of them, got shape {arr.shape}")
    return [arr] if arr.ndim == 2 else list(arr.reshape((-1, *arr.shape[-2:])))


def check_stochastic(
    M: Any, kind: str = "row", *, name: str = "W", atol: float = DEFAULT_ATOL
) -> None:
    """Raise :class:`AssumptionError` unless every matrix of ``M`` has non-negative entries and
    rows (``kind="row"``), columns (``"column"``) or both (``"doubly"``) summing to 1.

    ``M`` is a dense matrix or stack ``(..., n, n)``, a sparse matrix or a LinearOperator. The
    message names the first violation: ``"A_S is not row stochastic: row 3 sums to 0.97"`` (with
    ``of matrix k`` for a stack).
    """
    checks = {"row": (1,), "column": (0,), "doubly": (1, 0)}
    if kind not in checks:
        raise AssumptionError(f"kind must be one of {', '.join(checks)}, got {kind!r}")
    atol = check_tolerance("atol", atol)
    mats = _as_stack(M, name)
    for k, W in enumerate(mats):
        where = "" if len(mats) == 1 else f" (matrix {k} of the stack)"
        msg = neg_violation(W, atol, name)
        for axis in checks[kind]:
            msg = msg or _sum_violation(W, axis, atol, name)
        if msg:
            raise AssumptionError(msg + where)


def check_row_stochastic(name: str, M: Any, *, atol: float = DEFAULT_ATOL) -> None:
    """:func:`check_stochastic` with ``kind="row"`` (every matrix of a stack)."""
    check_stochastic(M, "row", name=name, atol=atol)


def check_column_stochastic(name: str, M: Any, *, atol: float = DEFAULT_ATOL) -> None:
    """:func:`check_stochastic` with ``kind="column"`` (every matrix of a stack)."""
    check_stochastic(M, "column", name=name, atol=atol)


def is_symmetric(W: Any, atol: float = DEFAULT_ATOL) -> bool:
    if sp.issparse(W):
        D = sp.csr_array(W) - sp.csr_array(W).T
        return D.nnz == 0 or float(np.max(np.abs(D.data))) <= atol
    W = np.asarray(W)
    return bool(np.allclose(W, W.T, rtol=0.0, atol=atol))


def components(W: Any, threshold: float = 0.0) -> tuple[int, np.ndarray]:
    """Number of strongly connected components of the graph of W (edges ``w_ij > threshold``)
    and each node's component label. For a doubly stochastic W these are also the weakly
    connected components, and ``dim null(I - W)`` equals their number (claim G3)."""
    S = sp.csr_array(W, dtype=np.float64)
    S = sp.csr_array(((S.data > threshold).astype(np.float64), S.indices, S.indptr), shape=S.shape)
    k, labels = connected_components(S, directed=True, connection="strong")
    return int(k), labels


def is_connected(W: Any) -> bool:
    """True when ``null(I - W) = span(1)`` for doubly stochastic W, i.e. the graph is connected."""
    return components(W)[0] == 1


@dataclass(frozen=True)
class StochasticityReport:
    """Which parts of Assumption 4.5 a matrix meets, with the first violation of each."""

    n: int
    nonnegative: bool
    row_stochastic: bool
    column_stochastic: bool
    doubly_stochastic: bool
    symmetric: bool
    connected: bool
    n_components: int
    violations: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def stochasticity_report(W: Any, atol: float = DEFAULT_ATOL) -> StochasticityReport:
    """Report (never raise, beyond non-square or non-finite input or a bad ``atol``) on
    Assumption 4.5."""
    atol = check_tolerance("atol", atol)
    W = as_matrix(W)
    v = [neg_violation(W), row_violation(W, atol), col_violation(W, atol)]
    k, _ = components(W)
    if k > 1:
        v.append(
            f"W is not connected: its graph has {k} components, so null(I - W) has dimension "
            f"{k} > 1"
        )
    return StochasticityReport(
        n=int(W.shape[0]),
        nonnegative=v[0] is None,
        row_stochastic=v[1] is None,
        column_stochastic=v[2] is None,
        doubly_stochastic=v[0] is None and v[1] is None and v[2] is None,
        symmetric=is_symmetric(W, atol),
        connected=k == 1,
        n_components=k,
        violations=tuple(s for s in v if s is not None),
    )


def check_mixing_matrix(
    W: Any, *, kind: str = "doubly", atol: float = DEFAULT_ATOL, require_connected: bool = False
) -> np.ndarray | sp.csr_array:
    """Validate a mixing matrix and return it as float64 (dense) or CSR (sparse).

    Parameters
    ----------
    W : array_like or sparse matrix, shape (n, n)
    kind : {"doubly", "row", "column"}
        Which stochasticity to require (Assumption 4.5 needs "doubly").
    atol : float
        Tolerance on row/column sums (finite, >= 0).
    require_connected : bool
        Also require ``null(I - W) = span(1)``.

    Raises
    ------
    AssumptionError
        Naming the first violation: a complex, object or string dtype, non-square, non-finite,
        negative entry, the first row or column whose sum is not 1, or the number of connected
        components; or a NaN, infinite or negative ``atol``.
    """
    atol = check_tolerance("atol", atol)
    W = as_matrix(W)
    check_stochastic(W, kind, atol=atol)
    if require_connected:
        k, _ = components(W)
        if k > 1:
            raise AssumptionError(
                f"W is not connected: its graph has {k} components, so null(I - W) != span(1) "
                "(Assumption 4.5)"
            )
    return W
