"""A run's settings, declared once: name, type, default, range or choices, help, who reads it.

:data:`SETTINGS` is the one declaration of every setting a run takes, from the problem to the
metrics. Every surface that takes a setting is generated from or checked against it:

- :class:`~fedtheory.simulation.spec.RunSpec` (its fields' defaults and checks) and
  :func:`~fedtheory.simulation.simulate`'s keywords (written out for the reader of the
  signature, checked against the table by ``tests/simulation/test_settings.py``);
- the flags of ``fedtheory simulate``, ``rate``, ``bound`` and ``participation``
  (:func:`fedtheory.cli.common.add_settings`: flag, type, default, choices, help);
- the keys of a sweep spec (:data:`fedtheory.sweep.spec.KEYS`) and of a bound spec
  (:data:`fedtheory.bounds.spec.RUN_KEYS`);
- the one participation builder (:func:`fedtheory.simulation.spec.build_participation`), which
  hands each participation setting to the models that read it (:attr:`Setting.key`).

A new setting is one entry here; a surface that takes it names it (a command's flag, a spec's
key). Who reads a setting is :attr:`Setting.reads`: the run itself, the problem, the
algorithm (:func:`readers` asks the algorithm registry which ones) or the participation model
(the participation registry's ``reads``). Help texts are written here only: a command or spec
shows the table's.

Examples
--------
>>> SETTINGS["clients_per_round"].flags
('--clients-per-round', '-M')
>>> SETTINGS["lr"].check(-1.0)
Traceback (most recent call last):
...
fedtheory.errors.AssumptionError: the local step size lr must be finite and > 0, got -1.0
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from typing import Any

from fedtheory.algorithms.base import AlgorithmConfig
from fedtheory.algorithms.registry import info, names
from fedtheory.backend import BACKENDS
from fedtheory.errors import AssumptionError
from fedtheory.participation import RULES, model_info, model_names
from fedtheory.problems import BUILTIN_PROBLEMS
from fedtheory.validation import check_int, check_positive

__all__ = ["SETTINGS", "Setting", "defaults", "readers"]

#: Who may read a setting (:attr:`Setting.reads`).
READERS = ("run", "problem", "algorithm", "participation")


@dataclass(frozen=True)
class Setting:
    """One run setting.

    Attributes
    ----------
    name : str
        Its name in Python, in specs and in JSON (``clients_per_round``); the command line
        spells it ``--clients-per-round``.
    kind : str
        ``"int"``, ``"float"``, ``"str"``, ``"bool"``, ``"algorithm"`` (a registered name or
        a user's ``FILE.py:NAME``), ``"path"`` (a file, read where it is used), ``"rate"`` (a number for every client; a file or an array of one per client),
        ``"names"`` (comma separated on the command line), ``"options"`` (an algorithm's
        own options: ``NAME=VALUE`` on the command line, a table in a spec) or ``"array"`` (a
        Python value only: no flag, no key).
    default : Any
        Its value when not given (an algorithm setting's is
        :class:`~fedtheory.algorithms.base.AlgorithmConfig`'s, which the algorithms read).
    help : str
        What it is, for ``--help``, spec errors and docs: written here only.
    reads : tuple of str
        Who reads it (:data:`READERS`).
    required : bool
        A command or spec that takes it needs it (``fedtheory simulate --lr``, a sweep's
        ``lr``); Python's :func:`~fedtheory.simulation.simulate` falls back on the default.
    choices : tuple, optional
    minimum : float, optional
        Numbers: the smallest value (0 for a real number: >= 0).
    positive : bool
        Numbers: > 0.
    sweepable : bool
        A sweep may give a list of it (an axis of the grid); else :attr:`why_scalar` says why
        not.
    key : str, optional
        The keyword of :func:`~fedtheory.participation.make_participation` it sets (a
        participation setting: ``m``, ``p``, ``empty``, ...), as the models' ``reads`` name it.
    keyword : str, optional
        Its Python keyword where that differs (``float32`` is ``dtype=numpy.float32``).
    flag : str, optional
        Its command-line flag where that is not ``--name-with-dashes`` (``--option NAME=VALUE``,
        repeated, sets ``options``).
    short : tuple of str
        More command-line spellings (``-M``).
    metavar : str, optional
    what : str, optional
        How an error message names it ("the number of rounds R"); default: its name.
    label : str, optional
        A short name (default: :attr:`help`): the CF ``long_name`` of a sweep store's
        coordinate for it (the stores made so far hold these, and a store's metadata must not
        change under it) and its name in a list of missing keys.
    units : str or None
        CF units of its coordinate in a sweep store (None for strings).
    """

    name: str
    kind: str
    default: Any
    help: str
    reads: tuple[str, ...] = ("run",)
    required: bool = False
    choices: tuple | None = None
    minimum: float | None = None
    positive: bool = False
    sweepable: bool = True
    why_scalar: str = ""
    key: str | None = None
    keyword: str | None = None
    flag: str | None = None
    short: tuple[str, ...] = ()
    metavar: str | None = None
    what: str | None = None
    label: str | None = None
    units: str | None = "1"

    @property
    def flags(self) -> tuple[str, ...]:
        """The command-line spellings: ``--name-with-dashes`` first."""
        return (self.flag or "--" + self.name.replace("_", "-"), *self.short)

    @property
    def long_name(self) -> str:
        """The CF ``long_name`` of its coordinate in a sweep store."""
        return self.label or self.help

    def check(self, value: Any) -> Any:
        """``value`` checked against the declaration (None passes: "not given").

        Raises
        ------
        AssumptionError
            A value of another type, out of range or not among the choices, naming the setting.
        """
        if value is None:
            return None
        what = self.what or self.name
        if self.kind == "int":
            lo = None if self.minimum is None else int(self.minimum)
            return check_int(what, value, minimum=lo)
        if self.kind in ("float", "rate") and not hasattr(value, "__len__"):
            if self.positive or self.minimum is not None:  # the table's numbers: > 0 or >= 0
                return check_positive(what, value, allow_zero=not self.positive)
            return value
        if self.choices is not None and value not in self.choices:
            raise AssumptionError(
                f"{what} must be one of {', '.join(map(str, self.choices))}, got {value!r}"
            )
        return value


#: The algorithms' shared settings' defaults: AlgorithmConfig's, which the algorithms read.
_ALG = {f.name: f.default for f in dataclass_fields(AlgorithmConfig)}
_ALGORITHM = ("algorithm",)
_PARTICIPATION = ("participation",)

#: ``--algorithm``'s help: what it accepts, and that a file named there is run.
ALGORITHM_HELP = (
    "a registered algorithm (any case; fedtheory simulate --list), or your own as FILE.py:NAME "
    "or MODULE:NAME (docs/own-algorithm.md): the file or module is imported, which runs its "
    "code as python would"
)

# The table. Order: the problem, the algorithm, participation, the run; a sweep store's
# dimensions follow it (fedtheory.sweep.spec.KEYS).
_TABLE = (
    # -- the problem ------------------------------------------------------------------------
    Setting(
        "problem",
        "str",
        None,
        "a built-in problem (fedtheory simulate --list)",
        reads=("problem",),
        choices=tuple(BUILTIN_PROBLEMS),
        label="a built-in problem",
        units=None,
    ),
    Setting(
        "problem_file",
        "path",
        None,
        "a problem file: .npz with A (N, n, d), b (N, n), optional lam; or a "
        "counterexample's interpolation file (replayed by simulate and sweeps; rate and "
        "bound need a quadratic)",
        reads=("problem",),
        metavar="F.npz",
        label=".npz with A (N, n, d), b (N, n), optional lam; or an interpolation file",
        units=None,
    ),
    Setting(
        "clients",
        "int",
        None,
        "N, the number of clients of a participation model, a graph or a bound's class search "
        "(a problem sets its own)",
        reads=("problem",),
        minimum=1,
        short=("-N",),
        metavar="N",
        sweepable=False,
        why_scalar="the problem sets it",
    ),
    Setting(
        "noise",
        "float",
        None,
        "gradient-noise sigma of stochastic gradients (default: the problem's)",
        reads=("problem",),
        minimum=0.0,
        metavar="SIGMA",
        sweepable=False,
        why_scalar="the problem sets it",
    ),
    # -- the algorithm ----------------------------------------------------------------------
    Setting(
        "algorithm",
        "algorithm",
        None,
        ALGORITHM_HELP,
        reads=_ALGORITHM,
        required=True,
        metavar="NAME",
        label="algorithm name (fedtheory simulate --list)",
        units=None,
    ),
    Setting(
        "options",
        "options",
        None,
        "an algorithm's own option, e.g. server_momentum=0.9 (repeatable; the algorithm's "
        "declared options: fedtheory simulate --list)",
        reads=_ALGORITHM,
        flag="--option",
        metavar="NAME=VALUE",
        sweepable=False,
        why_scalar="options are not swept: give an algorithm a table of its own",
    ),
    Setting(
        "local_steps",
        "int",
        _ALG["local_steps"],
        "K, the local steps each participant takes in a round",
        reads=_ALGORITHM,
        required=True,
        minimum=1,
        short=("-K",),
        metavar="K",
        what="the number of local steps K",
        label="local steps K",
    ),
    Setting(
        "lr",
        "float",
        _ALG["lr"],
        "local step size (FOCUS: its eta)",
        reads=_ALGORITHM,
        required=True,
        positive=True,
        metavar="ETA",
        what="the local step size lr",
    ),
    Setting(
        "global_lr",
        "float",
        _ALG["global_lr"],
        "the server's step size eta (1: plain averaging of the participants' models)",
        reads=_ALGORITHM,
        positive=True,
        metavar="ETA",
        what="the global step size",
        label="server step size",
    ),
    Setting(
        "beta1",
        "float",
        _ALG["beta1"],
        "server optimizer beta1 (first-moment decay)",
        reads=_ALGORITHM,
        minimum=0.0,
        label="server optimizer beta1",
    ),
    Setting(
        "beta2",
        "float",
        _ALG["beta2"],
        "server optimizer beta2 (second-moment decay)",
        reads=_ALGORITHM,
        minimum=0.0,
        label="server optimizer beta2",
    ),
    Setting("eps", "float", _ALG["eps"], "server optimizer eps", reads=_ALGORITHM, minimum=0.0),
    Setting(
        "eps_placement",
        "str",
        _ALG["eps_placement"],
        "server optimizer: eps inside or outside the square root (default: the optimizer's own)",
        reads=_ALGORITHM,
        choices=("inside", "outside"),
        label="eps inside or outside the root",
        units=None,
    ),
    Setting(
        "prox_mu",
        "float",
        _ALG["prox_mu"],
        "proximal weight mu (FedProx, FedDyn)",
        reads=_ALGORITHM,
        minimum=0.0,
        metavar="MU",
        label="FedProx proximal weight mu",
    ),
    Setting(
        "topology",
        "str",
        _ALG["topology"],
        "gossip graph of the gossip algorithms",
        reads=_ALGORITHM,
        units=None,
    ),
    Setting(
        "clusters",
        "int",
        _ALG["clusters"],
        "clusters C (clustered algorithms, cluster participation)",
        reads=(*_ALGORITHM, *_PARTICIPATION),
        key="n_clusters",
        minimum=1,
        metavar="C",
    ),
    # -- participation ----------------------------------------------------------------------
    Setting(
        "participation",
        "str",
        "full",
        "who takes part in a round: a participation model (fedtheory simulate --list)",
        reads=_PARTICIPATION,
        label="participation model",
        choices=tuple(model_names(settings_only=True)),
        units=None,
    ),
    Setting(
        "clients_per_round",
        "int",
        None,
        "clients per round M (cluster: per cluster)",
        reads=_PARTICIPATION,
        key="m",
        minimum=1,
        short=("-M",),
        metavar="M",
    ),
    Setting(
        "probabilities",
        "path",
        None,
        "participation probabilities p (.npy or text): weighted draw weights (default: "
        "the problem's own, as figure4's), bernoulli p_i",
        reads=_PARTICIPATION,
        key="p",
        metavar="p.npy",
        label="participation probabilities p (.npy or text)",
        units=None,
    ),
    Setting(
        "empty",
        "str",
        "redraw",
        "bernoulli: what a round nobody takes part in does (redraw it, or skip it)",
        reads=_PARTICIPATION,
        key="empty",
        choices=("redraw", "skip"),
        units=None,
    ),
    Setting(
        "replace",
        "bool",
        False,
        "weighted: draw with replacement (multinomial)",
        reads=_PARTICIPATION,
        key="replace",
    ),
    Setting(
        "markov_a",
        "rate",
        None,
        "markov: off->on probability a, one number for every client or a file of one per "
        "client (default: the stationary rate M/N)",
        reads=_PARTICIPATION,
        key="a",
        minimum=0.0,
        metavar="A",
    ),
    Setting(
        "markov_b",
        "rate",
        None,
        "markov: on->off probability b, one number for every client or a file of one per client",
        reads=_PARTICIPATION,
        key="b",
        minimum=0.0,
        metavar="B",
    ),
    Setting(
        "start",
        "str",
        "stationary",
        "markov: the law of round 0",
        reads=_PARTICIPATION,
        key="start",
        choices=("stationary", "on", "off"),
        units=None,
    ),
    Setting(
        "trace",
        "path",
        None,
        "trace: a recorded R x N participation mask (.npy, .csv or .txt)",
        reads=_PARTICIPATION,
        key="path",
        metavar="FILE",
        sweepable=False,
        why_scalar="a trace is not a setting of the simulations",
        units=None,
    ),
    Setting(
        "aggregation",
        "str",
        "mean",
        "how the participants' updates are weighted: their mean, by p, or unbiased (each by "
        "1/(N pi_i))",
        choices=RULES,
        label="aggregation rule",
        units=None,
    ),
    # -- the run ----------------------------------------------------------------------------
    Setting(
        "rounds",
        "int",
        None,
        "R, the communication rounds",
        label="rounds R",
        required=True,
        minimum=0,
        short=("-R",),
        metavar="R",
        what="the number of rounds R",
        sweepable=False,
        why_scalar="it is the length of the round dimension",
        units="rounds",
    ),
    Setting(
        "seeds",
        "int",
        1,
        "seeds S, run batched",
        minimum=1,
        metavar="S",
        what="the number of seeds",
        sweepable=False,
        why_scalar="it is the length of the seed dimension",
    ),
    Setting(
        "seed",
        "int",
        0,
        "root seed (and the random built-in problems' seed)",
        minimum=0,
        metavar="SEED",
        what="the seed",
        sweepable=False,
        why_scalar="the seed dimension already holds seeds 0..seeds-1 of the root seed; "
        "raise seeds",
    ),
    Setting(
        "seed_ids",
        "array",
        None,
        "which seeds of the root seed to run (default: 0..seeds-1)",
        sweepable=False,
    ),
    Setting(
        "seed_block",
        "int",
        None,
        "run the seeds in blocks of at most this many (a sweep's tasks; default: cache-"
        "sized blocks on NumPy, all seeds on a GPU, all of a sweep's seeds in one task)",
        minimum=1,
        metavar="B",
        sweepable=False,
        why_scalar="it sets the tasks, not the results",
    ),
    Setting(
        "workers",
        "int",
        1,
        "run the seed blocks in N processes (the numbers do not depend on N)",
        minimum=1,
        metavar="N",
        sweepable=False,
        why_scalar="it sets where tasks run, not the results",
    ),
    Setting(
        "backend",
        "str",
        None,
        "array backend (default: FEDTHEORY_BACKEND, else numpy)",
        choices=BACKENDS,
        sweepable=False,
        why_scalar="it sets where tasks run, not the results",
        units=None,
    ),
    Setting(
        "float32",
        "bool",
        False,
        "single precision instead of float64",
        keyword="dtype",
        sweepable=False,
        why_scalar="one store holds one precision",
    ),
    Setting(
        "record_every",
        "int",
        1,
        "record the metrics every K rounds and at the last (the others are null; the "
        "JSON's recorded_rounds lists them)",
        minimum=1,
        metavar="K",
        sweepable=False,
    ),
    Setting(
        "metrics",
        "names",
        None,
        "record these metrics, comma separated, or 'all' (default: error, or grad_norm2 "
        "where x* is unknown; also f_minus_f_star, grad_norm2 and the algorithm's own, "
        "e.g. consensus, tracking_residual; the others are null)",
        metavar="A,B,..",
        sweepable=False,
    ),
    Setting(
        "x0",
        "array",
        None,
        "initial server model, (d,) or (S, d) (default: the "
        "problem's own, as a replayed counterexample's, else zero)",
        sweepable=False,
    ),
    Setting("draws", "array", None, "explicit participation masks (S, R, N)", sweepable=False),
    Setting(
        "divergence_bound",
        "float",
        1e10,
        "a seed whose error exceeds this times max(1, its initial error) diverged",
        positive=True,
        what="the divergence bound",
        sweepable=False,
    ),
    Setting(
        "divergence_growth",
        "float",
        10.0,
        "a seed whose error grew this many times within the divergence window is "
        "diverging (math.inf: never)",
        positive=True,
        what="the divergence growth factor",
        sweepable=False,
    ),
    Setting(
        "divergence_window",
        "int",
        50,
        "rounds of the divergence growth rule",
        minimum=1,
        what="the divergence window",
        sweepable=False,
    ),
    Setting(
        "average_from",
        "int",
        None,
        "also return the time average of x_r over rounds average_from..R",
        minimum=0,
        sweepable=False,
    ),
    Setting("progress", "bool", False, "a progress bar of the run on stderr", sweepable=False),
)

#: Every run setting by name (see the module docstring).
SETTINGS: dict[str, Setting] = {s.name: s for s in _TABLE}


def defaults() -> dict[str, Any]:
    """Each setting's default."""
    return {k: s.default for k, s in SETTINGS.items()}


def readers(name: str) -> list[str]:
    """Who reads the setting ``name`` besides the run: the algorithms whose registry entry
    lists it among their settings and the participation models whose ``reads`` name its
    :attr:`~Setting.key` (``["cafga", "hafed", "cluster participation"]`` for ``clusters``)."""
    s = SETTINGS[name]
    out = []
    if "algorithm" in s.reads and name not in ("algorithm", "options"):
        out += [a for a in names() if name in info(a).settings]
    if "participation" in s.reads and s.key is not None:
        out += [f"{m} participation" for m in model_names() if s.key in model_info(m).reads]
    return out
