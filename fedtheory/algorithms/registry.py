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
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from fedtheory.algorithms.base import Algorithm, AlgorithmConfig, StateLayout
from fedtheory.errors import AssumptionError, FedTheoryError, UnknownOptionError
from fedtheory.validation import lookup, with_facts

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
    stated_rate: str = BASELINE_RATE,
    schedule: Schedule | None = None,
    exponents: dict[str, dict[str, float]] | None = None,
    conditions: Callable[..., list[str]] | None = None,
    horizon: Callable[..., list[str]] | None = None,
) -> Callable:
    """Decorator: register ``builder(config) -> Algorithm`` under ``name`` with its settings
    (``uses``: shared fields read besides ``lr`` and ``local_steps``), options and facts (see
    :class:`AlgorithmInfo`). Everything known about the algorithm is declared here: an
    algorithm without an exact layout says why (``not_exact``), and a layout needs an affine
    round."""
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
        if key in _REGISTRY:
            raise ValueError(f"algorithm {key!r} is registered twice")
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
            stated_rate=stated_rate,
            schedule=schedule,
            exponents=exponents,
            conditions=conditions,
            horizon=horizon,
        )
        for spelling in (display.lower(), *aliases):
            _ALIASES.setdefault(spelling.lower(), key)
        return builder

    return deco


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
    *, gossip: bool | None = None, clustered: bool | None = None, adaptive: bool | None = None,
    affine: bool | None = None,
) -> list[str]:  # fmt: skip
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
