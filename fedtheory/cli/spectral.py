"""``fedtheory spectral``: spectral gaps of topologies or matrices, and the theorems' conditions.

Examples::

    fedtheory spectral --report                # the papers' rho values and settings table
    fedtheory spectral ring -N 50 --json       # rho_norm, rho_lambda2, one_minus_rho, ...
    fedtheory spectral --matrix W.npy --json out.json
    fedtheory spectral --edges edges.txt --weights max-degree
    fedtheory spectral torus -N 64 --setting N=64,M=8 --plot torus.png
    fedtheory spectral --setting N=100,M=10,C=5,m=2,K=24
    fedtheory spectral --plot-families rho_vs_n.png

A flag the chosen graph does not read is refused (``--p`` on a ring, ``--weights`` with
``--matrix``, graph flags without a graph). Large graphs are estimated before any work (memory
beyond ``--max-memory``, default the memory available, is refused) and long work says so.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from fedtheory.cli.common import (
    add_clients,
    add_json,
    add_max_memory,
    add_parser,
    json_to_stdout,
    write_json,
)
from fedtheory.errors import FedTheoryError, UnknownOptionError
from fedtheory.graphs import closedforms as CF
from fedtheory.graphs import conditions as Cn
from fedtheory.graphs import families as F
from fedtheory.graphs import topologies as T
from fedtheory.graphs.conditions import afga_bound, cafga_bound, hafed_bound
from fedtheory.graphs.families import FAMILIES, TIME_VARYING
from fedtheory.graphs.neighbors import effective_number_of_neighbors
from fedtheory.graphs.plot import draw_mixing_graph, plot_rho_versus_n
from fedtheory.graphs.spectral import cluster_gaps, sequence_gap, spectral_gap, topology_gap
from fedtheory.io import read_array
from fedtheory.validation import check_int

DESCRIPTION = (
    "Spectral gap rho = ||W - 11^T/n||_2 and |lambda_2(W)| of a topology, a matrix file or an "
    "edge list, with 1 - rho computed accurately from I - W; and which topologies meet the "
    "spectral-gap conditions of AFGA (rho <= M/(M+N)), CAFGA (rho_max <= m/(m+n)) and HA-Fed "
    "(rho_max <= 1/(2 sqrt(n-m)), C < n) in the papers' settings or yours: --report prints the "
    "papers' values and settings table (tens of seconds), --setting adds yours."
)


def register(subparsers: Any) -> None:
    p = add_parser(
        subparsers,
        "spectral",
        help="spectral gaps, closed forms and theorem conditions",
        description=textwrap.fill(DESCRIPTION, 88),
        examples=[
            line.strip().split("  #")[0].strip()
            for line in __doc__.split("Examples::", 1)[1].strip().splitlines()
        ],
    )
    p.add_argument(
        "topology",
        nargs="?",
        metavar="TOPOLOGY",
        help=f"one of: {', '.join([*FAMILIES, *TIME_VARYING])}",
    )
    src = p.add_argument_group("graph")
    add_clients(
        src,
        note=": the graph's nodes n (required with a TOPOLOGY; with --edges, default = largest "
        "node id + 1)",
        aliases=("--n",),
    )
    src.add_argument(
        "--matrix",
        metavar="W.npy",
        help="a mixing matrix: .npy, .npz (scipy.sparse.save_npz), .csv or .txt",
    )
    src.add_argument(
        "--edges",
        metavar="FILE",
        help="edge list, two integer columns; Metropolis-Hastings unless --weights",
    )
    src.add_argument(
        "--weights",
        metavar="RULE",
        help="uniform, metropolis, max-degree, laplacian or random (default: the topology's own)",
    )
    src.add_argument("--lazy", action="store_true", help="use (W + I) / 2")
    src.add_argument("--alpha", type=float, help="step of the Laplacian rule I - alpha L")
    src.add_argument("--seed", type=int, default=0, help="seed of random graphs/weights")
    src.add_argument("--p", type=float, help="Erdos-Renyi edge probability")
    src.add_argument("--radius", type=float, help="random-geometric radius")
    src.add_argument("--rows", type=int, help="torus/grid rows")
    src.add_argument("--cols", type=int, help="torus/grid columns")
    src.add_argument(
        "--clusters",
        type=int,
        metavar="C",
        help="C disjoint copies of the topology (block diagonal): rho_k, rho_max",
    )
    num = p.add_argument_group("numerics")
    num.add_argument(
        "--method",
        choices=("auto", "closed-form", "dense", "sparse"),
        default="auto",
        help="auto: a named topology's closed form when its matrix would be large, else the "
        "dense or sparse eigen-solver",
    )
    num.add_argument(
        "--solver",
        choices=("auto", "lu", "amg"),
        default="auto",
        help="sparse eigen-solver for I - W",
    )
    num.add_argument(
        "--atol", type=float, default=1e-10, help="tolerance of the row/column-sum checks"
    )
    num.add_argument(
        "--gamma",
        type=float,
        help="also report the effective number of neighbours n_W(gamma) (Vogels et al. 2022)",
    )
    cond = p.add_argument_group("theorem conditions")
    cond.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="N=..,M=..",
        help="a setting KEY=VALUE,... with N, M, C, n, m, K (repeatable); e.g. "
        "N=50,M=5 or N=100,M=5,C=5,m=1,K=24",
    )
    cond.add_argument(
        "--report",
        action="store_true",
        help="the papers' rho values and settings table",
    )
    cond.add_argument(
        "--topologies",
        metavar="A,B,..",
        help="topologies of the settings table (default: all families)",
    )
    cond.add_argument("--draws", type=int, default=20, help="seeds per random family in the tables")
    out = p.add_argument_group("output")
    add_json(out, "one JSON object")
    out.add_argument("--plot", metavar="OUT.png", help="draw the graph with weights and rho")
    out.add_argument(
        "--plot-families",
        metavar="OUT.png",
        help="plot rho and 1 - rho against n for the topology families",
    )
    add_max_memory(out)
    p.set_defaults(func=run)


#: The flags of a topology family's parameters: flag -> parameter of its adjacency constructor
#: (:func:`~fedtheory.graphs.families.family_parameters` says which a family reads).
FAMILY_FLAGS = {"--p": "p", "--radius": "radius", "--rows": "rows", "--cols": "cols"}
#: Flags that shape a graph: refused where there is no graph (the report and settings tables).
GRAPH_FLAGS = {
    "--clients": "clients",
    "--weights": "weights",
    "--lazy": "lazy",
    "--alpha": "alpha",
    "--clusters": "clusters",
    "--gamma": "gamma",
}


def _check_flags(args: argparse.Namespace) -> None:
    """Refuse a flag the chosen graph does not read (one line naming it)."""
    given = lambda dest: getattr(args, dest) not in (None, False)  # noqa: E731
    family_flags = [f for f, dest in FAMILY_FLAGS.items() if given(dest)]
    if not (args.topology or args.matrix or args.edges):
        stray = [f for f, d in GRAPH_FLAGS.items() if given(d)] + family_flags
        if stray:
            raise UnknownOptionError(
                f"{', '.join(stray)} shape{'s' if len(stray) == 1 else ''} a graph: give a "
                "TOPOLOGY, --matrix or --edges "
                "(or --report for the papers' values and settings)"
            )
        return
    if args.matrix:
        stray = [f for f in ("--weights", "--lazy", "--alpha") if given(f[2:])] + family_flags
        if stray:
            raise UnknownOptionError(
                f"--matrix is used as it is: {', '.join(stray)} would not change it"
            )
        return
    if args.edges or args.topology.strip().lower() in F.TIME_VARYING:
        reads: tuple[str, ...] = ()
        what = "an --edges graph" if args.edges else f"the {args.topology} graph"
    else:
        reads = F.family_parameters(args.topology)
        what = f"the {F.family(args.topology).name} topology"
    stray = [f for f in family_flags if FAMILY_FLAGS[f] not in reads]
    if stray:
        own = [f for f, key in FAMILY_FLAGS.items() if key in reads]
        raise UnknownOptionError(
            f"{what} does not read {', '.join(stray)}"
            + (f" (it reads {', '.join(own)})" if own else "")
        )
    rule = args.weights or (None if args.edges else F.family(args.topology).default_weights)
    if args.alpha is not None and rule != "laplacian":
        raise UnknownOptionError(
            f"--alpha is the step of --weights laplacian (I - alpha L); the weights here are "
            f"{rule or 'metropolis'}"
        )


# ------------------------------------------------------------------------------------------


def _family_params(args: argparse.Namespace, name: str) -> dict[str, Any]:
    kw: dict[str, Any] = {}
    if name in ("torus", "grid"):
        kw.update(rows=args.rows, cols=args.cols)
    if name == "erdos-renyi" and args.p is not None:
        kw["p"] = args.p
    if name == "random-geometric" and args.radius is not None:
        kw["radius"] = args.radius
    return kw


def _build(args: argparse.Namespace) -> tuple[Any, dict[str, Any], Any]:
    """(W or list of W, description, cluster labels)."""

    given = [x for x in (args.topology, args.matrix, args.edges) if x]
    if len(given) > 1:
        raise FedTheoryError("give one of TOPOLOGY, --matrix and --edges")
    if args.clusters and not args.topology:
        raise FedTheoryError(
            "--clusters makes C copies of a TOPOLOGY; a --matrix or --edges graph is used as it is"
        )
    if args.matrix:
        W = read_array(args.matrix, what="a mixing matrix", sparse=True)
        return W, {"source": "matrix", "path": args.matrix}, None
    if args.edges:
        A = T.from_edges(T.load_edges(args.edges), args.clients)
        rule = args.weights or "metropolis"
        W = F.weights_for(A, rule, alpha=args.alpha, seed=args.seed, make_lazy=args.lazy)
        return W, {"source": "edges", "path": args.edges, "weights": rule}, None
    name = args.topology.strip().lower()
    if args.clients is None:
        raise FedTheoryError(f"topology {args.topology!r} needs -N/--clients (number of nodes)")
    n = check_int("-N/--clients (number of nodes)", args.clients, minimum=2)
    if name in F.TIME_VARYING:
        return F.one_peer_exponential(n), {"source": "topology", "topology": name}, None
    fam = F.family(name)
    kw = _family_params(args, fam.name)
    common = dict(weights=args.weights, lazy_weights=args.lazy, alpha=args.alpha, **kw)
    desc = {
        "source": "topology",
        "topology": fam.name,
        "weights": args.weights or fam.default_weights,
        "seed": args.seed if fam.random or args.weights == "random" else None,
        **{k: v for k, v in kw.items() if v},
    }
    if args.clusters:
        W, labels = F.clustered(args.clusters, n, fam.name, seed=args.seed, **common)
        desc.update(clusters=args.clusters, nodes_per_cluster=n)
        return W, desc, labels
    if args.plot is None and args.gamma is None and fam.name != "identity":
        return None, desc, None  # the gap alone: topology_gap may answer in closed form
    return F.mixing_matrix(fam.name, n, seed=args.seed, **common), desc, None


def _fmt(x: Any, digits: int = 4) -> str:
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        if x == float("inf"):
            return "inf"
        return f"{x:.{digits}g}" if abs(x) >= 1e-3 or x == 0 else f"{x:.3e}"
    return str(x)


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)
    ]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    sep = "  ".join("-" * w for w in widths)
    body = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join([line, sep, *body])


def _holds(frac: float | None, draws: int) -> str:
    if frac is None:
        return "n/a"
    if draws == 1:
        return "yes" if frac == 1.0 else "no"
    return f"{100 * frac:.0f}%"


def _rho_cell(med: float | None, lo: float | None, hi: float | None, draws: int) -> str:
    if med is None:
        return "n/a"
    if draws == 1:
        return f"{med:.4f}"
    return f"{med:.3f} [{lo:.3f}, {hi:.3f}]"


def _settings_text(settings: list[Any], rows_by_setting: list[list[Any]], draws: int) -> str:

    out = []
    for S, rows in zip(settings, rows_by_setting, strict=True):
        out.append(
            f"\n{S.name} ({S.source}): N = {S.N}, M = {S.M}; C = {S.C} clusters of n = {S.n}, "
            f"m = {S.m}; K = {S.K}\n"
            f"  AFGA   (000 Thm 4.6):  rho     <= M/(M+N)        = {afga_bound(S.N, S.M):.4f}\n"
            f"  CAFGA  (000 Thm D.3):  rho_max <= m/(m+n)        = {cafga_bound(S.n, S.m):.4f}\n"
            f"  HA-Fed (004 Cor 5.11): rho_max <= 1/(2 sqrt(n-m)) = "
            f"{_fmt(hafed_bound(S.n, S.m))} and C < n: {_fmt(S.C < S.n)}"
        )
        body = [
            [
                r.topology,
                r.weights,
                _rho_cell(r.rho_N, r.rho_N_q05, r.rho_N_q95, r.draws),
                _holds(r.afga_holds_fraction, r.draws),
                _rho_cell(r.rho_max, r.rho_max_q05, r.rho_max_q95, r.draws),
                _holds(r.cafga_holds_fraction, r.draws),
                _holds(r.hafed_holds_fraction, r.draws),
                _fmt(r.d_tau_rho, 3),
            ]
            for r in rows
        ]
        out.append(
            _table(
                [
                    "topology",
                    "weights",
                    f"rho (N={S.N})",
                    "AFGA",
                    f"rho_max (n={S.n})",
                    "CAFGA",
                    "HA-Fed",
                    "D_tau,rho",
                ],
                body,
            )
        )
    out.append(
        f"\nRandom families: median [5%, 95%] of rho over {draws} seeds, and the share of "
        "seeds meeting each condition. n/a: the topology does not exist on that n."
    )
    return "\n".join(out)


def _paper_text(values: list[Any]) -> str:
    body = []
    for v in values:
        if v.draws == 1:
            meas = f"{v.measured:.6f}"
            verdict = "matches" if v.matches_3_decimals else "DIFFERS"
        else:
            meas = f"{v.measured:.3f} [{v.q05:.3f}, {v.q95:.3f}]"
            verdict = f"{100 * v.stated_percentile:.0f}% of {v.draws} seeds <= stated"
        body.append([v.where, v.graph, v.topology, str(v.n), f"{v.stated:g}", meas, verdict])
    return "Spectral gaps stated in the papers (claim G1) and measured here:\n" + _table(
        ["where", "graph", "family measured", "n", "stated", "measured", "verdict"], body
    )


def _report(args: argparse.Namespace) -> int:

    settings = [Cn.parse_setting(s) for s in args.setting]
    if args.report or not settings:
        settings = [*Cn.PAPER_SETTINGS, *settings]
    topos = (
        tuple(t.strip() for t in args.topologies.split(",") if t.strip())
        if args.topologies
        else Cn.DEFAULT_TOPOLOGIES
    )

    draws = check_int("--draws", args.draws, minimum=1)
    rows = [Cn.evaluate_setting(S, topos, draws=draws, seed=args.seed) for S in settings]
    paper = (
        Cn.paper_values(draws=max(draws, 1), seed=args.seed)
        if (args.report or not args.setting)
        else []
    )
    if args.plot_families:
        _plot_families(args)
    write_json(
        {
            "paper_values": [v.to_dict() for v in paper],
            "settings": [
                {"setting": S.to_dict(), "rows": [r.to_dict() for r in rs]}
                for S, rs in zip(settings, rows, strict=True)
            ],
        },
        args,
    )
    if json_to_stdout(args):
        return 0
    if paper:
        print(_paper_text(paper))
    print(_settings_text(settings, rows, draws))
    return 0


def _plot_families(args: argparse.Namespace) -> None:

    path = plot_rho_versus_n(args.plot_families, seed=args.seed)
    print(f"fedtheory: wrote {path}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    _check_flags(args)
    if not (args.topology or args.matrix or args.edges):
        if not (args.report or args.setting or args.plot_families):
            # a bare ``fedtheory spectral`` used to start the papers' tables (a minute)
            raise FedTheoryError(
                "give a graph (TOPOLOGY -N N, --matrix W.npy or --edges FILE), a --setting "
                "N=..,M=.., or --report for the papers' values and settings table (tens of "
                "seconds); e.g. fedtheory spectral ring -N 50"
            )
        if args.plot:
            raise FedTheoryError("--plot needs a TOPOLOGY, --matrix or --edges")
        if args.plot_families and not (args.report or args.setting or args.json is not None):
            _plot_families(args)
            return 0
        return _report(args)
    return _single(args)


def _single(args: argparse.Namespace) -> int:

    W, desc, labels = _build(args)
    opts = dict(method=args.method, solver=args.solver, atol=args.atol)
    result: dict[str, Any] = dict(desc)
    if W is None:  # a named topology: its closed form when the matrix would be large
        fam = desc["topology"]
        common = dict(
            weights=args.weights, lazy_weights=args.lazy, alpha=args.alpha, seed=args.seed
        )
        g = topology_gap(fam, args.clients, **common, **opts, **_family_params(args, fam))
        if not g.connected:  # its components are reported: they need the matrix
            W = F.mixing_matrix(fam, args.clients, **common, **_family_params(args, fam))
        Wmain = W
    elif isinstance(W, list):  # time-varying: one period of the one-peer exponential graph
        seq = sequence_gap(W, atol=args.atol)
        P = np.eye(W[0].shape[0])
        for Wt in W:
            P = (Wt.toarray() if sp.issparse(Wt) else Wt) @ P
        g = spectral_gap(P, **opts)
        result.update(
            matrix="product of one period W_(tau-1) ... W_0", rho_each_round=list(seq.rho_each)
        )
        Wmain = P
    else:
        g = spectral_gap(W, **opts if args.method != "closed-form" else {**opts, "method": "auto"})
        Wmain = W
    result.update(g.to_dict())
    if args.topology and not args.clusters and not args.lazy and not args.weights:
        cf = (
            CF.closed_form(desc.get("topology", ""), g.n, rows=args.rows, cols=args.cols)
            if desc.get("topology") in ("ring", "complete", "torus", "hypercube", "exponential")
            else None
        )
        if cf is not None:
            result["closed_form"] = {"rho": cf[0], "one_minus_rho": cf[1]}
    if labels is not None or not g.connected:
        cg = cluster_gaps(Wmain, labels, **opts)
        result["clusters_gaps"] = cg.to_dict()
    if args.gamma is not None:
        result["effective_neighbors"] = {
            "gamma": args.gamma,
            "n_W": effective_number_of_neighbors(Wmain, args.gamma),
        }
    if args.setting:
        cl = result.get("clusters_gaps", {}) if labels is not None else {}
        result["conditions"] = [
            Cn.graph_conditions(
                Cn.parse_setting(text),
                n=g.n,
                rho=g.rho_norm,
                rho_max=cl.get("rho_max", g.rho_norm),
                one_minus_rho_max=cl.get("one_minus_rho_max", g.one_minus_rho),
            )
            for text in args.setting
        ]
    if labels is not None:  # disconnected by design: the clustered theorems use rho_k
        result["warnings"] = [
            f"{args.clusters} disjoint clusters: the whole W is disconnected by design, so "
            "AFGA's rho = 1; CAFGA (000 Thm D.3) and HA-Fed (004 Cor 5.11) use rho_max over "
            "the clusters"
        ]
    for w in result["warnings"]:
        print(f"fedtheory: warning: {w}", file=sys.stderr)
    if args.plot:
        title = desc.get("topology") or Path(desc.get("path", "W")).name
        lattice = desc.get("topology") in ("torus", "grid")
        path = draw_mixing_graph(
            Wmain, args.plot, title=title, layout="grid" if lattice else "auto"
        )
        result["plot"] = str(path)
    if args.plot_families:
        _plot_families(args)
    write_json(result, args)
    if not json_to_stdout(args):
        print(_single_text(result))
    return 0


def _single_text(r: dict[str, Any]) -> str:
    what = r.get("topology") or r.get("path")
    lines = [f"{what}: n = {r['n']}" + (f", weights {r['weights']}" if r.get("weights") else "")]
    if "matrix" in r:
        lines.append(
            f"  {r['matrix']}; rho of each round: "
            + ", ".join(f"{x:.4g}" for x in r["rho_each_round"])
        )
    lines += [
        f"  rho = ||W - J||_2   {r['rho_norm']!r}",
        f"  |lambda_2(W)|       {r['rho_lambda2']!r}",
        f"  1 - rho             {r['one_minus_rho']!r}   (from I - W, not 1.0 - rho)",
    ]
    if "closed_form" in r:
        c = r["closed_form"]
        lines.append(f"  closed form         rho {c['rho']!r}, 1 - rho {c['one_minus_rho']!r}")
    lines.append(
        f"  symmetric {_fmt(r['symmetric'])}, doubly stochastic "
        f"{_fmt(r['doubly_stochastic'])}, connected {_fmt(r['connected'])} "
        f"({r['n_components']} component{'s' if r['n_components'] != 1 else ''})"
    )
    lines.append(f"  method: {r['method']}")
    if "clusters_gaps" in r:
        c = r["clusters_gaps"]
        lines.append(
            f"  clusters: sizes {list(c['sizes'])}, rho_k "
            f"{[round(x, 6) for x in c['rho_k']]}, rho_max {c['rho_max']:.6g}"
        )
    if "effective_neighbors" in r:
        e = r["effective_neighbors"]
        lines.append(f"  effective number of neighbours n_W({e['gamma']}) = {e['n_W']:.6g}")
    for c in r.get("conditions", []):
        S = c["setting"]
        lines.append(
            f"  setting {S['name']}: AFGA rho <= {c['afga']['bound']:.4g}: "
            f"{_fmt(c['afga']['holds'])}; CAFGA rho_max <= {c['cafga']['bound']:.4g}: "
            f"{_fmt(c['cafga']['holds'])}; HA-Fed rho_max <= {_fmt(c['hafed']['bound'])} and "
            f"C < n: {_fmt(c['hafed']['holds'])}; D_tau,rho = {c['d_tau_rho']:.4g}"
        )
    return "\n".join(lines)
