"""``fedtheory rate``: the exact per-round rates and floors of an affine algorithm.

Contract (other tools rely on it)::

    fedtheory rate (--problem-file F.npz | --problem NAME) --algorithm NAME
        --participation full|uniform|weighted|bernoulli [--clients-per-round M]
        [--probabilities p.npy] --local-steps K --lr ETA [--option NAME=VALUE ...]
        [--json OUT|-]

The problem file is the one ``simulate`` reads (A (N, n, d), b (N, n), optional lam;
f_i = 1/2 ||A_i x - b_i||^2 + lam/2 ||x||^2); a counterexample's interpolation file is
refused in one line (exact rates need a quadratic; ``simulate`` replays it). The JSON object has ``mean_rate``,
``mean_square_rate``, ``state_dim``, ``method`` and, where they exist, ``fixed_point`` (its x
part), ``stationary_mean`` and ``stationary_mse`` (lim E||x_r - x*||^2), plus the problem's
constants and how every number was obtained. An algorithm whose round is not affine is refused
in one line naming why (exit status 2). A rate >= 1 means the iterates diverge (in mean, or in
mean square): a warning on stderr and ``"diverging": true``; ``--fail-on-divergence`` then exits
with status 3. A flag the model or algorithm does not read (``--empty`` without bernoulli,
``--noise`` for an algorithm with exact gradients) is refused.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import Any

import numpy as np

from fedtheory.analysis.exact import (
    AFFINE_ALGORITHMS,
    EIGENSOLVERS,
    exact_rates,
    largest_stable_lr,
    problem_constants,
)
from fedtheory.cli.common import (
    add_algorithm,
    add_json,
    add_parser,
    add_setting,
    add_settings,
    algorithm_options,
    given_settings,
    human_stream,
    refuse_unread_model_settings,
    require_settings,
    write_json,
)
from fedtheory.errors import FedTheoryError
from fedtheory.io import progress as progress_bar
from fedtheory.io import working
from fedtheory.participation import model_info, model_names
from fedtheory.problems import make_problem
from fedtheory.simulation.settings import SETTINGS
from fedtheory.simulation.spec import PARTICIPATION_SETTINGS, build_participation

#: The participation settings a model with an exact law reads (the models ``rate`` takes).
PARTICIPATION = tuple(
    k
    for k in PARTICIPATION_SETTINGS
    if any(SETTINGS[k].key in model_info(m).reads for m in model_names(exact_law=True))
)
#: The algorithm's settings an affine algorithm may read (passed only when given).
ALGORITHM_SETTINGS = ("global_lr", "prox_mu")
#: Its own flags, which are no run setting.
OWN_FLAGS = ("tol", "eigensolver", "largest_stable_lr", "fail_on_divergence", "json")


def register(subparsers: Any) -> None:
    p = add_parser(
        subparsers,
        "rate",
        help="exact mean and mean-square rates, fixed point and floor of an affine algorithm",
        description=(
            "Exact per-round rates of a federated algorithm on a quadratic problem: the mean "
            "rate rho(E[M_S]), the mean-square rate rho(P -> E[M_S P M_S^T]), the fixed point "
            "or stationary mean, and the stationary mean-square error lim E||x_r - x*||^2, "
            "from the algorithm's own round (an affine map z <- M_S z + c_S) and the exact law "
            "of the participation draw.\n\n"
            f"supported (affine) algorithms: {', '.join(AFFINE_ALGORITHMS)}.\n"
            "refused (not affine): the adaptive server steps (fedadam, fedyogi, fedadagrad, "
            "fedamsgrad, afga, cafga, hafed) divide by sqrt(v); fedau's weights depend on the "
            "participation history; dsgd has no server.\n"
            "your own algorithm (FILE.py:NAME): its round must be affine in the state and "
            "linear in the participation weights, with a declared exact layout; a round that "
            "is not is refused, naming the property that fails and where."
        ),
        examples=[
            "fedtheory rate --problem figure4 --algorithm FOCUS --participation uniform "
            "-M 4 -K 3 --lr 1.5e-4",
            "fedtheory rate --problem figure4 --algorithm fedavg --participation weighted "
            "-M 4 -K 3 --lr 1.5e-4 --largest-stable-lr --json rates.json",
            "fedtheory rate --problem-file my.npz --algorithm scaffold --participation bernoulli "
            "--probabilities p.npy -K 2 --lr 0.01 --json -",
            "fedtheory rate --problem figure4 --algorithm fedavg --option server_momentum=0.9 "
            "-K 3 --lr 6e-4",
            "fedtheory rate --algorithm docs/examples/fednova.py:fednova --problem figure4 "
            "--participation uniform -M 4 -K 3 --lr 1.5e-4",
        ],
    )
    src = p.add_mutually_exclusive_group()
    add_settings(src, "problem_file", "problem")
    add_algorithm(p)
    add_setting(p, "participation", choices=model_names(exact_law=True))
    add_settings(p, *PARTICIPATION, "aggregation", "local_steps", "lr", *ALGORITHM_SETTINGS)
    add_settings(p, "noise", "seed")
    p.add_argument(
        "--tol",
        type=float,
        default=1e-10,
        help="eigensolver tolerance of the mean-square eigenpair",
    )
    p.add_argument(
        "--eigensolver",
        choices=EIGENSOLVERS,
        default=EIGENSOLVERS[0],
        help="the mean-square rate's eigensolver on large operators: arpack (its "
        "residual fixes the Figure 4 rates to 1e-10) or krylov-schur (cheaper per "
        "application, a time left in the progress line, but 5e-8 to 1.4e-7 off "
        "there)",
    )
    p.add_argument(
        "--largest-stable-lr",
        action="store_true",
        help="also bisect the largest step with mean-square rate < 1",
    )
    p.add_argument(
        "--fail-on-divergence",
        action="store_true",
        help="exit with status 3 when a rate is >= 1 (default: warn, exit 0)",
    )
    add_json(p, "the rates, fixed point, floor and the problem's constants")
    p.set_defaults(func=run)


def _participation(args: argparse.Namespace, problem: Any) -> Any:
    """The model the flags name (the one builder,
    :func:`~fedtheory.simulation.spec.build_participation`)."""
    refuse_unread_model_settings(args, args.participation, named="--participation")
    settings = {k: getattr(args, k) for k in PARTICIPATION}
    return build_participation(args.participation, problem, **settings)


class _SolveProgress:
    """Progress of the matrix-free solves on stderr (:func:`fedtheory.io.progress`: a bar on a
    terminal, a line at most every 10 s in a log): operator applications done, the current
    estimate of the rate and its relative residual, and the time left, extrapolated from the
    residual's geometric decrease (a least-squares line through log residual against
    applications over the last cycles) to the tolerance."""

    #: Residuals (one per finished cycle) the extrapolation reads.
    WINDOW = 8

    def __init__(self, tol: float, *, stationary_tol: float = 1e-13) -> None:
        self.tols = {"mean-square rate": tol, "stationary mse": stationary_tol}
        self.bar: Any = None  # made at the first report: a dense solve shows nothing
        self.stage, self.last, self.t0 = "", 0, time.perf_counter()
        self.history: list[tuple[int, float]] = []

    def __call__(self, stage: str, applications: int, value: Any, residual: float) -> None:
        if self.bar is None:
            self.bar = progress_bar(desc="exact rate", unit="application", every=10.0)
        if stage != self.stage or applications < self.last:  # a new solve
            self.stage, self.last, self.history = stage, 0, []
            self.t0 = time.perf_counter()
        self.bar.update(applications - self.last)
        self.last = applications
        if math.isnan(residual):  # ARPACK: nothing to read before it converges
            self.bar.set_postfix_str(f"{stage}: {applications} applications (ARPACK)")
            return
        if not math.isfinite(residual):
            self.bar.set_postfix_str(f"{stage}: first cycle")
            return
        point = (applications, math.log(max(residual, 1e-300)))
        if not self.history or self.history[-1][1] != point[1]:
            self.history = [*self.history[-(self.WINDOW - 1) :], point]
        what = stage if value is None else f"{stage} {abs(value):.10f}"
        left = self._left(residual, time.perf_counter())
        self.bar.set_postfix_str(f"{what}, residual {residual:.1e}, {left}")

    def _left(self, residual: float, now: float) -> str:
        target = self.tols.get(self.stage, 1e-10)
        if residual <= target:
            return "converged"
        if len(self.history) < 3:
            return "time left unknown"
        a = np.array([p[0] for p in self.history], dtype=float)
        r = np.array([p[1] for p in self.history])
        slope = float(np.polyfit(a, r, 1)[0])  # log residual per application
        if slope >= 0:
            return "time left unknown"
        more = (math.log(target) - r[-1]) / slope
        seconds = more * (now - self.t0) / max(self.last, 1)
        return f"about {seconds:.0f} s left ({more:.0f} more applications)"

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _summary(res: Any, extra: dict) -> str:
    fmt = lambda v: "-" if v is None else f"{v:.10g}"  # noqa: E731
    lines = [
        f"{res.algorithm}, {res.participation.get('model')} participation, eta = {res.lr:g}, "
        f"K = {res.local_steps}: state dimension {res.state_dim} ({res.coordinates})",
        f"  mean rate           {fmt(res.mean_rate)}",
        f"  mean-square rate    {fmt(res.mean_square_rate)}",
    ]
    if res.fixed_point is not None:
        err = np.linalg.norm(res.fixed_point - res.x_star) / np.linalg.norm(res.x_star)
        lines.append(
            f"  fixed point         shared by every round; ||x_fp - x*||/||x*|| = {err:.3g}"
        )
    elif res.stationary_mean is not None:
        err = np.linalg.norm(res.stationary_mean - res.x_star) / np.linalg.norm(res.x_star)
        lines.append(f"  stationary mean     ||E x - x*||/||x*|| = {err:.3g}")
    if res.stationary_mse is not None:
        lines.append(
            f"  stationary MSE      lim E||x - x*||^2 = {res.stationary_mse:.6g} "
            f"({res.stationary_mse_relative:.3g} ||x*||^2)"
        )
    if "largest_stable_lr" in extra:
        s = extra["largest_stable_lr"]
        lines.append(
            f"  largest stable eta  {s['lr']:.6g} (mean-square rate < 1; [{s['lo']:.6g}, "
            f"{s['hi']:.6g}])"
        )
    lines.append(f"  stated rate         {res.stated}")
    lines.append(f"  method              {res.method}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    require_settings(args, "algorithm", "local_steps", "lr")
    if args.problem_file is None and args.problem is None:
        raise FedTheoryError("give a problem: --problem-file F.npz or --problem NAME")
    if not (np.isfinite(args.lr) and args.lr > 0):
        raise FedTheoryError(f"the step size --lr must be finite and > 0, got {args.lr}")
    if args.local_steps < 1:
        raise FedTheoryError(f"--local-steps K must be >= 1, got {args.local_steps}")
    problem = make_problem(args.problem, path=args.problem_file, seed=args.seed, exact=True)
    built = _participation(args, problem)
    model = built.model
    kw = {
        "local_steps": args.local_steps,
        "rule": args.aggregation,
        "noise": args.noise,
        "tol": args.tol,
        "eigensolver": args.eigensolver,
        **given_settings(args, ALGORITHM_SETTINGS),
    }
    options = algorithm_options(args)
    if options:
        kw["options"] = options
    solve = _SolveProgress(args.tol)
    unit = (
        f"exact rates of {args.algorithm} on {args.problem_file or args.problem} "
        f"({args.participation} participation, K = {args.local_steps}, lr = {args.lr:g})"
    )
    try:
        with working(unit):  # the round's extraction and the eigen-solves: a heartbeat in a log
            res = exact_rates(problem, args.algorithm, model, lr=args.lr, progress=solve, **kw)
        if args.noise and not res.noise:  # the round never drew the gradient noise
            raise FedTheoryError(
                f"{res.algorithm} uses exact gradients: --noise (the gradient-noise sigma) does "
                "not act on it; leave --noise out, or choose an algorithm with stochastic "
                "gradients (sg-focus; fedavg-type algorithms)"
            )
        extra: dict[str, Any] = {}
        if args.largest_stable_lr:
            kw.pop("tol")
            solve.tols["mean-square rate"] = 1e-8
            with working(f"largest stable step of {args.algorithm} (bisection from {args.lr:g})"):
                extra["largest_stable_lr"] = largest_stable_lr(
                    problem,
                    args.algorithm,
                    model,
                    lr_start=args.lr,
                    rtol=1e-3,
                    tol=1e-8,
                    progress=solve,
                    **kw,
                ).to_dict()
    finally:
        solve.close()
    rates = {"mean": res.mean_rate, "mean-square": res.mean_square_rate}
    above = {k: v for k, v in rates.items() if v is not None and v >= 1}  # NaN: not computed
    out = {
        **res.to_dict(),
        "diverging": bool(above),
        "problem": args.problem_file or args.problem,
        "probabilities_from": built.probabilities_from,
        "n_clients": problem.n_clients,
        "dim": problem.dim,
        "constants": problem_constants(problem).to_dict(args.lr, args.local_steps),
        **extra,
    }
    # the summary is printed with --json OUT too (stderr when stdout carries the JSON)
    print(_summary(res, extra), file=human_stream(args), flush=True)
    write_json(out, args)
    if args.json not in (None, "-"):
        print(f"wrote {args.json}")
    if above:
        said = ", ".join(f"{k} rate {v:.6g} >= 1" for k, v in above.items())
        print(
            f"fedtheory: warning: diverging: {said} (the error grows geometrically)",
            file=sys.stderr,
        )
        if args.fail_on_divergence:
            return 3
    return 0
