"""``fedtheory simulate``: run a federated algorithm on a problem with a known answer.

Contract (issue 4, extended by issue 5's adaptive flags)::

    fedtheory simulate --problem-file F.npz --algorithm NAME
        --participation full|uniform|weighted|bernoulli|markov [--clients-per-round M]
        [--probabilities p.npy] --rounds R --local-steps K --lr ETA [--seeds S] [--seed SEED]
        --json OUT.json

writes a JSON object with at least ``algorithm``, ``rounds``, ``x_star`` (list), ``error``
(per seed, rounds 0..R of ||x_r - x*|| / ||x*||, server model, x_0 = 0) and ``x_final``
(per seed). ``--list`` prints the algorithms, problems and participation models.
"""

from __future__ import annotations

import argparse
import io
from typing import Any

import numpy as np

from fedtheory.errors import AssumptionError, FedTheoryError
from fedtheory.io import write_atomic
from fedtheory.problems import BUILTIN_PROBLEMS, make_problem

PARTICIPATION_CHOICES = ("full", "uniform", "weighted", "bernoulli", "markov", "cluster")


#: The quantiles of the per-seed final error in the summary of ``--json FILE`` / ``--out``.
QUANTILES = ("min", "25%", "median", "75%", "max")

#: JSON keys of the runner's metrics where they differ from the metric's name.
JSON_NAMES = {"rel_error": "error", "subopt": "f_minus_f_star", "tracking": "tracking_residual"}


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "simulate",
        help="run a federated algorithm (batched over seeds) and write the error curves as JSON",
        description=(
            "Simulate a federated algorithm on a least-squares problem from an .npz file "
            "(A (N, n, d), b (N, n), optional lam) or a built-in problem, under a participation "
            "model, for many seeds at once. Writes per-seed relative errors "
            "||x_r - x*|| / ||x*|| (x_0 = 0) and the final models as JSON."
        ),
    )
    src = p.add_mutually_exclusive_group()
    src.add_argument("--problem-file", metavar="F.npz", help="A (N, n, d), b (N, n), lam")
    src.add_argument("--problem", choices=sorted(BUILTIN_PROBLEMS), help="a built-in problem")
    p.add_argument("--algorithm", metavar="NAME", help="algorithm name (see --list)")
    p.add_argument("--participation", default="full", choices=PARTICIPATION_CHOICES)
    p.add_argument("--clients-per-round", "-M", type=int, metavar="M", dest="m")
    p.add_argument("--probabilities", metavar="p.npy", help="participation probabilities p")
    p.add_argument("--aggregation", default="mean", choices=("mean", "weighted", "unbiased"))
    p.add_argument("--rounds", "-R", type=int, metavar="R")
    p.add_argument("--local-steps", "-K", type=int, metavar="K")
    p.add_argument("--lr", type=float, metavar="ETA", help="local step size (FOCUS: its eta)")
    p.add_argument("--global-lr", type=float, default=1.0, metavar="ETA", help="server step")
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.99)
    p.add_argument("--eps", type=float, default=1e-8)
    p.add_argument("--eps-placement", choices=("inside", "outside"), default=None)
    p.add_argument("--prox-mu", type=float, default=0.0, help="FedProx proximal weight mu")
    p.add_argument("--topology", default=None, help="gossip graph of the gossip algorithms")
    p.add_argument("--clusters", type=int, default=None, help="clusters C (clustered algorithms)")
    p.add_argument("--seeds", type=int, default=1, metavar="S")
    p.add_argument("--seed", type=int, default=0, metavar="SEED")
    p.add_argument("--backend", choices=("numpy", "cupy"), default=None)
    p.add_argument("--float32", action="store_true", help="single precision (default float64)")
    p.add_argument(
        "--json",
        metavar="OUT.json",
        default=None,
        help="JSON output file ('-', the default without --out: stdout; a file: compact JSON, "
        "and a short summary on stdout)",
    )
    p.add_argument(
        "--out", metavar="OUT.npz", default=None, help="also write the arrays as a NumPy .npz"
    )
    p.add_argument("--list", action="store_true", help="list algorithms, problems, participation")
    p.set_defaults(func=run)


def _listing() -> str:
    from fedtheory.algorithms import available  # noqa: PLC0415

    lines = ["algorithms:"]
    lines += [f"  {k:14s} {v}" for k, v in available().items()]
    lines.append("problems (--problem; a user's data: --problem-file F.npz with A, b, lam):")
    lines += [f"  {k:14s} {v}" for k, v in BUILTIN_PROBLEMS.items()]
    lines.append("participation (--participation):")
    desc = {
        "full": "every client every round",
        "uniform": "M of N uniformly without replacement (--clients-per-round M)",
        "weighted": "M successive weighted draws without replacement (--probabilities p.npy)",
        "bernoulli": "client i joins with p_i (--probabilities, or M/N), empty rounds redrawn",
        "markov": "two-state chain per client, stationary rate M/N",
        "cluster": "m per cluster of C equal clusters (--clusters C --clients-per-round m)",
    }
    lines += [f"  {k:14s} {desc[k]}" for k in PARTICIPATION_CHOICES]
    return "\n".join(lines)


def _problem(args: argparse.Namespace) -> Any:
    dtype = np.float32 if args.float32 else None
    return make_problem(args.problem, path=args.problem_file, seed=args.seed, dtype=dtype)


def _participation(args: argparse.Namespace, n: int) -> Any:
    from fedtheory.participation import load_vector, make_participation  # noqa: PLC0415

    p = load_vector(args.probabilities) if args.probabilities else None
    if args.m is not None and args.m > n:
        raise FedTheoryError(f"--clients-per-round M = {args.m} exceeds the N = {n} clients")
    if args.m is not None and args.m < 1:
        raise FedTheoryError(f"--clients-per-round M must be >= 1, got {args.m}")
    if args.participation in ("uniform", "weighted") and args.m is None:
        raise FedTheoryError(f"--participation {args.participation} needs --clients-per-round M")
    if args.participation == "markov" and args.m is None:
        raise FedTheoryError("--participation markov needs --clients-per-round M")
    if args.participation == "cluster":
        # m per cluster over C equal contiguous clusters (000 Algorithm 2, 004 Algorithm 1).
        if args.m is None or args.clusters is None:
            raise FedTheoryError(
                "--participation cluster needs --clusters C and --clients-per-round m (per cluster)"
            )
        if args.clusters < 1 or n % args.clusters:
            raise FedTheoryError(
                f"--clusters C = {args.clusters} must divide the N = {n} clients into equal clusters"
            )
        if args.m > n // args.clusters:
            raise FedTheoryError(
                f"--clients-per-round m = {args.m} exceeds the cluster size n = {n // args.clusters}"
            )
        return make_participation("cluster", n, args.m, n_clusters=args.clusters)
    if args.participation == "bernoulli" and p is None and args.m is None:
        raise FedTheoryError(
            "--participation bernoulli needs --probabilities or --clients-per-round"
        )
    return make_participation(args.participation, n, args.m, p)


def run(args: argparse.Namespace) -> int:
    from fedtheory.io import emit_json  # noqa: PLC0415
    from fedtheory.simulation import simulate  # noqa: PLC0415

    if args.list:
        print(_listing())
        return 0
    missing = [
        flag
        for flag, v in (
            ("--algorithm", args.algorithm),
            ("--rounds", args.rounds),
            ("--local-steps", args.local_steps),
            ("--lr", args.lr),
        )
        if v is None
    ]
    if missing:
        raise FedTheoryError(f"missing {', '.join(missing)} (see fedtheory simulate --help)")
    if args.problem_file is None and args.problem is None:
        raise FedTheoryError("give a problem: --problem-file F.npz or --problem NAME (see --list)")
    if not args.lr > 0:
        raise FedTheoryError(f"the step size --lr must be > 0, got {args.lr}")
    if args.local_steps < 1:
        raise FedTheoryError(
            f"the number of local steps --local-steps K must be >= 1, got {args.local_steps}"
        )
    if args.rounds < 0:
        raise FedTheoryError(f"--rounds must be >= 0, got {args.rounds}")
    if args.seeds < 1:
        raise FedTheoryError(f"--seeds must be >= 1, got {args.seeds}")
    problem = _problem(args)
    model = _participation(args, problem.n_clients)
    res = simulate(
        problem,
        args.algorithm,
        model,
        rounds=args.rounds,
        seeds=args.seeds,
        seed=args.seed,
        aggregation=args.aggregation,
        backend=args.backend,
        dtype=np.float32 if args.float32 else None,
        lr=args.lr,
        local_steps=args.local_steps,
        global_lr=args.global_lr,
        beta1=args.beta1,
        beta2=args.beta2,
        eps=args.eps,
        eps_placement=args.eps_placement,
        prox_mu=args.prox_mu,
        topology=args.topology,
        clusters=args.clusters,
    )
    out = {
        "algorithm": res.algorithm,
        "problem": args.problem_file or args.problem,
        "participation": args.participation,
        "clients_per_round": args.m,
        "aggregation": args.aggregation,
        "rounds": res.rounds,
        "local_steps": args.local_steps,
        "lr": args.lr,
        "global_lr": args.global_lr,
        "seeds": res.seeds,
        "seed": res.seed,
        "n_clients": problem.n_clients,
        "dim": problem.dim,
        "x_star": None if res.x_star is None else res.x_star.tolist(),
        "diverged": res.diverged,
        "diverged_at": res.diverged_at,
        "final_error": res.rel_error[:, -1],
        "x_final": res.x_final,
        "wall_time_s": res.wall_time,
    }
    # Every recorded metric, under its JSON name (the contract's "error" is rel_error).
    out.update({JSON_NAMES.get(k, k): v for k, v in res.metrics.items()})
    target = "-" if args.json is None and args.out is None else args.json
    if target is not None:
        emit_json(out, target, indent=False)
    if args.out is not None:
        write_npz(args.out, out)
    if target != "-":
        print(summary(res, out, [p for p in (target, args.out) if p is not None]))
    return 0


def write_npz(path: str, out: dict) -> None:
    """The result dict as a NumPy ``.npz`` archive, written atomically: every array and number
    under its JSON key (NaN stays NaN), strings as 0-d string arrays, ``None`` values left out;
    ``np.load(path)`` reads it without pickle."""
    arrays = {k: np.asarray(v) for k, v in out.items() if v is not None}
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    write_atomic(path, buf.getvalue())


def summary(res: Any, out: dict, paths: list[str]) -> str:
    """A few lines for a person: the run, the quantiles of the per-seed final relative error,
    the geometric rate fitted to the median error curve, how many seeds diverged, what was
    written."""
    # Imported here, not at the top: fedtheory.analysis pulls in scipy.stats, about 0.4 s of
    # start-up (1 s on a loaded machine) that every other ``fedtheory simulate`` run would pay
    # (measured with python -X importtime; the command's own imports take about as long).
    from fedtheory.analysis.rates import fit_linear_rate

    n = res.seeds
    m = f" (M = {out['clients_per_round']})" if out["clients_per_round"] else ""
    lines = [
        f"{res.algorithm} on {out['problem']}: {out['participation']} participation{m}, "
        f"{n} seeds x {res.rounds} rounds, K = {out['local_steps']}, lr = {out['lr']:g} "
        f"({res.wall_time:.2f} s in the round loop)"
    ]
    err = res.rel_error
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
        try:
            rate = fit_linear_rate(np.median(err[ok], axis=0))
            lines.append(
                f"fitted linear rate (median curve, rounds {rate.start}-{rate.stop - 1}): "
                f"rho = {rate.rho:.6f} per round, r^2 = {rate.r2:.4f}, floor {rate.floor:.3e}"
            )
        except AssumptionError as exc:
            lines.append(f"fitted linear rate: none ({exc})")
    lines.append(f"diverged: {int(res.diverged.sum())} of {n} seeds")
    lines += [f"wrote {p}" for p in paths]
    return "\n".join(lines)
