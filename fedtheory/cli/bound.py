"""``fedtheory bound``: put a stated bound beside the exact value, and search for its breaker.

Contract (other tools rely on it)::

    fedtheory bound SPEC.toml [--class quadratic|smooth-strongly-convex|both] [--search N]
                              [--seed S] [--json OUT]
    fedtheory bound --template [QUANTITY]

prints a short table and one sentence per class; ``--json`` writes an object with ``violated``
(bool), ``worst`` {``stated``, ``exact``, ``ratio``, ``eta``, ``problem_file``}, ``instances``
(list of {``stated``, ``exact``, ``condition_met``}), with a free constant
``implied_constant`` {``value``, ``problem_file``}, and per class ``class``, ``unbounded`` and
``solver`` {``name``, ``status``, ``value``, ``cross_check``} (``--class both``: the two under
``classes``, their ``ratio`` and ``by_setting``). A violated bound's worst quadratic instance
is written as an ``.npz`` problem file (and ``.p.npy`` probabilities) that ``fedtheory rate
--problem-file`` and ``fedtheory simulate --problem-file`` read (``worst.command`` is the
``rate`` command that reproduces the exact value); over smooth strongly convex clients it is an
interpolation file that ``fedtheory simulate --problem-file`` replays. The quadratic check
also writes ``coverage``, ``shape_fit`` and ``notes``, saves its worst instance whether or not
it violates, and prints its N, M, K, d, eta and ``worst.command``; a line ``note: ...`` says
each spec key that a flag or the named problem overrode. docs/bounds.md describes the spec
format.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from fedtheory.bounds import (
    CLASS_CHOICES,
    DEFAULT_SEARCH,
    GENERAL,
    QUANTITIES,
    check_classes,
    load_spec,
    paper_bounds,
)
from fedtheory.bounds.spec import key_help, template
from fedtheory.cli.common import (
    add_json,
    add_parser,
    add_setting,
    add_settings,
    human_stream,
    write_json,
)
from fedtheory.errors import FedTheoryError
from fedtheory.io import check_output_dir, working

#: Its own flags, which are no run setting: the bound's (the spec, the search, the class of
#: clients it is checked on) and its outputs.
OWN_FLAGS = ("spec", "template", "search", "functions", "out_dir", "json")


def register(subparsers: Any) -> None:
    p = add_parser(
        subparsers,
        "bound",
        help="check a stated bound against exact rates; search an instance class for a breaker",
        description=(
            "Evaluate a bound typed from a paper (a TOML spec: algorithm, setting, quantity, "
            "bound as an expression of named constants, step-size condition, optional free "
            "constant) against the exact oracle: on one instance (stated, exact, simulated, "
            "rounds to epsilon) and by a worst-case search over the spec's [class] of "
            "quadratic least-squares clients (random draws, structured extremes, then an ascent with "
            "the exact gradient). A "
            "violated bound's worst instance is saved as a problem file that "
            "'fedtheory rate --problem-file' reproduces. --class smooth-strongly-convex (or "
            "[class] functions) takes the worst case over every L-smooth mu-strongly convex "
            "client by performance estimation (the optional extra pep); --class both puts the "
            "two classes side by side. Shipped bound files of the three "
            f"papers: {', '.join(paper_bounds()) or 'none'} (pass the name instead of a path). "
            "--problem or --problem-file checks on that instance instead of the spec's; --seeds "
            "simulates that many seeds on it (default: the spec's seeds, 32; 0: no simulation); "
            "--seed seeds the search and the simulation."
        ),
        examples=[
            "fedtheory bound my-theorem.toml --search 200 --json out.json",
            "fedtheory bound floor.toml --class both",
            "fedtheory bound focus-thm1-rate --problem figure4",
            "fedtheory bound spec.toml --problem-file counterexample.npz --seeds 64",
            "fedtheory bound --template rounds_to > spec.toml && fedtheory bound spec.toml",
        ],
    )
    p.epilog = (
        f"{key_help()}\n\nThe format in full: docs/bounds.md; 'fedtheory bound --template "
        f"QUANTITY' prints a commented spec to start from.\n\n{p.epilog}"
    )
    p.add_argument(
        "spec",
        metavar="SPEC.toml",
        nargs="?",
        help="a bound spec (or a shipped bound's name); --template prints one",
    )
    p.add_argument(
        "--template",
        nargs="?",
        const="mean_square_rate",
        choices=list(QUANTITIES),
        metavar="QUANTITY",
        help="print a commented spec to start from, bounding QUANTITY (one of "
        f"{', '.join(QUANTITIES)}; default mean_square_rate), and exit: saved as a "
        "file it runs as is",
    )
    p.add_argument(
        "--search",
        type=int,
        default=None,
        metavar="N",
        help=f"random class draws (default {DEFAULT_SEARCH} with a [class], "
        "0: none), then structured extremes and an ascent from the best with N/4 "
        "more evaluations",
    )
    add_setting(p, "seed")
    p.add_argument(
        "--class",
        dest="functions",
        choices=CLASS_CHOICES,
        default=None,
        help="the clients the bound is checked on (default: the spec's [class] "
        "functions, else quadratic): quadratic (exact oracle and search), "
        f"{GENERAL} (performance estimation) or both",
    )
    src = p.add_mutually_exclusive_group()
    add_settings(src, "problem", "problem_file")
    add_setting(p, "seeds", default=None)
    p.add_argument(
        "--out-dir",
        metavar="DIR",
        default=None,
        help="where counterexample files go (default: the folder of --json OUT, "
        "else the current folder)",
    )
    add_json(p, "the check (violated, worst, instances, implied_constant, ...)")
    p.set_defaults(func=run)


def _spec_path(text: str) -> str:
    if os.path.exists(text) or text.endswith(".toml"):
        return text
    shipped = paper_bounds()
    if text in shipped:
        return str(shipped[text])
    raise FedTheoryError(
        f"no such file: {text} (nor a shipped bound: {', '.join(shipped) or 'none'})"
    )


def _what_runs(spec: Any, args: argparse.Namespace) -> str:
    """The work a check does, for its progress line: the named instance (exact value and
    simulation), the search over quadratic clients, the worst case over the general class."""
    parts = []
    named = args.problem or args.problem_file or spec.problem or spec.problem_file
    if named:
        parts.append(f"the instance {named}")
    cls = spec.instance_class
    functions = args.functions or (cls.functions if cls is not None else "quadratic")
    if cls is not None and functions in ("quadratic", "both") and args.search != 0:
        n = DEFAULT_SEARCH if args.search is None else args.search
        parts.append(f"a search of {n} draws over the class")
    if functions in (GENERAL, "both"):
        parts.append(f"the worst case over {GENERAL} clients (performance estimation)")
    return " and ".join(parts) or "the spec"


def run(args: argparse.Namespace) -> int:
    if args.template is not None:
        if args.spec is not None:
            raise FedTheoryError("--template prints a spec and exits: give no SPEC.toml with it")
        print(template(args.template), end="")
        return 0
    if args.spec is None:
        raise FedTheoryError(
            "give a bound spec SPEC.toml or a shipped bound's name (fedtheory bound --template "
            "prints a spec to start from; fedtheory bound --help lists the keys)"
        )
    spec = load_spec(_spec_path(args.spec))
    if args.search is not None and args.search < 0:
        raise FedTheoryError(f"--search N must be >= 0, got {args.search}")
    if args.seeds is not None and args.seeds < 0:
        raise FedTheoryError(f"--seeds must be >= 0, got {args.seeds}")
    out_dir = args.out_dir
    if out_dir is None:
        out_dir = Path(args.json).parent if args.json not in (None, "-") else Path.cwd()
    out_dir = check_output_dir(out_dir)
    with working(f"checking {Path(spec.path).stem}: {_what_runs(spec, args)}"):
        res = check_classes(
            spec,
            functions=args.functions,
            search=args.search,
            seed=args.seed,
            problem=args.problem,
            problem_file=args.problem_file,
            measure_seeds=args.seeds,
            out_dir=out_dir,
            name=Path(spec.path).stem,
            progress=True,
        )
    out = human_stream(args)
    title = spec.title or Path(spec.path).stem
    print(
        f"{title}: {spec.quantity} <= {spec.bound}"
        + (f" if {' and '.join(spec.condition)}" if spec.condition else ""),
        file=out,
    )
    for label, r in (("quadratic clients", res.quadratic), (f"{GENERAL} clients", res.general)):
        if r is not None:
            if res.functions == "both":
                print(f"-- {label}", file=out)
            for note in getattr(r, "notes", ()):  # what a flag or the problem overrode
                print(f"note: {note}", file=out)
            table = r.table()
            if table:
                print(table, file=out)
            print(r.sentence(), file=out)
    if res.functions == "both" and res.by_setting():
        row = max(res.by_setting(), key=lambda r: r["general"])
        print(f"general / quadratic worst: {row['ratio']:.6g}", file=out)
    write_json(res.to_dict(), args)
    return 0
