"""``fedtheory participation MODEL``: inclusion probabilities and effective FedAvg weights.

Prints pi_i = P(i in S) and, for each aggregation rule, q_i = E[w_i | the round is executed]
(003, Section 3.1 and Appendix C), each with how it was obtained: an exact closed form, dynamic
program or enumeration, or Monte Carlo with a standard error. ``--json [OUT]`` gives the object
other tools read (keys ``inclusion``, ``q_mean``, ``method`` = ``exact`` | ``monte-carlo``,
``stderr``); ``--plot`` draws the participation raster and q.

A flag the chosen model does not read (``--replace`` without weighted, ``--a`` without markov,
``--rounds``/``--seed`` without ``--plot``, ...) is refused, as :func:`make_participation`
refuses keywords. The report's memory and time grow with N: both are estimated before any work
(:data:`REPORT_BYTES_PER_CLIENT`, :data:`REPORT_SECONDS_PER_CLIENT`); beyond the memory limit
(``--max-memory``, default the memory available) it is refused, and a long report says so first.
"""

from __future__ import annotations

import sys

from fedtheory.cli.common import (
    add_json,
    add_max_memory,
    add_parser,
    add_setting,
    json_to_stdout,
    refuse_unread_model_settings,
    write_json,
)
from fedtheory.errors import UnknownOptionError
from fedtheory.io import pyplot, save_figure
from fedtheory.participation import RULES, model_names
from fedtheory.participation.plot import plot_participation
from fedtheory.simulation.spec import PARTICIPATION_SETTINGS, build_participation
from fedtheory.validation import announce, check_memory

#: The participation settings the command takes (flags: the table's), and the older spellings
#: it keeps.
SETTINGS = ("clients", *PARTICIPATION_SETTINGS)
ALIASES = {"empty": ("--empty-policy",), "markov_a": ("--a",), "markov_b": ("--b",)}
#: How a refusal names each flag: the spelling this command has always had.
SPELLED = {"empty": "--empty-policy", "markov_a": "--a", "markov_b": "--b"}

#: Peak bytes per client of the report and its table or JSON (pi, q and standard errors for
#: three rules, their JSON lists or table lines): measured 300 with --json at N = 10^6.
REPORT_BYTES_PER_CLIENT = 320
#: Seconds per client of the report and its output: measured 5e-6 at N = 10^6 (uniform).
REPORT_SECONDS_PER_CLIENT = 5e-6


def register(subparsers) -> None:
    p = add_parser(
        subparsers,
        "participation",
        help="inclusion probabilities and effective FedAvg weights of a participation model",
        description=(
            "Report, for a participation model of 003 Sec. 3.1, each client's inclusion "
            "probability pi_i and its effective FedAvg weight q_i under the plain mean, "
            "normalized-p and unbiased 1/(N pi_i) aggregation rules, exactly where a closed form, "
            "dynamic program or enumeration exists and by Monte Carlo (with standard errors) "
            "otherwise."
        ),
        examples=[
            "fedtheory participation uniform -N 16 -M 4",
            "fedtheory participation weighted -M 4 --probabilities p.npy --json q.json",
            "fedtheory participation markov -N 10 -M 3 --plot markov.png",
        ],
    )
    p.add_argument("model", choices=model_names(), help="participation model")
    for name in SETTINGS:
        add_setting(p, name, aliases=ALIASES.get(name, ()))
    add_json(p, "the report")
    p.add_argument("--plot", metavar="PNG", help="draw the participation raster and q")
    p.add_argument(
        "--all-rows",
        action="store_true",
        help="print one row per client (default: clients with equal rows share one row, and "
        "only the first and last 10 rows of a long table are shown)",
    )
    p.add_argument("--rounds", type=int, default=None, help="rounds drawn for --plot (default: 60)")
    p.add_argument("--seed", type=int, default=None, help="seed of the --plot draw (default: 0)")
    add_max_memory(p)
    p.set_defaults(func=main)


def check_flags(args) -> None:
    """Refuse a flag the model does not read, naming it and what the model reads."""
    refuse_unread_model_settings(args, args.model, named="", spelled=SPELLED)
    plot_only = [f for f in ("--rounds", "--seed") if getattr(args, f[2:]) is not None]
    if plot_only and not args.plot:
        raise UnknownOptionError(
            f"{' and '.join(plot_only)} set{'s' if len(plot_only) == 1 else ''} the draw of "
            "--plot: give --plot PNG, or leave them out"
        )


def build_model(args):
    """The model the command line names: the one builder of participation models from flat
    settings (:func:`~fedtheory.simulation.spec.build_participation`)."""
    check_flags(args)
    settings = {k: getattr(args, k) for k in PARTICIPATION_SETTINGS}
    return build_participation(args.model, args.clients, **settings).model


def report(model) -> dict:
    """The JSON report of a model: pi, q per rule, methods and standard errors."""

    pi = model.inclusion_probabilities()
    out = {
        "model": model.describe(),
        "n_clients": model.n_clients,
        "inclusion": pi.value,
        "inclusion_method": pi.method,
        "inclusion_stderr": pi.stderr,
    }
    exact = pi.exact
    for rule in RULES:
        q = model.effective_weights(rule)
        out[f"q_{rule}"] = q.value
        out[f"q_{rule}_method"] = q.method
        out[f"q_{rule}_stderr"] = q.stderr
        if rule == "mean":
            exact = exact and q.exact
            samples = max(pi.samples, q.samples)
    out["method"] = "exact" if exact else "monte-carlo"
    out["stderr"] = out["q_mean_stderr"]
    out["samples"] = samples
    out["p_empty"] = model.empty_probability()
    return out


#: Beyond this many distinct rows, the table shows the first and last :data:`EDGE_ROWS`.
MAX_ROWS = 40
EDGE_ROWS = 10


def _table(rep: dict, *, all_rows: bool = False) -> str:
    """The report as text: one row per client, except that consecutive clients with the same
    row are one row (``0-999``, with a count), and beyond :data:`MAX_ROWS` distinct rows only
    the first and last :data:`EDGE_ROWS` are shown (``all_rows``: every client, one row
    each; the JSON always has every client)."""
    lines = [
        f"{rep['model']['model']}: N = {rep['n_clients']}, P(empty round) = {rep['p_empty']:.6g}",
        f"pi: {rep['inclusion_method']};  q_mean: {rep['q_mean_method']};  "
        f"q_weighted: {rep['q_weighted_method']};  q_unbiased: {rep['q_unbiased_method']}",
        f"{'client':>9} {'pi_i':>12} {'q_mean':>12} {'q_weighted':>12} {'q_unbiased':>12}",
    ]
    mc = rep["method"] != "exact"
    cells = []
    for i in range(rep["n_clients"]):
        row = f"{rep['inclusion'][i]:>12.6g} {rep['q_mean'][i]:>12.6g} "
        row += f"{rep['q_weighted'][i]:>12.6g} {rep['q_unbiased'][i]:>12.6g}"
        if mc:
            row += f"   (stderr q_mean {rep['q_mean_stderr'][i]:.2g})"
        cells.append(row)
    groups: list[tuple[int, int, str]] = []  # (first client, last client, row)
    for i, row in enumerate(cells):
        if groups and not all_rows and groups[-1][2] == row:
            groups[-1] = (groups[-1][0], i, row)
        else:
            groups.append((i, i, row))
    shown = groups
    if not all_rows and len(groups) > MAX_ROWS:
        shown = groups[:EDGE_ROWS] + [None] + groups[-EDGE_ROWS:]
    for g in shown:
        if g is None:
            hidden = sum(b - a + 1 for a, b, _ in groups[EDGE_ROWS:-EDGE_ROWS])
            lines.append(f"{'...':>9} ({hidden} clients not shown: --all-rows, or --json)")
            continue
        a, b, row = g
        label = f"{a}" if a == b else f"{a}-{b}"
        lines.append(f"{label:>9} {row}" + (f"   ({b - a + 1} clients)" if b > a else ""))
    return "\n".join(lines)


def estimate(n: int, *, say: bool = True) -> None:
    """Refuse a report of ``n`` clients beyond the memory limit; say so when it is long."""
    what = f"the participation report of {n} clients"
    nbytes = REPORT_BYTES_PER_CLIENT * float(n)
    check_memory(what, nbytes, hint="ask for fewer clients -N")
    if say:
        announce(what, seconds=REPORT_SECONDS_PER_CLIENT * n, nbytes=nbytes)


def main(args) -> int:
    if args.clients is not None and args.clients >= 1:  # before the model holds per-client data
        estimate(args.clients, say=False)
    model = build_model(args)
    estimate(model.n_clients)
    rep = report(model)
    if args.plot:
        rounds = 60 if args.rounds is None else args.rounds
        fig, _ = plot_participation(model, rounds=rounds, seed=args.seed or 0)
        path = save_figure(fig, args.plot, dpi=120)
        pyplot().close(fig)
        rep["plot"] = str(path)
    write_json(rep, args)
    if not json_to_stdout(args):
        print(_table(rep, all_rows=args.all_rows))
        if args.plot:
            print(f"plot: {args.plot}", file=sys.stderr)
    return 0
