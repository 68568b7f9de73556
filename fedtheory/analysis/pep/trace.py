"""A federated round written over leaf vectors, read off the algorithm's own ``round``.

Performance estimation (Drori and Teboulle 2014; Taylor, Hendrickx and Glineur 2017) needs a
method as a fixed sequence of gradient evaluations and linear combinations. Nothing here
re-states an update rule: the algorithm's own ``init`` and ``round`` run on a *tracing*
stand-in problem (:class:`TracingProblem`, a ``grads(X, rng)`` method only, so the local-steps
engine takes its generic path) in a model dimension D equal to the number of *leaves*:

* the start: x0 (``start="init"``: the algorithm's own initialization from x0) or one leaf per
  vector of the state in the algorithm's declared layout (``start="state"``: the coordinates
  z = (u, v_1, ..., v_N) of :mod:`fedtheory.analysis.exact.layouts`, the fields the exact
  oracle reads), placed as unit vectors e_k;
* x*, and the clients' gradients there, g_i* = grad f_i(x*), with sum_i g_i* = 0 imposed by
  defining g_N* as minus the sum of the others;
* one new leaf per distinct gradient query: ``grads`` records, for client i, the query point's
  coefficient row X[s, i, :] and answers with a fresh unit vector (the same one for a point
  already asked of that client, as PEPit shares the gradient of a point, so paths of a sampled
  participation that reach the same model share it).

Every vector of the run then comes out exactly as its coefficients over the leaves (a linear
method maps unit vectors to their coefficients). Function values are leaves of a scalar basis:
f_i(x*) and one per query. Gradients that the run multiplies by zero (non-participants, which
the generic engine computes, or the padding slots of a participant layout) are pruned
(:meth:`Trace.prune`).

A round that is not such a sequence (the adaptive servers divide by sqrt(v); anything
nonlinear in the state) is refused twice: by its registration (``affine=False``, with the
reason the registry declares) and by the trace itself (:func:`trace`): the run is repeated with
every leaf mapped through a random invertible matrix T (x0 -> T e_0, each gradient -> T e_k);
a linear method must query the T-images of the same points and end at the T-image of the same
state, to 1e-9 (:data:`VERIFY_RTOL`), as :func:`~fedtheory.analysis.exact.verify_round_model`
checks superposition for the exact oracle.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from fedtheory.algorithms.base import Algorithm, RoundDraw, zeros_fill
from fedtheory.algorithms.registry import info
from fedtheory.analysis.exact.layouts import state_layout
from fedtheory.errors import AssumptionError, FedTheoryError

#: Relative tolerance of the linearity check (coefficients are O(1) combinations).
VERIFY_RTOL = 1e-9
#: Decimals of the coefficient rows that identify a query point (dedupe within a run).
_KEY_DECIMALS = 12

#: Outputs of a trace whose last axis is over the scalar leaves (the others: vector leaves).
SCALAR_OUTPUTS = ("end_value",)
#: Leaf kinds of the vector basis.
X0, STATE, X_STAR, G_STAR, GRAD = "x0", "state", "x_star", "g_star", "grad"


class NotTraceableError(FedTheoryError):
    """The algorithm's round is not a fixed sequence of gradient evaluations and linear
    combinations, so performance estimation does not apply; the message says why."""


class _Overflow(Exception):
    """More leaves than the traced dimension: rerun with a larger one."""


@dataclass
class Trace:
    """A traced run: every vector as coefficients over the leaves.

    Attributes
    ----------
    n_clients : int
    kinds : list of str
        Kind of each vector leaf (``x0``, ``state``, ``x_star``, ``g_star``, ``grad``).
    g_star : ndarray (N, n)
        Coefficients of grad f_i(x*) (the last row is minus the sum of the others).
    f_star : ndarray (N, m)
        Coefficients of f_i(x*) over the m scalar leaves.
    client : ndarray (Q,) of int
        The client of each gradient query.
    point, grad : ndarray (Q, n)
        Coefficients of each query point and of the gradient there.
    value : ndarray (Q, m)
        Coefficients of the function value there.
    outputs : dict of str -> ndarray
        Named results of the run (``x``: the server model of every path, (S, n); ``u``, ``V``:
        the layout coordinates after the run, (S, nu, n) and (S, N, nv, n)).
    start : dict of str -> ndarray
        The same for the start (``x`` for ``start="init"``, ``u``, ``V`` for a state start).
    """

    n_clients: int
    kinds: list[str]
    g_star: np.ndarray
    f_star: np.ndarray
    client: np.ndarray
    point: np.ndarray
    grad: np.ndarray
    value: np.ndarray
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    start: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def n_vec(self) -> int:
        return len(self.kinds)

    @property
    def n_val(self) -> int:
        return int(self.f_star.shape[1])

    @property
    def x_star(self) -> np.ndarray:
        """Coefficients of x* (zero once pinned: :meth:`pinned`)."""
        if X_STAR not in self.kinds:
            return np.zeros(self.n_vec)
        return np.eye(self.n_vec)[self.kinds.index(X_STAR)]

    def leaf(self, kind: str) -> list[int]:
        """Indices of the vector leaves of ``kind``."""
        return [k for k, c in enumerate(self.kinds) if c == kind]

    def without(self, kind: str) -> Trace:
        """The trace with every vector leaf of ``kind`` set to zero (its columns dropped)."""
        keep = np.array([k != kind for k in self.kinds])

        def cut(A: np.ndarray) -> np.ndarray:
            return A[..., keep]

        return Trace(
            self.n_clients,
            [k for k in self.kinds if k != kind],
            cut(self.g_star),
            self.f_star,
            self.client,
            cut(self.point),
            cut(self.grad),
            self.value,
            {k: v if k in SCALAR_OUTPUTS else cut(v) for k, v in self.outputs.items()},
            {k: cut(v) for k, v in self.start.items()},
        )

    def pinned(self) -> Trace:
        """The trace with x* = 0 and every f_i(x*) = 0. Nothing depends on where x* is or on a
        client's value there (a common shift of x0, x* and every point, or of one client's
        values, changes no constraint and no metric, for a round that commutes with
        translations, which :func:`trace` checks), but a free shift is a direction in which
        the Gram matrix may grow at the same objective (FOCUS, N = 2, K = 2, R = 3, at
        Clarabel's tolerance 1e-8: 0.541600130 free, 0.541599734 pinned, 0.541599690 at
        1e-10)."""
        tr = self.without(X_STAR)
        ref = np.abs(self.f_star).max(axis=0) > 0
        cols = ~ref
        outs = {k: v[..., cols] if k in SCALAR_OUTPUTS else v for k, v in tr.outputs.items()}
        return Trace(
            tr.n_clients,
            tr.kinds,
            tr.g_star,
            np.zeros((self.n_clients, int(cols.sum()))),
            tr.client,
            tr.point,
            tr.grad,
            tr.value[:, cols],
            outs,
            tr.start,
        )

    def prune(self, roots: list[np.ndarray], values: list[np.ndarray] = ()) -> Trace:
        """The trace restricted to what ``roots`` (vector coefficient arrays, last axis n) and
        ``values`` (scalar coefficient arrays, last axis m) depend on: a query is kept when its
        gradient or value is used by a root or by the point of a kept query. Unused leaves are
        dropped and every array re-indexed."""
        n, m = self.n_vec, self.n_val
        need_v = np.zeros(n, bool)
        need_s = np.zeros(m, bool)
        for r in roots:
            need_v |= np.abs(np.asarray(r).reshape(-1, n)).max(axis=0, initial=0.0) > 0
        for r in values:
            need_s |= np.abs(np.asarray(r).reshape(-1, m)).max(axis=0, initial=0.0) > 0
        keep = np.zeros(len(self.client), bool)
        changed = True
        while changed:  # closure: a kept query needs the leaves of its point
            uses = ((np.abs(self.grad) > 0) & need_v).any(axis=1) | (
                (np.abs(self.value) > 0) & need_s
            ).any(axis=1)
            new = keep | uses
            changed = bool((new != keep).any())
            keep = new
            if keep.any():
                need_v |= np.abs(self.point[keep]).max(axis=0) > 0
        # the class leaves are always kept (x*, the g_i*), and f_i(x*) as the reference values
        fixed = np.array([c in (X0, STATE, X_STAR, G_STAR) for c in self.kinds])
        qleaf = np.abs(self.grad[keep]).max(axis=0, initial=0.0) > 0 if keep.any() else None
        vcols = fixed.copy()
        if qleaf is not None:
            vcols |= qleaf & ~fixed
        scols = np.abs(self.f_star).max(axis=0) > 0
        if keep.any():
            scols |= np.abs(self.value[keep]).max(axis=0) > 0
        out = {k: v[..., scols if k in SCALAR_OUTPUTS else vcols] for k, v in self.outputs.items()}
        st = {k: v[..., vcols] for k, v in self.start.items()}
        return Trace(
            self.n_clients,
            [c for c, k in zip(self.kinds, vcols, strict=True) if k],
            self.g_star[:, vcols],
            self.f_star[:, scols],
            self.client[keep],
            self.point[keep][:, vcols],
            self.grad[keep][:, vcols],
            self.value[keep][:, scols],
            out,
            st,
        )


class TracingProblem:
    """The stand-in problem of a trace: ``grads`` answers every distinct (client, point) with
    a new leaf (see the module docstring).

    With ``transform`` T (the linearity check), vectors are T times their coefficients: a
    query point x is read as T^{-1} x and must be one of the ``known`` points of the first run
    (else the method is not linear), answered with T times that run's gradient coefficients.
    """

    stochastic = False  # exact gradients: ``rng`` changes nothing

    def __init__(
        self,
        n_clients: int,
        dim: int,
        first: int,
        *,
        transform: np.ndarray | None = None,
        known: Trace | None = None,
    ) -> None:
        N, D = int(n_clients), int(dim)
        self.n_clients, self.dim = N, D
        self.x_star = self.f_star = self.L = self.mu = None
        self.T = transform
        self.Tinv = None if transform is None else np.linalg.inv(transform)
        self.known = known
        self.kinds: list[str] = []
        self.next = first  # the start leaves are 0..first-1
        xs = self._new(X_STAR)
        gs = [self._new(G_STAR) for _ in range(N - 1)]
        self.g_star = np.zeros((N, D))
        for i, k in enumerate(gs):
            self.g_star[i, k] = 1.0
        self.g_star[N - 1, gs] = -1.0
        self.f_star = np.eye(N)  # scalar leaves 0..N-1: f_i(x*)
        self.n_val = N
        self.keys: list[dict[bytes, int]] = [{} for _ in range(N)]
        self.client: list[int] = []
        self.point: list[np.ndarray] = []
        self.grad: list[np.ndarray] = []
        self.value: list[int] = []
        self.xs = np.zeros(D)
        self.xs[xs] = 1.0
        for i in range(N):  # x* is a point of every client, with its gradient g_i*
            self.keys[i][_key(self.xs)] = -1 - i

    def _new(self, kind: str) -> int:
        if self.next >= self.dim:
            raise _Overflow
        k = self.next
        self.next += 1
        self.kinds.append(kind)
        return k

    def grads(self, X: Any, rng: Any = None) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        N, D = self.n_clients, self.dim
        if X.shape[-2:] != (N, D):
            raise NotTraceableError(
                f"the round asked gradients of an array of shape {X.shape}, not (..., {N}, {D})"
            )
        flat = X.reshape(-1, N, D)
        C = flat if self.Tinv is None else flat @ self.Tinv.T
        out = np.zeros_like(flat)
        for i in range(N):  # clients are few; rows of a client looked up by key
            for b in range(flat.shape[0]):
                g = self._answer(i, C[b, i])
                out[b, i] = g if self.T is None else self.T @ g
        return out.reshape(X.shape)

    def values_at(self, C: np.ndarray) -> np.ndarray:
        """Scalar-leaf coefficients of f_i at points already asked: ``C (S, N, D)`` coefficient
        rows -> ``(S, N, m)``."""
        S, N, _ = C.shape
        out = np.zeros((S, N, self.n_val))
        for s in range(S):
            for i in range(N):
                q = self.keys[i][_key(C[s, i])]
                out[s, i, i if q < 0 else self.value[q]] = 1.0
        return out

    def _answer(self, i: int, c: np.ndarray) -> np.ndarray:
        if self.known is not None:
            return self._match(i, c)
        key = _key(c)
        q = self.keys[i].get(key)
        if q is None:
            k = self._new(GRAD)
            q = len(self.client)
            self.keys[i][key] = q
            self.client.append(i)
            self.point.append(c.copy())
            g = np.zeros(self.dim)
            g[k] = 1.0
            self.grad.append(g)
            self.value.append(self.n_val)
            self.n_val += 1
        if q < 0:
            return self.g_star[-1 - q]
        return self.grad[q]

    def _match(self, i: int, c: np.ndarray) -> np.ndarray:
        """The first run's gradient of client i at the point c (the linearity check)."""
        tr = self.known
        n = tr.point.shape[1]
        pts = np.vstack([self.xs[:n], tr.point[tr.client == i]])
        grads = np.vstack([tr.g_star[i], tr.grad[tr.client == i]])
        err = np.abs(pts - c[:n]).max(axis=1)
        j = int(np.argmin(err))
        scale = max(1.0, float(np.abs(c).max()))
        if err[j] > VERIFY_RTOL * scale or np.abs(c[n:]).max(initial=0.0) > VERIFY_RTOL * scale:
            raise NotTraceableError(
                f"with its leaves mapped through a random invertible matrix the round asks "
                f"client {i} for a gradient at a point it did not ask before (relative "
                f"distance {err[j] / scale:.1e}): the round is not linear in its vectors, so "
                "it is not a fixed sequence of gradient evaluations and linear combinations"
            )
        return np.concatenate([grads[j], np.zeros(self.dim - n)])


def _key(c: np.ndarray) -> bytes:
    return (np.round(c, _KEY_DECIMALS) + 0.0).tobytes()


def check_traceable(name: str) -> None:
    """Refuse an algorithm whose registration says its round is not affine (the reason it
    declares), before any trace."""
    alg = info(name)
    if not alg.affine:
        raise NotTraceableError(
            f"{alg.name}: no performance estimation: its round is not a fixed sequence of "
            f"gradient evaluations and linear combinations ({alg.not_exact})"
        )


@dataclass(frozen=True)
class Paths:
    """The participation of every path of a traced run, round by round.

    Attributes
    ----------
    masks : ndarray (R, S, N) of bool
    weights : ndarray (R, S, N)
    prob : ndarray (S,)
        Probability of each path (they sum to 1).
    counts : ndarray (R, S, N) of int or None
        Multiplicities (sampling with replacement).
    """

    masks: np.ndarray
    weights: np.ndarray
    prob: np.ndarray
    counts: np.ndarray | None = None

    @property
    def n_paths(self) -> int:
        return int(self.prob.size)

    @property
    def rounds(self) -> int:
        return int(self.masks.shape[0])


def participation_paths(model: Any, rule: str, rounds: int) -> Paths:
    """Every sequence of ``rounds`` participation draws of a memoryless ``model``, with its
    probability and aggregation weights: the product of the one-round law ``model.support()``
    (the law the exact oracle reads, :func:`~fedtheory.analysis.exact.law.round_law`),
    draws of probability zero left out.

    Raises
    ------
    AssumptionError
        A model without an exact one-round law (Markov, trace, large N).
    """
    sup = model.support()
    if sup is None or not getattr(model, "memoryless", True):
        raise AssumptionError(
            f"{type(model).__name__} participation has no enumerable one-round law here: "
            "performance estimation enumerates the subsets of each round"
        )
    draws, probs, _ = sup
    draws, probs = np.asarray(draws), np.asarray(probs, dtype=np.float64)
    live = probs > 0
    draws, probs = draws[live], probs[live]
    w = np.asarray(model.weights(draws, rule), dtype=np.float64)
    k = draws.shape[0]
    # path s takes draw idx[r, s] in round r, the last round's draw varying fastest (not
    # np.indices: it makes one array axis per round, and numpy has 64)
    idx = np.array(list(itertools.product(range(k), repeat=rounds)), dtype=np.intp)
    idx = idx.reshape(k**rounds, rounds).T
    prob = np.prod(probs[idx], axis=0) if rounds else np.ones(1)
    counts = draws[idx] if draws.dtype.kind in "iu" else None
    return Paths(draws[idx] > 0, w[idx], prob, counts)


def trace(
    algorithm: Algorithm,
    n_clients: int,
    paths: Paths,
    *,
    start: str = "init",
    evaluate_end: bool = False,
    verify: bool = True,
    seed: int = 0,
) -> Trace:
    """Trace ``paths.rounds`` rounds of a built ``algorithm`` on N clients along every path.

    Parameters
    ----------
    algorithm : Algorithm
        Built (``make_algorithm``); its registration must declare an affine round.
    n_clients : int
    paths : Paths
        The participation of each path (:func:`participation_paths`); paths run as seeds.
    start : {"init", "state"}
        From the algorithm's initialization at x0, or from free leaves for every vector of its
        declared state layout (one round from an arbitrary state: fixed points, Lyapunov).
    evaluate_end : bool
        Also query every client's gradient and value at the final server model of each path
        (for f(x_R) - f* and ||grad f(x_R)||^2); the answers are ``outputs["end_grad"]``
        (S, N, n) and ``outputs["end_value"]`` (S, N, m).
    verify : bool
        Repeat the run through a random invertible map and require the same trace (refuses a
        round that is not linear in its vectors).
    seed : int
        Seed of that map.

    Returns
    -------
    Trace
        ``outputs["x"]`` (S, n): the server model after the last round; with ``start="state"``
        also the layout coordinates ``outputs["u"]`` (S, nu, n), ``outputs["V"]``
        (S, N, nv, n) and ``start["u"]``, ``start["V"]``.

    Raises
    ------
    NotTraceableError
        A round declared non-affine, or one that fails the linearity check.
    """
    check_traceable(algorithm.name)
    if start not in ("init", "state"):
        raise AssumptionError(f"start must be 'init' or 'state', got {start!r}")
    N = int(n_clients)
    D = 2 + N + 4 * N * max(1, paths.rounds) * max(1, algorithm.config.local_steps)
    while True:  # grow the traced dimension until every leaf fits
        try:
            tr = _run(algorithm, N, D, paths, start, evaluate_end)
            break
        except _Overflow:
            D *= 2
    if verify:
        T = _random_map(D, seed)
        other = _run(algorithm, N, D, paths, start, evaluate_end, transform=T, known=tr)
        _compare(algorithm.name, tr, other)
    _check_translation(algorithm, tr)
    return tr


def initial_coordinates(algorithm: Algorithm, n_clients: int) -> tuple[np.ndarray, np.ndarray]:
    """The algorithm's initial state in its layout's coordinates, as multiples of x0:
    ``(a_u (nu,), a_V (N, nv))``, state vector j = a_j x0 (``init`` is linear in x0)."""
    N = int(n_clients)
    D = N + 2
    lay, nu, nv = _layout_vectors(algorithm, N, D)
    x0 = np.eye(D)[:1]
    u, V = lay.encode(algorithm.init(TracingProblem(N, D, 1), x0))
    u = np.asarray(u, dtype=np.float64).reshape(nu, D)
    V = np.asarray(V, dtype=np.float64).reshape(N, nv, D)
    if np.abs(u[:, 1:]).max(initial=0.0) or np.abs(V[..., 1:]).max(initial=0.0):
        raise NotTraceableError(f"{algorithm.name}: its initial state is not a multiple of x0")
    return u[:, 0], V[..., 0]


def _check_translation(algorithm: Algorithm, tr: Trace) -> None:
    """Refuse a round that does not commute with translations: shifting x0 (or the state by
    its initial direction, :func:`initial_coordinates`), x* and every f_i by a must shift every
    query point and the model by a and leave gradients unchanged. Otherwise the worst case
    depends on where x* lies, which :meth:`Trace.pinned` fixes at the origin (a damped
    x <- x / 2: 0.2025 after one round with x* = 0, unbounded over the class)."""
    if "x" in tr.start:  # start="init": x0 moves
        t, want = tr.start["x"][0].copy(), {}
    else:
        a_u, a_V = initial_coordinates(algorithm, tr.n_clients)
        t = a_u @ tr.start["u"][0] + np.einsum("iv,ivn->n", a_V, tr.start["V"][0])
        want = {"u": a_u, "V": a_V}
    t += tr.x_star
    checks = [("a query point", tr.point @ t, 1.0), ("the model x", tr.outputs["x"] @ t, 1.0)]
    checks += [(f"the state's {k}", tr.outputs[k] @ t, v) for k, v in want.items()]
    for what, got, expected in checks:
        err = np.abs(got - expected)
        if err.size and err.max() > VERIFY_RTOL * max(1.0, float(np.abs(got).max())):
            j = np.unravel_index(int(np.argmax(err)), err.shape)
            moved = float(np.ravel(got)[np.ravel_multi_index(j, err.shape)])
            raise NotTraceableError(
                f"{algorithm.name}: the round does not commute with translations: shifting "
                f"x0, x* and every f_i by a moves {what} by {moved:.3g} a, not "
                f"{float(np.broadcast_to(expected, err.shape)[j]):.3g} a, so its worst case "
                "depends on where the minimizer lies (unbounded over the class); performance "
                "estimation here needs a round that commutes with translations"
            )


def _random_map(D: int, seed: int) -> np.ndarray:
    """A random invertible D x D matrix: orthogonal times scales in [0.5, 2], times 3.7 (a
    round homogeneous of degree 0, such as a normalized step, is caught too)."""
    rng = np.random.default_rng([seed, 0x7E5])
    Q, _ = np.linalg.qr(rng.standard_normal((D, D)))
    return 3.7 * Q * rng.uniform(0.5, 2.0, D)


def _layout_vectors(algorithm: Algorithm, N: int, D: int) -> tuple[Any, int, int]:
    lay = state_layout(algorithm, N, D)
    if lay.du % D or lay.dv % D:
        raise NotTraceableError(f"{algorithm.name}: its state layout is not made of model vectors")
    return lay, lay.du // D, lay.dv // D


def _run(
    algorithm: Algorithm,
    N: int,
    D: int,
    paths: Paths,
    start: str,
    evaluate_end: bool,
    transform: np.ndarray | None = None,
    known: Trace | None = None,
) -> Trace:
    S = paths.n_paths
    T = np.eye(D) if transform is None else transform
    starts: dict[str, np.ndarray] = {}
    if start == "init":
        first = 1
        prob = TracingProblem(N, D, first, transform=transform, known=known)
        x0 = np.repeat(T[:, 0][None, :], S, axis=0)
        state = algorithm.init(prob, x0)
        starts["x"] = np.repeat(np.eye(D)[0][None, :], S, axis=0)
    else:
        lay, nu, nv = _layout_vectors(algorithm, N, D)
        first = nu + N * nv
        if first + N > D:
            raise _Overflow
        prob = TracingProblem(N, D, first, transform=transform, known=known)
        E = np.eye(D)
        # state vector j of the start is leaf j: u = (leaves 0..nu-1), v_i = the next nv
        u = T[:, :nu].T.reshape(1, nu * D).repeat(S, axis=0)
        V = T[:, nu:first].T.reshape(1, N, nv * D).repeat(S, axis=0)
        tpl = algorithm.init(TracingProblem(N, D, 0), np.zeros((S, D)))
        state = lay.decode(tpl, u, V, zeros_fill)
        starts["u"] = np.repeat(E[:nu][None], S, axis=0)
        starts["V"] = np.repeat(E[nu:first].reshape(N, nv, D)[None], S, axis=0)
    prob.kinds = [X0 if start == "init" else STATE] * first + prob.kinds
    for r in range(paths.rounds):
        draw = RoundDraw(
            mask=paths.masks[r],
            weights=paths.weights[r],
            r=r,
            counts=None if paths.counts is None else paths.counts[r],
        )
        with np.errstate(all="ignore"):
            state = algorithm.round(state, prob, draw, None)
    Tinv = np.linalg.inv(T) if transform is not None else None

    def coef(a: Any) -> np.ndarray:
        a = np.asarray(a, dtype=np.float64)
        return a if Tinv is None else a @ Tinv.T

    outs = {"x": coef(state.x)}
    if start == "state":
        u2, V2 = lay.encode(state)
        outs["u"] = coef(np.asarray(u2).reshape(S, nu, D))
        outs["V"] = coef(np.asarray(V2).reshape(S, N, nv, D))
    if evaluate_end:
        X = np.repeat(np.asarray(state.x, dtype=np.float64)[:, None, :], N, axis=1)
        outs["end_grad"] = coef(prob.grads(X))
        if known is None:
            outs["end_value"] = prob.values_at(coef(X))
    if known is not None:
        return replace(known, outputs=outs, start=starts)
    n, m, Q = prob.next, prob.n_val, len(prob.client)
    value = np.zeros((Q, m))
    value[np.arange(Q), prob.value] = 1.0
    f_star = np.zeros((N, m))
    f_star[:, :N] = np.eye(N)
    outs = {k: v[..., :n] if k != "end_value" else _columns(v, m) for k, v in outs.items()}
    return Trace(
        N,
        prob.kinds[:n],
        prob.g_star[:, :n],
        f_star,
        np.array(prob.client, dtype=int),
        np.array(prob.point).reshape(Q, D)[:, :n],
        np.array(prob.grad).reshape(Q, D)[:, :n],
        value,
        outs,
        {k: v[..., :n] for k, v in starts.items()},
    )


def _columns(v: np.ndarray, m: int) -> np.ndarray:
    """``v`` with its last axis cut or zero-padded to ``m``."""
    out = np.zeros(v.shape[:-1] + (m,))
    k = min(m, v.shape[-1])
    out[..., :k] = v[..., :k]
    return out


def _compare(name: str, a: Trace, b: Trace) -> None:
    worst = 0.0
    for k, va in a.outputs.items():
        if k == "end_value":
            continue
        vb = b.outputs[k][..., : va.shape[-1]]
        rest = b.outputs[k][..., va.shape[-1] :]
        scale = max(1.0, float(np.abs(va).max(initial=0.0)))
        worst = max(
            worst,
            float(np.abs(va - vb).max(initial=0.0)) / scale,
            float(np.abs(rest).max(initial=0.0)) / scale,
        )
    if not worst <= VERIFY_RTOL:
        raise NotTraceableError(
            f"{name}: with its leaves mapped through a random invertible matrix the round ends "
            f"elsewhere than the image of the traced result (relative residual {worst:.1e}): it "
            "is not linear in its vectors, so not a fixed sequence of gradient evaluations and "
            "linear combinations"
        )
