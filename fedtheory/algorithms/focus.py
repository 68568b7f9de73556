"""FOCUS and SG-FOCUS: Federated Optimization with exact Convergence via pUsh-pull Strategy.

Ying, Li and Yang, "Exact and Linear Convergence for Federated Learning under Arbitrary Client
Participation is Attainable" (NeurIPS 2025; seed 003, Algorithm 1), stated as in the authors'
own code for Figure 4 (docs/algorithms.md section 4). State: server model x, server tracker y, every
client's stored gradient g_prev_i (all zero at the start). Round r, for i in S_r::

    x_i <- x;  y_i <- 0
    for k = 0..K-1:
        if k > 0:  x_i <- x_i - eta y_i
        g <- grad f_i(x_i)                 (stochastic for SG-FOCUS)
        y_i <- y_i + g - g_prev_i;  g_prev_i <- g
    y <- y + y_i                           (a sum over S_r: the column-stochastic "push")
    x <- x - eta y                         (the same eta as locally)

By telescoping, y = sum_{i=1..N} g_prev_i after every round (the tracking property, claim C3):
FOCUS turns arbitrary participation into arbitrary gradient delay (003 Section 5.1).

Within a round the local sum telescopes too: after step k, y_i = g_k - g_prev_i(r), with
g_prev_i(r) the client's stored gradient at the start of round r. So steps 1..K-1 are gradient
steps x_k = x_{k-1} - eta (grad f_i(x_{k-1}) - g_prev_i) with the constant correction -g_prev_i:
the one local-steps engine runs them (:func:`~fedtheory.algorithms.local_steps.local_steps`,
:func:`~fedtheory.algorithms.local_steps.slot_steps`, as for SCAFFOLD's c - c_i), and the round
takes the last gradient g_{K-1} and y_i = g_{K-1} - g_prev_i (one subtraction instead of
accumulated differences: it equals the accumulated form in exact arithmetic and differs from it
in the last bits only).

Only S_r computes: under partial participation with exact gradients the round works
on the participants' rows alone, in the client-major slot layout of
:func:`~fedtheory.algorithms.base.participants` (one GEMM per client over the seeds in which it
takes part; Bernoulli's ragged counts are padded; with many clients, a column per client that
takes part only), and writes g_prev_i and x_i back for i in S_r (into the given state's arrays
when the runner donates it). y's sum over S_r is taken in client order
(tests/algorithms/test_fast_paths.py: the same iterates to 1e-12). Stochastic gradients (SG-FOCUS
on a problem that draws noise or minibatches) keep the masked every-client path, whose per-seed
draws cover all N clients.

On a quadratic with exact gradients the engine takes the strategy ``affine-map``: steps 1..K-1
on f_i tilted by g_prev_i are x_{K-1} = x T_i + c_i + g_prev_i B_i with the problem's K - 1 step
maps (:meth:`~fedtheory.problems.QuadraticProblem.tilt_map`): two products per client, then the
last gradient. The same iterates as ``stepwise`` to rounding (FOCUS's exact floor moves in the
last digit).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from fedtheory.algorithms.base import (
    CLIENT_MODELS_ON_REQUEST,
    Algorithm,
    AlgorithmConfig,
    Participants,
    StateLayout,
    broadcast_clients,
    client_metrics,
    client_sum,
    initial_client_models,
    pull,
    round_layout,
    seed_sums,
    slot_grads,
    spread,
    zeros_fill,
)
from fedtheory.algorithms.local_steps import local_steps, slot_steps, step_maps
from fedtheory.algorithms.registry import register
from fedtheory.backend import get_namespace

Array = Any

REFERENCE = "Ying, Li and Yang 2025 (seed 003), Algorithm 1, as in the authors' Figure 4 notebook"


class FocusState(NamedTuple):
    x: Array  # (S, d) server model
    y: Array  # (S, d) server tracker: sum_i g_prev_i
    g_prev: Array  # (S, N, d) each client's latest stored gradient
    X: Array | None  # (S, N, d) each client's latest local model (consensus only), or None


def tracking_residual(state: FocusState) -> Array:
    """||y - sum_i g_prev_i|| per seed (zero up to rounding: claim C3)."""
    xp = get_namespace(state.y)
    return xp.linalg.norm(state.y - client_sum(state.g_prev), axis=-1)


def build_focus(config: AlgorithmConfig, stochastic: bool = False) -> Algorithm:
    """FOCUS (exact gradients) or SG-FOCUS (``stochastic=True``: the problem's stochastic
    gradients, drawn from the run's per-seed streams)."""
    K, eta = config.local_steps, config.lr

    def init(problem: Any, x0: Array, *, client_models: bool = False) -> FocusState:
        xp = get_namespace(x0)
        N = problem.n_clients
        g_prev = xp.zeros((x0.shape[0], N, x0.shape[1]), dtype=x0.dtype)
        return FocusState(
            x=x0, y=xp.zeros_like(x0), g_prev=g_prev, X=initial_client_models(x0, N, client_models)
        )

    def round_(
        state: FocusState, problem: Any, draw: Any, rng: Any = None, *, donate: bool = False
    ) -> FocusState:
        xp = get_namespace(state.x)
        if bool(draw.mask.all()):  # full participation: every client computes
            return _full_round(state, problem, rng if stochastic else None)
        if stochastic and getattr(problem, "stochastic", True):
            # Per-seed random draws need the seed axis first: the masked full path.
            return _masked_round(state, problem, draw.mask, rng)
        return _participants_round(state, problem, round_layout(draw, problem), xp, donate)

    def _tracked_steps(problem: Any, X: Array, g_old: Array, **kw: Any) -> Array:
        """Steps 1..K-1 of FOCUS's local pass (003 Algorithm 1, the loop over k) on the rows
        ``X`` (every client's, or with ``layout`` the participants' slots), by the one
        local-steps engine: x_k = x_{k-1} - eta (grad f_i(x_{k-1}) - g_prev_i) is a gradient
        step with the constant correction -g_prev_i (after step k the telescoped tracker is
        y_i = g_k - g_prev_i), so the engine's strategies apply as to SCAFFOLD's:
        ``affine-map`` on a quadratic with exact gradients, x_{K-1} = x T_i + c_i + g_prev_i B_i
        (two products per client, :meth:`~fedtheory.problems.QuadraticProblem.tilt_map`),
        else ``stepwise``. ``X`` is updated in place or replaced; K = 1 takes no step."""
        if K == 1:
            return X
        layout = kw.pop("layout", None)
        if layout is None:
            return local_steps(problem, X, K - 1, eta, correction=-g_old, overwrite=True, **kw)
        kmap = step_maps(problem, eta, K - 1, get_namespace(X), X.dtype, tilted=True)
        return slot_steps(problem, X, K - 1, eta, layout, kmap=kmap, correction=-g_old)

    def _full_round(state: FocusState, problem: Any, rng: Any) -> FocusState:
        """Every client computes (full participation)."""
        X = broadcast_clients(state.x, state.g_prev.shape[1])  # every client pulls x
        X = _tracked_steps(problem, X, state.g_prev, rng=rng)
        g = problem.grads(X, rng)  # the last gradient, g_{K-1}
        y = state.y + client_sum(g - state.g_prev)
        return FocusState(x=state.x - eta * y, y=y, g_prev=g, X=_kept(state, X))

    def _masked_round(state: FocusState, problem: Any, mask: Array, rng: Any) -> FocusState:
        """Every client computes, the mask keeps S_r's results (stochastic gradients: the
        per-seed draws cover all N clients, as they always have, so the engine steps every
        row: ``stepwise``). y_i is zero off S_r, so x_i moves for i in S_r only."""
        xp = get_namespace(state.x)
        # a new array, updated in place below (x in every row when the state keeps no X: the
        # rows outside S_r do not move and are not read)
        X = (
            pull(state.X, state.x, mask)
            if state.X is not None
            else broadcast_clients(state.x, state.g_prev.shape[1])
        )
        on = xp.asarray(mask, dtype=X.dtype)  # 0/1 step weights: no question to the device
        X = _tracked_steps(problem, X, state.g_prev, rng=rng, compute=on, strategy="stepwise")
        g = problem.grads(X, rng)
        y_loc = g - state.g_prev
        y_loc *= spread(on, X.shape[2])
        g_prev = state.g_prev.copy()  # g_prev_i <- g_{K-1} for i in S_r (the state's is kept)
        xp.copyto(g_prev, g, where=spread(xp.asarray(mask, dtype=bool), X.shape[2]))
        y = state.y + client_sum(y_loc)
        return FocusState(x=state.x - eta * y, y=y, g_prev=g_prev, X=_kept(state, X))

    def _participants_round(
        state: FocusState, problem: Any, lay: Participants, xp: Any, donate: bool
    ) -> FocusState:
        """Only S_r computes: its rows in the client-major slot layout (one GEMM per client
        over the seeds in which it takes part), the others untouched (with ``donate``, written
        into the given state's arrays: no copy of every client's row)."""
        S, N, d = state.g_prev.shape
        Xs = state.x[lay.seed]  # (n, N, d): x_i <- x for i in S_r (and the padding slots)
        g_old = state.g_prev.reshape(S * N, d)[lay.src]
        Xs = _tracked_steps(problem, Xs, g_old, layout=lay)
        g = slot_grads(problem, Xs, lay)
        y_buf = xp.empty((lay.n * lay.width + 1, d), dtype=Xs.dtype)
        y_buf[-1] = 0  # the row that missing participants of ragged rounds read
        xp.subtract(g, g_old, out=y_buf[:-1].reshape(Xs.shape))
        y = state.y + seed_sums(y_buf, lay)
        # g_prev_i <- g_{K-1} for i in S_r (the state's arrays kept unless donated)
        g_prev = state.g_prev if donate else state.g_prev.copy()
        g_prev.reshape(S * N, d)[lay.rows] = g.reshape(-1, d)[lay.slots]
        X = state.X
        if X is not None:  # the clients' models, for the consensus metric
            X = X if donate else X.copy()
            X.reshape(S * N, d)[lay.rows] = Xs.reshape(-1, d)[lay.slots]
        return FocusState(x=state.x - eta * y, y=y, g_prev=g_prev, X=X)

    name = "sg-focus" if stochastic else "focus"
    return Algorithm(
        name=name,
        init=init,
        round=round_,
        config=config,
        reference=REFERENCE,
        metrics=client_metrics(tracking_residual=lambda state, problem: tracking_residual(state)),
        donates=True,
        uses_layout=True,
        state_for=CLIENT_MODELS_ON_REQUEST,
    )


def _kept(state: FocusState, X: Array) -> Array | None:
    """The round's client models as the next state's X where the state keeps X."""
    return None if state.X is None else X


def _focus_layout(name: str, config: Any, N: int, d: int) -> StateLayout:
    """FOCUS / SG-FOCUS (003 Algorithm 1): x and every client's stored gradient g_prev_i; the
    tracker y equals sum_i g_prev_i on every reachable state (the tracking property, 003 Sec.
    5.1), so it is recomputed rather than carried."""

    def encode(st: Any) -> tuple[Array, Array]:
        return st.x, st.g_prev

    def decode(tpl: Any, u: Array, V: Array, fill: Callable = zeros_fill) -> Any:
        X = None if tpl.X is None else fill(V.shape)
        return tpl._replace(x=u, y=V.sum(axis=1), g_prev=V, X=X)

    return StateLayout(name, d, d, d, encode, decode, "u = x; v_i = g_prev_i (y = sum_i v_i)")


@register(
    "focus",
    "FOCUS, push-pull with exact gradients (003 Algorithm 1)",
    display="FOCUS",
    affine=True,
    exact_layout=_focus_layout,
    stated_rate=(
        "not stated: 003 Theorem 1 states linear convergence, but its rate, step-size condition "
        "and Lyapunov function are missing from the available text (docs/stated-bounds.md); "
        "fedtheory bound reports the constant a shape implies"
    ),
)
def _focus(config: AlgorithmConfig) -> Algorithm:
    return build_focus(config, stochastic=False)


@register(
    "sg-focus",
    "SG-FOCUS, FOCUS with the problem's stochastic gradients (003 Sec. 5)",
    display="SG-FOCUS",
    affine=True,
    exact_layout=_focus_layout,
    stated_rate=(
        "not stated: 003 Theorems 3-5 state linear convergence to a noise neighbourhood; the "
        "formulas are missing from the available text (docs/stated-bounds.md)"
    ),
)
def _sg_focus(config: AlgorithmConfig) -> Algorithm:
    return build_focus(config, stochastic=True)
