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
from fedtheory.backend import BACKENDS
from fedtheory.cli.common import (
    add_algorithm,
    add_clients_per_round,
    add_json,
    add_max_memory,
    add_parser,
    algorithm_options,
    human_stream,
    json_to_stdout,
    missing,
    name_list,
)
from fedtheory.errors import AssumptionError, FedTheoryError
from fedtheory.io import check_output_path, dumps, emit_json, write_atomic
from fedtheory.participation import load_vector, model_info, model_names
from fedtheory.problems import BUILTIN_PROBLEMS, make_problem
from fedtheory.simulation import simulate
from fedtheory.simulation.spec import run_defaults
from fedtheory.validation import available_cores, check_int

#: The run settings' defaults (:class:`~fedtheory.simulation.spec.RunSpec`'s, as simulate's).
_RUN = run_defaults()

#: The quantiles of the per-seed final error in the summary of ``--json FILE`` / ``--out``.
QUANTILES = ("min", "25%", "median", "75%", "max")


#: The shared algorithm settings besides lr and K, passed only when given (the registry's list).
SETTINGS = tuple(k for k in SHARED_SETTINGS if k not in BASE_SETTINGS)


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
    src.add_argument("--problem-file", metavar="F.npz",
                     help="A (N, n, d), b (N, n), lam; or an interpolation file")  # fmt: skip
    src.add_argument("--problem", choices=sorted(BUILTIN_PROBLEMS), help="a built-in problem")
    alg = p.add_argument_group("algorithm settings (only those the algorithm reads; see --list)")
    add_algorithm(p, options_group=alg)
    p.add_argument("--participation", default=_RUN["participation"] or "full", choices=model_names(settings_only=True),
                   help="participation model")  # fmt: skip
    add_clients_per_round(p, help="clients per round M (per cluster for --participation cluster)")
    p.add_argument("--probabilities", metavar="p.npy", help="participation probabilities p")
    p.add_argument("--aggregation", default=_RUN["aggregation"], choices=("mean", "weighted", "unbiased"),
                   help="aggregation weights of the participants")  # fmt: skip
    p.add_argument("--rounds", "-R", type=int, metavar="R", help="communication rounds")
    p.add_argument("--local-steps", "-K", type=int, metavar="K", help="local steps per round")
    p.add_argument("--lr", type=float, metavar="ETA", help="local step size (FOCUS: its eta)")
    alg.add_argument("--global-lr", type=float, metavar="ETA", help="server step size")
    alg.add_argument("--beta1", type=float, help="adaptive server: first-moment decay")
    alg.add_argument("--beta2", type=float, help="adaptive server: second-moment decay")
    alg.add_argument("--eps", type=float, help="adaptive server: epsilon")
    alg.add_argument("--eps-placement", choices=("inside", "outside"),
                     help="adaptive server: eps inside or outside the square root")  # fmt: skip
    alg.add_argument("--prox-mu", type=float, help="FedProx / FedDyn proximal weight mu")
    alg.add_argument("--topology", help="gossip graph of the gossip algorithms")
    alg.add_argument("--clusters", type=int, metavar="C",
                     help="clusters C (clustered algorithms and --participation cluster)")  # fmt: skip
    p.add_argument("--record-every", type=int, default=_RUN["record_every"], metavar="K",
                   help="record the metrics every K rounds and at the last (the others are "
                   "null; the JSON's recorded_rounds lists them)")  # fmt: skip
    p.add_argument("--metrics", type=name_list, default=None, metavar="A,B,..",
                   help="record these metrics, comma separated, or 'all' (default: error, or "
                   "grad_norm2 where x* is unknown; also f_minus_f_star, grad_norm2 and the "
                   "algorithm's own, e.g. consensus, tracking_residual; the others are null)")  # fmt: skip
    p.add_argument(
        "--seeds", type=int, default=_RUN["seeds"], metavar="S", help="seeds run batched"
    )
    p.add_argument("--seed", type=int, default=_RUN["seed"], metavar="SEED", help="root seed")
    p.add_argument("--workers", type=int, default=available_cores(), metavar="N",
                   help="run the seed blocks in N processes (the cores this process may use; "
                   "the numbers do not depend on N)")  # fmt: skip
    p.add_argument("--backend", choices=BACKENDS, default=None, help="array backend")
    p.add_argument("--float32", action="store_true", help="single precision instead of float64")
    p.add_argument("--fail-on-divergence", action="store_true",
                   help="exit with status 3 when a seed diverged or is diverging (its error grew "
                   "10x within 50 rounds to above its start; default: report it, exit 0)")  # fmt: skip
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
    lines += [f"  {k:14s} installed: {v} (entry point, loaded when named)"
              for k, v in installed().items()]  # fmt: skip
    lines.append("problems (--problem; a user's data: --problem-file F.npz with A, b, lam, or a "
                 "counterexample's interpolation file):")  # fmt: skip
    lines += [f"  {k:14s} {v}" for k, v in BUILTIN_PROBLEMS.items()]
    lines.append("participation (--participation):")
    lines += [f"  {k:14s} {model_info(k).description}" for k in model_names(settings_only=True)]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if args.list:
        print(_listing())
        return 0
    missing(args, "--algorithm", "--rounds", "--local-steps", "--lr")
    check_int("--rounds R", args.rounds, minimum=1)  # a run of no round computes nothing
    if args.out is not None:
        check_output_path(args.out)
    if args.problem_file is None and args.problem is None:
        raise FedTheoryError("give a problem: --problem-file F.npz or --problem NAME (see --list)")
    dtype = np.float32 if args.float32 else None
    problem = make_problem(args.problem, path=args.problem_file, seed=args.seed, dtype=dtype)
    settings = {k: getattr(args, k) for k in SETTINGS if getattr(args, k) is not None}
    probabilities = load_vector(args.probabilities) if args.probabilities else None
    res = simulate(  # --clusters serves cluster participation and the algorithms that read it
        problem, args.algorithm, args.participation, clients_per_round=args.clients_per_round,
        probabilities=probabilities, rounds=args.rounds, seeds=args.seeds, seed=args.seed,
        aggregation=args.aggregation, backend=args.backend, dtype=dtype, lr=args.lr,
        record_every=args.record_every, metrics=args.metrics,
        local_steps=args.local_steps, workers=args.workers, progress=True, **settings,
        **algorithm_options(args),
    )  # fmt: skip
    out = {
        "algorithm": res.algorithm,
        "problem": args.problem_file or args.problem,
        "participation": args.participation,
        "clients_per_round": args.clients_per_round,
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
    m = f" (M = {out['clients_per_round']})" if out["clients_per_round"] else ""
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
