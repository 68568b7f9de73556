"""A round of an affine algorithm as a random block-affine map, read off the algorithm's code.

Coordinates z = (u, v_1, ..., v_N) (:mod:`fedtheory.analysis.exact.layouts`). A round with
participation indicators s_j = 1{j in S} and aggregation weights w_j (zero off S) is

    z' = L0 z + f0 + sum_j [ s_j (G^s_j z + g^s_j) + w_j (G^w_j z + g^w_j) ]
                   + sum_j [ s_j Gamma^s_j + w_j Gamma^w_j ] xi_j                     (*)

* L0, f0: the round in which nobody participates (client coordinates unchanged; the server
  may still move, e.g. FOCUS's x <- x - eta y);
* G^s_j, g^s_j: what client j's participation adds, G^w_j, g^w_j: what its aggregation
  weight adds. Both read and write only (u, v_j): a participant computes from the server state
  and its own state. They are stored as (du + dv) x (du + dv) blocks ``beta[c, j]`` on the
  local coordinates (u, v_j) and vectors ``gamma[c, j]``;
* xi_j: the gradient noise of client j in this round (one N(0, sigma^2 I) draw per gradient
  call), Gamma^c_j its response (zero for algorithms with exact gradients, e.g. FOCUS).

Nothing here re-derives an update rule. Every block is obtained by running the algorithm's own
``round`` on basis states placed on the seed axis (one batched call per family of blocks),
with a problem whose gradient is H_i x (the linear part) or H_i x - h_i with the state at zero
(the constant part), and with unit gradient offsets (the noise response). The resulting model
is then checked against ``round`` on the real problem at random states, random masks, random
weights and random values in every field the layout declares unread, and for superposition
round(a z1 + (1 - a) z2) = a round(z1) + (1 - a) round(z2) (:func:`verify_round_model`):
a round that is not affine, or not client-local, fails that check and is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fedtheory.algorithms.base import Algorithm, RoundDraw, zeros_fill
from fedtheory.algorithms.registry import make_algorithm
from fedtheory.analysis.exact.layouts import NotAffineError, StateLayout, state_layout
from fedtheory.backend import get_backend, to_numpy
from fedtheory.errors import AssumptionError, FedTheoryError
from fedtheory.validation import check_finite, check_int, check_memory, check_positive

#: Default relative tolerance of :func:`verify_round_model`.
VERIFY_RTOL = 1e-9


class NotQuadraticError(FedTheoryError):
    """The problem is not a quadratic f_i = 1/2 x^T H_i x - h_i^T x with additive gradient
    noise, so a round is not an affine map with fixed matrices."""


def quadratic_data(problem: Any) -> tuple[np.ndarray, np.ndarray]:
    """(H (N, d, d), h (N, d)) of a quadratic problem, in float64.

    Raises
    ------
    NotQuadraticError
        When the problem has no H_i, h_i, or draws minibatch gradients (then the Hessian of a
        step is random and a round is not an affine map with fixed M_S).
    """
    H = getattr(problem, "H", None)
    h = getattr(problem, "h", None)
    if H is None or h is None or np.ndim(H) != 3 or np.ndim(h) != 2:
        raise NotQuadraticError(
            f"exact rates need a quadratic problem f_i = 1/2 x^T H_i x - h_i^T x (H (N, d, d), "
            f"h (N, d)); {type(problem).__name__} is not one, so a round is not affine"
        )
    if getattr(problem, "batch_size", None) is not None:
        raise NotQuadraticError(
            "exact rates need exact or additively noisy gradients: minibatch gradients make "
            "each step's Hessian random, so a round is not an affine map with fixed M_S"
        )
    return np.asarray(H, dtype=np.float64), np.asarray(h, dtype=np.float64)


class _Probe:
    """A stand-in problem with the quadratic's gradients, H_i x - h_i (h may be zero), plus a
    prescribed offset at each gradient call that receives a random stream (the noise probe).

    It has no ``grads_at``, so the local-steps engine takes its full path (every client's
    gradient computed, non-participants' multiplied by zero), which equals the subset path.
    ``stochastic=False`` (the runs that read the deterministic blocks) lets an algorithm take
    its exact-gradient path (participants only), which computes the same map as its
    every-client stochastic path (tests/algorithms/test_fast_paths.py) for a fraction of the
    work; the runs that detect and read the noise response keep the default.
    """

    def __init__(
        self,
        H: np.ndarray,
        h: np.ndarray,
        offsets: list | None = None,
        xp: Any = np,
        stochastic: bool = True,
    ) -> None:
        self.xp, self.H, self.h, self.offsets = xp, xp.asarray(H), xp.asarray(h), offsets
        self.stochastic = bool(stochastic)
        self.n_clients, self.dim = int(H.shape[0]), int(H.shape[1])
        self.calls = 0
        self.noisy_calls = 0

    def grads(self, X: np.ndarray, rng: Any = None) -> np.ndarray:
        # x_i^T H_i = (H_i x_i)^T for symmetric H_i: one batched product over clients.
        G = self.xp.matmul(X.transpose(1, 0, 2), self.H).transpose(1, 0, 2) - self.h
        if rng is not None:
            if self.offsets is not None:
                G = G + self.xp.asarray(self.offsets[self.noisy_calls])
            self.noisy_calls += 1
        self.calls += 1
        return G


class _NoiseStream:
    """Passed as ``rng`` to ``round``: only algorithms with stochastic gradients forward it to
    the problem, which is how the probe learns that an algorithm uses gradient noise."""


@dataclass(frozen=True)
class RoundModel:
    """The block-affine model (*) of one round, in the coordinates of a :class:`StateLayout`.

    Attributes
    ----------
    algorithm : str
    layout : StateLayout
    n_clients, du, dv, dim : int
        N, server and per-client coordinates, model dimension d (x = u[:d]).
    L0u : ndarray (du, n)
        Server rows of the no-participant map L0 (its client rows are the identity).
    f0 : ndarray (du,)
        Constant of the no-participant round.
    beta : ndarray (2, N, m, m)
        Local blocks of G^s_j (channel 0) and G^w_j (channel 1) on (u, v_j), m = du + dv.
    gamma : ndarray (2, N, m)
        Local constants g^s_j, g^w_j.
    noise : ndarray (2, N, m, q) or None
        Response to a unit gradient offset of client j at each of its gradient calls (q =
        calls x d); None when the algorithm uses exact gradients.
    z0 : ndarray (n,)
        The algorithm's initial state in these coordinates.
    verification : float
        Largest relative residual of :func:`verify_round_model` (nan when not verified).
    """

    algorithm: str
    layout: StateLayout
    n_clients: int
    du: int
    dv: int
    dim: int
    L0u: np.ndarray
    f0: np.ndarray
    beta: np.ndarray
    gamma: np.ndarray
    noise: np.ndarray | None
    z0: np.ndarray
    verification: float = float("nan")

    @property
    def n(self) -> int:
        """Number of coordinates, du + N dv."""
        return self.du + self.n_clients * self.dv

    @property
    def m(self) -> int:
        """Number of local coordinates of one client, du + dv."""
        return self.du + self.dv

    def local_index(self, j: int) -> np.ndarray:
        """Positions of (u, v_j) in z."""
        du, dv = self.du, self.dv
        return np.concatenate([np.arange(du), du + j * dv + np.arange(dv)])

    def apply(
        self, z: np.ndarray, s: np.ndarray, w: np.ndarray, xi: np.ndarray | None = None
    ) -> np.ndarray:
        """(*) for states ``z (S, n)``, indicators ``s (S, N)``, weights ``w (S, N)`` and
        optional unit-variance noise ``xi (S, N, q)`` (already scaled by sigma)."""
        N, du, dv = self.n_clients, self.du, self.dv
        S = z.shape[0]
        loc = np.concatenate(
            [np.broadcast_to(z[:, None, :du], (S, N, du)), z[:, du:].reshape(S, N, dv)], axis=-1
        )
        out = z.copy()
        out[:, :du] = z @ self.L0u.T + self.f0
        coef = np.stack([s, w], axis=1).astype(np.float64)  # (S, 2, N)
        add = np.einsum("cjab,sjb->scja", self.beta, loc) + self.gamma  # (S, 2, N, m)
        if xi is not None and self.noise is not None:
            add = add + np.einsum("cjaq,sjq->scja", self.noise, xi)
        add = (coef[..., None] * add).sum(axis=1)  # (S, N, m)
        out[:, :du] += add[:, :, :du].sum(axis=1)
        out[:, du:] += add[:, :, du:].reshape(S, N * dv)
        return out


class _Runner:
    """Runs ``algorithm.round`` on batches of coordinate states (seeds = basis states), in the
    namespace ``xp`` (states, draws and the probe's data moved there; results back on the
    host with :func:`~fedtheory.backend.to_numpy`)."""

    def __init__(
        self,
        algorithm: Algorithm,
        layout: StateLayout,
        H: np.ndarray,
        h: np.ndarray,
        xp: Any = np,
    ) -> None:
        self.algorithm, self.layout, self.H, self.h, self.xp = algorithm, layout, H, h, xp
        self.N, self.d = int(H.shape[0]), int(H.shape[1])

    def template(self, S: int) -> Any:
        return self.algorithm.init(_Probe(self.H, self.h, xp=self.xp), self.xp.zeros((S, self.d)))

    def __call__(
        self,
        u: np.ndarray,
        V: np.ndarray,
        mask: np.ndarray,
        weights: np.ndarray,
        *,
        constant: bool,
        offsets: list | None = None,
        problem: Any = None,
        fill: Any = None,
        stochastic: bool = True,
        r: int = 0,
    ) -> tuple[np.ndarray, np.ndarray, _Probe | None]:
        S, xp = u.shape[0], self.xp
        fill = zeros_fill if fill is None else fill
        state = self.layout.decode(
            self.template(S), xp.asarray(u), xp.asarray(V), lambda shape: xp.asarray(fill(shape))
        )
        draw = RoundDraw(
            mask=xp.asarray(mask, dtype=bool), weights=xp.asarray(weights, dtype=np.float64), r=r
        )
        probe = None
        if problem is None:
            h = self.h if constant else np.zeros_like(self.h)
            problem = probe = _Probe(self.H, h, offsets, xp=xp, stochastic=stochastic)
            rng: Any = _NoiseStream()
        else:
            rng = None
        with np.errstate(all="ignore"):
            out = self.algorithm.round(state, problem, draw, rng)
        u2, V2 = (to_numpy(a).astype(np.float64) for a in self.layout.encode(out))
        return u2, V2, probe


def _local_basis(N: int, du: int, dv: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """States e_k on the local coordinates of client j, for every (j, k): seeds (N * m).

    Returns u (N m, du), V (N m, N, dv) and the mask e_j of each seed (N m, N)."""
    m = du + dv
    u = np.zeros((N, m, du))
    u[:, :du, :] = np.eye(du)
    V = np.zeros((N, m, N, dv))
    for j in range(N):  # N small blocks, built once
        V[j, du:, j, :] = np.eye(dv)
    mask = np.repeat(np.eye(N, dtype=bool), m, axis=0)
    return u.reshape(N * m, du), V.reshape(N * m, N, dv), mask


def _local_out(u2: np.ndarray, V2: np.ndarray, N: int, per: int) -> np.ndarray:
    """Local outputs (u', v_j') of seeds grouped as (client j, per): (N, per, m)."""
    du, dv = u2.shape[1], V2.shape[2]
    u2 = u2.reshape(N, per, du)
    V2 = V2.reshape(N, per, N, dv)
    own = V2[np.arange(N), :, np.arange(N), :]  # (N, per, dv): client j's own block
    others = V2.copy()
    others[np.arange(N), :, np.arange(N), :] = 0.0
    if np.abs(others).max(initial=0.0) > 0.0:
        j, _, k, _ = np.unravel_index(np.abs(others).argmax(), others.shape)
        raise NotAffineError(
            f"the round is not client-local: client {j} taking part alone changes client {k}'s "
            "coordinates (round 0), so the exact oracle's block structure does not apply"
        )
    return np.concatenate([u2, own], axis=-1)


def build_algorithm(
    algorithm: str | Algorithm,
    problem: Any,
    *,
    lr: float | None,
    local_steps: int | None,
    global_lr: float | None = None,
    prox_mu: float | None = None,
    options: dict | None = None,
) -> Algorithm:
    """A built algorithm from a registry name and its hyper-parameters (or an already built one,
    whose configuration then must not be overridden)."""
    if isinstance(algorithm, Algorithm):
        given = {"lr": lr, "local_steps": local_steps, "global_lr": global_lr, "prox_mu": prox_mu}
        clash = [k for k, v in given.items() if v is not None and v != getattr(algorithm.config, k)]
        if clash or options:
            raise AssumptionError(
                f"a built Algorithm carries its own configuration; do not pass {clash or 'options'}"
            )
        return algorithm
    if lr is None or local_steps is None:
        raise AssumptionError("an algorithm given by name needs lr and local_steps")
    lr = check_positive("the step size lr", lr)
    local_steps = check_int("the number of local steps K", local_steps, minimum=1)
    kw: dict[str, Any] = {"lr": lr, "local_steps": local_steps}
    if global_lr is not None:
        kw["global_lr"] = check_positive("the global step size", global_lr)
    if prox_mu is not None:
        kw["prox_mu"] = check_positive("the proximal weight mu", prox_mu, allow_zero=True)
    return make_algorithm(str(algorithm), problem=problem, **kw, **(options or {}))


def extract_round_model(
    problem: Any,
    algorithm: Algorithm,
    *,
    x0: Any = None,
    noise: bool = True,
    verify: bool = True,
    rtol: float = VERIFY_RTOL,
    seed: int = 0,
    backend: str = "numpy",
) -> RoundModel:
    """Read the block-affine model (*) of ``algorithm``'s round on a quadratic ``problem``.

    Parameters
    ----------
    problem : QuadraticProblem
        f_i(x) = 1/2 x^T H_i x - h_i^T x (least squares / ridge included).
    algorithm : Algorithm
        A built affine algorithm (see :data:`~fedtheory.analysis.exact.layouts.NOT_AFFINE`).
    x0 : array (d,), optional
        Initial server model (default zero); gives the initial coordinates ``z0``.
    noise : bool
        Also read the response to gradient noise (when the algorithm uses stochastic
        gradients; the variance sigma^2 is applied later).
    verify : bool
        Run :func:`verify_round_model` (recommended; a few batched rounds).
    rtol : float
        Tolerance of the verification, relative to the size of the states.
    seed : int
        Seed of the verification's random states.
    backend : {"numpy", "strict", "cupy"}
        Where the algorithm's batched rounds run (the model itself is assembled on the host).
        ``"strict"`` proves the round crosses no host/device boundary; the model is the same
        bits as on NumPy.

    Returns
    -------
    RoundModel

    Raises
    ------
    NotQuadraticError, NotAffineError
        A problem that is not quadratic; an algorithm without an affine round, or whose round
        fails the verification (the message gives the residual).
    """
    H, h = quadratic_data(problem)
    N, d = H.shape[:2]
    layout = state_layout(algorithm, N, d)
    du, dv = layout.du, layout.dv
    m, n = du + dv, du + N * dv
    # the round runs on a batch of N m basis states of N clients each (state, gradients, step
    # and output: 4 arrays), and the model holds (n x n) matrices (the identity, L0)
    check_memory(
        f"reading {algorithm.name}'s round on {N} clients of dimension {d} ({N * m} basis "
        f"states, {n} coordinates)",
        8.0 * (4.0 * N * m * N * max(d, 1) + 2.0 * n * n),
        hint="fewer clients or a smaller dimension",
    )
    run = _Runner(algorithm, layout, H, h, get_backend(backend))

    # L0: nobody participates, h = 0, every coordinate on the seed axis.
    eye = np.eye(n)
    u2, V2, _ = run(
        eye[:, :du],
        eye[:, du:].reshape(n, N, dv),
        np.zeros((n, N), bool),
        np.zeros((n, N)),
        constant=False,
        stochastic=False,
    )
    L0 = np.concatenate([u2, V2.reshape(n, N * dv)], axis=1).T  # columns = images of e_k
    if np.abs(L0[du:] - eye[du:]).max(initial=0.0) > 0.0:
        raise NotAffineError(
            f"{algorithm.name}: a round without participants changes the clients' coordinates, "
            "outside the block structure of the exact oracle"
        )
    L0u = L0[:du]

    # Per-client blocks: client j participates alone, with weight 0 (channel s) and 1 (s + w).
    ub, Vb, mask = _local_basis(N, du, dv)
    L0loc = np.stack([L0u[:, layout_local(du, dv, j)] for j in range(N)])  # (N, du, m)
    L0loc = np.concatenate([L0loc, np.broadcast_to(np.eye(m)[du:], (N, dv, m))], axis=1)
    outs = []
    for omega in (0.0, 1.0):
        u2, V2, _ = run(ub, Vb, mask, omega * mask, constant=False, stochastic=False)
        outs.append(_local_out(u2, V2, N, m).transpose(0, 2, 1))  # (N, m out, m in)
    beta = np.stack([outs[0] - L0loc, outs[1] - outs[0]])

    # Constants: zero state with h; nobody, then each client alone with weight 0 and 1.
    S = 1 + 2 * N
    msk = np.zeros((S, N), bool)
    msk[1 : N + 1] = np.eye(N, dtype=bool)
    msk[N + 1 :] = np.eye(N, dtype=bool)
    wts = np.zeros((S, N))
    wts[N + 1 :] = np.eye(N)
    u2, V2, probe = run(
        np.zeros((S, du)), np.zeros((S, N, dv)), msk, wts, constant=True, stochastic=noise
    )
    f0 = u2[0]
    if np.abs(V2[0]).max(initial=0.0) > 0.0:
        raise NotAffineError(f"{algorithm.name}: a round without participants moves the clients")
    loc = [_local_out(u2[a:b], V2[a:b], N, 1)[:, 0] for a, b in ((1, N + 1), (N + 1, S))]
    base = np.concatenate([f0, np.zeros(dv)])
    gamma = np.stack([loc[0] - base, loc[1] - loc[0]])

    resp = None
    if noise and probe.noisy_calls:
        calls = probe.noisy_calls
        q = calls * d
        resp = []
        check_memory(
            f"the response to gradient noise of {calls} gradient calls per round ({N} clients, "
            f"dimension {d})",
            3.0 * 8 * calls * N * q * N * d,
            hint="fewer local steps K (each is a gradient call), fewer clients or dimensions",
        )
        mask_q = np.repeat(np.eye(N, dtype=bool), q, axis=0)
        offsets = np.zeros((calls, N, q, N, d))
        for j in range(N):  # seed (j, t, a): unit offset e_a on client j at its call t
            offsets[:, j, :, j, :] = _unit_offsets(calls, d)
        offs = list(offsets.reshape(calls, N * q, N, d))
        for omega in (0.0, 1.0):
            u2, V2, pr = run(
                np.zeros((N * q, du)),
                np.zeros((N * q, N, dv)),
                mask_q,
                omega * mask_q,
                constant=False,
                offsets=offs,
            )
            if pr.noisy_calls != calls:
                raise NotAffineError(
                    f"{algorithm.name}: the number of stochastic gradient calls per round changes "
                    "with the participation draw"
                )
            resp.append(_local_out(u2, V2, N, q).transpose(0, 2, 1))  # (N, m, q)
        resp = np.stack([resp[0], resp[1] - resp[0]])

    x0 = np.zeros(d) if x0 is None else check_finite("x0", x0).reshape(-1)
    if x0.shape != (d,):
        raise AssumptionError(f"x0 must have {d} entries, got {x0.size}")
    st0 = algorithm.init(_Probe(H, h), x0[None, :])
    u0, V0 = layout.encode(st0)
    z0 = np.concatenate([np.asarray(u0[0], float), np.asarray(V0[0], float).reshape(-1)])

    model = RoundModel(
        algorithm=algorithm.name,
        layout=layout,
        n_clients=N,
        du=du,
        dv=dv,
        dim=d,
        L0u=L0u,
        f0=f0,
        beta=beta,
        gamma=gamma,
        noise=resp,
        z0=z0,
    )
    if verify:
        res = verify_round_model(model, problem, algorithm, rtol=rtol, seed=seed, backend=backend)
        model = RoundModel(**{**model.__dict__, "verification": res})
    return model


def layout_local(du: int, dv: int, j: int) -> np.ndarray:
    """Positions of (u, v_j) in z = (u, v_1, ..., v_N)."""
    return np.concatenate([np.arange(du), du + j * dv + np.arange(dv)])


def _unit_offsets(calls: int, d: int) -> np.ndarray:
    """(calls, calls * d, d): seed (t, a) gets e_a at gradient call t, zero at the others."""
    out = np.zeros((calls, calls, d, d))
    out[np.arange(calls), np.arange(calls)] = np.eye(d)
    return out.reshape(calls, calls * d, d)


def verify_round_model(
    model: RoundModel,
    problem: Any,
    algorithm: Algorithm,
    *,
    rtol: float = VERIFY_RTOL,
    n_states: int = 4,
    seed: int = 0,
    backend: str = "numpy",
) -> float:
    """Check the model (*) against ``algorithm.round`` on the real ``problem``.

    At ``n_states`` random states (random values in the unread fields too) and draws (nobody,
    everybody, two random subsets; random non-negative weights on the participants) the
    model's prediction must equal the round's result, and the round must satisfy
    round(a z1 + (1 - a) z2) = a round(z1) + (1 - a) round(z2) for the same draw; with
    stochastic gradients, the noise response is checked at random offsets as well. Residuals
    are max-norms relative to max(1, max |state|).

    The rounds run in ``backend``'s namespace, as in :func:`extract_round_model`.

    Returns
    -------
    float
        The largest relative residual.

    Raises
    ------
    NotAffineError
        When a residual exceeds ``rtol``.
    """
    H, h = quadratic_data(problem)
    N, d = H.shape[:2]
    rng = np.random.default_rng(seed)
    run = _Runner(algorithm, model.layout, H, h, get_backend(backend))
    du, dv = model.du, model.dv
    S = max(4, int(n_states))
    masks = rng.random((S, N)) < 0.5
    masks[0] = False
    masks[1] = True
    w = rng.random((S, N)) * masks
    z1 = rng.standard_normal((S, model.n))
    z2 = rng.standard_normal((S, model.n))
    a = rng.random((S, 1))

    def fill(shape: tuple[int, ...]) -> np.ndarray:
        return rng.standard_normal(shape)

    def go(z: np.ndarray) -> np.ndarray:
        u2, V2, _ = run(
            z[:, :du],
            z[:, du:].reshape(S, N, dv),
            masks,
            w,
            constant=True,
            problem=problem,
            fill=fill,
        )
        return np.concatenate([u2, V2.reshape(S, -1)], axis=1)

    def rel(x: np.ndarray, y: np.ndarray) -> float:
        return float(np.abs(x - y).max() / max(1.0, np.abs(x).max(), np.abs(y).max()))

    r1, r2, r12 = go(z1), go(z2), go(a * z1 + (1 - a) * z2)
    worst = max(
        rel(r1, model.apply(z1, masks, w)),
        rel(r2, model.apply(z2, masks, w)),
        rel(r12, a * r1 + (1 - a) * r2),
    )
    u2, V2, _ = run(
        z1[:, :du],
        z1[:, du:].reshape(S, N, dv),
        masks,
        w,
        constant=True,
        problem=problem,
        fill=fill,
        r=1,
    )
    worst = max(worst, rel(np.concatenate([u2, V2.reshape(S, -1)], axis=1), r1))
    if model.noise is not None:
        q = model.noise.shape[-1]
        calls = q // d
        xi = rng.standard_normal((S, N, q))
        offs = list(xi.reshape(S, N, calls, d).transpose(2, 0, 1, 3))
        zero = np.zeros((S, model.n))
        u0, V0, _ = run(zero[:, :du], zero[:, du:].reshape(S, N, dv), masks, w, constant=False)
        u1, V1, _ = run(
            zero[:, :du], zero[:, du:].reshape(S, N, dv), masks, w, constant=False, offsets=offs
        )
        got = np.concatenate([u1 - u0, (V1 - V0).reshape(S, -1)], axis=1)
        pred = model.apply(zero, masks, w, xi) - model.apply(zero, masks, w)
        worst = max(worst, rel(got, pred))
    if not np.isfinite(worst) or worst > rtol:
        why = diagnose_round(
            algorithm, model.layout, problem, rtol=rtol, seed=seed, backend=backend
        )
        raise NotAffineError(
            f"{model.algorithm}: {why or 'the round is not the affine map read off it'} "
            f"(relative residual {worst:.2e} > {rtol:.0e} at random states); exact rates "
            "would be wrong"
        )
    return worst


def diagnose_round(
    algorithm: Algorithm,
    layout: StateLayout,
    problem: Any,
    *,
    rtol: float = VERIFY_RTOL,
    seed: int = 0,
    backend: str = "numpy",
) -> str | None:
    """Which property the exact oracle needs fails for ``algorithm``'s round, and where.

    The same probing as :func:`extract_round_model`: ``round`` run on the real ``problem``
    with coordinate states on the seed axis, one seed per client j taking part alone (weight
    w_j = 1) and one with nobody taking part, at a random state z. In order, the first that
    fails is reported, with the measured number and the client:

    1. the same map every round (round 1 against round 0, same state and draw);
    2. the fields the layout declares unread are unread (random values in them);
    3. client-local: client j taking part changes only (u, v_j) and reads no other client's
       coordinates;
    4. linear in the participation weights: doubling w_j doubles what w_j adds, round(w = 2)
       - round(w = 0) = 2 (round(w = 1) - round(w = 0));
    5. affine in the state: round(2 z) - round(0) = 2 (round(z) - round(0));
    6. the participants' contributions add up: clients j and j + 1 together change the state
       by the sum of their separate changes.

    Returns
    -------
    str or None
        The failed property in one sentence, or None when each holds on its own.
    """
    H, h = quadratic_data(problem)
    N = int(H.shape[0])
    run = _Runner(algorithm, layout, H, h, get_backend(backend))
    du, dv = layout.du, layout.dv
    rng = np.random.default_rng([seed, 34])
    z = rng.standard_normal(du + N * dv)
    alone = np.vstack([np.eye(N, dtype=bool), np.zeros((1, N), bool)])  # row N: nobody
    who = [f"client {j} taking part alone" for j in range(N)] + ["no client taking part"]

    def go(Z: np.ndarray, mask: np.ndarray, w: np.ndarray, **kw: Any) -> np.ndarray:
        Z = np.broadcast_to(Z, (mask.shape[0], Z.shape[-1]))
        u2, V2, _ = run(
            Z[:, :du],
            Z[:, du:].reshape(len(Z), N, dv),
            mask,
            w,
            constant=True,
            problem=problem,
            **kw,
        )
        return np.concatenate([u2, V2.reshape(len(Z), -1)], axis=1)

    def rel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Per-seed max-norm of x - y relative to max(1, |x|, |y|)."""
        scale = np.maximum(1.0, np.maximum(np.abs(x).max(axis=1), np.abs(y).max(axis=1)))
        out = np.abs(x - y).max(axis=1) / scale
        return np.where(np.isfinite(out), out, np.inf)

    def size(v: np.ndarray) -> np.ndarray:
        return np.linalg.norm(v, axis=1)

    base = go(z, alone, alone.astype(float))
    bad = ~np.isfinite(base).all(axis=1)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        return (
            f"the round's result is not finite ({who[j]}, round 0): the exact oracle probes "
            "every draw, an empty one included"
        )
    later = go(z, alone, alone.astype(float), r=1)
    e = rel(later, base)
    if e.max() > rtol:
        j = int(e.argmax())
        return (
            f"the round depends on the round index: round 1 differs from round 0 by {e[j]:.2g} "
            f"relative at the same state and draw ({who[j]}); the exact oracle needs the same "
            "map every round"
        )
    e = rel(go(z, alone, alone.astype(float), fill=lambda shape: rng.standard_normal(shape)), base)
    if e.max() > rtol:
        j = int(e.argmax())
        return (
            f"the round reads state that its exact layout leaves out (coordinates "
            f"{layout.coordinates}): other values in the fields outside them change the result "
            f"by {e[j]:.2g} relative ({who[j]}, round 0); add those fields to the layout"
        )
    if dv:
        nobody = base[N]
        for j in range(N):
            others = np.ones(N, bool)
            others[j] = False
            moved = np.abs(base[j, du:] - nobody[du:]).reshape(N, dv)[others].max(axis=1)
            if moved.max(initial=0.0) > rtol * max(1.0, np.abs(base[j]).max()):
                k = int(np.flatnonzero(others)[moved.argmax()])
                return (
                    f"the round is not client-local: client {j} taking part alone changes "
                    f"client {k}'s coordinates (round 0)"
                )
        delta = np.zeros_like(z)
        delta[du:] = rng.standard_normal(N * dv)
        Zd = np.repeat((z + delta)[None], N + 1, axis=0)
        for j in range(N):  # client j's own coordinates stay: only the others' move
            Zd[j, du + j * dv : du + (j + 1) * dv] = z[du + j * dv : du + (j + 1) * dv]
        moved = go(Zd, alone, alone.astype(float)) - base
        nobody_moved = go(Zd[:N], np.zeros((N, N), bool), np.zeros((N, N)))
        nobody_moved = nobody_moved - np.repeat(base[N:], N, axis=0)
        e = rel(moved[:N] + base[:N], nobody_moved + base[:N])
        if e.max() > rtol:
            j = int(e.argmax())
            return (
                f"the round is not client-local: what client {j} taking part alone adds "
                f"depends on the other clients' coordinates (by {e[j]:.2g} relative, round 0)"
            )
    w0, w2 = go(z, alone, 0.0 * alone), go(z, alone, 2.0 * alone)
    d1, d2 = base - w0, w2 - w0
    e = rel(d2, 2 * d1)
    if e[:N].max() > rtol:
        j = int(e[:N].argmax())
        n1, n2 = float(size(d1)[j]), float(size(d2)[j])
        how = (
            f"doubling w changes the update by {n2 / n1:.3g}x, not 2x"
            if n1 > 0
            else f"w = 1 adds nothing and w = 2 adds {n2:.3g}"
        )
        return f"the round is not linear in the participation weights: {how} (client {j}, round 0)"
    zero = go(np.zeros_like(z), alone, alone.astype(float))
    twice = go(2.0 * z, alone, alone.astype(float))
    d1, d2 = base - zero, twice - zero
    e = rel(d2, 2 * d1)
    if e.max() > rtol:
        j = int(e.argmax())
        n1, n2 = float(size(d1)[j]), float(size(d2)[j])
        how = f"{n2 / n1:.3g}x, not 2x" if n1 > 0 else f"{n2:.3g}, from nothing"
        return (
            f"the round is not affine in the state: doubling the state (from zero) changes its "
            f"image by {how} ({who[j]}, round 0)"
        )
    if N > 1:
        both = np.eye(N, dtype=bool) | np.roll(np.eye(N, dtype=bool), 1, axis=1)
        together = go(z, both, both.astype(float)) - base[N]
        apart = (base[:N] - base[N]) + (np.roll(base[:N], -1, axis=0) - base[N])
        e = rel(together + base[N], apart + base[N])
        if e.max() > rtol:
            j = int(e.argmax())
            k = (j + 1) % N
            return (
                f"the participants' contributions do not add up: clients {j} and {k} together "
                f"change the state by {float(size(together)[j]):.3g}, their separate changes "
                f"sum to {float(size(apart)[j]):.3g} (round 0)"
            )
    return None
