"""The algorithm registry: names -> builders, with each algorithm's settings and facts.

A builder takes an :class:`~fedtheory.algorithms.base.AlgorithmConfig` and returns an
:class:`~fedtheory.algorithms.base.Algorithm`. A module registers its algorithms with what they
read and what they are::

    @register(
        "fedau",
        "FedAU, weights from online participation-interval estimates (Wang & Ji 2023)",
        display="FedAU",
        uses=("global_lr",),
        options=(Option("cutoff", 10, int, "interval cutoff", minimum=1), ...),
    )
    def build_fedau(config): ...

and is imported by the package's ``__init__`` (one direct import per algorithm module, so the
registry is complete whenever :mod:`fedtheory.algorithms` is imported). Callers ask the registry (:func:`info`,
:func:`names`) whether an algorithm gossips, is clustered or adaptive, and how to display it;
nobody keeps tables of algorithm names. :func:`make_algorithm` refuses a keyword that the
algorithm does not read, listing the ones it does (as scipy's ``_check_unknown_options``), so a
typo never runs a different experiment.

A researcher's own algorithm registers the same way, from a file, a module or a notebook
(docs/own-algorithm.md). :func:`resolve_algorithm` is the one place that turns what a user
typed (``--algorithm``, a spec's ``algorithm``) into a registry name: a registered name, a
reference ``path/to/file.py:NAME`` or ``module:NAME`` (importing it: running the user's code,
at the user's explicit request), or the name of an installed package's entry point in the
group :data:`ENTRY_POINT_GROUP`. Nothing else imports a user's code: :func:`info` and
:func:`make_algorithm` only look names up. Registering a name again from the module that
registered it (a notebook cell run twice) replaces it with a warning; any other clash, and
every clash with a built-in algorithm, is an error.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import math
import sys
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np

from fedtheory.algorithms.base import Algorithm, AlgorithmConfig, StateLayout
from fedtheory.errors import AssumptionError, FedTheoryError, UnknownOptionError
from fedtheory.validation import did_you_mean, lookup, with_facts

#: Settings every algorithm reads.
BASE_SETTINGS = ("lr", "local_steps")
#: The shared settings an algorithm may read (fields of AlgorithmConfig besides the bookkeeping).
SHARED_SETTINGS = tuple(
    f.name for f in fields(AlgorithmConfig) if f.name not in ("options", "n_clients")
)
#: The settings of the adaptive server optimizer (000 Algorithm 1 lines 19-22).
ADAPTIVE_SETTINGS = ("global_lr", "beta1", "beta2", "eps", "eps_placement")


@dataclass(frozen=True)
class Option:
    """An algorithm-specific setting, declared where the algorithm is registered.

    Attributes
    ----------
    name : str
    default : Any
        Used when the caller does not set it.
    kind : type or tuple of types
        Accepted types (``float`` also accepts ints; ``int`` refuses bools); ``np.ndarray``
        accepts array-likes.
    doc : str
        One line for ``--list`` and error messages.
    choices : tuple, optional
        The allowed values.
    minimum : float, optional
        A lower bound for numbers.
    nullable : bool
        None is allowed (e.g. "use the default matrix").
    """

    name: str
    default: Any
    kind: type | tuple[type, ...]
    doc: str
    choices: tuple | None = None
    minimum: float | None = None
    nullable: bool = False

    def check(self, algorithm: str, value: Any) -> Any:
        """``value`` checked against the declaration (the message names the algorithm)."""
        if value is None:
            if self.nullable:
                return None
            raise AssumptionError(f"{algorithm} option {self.name!r} must not be None")
        kinds = self.kind if isinstance(self.kind, tuple) else (self.kind,)
        if np.ndarray in kinds and not isinstance(value, str | bool):
            return np.asarray(value)
        ok = any(_is(value, k) for k in kinds)
        if not ok:
            names = " or ".join(k.__name__ for k in kinds)
            raise AssumptionError(
                f"{algorithm} option {self.name!r} must be {names}, got {value!r} "
                f"({type(value).__name__})"
            )
        if float in kinds and not isinstance(value, bool) and isinstance(value, int | np.integer):
            value = float(value)
        if isinstance(value, np.generic):
            value = value.item()
        if self.choices is not None and value not in self.choices:
            raise AssumptionError(
                f"{algorithm} option {self.name!r} must be one of {list(self.choices)}, "
                f"got {value!r}"
            )
        if self.minimum is not None and not (value >= self.minimum and np.isfinite(value)):
            raise AssumptionError(
                f"{algorithm} option {self.name!r} must be finite and >= {self.minimum}, "
                f"got {value!r}"
            )
        return value


def _is(value: Any, kind: type) -> bool:
    if kind is bool:
        return isinstance(value, bool | np.bool_)
    if kind is int:
        return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)
    if kind is float:
        return isinstance(value, float | int | np.floating | np.integer) and not isinstance(
            value, bool | np.bool_
        )
    return isinstance(value, kind)


@dataclass(frozen=True)
class Schedule:
    """A theorem's step-size schedule: the server step eta and the local step eta_l.

    Attributes
    ----------
    step_sizes : callable
        ``step_sizes(R, K, M, N, n, m, c, c_l) -> (eta, eta_l)`` for R rounds, K local steps, M
        of N clients per round (n and m per cluster for clustered algorithms) and the user's
        constants c and c_l in front of the Theta(.).
    source : str
        Where the schedule is stated, with the formula in words.
    """

    step_sizes: Callable[..., tuple[float, float]]
    source: str


#: Algorithms whose theorem prescribes no schedule: eta = c, eta_l = c_l / sqrt(R K).
DEFAULT_SCHEDULE = Schedule(
    lambda R, K, M, N, n, m, c, c_l: (c, c_l / math.sqrt(R * K)),
    "no theorem schedule: eta = c, eta_l = c_l / sqrt(R K)",
)

#: What the papers say of a baseline's rate when nothing more is declared.
BASELINE_RATE = "not stated: a baseline of 003 Figure 4; the seed papers state no rate for it"
#: The stated rate of a user's algorithm registered without one.
UNDECLARED_RATE = "not declared: its registration gives no stated_rate"


def _is_builtin(module: str) -> bool:
    """Whether ``module`` is fedtheory's own (its algorithms are the built-in ones)."""
    return module == "fedtheory" or module.startswith("fedtheory.")


@dataclass(frozen=True)
class AlgorithmInfo:
    """What the registry knows about an algorithm.

    Attributes
    ----------
    name : str
        The registry name (lower case).
    builder : callable ``AlgorithmConfig -> Algorithm``
    description : str
        One line for ``fedtheory simulate --list``.
    display : str
        How figures, tables and reports name it ("FedAMSGrad", "HA-Fed").
    settings : tuple of str
        The shared :class:`AlgorithmConfig` fields it reads (always ``lr``, ``local_steps``).
    options : tuple of Option
        Its own settings (``AlgorithmConfig.options``).
    aliases : tuple of str
        Other accepted spellings (matched case-insensitively like the name).
    adaptive : bool
        Its server step is an adaptive optimizer (000 eq. (2)).
    gossip_rho : callable or None
        ``gossip_rho(config, n_clients, clients_per_round) -> rho`` for algorithms whose clients
        gossip: the spectral gap they run with (rho_max over clusters for clustered ones);
        None for algorithms without gossip.
    affine : bool
        On a quadratic problem its round is an affine map of its state given the participation
        draw (the exact oracles of :mod:`fedtheory.analysis` apply).
    server_vectors : int
        Model-sized vectors a participating client exchanges with the server per direction and
        round (1; SCAFFOLD 2: model and control variate; DSGD 0: no server). For the
        communication-time model of 000 Table 7.
    broadcast : bool
        The round's model x_r reaches every client by local communication from S_r
        (000 Algorithm 1 line 4: AFGA, CAFGA, HA-Fed).
    exact_layout : callable or None
        ``exact_layout(name, config, n_clients, dim) -> StateLayout``: the coordinates in which
        the exact oracles of :mod:`fedtheory.analysis.exact` read an affine round (None: no
        exact oracle; ``not_exact`` says why).
    not_exact : str
        Why there is no exact oracle (its round is not affine, or affine outside the
        client-local structure the oracle exploits); empty when ``exact_layout`` is given.
    stated_rate : str
        What the seed papers state about its rate (docs/stated-bounds.md).
    schedule : Schedule or None
        The step-size schedule its convergence theorem prescribes (None: no theorem schedule,
        :data:`DEFAULT_SCHEDULE` is used).
    exponents : dict or None
        The exponents of K, R and M its O(.) rate states, under ``"partial"`` and ``"full"``
        participation (None: no such theorem).
    conditions : callable or None
        ``conditions(N, M, n, m, C, rho) -> list of str``: the theorem's assumptions on the
        graph and the clusters that a setting violates, each named with its source.
    horizon : callable or None
        ``horizon(R, K, M) -> list of str``: the corollary's conditions on the horizon R that a
        run violates (where the leading O(.) term dominates).
    module : str
        The module that registered it (``fedtheory.algorithms.fedavg``; ``__main__`` for a
        notebook or script; a file loaded by :func:`resolve_algorithm` has a module of its own).
    """

    name: str
    builder: Callable[[AlgorithmConfig], Algorithm]
    description: str
    display: str
    settings: tuple[str, ...]
    options: tuple[Option, ...] = ()
    aliases: tuple[str, ...] = ()
    adaptive: bool = False
    gossip_rho: Callable[[AlgorithmConfig, int, int | None], float] | None = None
    affine: bool = False
    server_vectors: int = 1
    broadcast: bool = False
    exact_layout: Callable[..., StateLayout] | None = None
    not_exact: str = ""
    stated_rate: str = ""
    schedule: Schedule | None = None
    exponents: dict[str, dict[str, float]] | None = None
    conditions: Callable[..., list[str]] | None = None
    horizon: Callable[..., list[str]] | None = None
    module: str = ""

    @property
    def builtin(self) -> bool:
        """Registered by fedtheory itself (not by a user's file, module or notebook)."""
        return _is_builtin(self.module)

    @property
    def gossip(self) -> bool:
        """Its clients gossip with a mixing matrix W (000 Alg. 1-2, 004 Alg. 1, DSGD)."""
        return self.gossip_rho is not None

    @property
    def clustered(self) -> bool:
        """Its clients are split into clusters (``--clusters C``: CAFGA, HA-Fed)."""
        return "clusters" in self.settings

    def accepted(self) -> list[str]:
        """Every keyword :func:`make_algorithm` accepts for it."""
        return [*self.settings, *(o.name for o in self.options)]


_REGISTRY: dict[str, AlgorithmInfo] = {}
_ALIASES: dict[str, str] = {}


def register(
    name: str,
    description: str,
    *,
    display: str,
    uses: tuple[str, ...] = (),
    options: tuple[Option, ...] = (),
    aliases: tuple[str, ...] = (),
    adaptive: bool = False,
    gossip_rho: Callable[[AlgorithmConfig, int, int | None], float] | None = None,
    affine: bool = False,
    server_vectors: int = 1,
    broadcast: bool = False,
    exact_layout: Callable[..., StateLayout] | None = None,
    not_exact: str = "",
    stated_rate: str | None = None,
    schedule: Schedule | None = None,
    exponents: dict[str, dict[str, float]] | None = None,
    conditions: Callable[..., list[str]] | None = None,
    horizon: Callable[..., list[str]] | None = None,
) -> Callable:
    """Decorator: register ``builder(config) -> Algorithm`` under ``name`` with its settings
    (``uses``: shared fields read besides ``lr`` and ``local_steps``), options and facts (see
    :class:`AlgorithmInfo`). Everything known about the algorithm is declared here: an
    algorithm without an exact layout says why (``not_exact``), and a layout needs an affine
    round. ``stated_rate`` defaults to :data:`BASELINE_RATE` for fedtheory's own algorithms and
    to :data:`UNDECLARED_RATE` for a user's."""
    if exact_layout is not None and (not affine or not_exact):
        raise ValueError(f"{name}: an exact layout needs affine=True and no not_exact reason")
    if exact_layout is None and not not_exact:
        raise ValueError(f"{name}: say why there is no exact oracle (not_exact=...)")
    unknown = [u for u in uses if u not in SHARED_SETTINGS]
    if unknown:
        raise ValueError(f"{name}: {unknown} are not AlgorithmConfig fields ({SHARED_SETTINGS})")
    settings = tuple(dict.fromkeys((*BASE_SETTINGS, *uses)))

    def deco(builder: Callable[[AlgorithmConfig], Algorithm]) -> Callable:
        key = name.lower()
        module = str(getattr(builder, "__module__", None) or "")
        _check_clash(key, module)
        for spelling in [a for a, k in _ALIASES.items() if k == key]:  # a replaced entry's
            del _ALIASES[spelling]
        _REGISTRY[key] = AlgorithmInfo(
            name=key,
            builder=builder,
            description=description,
            display=display,
            settings=settings,
            options=tuple(options),
            aliases=tuple(a.lower() for a in aliases),
            adaptive=adaptive,
            gossip_rho=gossip_rho,
            affine=affine,
            server_vectors=server_vectors,
            broadcast=broadcast,
            exact_layout=exact_layout,
            not_exact=not_exact,
            stated_rate=stated_rate
            if stated_rate is not None
            else (BASELINE_RATE if _is_builtin(module) else UNDECLARED_RATE),
            schedule=schedule,
            exponents=exponents,
            conditions=conditions,
            horizon=horizon,
            module=module,
        )
        for spelling in (display.lower(), *aliases):
            _ALIASES.setdefault(spelling.lower(), key)
        return builder

    return deco


def _check_clash(key: str, module: str) -> None:
    """Refuse to register ``key`` from ``module`` over another algorithm; warn when ``module``
    registers it again (a re-run notebook cell, a file loaded again): the new one replaces it.

    Raises
    ------
    FedTheoryError
        ``key`` is a built-in algorithm or another spelling of one, or was registered by
        another module.
    """
    old = _REGISTRY.get(key)
    if old is None:
        other = _ALIASES.get(key)
        if other is not None and other != key:
            raise FedTheoryError(
                f"cannot register algorithm {key!r}: it is another spelling of {other!r} "
                "(choose another name)"
            )
        return
    if old.builtin:
        raise FedTheoryError(
            f"cannot register algorithm {key!r}: fedtheory has a built-in algorithm of that "
            "name (choose another name)"
        )
    if old.module != module:
        raise FedTheoryError(
            f"algorithm {key!r} is registered twice: by {old.module} and by {module} (choose "
            "another name for one of them)"
        )
    warnings.warn(
        f"algorithm {key!r} registered again by {module}: the new definition replaces the old one",
        UserWarning,
        stacklevel=3,
    )


def available() -> dict[str, str]:
    """Registered algorithm names and their one-line descriptions."""
    return {k: _REGISTRY[k].description for k in sorted(_REGISTRY)}


def info(name: str) -> AlgorithmInfo:
    """The :class:`AlgorithmInfo` of ``name`` (case-insensitive; display names and aliases too).

    Raises
    ------
    FedTheoryError
        For an unknown name (the message lists the known ones).
    """
    return lookup(_REGISTRY, name, "algorithm", error=FedTheoryError, aliases=_ALIASES, sort=True)


def names(
    *,
    gossip: bool | None = None,
    clustered: bool | None = None,
    adaptive: bool | None = None,
    affine: bool | None = None,
) -> list[str]:
    """Registered names, optionally only those with the given facts (e.g. ``gossip=True``)."""
    table = dict(sorted(_REGISTRY.items()))
    return with_facts(table, gossip=gossip, clustered=clustered, adaptive=adaptive, affine=affine)


def display_name(name: str) -> str:
    """How reports and figures name algorithm ``name`` ("fedamsgrad" -> "FedAMSGrad")."""
    return info(name).display


def make_algorithm(
    name: str, config: AlgorithmConfig | None = None, *, problem: Any = None, **overrides: Any
) -> Algorithm:
    """Build algorithm ``name`` from ``config`` and keyword settings.

    Parameters
    ----------
    name : str
        A registry name, display name or alias, in any case.
    config : AlgorithmConfig, optional
        The shared settings (default: :class:`AlgorithmConfig`'s defaults).
    problem : Problem, optional
        Fills ``config.n_clients``.
    **overrides
        Shared settings (``lr``, ``local_steps``, ``global_lr``, ...) and the algorithm's own
        options (e.g. ``cutoff`` for FedAU), checked against their declarations.

    Raises
    ------
    FedTheoryError
        An unknown algorithm name.
    UnknownOptionError
        (a ``TypeError`` too) a keyword the algorithm does not read, or a shared setting it
        ignores given a value other than its default; the message lists the ones it reads.
    AssumptionError
        An option of the wrong type or outside its allowed values.
    """
    entry, config = configure(name, config, problem=problem, **overrides)
    return entry.builder(config)


def configure(
    name: str, config: AlgorithmConfig | None = None, *, problem: Any = None, **overrides: Any
) -> tuple[AlgorithmInfo, AlgorithmConfig]:
    """The :class:`AlgorithmInfo` of ``name`` and its checked configuration, every declared
    option filled with its default (what :func:`make_algorithm` builds from; same arguments
    and errors)."""
    entry = info(name)
    config = config or AlgorithmConfig()
    shared = {k: v for k, v in overrides.items() if k in SHARED_SETTINGS}
    own = {k: v for k, v in overrides.items() if k not in SHARED_SETTINGS}
    declared = {o.name: o for o in entry.options}
    unknown = sorted(k for k in own if k not in declared)
    if unknown:
        raise UnknownOptionError(
            f"{entry.name} has no setting {', '.join(map(repr, unknown))}: it accepts "
            f"{', '.join(entry.accepted())}"
        )
    config = replace(config, **shared) if shared else config
    defaults = AlgorithmConfig()
    ignored = [
        k
        for k in SHARED_SETTINGS
        if k not in entry.settings and not _same(getattr(config, k), getattr(defaults, k))
    ]
    if ignored:
        raise UnknownOptionError(
            f"{entry.name} does not use {', '.join(ignored)} (set to "
            f"{', '.join(repr(getattr(config, k)) for k in ignored)}): it accepts "
            f"{', '.join(entry.accepted())}"
        )
    given = {**config.options, **own}
    stray = sorted(k for k in given if k not in declared)
    if stray:
        raise UnknownOptionError(
            f"{entry.name} has no option {', '.join(map(repr, stray))}: it accepts "
            f"{', '.join(entry.accepted())}"
        )
    options = {k: o.check(entry.name, given.get(k, o.default)) for k, o in declared.items()}
    n_clients = config.n_clients if problem is None else int(problem.n_clients)
    return entry, replace(config, options=options, n_clients=n_clients)


def gossip_rho(
    name: str, n_clients: int, clients_per_round: int | None = None, **settings: Any
) -> float | None:
    """The spectral gap algorithm ``name`` gossips with on ``n_clients`` clients under
    ``settings`` (``topology``, ``clusters``, ``graph_seed``, ...): rho = ||W - 11^T/n||_2, or
    rho_max over its clusters; None for an algorithm without gossip."""
    entry, config = configure(name, **settings)
    if entry.gossip_rho is None:
        return None
    return entry.gossip_rho(config, int(n_clients), clients_per_round)


def _same(a: Any, b: Any) -> bool:
    """Equal settings (None counts as unset)."""
    return a is None or bool(np.all(a == b))


# --- a user's algorithm: from a file, a module or an installed package ---------------------------

#: The entry-point group through which an installed package offers its algorithms, e.g. in its
#: ``pyproject.toml``: ``[project.entry-points."fedtheory.algorithms"]`` ``fednova =
#: "my_package.algos:fednova"``. An entry point is loaded when its name is asked for
#: (:func:`resolve_algorithm`), never at start-up.
ENTRY_POINT_GROUP = "fedtheory.algorithms"


class ResolvedAlgorithm(NamedTuple):
    """What :func:`resolve_algorithm` found.

    Attributes
    ----------
    name : str
        The registry name (what :func:`make_algorithm`, ``simulate`` and ``exact_rates`` take).
    source : str
        How another process names the same algorithm (what a sweep sends to its Dask
        workers): the registry name, an entry point's name, ``module:NAME``, or
        ``/absolute/path/file.py:NAME``.
    file : str or None
        The absolute path of a ``file.py:NAME`` reference, else None.
    """

    name: str
    source: str
    file: str | None = None


def resolve_algorithm(text: Any, *, base_dir: str | Path | None = None) -> ResolvedAlgorithm:
    """The algorithm that ``text`` names, loading a user's algorithm where it names one.

    ``text`` is one of

    * a registered name, display name or alias, in any case (``fedavg``, ``FOCUS``);
    * ``path/to/file.py:NAME``: the file is imported (its code runs, as ``python file.py``
      would run it: only for a file the user names) and NAME is a builder it registered with
      :func:`register` (the decorated function) or the name it registered; a relative path is
      relative to ``base_dir`` (default: the working directory). A file is imported once per
      process, and again when its contents change (its algorithms then replace their earlier
      definitions, with a warning);
    * ``package.module:NAME``: the same for an importable module;
    * the name of an entry point of the group :data:`ENTRY_POINT_GROUP` (an installed
      package's algorithm), loaded now.

    This is the only function of fedtheory that imports a user's code; it is called for what
    the user typed (``--algorithm``, a spec's ``algorithm``), never for names read from results
    or sweep stores.

    Raises
    ------
    FedTheoryError
        One line: an unknown name (with the near miss and the choices), a file or module that
        cannot be imported (the exception and its line), a NAME it does not define, or a NAME
        that is not an algorithm.
    """
    if not isinstance(text, str) or not text.strip():
        raise FedTheoryError(f"an algorithm is named by a non-empty string, got {text!r}")
    text = text.strip()
    ref = _split_reference(text)
    if ref is None:
        key = text.lower()
        if _ALIASES.get(key, key) in _REGISTRY:
            return ResolvedAlgorithm(info(text).name, info(text).name)
        points = _entry_points()
        if key in points:
            name = _load_entry_point(points[key])
            return ResolvedAlgorithm(name, points[key].name)
        choices = sorted({*_REGISTRY, *points})
        raise FedTheoryError(
            f"unknown algorithm {text!r}{did_you_mean(key, [*choices, *_ALIASES])}: choose one "
            f"of {', '.join(choices)}, or name your own as FILE.py:NAME or MODULE:NAME "
            "(docs/own-algorithm.md)"
        )
    head, attr = ref
    if _is_file(head):
        path = Path(head).expanduser()
        path = (path if path.is_absolute() else Path(base_dir or Path.cwd()) / path).resolve()
        module = _load_file(path, text)
        name = _registered_in(module, attr, str(path))
        return ResolvedAlgorithm(name, f"{path}:{attr}", str(path))
    if not all(part.isidentifier() for part in head.split(".")):
        raise FedTheoryError(
            f"algorithm {text!r}: a reference is FILE.py:NAME or MODULE:NAME, and {head!r} is "
            "neither a .py file nor a module name"
        )
    module = _import_module(head, text)
    return ResolvedAlgorithm(_registered_in(module, attr, f"module {head}"), f"{head}:{attr}")


def reference_file(text: Any) -> str | None:
    """The file of an algorithm reference ``FILE.py:NAME``, as written (None for a registered
    name, an entry point's name or ``module:NAME``); nothing is imported."""
    ref = _split_reference(text) if isinstance(text, str) else None
    return ref[0] if ref is not None and _is_file(ref[0]) else None


def _split_reference(text: str) -> tuple[str, str] | None:
    """``(head, NAME)`` of ``head:NAME`` (NAME an identifier or a registry name such as
    ``sg-focus``), or None for a plain name."""
    head, sep, attr = text.rpartition(":")
    ok = attr.replace("-", "_").isidentifier()
    return (head, attr) if sep and head and ok else None


def _is_file(head: str) -> bool:
    """The head of a reference names a file (``x.py``, a path), not a module."""
    return head.endswith(".py") or "/" in head or "\\" in head


def installed() -> dict[str, str]:
    """The algorithms installed packages offer (:data:`ENTRY_POINT_GROUP`), name ->
    ``MODULE:NAME``, without loading them (:func:`resolve_algorithm` loads one by its name)."""
    return {ep.name: ep.value for ep in _entry_points().values()}


def _entry_points() -> dict[str, Any]:
    """The installed packages' algorithms (:data:`ENTRY_POINT_GROUP`), by lower-case name."""
    found = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    return {ep.name.lower(): ep for ep in found}


def _load_entry_point(ep: Any) -> str:
    """Import an entry point's ``module:NAME`` and return the registry name it names."""
    ref = _split_reference(ep.value.replace(" ", ""))
    if ref is None:
        raise FedTheoryError(
            f"the entry point {ep.name!r} of {ENTRY_POINT_GROUP} names {ep.value!r}, not "
            "MODULE:NAME"
        )
    module = _import_module(ref[0], f"entry point {ep.name}")
    return _registered_in(module, ref[1], f"module {ref[0]} (entry point {ep.name})")


def _import_module(name: str, what: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise FedTheoryError(
                f"cannot load the algorithm {what!r}: no module named {exc.name!r}"
            ) from None
        raise FedTheoryError(f"cannot import the module {name}: {_why(exc, None)}") from None
    except Exception as exc:  # the user's module raised: one line naming it
        raise FedTheoryError(f"cannot import the module {name}: {_why(exc, None)}") from None


def _load_file(path: Path, text: str) -> ModuleType:
    """Import the Python file ``path`` as a module of its own (once per process and contents:
    a changed file is imported again)."""
    if not path.is_file():
        raise FedTheoryError(f"cannot load the algorithm {text!r}: no such file {path}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FedTheoryError(f"cannot read {path}: {exc.strerror}") from None
    digest = hashlib.sha256(data).hexdigest()
    stem = "".join(c if c.isalnum() else "_" for c in path.stem)
    name = f"fedtheory_user_{stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:12]}"
    module = sys.modules.get(name)
    if module is not None and getattr(module, "__fedtheory_digest__", None) == digest:
        return module
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise FedTheoryError(f"cannot load the algorithm {text!r}: {path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    module.__fedtheory_digest__ = digest
    previous = sys.modules.get(name)
    sys.modules[name] = module  # as import does: the file's own classes pickle by reference
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's file raised (or does not parse): one line naming it
        if previous is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = previous
        raise FedTheoryError(f"cannot import {path}: {_why(exc, path)}") from None
    return module


def _why(exc: BaseException, path: Path | None) -> str:
    """An exception in one line, with the line of ``path`` where it was raised."""
    what = str(exc).splitlines()[0] if str(exc) else ""
    line = None
    if isinstance(exc, SyntaxError):
        what, line = exc.msg, exc.lineno
    elif path is not None:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(path)]
        line = frames[-1].lineno if frames else None
    where = f" (line {line})" if line else ""
    return f"{type(exc).__name__}: {what}{where}" if what else f"{type(exc).__name__}{where}"


def _registered_in(module: ModuleType, attr: str, where: str) -> str:
    """The registry name of the algorithm ``attr`` of ``module``: a builder it decorated with
    :func:`register`, an :class:`AlgorithmInfo`, or the name it registered."""
    mine = [e for e in _REGISTRY.values() if e.module == module.__name__]
    obj = getattr(module, attr, None)
    if obj is not None:
        if isinstance(obj, AlgorithmInfo) and _REGISTRY.get(obj.name) is obj:
            return obj.name
        entry = next((e for e in _REGISTRY.values() if e.builder is obj), None)
        if entry is not None:
            return entry.name
    elif attr.lower() in {e.name for e in mine}:
        return attr.lower()
    names = sorted(
        {a for a, v in vars(module).items() for e in mine if v is e.builder}
        | {e.name for e in mine}
    )
    known = (
        f": it defines {', '.join(names)}"
        if names
        else (
            ": it registers no algorithm (decorate a builder with "
            "@fedtheory.algorithms.register(...))"
        )
    )
    if obj is None:
        raise FedTheoryError(f"{where} has no {attr!r}{did_you_mean(attr, names)}{known}")
    raise FedTheoryError(
        f"{attr!r} in {where} is not an algorithm but a {type(obj).__name__}: name a builder "
        f"decorated with @fedtheory.algorithms.register(...){known}"
    )
