"""``fedtheory nn``: federated training of a torch-free MLP on MNIST-1D (claim N1).

Trains FedAvg, FedAMSGrad, AFGA and CAFGA on MNIST-1D generated locally, 50 clients, 10% participation,
Dirichlet(0.6) labels (000 Section 6, Setting 2), several seeds batched, and prints the test
accuracy per evaluated round as mean +- std over seeds. --json OUT writes everything,
--plot draws figures/nn_n1.png and .pdf. MNIST-1D needs the optional extra 'nn'
(pip install 'fedtheory[nn]'); --data FILE.npz trains on your own arrays without it.
"""

from __future__ import annotations

import argparse

import numpy as np

from fedtheory.algorithms.registry import info
from fedtheory.cli.common import (
    add_clients,
    add_clients_per_round,
    add_json,
    add_parser,
    add_settings,
    algorithm_names,
    human_stream,
    int_list,
    write_json,
)
from fedtheory.errors import AssumptionError, FedTheoryError
from fedtheory.experiments.n1 import N1_ALGORITHMS, run_n1, save_n1_figure
from fedtheory.extras import require
from fedtheory.io import check_output_dir
from fedtheory.validation import did_you_mean


def _n1_names(text: str) -> list[str]:
    """N1 algorithms, comma separated, any case ("FedAvg,AFGA"), as every list on the command
    line is given; refused in one line naming the choices (and the near miss)."""
    names = algorithm_names(text)
    stray = [n for n in names if n not in N1_ALGORITHMS]
    if stray:
        raise argparse.ArgumentTypeError(
            f"{stray[0]!r} is not an N1 algorithm{did_you_mean(stray[0], N1_ALGORITHMS)}: "
            f"choose from {', '.join(N1_ALGORITHMS)}"
        )
    return names


def _n1_name(text: str) -> str:
    """An N1 algorithm named in any case ("AFGA", "afga")."""
    try:
        return info(text).name
    except FedTheoryError:
        return text  # the caller refuses it, naming the choices


def register(subparsers) -> None:
    p = add_parser(
        subparsers,
        "nn",
        help="train a torch-free MLP on MNIST-1D with FedAvg/FedAMSGrad/AFGA/CAFGA (claim N1)",
        description=__doc__.split("\n\n", 1)[1],
        examples=[
            "fedtheory nn --rounds 100 --seeds 3 --json n1.json --plot",
            "fedtheory nn --algorithms FedAvg,AFGA -N 20 -M 4 --lr AFGA=0.1 --rounds 50",
        ],
    )
    p.add_argument(
        "--algorithms",
        type=_n1_names,
        default=list(N1_ALGORITHMS),
        metavar="A,B,..",
        help=f"comma separated, any case, of {', '.join(N1_ALGORITHMS)} (default: all four)",
    )
    add_clients(p, default=50)
    per = p.add_mutually_exclusive_group()
    per.add_argument("--participation", type=float, default=0.1, help="fraction per round")
    add_clients_per_round(per, note="; instead of --participation")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--alpha", type=float, default=0.6, help="Dirichlet alpha")
    g.add_argument("--iid", action="store_true", help="i.i.d. split instead of Dirichlet")
    add_settings(p, "rounds", "local_steps", rounds=100, local_steps=10)
    p.add_argument("--batch-size", type=int, default=50, help="minibatch per client and step")
    p.add_argument(
        "--hidden",
        type=int_list,
        default=[64, 64],
        metavar="W,W,..",
        help="hidden widths, comma separated",
    )
    p.add_argument("--activation", choices=["relu", "tanh"], default="relu", help="activation")
    p.add_argument(
        "--conv",
        type=int_list,
        default=None,
        metavar="C,C,..",
        help="channels of 1-D convolutions before the dense layers (a small CNN), comma separated",
    )
    p.add_argument("--kernel", type=int, default=5, help="convolution width")
    p.add_argument("--stride", type=int, default=2, help="convolution stride")
    add_settings(p, "seeds", "seed", seeds=3, table_defaults=True)
    p.add_argument("--samples", type=int, default=5000, help="MNIST-1D samples (80%% train)")
    p.add_argument(
        "--data",
        default=None,
        metavar="FILE.npz",
        help="your own data instead of MNIST-1D: arrays x (n, F), y (n,) and "
        "optionally x_test, y_test; checked for shapes and label range",
    )
    p.add_argument("--eval-every", type=int, default=5, help="rounds between evaluations")
    p.add_argument(
        "--lr",
        action="append",
        default=[],
        metavar="ALG=VALUE",
        help="local step size of one algorithm, e.g. --lr AFGA=0.05 (repeatable)",
    )
    p.add_argument(
        "--global-lr",
        action="append",
        default=[],
        metavar="ALG=VALUE",
        help="server step size of one algorithm (repeatable)",
    )
    add_settings(p, "backend", "float32")
    add_json(p)
    p.add_argument("--plot", action="store_true", help="draw figures/nn_n1.png and .pdf")
    p.add_argument("--out", default="figures", help="folder for --plot")
    p.set_defaults(func=main)


def _overrides(items: list[str], key: str, hyper: dict) -> None:
    for item in items:
        name, sep, value = item.partition("=")
        name = _n1_name(name)
        if not sep or name not in N1_ALGORITHMS:
            raise AssumptionError(
                f"--{key.replace('_', '-')} takes ALG=VALUE with ALG one of "
                f"{', '.join(N1_ALGORITHMS)}, got {item!r}"
            )
        try:
            hyper.setdefault(name, {})[key] = float(value)
        except ValueError:
            raise AssumptionError(f"{item!r}: {value!r} is not a number") from None


def main(args) -> int:
    if args.data is None:  # MNIST-1D: the 'nn' extra, said in one line before anything runs
        require("nn", "fedtheory nn on MNIST-1D (without --data FILE.npz)")
    if args.plot:
        check_output_dir(args.out)  # before an hour of training, not after
    hyper: dict = {}
    _overrides(args.lr, "lr", hyper)
    _overrides(args.global_lr, "global_lr", hyper)
    res = run_n1(
        args.algorithms,
        n_clients=args.clients,
        participation=args.participation
        if args.clients_per_round is None
        else args.clients_per_round / args.clients,
        alpha=None if args.iid else args.alpha,
        rounds=args.rounds,
        local_steps=args.local_steps,
        batch_size=args.batch_size,
        hidden=tuple(args.hidden),
        activation=args.activation,
        conv=tuple(args.conv) if args.conv else None,
        kernel=args.kernel,
        stride=args.stride,
        seeds=args.seeds,
        seed=args.seed,
        num_samples=args.samples,
        data=args.data,
        eval_every=args.eval_every,
        hyper=hyper,
        backend=args.backend,
        dtype=np.float32 if args.float32 else None,
        progress=True,
    )
    out = human_stream(args)
    s = res.setting
    print(
        f"N1: {s['model']} ({s['params']} parameters) on {s['data']}, {s['n_clients']} clients, "
        f"{s['clients_per_round']} per round, {s['partition']}, K={s['local_steps']}, "
        f"batch {s['batch_size']}, {s['seeds']} seeds; test accuracy % (mean +- std over seeds)",
        file=out,
    )
    if res.results:
        names = list(res.results)
        rounds = next(iter(res.results.values())).rounds
        print(f"{'round':>5} " + " ".join(f"{n:>16}" for n in names), file=out)
        for j, r in enumerate(rounds):
            cells = []
            for n in names:
                a = 100 * res.results[n].accuracy[:, j]
                sd = a.std(ddof=1) if a.size > 1 else 0.0
                cells.append(f"{a.mean():9.2f} +- {sd:4.2f}")
            print(f"{int(r):>5} " + " ".join(f"{c:>16}" for c in cells), file=out)
        summ = res.summary()
        print(
            "final: "
            + ", ".join(
                f"{n} {100 * v['mean']:.2f} +- {100 * v['std']:.2f}" for n, v in summ.items()
            ),
            file=out,
        )
        print("ordering (best first): " + " > ".join(res.ordering()), file=out)
    write_json(res.to_dict(), args)
    if args.plot and res.results:
        for path in save_n1_figure(res, args.out):
            print(f"wrote {path}", file=out)
    return 0
