"""A sweep specification: the TOML keys, their validation, normalization, hash, grid and tasks.

A spec is a flat TOML table whose keys mirror ``fedtheory simulate``'s flags with underscores
(:data:`KEYS`). Every key given as a list is *swept*: the grid is the cartesian product of the
swept lists, in the order of :data:`KEYS` (not the order of the file, so that one normalized spec
means one store layout). A *task* is one grid point and one block of at most ``seed_block``
consecutive seeds; inside a task the seeds stay on the batch axis of
:func:`fedtheory.simulation.simulate`.

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
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import tomllib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from fedtheory.algorithms import available
from fedtheory.errors import FedTheoryError
from fedtheory.problems import BUILTIN_PROBLEMS

#: Participation models a spec can name (those of ``fedtheory simulate --participation``).
PARTICIPATION = ("full", "uniform", "weighted", "bernoulli", "markov", "cluster")


@dataclass(frozen=True)
class Key:
    """One spec key: its type, default, bounds, whether a list of it may be swept."""

    kind: str  # "str", "int", "float", "bool" or "path"
    default: Any = None
    help: str = ""
    required: bool = False
    sweepable: bool = True
    choices: tuple | None = None
    minimum: float | None = None
    positive: bool = False


#: Every key a spec may have, in the order of the dimensions of the store.
KEYS: dict[str, Key] = {
    "problem": Key("str", None, "a built-in problem", choices=tuple(BUILTIN_PROBLEMS)),
    "problem_file": Key("path", None, ".npz with A (N, n, d), b (N, n), optional lam"),
    "algorithm": Key("str", None, "algorithm name (fedtheory simulate --list)", required=True),
    "participation": Key("str", "full", "participation model", choices=PARTICIPATION),
    "clients_per_round": Key("int", None, "clients per round M (cluster: per cluster)", minimum=1),
    "probabilities": Key("path", None, "participation probabilities p (.npy or text)"),
    "aggregation": Key("str", "mean", "aggregation rule", choices=("mean", "weighted", "unbiased")),
    "rounds": Key("int", None, "rounds R", required=True, sweepable=False, minimum=0),
    "local_steps": Key("int", None, "local steps K", required=True, minimum=1),
    "lr": Key("float", None, "local step size (FOCUS: its eta)", required=True, positive=True),
    "global_lr": Key("float", 1.0, "server step size", positive=True),
    "beta1": Key("float", 0.9, "server optimizer beta1", minimum=0.0),
    "beta2": Key("float", 0.99, "server optimizer beta2", minimum=0.0),
    "eps": Key("float", 1e-8, "server optimizer eps", minimum=0.0),
    "eps_placement": Key("str", None, "eps inside or outside the root", choices=("inside", "outside")),
    "prox_mu": Key("float", 0.0, "FedProx proximal weight mu", minimum=0.0),
    "topology": Key("str", None, "gossip graph of the gossip algorithms"),
    "clusters": Key("int", None, "clusters C (clustered algorithms, cluster participation)", minimum=1),
    "seeds": Key("int", 1, "seeds S (the seed dimension)", sweepable=False, minimum=1),
    "seed": Key("int", 0, "root seed (and the random problems' seed)", sweepable=False, minimum=0),
    "seed_block": Key("int", None, "seeds per task (default: all seeds)", sweepable=False, minimum=1),
    "backend": Key("str", None, "array backend", sweepable=False, choices=("numpy", "cupy")),
    "float32": Key("bool", False, "single precision (results stored as float64)", sweepable=False),
}  # fmt: skip

#: Keys whose values are files: the spec hash covers their contents, not their paths.
PATH_KEYS = tuple(k for k, v in KEYS.items() if v.kind == "path")

_WHY_SCALAR = {
    "rounds": "it is the length of the round dimension",
    "seeds": "it is the length of the seed dimension",
    "seed": "the seed dimension already holds seeds 0..seeds-1 of the root seed; raise seeds",
    "seed_block": "it sets the tasks, not the results",
    "backend": "it sets where tasks run, not the results",
    "float32": "one store holds one precision",
}


@dataclass(frozen=True)
class Task:
    """One grid point and one block of seeds: the unit of work and of the store.

    Attributes
    ----------
    index : int
        Position in :meth:`Spec.tasks` (grid points in C order, seed blocks innermost).
    point : tuple of int
        Index of the grid point along each swept dimension.
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
        """``lr=0.01, algorithm='focus', seeds 0-3``: which task this is, for messages."""
        parts = [f"{k}={self.config[k]!r}" for k in spec.swept]
        parts.append(f"seeds {self.seed_ids[0]}-{self.seed_ids[-1]}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Spec:
    """A normalized sweep spec: every key of :data:`KEYS` with a value (defaults filled in).

    Swept keys hold tuples, the others scalars. Build one with :func:`normalize` or
    :func:`load_spec`; ``values`` is then validated.
    """

    values: dict
    source: str = "spec"

    @property
    def swept(self) -> dict[str, tuple]:
        """The swept keys and their values, in the order of the store's dimensions."""
        return {k: v for k, v in self.values.items() if isinstance(v, tuple)}

    @property
    def grid_shape(self) -> tuple[int, ...]:
        return tuple(len(v) for v in self.swept.values())

    def to_dict(self) -> dict:
        """The normalized spec as plain JSON values (swept keys as lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.values.items()}

    def hashable(self) -> dict:
        """:meth:`to_dict` with every file replaced by the SHA-256 of its contents."""
        out = self.to_dict()
        for key in PATH_KEYS:
            val = out[key]
            if isinstance(val, list):
                out[key] = [_file_digest(key, p) for p in val]
            elif val is not None:
                out[key] = _file_digest(key, val)
        return out

    @cached_property
    def hash(self) -> str:
        """SHA-256 of the normalized spec (canonical JSON; files by content, read once)."""
        return spec_digest(self.hashable())

    @property
    def n_tasks(self) -> int:
        """The number of tasks: grid points x seed blocks (without building them)."""
        return math.prod(self.grid_shape) * len(self.seed_blocks())

    def seed_blocks(self) -> list[tuple[int, ...]]:
        """Seeds 0..S-1 cut into consecutive blocks of ``seed_block`` (the last may be shorter)."""
        S, B = self.values["seeds"], self.values["seed_block"]
        return [tuple(range(a, min(a + B, S))) for a in range(0, S, B)]

    def tasks(self) -> list[Task]:
        """Every task: grid points in C order of the swept dimensions, seed blocks innermost."""
        swept = self.swept
        fixed = {k: v for k, v in self.values.items() if k not in swept}
        out = []
        blocks = self.seed_blocks()
        for point in itertools.product(*(range(len(v)) for v in swept.values())):
            config = dict(fixed)
            config.update({k: swept[k][i] for k, i in zip(swept, point, strict=True)})
            for ids in blocks:
                out.append(Task(index=len(out), point=point, seed_ids=ids, config=config))
        return out

    def differences(self, other: dict) -> list[str]:
        """Keys whose values differ from another normalized spec's (``other`` as hashable dict)."""
        mine = self.hashable()
        return [k for k in sorted(set(mine) | set(other)) if mine.get(k) != other.get(k)]


def spec_digest(hashable: dict) -> str:
    """SHA-256 of a spec's :meth:`Spec.hashable` dict as canonical JSON (:attr:`Spec.hash`)."""
    text = json.dumps(hashable, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def from_stored(values: dict, files: dict, source: str) -> tuple[Spec, str]:
    """The spec a store holds (its attributes ``fedtheory_spec`` and ``fedtheory_spec_files``)
    and the hash it had, without reading its files again (they may be gone or changed).

    Raises
    ------
    FedTheoryError
        The stored spec does not have the keys of :data:`KEYS` (a damaged store).
    """
    if not isinstance(values, dict) or set(values) != set(KEYS):
        raise FedTheoryError(f"{source}: the stored spec does not have the keys of a sweep spec")
    spec = Spec(
        values={k: tuple(values[k]) if isinstance(values[k], list) else values[k] for k in KEYS},
        source=source,
    )
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
        text = path.read_text()
    except FileNotFoundError as exc:
        raise FedTheoryError(f"no such spec file: {path}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise FedTheoryError(f"cannot read the spec {path}: {exc}") from exc
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FedTheoryError(f"{path} is not valid TOML: {exc}") from exc
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
        Naming the key: unknown keys (with the valid ones), a missing required key, a list for a
        key that cannot be swept, a value of the wrong type, out of range or not among the
        choices, a missing file, an unknown algorithm, neither or both of ``problem`` and
        ``problem_file``.
    """
    if not isinstance(raw, dict):
        raise FedTheoryError(f"{source}: a spec is a table of keys, got {type(raw).__name__}")
    unknown = [k for k in raw if k not in KEYS]
    if unknown:
        raise FedTheoryError(
            f"unknown key {unknown[0]!r} in {source}: valid keys are {', '.join(KEYS)}"
        )
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    values: dict[str, Any] = {}
    for name, key in KEYS.items():
        if raw.get(name) is None:  # absent (a normalized spec writes unset keys as null)
            if key.required:
                raise FedTheoryError(f"{source} needs the key {name!r} ({key.help})")
            values[name] = key.default
            continue
        val = raw[name]
        if isinstance(val, list):
            if not key.sweepable:
                raise FedTheoryError(
                    f"key {name!r} in {source} cannot be swept ({_WHY_SCALAR[name]}): give one value"
                )
            if not val:
                raise FedTheoryError(f"key {name!r} in {source} is an empty list: nothing to sweep")
            items = _numbers(key, val)
            if items is None:  # not plain numbers in range: each value checked, naming it
                items = tuple(_value(name, key, v, base, source) for v in val)
            twice = _repeated(items)
            if twice is not None:
                raise FedTheoryError(
                    f"key {name!r} in {source} lists {twice!r} twice: "
                    "each swept value is one coordinate"
                )
            values[name] = items
        else:
            values[name] = _value(name, key, val, base, source)
    if (values["problem"] is None) == (values["problem_file"] is None):
        raise FedTheoryError(
            f"{source} needs exactly one of 'problem' ({', '.join(BUILTIN_PROBLEMS)}) "
            "and 'problem_file' (.npz)"
        )
    known = available()
    for alg in _as_tuple(values["algorithm"]):
        if alg not in known:
            raise FedTheoryError(
                f"key 'algorithm' in {source}: unknown algorithm {alg!r}: "
                f"choose from {', '.join(known)}"
            )
    if values["seed_block"] is None or values["seed_block"] > values["seeds"]:
        values["seed_block"] = values["seeds"]
    return Spec(values=values, source=source)


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


def _numbers(key: Key, vals: list) -> tuple | None:
    """A long swept list of numbers checked at once (a grid of 10^6 points is normalized in a
    fraction of a second, then refused by its size); None when :func:`_value` must look at each
    value (other kinds, bools, non-finite or out-of-range values: its message names the one)."""
    kinds = (int, float) if key.kind == "float" else (int,) if key.kind == "int" else None
    if kinds is None or not set(map(type, vals)) <= set(kinds):
        return None
    arr = np.asarray(vals, dtype=np.float64 if key.kind == "float" else np.int64)
    ok = np.isfinite(arr).all() if key.kind == "float" else True
    ok = ok and (not key.positive or (arr > 0).all())
    ok = ok and (key.minimum is None or (arr >= key.minimum).all())
    return tuple(arr.tolist()) if ok else None


def _value(name: str, key: Key, v: Any, base: Path, source: str) -> Any:
    """One validated scalar value of ``key``."""
    where = f"key {name!r} in {source}"
    if isinstance(v, dict | list):
        raise FedTheoryError(f"{where} must be a {key.kind} or a list of them, got a nested value")
    if key.kind == "bool":
        if not isinstance(v, bool):
            raise FedTheoryError(f"{where} must be true or false, got {v!r}")
        return v
    if key.kind in ("str", "path"):
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
    else:  # float: TOML integers are accepted (lr = 1 is 1.0)
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
