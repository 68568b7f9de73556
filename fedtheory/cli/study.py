"""``fedtheory study``: the local-steps scaling study and the rho ablation (claims A2-A4).

::

    fedtheory study local-steps [--algorithms fedamsgrad,afga] [--topologies ring,random,complete]
        [--K 1,2,4,8,16] [--R 200] [--M 5] [--N 50] [--clusters 5] [--problem pl|quadratic]
        [--dim 10] [--sigma 1] [--sigma-g 1] [--c-global C] [--c-local C_L] [--seeds S]
        [--seed SEED] [--json OUT.json] [--plot OUT.png]
    fedtheory study rho [--algorithms afga] [--topologies complete,random,ring] [--K 8] ...

prints the fitted exponents of K (R, M where the grid has several values) with confidence
intervals next to the stated ones, flags grid points outside a theorem's assumptions, and with
``--json`` writes every run and fit (:mod:`fedtheory.experiments.local_steps`).
"""

from __future__ import annotations

import argparse
from typing import Any

from fedtheory.errors import FedTheoryError
from fedtheory.experiments.local_steps import (
    plot_local_steps,
    plot_rho_ablation,
    run_local_steps_study,
    run_rho_ablation,
)
from fedtheory.io import emit_json


def _int_list(text: str) -> list[int]:
    try:
        vals = [int(v) for v in str(text).replace(" ", "").split(",") if v]
    except ValueError:
        msg = f"expected integers separated by commas, got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None
    if not vals:
        raise argparse.ArgumentTypeError("expected at least one integer")
    return vals


def _str_list(text: str) -> list[str]:
    vals = [v for v in str(text).replace(" ", "").split(",") if v]
    if not vals:
        raise argparse.ArgumentTypeError("expected at least one name")
    return vals


def _common(p: argparse.ArgumentParser, *, algorithms: str, topologies: str) -> None:
    p.add_argument(
        "--algorithms",
        type=_str_list,
        default=_str_list(algorithms),
        help=f"registry names, comma separated (default {algorithms})",
    )
    p.add_argument(
        "--topologies",
        type=_str_list,
        default=_str_list(topologies),
        help=f"gossip graphs (default {topologies}); per cluster for cafga/hafed",
    )
    p.add_argument("--N", type=int, default=50, dest="n_clients", help="clients N (default 50)")
    p.add_argument("--clusters", type=int, default=5, help="clusters C for cafga/hafed (5)")
    p.add_argument(
        "--problem",
        choices=("pl", "quadratic"),
        default="pl",
        help="stochastic non-convex PL problem (default) or convex quadratics",
    )
    p.add_argument("--dim", type=int, default=10, help="model dimension d (default 10)")
    p.add_argument("--sigma", type=float, default=1.0, help="gradient noise per coordinate")
    p.add_argument("--sigma-g", type=float, default=1.0, help="heterogeneity sigma_g")
    p.add_argument("--c-global", type=float, default=0.05, help="constant c of eta (0.05)")
    p.add_argument("--c-local", type=float, default=0.5, help="constant c_l of eta_l (0.5)")
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.99)
    p.add_argument("--eps", type=float, default=1e-8)
    p.add_argument("--eps-placement", choices=("inside", "outside"), default=None)
    p.add_argument("--seeds", type=int, default=20, metavar="S", help="seeds per grid point")
    p.add_argument("--seed", type=int, default=0, metavar="SEED")
    p.add_argument("--graph-seed", type=int, default=0, help="seed of random topologies")
    p.add_argument(
        "--metric",
        choices=("avg", "min"),
        default="avg",
        help="which metric the printed table fits: avg (Thm 4.6) or min (Cor 5.11)",
    )
    p.add_argument("--backend", choices=("numpy", "cupy"), default=None)
    p.add_argument(
        "--json", metavar="OUT.json", default=None, help="write runs and fits ('-': stdout)"
    )
    p.add_argument("--plot", metavar="OUT.png", default=None, help="draw the study")  # fmt: skip


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "study",
        help="scaling studies of the adaptive/gossip algorithms against the stated rates",
        description=(
            "Run a grid over rounds R, local steps K, participating clients M and gossip "
            "topologies with the theorems' step-size schedules, many seeds batched, and fit the "
            "exponents of (1/R) sum_r ||grad f(x_r)||^2 with confidence intervals over seeds."
        ),
    )
    sub = p.add_subparsers(dest="study", metavar="STUDY")
    ls = sub.add_parser(
        "local-steps",
        help="metric vs K (and R, M): the dilemma of local steps (claims A2, A3)",
        description=(
            "FedAMSGrad (Wang et al. 2022b: eta = c sqrt(KM), eta_l = c_l/sqrt(RK^2)), AFGA "
            "(000 Cor. 4.7: eta = c N sqrt(K)/M, eta_l = c_l/sqrt(RK^2)), CAFGA, HA-Fed "
            "(004 Cor. 5.11: eta = c sqrt(KM), eta_l = c_l/sqrt(RK)) on a grid; fitted "
            "exponents next to the stated ones; points outside a theorem's assumptions flagged."
        ),
    )
    _common(ls, algorithms="fedamsgrad,afga", topologies="ring,random,complete")
    ls.add_argument(
        "--K",
        type=_int_list,
        default=[1, 2, 4, 8, 16],
        dest="Ks",
        help="local steps, comma separated (default 1,2,4,8,16)",
    )
    ls.add_argument("--R", type=_int_list, default=[200], dest="Rs", help="rounds (default 200)")
    ls.add_argument("--M", type=_int_list, default=[5], dest="Ms", help="clients per round (5)")  # fmt: skip
    ls.set_defaults(func=run_local_steps)
    rho = sub.add_parser(
        "rho",
        help="metric vs the spectral gap rho (claim A4)",
        description="One (R, K, M), several topologies: does a smaller rho converge faster?",
    )
    _common(rho, algorithms="afga", topologies="complete,complete-random,random,torus,ring")
    rho.add_argument("--K", type=int, default=8, dest="K")
    rho.add_argument("--R", type=int, default=200, dest="R")
    rho.add_argument("--M", type=int, default=5, dest="M")
    rho.set_defaults(func=run_rho)
    p.set_defaults(func=lambda args: _no_study(p))


def _no_study(p: argparse.ArgumentParser) -> int:
    p.print_help()
    return 0


def _kwargs(args: argparse.Namespace) -> dict:
    for name in ("n_clients", "dim", "seeds"):
        if getattr(args, name) < 1:
            raise FedTheoryError(f"--{name.replace('_', '-')} must be >= 1")
    return {
        "n_clients": args.n_clients,
        "clusters": args.clusters,
        "dim": args.dim,
        "problem": args.problem,
        "sigma": args.sigma,
        "sigma_g": args.sigma_g,
        "c_global": args.c_global,
        "c_local": args.c_local,
        "beta1": args.beta1,
        "beta2": args.beta2,
        "eps": args.eps,
        "eps_placement": args.eps_placement,
        "seeds": args.seeds,
        "seed": args.seed,
        "graph_seed": args.graph_seed,
        "backend": args.backend,
        "progress": args.json != "-",
    }


def _emit(result: Any, args: argparse.Namespace, plot: Any) -> int:

    if args.plot:
        plot(result, args.plot)
    if args.json:
        emit_json(result.to_dict(), args.json)
    if args.json != "-":
        print(result.table(args.metric))
        for t in result.rho_trends:
            if t["metric"] != args.metric:
                continue
            pairs = ", ".join(
                f"{tp} {r:.3f}: {m:.4g}"
                for tp, r, m in zip(t["topologies"], t["rho"], t["mean"], strict=True)
            )
            print(f"{t['algorithm']} (K={t['K']}, R={t['R']}, M={t['M']}) metric by rho: {pairs}")
        print(f"wall time {result.wall_time:.1f} s")
    return 0


def run_local_steps(args: argparse.Namespace) -> int:
    res = run_local_steps_study(
        args.algorithms, Ks=args.Ks, Rs=args.Rs, Ms=args.Ms, topologies=args.topologies,
        **_kwargs(args),
    )  # fmt: skip
    return _emit(res, args, plot_local_steps)


def run_rho(args: argparse.Namespace) -> int:

    res = run_rho_ablation(
        args.algorithms, topologies=args.topologies, K=args.K, R=args.R, M=args.M, **_kwargs(args)
    )
    return _emit(res, args, plot_rho_ablation)
