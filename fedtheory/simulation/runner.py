"""The runner: many seeds of one algorithm on one problem, as one batched computation.

:func:`simulate` is the one round loop of fedtheory (the NN training of
:func:`fedtheory.experiments.nn_training.train` runs through it too). It works in three steps:

1. :func:`plan_run` checks the arguments, builds the algorithm and the participation model and
   draws every seed's randomness on the host (one :class:`numpy.random.SeedSequence` child per
   seed: stream 0 participation, 1 local-step masks, 2 gradient noise; so seed s of a batched
   run and a single-seed run of seed s get the same bits);
2. :func:`run_rounds` runs ``algorithm.round`` R times on the stacked state and records the
   metrics (functions of ``(state, problem)``, :mod:`fedtheory.simulation.metrics`) into arrays
   of shape (S, R + 1), round 0 being the initial model;
3. :func:`simulate` wraps the recordings in a :class:`SimulationResult` (and runs large seed
   counts in cache-sized blocks).

Recorded by default: the runner's ``error`` (||x_r - x*|| / ||x*||; ``grad_norm2`` where x*
is unknown). On request (``metrics=``, or ``"all"``): ``f_minus_f_star`` (f(x_r) - f*),
``grad_norm2`` (||grad f(x_r)||^2) and the algorithm's own (``consensus``: (1/N) sum_i ||x_i -
x_bar||^2 of the clients' latest local models; FOCUS's ``tracking_residual``: ||y - sum_i
g_prev_i||, claim C3).

A seed whose iterate becomes non-finite or whose error grows past ``divergence_bound`` times its
initial value is frozen at its last finite state and flagged (``diverged``, ``diverged_at``);
the other seeds go on. Nothing stops with an exception because one seed blew up. A seed that
diverges slowly is told by growth instead: it is flagged ``diverging`` (and keeps running, its
curve intact) at the first round where its error is at least ``divergence_growth`` (10) times
its smallest value over the ``divergence_window`` (50) rounds before and above its initial
value, unless its error is back at or below its initial value by the last round (FedAvg with a
step size just past stability grows tenfold in 30 rounds and never nears the ceiling).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np
from threadpoolctl import threadpool_limits

from fedtheory._version import __version__
from fedtheory.algorithms.base import (
    MAX_SEED_ID,
    Algorithm,
    RoundDraw,
    SeedRng,
    compressible,
    participants_of_rounds,
    seed_sequences,
)
from fedtheory.algorithms.registry import info, make_algorithm
from fedtheory.backend import get_backend, get_namespace, resolve_dtype, to_numpy
from fedtheory.errors import AssumptionError
from fedtheory.extras import require
from fedtheory.io import dumps
from fedtheory.io import progress as progress_bar
from fedtheory.parallel import fork_all
from fedtheory.participation import ParticipationModel
from fedtheory.problems import check_problem
from fedtheory.simulation.metrics import (
    DIMENSION_ATTRS,
    MODEL_DIM,
    RENAMED,
    RESULT_ATTRS,
    RUNNER_METRICS,
    Metric,
    RecordedMetrics,
    current_name,
    metric_attrs,
    not_recorded,
    select_metrics,
)
from fedtheory.simulation.settings import defaults
from fedtheory.simulation.spec import (
    DIVERGENCE_GROWTH,
    DIVERGENCE_WINDOW,
    PARTICIPATION_SETTINGS,
    RunSpec,
)
from fedtheory.validation import (
    as_real_array,
    available_cores,
    check_finite,
    check_int,
    check_memory,
    worker_count,
)

Array = Any

_D = defaults()
#: simulate's keywords that are not a run's settings (RunSpec's fields).
_NOT_RUN_SETTINGS = ("problem", "algorithm", "config", "seed_block", "workers", "progress")

#: Default seed block on NumPy: about this many bytes per (block, N, d) client array (327 seeds
#: on figure4_problem, so 1000 seeds run as 4 blocks of 250). Larger than one core's L2 would
#: suggest since only participating clients compute and rounds write into the state they are
#: given (no copy of every client's row): the fixed per-round cost of the array calls is then
#: shared by more seeds, and the per-client GEMMs keep enough rows with less padding (measured
#: with 1000 seeds of figure4_problem, uniform 4 of 16, K = 3, ms per seed-run at 122 / 245
#: seeds: FOCUS 3.07 / 2.59, SCAFFOLD 4.29 / 4.03, FedAvg 2.20 / 2.00; at 167 / 334 / 500 seeds:
#: FOCUS 2.39 / 2.25 / 2.31, SCAFFOLD 2.79 / 2.67 / 2.63).
BLOCK_BYTES = 2 * 1024 * 1024

#: A default block keeps at least this many seeds (fewer only where the participants' work or
#: the held state says so, :func:`default_seed_block`): below it a round's fixed cost of a few
#: hundred array calls is shared by too few seeds (N = 1600, M = 400, d = 20: 3 seeds a block
#: ran 1.3x slower per seed-run than 12).
MIN_BLOCK = 16
#: Default bound on the client state a block holds: :data:`STATE_COPIES` (block, N, d) arrays.
STATE_BYTES = 64 * 1024 * 1024


def default_seed_block(n_clients: int, dim: int, itemsize: int, per_round: int) -> int:
    """The default seed block on NumPy, a function of the run only (never of ``workers``).

    :data:`BLOCK_BYTES` per (block, N, d) client array, as measured on figure4_problem (327
    seeds there), but not below :data:`MIN_BLOCK` seeds unless the round's work, the
    ``per_round`` participants' (block, M, d) rows within :data:`BLOCK_BYTES`, or the held
    state, :data:`STATE_COPIES` (block, N, d) arrays within :data:`STATE_BYTES`, allows fewer.
    Runs with N d <= 16384 (float64) get blocks of :data:`BLOCK_BYTES` per array; larger N get
    blocks sized by the participants (N = 1600, M = 400, d = 20: 16 seeds, not 8;
    N = 10,000, M = 100: 3 seeds, the state's bound, not 1).
    """
    row = dim * itemsize
    by_state = BLOCK_BYTES // (n_clients * row)
    if by_state >= MIN_BLOCK:
        return by_state
    by_work = BLOCK_BYTES // (max(1, min(per_round, n_clients)) * row)
    held = STATE_BYTES // (STATE_COPIES * n_clients * row)
    return max(1, by_state, min(MIN_BLOCK, by_work, held))


def _per_round(model: Any, n: int) -> int:
    """Clients per round of a model for sizing blocks: its ``m`` (summed over clusters where it
    is one per cluster), else N (full participation, Bernoulli without an M)."""
    m = getattr(model, "m", None)
    if m is None:
        return n
    arr = np.asarray(m)
    if arr.ndim == 0 and getattr(model, "n_clusters", None):
        return min(n, int(arr) * int(model.n_clusters))
    return max(1, min(n, int(arr.sum())))


#: Peak bytes per (seed, round, client) of a plan: the participation draw and its float64
#: weights, and the sampler's random keys and partition while drawing.
PLAN_BYTES = 25
#: (S, N, d) arrays a round may hold at once (client models, gradients, control variates,
#: optimizer moments and temporaries), an over-estimate for the memory check.
STATE_COPIES = 12


def check_run_memory(
    *,
    seeds: int,
    rounds: int,
    n_clients: int,
    dim: int,
    itemsize: int = 8,
    local_steps: int = 0,
    metrics: int = len(RUNNER_METRICS) + 2,
    block: int | None = None,
    workers: int = 1,
) -> None:
    """Refuse a run whose memory estimate exceeds what this machine has, saying the estimate.

    Per block of seeds (``workers`` blocks at once): the participation draws (S, R, N) (and
    per-step masks (S, R, K, N) for algorithms that re-sample) and the state; for the whole run:
    the (S, R + 1) metric arrays (twice, as blocks are concatenated).
    """
    S, R, N, d = float(seeds), float(rounds), float(n_clients), float(dim)
    B = S if block is None else float(min(block, seeds))
    plan = B * R * N * PLAN_BYTES * (1 + local_steps) + STATE_COPIES * B * N * d * itemsize
    plan *= max(1, min(workers, math.ceil(S / B)))
    results = 2.0 * S * (R + 1) * 8 * metrics + 2.0 * S * d * 8
    check_memory(
        f"a run of {seeds} seeds x {rounds} rounds x {n_clients} clients x dimension {dim}",
        plan + results,
    )


@dataclass
class SimulationResult:
    """Per-round metrics of a batched run (arrays of shape (seeds, rounds + 1)).

    Every metric the run recorded is in :attr:`metrics` (NaN in a round skipped by
    ``record_every`` and for a seed after its divergence) and is also an attribute:
    ``result.error``, ``result.consensus``, ``result.tracking_residual`` (FOCUS), ... Reading a
    metric the run could have recorded but did not (a run records ``error`` alone by default)
    raises :class:`~fedtheory.errors.MetricNotRecordedError` naming the ``metrics=[...]`` that
    records it.

    Attributes
    ----------
    algorithm, participation : str
    rounds, seeds : int
    seed : int
        The run's root seed; seed s uses ``SeedSequence(seed).spawn(...)[seed_ids[s]]``.
    seed_ids : list of int
    metrics : RecordedMetrics (a dict of str to ndarray (seeds, rounds + 1))
        The recorded metrics; ``metrics.available`` names every metric the run could record.
    diverged : ndarray of bool (seeds,)
    diverged_at : ndarray of int (seeds,); -1 where the seed did not diverge
    diverging : ndarray of bool (seeds,)
        The seed's error grew by ``divergence_growth`` over ``divergence_window`` rounds to
        above its initial value (it kept running; see the module docstring).
    diverging_at : ndarray of int (seeds,); -1 where the seed was not flagged
    x_final : ndarray (seeds, d)
    x_star : ndarray (d,) or None
    x_mean : ndarray (seeds, d) or None
        Time average of x_r over rounds ``average_from..R`` when requested.
    wall_time : float
        Seconds spent in the round loop.
    config : dict
    dtype : str
        The run's precision ("float64", or "float32" on request): the metrics, ``x_final`` and
        ``x_mean`` keep it.

    Notes
    -----
    ``repr(result)`` is a few lines (algorithm, shapes, seeds, final error quantiles, diverged
    seeds); :meth:`to_xarray` and :meth:`to_dataframe` hand the metrics to the ecosystem.
    """

    algorithm: str
    participation: str
    rounds: int
    seeds: int
    seed: int
    seed_ids: list
    metrics: dict
    diverged: np.ndarray
    diverged_at: np.ndarray
    x_final: np.ndarray
    x_star: np.ndarray | None
    x_mean: np.ndarray | None = None
    wall_time: float = 0.0
    config: dict = field(default_factory=dict)
    diverging: np.ndarray | None = None
    diverging_at: np.ndarray | None = None
    dtype: str = "float64"

    def __getattr__(self, name: str) -> np.ndarray:
        metrics = self.__dict__.get("metrics")
        if metrics is not None and name in RENAMED and RENAMED[name] in metrics:
            return metrics[current_name(name)]  # an earlier name, with a DeprecationWarning
        if metrics is not None and name in metrics:
            return metrics[name]
        if metrics is not None and name in getattr(metrics, "available", ()):
            raise not_recorded(name, list(metrics), metrics.available)
        raise AttributeError(
            f"{type(self).__name__} of {self.__dict__.get('algorithm', '?')} has no attribute or "
            f"metric {name!r} (metrics: {', '.join(metrics or ())})"
        )

    @property
    def recorded_rounds(self) -> np.ndarray:
        """The rounds whose metrics were recorded: 0, every ``record_every``-th and the last
        (the others hold NaN)."""
        k = int(self.config.get("record_every", 1))
        return np.unique(np.r_[0, np.arange(k, self.rounds + 1, k), self.rounds])

    def final(self, metric: str = "error") -> np.ndarray:
        """The last recorded value of ``metric`` per seed."""
        return self.metrics[current_name(metric)][:, -1]

    def _score(self) -> str | None:
        """The error metric a summary reports: error when recorded, else grad_norm2."""
        for name in ("error", "grad_norm2", "f_minus_f_star"):
            v = self.metrics.get(name)
            if v is not None and np.isfinite(v).any():
                return name
        return None

    def __repr__(self) -> str:
        """A few lines: what ran, the shapes, the final error's quantiles, diverged seeds."""
        head = (
            f"SimulationResult: {self.algorithm}, {self.participation} participation, "
            f"{self.seeds} seed{'s' if self.seeds != 1 else ''} (root seed {self.seed}) x "
            f"{self.rounds} rounds, {self.dtype}, {self.wall_time:.2g} s"
        )
        lines = [head]
        shape = (self.seeds, self.rounds + 1)
        lines.append(f"  metrics {shape}: {', '.join(self.metrics)}")
        lines.append(f"  x_final {tuple(np.shape(self.x_final))}")
        score = self._score()
        if score is not None:
            last = np.asarray(self.metrics[score], dtype=np.float64)[:, -1]
            ok = last[np.isfinite(last)]
            if ok.size:
                q = np.quantile(ok, [0.0, 0.5, 1.0])
                lines.append(
                    f"  final {score}: min {q[0]:.3g}, median {q[1]:.3g}, max {q[2]:.3g}"
                    + (f" ({ok.size} finite of {last.size})" if ok.size < last.size else "")
                )
        n_div = int(np.count_nonzero(self.diverged))
        lines.append(f"  diverged: {self.divergence_summary() or f'{n_div} of {self.seeds}'}")
        return "\n".join(lines)

    def settings(self) -> dict[str, Any]:
        """The run's settings as flat attributes: ``problem``, ``algorithm``, ``participation``,
        ``n_clients`` (N), ``clients_per_round`` (M: the model's, or the expected number for
        Bernoulli participation; absent where the model has no fixed or expected M),
        ``local_steps`` (K) and ``lr``, the names a sweep store gives the same settings."""
        model = dict(self.config.get("participation_model") or {})
        out: dict[str, Any] = {
            "problem": self.config.get("problem", ""),
            "algorithm": self.algorithm,
            "participation": model.get("model", self.participation),
            "n_clients": model.get("n_clients"),
            "clients_per_round": model.get("clients_per_round"),
            "local_steps": self.config.get("local_steps"),
            "lr": self.config.get("lr"),
        }
        if out["clients_per_round"] is None and model.get("model") == "full":
            out["clients_per_round"] = model.get("n_clients")
        if out["clients_per_round"] is None and model.get("p") is not None:
            out["clients_per_round"] = float(np.sum(model["p"]))  # expected, sum_i p_i
        return {k: v for k, v in out.items() if v is not None and v != ""}

    def to_xarray(self) -> Any:
        """The run as an :class:`xarray.Dataset` (needs the optional extra ``fedtheory[sweep]``).

        Returns
        -------
        xarray.Dataset
            One variable per recorded metric with dims ``(seed, round)``; ``diverged``,
            ``diverged_at``, ``diverging``, ``diverging_at`` with dim ``seed``; ``x_final``
            (and ``x_mean``) with dims ``(seed, component)``, ``x_star`` with dim
            ``component``: the dimension names of a sweep store
            (:data:`~fedtheory.simulation.metrics.MODEL_DIM`). Every variable and coordinate
            has CF ``long_name`` and ``units``. Coordinates: ``seed`` holds the seed ids,
            ``round`` 0..R (0 is the initial model). Attributes: the run's settings
            (:meth:`settings`: problem, algorithm, participation, n_clients, clients_per_round,
            local_steps, lr), rounds, root seed, dtype, wall time, the fedtheory version, the
            run's configuration as JSON text (``config``) and each of its plain entries
            (``config_<key>``).

        Raises
        ------
        MissingExtraError
            xarray is not installed (the message names ``pip install 'fedtheory[sweep]'``).
        """
        require("sweep", "SimulationResult.to_xarray()")
        import xarray as xr  # noqa: PLC0415  (optional extra)

        coords = {
            "seed": ("seed", np.asarray(self.seed_ids, dtype=np.int64), DIMENSION_ATTRS["seed"]),
            "round": ("round", np.arange(self.rounds + 1), DIMENSION_ATTRS["round"]),
            MODEL_DIM: (
                MODEL_DIM,
                np.arange(np.shape(self.x_final)[-1]),
                DIMENSION_ATTRS[MODEL_DIM],
            ),
        }
        data: dict[str, Any] = {
            k: (("seed", "round"), np.asarray(v), metric_attrs(k)) for k, v in self.metrics.items()
        }
        for k in ("diverged", "diverged_at", "diverging", "diverging_at"):
            v = getattr(self, k)
            if v is not None:
                data[k] = (("seed",), np.asarray(v), RESULT_ATTRS[k])
        data["x_final"] = (("seed", MODEL_DIM), np.asarray(self.x_final), RESULT_ATTRS["x_final"])
        if self.x_mean is not None:
            data["x_mean"] = (("seed", MODEL_DIM), np.asarray(self.x_mean), RESULT_ATTRS["x_mean"])
        if self.x_star is not None:
            data["x_star"] = ((MODEL_DIM,), np.asarray(self.x_star), RESULT_ATTRS["x_star"])
        plain = {
            f"config_{k}": v
            for k, v in self.config.items()
            if isinstance(v, str | int | float) and not isinstance(v, bool)
        }
        attrs = {
            **self.settings(),
            "rounds": self.rounds,
            "root_seed": self.seed,
            "dtype": self.dtype,
            "wall_time_s": float(self.wall_time),
            "fedtheory_version": __version__,
            "config": dumps(self.config, indent=False),
            **plain,
        }
        return xr.Dataset(data, coords=coords, attrs=attrs)

    def to_dataframe(self) -> Any:
        """The recorded metrics as a long :class:`pandas.DataFrame` (needs ``fedtheory[sweep]``:
        pandas comes with xarray): one row per (seed, recorded round, metric) with a value,
        columns ``seed``, ``round``, ``metric``, ``value`` and the seed's ``diverged`` flag.
        Rounds that were not recorded (``record_every``) and a diverged seed's rounds after
        its divergence have no value and no row.

        Raises
        ------
        MissingExtraError
            xarray (and so pandas) is not installed.
        """
        ds = self.to_xarray()
        wide = ds[list(self.metrics)].to_dataframe().reset_index()
        long = wide.melt(id_vars=["seed", "round"], var_name="metric", value_name="value")
        long = long.dropna(subset=["value"]).reset_index(drop=True)
        diverged = dict(
            zip(ds["seed"].values.tolist(), np.asarray(self.diverged).tolist(), strict=True)
        )
        long["diverged"] = long["seed"].map(diverged).astype(bool)
        return long

    def divergence_summary(self) -> str | None:
        """One line saying how many seeds diverged or are diverging and when, or None.

        >>> result.divergence_summary()  # doctest: +SKIP
        '3 of 100 seeds diverged (first at round 12)'
        >>> slow.divergence_summary()  # doctest: +SKIP
        '2 of 2 seeds diverging: the error grew 10x within 50 rounds to above its initial value
        (first at round 26)'
        """
        seeds = f"{self.seeds} seed{'s' if self.seeds != 1 else ''}"
        diverged = np.asarray(self.diverged, dtype=bool)
        parts = []
        flags = [(diverged, self.diverged_at, "diverged", "")]
        if self.diverging is not None:  # a seed that also diverged is counted there
            g, w = self.config.get("divergence_growth"), self.config.get("divergence_window")
            why = f": the error grew {g:g}x within {w} rounds to above its initial value"
            flags.append(
                (np.asarray(self.diverging) & ~diverged, self.diverging_at, "diverging", why)
            )
        for flag, at, what, why in flags:
            n = int(np.count_nonzero(flag))
            if n:
                first = int(np.asarray(at)[flag].min())
                when = f"first at round {first}" if n > 1 else f"at round {first}"
                parts.append(f"{n} of {seeds} {what}{why} ({when})")
        return "; ".join(parts) or None


@dataclass
class RunPlan:
    """Everything :func:`run_rounds` needs, checked and drawn up front by :func:`plan_run`.

    ``masks`` (S, R, N) are the participation draws (bool, or int counts for sampling with
    replacement), ``weights`` (S, R, N) their aggregation weights, ``step_masks`` (S, R, K, N)
    who computes at each local step (algorithms that re-sample; else None) and ``rng`` the
    per-seed gradient-noise streams.
    """

    problem: Any
    algorithm: Algorithm
    model: ParticipationModel
    rounds: int
    seed: int
    seed_ids: list
    x0: Any
    masks: np.ndarray
    weights: np.ndarray
    step_masks: np.ndarray | None
    rng: SeedRng
    xp: Any
    aggregation: str
    available: dict
    recorded: dict
    divergence_bound: float
    average_from: int | None
    record_every: int
    divergence_growth: float = DIVERGENCE_GROWTH
    divergence_window: int = DIVERGENCE_WINDOW


def draw_participation(
    model: Any, rounds: int, seqs: list, *, stream: int = 0, per_round: int = 1
) -> np.ndarray:
    """Per-seed participation draws ``(S, rounds * per_round, N)`` from stream ``stream`` of
    each seed's SeedSequence (streams: 0 participation, 1 local-step masks, 2 gradient noise).

    Each seed draws from its own stream, the selection is batched where the model allows
    (:meth:`~fedtheory.participation.ParticipationModel.sample_each`): the same bits as one
    ``model.sample`` per seed."""
    children = [
        np.random.SeedSequence(sq.entropy, spawn_key=sq.spawn_key + (stream,)) for sq in seqs
    ]
    return np.asarray(model.sample_each(rounds * per_round, children))


def plan_run(problem: Any, algorithm: Algorithm | str, spec: RunSpec, **config: Any) -> RunPlan:
    """Check a run's specification, build what it runs and draw its randomness (see
    :func:`simulate` for the settings; ``config`` are the algorithm's)."""
    spec = spec.checked()
    xp, dt = get_backend(spec.backend), resolve_dtype(spec.dtype)
    N, d = int(problem.n_clients), int(problem.dim)
    model = spec.participation_model(problem)
    if isinstance(algorithm, str):
        algorithm = make_algorithm(algorithm, problem=problem, **config)
    elif config:
        raise AssumptionError(
            f"configuration keywords {sorted(config)} need an algorithm name, not a built Algorithm"
        )
    available, recorded = _metrics(spec.metrics, algorithm, problem)
    seqs = seed_sequences(spec.seed, spec.seeds, spec.seed_ids)
    S = len(seqs)
    check_run_memory(
        seeds=S,
        rounds=spec.rounds,
        n_clients=N,
        dim=d,
        itemsize=dt.itemsize,
        local_steps=algorithm.config.local_steps if algorithm.needs_step_masks else 0,
        metrics=len(available),
    )
    masks, weights, step_masks = _draws(model, algorithm, spec, seqs, N, dt)
    noise_seqs = [np.random.SeedSequence(s.entropy, spawn_key=s.spawn_key + (2,)) for s in seqs]
    return RunPlan(
        problem=problem,
        algorithm=algorithm,
        model=model,
        rounds=spec.rounds,
        seed=spec.seed,
        seed_ids=list(range(S)) if spec.seed_ids is None else [int(i) for i in spec.seed_ids],
        x0=_initial_models(
            spec.x0 if spec.x0 is not None else getattr(problem, "x0", None), S, d, dt, xp
        ),
        masks=masks,
        weights=weights,
        step_masks=step_masks,
        rng=SeedRng(noise_seqs, xp=xp),
        xp=xp,
        aggregation=spec.aggregation,
        available=available,
        recorded=recorded,
        divergence_bound=spec.divergence_bound,
        average_from=spec.average_from,
        record_every=spec.record_every,
        divergence_growth=spec.divergence_growth,
        divergence_window=spec.divergence_window,
    )


def _metrics(metrics: Any, algorithm: Algorithm, problem: Any) -> tuple[dict, dict]:
    """Step 2 of :func:`plan_run`: the metrics the run can record and those it records; a
    runner metric asked for by name needs what it reads (x*, f*)."""
    available, recorded = select_metrics(metrics, algorithm, problem)
    if metrics is not None:
        needs = {
            "error": ("x_star", "the minimizer x*"),
            "f_minus_f_star": ("f_star", "f* = min f"),
        }
        for name, (attr, what) in needs.items():
            if (
                name in recorded
                and recorded[name] is RUNNER_METRICS[name]
                and (getattr(problem, attr, None) is None)
            ):
                raise AssumptionError(
                    f"metric {name!r} needs {what}, which this problem does not have (unknown, "
                    "or not unique: a singular mean Hessian); record grad_norm2 instead"
                )
    return available, recorded


def _draws(
    model: ParticipationModel, algorithm: Algorithm, spec: RunSpec, seqs: list, N: int, dt: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Step 3 of :func:`plan_run`: who takes part in each round (drawn on each seed's stream 0,
    or the run's explicit ``draws``), the aggregation weights, and who computes at each local
    step for the algorithms that re-sample (stream 1)."""
    S, R = len(seqs), spec.rounds
    if spec.draws is None:
        masks = draw_participation(model, R, seqs)
    else:
        masks = check_draws(spec.draws, (S, R, N), counts=model.counts)
        empty = np.argwhere(~(masks > 0).any(axis=-1))
        if empty.size and model.empty_probability() == 0:
            s, r = (int(i) for i in empty[0])
            raise AssumptionError(
                f"draws[{s}, {r}] has no participant, which {type(model).__name__} participation "
                "never draws (a round nobody takes part in is a draw of Bernoulli "
                "participation with empty='skip', or of a trace)"
            )
    weights = np.asarray(model.weights(masks, spec.aggregation), dtype=dt)
    step_masks = None
    if algorithm.needs_step_masks:
        K = algorithm.config.local_steps
        step_masks = draw_participation(model, R, seqs, stream=1, per_round=K) > 0
        step_masks = step_masks.reshape(S, R, K, N)
    return masks, weights, step_masks


def _initial_models(x0: Any, S: int, d: int, dt: Any, xp: Any) -> Any:
    """Step 4 of :func:`plan_run`: the seeds' initial server models (S, d): the run's ``x0``,
    else the problem's own (a replayed counterexample's start), else zero; a complex, NaN or
    inf ``x0`` is bad input, refused here rather than reported as divergence."""
    if x0 is None:
        return xp.zeros((S, d), dtype=dt)
    x0 = check_finite("the initial model x0", to_numpy(x0)).astype(dt)
    if x0.shape not in ((d,), (S, d)):
        raise AssumptionError(f"x0 must have shape ({d},) or ({S}, {d}), got {x0.shape}")
    return xp.asarray(np.broadcast_to(x0, (S, d)).copy())


def check_draws(draws: Any, shape: tuple, *, counts: bool = False) -> np.ndarray:
    """Explicit participation draws ``(S, R, N)``: booleans or 0/1 numbers (a participation
    mask), or, for a model that samples with replacement (``counts``), integers >= 0.

    A float such as 0.5 is refused naming its entry: a mask is read as ``draw > 0``, so 0.5
    would silently count as full participation.

    Raises
    ------
    AssumptionError
        Another shape, a non-real dtype, or an entry that is not 0/1 (an integer >= 0).
    """
    arr = as_real_array("draws", draws, dtype=None)
    if arr.shape != shape:
        raise AssumptionError(
            f"draws must have shape (seeds, rounds, clients) = {shape}, got {arr.shape}"
        )
    if arr.dtype == bool:
        return arr
    bad = (
        ~np.isfinite(arr) | (arr < 0) | (arr != np.round(arr) if counts else ~np.isin(arr, (0, 1)))
    )
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        want = "an integer count >= 0 (draws with replacement)" if counts else "0 or 1 (or bool)"
        raise AssumptionError(f"draws{list(idx)} is {arr[idx].item()!r}: each entry must be {want}")
    return arr if counts else arr.astype(bool)


#: Blocks of fewer seeds than this evaluate the metrics that can wait on about this many stacked
#: seed-rounds at once (see :class:`_Recorder`); larger blocks evaluate them every round.
RECORD_ROWS = 64
#: ... and keep at most about this many bytes of (seeds, N, d) client arrays per state field
#: for it: past that, stacking copies more than it saves (N = 10,000, d = 20: 3 seeds x 21
#: rounds stacked took half of a run's time), and the metrics are evaluated every round.
RECORD_BYTES = 4 * 1024 * 1024
#: The runner's own metrics (they read the server model ``x`` alone) wait for about this many
#: stacked seed-rounds of ``x`` (within :data:`RECORD_BYTES`), whatever the block, so a block
#: that donates its state still stacks them: small blocks save the array calls of every round;
#: large ones gain nothing and lose nothing (FedAvg at 600 seeds of figure4_problem: 1.83-1.88
#: ms per seed-run whether f - f* and ||grad f||^2 waited for 1 or 4096 seed-rounds).
SERVER_ROWS = 4096


@dataclass
class _Recorder:
    """Writes a round's metrics into the (S, R + 1) arrays and flags diverging seeds.

    The divergence score is ``error`` when x* is known, else ``grad_norm2`` when it is
    recorded; a non-finite server model always counts as divergence.

    The score and a caller's own metrics are evaluated every recorded round. With fewer than
    :data:`RECORD_ROWS` seeds (and client arrays of at most :data:`RECORD_BYTES` stacked), the
    runner's and the algorithm's other metrics wait: the states of ``RECORD_ROWS // S`` recorded
    rounds are kept (then no round writes into a kept state: ``keeps_states``) and the metrics
    are evaluated once on them stacked along the seed axis, ``(rounds * S, ...)``. Otherwise the
    runner's other metrics, which read the server model alone, wait for :data:`SERVER_ROWS`
    stacked seed-rounds of it (:class:`ServerModel`), and the algorithm's are evaluated every
    recorded round.
    Metrics are functions of each seed's own rows, so these are the same numbers (up to the last
    bit of a BLAS product of a different size) for a few array operations per chunk instead of
    per round, which is most of a round's cost for one seed. Diverged seeds are NaN from their
    divergence on, as for the others.
    """

    plan: RunPlan
    values: dict = field(init=False)
    diverged: np.ndarray = field(init=False)
    diverged_at: np.ndarray = field(init=False)
    base: np.ndarray | None = None

    def __post_init__(self) -> None:
        plan = self.plan
        S, R = plan.x0.shape[0], plan.rounds
        dt = np.dtype(plan.x0.dtype)  # a float32 run keeps float32 metrics
        self.values = {k: np.full((S, R + 1), np.nan, dtype=dt) for k in plan.available}
        self.diverged = np.zeros(S, dtype=bool)
        self.diverged_at = np.full(S, -1, dtype=np.int64)
        self.diverging = np.zeros(S, dtype=bool)
        self.diverging_at = np.full(S, -1, dtype=np.int64)
        # the scores of the last recorded rounds of the divergence window, a ring of rows (inf:
        # not yet recorded, never the smallest)
        self._window = np.full((-(-plan.divergence_window // plan.record_every), S), np.inf)
        self._slot = 0
        self._known = plan.problem.x_star is not None
        score = "error" if self._known else "grad_norm2"
        runner = list(RUNNER_METRICS.values())
        mine = list((plan.algorithm.metrics or {}).values())
        waits = lambda f, kinds: any(f is g for g in kinds)  # noqa: E731
        row = plan.x0.shape[1] * plan.x0.dtype.itemsize
        per_round = S * int(plan.problem.n_clients) * row
        state_chunk = min(RECORD_ROWS // S, RECORD_BYTES // per_round)
        later = {k: f for k, f in plan.recorded.items() if k != score}
        if state_chunk > 1 and any(waits(f, mine) for f in later.values()):
            # small blocks: whole states wait, for the algorithm's metrics and the runner's
            self._chunk = state_chunk
            self._later = {k: f for k, f in later.items() if waits(f, runner + mine)}
        else:
            # the runner's metrics read the server model alone: only it waits, for any block
            self._chunk = min(SERVER_ROWS // S, RECORD_BYTES // (S * row))
            self._later = {k: f for k, f in later.items() if waits(f, runner)}
        if self._chunk <= 1:
            self._later = {}
        self._now = {k: f for k, f in plan.recorded.items() if k not in self._later}
        #: Whether whole states are kept across rounds (for the stacked metrics of an
        #: algorithm): then no round may write into an earlier state's arrays. The runner's
        #: metrics read the server model alone, which is all that is kept for them.
        self.keeps_states = any(not waits(f, runner) for f in self._later.values())
        self._rounds: list[int] = []
        self._states: list = []

    def __call__(self, r: int, state: Any) -> None:
        plan = self.plan
        for name, metric in self._now.items():
            self.values[name][:, r] = to_numpy(metric(state, plan.problem))
        if self._known:
            if "error" not in plan.recorded:
                self.values["error"][:, r] = to_numpy(RUNNER_METRICS["error"](state, plan.problem))
            score = self.values["error"][:, r]
        elif "grad_norm2" in plan.recorded:
            score = self.values["grad_norm2"][:, r]
        else:
            score = np.zeros(self.diverged.shape)
        if self.base is None:
            self.base = np.maximum(score, 1.0)
        self._growth(r, score)
        bad = ~np.isfinite(score) | (score > plan.divergence_bound * self.base)
        if not self._known:
            bad |= ~np.isfinite(to_numpy(state.x)).all(axis=-1)
        new = bad & ~self.diverged
        if new.any():
            self.diverged[new] = True
            self.diverged_at[new] = r
        if self.diverged.any():  # a diverged seed's metrics stay NaN from its divergence on
            for name in self._now:
                self.values[name][self.diverged, r] = np.nan
            if "error" not in self._now:
                self.values["error"][self.diverged, r] = np.nan
        if self._later:
            self._rounds.append(r)
            self._states.append(state if self.keeps_states else ServerModel(state.x))
            if len(self._rounds) == self._chunk:
                self.flush()

    def _growth(self, r: int, score: np.ndarray) -> None:
        """Flag the seeds whose score is at least ``divergence_growth`` times its smallest value
        over the ``divergence_window`` rounds before ``r`` (the last ceil(window /
        record_every) recorded rounds) and above its initial value (the divergence ceiling's
        ``base``); then keep ``score`` in the window. A few array operations per round: the
        run's loop is already inside ``np.errstate(all="ignore")``."""
        growth = self.plan.divergence_growth
        if growth != math.inf:
            grew = score >= growth * self._window.min(axis=0)
            if grew.any():
                new = grew & (score > self.base) & ~self.diverging & ~self.diverged
                self.diverging[new] = True
                self.diverging_at[new] = r
            self._window[self._slot] = score
            self._slot = (self._slot + 1) % self._window.shape[0]
        self._last = score

    def finish(self) -> None:
        """After the last round: a seed flagged as diverging whose error came back to its
        initial value or below by the end was a transient, not a divergence; unflag it."""
        back = self.diverging & ~(self._last > self.base)
        self.diverging[back] = False
        self.diverging_at[back] = -1

    def flush(self) -> None:
        """Evaluate the waiting metrics on the kept states, stacked along the seed axis."""
        if not self._rounds:
            return
        rounds = np.asarray(self._rounds)
        k, S = len(rounds), self.diverged.shape[0]
        stacked = _stack_seeds(self._states, S)
        gone = (self.diverged_at[:, None] >= 0) & (self.diverged_at[:, None] <= rounds[None, :])
        for name, metric in self._later.items():
            v = to_numpy(metric(stacked, self.plan.problem)).reshape(k, S).T
            self.values[name][:, rounds] = np.where(gone, np.nan, v)
        self._rounds, self._states = [], []


class ServerModel(NamedTuple):
    """The part of a state the runner's metrics read (:data:`RUNNER_METRICS`): the server
    model ``x (S, d)``, kept for the stacked metrics instead of the whole state."""

    x: Any


def _stack_seeds(states: list, S: int) -> Any:
    """States of several rounds as one state of ``len(states) * S`` seeds: every array whose
    leading axis is the seed axis concatenated (round-major), NamedTuples recursively, anything
    else taken from the last state."""
    last = states[-1]
    if isinstance(last, tuple):
        return type(last)(*[_stack_seeds(list(f), S) for f in zip(*states, strict=True)])
    if getattr(last, "ndim", 0) == 0 or last.shape[0] != S:
        return last
    return get_namespace(last).concatenate(states, axis=0)


#: Participant layouts are prepared for about this many (round, seed, client) entries of the
#: masks at once (:class:`_RoundDraws`).
LAYOUT_CHUNK = 1 << 20


class _RoundDraws:
    """Every round's :class:`RoundDraw`, moved to the run's namespace once (round-major
    copies, so round r is one contiguous slice) rather than once per round; for an algorithm
    that reads participant layouts (:attr:`~fedtheory.algorithms.base.Algorithm.uses_layout`)
    under partial participation, with ``layout`` prepared for a chunk of rounds at a time
    (:func:`~fedtheory.algorithms.base.participants_of_rounds`: a few slices per round instead
    of a dozen array operations)."""

    def __init__(self, plan: RunPlan) -> None:
        xp = self.xp = plan.xp
        masks = np.ascontiguousarray(np.moveaxis(plan.masks, 1, 0))  # (R, S, N)
        self.on = xp.asarray(masks > 0)
        self.weights = xp.asarray(np.ascontiguousarray(np.moveaxis(plan.weights, 1, 0)))
        self.counts = xp.asarray(masks) if masks.dtype.kind in "iu" else None
        self.steps = None
        if plan.step_masks is not None:
            self.steps = xp.asarray(np.ascontiguousarray(np.moveaxis(plan.step_masks, 1, 0)))
        partial = not bool((masks > 0).all())
        self.layouts = plan.algorithm.uses_layout and partial
        self.compress = compressible(plan.problem)
        R, S, N = masks.shape
        self.chunk = max(1, LAYOUT_CHUNK // max(1, S * N))
        self._first, self._ready = 0, []

    def __getitem__(self, r: int) -> RoundDraw:
        layout = None
        if self.layouts:
            if not self._first <= r < self._first + len(self._ready):
                self._first = r
                self._ready = participants_of_rounds(
                    self.on[r : r + self.chunk], compress=self.compress
                )
            layout = self._ready[r - self._first]
        return RoundDraw(
            mask=self.on[r],
            weights=self.weights[r],
            r=r,
            step_masks=None if self.steps is None else self.steps[r],
            counts=None if self.counts is None else self.counts[r],
            layout=layout,
        )


def run_rounds(plan: RunPlan, *, progress: bool = False) -> tuple[Any, _Recorder, Any, float]:
    """The round loop: ``(final state, recorder, time-average sum of x or None, seconds)``.

    NumPy's BLAS runs on one thread here (threadpoolctl, as the exact oracle does): a round is
    many small products and memory-bound reductions, which two OpenBLAS threads on a loaded
    2-core machine made up to 100x slower (the consensus metric's sums over N = 1600 clients:
    0.3-1.4 s a call against 2-19 ms on one thread), and a run's cores are used by its seed
    blocks in worker processes instead.
    """
    with threadpool_limits(limits=1, user_api="blas"):
        return _run_rounds(plan, progress)


def _run_rounds(plan: RunPlan, progress: bool) -> tuple[Any, _Recorder, Any, float]:
    xp, algorithm, problem, R = plan.xp, plan.algorithm, plan.problem, plan.rounds
    state = algorithm.start(problem, plan.x0, plan.recorded)
    record = _Recorder(plan)
    with np.errstate(all="ignore"):
        record(0, state)
    x_sum = xp.zeros_like(plan.x0) if plan.average_from is not None else None
    t0 = time.perf_counter()
    draws = _RoundDraws(plan)
    # The state is given away to a round that can reuse it (Algorithm.donates) unless the
    # recorder keeps earlier states for its stacked metrics; a diverged seed's freeze needs
    # the previous state, so those rounds do not donate.
    donate = algorithm.donates and not record.keeps_states
    with np.errstate(all="ignore"):  # a diverging seed overflows; it is flagged, not raised
        for r in progress_bar(range(R), desc=algorithm.name, unit="round", disable=not progress):
            if donate and not record.diverged.any():
                # nothing keeps this state: the round may write into its client arrays
                new_state = algorithm.round(state, problem, draws[r], plan.rng, donate=True)
            else:
                new_state = algorithm.round(state, problem, draws[r], plan.rng)
            if record.diverged.any():  # freeze diverged seeds at their last finite state
                keep = xp.asarray(record.diverged)
                new_state = type(new_state)(
                    *[_freeze(a, b, keep) for a, b in zip(new_state, state, strict=True)]
                )
            state = new_state
            if x_sum is not None and r + 1 >= plan.average_from:
                x_sum = x_sum + state.x
            if (r + 1) % plan.record_every == 0 or r + 1 == R:
                record(r + 1, state)
        record.flush()
        record.finish()
    return state, record, x_sum, time.perf_counter() - t0


def simulate(
    problem: Any,
    algorithm: Algorithm | str,
    participation: Any = None,
    *,
    rounds: int,
    seeds: int = _D["seeds"],
    seed: int = _D["seed"],
    seed_ids: Sequence[int] | None = _D["seed_ids"],
    x0: Any = _D["x0"],
    clients_per_round: int | None = _D["clients_per_round"],
    probabilities: Any = _D["probabilities"],
    aggregation: str = _D["aggregation"],
    draws: Any = _D["draws"],
    backend: str | None = _D["backend"],
    dtype: Any = None,
    divergence_bound: float = _D["divergence_bound"],
    divergence_growth: float = _D["divergence_growth"],
    divergence_window: int = _D["divergence_window"],
    average_from: int | None = _D["average_from"],
    record_every: int = _D["record_every"],
    metrics: Sequence[str] | Mapping[str, Metric] | None = _D["metrics"],
    seed_block: int | None = _D["seed_block"],
    workers: int | None = _D["workers"],
    progress: bool = _D["progress"],
    **config: Any,
) -> SimulationResult:
    """Run ``algorithm`` on ``problem`` for ``rounds`` rounds and ``seeds`` seeds at once.

    Parameters
    ----------
    problem : Problem
    algorithm : Algorithm or str
        An :class:`Algorithm` or a registry name; then ``config`` keywords build it (``lr``,
        ``local_steps``, ``global_lr``, ... and the algorithm's declared options, e.g.
        ``cutoff`` for FedAU; an unknown keyword is an error listing the valid ones).
    participation : ParticipationModel, name, or None (full participation)
        A :class:`fedtheory.participation.ParticipationModel`, or a registered name built with
        ``clients_per_round`` and ``probabilities`` (and, for ``cluster``, ``clusters``):
        :meth:`fedtheory.simulation.spec.RunSpec.participation_model`.
    rounds, seeds, seed : int
        ``seed`` >= 0 is the root seed.
    seed_ids : list of int, optional
        Which seeds of the root ``seed`` to run (default ``0..seeds-1``; each in
        ``[0, 2**63 - 1]``).
    x0 : array (d,) or (S, d), optional
        Initial server model (default: the problem's own ``x0`` where it has one, as a
        replayed counterexample does, else zero); real and finite.
    clients_per_round, probabilities : optional
        M (per cluster for ``cluster``) and p; only with a participation model name (an
        error otherwise). Their earlier names ``participation_m`` and ``participation_p`` are
        accepted with a DeprecationWarning. Without ``probabilities``, ``weighted``
        participation takes the problem's own draw weights where it carries them (the Figure 4
        problem); the result's ``config["probabilities_from"]`` says which (``"given"``,
        ``"problem"``). The other participation settings (``empty``, ``replace``,
        ``markov_a``, ``markov_b``, ``start``; :mod:`fedtheory.simulation.settings`) are
        keywords too.
    aggregation : {"mean", "weighted", "unbiased"}
        The participation module's aggregation rule for the weights w.
    draws : array (S, R, N), optional
        Explicit participation masks, bool or 0/1 (integer counts >= 0 for a model that draws
        with replacement); overrides the model's draws; weights still by ``aggregation`` over
        the model.
    backend : "numpy", "cupy" or "strict", optional
        None reads ``FEDTHEORY_BACKEND``. ``"strict"`` (:mod:`fedtheory._strict`) runs the CuPy
        path on the CPU (one seed block, no worker processes, as on a GPU) and gives NumPy's
        numbers bit for bit when the seeds fit in one NumPy block.
    dtype : float64 (default) or float32
    divergence_bound : float
        A seed is flagged as diverged once ||x_r - x*|| (or ||grad f||^2 without x*) exceeds
        ``divergence_bound`` times max(1, its initial value), or turns non-finite; it is then
        frozen (its metrics NaN from there on).
    divergence_growth, divergence_window : float, int
        A seed is flagged as diverging (``diverging``, ``diverging_at``; it keeps running) at
        the first round where its error is at least ``divergence_growth`` times its smallest
        value over the ``divergence_window`` rounds before and above max(1, its initial value),
        unless its error is back at or below that by the last round (a transient).
        ``divergence_growth=math.inf`` turns this off.
    average_from : int, optional
        Also return the time average of x_r over rounds average_from..R (``x_mean``).
    record_every : int
        Record the metrics every this many rounds (and at the last round); skipped rounds
        hold NaN.
    metrics : sequence of str, mapping of str to callable, "all", or None
        Which metrics to record: None (``error``, a few operations on the server models, or
        ``grad_norm2`` where x* is unknown), ``"all"`` (every metric the problem allows: also
        ``f_minus_f_star``, ``grad_norm2`` and the algorithm's own, ``consensus`` and FOCUS's
        ``tracking_residual``, which read every client's row; see
        :mod:`fedtheory.simulation.metrics`), names among those, or a mapping ``name ->
        metric(state, problem)`` of exactly the metrics wanted (a caller's own, e.g. test
        accuracy). A metric not recorded is NaN. The divergence check always runs (on
        ``error``, or ``grad_norm2`` when x* is unknown and it is recorded).
    seed_block : int, optional
        Run the seeds in blocks of at most this many, one block after the other (cache
        blocking; each block is still one batched computation). Default: all seeds at once on
        a GPU; on NumPy, :func:`default_seed_block`: blocks whose (block, N, d) client arrays
        stay near :data:`BLOCK_BYTES` (2 MiB) where that leaves 16 seeds or more, which
        shares a round's fixed cost among up to 327 seeds on figure4_problem (1.1-1.3x faster
        than 122, under uniform 4-of-16 participation); for many clients, blocks
        sized by the participants' rows and the held state; the default blocks are an even
        number (balanced over two or four worker processes). A seed's numbers depend
        only on its block (its size, and the participants of its block, whose count sets the
        rows of the per-client products): BLAS may round a product of a different size
        differently in the last bit.
    workers : int or None
        Run the seed blocks in this many forked processes at once (None: one per core this
        process may use, :func:`~fedtheory.validation.available_cores`; never more than the
        blocks nor two per core, :func:`~fedtheory.validation.worker_count`). The blocks are the same
        as with one process, so are the numbers, bit for bit; only the wall time changes (1.6-1.7x
        on two cores at 1000 seeds of figure4_problem, benchmarks/bench_simulator.py). A run
        of one block, a GPU backend, a platform without ``fork`` and a process that may not
        have children (a daemon, e.g. a Dask worker) run in this process.
    progress : bool
        A progress bar over rounds on stderr (silent when stderr is not a terminal); over
        blocks when they run in worker processes.

    Returns
    -------
    SimulationResult

    Raises
    ------
    AssumptionError
        A bad count, step size, shape, metric name, or participation argument; a complex or
        non-finite ``x0``; a seed id beyond int64; draws that are not 0/1.
    TypeError
        An unknown configuration keyword (the message lists the valid ones).
    """
    # every keyword of the signature (the table's settings; simulate's own: seed_block,
    # workers, progress) and the algorithm's settings in ``config``
    given = {k: v for k, v in locals().items() if k not in _NOT_RUN_SETTINGS}
    spec, config = RunSpec.split(
        {**given, **config},
        reads=info(algorithm).accepted() if isinstance(algorithm, str) else None,
    )
    n_seeds = check_int("the number of seeds", seeds, minimum=1)
    if seed_ids is not None:
        seed_ids = [
            check_int(f"seed_ids[{k}]", i, minimum=0, maximum=MAX_SEED_ID)
            for k, i in enumerate(seed_ids)
        ]
        if not seed_ids:
            raise AssumptionError("seed_ids is empty: give at least one seed id")
        first = {}
        for k, i in enumerate(seed_ids):
            if i in first:
                raise AssumptionError(
                    f"seed_ids[{first[i]}] and seed_ids[{k}] are both {i}: each seed id names one "
                    "random stream, and a repeat would count one run twice in every statistic"
                )
            first[i] = k
        n_seeds = len(seed_ids)
    check_problem(problem)
    N, d = int(problem.n_clients), int(problem.dim)
    itemsize = resolve_dtype(dtype).itemsize
    # The participation model, built once from the flat settings: it sizes the blocks and every
    # block's plan draws from it.
    built = spec.build_participation(problem)
    part = built.model
    spec = replace(spec, participation=part, **dict.fromkeys(PARTICIPATION_SETTINGS))
    default_block = seed_block is None
    if seed_block is None:
        on_gpu = get_backend(backend) is not np
        if on_gpu:
            seed_block = n_seeds
        else:
            seed_block = default_seed_block(N, d, itemsize, _per_round(part, N))
    seed_block = check_int("seed_block", seed_block, minimum=1)
    workers = worker_count(available_cores() if workers is None else workers)
    check_run_memory(
        seeds=n_seeds,
        rounds=check_int("the number of rounds R", rounds, minimum=0),
        n_clients=N,
        dim=d,
        itemsize=itemsize,
        block=seed_block,
        workers=workers,
    )
    ids = list(range(n_seeds)) if seed_ids is None else seed_ids
    if len(ids) <= seed_block:
        plan = plan_run(problem, algorithm, replace(spec, seeds=len(ids), seed_ids=ids), **config)
        return _said(_result(plan, *run_rounds(plan, progress=progress)), built)
    n_blocks = -(-len(ids) // seed_block)
    if default_block and n_blocks % 2:
        # an even number of default blocks: two (or four) worker processes get equal shares
        # (1000 seeds of figure4: 6 blocks of 167 ran 1.14x faster on two workers than 5 of
        # 200); a function of the run alone, never of ``workers``, so the bits do not change
        n_blocks += 1
    bounds = np.linspace(0, len(ids), n_blocks + 1).round().astype(int)  # balanced blocks
    job = _Blocks(problem, algorithm, ids, bounds, spec, config)
    if workers > 1 and get_backend(backend) is np:  # a GPU context does not survive fork
        parts = fork_all(
            job.run, range(n_blocks), workers=workers, progress=progress, desc="seed blocks"
        )
        return _said(_concatenate(parts), built)
    return _said(_concatenate([job.run(k, progress) for k in range(n_blocks)]), built)


def _said(result: SimulationResult, built: Any) -> SimulationResult:
    """The result with where its participation probabilities came from in its configuration
    (``probabilities_from``: ``"given"`` or ``"problem"``; absent when the model reads none)."""
    if built.probabilities_from is not None:
        result.config["probabilities_from"] = built.probabilities_from
    return result


@dataclass
class _Blocks:
    """The seed blocks of one :func:`simulate` call: block k is seeds ``ids[bounds[k]:bounds[k +
    1]]``, run by :meth:`run` in this process or in forked ones
    (:func:`~fedtheory.parallel.fork_all`: the children inherit the job, whose algorithm holds
    closures that do not pickle)."""

    problem: Any
    algorithm: Any
    ids: list
    bounds: np.ndarray
    spec: RunSpec
    config: dict

    def run(self, k: int, progress: bool = False) -> SimulationResult:
        a, b = int(self.bounds[k]), int(self.bounds[k + 1])
        x0, draws = self.spec.x0, self.spec.draws
        block = replace(
            self.spec,
            seeds=b - a,
            seed_ids=self.ids[a:b],
            x0=x0 if x0 is None or np.ndim(x0) == 1 else np.asarray(x0)[a:b],
            draws=None if draws is None else np.asarray(draws)[a:b],
        )
        plan = plan_run(self.problem, self.algorithm, block, **self.config)
        return _result(plan, *run_rounds(plan, progress=progress))


def _result(
    plan: RunPlan, state: Any, record: _Recorder, x_sum: Any, wall: float
) -> SimulationResult:
    """A run's :class:`SimulationResult` from its plan and its loop's output."""
    algorithm = plan.algorithm
    n_avg = 0 if plan.average_from is None else max(plan.rounds - max(plan.average_from, 1) + 1, 0)
    x_star = plan.problem.x_star
    return SimulationResult(
        algorithm=algorithm.name,
        participation=type(plan.model).__name__,
        rounds=plan.rounds,
        seeds=len(plan.seed_ids),
        seed=plan.seed,
        seed_ids=plan.seed_ids,
        metrics=RecordedMetrics(
            {k: record.values[k] for k in plan.recorded}, available=list(plan.available)
        ),
        diverged=record.diverged,
        diverged_at=record.diverged_at,
        x_final=to_numpy(state.x),
        x_star=None if x_star is None else np.asarray(x_star, dtype=np.float64),
        x_mean=None if x_sum is None else to_numpy(x_sum / max(n_avg, 1)),
        wall_time=wall,
        config={
            **algorithm.config.to_dict(),
            "aggregation": plan.aggregation,
            "divergence_growth": plan.divergence_growth,
            "divergence_window": plan.divergence_window,
            "record_every": plan.record_every,
            "recorded_metrics": list(plan.recorded),
            "problem": getattr(plan.problem, "name", None) or type(plan.problem).__name__,
            "participation_model": plan.model.describe(),
        },
        diverging=record.diverging,
        diverging_at=record.diverging_at,
        dtype=np.dtype(plan.x0.dtype).name,
    )


def _concatenate(parts: list) -> SimulationResult:
    """One result from the results of consecutive seed blocks (same run otherwise)."""
    first = parts[0]
    cat = lambda get: np.concatenate([get(p) for p in parts])  # noqa: E731
    return SimulationResult(
        algorithm=first.algorithm,
        participation=first.participation,
        rounds=first.rounds,
        seeds=sum(p.seeds for p in parts),
        seed=first.seed,
        seed_ids=[i for p in parts for i in p.seed_ids],
        metrics=RecordedMetrics(
            {k: cat(lambda p, k=k: p.metrics[k]) for k in first.metrics},
            available=first.metrics.available,
        ),
        diverged=cat(lambda p: p.diverged),
        diverged_at=cat(lambda p: p.diverged_at),
        diverging=cat(lambda p: p.diverging),
        diverging_at=cat(lambda p: p.diverging_at),
        x_final=cat(lambda p: p.x_final),
        x_star=first.x_star,
        x_mean=None if first.x_mean is None else cat(lambda p: p.x_mean),
        wall_time=sum(p.wall_time for p in parts),
        config=first.config,
        dtype=first.dtype,
    )


def _freeze(new: Any, old: Any, keep: Any) -> Any:
    """Keep ``old`` on the seeds flagged in ``keep`` (leading axis); recurse into NamedTuples."""
    if isinstance(new, tuple):
        return type(new)(*[_freeze(a, b, keep) for a, b in zip(new, old, strict=True)])
    if getattr(new, "ndim", 0) == 0 or new.shape[0] != keep.shape[0]:
        return new
    k = keep.reshape((-1,) + (1,) * (new.ndim - 1))
    return get_namespace(new).where(k, old, new)
