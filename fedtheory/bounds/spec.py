"""A stated bound as data: the TOML file a reader types from a paper, and its Python object.

A bound file names an algorithm and its setting, the quantity bounded, the bound as a sympy
expression of named constants (:data:`~fedtheory.bounds.constants.CONSTANTS`), the theorem's
step-size condition, and optionally a free constant (``c`` of an O(.) shape). The minimal
file::

    algorithm = "fedavg"
    participation = "full"
    clients = 4
    local_steps = 1
    lr = "1/L_f"
    quantity = "mean_square_rate"
    bound = "(1 - eta*mu_f)**2"
    condition = "eta <= 1/L_f"

    [class]          # quadratic least-squares clients
    dim = 3
    L = 10.0         # every client's smoothness at most L
    mu = 1.0         # every client's strong convexity at least mu

Keys (docs/bounds.md has the full table): ``clients``, ``clients_per_round`` and
``local_steps`` take an integer or a list (the class search draws among them); ``lr`` is a
number or an expression of the constants (not ``eta``); ``condition`` is one inequality, several
joined by ``and``, or a list of them; ``constant`` names the free constant and
``constant_value`` may give the paper's value of it. ``problem`` (a built-in name) or
``problem_file`` (an ``.npz``) names one instance to check; ``[class]`` the instance class to
search; ``[options]`` sets the algorithm's own options (``server_momentum = 0.9``). Unknown keys,
options and symbols are refused naming the accepted ones. ``algorithm`` may name a user's own
algorithm, ``"my_algos.py:fednova"`` (a path relative to the spec file) or ``"module:NAME"``:
loading the spec imports that file, which runs its code (docs/own-algorithm.md).

Expressions are read by :func:`~fedtheory.bounds.expressions.parse_expression`, which builds
their sympy tree itself from a checked syntax tree and evaluates them in float64: no text of a
spec is ever evaluated as Python (``^`` is a power, as typed from a PDF).

Every check of a setting is made once, by the constructor (``BoundSpec(...)`` and
:meth:`BoundSpec.from_dict` alike): an invalid setting is refused naming it, before any instance
is drawn.
"""

from __future__ import annotations

import math
import os
import re
import textwrap
from dataclasses import MISSING, dataclass, field, fields
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

from fedtheory.algorithms.registry import SHARED_SETTINGS, configure, resolve_algorithm
from fedtheory.analysis.exact import check_affine
from fedtheory.bounds.constants import CONSTANTS, LR_CONSTANTS
from fedtheory.bounds.expressions import FUNCTIONS, Expression, parse_expression
from fedtheory.errors import AssumptionError, FedTheoryError, SettingError, UnknownOptionError
from fedtheory.io import read_toml
from fedtheory.participation import model_names
from fedtheory.simulation.settings import SETTINGS, defaults

_D = defaults()

#: The quantities a bound may be about, and what each is.
QUANTITIES: dict[str, str] = {
    "mean_square_rate": "per-round factor of E||x_r - x*||^2 (the exact mean-square rate)",
    "mean_rate": "per-round factor of ||E z_r - z_bar|| (the exact mean rate rho(E[M_S]))",
    "stationary_mse": "lim_r E||x_r - x*||^2, the floor (absolute, not relative to ||x*||^2)",
    "rounds_to": "rounds until E||x_r - x*||^2 <= epsilon ||x_0 - x*||^2 (exact transient)",
    "mse_after_rounds": "E||x_R - x*||^2 after R = rounds rounds from ||x_0 - x*||^2 = D2",
    "f_minus_f_star_after_rounds": "E f(x_R) - f* after R = rounds rounds from ||x_0 - x*||^2 = D2",
    "grad_norm2_after_rounds": "E||grad f(x_R)||^2 after R = rounds rounds from "
    "||x_0 - x*||^2 = D2",
}
#: Quantities after a fixed number of rounds R (the spec's ``rounds``), and what each reads
#: of x_R.
AFTER_ROUNDS = {
    "mse_after_rounds": "distance2",
    "f_minus_f_star_after_rounds": "f_minus_f_star",
    "grad_norm2_after_rounds": "grad_norm2",
}
#: The function classes a bound is checked on: quadratic clients (the exact oracle and a search
#: over instances) or every L-smooth mu-strongly convex client (performance estimation).
FUNCTION_CLASSES = ("quadratic", "smooth-strongly-convex")
#: Quantities that are per-round factors: compared in rounds (log(stated) / log(exact)).
RATE_QUANTITIES = ("mean_square_rate", "mean_rate")

#: Participation models a bound may name: those whose law the exact oracle knows (the
#: registry's ``exact_law``).
PARTICIPATION = tuple(model_names(exact_law=True))

#: Default violation tolerance, relative to the stated value (docs/bounds.md, "Tolerance").
TOLERANCE = 1e-6


class SpecKey(NamedTuple):
    """One key of a bound spec: what it is, and a value to show in the template."""

    meaning: str
    example: Any = None


#: The keys of a bound spec that are run settings: their meaning, range and help are
#: :data:`~fedtheory.simulation.settings.SETTINGS`'s (``p`` is ``probabilities``, given inline
#: as a list; ``clients``, ``clients_per_round`` and ``local_steps`` may be lists for a search
#: to draw from; ``lr`` may be an expression of the constants).
RUN_KEYS = (
    "algorithm",
    "participation",
    "clients",
    "clients_per_round",
    "p",
    "local_steps",
    "lr",
    "aggregation",
    "empty",
    "replace",
    "markov_a",
    "markov_b",
    "start",
    "global_lr",
    "prox_mu",
    "noise",
    "problem",
    "problem_file",
    "topology",
    "seeds",
    "rounds",
    "options",
)
#: The table name of a run key spelled otherwise in a bound spec.
SPELLED = {"p": "probabilities"}
#: Its own keys: the bound, where it is stated and how it is checked (docs/bounds.md).
BOUND_KEYS = (
    "title",
    "source",
    "stated",
    "quantity",
    "bound",
    "condition",
    "constant",
    "constant_value",
    "epsilon",
    "tolerance",
    "class",
)
_TOP_KEYS = (*BOUND_KEYS[:3], *RUN_KEYS, *BOUND_KEYS[3:])

#: What a run key is in a bound spec beyond its setting's help (lists a search draws from,
#: expressions of the constants), and a value to show in the template.
_RUN_NOTES: dict[str, tuple[str, Any]] = {
    "algorithm": (
        "an affine one (fedtheory rate --help lists them); your own 'FILE.py:NAME' is "
        "relative to the spec",
        "fedavg",
    ),
    "participation": (f"the models with an exact law: {', '.join(PARTICIPATION)}", "full"),
    "clients": ("or a list the class search draws from (needed with [class])", 4),
    "clients_per_round": ("or a list", 2),
    "p": ("inline, a list", [0.5, 0.5, 0.9, 0.2]),
    "local_steps": ("or a list the search draws from", 1),
    "lr": ("a number or an expression of the constants (not eta)", "1/L_f"),
    "problem": ("one named instance to check the bound on", "quadratic"),
    "problem_file": ("one named instance to check the bound on", "counterexample.npz"),
    "topology": ("gives the constant rho", "ring"),
    "seeds": ("simulations on the named instance (the flag --seeds 0: none)", 32),
    "rounds": (
        "simulation rounds on the named instance and the horizon of rounds_to's exact "
        "transient (default: from the exact rate)",
        500,
    ),
    "options": ("an [options] table (server_momentum = 0.9)", None),
}


def _run_key(key: str) -> SpecKey:
    note, example = _RUN_NOTES.get(key, ("", None))
    meaning = SETTINGS[SPELLED.get(key, key)].help
    if example is None and key != "options":
        example = SETTINGS[SPELLED.get(key, key)].default
    return SpecKey(f"{meaning}; {note}" if note else meaning, example)


#: Every key of a bound spec, what it is and an example value: the one table that
#: ``fedtheory bound --help``, the template (:func:`template`) and the spec's refusal of
#: unknown keys read (defaults come from :class:`BoundSpec`'s fields). A run key's meaning is
#: its setting's help (:data:`~fedtheory.simulation.settings.SETTINGS`), with what a bound spec
#: adds to it.
_BOUND_SPEC_KEYS: dict[str, SpecKey] = {
    "title": SpecKey("a title for the report", "my bound"),
    "source": SpecKey("where the bound is stated (paper, theorem, line)", "paper, Theorem 1"),
    "stated": SpecKey("what the paper states, in words", "linear convergence"),
    "quantity": SpecKey(f"what is bounded: {', '.join(QUANTITIES)}", "mean_square_rate"),
    "bound": SpecKey(
        "the bound, an expression of the constants (^ is a power too)", "(1 - eta*mu_f)**2"
    ),
    "condition": SpecKey(
        "the theorem's condition: inequalities joined by 'and', or a list", "eta <= 1/L_f"
    ),
    "constant": SpecKey(
        "the name of the bound's free constant (c of an O(.) shape): the "
        "check reports the constant the instances imply",
        "c",
    ),
    "constant_value": SpecKey("the paper's value of the free constant, where known", 1.0),
    "epsilon": SpecKey("the accuracy factor of rounds_to", 1e-6),
    "tolerance": SpecKey("the violation tolerance, relative to the stated value", TOLERANCE),
    "class": SpecKey(
        "[class] table: the clients the bound is checked on (the quadratic class "
        "is searched; keys below)"
    ),
}
KEYS: dict[str, SpecKey] = {
    k: _run_key(k) if k in RUN_KEYS else _BOUND_SPEC_KEYS[k] for k in _TOP_KEYS
}
#: The keys a spec must give.
REQUIRED = ("algorithm", "lr", "quantity", "bound")
#: The keys of the ``[class]`` table, what each is and an example value.
CLASS_KEYS: dict[str, SpecKey] = {
    "functions": SpecKey(
        f"the clients: {' or '.join(FUNCTION_CLASSES)} (every L-smooth "
        "mu-strongly convex f_i, by performance estimation: the extra pep)",
        "quadratic",
    ),
    "dim": SpecKey("the dimension d, or a list (quadratic clients: required)", 3),
    "L": SpecKey("every client's smoothness is at most L", 10.0),
    "mu": SpecKey(
        "every client's strong convexity is at least mu (0 < mu <= L; on the general "
        "class mu = 0 is smooth convex)",
        1.0,
    ),
    "heterogeneity": SpecKey("the client optima spread over the box z +- heterogeneity", 1.0),
    "p_range": SpecKey(
        "[low, high]: drawn participation weights (where the spec gives no p)", [0.05, 1.0]
    ),
    "D2": SpecKey(
        "the start's bound ||x_0 - x*||^2 <= D2 (quadratic draws start at that "
        "distance; the general class and the quantities after R rounds read 1)",
        1.0,
    ),
    "zeta2": SpecKey(
        "the heterogeneity bound (1/N) sum_i ||grad f_i(x*)||^2 <= zeta2 "
        "(quadratic draws meet it with equality)",
        1.0,
    ),
}
#: The keys ``[class]`` must give (and ``dim`` for quadratic clients).
CLASS_REQUIRED = ("L", "mu")
_CLASS_KEYS = tuple(CLASS_KEYS)
_TEXT_KEYS = (
    "algorithm",
    "quantity",
    "bound",
    "participation",
    "aggregation",
    "empty",
    "title",
    "source",
    "stated",
    "problem",
    "problem_file",
    "topology",
    "constant",
)
_OPTIONAL_TEXT_KEYS = ("problem", "problem_file", "topology", "constant")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _ints(name: str, value: Any, minimum: int = 1) -> tuple[int, ...] | None:
    """An integer or a non-empty list of integers (the choices a search draws from)."""
    if value is None:
        return None
    vals = value if isinstance(value, list | tuple) else [value]
    if not vals:
        raise AssumptionError(f"{name} must be an integer or a non-empty list of integers")
    out = []
    for v in vals:
        whole = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
        if not (whole and int(v) == v):
            raise AssumptionError(f"{name} must be an integer or a list of integers, got {v!r}")
        if int(v) < minimum:
            raise AssumptionError(f"{name} must be >= {minimum}, got {v}")
        out.append(int(v))
    return tuple(out)


def _int(name: str, value: Any, minimum: int = 1) -> int | None:
    """One integer (not a list)."""
    if isinstance(value, list | tuple):
        raise AssumptionError(f"{name} must be an integer, got {value!r}")
    out = _ints(name, value, minimum)
    return None if out is None else out[0]


def _float(name: str, value: Any, *, positive: bool = False, allow_zero: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise AssumptionError(f"{name} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise AssumptionError(f"{name} must be finite, got {value!r}")
    if positive and (v < 0 or (v == 0 and not allow_zero)):
        raise AssumptionError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    return v


def _text(name: str, value: Any, *, optional: bool = True) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise AssumptionError(f"{name} must be a string, got {value!r}")
    return value


def _setting(key: str, value: Any) -> Any:
    """A run setting's value, checked against its declaration (its type: TOML's)."""
    s = SETTINGS[key]
    want = {"bool": bool, "str": str}.get(s.kind)
    if want is not None and not isinstance(value, want):
        raise AssumptionError(f"{key} must be a {s.kind}, got {value!r}")
    if s.kind in ("float", "rate"):
        value = _float(key, value)
    return s.check(value)


def _conditions(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, list | tuple) else [value]
    out = []
    for item in items:
        if not isinstance(item, str):
            raise AssumptionError(f"condition must be a string or a list of strings, got {item!r}")
        out.extend(p.strip() for p in re.split(r"\band\b|&", item) if p.strip())
    return tuple(out)


def _settle(obj: Any, **values: Any) -> None:
    """Set the checked values of a frozen dataclass in its ``__post_init__``."""
    for k, v in values.items():
        object.__setattr__(obj, k, v)


@dataclass(frozen=True)
class InstanceClass:
    """The ``[class]`` table: the clients a bound is checked on.

    ``functions = "quadratic"`` (the default): quadratic least-squares clients, searched.
    Client i has f_i(x) = 1/2 ||A_i x - b_i||^2 with A_i = diag(sqrt(lambda_i)) Q_i^T (so
    H_i = Q_i diag(lambda_i) Q_i^T, every lambda_ij in [mu, L]) and b_i = A_i x_i*,
    x_i* = z + h e_i with h in [0, heterogeneity]. ``functions = "smooth-strongly-convex"``:
    every L-smooth mu-strongly convex f_i (mu = 0: smooth convex), the worst case by
    performance estimation (:mod:`fedtheory.bounds.general`).

    The constructor checks every field (``InstanceClass(dim=3, L=10.0, mu=1.0)`` and
    :meth:`from_dict` alike).

    Attributes
    ----------
    dim : tuple of int
        Dimensions d drawn from (the quadratic class; the general class is dimension-free).
    L, mu : float
        Every client's smoothness at most L, strong convexity at least mu (0 < mu <= L; mu = 0
        on the general class).
    heterogeneity : float
        Largest spread h of the client optima (default 1).
    p_range : (float, float)
        Range of drawn participation probabilities (Bernoulli p_i; weighted draws: raw weights
        normalized to sum 1) when the spec gives no ``p`` (default (0.05, 1)).
    functions : {"quadratic", "smooth-strongly-convex"}
    D2 : float or None
        The start's bound ||x_0 - x*||^2 <= D2 (None: not given; the general class and the
        quantities after R rounds read 1). Quadratic draws then start at distance sqrt(D2).
    zeta2 : float or None
        The heterogeneity bound (1/N) sum_i ||grad f_i(x*)||^2 <= zeta2 (None: none; the
        general class is then unbounded for FedAvg with K >= 2). Quadratic draws are scaled to
        meet it with equality (the quantities are homogeneous in it: the worst case is on the
        boundary).
    """

    dim: tuple[int, ...]
    L: float
    mu: float
    heterogeneity: float = 1.0
    p_range: tuple[float, float] = (0.05, 1.0)
    functions: str = "quadratic"
    D2: float | None = None
    zeta2: float | None = None

    def __post_init__(self) -> None:
        functions = self.functions
        if functions not in FUNCTION_CLASSES:
            raise AssumptionError(
                f"[class] functions must be one of {', '.join(FUNCTION_CLASSES)}, got {functions!r}"
            )
        general = functions == "smooth-strongly-convex"
        dim = _ints("[class] dim", self.dim) if self.dim not in (None, ()) else ()
        if not dim and not general:
            raise AssumptionError(f"[class] needs dim (accepted: {', '.join(_CLASS_KEYS)})")
        L = _float("[class] L", self.L, positive=True, allow_zero=False)
        mu = _float("[class] mu", self.mu, positive=True, allow_zero=general)
        if mu > L or (general and mu == L):
            raise AssumptionError(
                f"[class] needs mu {'<' if general else '<='} L, got mu = {mu}, L = {L}"
            )
        D2 = self.D2
        if D2 is not None:
            D2 = _float("[class] D2", D2, positive=True, allow_zero=False)
        zeta2 = None if self.zeta2 is None else _float("[class] zeta2", self.zeta2, positive=True)
        het = _float("[class] heterogeneity", self.heterogeneity, positive=True)
        pr = self.p_range
        if not (isinstance(pr, list | tuple) and len(pr) == 2):
            raise AssumptionError(f"[class] p_range must be [low, high], got {pr!r}")
        lo, hi = (_float("[class] p_range", v) for v in pr)
        if not 0 < lo <= hi <= 1:
            raise AssumptionError(f"[class] p_range must satisfy 0 < low <= high <= 1, got {pr}")
        _settle(self, dim=dim, L=L, mu=mu, heterogeneity=het, p_range=(lo, hi), D2=D2, zeta2=zeta2)

    @classmethod
    def from_dict(cls, d: Any) -> InstanceClass:
        if not isinstance(d, dict):
            raise AssumptionError(f"[class] must be a table, got {d!r}")
        bad = sorted(set(d) - set(_CLASS_KEYS))
        if bad:
            raise UnknownOptionError(
                f"unknown key(s) {', '.join(bad)} in [class]; accepted: {', '.join(_CLASS_KEYS)}"
            )
        for key in ("L", "mu"):  # dim: the constructor says when the class needs it
            if key not in d:
                raise AssumptionError(f"[class] needs {key} (accepted: {', '.join(_CLASS_KEYS)})")
        return cls(**{"dim": (), **d})

    def to_dict(self) -> dict:
        out = {
            "functions": self.functions,
            "dim": list(self.dim),
            "L": self.L,
            "mu": self.mu,
            "heterogeneity": self.heterogeneity,
            "p_range": list(self.p_range),
        }
        for key in ("D2", "zeta2"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if not self.dim:
            del out["dim"]
        return out


@dataclass(frozen=True)
class BoundSpec:
    """A stated bound and the setting it is stated for (see the module docstring).

    Build it with :meth:`from_dict` (a parsed TOML table), :func:`load_spec` (a file) or the
    constructor, which takes the same keys as keywords (``class`` is ``instance_class``, a
    table or an :class:`InstanceClass`) and makes every check (:meth:`from_dict` adds only the
    refusal of unknown and missing keys, and the loading of a user's algorithm).

    ``algorithm`` is a registry name (:meth:`from_dict` loads a user's ``FILE.py:NAME``,
    :func:`~fedtheory.algorithms.registry.resolve_algorithm`); ``algorithm_source`` is how
    another process names it (the absolute ``FILE.py:NAME``: the search's worker processes and
    the ``fedtheory rate`` command that reproduces a value use it).
    """

    algorithm: str
    lr: str
    quantity: str
    bound: str
    participation: str = "full"
    clients: tuple[int, ...] | None = None
    clients_per_round: tuple[int, ...] | None = None
    p: tuple[float, ...] | None = None
    local_steps: tuple[int, ...] = (1,)
    condition: tuple[str, ...] = ()
    constant: str | None = None
    constant_value: float | None = None
    epsilon: float = 1e-6
    tolerance: float = TOLERANCE
    aggregation: str = "mean"
    empty: str = _D["empty"]
    replace: bool = _D["replace"]
    markov_a: float | None = _D["markov_a"]
    markov_b: float | None = _D["markov_b"]
    start: str = _D["start"]
    global_lr: float | None = None
    prox_mu: float | None = None
    noise: float = 0.0
    problem: str | None = None
    problem_file: str | None = None
    topology: str | None = None
    seeds: int = 32
    rounds: int | None = None
    instance_class: InstanceClass | None = None
    title: str = ""
    source: str = ""
    stated: str = ""
    path: str | None = field(default=None, compare=False)
    options: dict = field(default_factory=dict, hash=False)
    algorithm_source: str | None = field(default=None, compare=False)

    # -- construction -----------------------------------------------------------------------
    @classmethod
    def from_dict(cls, d: Any, *, path: str | None = None) -> BoundSpec:
        """A spec from a parsed TOML table (validated; every error names the key)."""
        if not isinstance(d, dict):
            raise AssumptionError(f"a bound spec is a table of keys, got {type(d).__name__}")
        bad = sorted(set(d) - set(_TOP_KEYS))
        if bad:
            raise UnknownOptionError(
                f"unknown key(s) {', '.join(bad)} in the bound spec; accepted: "
                f"{', '.join(_TOP_KEYS)}"
            )
        for key in REQUIRED:
            if key not in d:
                raise AssumptionError(f"the bound spec needs {key!r}")
        kw = {("instance_class" if k == "class" else k): v for k, v in d.items()}
        if not isinstance(d["algorithm"], str):
            raise AssumptionError(f"algorithm must be a string, got {d['algorithm']!r}")
        base = os.path.dirname(os.path.abspath(path)) if path is not None else None
        found = resolve_algorithm(d["algorithm"], base_dir=base)  # a user's file is imported
        kw["algorithm"], kw["algorithm_source"] = found.name, found.source
        if isinstance(kw.get("instance_class"), dict):
            kw["instance_class"] = InstanceClass.from_dict(kw["instance_class"])
        return cls(**kw, path=path)

    def __post_init__(self) -> None:
        self._check_fields()
        check_affine(self.algorithm)  # an unknown name, or why it has no exact rate
        shared = sorted(k for k in self.options if k in SHARED_SETTINGS)
        if shared:
            raise AssumptionError(
                f"[options] holds the algorithm's own options; give {', '.join(shared)} as "
                "top-level keys of the spec"
            )
        configure(self.algorithm, **self.options)  # unknown options, naming the accepted ones
        if self.participation not in PARTICIPATION:
            raise AssumptionError(
                f"participation {self.participation!r}: choose one of {', '.join(PARTICIPATION)}"
            )
        if self.quantity not in QUANTITIES:
            raise AssumptionError(
                f"quantity {self.quantity!r}: choose one of {', '.join(QUANTITIES)}"
            )
        if self.participation in ("uniform", "weighted") and not self.clients_per_round:
            raise AssumptionError(f"{self.participation} participation needs clients_per_round")
        if self.participation == "full" and self.clients_per_round:
            raise AssumptionError("full participation takes no clients_per_round")
        if self.problem is not None and self.problem_file is not None:
            raise AssumptionError("give problem or problem_file, not both")
        if self.instance_class is not None and self.clients is None:
            raise AssumptionError("a [class] search needs clients (N, or a list to draw from)")
        if self.constant is not None:
            if not _NAME.fullmatch(self.constant) or self.constant in CONSTANTS:
                raise AssumptionError(
                    f"constant {self.constant!r} must be a new name (not one of the instance's "
                    f"constants {', '.join(CONSTANTS)})"
                )
            if self.constant not in self.bound_expr.names:
                raise AssumptionError(
                    f"the free constant {self.constant!r} does not appear in the bound"
                )
        if self.quantity in AFTER_ROUNDS and not self.rounds:
            raise AssumptionError(f"{self.quantity} needs rounds = R (the horizon)")
        if not 0 < self.epsilon < 1:
            raise AssumptionError(f"epsilon must lie in (0, 1), got {self.epsilon}")
        # Parse everything now: a typo is refused before any computation.
        _ = self.bound_expr, self.condition_exprs, self.lr_expr

    def _check_fields(self) -> None:
        """Each field's type and range (the one place they are checked), normalized: lists
        become tuples, numbers floats or ints, ``lr`` text."""
        for key in _TEXT_KEYS:
            _text(key, getattr(self, key), optional=key in _OPTIONAL_TEXT_KEYS)
        lr = self.lr if isinstance(self.lr, str) else repr(_float("lr", self.lr))
        p = self.p
        if p is not None:
            if not isinstance(p, list | tuple) or not p:
                raise AssumptionError(f"p must be a list of probabilities, got {p!r}")
            p = tuple(_float(f"p[{i}]", v) for i, v in enumerate(p))
            for i, v in enumerate(p):
                if not 0 < v <= 1:
                    raise AssumptionError(
                        f"p[{i}] = {v} is outside (0, 1]: a probability of taking part (a client "
                        "with p = 0 never takes part)"
                    )
        opt = {
            k: None if getattr(self, k) is None else _float(k, getattr(self, k))
            for k in ("constant_value", "global_lr", "prox_mu")
        }
        if opt["global_lr"] is not None and not opt["global_lr"] > 0:
            raise AssumptionError(f"global_lr must be > 0, got {self.global_lr!r}")
        if opt["prox_mu"] is not None and opt["prox_mu"] < 0:
            raise AssumptionError(f"prox_mu must be >= 0, got {self.prox_mu!r}")
        if not isinstance(self.options, dict):
            raise AssumptionError(f"[options] must be a table, got {self.options!r}")
        cls_ = self.instance_class
        if isinstance(cls_, dict):
            cls_ = InstanceClass.from_dict(cls_)
        elif cls_ is not None and not isinstance(cls_, InstanceClass):
            raise AssumptionError(f"[class] must be a table, got {cls_!r}")
        declared = {
            k: None if getattr(self, k) is None else _setting(k, getattr(self, k))
            for k in ("replace", "markov_a", "markov_b", "start")
        }
        local_steps = _ints("local_steps", self.local_steps)
        if local_steps is None:
            raise AssumptionError("local_steps must be an integer or a list of integers")
        _settle(
            self,
            options=dict(self.options),
            **declared,
            lr=lr,
            p=p,
            **opt,
            instance_class=cls_,
            local_steps=local_steps,
            clients=_ints("clients", self.clients),
            clients_per_round=_ints("clients_per_round", self.clients_per_round),
            condition=_conditions(self.condition),
            epsilon=_float("epsilon", self.epsilon, positive=True),
            tolerance=_float("tolerance", self.tolerance, positive=True),
            noise=_float("noise", self.noise, positive=True),
            seeds=_int("seeds", self.seeds),
            rounds=_int("rounds", self.rounds),
        )

    # -- parsed expressions -----------------------------------------------------------------
    @property
    def symbols(self) -> tuple[str, ...]:
        """Names a bound or condition may use: the constants and the free constant."""
        return (*CONSTANTS, *((self.constant,) if self.constant else ()))

    @cached_property
    def bound_expr(self) -> Expression:
        """The bound (a value: a single constant such as ``D2`` is one)."""
        return parse_expression(self.bound, self.symbols, "the bound")

    @cached_property
    def condition_exprs(self) -> tuple[Expression, ...]:
        """The inequalities of ``condition`` (each a comparison, or several joined by and)."""
        return tuple(
            parse_expression(t, self.symbols, "the condition", kind="condition")
            for t in self.condition
        )

    @cached_property
    def lr_expr(self) -> Expression:
        """The step size, an expression of the constants other than eta."""
        return parse_expression(self.lr, LR_CONSTANTS, "lr")

    def step_size(self, constants: dict, where: str = "this instance") -> float:
        """eta for an instance's constants (``lr`` evaluated).

        Raises
        ------
        SettingError
            When it is not a finite positive number there: the step size is invalid input,
            never a property of the instance to skip.
        """
        eta = self.lr_expr(constants)
        if not (math.isfinite(eta) and eta > 0):
            raise SettingError(
                f"lr = {self.lr!r} gives eta = {eta} on {where}: a step size must be a finite "
                "number > 0"
            )
        return eta

    def stated_value(self, constants: dict, c: float | None = None) -> float:
        """The bound evaluated on ``constants`` (with the free constant ``c``), in float64 (inf
        on overflow, NaN where undefined)."""
        vals = dict(constants)
        if self.constant is not None:
            vals[self.constant] = self.constant_value if c is None else c
        return self.bound_expr(vals)

    def condition_met(self, constants: dict, c: float | None = None) -> bool:
        """Whether every inequality of ``condition`` holds on ``constants``."""
        vals = dict(constants)
        if self.constant is not None:
            vals[self.constant] = self.constant_value if c is None else c
        return all(cond(vals) for cond in self.condition_exprs)

    @property
    def functions(self) -> str:
        """The class of the spec's ``[class]`` (``quadratic`` without one)."""
        return self.instance_class.functions if self.instance_class else "quadratic"

    @property
    def D2(self) -> float:
        """The start's bound ||x_0 - x*||^2 <= D2 of the class (1 when not given)."""
        c = self.instance_class
        return 1.0 if c is None or c.D2 is None else c.D2

    def option_values(self) -> list[str]:
        """The algorithm's options as ``--option`` values NAME=VALUE (an array as
        comma-separated numbers, as the flag reads it)."""
        return [
            f"{name}={','.join(map(repr, np.ravel(v).tolist())) if np.ndim(v) else v}"
            for name, v in self.options.items()
        ]

    @property
    def is_rate(self) -> bool:
        return self.quantity in RATE_QUANTITIES

    def to_dict(self) -> dict:
        """The spec as a JSON-able table (the TOML keys; ``class`` for the instance class)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in ("path", "algorithm_source") or v is None or v in ((), "", {}):
                continue
            if f.name in ("replace", "start") and v == SETTINGS[f.name].default:
                continue  # model settings at their defaults: as a spec that leaves them out
            if f.name == "instance_class":
                out["class"] = v.to_dict()
            elif f.name == "algorithm":
                out[f.name] = self.algorithm_source or v
            elif f.name == "options":
                out[f.name] = {k: x.tolist() if hasattr(x, "tolist") else x for k, x in v.items()}
            else:
                out[f.name] = list(v) if isinstance(v, tuple) else v
        return out


def load_spec(path: str | os.PathLike) -> BoundSpec:
    """Read a bound spec from a TOML file.

    Raises
    ------
    FileNotFoundError
        No such file.
    FedTheoryError
        Not TOML (the message names the line), or any error of :meth:`BoundSpec.from_dict`.
    """
    given = os.fsdecode(os.fspath(path))
    data = read_toml(given, what="a TOML bound spec")
    try:
        return BoundSpec.from_dict(data, path=given)
    except FedTheoryError as exc:
        raise type(exc)(f"{given}: {exc}") from None


# -- what the tool says about the format: --help and --template --------------------------------
#: Per quantity, the template's worked example: what it shows (a fact of the example, checked
#: by tests/bounds/test_bound_template.py) and the keys it sets beyond :data:`TEMPLATE_KEYS`.
TEMPLATES: dict[str, tuple[str, dict[str, Any]]] = {
    "mean_square_rate": (
        "gradient descent (FedAvg, full participation, K = 1) at eta = 1/L_f contracts "
        "E||x - x*||^2 by at most (1 - eta mu_f)^2 per round, with equality on the worst "
        "instance: the bound holds, with ratio 1",
        {},
    ),
    "mean_rate": (
        "gradient descent at eta = 1/L_f contracts ||E x_r - x*|| by 1 - eta mu_f per round on "
        "the worst instance: the bound holds, with ratio 1",
        {"bound": "1 - eta*mu_f"},
    ),
    "stationary_mse": (
        "under gradient noise of standard deviation sigma, FedAvg keeps a floor lim "
        "E||x_r - x*||^2 > 0; the check reports the smallest constant c for which "
        "c eta sigma^2 / mu_f bounds it on every instance drawn",
        {"lr": "0.5/L_f", "noise": 0.1, "bound": "c*eta*sigma^2/mu_f", "constant": "c"},
    ),
    "rounds_to": (
        "gradient descent at eta = 1/L_f reaches E||x_r - x*||^2 <= epsilon ||x_0 - x*||^2 "
        "within ceiling(kappa_f log(1/epsilon) / 2) rounds, since (1 - 1/kappa_f)^(2r) <= "
        "exp(-2r/kappa_f): the bound holds",
        {"bound": "ceiling(kappa_f*log(1/epsilon)/2)"},
    ),
    "mse_after_rounds": (
        "gradient descent at eta = 1/L_f contracts ||x_r - x*||^2 by at most (1 - eta mu_f)^2 "
        "per round, so after R = 3 rounds from ||x_0 - x*||^2 = D2 it is at most "
        "(1 - eta mu_f)^6 D2: the bound holds",
        {"rounds": 3, "bound": "(1 - eta*mu_f)**6*D2"},
    ),
    "f_minus_f_star_after_rounds": (
        "gradient descent at eta = 1/L_f after R = 3 rounds: f(x_R) - f* <= L_f/2 "
        "||x_R - x*||^2 <= L_f/2 (1 - eta mu_f)^6 D2 (f is L_f-smooth): the bound holds",
        {"rounds": 3, "bound": "L_f/2*(1 - eta*mu_f)**6*D2"},
    ),
    "grad_norm2_after_rounds": (
        "gradient descent at eta = 1/L_f after R = 3 rounds: ||grad f(x_R)||^2 <= L_f^2 "
        "||x_R - x*||^2 <= L_f^2 (1 - eta mu_f)^6 D2: the bound holds",
        {"rounds": 3, "bound": "L_f**2*(1 - eta*mu_f)**6*D2"},
    ),
}
#: The keys every template sets (with :data:`KEYS`' examples unless :data:`TEMPLATES` says).
TEMPLATE_KEYS = (
    "algorithm",
    "participation",
    "clients",
    "local_steps",
    "lr",
    "quantity",
    "bound",
    "condition",
)


def _default(key: str, owner: type) -> Any:
    """The default of ``key`` in dataclass ``owner`` (None when it has none or it is None)."""
    name = "instance_class" if key == "class" else key
    for f in fields(owner):
        if f.name == name:
            if f.default is not MISSING:
                value = f.default
            elif f.default_factory is not MISSING:
                value = f.default_factory()
            else:
                return None
            if isinstance(value, tuple):  # (1,): one value of a list key
                value = value[0] if len(value) == 1 else list(value)
            return value if value not in (None, "", {}, []) else None
    return None


def _toml(value: Any) -> str:
    """A TOML value: strings double-quoted, lists in brackets, numbers as Python writes them."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return repr(value)


def key_help(width: int = 100) -> str:
    """The spec's keys, the ``[class]`` keys, the constants and the functions, as
    ``fedtheory bound --help`` lists them (from :data:`KEYS`, :data:`CLASS_KEYS`,
    :data:`~fedtheory.bounds.constants.CONSTANTS` and :data:`~fedtheory.bounds.expressions.FUNCTIONS`)."""

    def block(title: str, table: dict[str, str]) -> list[str]:
        pad = max(map(len, table)) + 2
        out = [title]
        for name, text in table.items():
            out += textwrap.wrap(
                text, width, initial_indent=f"  {name:<{pad}}", subsequent_indent=" " * (pad + 2)
            )
        return out

    def described(keys: dict[str, SpecKey], owner: type, required: tuple) -> dict[str, str]:
        out = {}
        for k, key in keys.items():
            d = _default(k, owner)
            tail = "; required" if k in required else ("" if d is None else f"; default {d!r}")
            out[k] = key.meaning + tail
        return out

    lines = block(
        f"spec keys (TOML; required: {', '.join(REQUIRED)}):", described(KEYS, BoundSpec, REQUIRED)
    )
    lines += block(
        f"[class] keys (required: {', '.join(CLASS_REQUIRED)}, and dim for quadratic clients):",
        described(CLASS_KEYS, InstanceClass, CLASS_REQUIRED),
    )
    lines += block(
        "constants (computed from each instance; a bound, a condition and lr may "
        "use them, lr all but eta):",
        CONSTANTS,
    )
    lines += block("quantities:", QUANTITIES)
    lines += textwrap.wrap(f"functions: {', '.join(FUNCTIONS)}", width)
    return "\n".join(lines)


def template(quantity: str = "mean_square_rate") -> str:
    """A commented bound spec for ``quantity`` to start from (``fedtheory bound --template``):
    every key of :data:`KEYS` with its meaning, those of the worked example set (it runs as
    is: saved as ``spec.toml``, ``fedtheory bound spec.toml`` checks it), the others commented
    out with an example value; the constants and functions a bound may use.

    Raises
    ------
    AssumptionError
        An unknown quantity (naming the accepted ones).
    """
    if quantity not in TEMPLATES:
        raise AssumptionError(f"quantity {quantity!r}: choose one of {', '.join(QUANTITIES)}")
    what, extra = TEMPLATES[quantity]
    values = {k: KEYS[k].example for k in TEMPLATE_KEYS} | {"quantity": quantity} | extra
    wrap = lambda text: textwrap.wrap(text, 98, initial_indent="# ", subsequent_indent="# ")  # noqa: E731
    lines = [
        f"# A bound spec for `fedtheory bound` (made by `fedtheory bound --template {quantity}`;",
        "# docs/bounds.md has the format). Saved as a file it runs as is: fedtheory bound FILE",
        *wrap(f"The example: {what}."),
        "# Replace the algorithm, the setting and the bound by the theorem you read; keys",
        "# commented out are optional (their default, or an example value).",
        "#",
        "# Constants a bound, a condition or lr may use (lr: all but eta), computed per instance:",
        *[f"#   {name:<8} {text}" for name, text in CONSTANTS.items()],
        *wrap(f"Functions: {', '.join(FUNCTIONS)}; ^ is a power, as typed from a PDF."),
        "",
    ]

    def entry(key: str, spec: SpecKey, owner: type, required: tuple, given: dict) -> list[str]:
        d = _default(key, owner)
        note = "required" if key in required else ("" if d is None else f"default {d!r}")
        head = wrap(spec.meaning + (f"; {note}" if note else ""))
        if key in given:
            return [*head, f"{key} = {_toml(given[key])}"]
        return [*head, f"# {key} = {_toml(spec.example if d is None else d)}"]

    for key, spec in KEYS.items():
        if key not in ("class", "options"):
            lines += entry(key, spec, BoundSpec, REQUIRED, values)
    lines += ["", *wrap(KEYS["options"].meaning), "# [options]", ""]
    lines += [*wrap(KEYS["class"].meaning), "[class]"]
    given = {k: CLASS_KEYS[k].example for k in ("dim", "L", "mu")}  # quadratic clients
    for key, spec in CLASS_KEYS.items():
        lines += entry(key, spec, InstanceClass, CLASS_REQUIRED, given)
    return "\n".join(lines) + "\n"
