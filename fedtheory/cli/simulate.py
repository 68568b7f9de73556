"""``fedtheory simulate``: run a federated algorithm on a problem with a known answer.

Contract (other tools rely on it)::

    fedtheory simulate (--problem-file F.npz | --problem NAME) --algorithm NAME
        --participation full|uniform|weighted|bernoulli|markov|cluster [--clients-per-round M]
        [--probabilities p.npy] --rounds R --local-steps K --lr ETA [--seeds S] [--seed SEED]
        --json OUT.json

writes a JSON object with at least ``algorithm``, ``rounds``, ``x_star`` (list), ``error``
(per seed, rounds 0..R of ||x_r - x*|| / ||x*||, server model, x_0 = 0 or an interpolation
file's x0) and ``x_final``
(per seed); non-finite numbers (a diverged seed) are ``null``. ``--json -`` prints the JSON to
stdout; without ``--json`` a short summary is printed. ``--list`` prints the algorithms, problems
and participation models.
"""

from __future__ import annotations

import argparse
import io
import sys
from typing import Any

import numpy as np

from fedtheory.algorithms import available, info
from fedtheory.algorithms.registry import BASE_SETTINGS, SHARED_SETTINGS, installed
from fedtheory.analysis.rates import fit_linear_rate
from fedtheory.cli.common import (
    add_algorithm,
    add_json,
    add_max_memory,
    add_parser,
    add_settings,
    algorithm_options,
    given_settings,
    human_stream,
    json_to_stdout,
    require_settings,
)
from fedtheory.errors import AssumptionError, FedTheoryError
from fedtheory.io import check_output_path, dumps, emit_json, write_atomic
from fedtheory.participation import model_info, model_names
from fedtheory.problems import BUILTIN_PROBLEMS, make_problem
from fedtheory.simulation import simulate
from fedtheory.simulation.settings import SETTINGS, readers
from fedtheory.simulation.spec import PARTICIPATION_SETTINGS
from fedtheory.validation import available_cores, check_int

#: The quantiles of the per-seed final error in the summary of ``--json FILE`` / ``--out``.
QUANTILES = ("min", "25%", "median", "75%", "max")


#: The run settings ``fedtheory simulate`` takes (their flags:
#: :data:`~fedtheory.simulation.settings.SETTINGS`): participation, the algorithm's shared
#: settings besides lr and K (passed only when given: the registry's list), the run's.
PARTICIPATION = ("participation", *(k for k in PARTICIPATION_SETTINGS if k != "trace"))
ALGORITHM_SETTINGS = tuple(
    k for k in SHARED_SETTINGS if k not in (*BASE_SETTINGS, *PARTICIPATION_SETTINGS)
)
RUN = ("record_every", "metrics", "seeds", "seed", "workers", "backend", "float32")
#: Its own flags, which are no run setting.
OWN_FLAGS = ("fail_on_divergence", "max_memory", "json", "out", "list")


def register(subparsers: Any) -> None:
    p = add_parser(
        subparsers,
        "simulate",
        help="run a federated algorithm (batched over seeds) and write the error curves as JSON",
        description=(
            "Simulate a federated algorithm on a least-squares problem from an .npz file "
            "(A (N, n, d), b (N, n), optional lam), on a counterexample's interpolation file "
            "(kind 'interpolation': it replays the worst case from its x0), or on a built-in "
            "problem, under a participation model, for many seeds at once. Writes per-seed "
            "relative errors ||x_r - x*|| / ||x*|| (x_0 = 0, or the interpolation file's x0) and "
            "the final models as JSON. A setting the algorithm does not read is refused (see "
            "--list for what each algorithm accepts)."
        ),
        examples=[
            "fedtheory simulate --problem figure4 --algorithm FOCUS --participation uniform "
            "-M 4 -R 500 -K 3 --lr 1.5e-4 --seeds 100 --json focus.json",
            "fedtheory simulate --problem-file my.npz --algorithm fedau --option cutoff=5 "
            "--participation weighted -M 2 --probabilities p.npy -R 200 -K 2 --lr 0.01",
            "fedtheory simulate --problem figure4 --algorithm docs/examples/fednova.py:fednova "
            "--participation uniform -M 4 -R 300 -K 3 --lr 1.5e-4",
            "fedtheory simulate --list",
        ],
    )
    src = p.add_mutually_exclusive_group()
    add_settings(src, "problem_file", "problem")
    alg = p.add_argument_group("algorithm settings (only those the algorithm reads; see --list)")
    add_algorithm(p, options_group=alg)
    add_settings(p, *PARTICIPATION, "aggregation", "rounds", "local_steps", "lr")
    add_settings(alg, *ALGORITHM_SETTINGS)
    add_settings(p, *RUN, workers=available_cores())
    p.add_argument(
        "--fail-on-divergence",
        action="store_true",
        help="exit with status 3 when a seed diverged or is diverging (its error grew "
        "10x within 50 rounds to above its start; default: report it, exit 0)",
    )
    add_max_memory(p)
    add_json(p, "the error curves and final models")
    p.add_argument("--out", metavar="OUT.npz", help="also write the arrays as a NumPy .npz")
    p.add_argument("--list", action="store_true", help="list algorithms, problems, participation")
    p.set_defaults(func=run)


def _listing() -> str:
    lines = ["algorithms (settings they read; options with their defaults):"]
    for name, desc in available().items():
        a = info(name)
        opts = ", ".join(f"{o.name}={o.default!r}" for o in a.options)
        lines.append(f"  {name:14s} {desc}")
        lines.append(
            f"  {'':14s}   reads {', '.join(a.settings)}" + (f"; options {opts}" if opts else "")
        )
    lines.append("  your own: --algorithm FILE.py:NAME or MODULE:NAME (docs/own-algorithm.md)")
    lines += [
        f"  {k:14s} installed: {v} (entry point, loaded when named)" for k, v in installed().items()
    ]
    lines.append(
        "problems (--problem; a user's data: --problem-file F.npz with A, b, lam, or a "
        "counterexample's interpolation file):"
    )
    lines += [f"  {k:14s} {v}" for k, v in BUILTIN_PROBLEMS.items()]
    lines.append("participation (--participation):")
    lines += [f"  {k:14s} {model_info(k).description}" for k in model_names(settings_only=True)]
    lines.append("settings that only some algorithms or models read (who reads each):")
    for name in (*PARTICIPATION[1:], *ALGORITHM_SETTINGS):
        lines.append(f"  {SETTINGS[name].flags[0]:20s} {', '.join(readers(name))}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if args.list:
        print(_listing())
        return 0
    require_settings(args, "algorithm", "rounds", "local_steps", "lr")
    check_int("--rounds R", args.rounds, minimum=1)  # a run of no round computes nothing
    if args.out is not None:
        check_output_path(args.out)
    if args.problem_file is None and args.problem is None:
        raise FedTheoryError("give a problem: --problem-file F.npz or --problem NAME (see --list)")
    dtype = np.float32 if args.float32 else None
    problem = make_problem(args.problem, path=args.problem_file, seed=args.seed, dtype=dtype)
    settings = given_settings(args, (*PARTICIPATION[1:], *ALGORITHM_SETTINGS))
    res = simulate(
        problem,
        args.algorithm,
        args.participation,
        rounds=args.rounds,
        seeds=args.seeds,
        seed=args.seed,
        aggregation=args.aggregation,
        backend=args.backend,
        dtype=dtype,
        lr=args.lr,
        local_steps=args.local_steps,
        record_every=args.record_every,
        metrics=args.metrics,
        workers=args.workers,
        progress=True,
        **settings,
        **algorithm_options(args),
    )
    out = {
        "algorithm": res.algorithm,
        "problem": args.problem_file or args.problem,
        "participation": args.participation,
        "clients_per_round": args.clients_per_round,
        "probabilities_from": res.config.get("probabilities_from"),
        "aggregation": args.aggregation,
        "rounds": res.rounds,
        "local_steps": args.local_steps,
        "lr": args.lr,
        "global_lr": res.config["global_lr"],
        "settings": res.config,
        "seeds": res.seeds,
        "seed": res.seed,
        "n_clients": problem.n_clients,
        "dim": problem.dim,
        "x_star": None if res.x_star is None else res.x_star.tolist(),
        "diverged": res.diverged,
        "diverged_at": res.diverged_at,
        "diverging": res.diverging,
        "diverging_at": res.diverging_at,
        "final_error": res.error[:, -1],
        "recorded_rounds": res.recorded_rounds,
        "x_final": res.x_final,
        "wall_time_s": res.wall_time,
    }
    # Every recorded metric, under its one name (Python, JSON and the sweep store alike).
    out.update(res.metrics)  # one vocabulary: the metrics' own names
    if args.json is not None:  # compact in a file (large arrays), as everywhere on stdout
        emit_json(out, args.json, indent=False)
    if args.out is not None:
        write_npz(args.out, out)
    if not json_to_stdout(args):
        paths = [p for p in (args.json, args.out) if p is not None]
        print(summary(res, out, paths), file=human_stream(args))
    diverged = res.divergence_summary()
    if diverged:
        tail = "; a diverged seed's curve is null from there on" if res.diverged.any() else ""
        print(f"fedtheory: warning: {diverged}{tail}", file=sys.stderr)
        if args.fail_on_divergence:
            return 3
    return 0


def write_npz(path: str, out: dict) -> None:
    """The result dict as a NumPy ``.npz`` archive, written atomically: every array and number
    under its JSON key (NaN stays NaN), strings as 0-d string arrays, nested dicts (the settings)
    as their JSON text, ``None`` values left out; ``np.load(path)`` reads it without pickle."""
    arrays = {
        k: np.asarray(dumps(v) if isinstance(v, dict) else v)
        for k, v in out.items()
        if v is not None
    }
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    write_atomic(path, buf.getvalue())


def summary(res: Any, out: dict, paths: list[str]) -> str:
    """A few lines for a person: the run, the quantiles of the per-seed final relative error,
    the geometric rate fitted to the median error curve, how many seeds diverged, what was
    written."""
    n = res.seeds
    said = [f"M = {out['clients_per_round']}"] if out["clients_per_round"] else []
    if out.get("probabilities_from") == "problem":
        said.append(f"p: the problem's own ({out['problem']})")
    elif out.get("probabilities_from") == "given":
        said.append("p: given")
    m = f" ({', '.join(said)})" if said else ""
    lines = [
        f"{res.algorithm} on {out['problem']}: {out['participation']} participation{m}, "
        f"{n} seeds x {res.rounds} rounds, K = {out['local_steps']}, lr = {out['lr']:g} "
        f"({res.wall_time:.2f} s in the round loop)"
    ]
    err = res.error
    ok = ~res.diverged
    if res.x_star is None or not ok.any():
        lines.append(
            "final error ||x_R - x*|| / ||x*||: not available (x* unknown or every seed diverged)"
        )
    else:
        q = np.quantile(err[ok, -1], [0.0, 0.25, 0.5, 0.75, 1.0])
        lines.append(
            "final error ||x_R - x*|| / ||x*|| over seeds: "
            + ", ".join(f"{k} {v:.3e}" for k, v in zip(QUANTILES, q, strict=True))
        )
        k = int(res.config.get("record_every", 1))
        try:  # on the recorded rounds 0, k, 2k, ...: a rate per k rounds, its k-th root per round
            rate = fit_linear_rate(np.median(err[ok], axis=0)[::k])
            lines.append(
                f"fitted linear rate (median curve, rounds {rate.start * k}-{(rate.stop - 1) * k}"
                f"{f', every {k}th' if k > 1 else ''}): rho = {rate.rho ** (1 / k):.6f} per "
                f"round, r^2 = {rate.r2:.4f}, floor {rate.floor:.3e}"
            )
        except AssumptionError as exc:
            lines.append(f"fitted linear rate: none ({exc})")
    growing = int((res.diverging & ~res.diverged).sum())
    lines.append(
        f"diverged: {int(res.diverged.sum())} of {n} seeds"
        + (f"; diverging (error grew 10x, still above its start): {growing}" if growing else "")
    )
    lines += [f"wrote {p}" for p in paths]
    return "\n".join(lines)
