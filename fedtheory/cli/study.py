"""``fedtheory study``: the local-steps scaling study and the rho ablation (claims A2-A4).

::

    fedtheory study local-steps [--algorithms fedamsgrad,afga] [--topologies ring,random,complete]
        [-K 1,2,4,8,16] [-R 200] [--M 5] [--N 50] [--clusters 5] [--problem pl|quadratic]
        [--dim 10] [--sigma 1] [--sigma-g 1] [--c-global C] [--c-local C_L] [--seeds S]
        [--seed SEED] [--json OUT.json] [--plot OUT.png]
    fedtheory study rho [--algorithms afga] [--topologies complete,random,ring] [-K 8] ...

prints the fitted exponents of K (R, M where the grid has several values) with confidence
intervals next to the stated ones, flags grid points outside a theorem's assumptions, and with
``--json`` writes every run and fit (:mod:`fedtheory.experiments.local_steps`).
"""

from __future__ import annotations

import argparse
from typing import Any

from fedtheory.cli.common import (
    add_clients,
    add_clients_per_round,
    add_json,
    add_parser,
    add_setting,
    add_settings,
    algorithm_names,
    int_list,
    json_to_stdout,
    name_list,
    write_json,
)
from fedtheory.experiments.local_steps import (
    plot_local_steps,
    plot_rho_ablation,
    run_local_steps_study,
    run_rho_ablation,
)


def _common(p: argparse.ArgumentParser, *, algorithms: str, topologies: str) -> None:
    p.add_argument(
        "--algorithms",
        type=algorithm_names,
        default=algorithm_names(algorithms),
        metavar="A,B,..",
        help="algorithm names, comma separated, any case",
    )
    p.add_argument(
        "--topologies",
        type=name_list,
        default=name_list(topologies),
        help=f"gossip graphs (default {topologies}); per cluster for cafga/hafed",
    )
    add_clients(p, default=50, aliases=("--N",))
    add_setting(p, "clusters", default=5)
    p.add_argument(
        "--problem",
        choices=("pl", "quadratic"),
        default="pl",
        help="stochastic non-convex PL problem (default) or convex quadratics",
    )
    p.add_argument("--dim", type=int, default=10, help="model dimension d")
    p.add_argument("--sigma", type=float, default=1.0, help="gradient noise per coordinate")
    p.add_argument("--sigma-g", type=float, default=1.0, help="heterogeneity sigma_g")
    p.add_argument("--c-global", type=float, default=0.05, help="constant c of eta")
    p.add_argument("--c-local", type=float, default=0.5, help="constant c_l of eta_l")
    add_settings(p, "beta1", "beta2", "eps", "eps_placement", "seed", table_defaults=True)
    add_setting(p, "seeds", default=20, note="; per grid point")
    p.add_argument("--graph-seed", type=int, default=0, help="seed of random topologies")
    p.add_argument(
        "--metric",
        choices=("avg", "min"),
        default="avg",
        help="which metric the printed table fits: avg (Thm 4.6) or min (Cor 5.11)",
    )
    add_setting(p, "backend")
    add_json(p, "every run and fit")
    p.add_argument("--plot", metavar="OUT.png", default=None, help="draw the study")


def register(subparsers: Any) -> None:
    p = add_parser(
        subparsers,
        "study",
        help="scaling studies of the adaptive/gossip algorithms against the stated rates",
        description=(
            "Run a grid over rounds R, local steps K, participating clients M and gossip "
            "topologies with the theorems' step-size schedules, many seeds batched, and fit the "
            "exponents of (1/R) sum_r ||grad f(x_r)||^2 with confidence intervals over seeds."
        ),
        examples=[
            "fedtheory study local-steps --algorithms FedAMSGrad,AFGA -N 50 -M 5 -K 1,2,4,8",
            "fedtheory study rho --topologies complete,ring --json rho.json --plot rho.png",
        ],
    )
    sub = p.add_subparsers(dest="study", metavar="STUDY")
    ls = add_parser(
        sub,
        "local-steps",
        help="metric vs K (and R, M): the dilemma of local steps (claims A2, A3)",
        description=(
            "FedAMSGrad (Wang et al. 2022b: eta = c sqrt(KM), eta_l = c_l/sqrt(RK^2)), AFGA "
            "(000 Cor. 4.7: eta = c N sqrt(K)/M, eta_l = c_l/sqrt(RK^2)), CAFGA, HA-Fed "
            "(004 Cor. 5.11: eta = c sqrt(KM), eta_l = c_l/sqrt(RK)) on a grid; fitted "
            "exponents next to the stated ones; points outside a theorem's assumptions flagged."
        ),
        examples=[
            "fedtheory study local-steps --algorithms fedamsgrad,afga -K 1,2,4,8 -R 100,200",
            "fedtheory study local-steps --algorithms hafed --clusters 4 -N 32 -M 8 --json -",
        ],
    )
    _common(ls, algorithms="fedamsgrad,afga", topologies="ring,random,complete")
    ls.add_argument(
        "--local-steps",
        "-K",
        "--K",
        type=int_list,
        default=[1, 2, 4, 8, 16],
        dest="Ks",
        help="local steps, comma separated",
    )
    ls.add_argument(
        "--rounds",
        "-R",
        "--R",
        type=int_list,
        default=[200],
        dest="Rs",
        help="rounds, comma separated",
    )
    add_clients_per_round(
        ls, type=int_list, default=[5], aliases=("--M",), note="; comma separated: one per study"
    )
    ls.set_defaults(func=run_local_steps)
    rho = add_parser(
        sub,
        "rho",
        help="metric vs the spectral gap rho (claim A4)",
        description="One (R, K, M), several topologies: does a smaller rho converge faster?",
        examples=["fedtheory study rho --algorithms afga --topologies complete,torus,ring -K 8"],
    )
    _common(rho, algorithms="afga", topologies="complete,complete-random,random,torus,ring")
    rho.add_argument(
        "--local-steps", "-K", "--K", type=int, default=8, dest="K", help="local steps K"
    )
    rho.add_argument("--rounds", "-R", "--R", type=int, default=200, dest="R", help="rounds R")
    add_clients_per_round(rho, default=5, aliases=("--M",))
    rho.set_defaults(func=run_rho)
    p.set_defaults(func=lambda args: _no_study(p))


def _no_study(p: argparse.ArgumentParser) -> int:
    p.print_help()
    return 0


def _kwargs(args: argparse.Namespace) -> dict:
    return {
        "n_clients": args.clients,
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
        "progress": not json_to_stdout(args),
    }


def _emit(result: Any, args: argparse.Namespace, plot: Any) -> int:

    if args.plot:
        plot(result, args.plot)
    write_json(result.to_dict(), args)
    if not json_to_stdout(args):
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
        args.algorithms,
        Ks=args.Ks,
        Rs=args.Rs,
        Ms=args.clients_per_round,
        topologies=args.topologies,
        **_kwargs(args),
    )
    return _emit(res, args, plot_local_steps)


def run_rho(args: argparse.Namespace) -> int:

    res = run_rho_ablation(
        args.algorithms,
        topologies=args.topologies,
        K=args.K,
        R=args.R,
        M=args.clients_per_round,
        **_kwargs(args),
    )
    return _emit(res, args, plot_rho_ablation)
