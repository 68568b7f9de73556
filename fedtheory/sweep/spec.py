"""A sweep specification: the TOML keys, their validation, normalization, hash, grid and tasks.

A spec is a TOML table whose keys mirror ``fedtheory simulate``'s flags with underscores
(:data:`KEYS`). Every key given as a list is *swept*: it is one axis of the grid. Two tables make
other axes (docs/sweeps.md):

- ``[zip]``: lists of equal length that form one axis together, named ``zip`` (its points are
  the i-th values of every list, not their product);
- ``[algorithms.NAME]``: one table per algorithm, with the settings only that algorithm takes,
  scalars or lists; every algorithm's points (the product of its table's lists) follow each
  other on one axis, named ``run``, whose coordinates say which algorithm and settings a point
  has.

An ``[options]`` table sets algorithms' own options (``server_momentum = 0.9``) for every
algorithm of the spec, an ``[algorithms.NAME.options]`` table for one (not swept: a list is an
array option's value). ``algorithm`` may name a user's own algorithm, ``"my_algos.py:fednova"``
(a path relative to the spec) or ``"module:NAME"``: normalizing the spec imports it (its code
runs; docs/own-algorithm.md), the spec holds the absolute path, which the Dask workers import
again, and the spec's hash covers the file's contents, as it covers every file of the spec.

The grid is the cartesian product of the axes, in the order of :data:`KEYS` (an axis stands
where its first key does; not the order of the file, so that one normalized spec means one
store layout). A *task* is one grid point and one block of at most ``seed_block`` consecutive
seeds; inside a task the seeds stay on the batch axis of :func:`fedtheory.simulation.simulate`.

Nothing here needs the optional sweep extra (dask, zarr, xarray).

Examples
--------
>>> spec = normalize({"problem": "quadratic", "algorithm": ["focus", "fedavg"],
...                   "lr": [0.01, 0.02], "local_steps": 2, "rounds": 10, "seeds": 4,
...                   "seed_block": 2})
>>> spec.swept
{'algorithm': ('focus', 'fedavg'), 'lr': (0.01, 0.02)}
>>> len(spec.tasks())
8
>>> spec = normalize({"problem": "quadratic", "lr": 0.01, "local_steps": 2, "rounds": 10,
...                   "algorithms": {"focus": {}, "fedadam": {"global_lr": [0.1, 0.01]}}})
>>> [(a.name, a.keys, len(a.points)) for a in spec.axes]
[('run', ('algorithm', 'global_lr'), 3)]
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from fedtheory.algorithms.registry import info, reference_file, resolve_algorithm
from fedtheory.errors import FedTheoryError
from fedtheory.io import read_toml
from fedtheory.problems import BUILTIN_PROBLEMS
from fedtheory.simulation.settings import SETTINGS, Setting

#: Every key a spec may have, in the order of the dimensions of the store: the run settings
#: of :data:`~fedtheory.simulation.settings.SETTINGS` that a sweep's simulations take (their
#: type, default, range, help and whether they may be swept are the table's). The order is the
#: store's layout: a key is added, never moved.
KEYS: dict[str, Setting] = {
    k: SETTINGS[k]
    for k in (
        "problem",
        "problem_file",
        "algorithm",
        "participation",
        "clients_per_round",
        "probabilities",
        "empty",
        "replace",
        "markov_a",
        "markov_b",
        "start",
        "aggregation",
        "rounds",
        "local_steps",
        "lr",
        "global_lr",
        "beta1",
        "beta2",
        "eps",
        "eps_placement",
        "prox_mu",
        "topology",
        "clusters",
        "seeds",
        "seed",
        "seed_block",
        "backend",
        "float32",
    )
}

#: Keys added after stores were first made: a spec holds them only when set (not at their
#: default), so a store made before them keeps its spec's hash and resumes.
LATER_KEYS = ("empty", "replace", "markov_a", "markov_b", "start")

#: Keys whose values are files: the spec hash covers their contents, not their paths.
PATH_KEYS = tuple(k for k, v in KEYS.items() if v.kind == "path")

#: Kinds of setting whose values a spec holds as strings.
TEXT_KINDS = ("str", "path", "algorithm")


#: The tables of a spec besides :data:`KEYS`: ``[zip]``, ``[algorithms.NAME]`` and
#: ``[options]``.
TABLES = ("zip", "algorithms", "options")

#: The key of :meth:`Spec.hashable` (and of a store's ``fedtheory_spec_files``) that holds the
#: digests of the user's algorithm files the spec names.
ALGORITHM_FILES = "algorithm_files"

#: Name of the dimension of the ``[zip]`` axis and of the ``[algorithms.NAME]`` axis.
ZIP_DIM, RUN_DIM = "zip", "run"


@dataclass(frozen=True)
class Axis:
    """One dimension of the grid: the keys it sets and their values at each of its points.

    Attributes
    ----------
    name : str
        The dimension's name in the store: the key of a swept list, ``zip`` for the ``[zip]``
        table, ``run`` for the ``[algorithms.NAME]`` tables.
    keys : tuple of str
        The keys whose values change along it (its coordinates in the store).
    points : tuple of tuple
        The values of ``keys`` at each point, in order.
    """

    name: str
    keys: tuple
    points: tuple

    def values(self, key: str) -> tuple:
        """The values of ``key`` along the axis (its coordinate)."""
        i = self.keys.index(key)
        return tuple(p[i] for p in self.points)


@dataclass(frozen=True)
class Task:
    """One grid point and one block of seeds: the unit of work and of the store.

    Attributes
    ----------
    index : int
        Position in :meth:`Spec.tasks` (grid points in C order, seed blocks innermost).
    point : tuple of int
        Index of the grid point along each axis (:attr:`Spec.axes`).
    seed_ids : tuple of int
        The block's seeds (children of the root seed), consecutive.
    config : dict
        Every key at this grid point (scalars), as :func:`fedtheory.sweep.task.run_task` uses it.
    """

    index: int
    point: tuple
    seed_ids: tuple
    config: dict

    def describe(self, spec: Spec) -> str:
        """``algorithm='focus', lr=0.01, seeds 0-3``: which task this is, for messages."""
        parts = [f"{k}={self.config[k]!r}" for a in spec.axes for k in a.keys]
        parts.append(f"seeds {self.seed_ids[0]}-{self.seed_ids[-1]}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Spec:
    """A normalized sweep spec: every key of :data:`KEYS` with a value (defaults filled in),
    and the tables of :data:`TABLES`.

    Swept and zipped keys hold tuples, the others scalars; ``values["zip"]`` is the tuple of
    zipped keys (or None), ``values["algorithms"]`` maps each algorithm to its table (or None;
    ``values["algorithm"]`` is then the tuple of their names), ``values["options"]`` is the
    ``[options]`` table (or None). An algorithm is held as another process names it: a registry
    name, or the absolute ``FILE.py:NAME`` of a user's file. Build one with :func:`normalize`
    or :func:`load_spec`; ``values`` is then validated. ``block_given`` is False when the spec
    left ``seed_block`` out (it is then all the seeds, or the block of the store it grows:
    :meth:`on_store`).
    """

    values: dict
    source: str = "spec"
    block_given: bool = True

    @cached_property
    def axes(self) -> tuple[Axis, ...]:
        """The grid's axes, in the order of the store's dimensions (:data:`KEYS` order)."""
        v = self.values
        zipped = v["zip"] or ()
        tables = v["algorithms"]
        out: list[tuple[int, Axis]] = []
        order = {k: i for i, k in enumerate(KEYS)}
        for k in KEYS:
            if isinstance(v[k], tuple) and k not in zipped and not (tables and k == "algorithm"):
                out.append((order[k], Axis(k, (k,), tuple((x,) for x in v[k]))))
        if zipped:
            keys = tuple(sorted(zipped, key=order.__getitem__))
            points = tuple(zip(*(v[k] for k in keys), strict=True))
            out.append((order[keys[0]], Axis(ZIP_DIM, keys, points)))
        if tables:
            keys = ("algorithm", *(k for k in KEYS if any(k in t for t in tables.values())))
            points = []
            for alg, table in tables.items():
                lists = [_as_tuple(table.get(k, v[k])) for k in keys[1:]]
                points.extend((alg, *combo) for combo in itertools.product(*lists))
            out.append((order["algorithm"], Axis(RUN_DIM, keys, tuple(points))))
        return tuple(a for _, a in sorted(out, key=lambda pair: pair[0]))

    @property
    def swept(self) -> dict[str, tuple]:
        """Each axis's name and its points, in the order of the store's dimensions: the values
        of a swept key, tuples of values for the ``zip`` and ``run`` axes."""
        return {a.name: a.points if len(a.keys) > 1 else a.values(a.keys[0]) for a in self.axes}

    @property
    def grid_shape(self) -> tuple[int, ...]:
        return tuple(len(a.points) for a in self.axes)

    @property
    def axis_keys(self) -> set[str]:
        """The keys whose values change over the grid (the coordinates of the axes)."""
        return {k for a in self.axes for k in a.keys}

    @property
    def fixed(self) -> dict:
        """The keys of :data:`KEYS` with one value over the whole grid (those set, not None)."""
        keys = self.axis_keys
        return {
            k: v
            for k, v in self.values.items()
            if k in KEYS and k not in keys and v is not None and not _unset_later(k, v)
        }

    def to_dict(self) -> dict:
        """The normalized spec as plain JSON values (lists for swept keys), in the form
        :func:`normalize` reads: zipped keys inside ``zip``, tables inside ``algorithms`` (both
        only when the spec has them)."""
        zipped = self.values["zip"] or ()
        out = {
            k: None if k in zipped else list(v) if isinstance(v, tuple) else v
            for k, v in self.values.items()
            if k in KEYS and not _unset_later(k, v)
        }
        if zipped:  # the tables only when given: a spec without them has the keys of KEYS
            out["zip"] = {k: list(self.values[k]) for k in zipped}
        tables = self.values["algorithms"]
        if tables is not None:
            out["algorithms"] = {
                alg: {k: list(x) if isinstance(x, tuple) else x for k, x in t.items()}
                for alg, t in tables.items()
            }
        if self.values.get("options") is not None:
            out["options"] = dict(self.values["options"])
        return out

    def hashable(self) -> dict:
        """:meth:`to_dict` with every file replaced by the SHA-256 of its contents (a user's
        algorithm files under :data:`ALGORITHM_FILES`, when the spec names one)."""
        out = self.to_dict()
        for key in PATH_KEYS:
            val = out[key]
            if isinstance(val, list):
                out[key] = [_file_digest(key, p) for p in val]
            elif val is not None:
                out[key] = _file_digest(key, val)
        files = self.algorithm_files()
        if files:
            out[ALGORITHM_FILES] = files
        return out

    @cached_property
    def hash(self) -> str:
        """SHA-256 of the normalized spec (canonical JSON; files by content, read once)."""
        return spec_digest(self.hashable())

    @property
    def n_tasks(self) -> int:
        """The number of tasks: grid points x seed blocks (without building them)."""
        return math.prod(self.grid_shape) * self.n_seed_blocks

    @property
    def n_seed_blocks(self) -> int:
        """The number of seed blocks, ceil(seeds / seed_block) (without building them)."""
        return -(-self.values["seeds"] // self.values["seed_block"])

    def seed_blocks(self) -> list[tuple[int, ...]]:
        """Seeds 0..S-1 cut into consecutive blocks of ``seed_block`` (the last may be shorter)."""
        S, B = self.values["seeds"], self.values["seed_block"]
        return [tuple(range(a, min(a + B, S))) for a in range(0, S, B)]

    def tasks(self) -> list[Task]:
        """Every task: grid points in C order of the axes, seed blocks innermost."""
        axes = self.axes
        base = {k: v for k, v in self.values.items() if k in KEYS and not isinstance(v, tuple)}
        out = []
        blocks = self.seed_blocks()
        for point in itertools.product(*(range(len(a.points)) for a in axes)):
            config = dict(base)
            for a, i in zip(axes, point, strict=True):
                config.update(zip(a.keys, a.points[i], strict=True))
            config["options"] = self.options(config["algorithm"])
            for ids in blocks:
                out.append(Task(index=len(out), point=point, seed_ids=ids, config=config))
        return out

    def options(self, algorithm: str) -> dict:
        """The options of ``algorithm``'s runs: ``[options]`` and its own
        ``[algorithms.NAME.options]`` (which wins)."""
        tables = self.values["algorithms"] or {}
        mine = (tables.get(algorithm) or {}).get("options") or {}
        return {**(self.values["options"] or {}), **mine}

    def algorithm_files(self) -> dict[str, str]:
        """The digests of the user's algorithm files the spec names, ``{"/path/f.py:NAME":
        "sha256:..."}`` (read now; empty when it names none)."""
        v = self.values["algorithm"]
        refs = [a for a in (v if isinstance(v, tuple) else (v,)) if reference_file(a)]
        return {a: _file_digest("algorithm", reference_file(a)) for a in refs}

    def differences(self, other: dict) -> list[str]:
        """Keys whose values differ from another normalized spec's (``other`` as hashable dict)."""
        mine = self.hashable()
        return [k for k in sorted(set(mine) | set(other)) if mine.get(k) != other.get(k)]

    def on_store(self, stored: dict | None) -> Spec:
        """This spec as it runs into a store made from the spec ``stored`` (its hashable dict;
        None: a new store). A spec that left ``seed_block`` out and has more seeds than the
        store (or as many) keeps the store's block size, so that raising ``seeds`` alone grows
        the store (a first spec of 4 seeds made one block of 4: 8 seeds are then two blocks of
        4), and the raised spec resumes the grown store."""
        if self.block_given or not isinstance(stored, dict):
            return self
        try:
            old = _plain(stored, "the stored spec")
        except FedTheoryError:
            return self
        S0, B0, S = old.values["seeds"], old.values["seed_block"], self.values["seeds"]
        if not (isinstance(S0, int) and isinstance(B0, int) and 0 < B0 and S >= S0):
            return self
        return Spec({**self.values, "seed_block": B0}, self.source, block_given=True)

    def seeds_hint(self, stored: dict) -> str | None:
        """What to change so that this spec grows the store made from ``stored``, when only
        ``seeds`` and ``seed_block`` stand in the way (None otherwise): the store's block size,
        more seeds than it holds, or another store when its seeds end in a short block."""
        try:
            old = _plain(stored, "the stored spec")
        except FedTheoryError:
            return None
        if set(self.differences(stored)) - {"seeds", "seed_block"}:
            return None
        S0, B0 = old.values["seeds"], old.values["seed_block"]
        S, B = self.values["seeds"], self.values["seed_block"]
        if S < S0:
            return (
                f"the store holds {S0} seeds: set seeds = {S0} or more (a store keeps the "
                "seeds it has), or give another --store"
            )
        if S > S0 and S0 % B0:
            return (
                f"its {S0} seeds end in a short block of {S0 % B0} (seed_block = {B0}), and "
                "a store grows by whole blocks only: give another --store for "
                f"seeds = {S} (seeds a multiple of seed_block can grow later)"
            )
        if B != B0:
            grow = f" to grow it from {S0} to {S} seeds" if S > S0 else ""
            return (
                f"its tasks hold seed_block = {B0} seeds each: set seed_block = {B0} (or "
                f"leave seed_block out: the store's is kept){grow}, or give another "
                "--store"
            )
        return None

    def growth(self, other: dict) -> list[str] | None:
        """How this spec extends the spec ``other`` (a hashable dict, as a store keeps it).

        An extension keeps every value of ``other`` and adds seeds (``seeds`` a multiple of the
        same ``seed_block`` before) or values appended to the end of axes, so every task of
        ``other`` is a task of this spec, at the same grid point and with the same seeds.

        Returns
        -------
        list of str or None
            What grows (``["seed 4 -> 8", "lr 2 -> 3"]``; empty when the specs are the same),
            or None when this spec is not an extension of ``other``.
        """
        try:
            old = _plain(other, "the stored spec")
        except FedTheoryError:
            return None
        new = _plain(self.hashable(), self.source)
        if [(a.name, a.keys) for a in new.axes] != [(a.name, a.keys) for a in old.axes]:
            return None  # another layout
        grown = []
        for a, b in zip(new.axes, old.axes, strict=True):
            if a.points[: len(b.points)] != b.points:
                return None  # a stored point changed or moved
            if len(a.points) > len(b.points):
                grown.append(f"{a.name} {len(b.points)} -> {len(a.points)}")
        if any(new.fixed.get(k) != old.fixed.get(k) for k in KEYS if k != "seeds"):
            return None  # a setting of every task changed
        if new.values["options"] != old.values["options"] or any(
            (new.values["algorithms"] or {}).get(a, {}).get("options")
            != (old.values["algorithms"] or {}).get(a, {}).get("options")
            for a in old.values["algorithms"] or {}
        ):
            return None  # an option of some tasks changed
        mine, theirs = self.hashable().get(ALGORITHM_FILES, {}), other.get(ALGORITHM_FILES, {})
        if any(mine.get(a) != d for a, d in theirs.items()):
            return None  # an algorithm file of stored tasks changed
        S, S0, B = new.values["seeds"], old.values["seeds"], old.values["seed_block"]
        if S < S0 or (S > S0 and S0 % B):  # the stored blocks must stay the first blocks
            return None
        if S > S0:
            grown.append(f"seed {S0} -> {S}")
        return grown


def spec_digest(hashable: dict) -> str:
    """SHA-256 of a spec's :meth:`Spec.hashable` dict as canonical JSON (:attr:`Spec.hash`)."""
    text = json.dumps(hashable, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _plain(values: dict, source: str) -> Spec:
    """A :class:`Spec` from :meth:`Spec.to_dict`'s plain values, without validating them (a
    store's spec: its files may be gone)."""
    keys = set(values) - {*TABLES, ALGORITHM_FILES} if isinstance(values, dict) else set()
    if not set(KEYS) - set(LATER_KEYS) <= keys <= set(KEYS):
        raise FedTheoryError(f"{source}: the stored spec does not have the keys of a sweep spec")
    values = {**{k: KEYS[k].default for k in LATER_KEYS}, **values}  # unset: the defaults
    out = {k: tuple(values[k]) if isinstance(values[k], list) else values[k] for k in KEYS}
    zipped = values.get("zip")
    tables = values.get("algorithms")
    if not (zipped is None or isinstance(zipped, dict)) or not (
        tables is None or isinstance(tables, dict)
    ):
        raise FedTheoryError(f"{source}: the stored spec's zip or algorithms is not a table")
    if zipped:
        out.update({k: tuple(v) for k, v in zipped.items()})
    options = values.get("options")
    if not (options is None or isinstance(options, dict)):
        raise FedTheoryError(f"{source}: the stored spec's options is not a table")
    out["options"] = options
    out["zip"] = tuple(zipped) if zipped else None
    out["algorithms"] = (
        None
        if tables is None
        else {
            alg: {k: tuple(x) if isinstance(x, list) else x for k, x in t.items()}
            for alg, t in tables.items()
        }
    )
    return Spec(values=out, source=source)


def from_stored(values: dict, files: dict, source: str) -> tuple[Spec, str]:
    """The spec a store holds (its attributes ``fedtheory_spec`` and ``fedtheory_spec_files``)
    and the hash it had, without reading its files again (they may be gone or changed).

    Raises
    ------
    FedTheoryError
        The stored spec does not have the keys of :data:`KEYS` and :data:`TABLES` (a damaged
        store).
    """
    spec = _plain(values, source)
    return spec, spec_digest({**spec.to_dict(), **files})


def _file_digest(key: str, path: str) -> str:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise FedTheoryError(f"spec key {key!r}: cannot read {path}: {exc.strerror}") from exc
    return "sha256:" + hashlib.sha256(data).hexdigest()


def load_spec(path: str | os.PathLike) -> Spec:
    """Read and normalize a TOML spec; relative file paths in it are relative to the file.

    Raises
    ------
    FedTheoryError
        A missing or unreadable file, invalid TOML, or any error of :func:`normalize`.
    """
    path = Path(path)
    try:
        raw = read_toml(path, what="a sweep spec")
    except FileNotFoundError as exc:
        raise FedTheoryError(f"no such spec file: {path}") from exc
    return normalize(raw, base_dir=path.resolve().parent, source=str(path))


def normalize(
    raw: dict, *, base_dir: str | os.PathLike | None = None, source: str = "spec"
) -> Spec:
    """Validate a spec table and fill in the defaults.

    Parameters
    ----------
    raw : dict
        Keys of :data:`KEYS`; a list value is swept (non-empty, no repeated value); None is
        the same as leaving the key out, so :meth:`Spec.to_dict` normalizes to itself.
        Optionally ``zip`` (a table of lists of one length, one axis together) and
        ``algorithms`` (a table per algorithm of the settings it alone takes, scalars or lists;
        then ``algorithm`` is left out, or lists the tables' names in their order).
    base_dir : path, optional
        Directory that relative ``problem_file`` / ``probabilities`` paths are relative to
        (default: the working directory). Paths are stored absolute.
    source : str
        Name of the spec in messages (the TOML file).

    Returns
    -------
    Spec

    Raises
    ------
    FedTheoryError
        Every problem of the spec at once, in one line, each naming its key: unknown keys
        (with the valid ones), missing required keys, a list for a key that cannot be swept, a
        value of the wrong type, out of range or not among the choices, a missing file, an
        unknown algorithm, neither or both of ``problem`` and ``problem_file``, zipped lists of
        different lengths, a key given in two places.
    """
    if not isinstance(raw, dict):
        raise FedTheoryError(f"{source}: a spec is a table of keys, got {type(raw).__name__}")
    problems: list[str] = []
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    unknown = [k for k in raw if k not in KEYS and k not in TABLES]
    if unknown:
        problems.append(
            f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} in "
            f"{source}: valid keys are {', '.join((*KEYS, *TABLES))}"
        )
    zipped = _table(raw.get("zip"), "zip", source, problems)
    tables = _table(raw.get("algorithms"), "algorithms", source, problems)
    values: dict[str, Any] = {}
    missing, bad = [], set()
    for name, key in KEYS.items():
        if raw.get(name) is None:  # absent (a normalized spec writes unset keys as null)
            given_elsewhere = name in zipped or (
                tables and all(name in t for t in tables.values() if isinstance(t, dict))
            )
            if key.required and not given_elsewhere and not (name == "algorithm" and tables):
                missing.append(f"{name!r} ({key.long_name})")
            values[name] = None if key.required else key.default
            continue
        try:
            values[name] = _entry(name, key, raw[name], base, f"key {name!r} in {source}")
        except FedTheoryError as exc:
            problems.append(str(exc))
            values[name] = key.default
            bad.add(name)
    if missing:
        problems.insert(
            0, f"{source} needs the key{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
        )
    zip_keys = _zip(zipped, raw, values, base, source, problems)
    algs = _algorithms(tables, raw, values, zip_keys, base, source, problems)
    if (values["problem"] is None) == (values["problem_file"] is None) and not bad & {
        "problem",
        "problem_file",
    }:
        problems.append(
            f"{source} needs exactly one of 'problem' ({', '.join(BUILTIN_PROBLEMS)}) "
            "and 'problem_file' (.npz)"
        )
    options = _options(raw.get("options"), "[options]", source, problems)
    if values["algorithm"] is not None and "algorithm" not in bad:
        names = _algorithm_sources(_as_tuple(values["algorithm"]), algs, base, source, problems)
        values["algorithm"] = names if isinstance(values["algorithm"], tuple) else names[0]
        if algs:
            algs = dict(zip(names, algs.values(), strict=True))
    if problems:
        raise FedTheoryError("; ".join(problems))
    values["options"] = options
    given = values["seed_block"] is not None
    if values["seed_block"] is None or values["seed_block"] > values["seeds"]:
        values["seed_block"] = values["seeds"]
    values["zip"] = zip_keys or None
    values["algorithms"] = algs
    return Spec(values=values, source=source, block_given=given)


def _algorithm_sources(
    given: tuple, tables: dict | None, base: Path, source: str, problems: list[str]
) -> tuple:
    """Each algorithm of the spec as another process names it (a registry name, or the absolute
    ``FILE.py:NAME`` of a user's file, imported now:
    :func:`~fedtheory.algorithms.registry.resolve_algorithm`)."""
    out = []
    for alg in given:
        where = f"[algorithms.{alg}]" if tables else "key 'algorithm'"
        try:
            found = resolve_algorithm(alg, base_dir=base)
        except FedTheoryError as exc:
            problems.append(f"{where} in {source}: {exc}")
            out.append(alg)
            continue
        if info(found.name).module == "__main__":
            problems.append(
                f"{where} in {source}: {found.name!r} is registered in this session only "
                "(__main__: a notebook or script), which the Dask workers cannot import: put "
                "it in a file and name it as 'FILE.py:NAME'"
            )
        out.append(found.source)
    twice = _repeated(tuple(out))
    if twice is not None:
        problems.append(f"key 'algorithm' in {source} names {twice!r} twice")
    return tuple(out)


def _options(val: Any, where: str, source: str, problems: list[str]) -> dict | None:
    """An options table: names to TOML values (a list is an array option's value, not swept);
    their names and types are checked against the algorithms' declarations when the grid is
    built (:func:`fedtheory.sweep.task.check_spec`)."""
    if val is None:
        return None
    if not isinstance(val, dict):
        problems.append(f"{where} in {source} must be a table of options, got {val!r}")
        return None
    for name, v in val.items():
        if isinstance(v, dict) or (
            isinstance(v, list) and any(isinstance(x, list | dict) for x in v)
        ):
            problems.append(
                f"option {name!r} in {where} of {source} must be a value or a list "
                "of values (options are not swept)"
            )
    return dict(val)


def _table(val: Any, name: str, source: str, problems: list[str]) -> dict:
    """``raw[name]`` as a table ({} when absent, or not a table: that is a problem)."""
    if val is None:
        return {}
    if not isinstance(val, dict):
        problems.append(f"{name!r} in {source} must be a table ([{name}]), got {val!r}")
        return {}
    return val


def _entry(name: str, key: Setting, val: Any, base: Path, where: str) -> Any:
    """One key's validated value: a scalar, or a tuple when a list is swept."""
    if not isinstance(val, list):
        return _value(name, key, val, base, where)
    if not key.sweepable:
        raise FedTheoryError(f"{where} cannot be swept ({key.why_scalar}): give one value")
    if not val:
        raise FedTheoryError(f"{where} is an empty list: nothing to sweep")
    items = _numbers(key, val)
    if items is None:  # not plain numbers in range: each value checked, naming it
        items = tuple(_value(name, key, v, base, where) for v in val)
    twice = _repeated(items)
    if twice is not None:
        raise FedTheoryError(f"{where} lists {twice!r} twice: each swept value is one coordinate")
    return items


def _zip(
    zipped: dict, raw: dict, values: dict, base: Path, source: str, problems: list[str]
) -> tuple:
    """Check the ``[zip]`` table and put its lists into ``values``; the zipped keys."""
    if not zipped:
        return ()
    keys, lengths = [], {}
    for name, val in zipped.items():
        where = f"key {name!r} in [zip] of {source}"
        key = KEYS.get(name)
        if key is None or not key.sweepable or key.kind == "path" or name == "algorithm":
            problems.append(
                f"{where} cannot be zipped: zip the settings of the simulations "
                "(lr, local_steps, clients_per_round, ...)"
            )
            continue
        if raw.get(name) is not None:
            problems.append(f"{where} is also given at the top level: give it once")
            continue
        if not isinstance(val, list) or not val:
            problems.append(f"{where} must be a non-empty list")
            continue
        try:
            items = _numbers(key, val) or tuple(_value(name, key, v, base, where) for v in val)
        except FedTheoryError as exc:
            problems.append(str(exc))
            continue
        values[name], lengths[name] = items, len(items)
        keys.append(name)
    if len(zipped) < 2:
        problems.append(f"[zip] in {source} zips one key: give two or more, or sweep the key")
    elif len(set(lengths.values())) > 1:
        said = ", ".join(f"{k} has {n}" for k, n in lengths.items())
        problems.append(
            f"the lists of [zip] in {source} differ in length ({said} values): "
            "zipped lists pair their i-th values"
        )
    elif len(keys) == len(zipped):
        twice = _repeated(tuple(zip(*(values[k] for k in keys), strict=True)))
        if twice is not None:
            problems.append(f"[zip] in {source} lists the point {twice!r} twice")
    return tuple(keys)


def _algorithms(
    tables: dict,
    raw: dict,
    values: dict,
    zipped: tuple,
    base: Path,
    source: str,
    problems: list[str],
) -> dict | None:
    """Check the ``[algorithms.NAME]`` tables; each algorithm's validated settings (or None),
    and ``values["algorithm"]`` set to their names."""
    if not tables:
        return None
    names = tuple(tables)
    given = raw.get("algorithm")
    if given is not None and (given if isinstance(given, list) else [given]) != list(names):
        problems.append(
            f"{source} gives the algorithms as [algorithms.NAME] tables and as "
            "'algorithm': give them once (the tables)"
        )
    out = {}
    for alg, table in tables.items():
        if not isinstance(table, dict):
            problems.append(f"algorithms.{alg} in {source} must be a table, got {table!r}")
            continue
        mine = {}
        for name, val in table.items():
            where = f"key {name!r} in [algorithms.{alg}] of {source}"
            key = KEYS.get(name)
            if name == "options":
                opts = _options(val, f"[algorithms.{alg}.options]", source, problems)
                if opts:
                    mine["options"] = opts
            elif key is None or not key.sweepable or key.kind == "path" or name == "algorithm":
                problems.append(
                    f"{where}: an algorithm's table takes the settings of its "
                    "simulations (lr, global_lr, local_steps, ...)"
                )
            elif name in zipped or isinstance(values.get(name), tuple):
                problems.append(f"{where} is swept for every algorithm too: give it in one place")
            elif val is not None:
                try:
                    mine[name] = _entry(name, key, val, base, where)
                except FedTheoryError as exc:
                    problems.append(str(exc))
        out[alg] = mine
    values["algorithm"] = names
    return out


def _unset_later(key: str, value: Any) -> bool:
    """A key of :data:`LATER_KEYS` at its default: not part of the spec's table."""
    return key in LATER_KEYS and value == KEYS[key].default


def _as_tuple(v: Any) -> tuple:
    return v if isinstance(v, tuple) else (v,)


def _repeated(items: tuple) -> Any:
    """A value that ``items`` holds twice, or None (numbers sorted by NumPy: a set of 10^6
    floats takes half a second)."""
    if items and set(map(type, items)) <= {int, float}:
        order = np.argsort(np.asarray(items, dtype=np.float64), kind="stable")
        arr = np.asarray(items, dtype=np.float64)[order]
        same = np.flatnonzero(arr[1:] == arr[:-1])
        return items[order[same[0]]] if same.size else None
    seen: set = set()
    return next((v for v in items if v in seen or seen.add(v)), None)


def _numbers(key: Setting, vals: list) -> tuple | None:
    """A long swept list of numbers checked at once (a grid of 10^6 points is normalized in a
    fraction of a second, then refused by its size); None when :func:`_value` must look at each
    value (other kinds, bools, non-finite or out-of-range values: its message names the one)."""
    real = key.kind in ("float", "rate")
    kinds = (int, float) if real else (int,) if key.kind == "int" else None
    if kinds is None or not set(map(type, vals)) <= set(kinds):
        return None
    arr = np.asarray(vals, dtype=np.float64 if real else np.int64)
    ok = np.isfinite(arr).all() if real else True
    ok = ok and (not key.positive or (arr > 0).all())
    ok = ok and (key.minimum is None or (arr >= key.minimum).all())
    return tuple(arr.tolist()) if ok else None


def _value(name: str, key: Setting, v: Any, base: Path, where: str) -> Any:
    """One validated scalar value of ``key`` (``where`` names it in messages)."""
    if isinstance(v, dict | list):
        raise FedTheoryError(f"{where} must be a {key.kind} or a list of them, got a nested value")
    if key.kind == "bool":
        if not isinstance(v, bool):
            raise FedTheoryError(f"{where} must be true or false, got {v!r}")
        return v
    if key.kind in TEXT_KINDS:
        if not isinstance(v, str) or not v:
            raise FedTheoryError(f"{where} must be a non-empty string, got {v!r}")
        if key.choices is not None and v not in key.choices:
            raise FedTheoryError(f"{where} is {v!r}: choose one of {', '.join(key.choices)}")
        if key.kind == "path":
            p = Path(v).expanduser()
            p = p if p.is_absolute() else base / p
            if not p.is_file():
                raise FedTheoryError(f"{where}: no such file {p}")
            return str(p.resolve())
        return v
    if key.kind == "int":
        if isinstance(v, bool) or not isinstance(v, int):
            raise FedTheoryError(f"{where} must be an integer, got {v!r}")
    else:  # float (a rate: one for every client): TOML integers are accepted (lr = 1 is 1.0)
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise FedTheoryError(f"{where} must be a number, got {v!r}")
        v = float(v)
        if not math.isfinite(v):
            raise FedTheoryError(f"{where} must be finite, got {v}")
    if key.positive and not v > 0:
        raise FedTheoryError(f"{where} must be > 0, got {v}")
    if key.minimum is not None and v < key.minimum:
        raise FedTheoryError(f"{where} must be >= {key.minimum}, got {v}")
    return v
