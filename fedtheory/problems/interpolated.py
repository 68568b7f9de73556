"""Counterexamples over smooth strongly convex clients: interpolation data, checked, saved and
replayed.

A worst case found by performance estimation (Drori and Teboulle 2014; Taylor, Hendrickx and
Glineur 2017) is not a function: for each client it is the finitely many triples
(x_j, g_j, f_j) (points, gradients, values) that the algorithm saw. Such data are those of a
function of F_{mu,L} (L-smooth and mu-strongly convex; mu = 0: smooth convex) exactly when
every ordered pair (j, k) of a client's rows satisfies (Taylor, Hendrickx and Glineur 2017,
Thm 4)::

    f_j >= f_k + <g_k, x_j - x_k> + 1/(2(1 - mu/L)) (1/L ||g_j - g_k||^2 + mu ||x_j - x_k||^2
                                                     - 2 mu/L <g_j - g_k, x_j - x_k>).

:func:`check_interpolation` gives each client's smallest margin of these inequalities (in
float64), :func:`write_interpolation_file` saves data whose margins are all > 0, and
:class:`InterpolatedProblem` (:func:`load_interpolated`) replays them: its client i is the
smallest function of F_{mu,L} that fits client i's data (Taylor 2017, Thm 3.14), so the
algorithm run on it from the file's x0 queries the stored points and gets the stored gradients.

The file (``.npz``, read without pickle through :func:`fedtheory.io.read_npz`)::

    kind        0-d string "interpolation"
    mu, L       floats, 0 <= mu < L: the class F_{mu,L} of every client
    points      (N, P, d)  client i's query points x_j, rows 0 .. counts[i]-1 (the rest padding)
    grads       (N, P, d)  its gradients g_j there
    values      (N, P)     its values f_j there
    counts      (N,) int   client i's number of valid rows (1 <= counts[i] <= P)
    x0          (d,)       the start of the replayed run
    x_star      (d,)       a minimizer of f = (1/N) sum_i f_i (the mean of the clients'
                           gradients there must vanish, checked to 1e-6 of the gradients' size)
    optional    lr, local_steps, rounds, algorithm, participation, clients_per_round,
                aggregation, global_lr, prox_mu, options (the algorithm's own options as
                ``--option`` values NAME=VALUE, shell words in one string): the run that found
                the worst case; tau (the tightening of the class), quantity (str) and value
                (the worst value the solver reported)

Nothing else may be in the file; padding rows are written as zeros and no entry may be NaN.
"""

from __future__ import annotations

import io
import os
import shlex
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedtheory.backend import get_namespace, resolve_dtype, to_numpy
from fedtheory.errors import (
    AssumptionError,
    FedTheoryError,
    NotInterpolableError,
    UnknownOptionError,
)
from fedtheory.extras import require
from fedtheory.io import read_npz, write_atomic
from fedtheory.validation import check_finite, check_int, check_memory, check_positive

Array = Any

#: The ``kind`` of an interpolation file (a least-squares problem file has no ``kind``).
INTERPOLATION_KIND = "interpolation"

#: The arrays every interpolation file holds.
REQUIRED = ("kind", "mu", "L", "points", "grads", "values", "counts", "x0", "x_star")

#: Optional metadata: name -> type (the run that found the worst case, and the solver's value).
METADATA: dict[str, type] = {
    "lr": float,
    "local_steps": int,
    "rounds": int,
    "algorithm": str,
    "participation": str,
    "clients_per_round": int,
    "aggregation": str,
    "global_lr": float,
    "prox_mu": float,
    "options": str,
    "tau": float,
    "quantity": str,
    "value": float,
}

#: What an interpolation file is, for messages about a file that is not one.
FILE_WHAT = (
    "an interpolation file (.npz with kind, mu, L, points, grads, values, counts, x0, x_star)"
)

#: The gradient solvers of :class:`InterpolatedProblem` (a named strategy each).
SOLVERS = ("active-set", "clarabel")

#: x* must be stationary for the replayed mean: ||(1/N) sum_i grad f_i(x*)|| at most this
#: times the largest stored gradient norm.
STATIONARY_RTOL = 1e-6


# -- the interpolation inequalities ------------------------------------------------------------
def _pair_margins(
    points: np.ndarray,
    grads: np.ndarray,
    values: np.ndarray,
    counts: np.ndarray,
    mu: float,
    L: float,
) -> np.ndarray:
    """The margins of every ordered pair, ``(N, P, P)``: entry [i, j, k] is f_j - f_k -
    <g_k, x_j - x_k> - 1/(2(1 - mu/L)) (...) of client i (Taylor, Hendrickx and Glineur 2017,
    Thm 4), +inf on the diagonal and on padding rows."""
    N, P, d = points.shape
    check_memory(
        f"interpolation margins of {N} clients x {P}^2 pairs x dimension {d}",
        4 * 8.0 * N * P * P * d,
    )
    dx = points[:, :, None, :] - points[:, None, :, :]  # [i, j, k] = x_j - x_k
    dg = grads[:, :, None, :] - grads[:, None, :, :]
    lin = np.einsum("ikd,ijkd->ijk", grads, dx)  # <g_k, x_j - x_k>
    quad = (dg * dg).sum(-1) / L + mu * (dx * dx).sum(-1) - 2.0 * mu / L * (dg * dx).sum(-1)
    m = values[:, :, None] - values[:, None, :] - lin - quad / (2.0 * (1.0 - mu / L))
    valid = np.arange(P)[None, :] < counts[:, None]
    pair = valid[:, :, None] & valid[:, None, :] & ~np.eye(P, dtype=bool)
    return np.where(pair, m, np.inf)


def check_interpolation(
    points: Any, grads: Any, values: Any, counts: Any, mu: float, L: float
) -> np.ndarray:
    """Each client's smallest margin of the F_{mu,L} interpolation inequalities, in float64.

    For client i, the minimum over ordered pairs (j, k), j != k, of its valid rows of::

        f_j - f_k - <g_k, x_j - x_k>
            - 1/(2(1 - mu/L)) (1/L ||g_j - g_k||^2 + mu ||x_j - x_k||^2 - 2 mu/L <g_j - g_k, x_j - x_k>)

    (Taylor, Hendrickx and Glineur 2017, Thm 4). Margins > 0 for every client: a function of
    F_{mu,L} with exactly these points, gradients and values exists for each client (and so
    does one for any nearby data: solver noise cannot undo it). A client with one row has no
    pair: +inf.

    Parameters
    ----------
    points, grads : array (N, P, d)
    values : array (N, P)
    counts : int array (N,)
        Client i's valid rows are the first ``counts[i]`` (1 <= counts[i] <= P).
    mu, L : float
        0 <= mu < L < inf (mu = 0: smooth convex).

    Returns
    -------
    numpy.ndarray (N,)

    Raises
    ------
    AssumptionError
        Shapes that do not match, a non-finite entry, counts out of range, mu or L out of range.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[[0.0], [1.0]]]); f = 0.5 * x[..., 0] ** 2  # f(x) = x^2/2: mu = L = 1
    >>> m = check_interpolation(x, x, f, [2], mu=0.5, L=2.0)
    >>> bool(m[0] > 0)
    True
    """
    mu, L = _class_constants(mu, L, "")
    points, grads, values, counts = _client_arrays(points, grads, values, counts, "")
    return _pair_margins(points, grads, values, counts, mu, L).min(axis=(1, 2))


def _worst(margins: np.ndarray) -> tuple[int, int, int, float]:
    """(client, j, k, margin) of the smallest pair margin."""
    i, j, k = np.unravel_index(int(np.argmin(margins)), margins.shape)
    return int(i), int(j), int(k), float(margins[i, j, k])


# -- the data ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class InterpolationData:
    """Checked interpolation data of N clients (see the module docstring for the fields).

    Build it with :func:`interpolation_data` (checks every field and the margins) or read it
    with :func:`read_interpolation`.
    """

    mu: float
    L: float
    points: np.ndarray
    grads: np.ndarray
    values: np.ndarray
    counts: np.ndarray
    x0: np.ndarray
    x_star: np.ndarray
    margins: np.ndarray
    metadata: dict = field(default_factory=dict)

    @property
    def n_clients(self) -> int:
        return int(self.points.shape[0])

    @property
    def dim(self) -> int:
        return int(self.points.shape[2])

    def client(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Client i's valid rows: points (n, d), gradients (n, d), values (n,)."""
        n = int(self.counts[i])
        return self.points[i, :n], self.grads[i, :n], self.values[i, :n]

    def arrays(self) -> dict[str, np.ndarray]:
        """The file's arrays (strings as 0-d unicode arrays, no objects)."""
        out = {
            "kind": np.asarray(INTERPOLATION_KIND),
            "mu": np.float64(self.mu),
            "L": np.float64(self.L),
            "points": self.points,
            "grads": self.grads,
            "values": self.values,
            "counts": self.counts.astype(np.int64),
            "x0": self.x0,
            "x_star": self.x_star,
        }
        for k, v in self.metadata.items():
            out[k] = np.asarray(v, dtype={float: np.float64, int: np.int64, str: None}[METADATA[k]])
        return out

    def replay_command(self, path: str) -> str | None:
        """The ``fedtheory simulate`` command that replays the file's run (None when the file
        does not say algorithm, lr, local_steps and rounds)."""
        meta = self.metadata
        if not {"algorithm", "lr", "local_steps", "rounds"} <= set(meta):
            return None
        words = [
            "fedtheory",
            "simulate",
            "--problem-file",
            str(path),
            "--algorithm",
            meta["algorithm"],
            "--participation",
            meta.get("participation", "full"),
        ]
        if "clients_per_round" in meta:
            words += ["--clients-per-round", str(meta["clients_per_round"])]
        words += [
            "--rounds",
            str(meta["rounds"]),
            "--local-steps",
            str(meta["local_steps"]),
            "--lr",
            repr(meta["lr"]),
        ]
        for key in ("aggregation", "global_lr", "prox_mu"):
            if key in meta:
                words += ["--" + key.replace("_", "-"), str(meta[key])]
        for item in shlex.split(meta.get("options", "")):
            words += ["--option", item]
        if meta.get("participation", "full") == "full":
            words += ["--seeds", "1"]  # one path: the run is deterministic
        return " ".join(shlex.quote(w) for w in words)


def _prefix(where: str) -> str:
    return f"{where}: " if where else ""


def _class_constants(mu: Any, L: Any, where: str) -> tuple[float, float]:
    mu = check_positive(f"{_prefix(where)}mu", _scalar(mu, "mu", where), allow_zero=True)
    L = check_positive(f"{_prefix(where)}L", _scalar(L, "L", where))
    if not mu < L:
        raise AssumptionError(
            f"{_prefix(where)}the class F_(mu,L) needs mu < L, got mu = {mu:g}, L = {L:g}"
        )
    return mu, L


def _scalar(value: Any, name: str, where: str) -> Any:
    if np.ndim(value) != 0:
        raise AssumptionError(
            f"{_prefix(where)}{name} must be a scalar, got shape {np.shape(value)}"
        )
    return value.item() if isinstance(value, np.ndarray | np.generic) else value


def _finite(name: str, a: Any, where: str) -> np.ndarray:
    return check_finite(f"{_prefix(where)}{name}", a)


def _client_arrays(
    points: Any, grads: Any, values: Any, counts: Any, where: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    pre = _prefix(where)
    points = _finite("points", points, where)
    grads = _finite("grads", grads, where)
    values = _finite("values", values, where)
    if points.ndim != 3 or 0 in points.shape:
        raise AssumptionError(
            f"{pre}points must have shape (clients N, rows P, dim d) with N, P, d >= 1, got "
            f"{points.shape}"
        )
    if grads.shape != points.shape:
        raise AssumptionError(
            f"{pre}grads must have the shape of points {points.shape}, got {grads.shape}"
        )
    if values.shape != points.shape[:2]:
        raise AssumptionError(
            f"{pre}values must have shape (N, P) = {points.shape[:2]}, got {values.shape}"
        )
    raw = np.asarray(counts)
    if raw.dtype.kind not in "iu":
        raise AssumptionError(f"{pre}counts must be integers, got dtype {raw.dtype}")
    if raw.shape != points.shape[:1]:
        raise AssumptionError(
            f"{pre}counts must have shape (N,) = {points.shape[:1]}, got {raw.shape}"
        )
    P = points.shape[1]
    bad = np.flatnonzero((raw < 1) | (raw > P))
    if bad.size:
        i = int(bad[0])
        raise AssumptionError(
            f"{pre}counts[{i}] = {int(raw[i])}: every client needs between 1 and P = {P} rows"
        )
    return points, grads, values, raw.astype(np.int64)


def interpolation_data(
    *,
    points: Any,
    grads: Any,
    values: Any,
    counts: Any,
    mu: float,
    L: float,
    x0: Any,
    x_star: Any,
    where: str = "",
    **metadata: Any,
) -> InterpolationData:
    """Checked :class:`InterpolationData` (the checks of the writer and of the reader).

    The padding rows (past ``counts[i]``) are set to zero. ``where`` (a path) begins every
    message.

    Raises
    ------
    AssumptionError
        Wrong shapes or dtypes, NaN/inf, counts out of range, mu or L out of range, metadata of
        the wrong type, x* not a minimizer of the interpolated mean.
    NotInterpolableError
        Some margin is not > 0; the message names the client, the pair (j, k) and the margin.
    UnknownOptionError
        Metadata not in :data:`METADATA`.
    """
    pre = _prefix(where)
    unknown = sorted(set(metadata) - set(METADATA))
    if unknown:
        raise UnknownOptionError(
            f"{pre}unknown interpolation metadata {unknown}: known are {', '.join(METADATA)}"
        )
    mu, L = _class_constants(mu, L, where)
    points, grads, values, counts = _client_arrays(points, grads, values, counts, where)
    N, P, d = points.shape
    valid = np.arange(P)[None, :] < counts[:, None]
    points = np.where(valid[..., None], points, 0.0)
    grads = np.where(valid[..., None], grads, 0.0)
    values = np.where(valid, values, 0.0)
    vec = {}
    for name, v in (("x0", x0), ("x_star", x_star)):
        vec[name] = _finite(name, v, where)
        if vec[name].shape != (d,):
            raise AssumptionError(
                f"{pre}{name} must have shape (d,) = ({d},), got {vec[name].shape}"
            )
    meta = {k: _metadata(k, v, where) for k, v in metadata.items()}
    margins = _pair_margins(points, grads, values, counts, mu, L)
    i, j, k, worst = _worst(margins)
    if not worst > 0:
        raise NotInterpolableError(
            f"{pre}client {i}'s data are not those of an L-smooth mu-strongly convex function "
            f"(mu = {mu:g}, L = {L:g}): the interpolation inequality of rows ({j}, {k}) has margin "
            f"{worst:.3g} (it must be > 0; solve over a tightened class mu(1+tau), L(1-tau))",
            client=i,
            pair=(j, k),
            margin=worst,
        )
    data = InterpolationData(
        mu,
        L,
        points,
        grads,
        values,
        counts,
        vec["x0"],
        vec["x_star"],
        margins.min(axis=(1, 2)),
        meta,
    )
    _check_stationary(data, where)
    return data


def _metadata(name: str, value: Any, where: str) -> Any:
    kind = METADATA[name]
    label = f"{_prefix(where)}{name}"
    value = _scalar(value, name, where)
    if kind is str:
        if not isinstance(value, str):
            raise AssumptionError(f"{label} must be a string, got {value!r}")
        if name == "options":
            _check_options(label, value)
        return value
    if kind is int:
        return check_int(label, value, minimum=0 if name == "rounds" else 1)
    if name in ("tau", "prox_mu", "global_lr"):
        return check_positive(label, value, allow_zero=name != "global_lr")
    out = float(_finite(name, value, where))  # the solver's value: any finite real
    return out


def _check_options(label: str, text: str) -> None:
    """``options`` must be shell words NAME=VALUE (NAME an identifier): the ``--option`` values
    of the replay command, read as data."""
    try:
        items = shlex.split(text)
    except ValueError as exc:
        raise AssumptionError(f"{label} must be shell words NAME=VALUE: {exc}") from None
    for item in items:
        name, sep, _ = item.partition("=")
        if not (sep and name.isidentifier()):
            raise AssumptionError(f"{label} must be shell words NAME=VALUE, got {item!r}")


def _check_stationary(data: InterpolationData, where: str) -> None:
    """x* must be a minimizer of the replayed mean: its mean gradient there vanishes."""
    N = data.n_clients
    rows = np.broadcast_to(data.x_star, (N, data.dim))
    g = _Interpolant(data, "active-set", 1e-9).evaluate(rows, np.arange(N))[1]
    residual = float(np.linalg.norm(g.mean(axis=0)))
    scale = float(np.sqrt((data.grads**2).sum(-1).max()))
    if residual > STATIONARY_RTOL * max(scale, np.finfo(float).tiny):
        raise AssumptionError(
            f"{_prefix(where)}x_star is not a minimizer of the interpolated mean: "
            f"||(1/N) sum_i grad f_i(x_star)|| = {residual:.3g} > {STATIONARY_RTOL:g} x the "
            f"largest stored gradient norm {scale:.3g}"
        )


# -- the file ----------------------------------------------------------------------------------
def write_interpolation_file(
    path: str | os.PathLike,
    *,
    points: Any,
    grads: Any,
    values: Any,
    counts: Any,
    mu: float,
    L: float,
    x0: Any,
    x_star: Any,
    **metadata: Any,
) -> dict:
    """Check interpolation data and write them as an ``.npz`` file, atomically.

    Parameters
    ----------
    path : path of the ``.npz`` to write (replaced atomically; never half-written)
    points, grads, values, counts, mu, L, x0, x_star :
        As in the module docstring.
    **metadata :
        Optional: ``lr``, ``local_steps``, ``rounds``, ``algorithm``, ``participation``,
        ``clients_per_round``, ``tau``, ``quantity``, ``value``.

    Returns
    -------
    dict
        ``path``, ``kind``, ``n_clients``, ``dim``, ``counts``, ``mu``, ``L``, ``margins`` (per
        client), ``min_margin``, ``command`` (the ``fedtheory simulate`` command that replays
        it, or None without the run's metadata).

    Raises
    ------
    NotInterpolableError
        A margin that is not > 0 (naming the worst client and pair); nothing is written.
    AssumptionError, UnknownOptionError
        As :func:`interpolation_data`; an unwritable path (:func:`fedtheory.io.write_atomic`).
    """
    data = interpolation_data(
        points=points,
        grads=grads,
        values=values,
        counts=counts,
        mu=mu,
        L=L,
        x0=x0,
        x_star=x_star,
        **metadata,
    )
    buf = io.BytesIO()
    np.savez(buf, **data.arrays())
    written = str(write_atomic(path, buf.getvalue()))
    return {
        "path": written,
        "kind": INTERPOLATION_KIND,
        "n_clients": data.n_clients,
        "dim": data.dim,
        "counts": data.counts.tolist(),
        "mu": data.mu,
        "L": data.L,
        "margins": data.margins.tolist(),
        "min_margin": float(data.margins.min()),
        "command": data.replay_command(os.fsdecode(os.fspath(path))),
    }


def file_kind(data: dict, where: str) -> str:
    """The ``kind`` of a problem file's arrays: ``"least-squares"`` without one, else the
    0-d string it holds (``"interpolation"`` or ``"least-squares"``).

    Raises
    ------
    FedTheoryError
        A ``kind`` that is not a 0-d string, or an unknown one.
    """
    if "kind" not in data:
        return "least-squares"
    kind = data["kind"]
    if kind.dtype.kind != "U" or kind.ndim != 0:
        raise FedTheoryError(
            f"{where}: 'kind' must be a string ({INTERPOLATION_KIND!r} or 'least-squares'), "
            f"got a {kind.dtype} array of shape {kind.shape}"
        )
    name = str(kind)
    if name not in (INTERPOLATION_KIND, "least-squares"):
        raise FedTheoryError(
            f"{where}: unknown problem file kind {name!r} (known: {INTERPOLATION_KIND!r}, "
            "'least-squares')"
        )
    return name


def read_interpolation(path: str | os.PathLike, arrays: dict | None = None) -> InterpolationData:
    """The checked data of an interpolation file (``arrays``: its arrays, already read by
    :func:`fedtheory.io.read_npz`).

    Raises
    ------
    FileNotFoundError
        No such file.
    FedTheoryError
        Not an ``.npz``, pickled objects, a missing or unknown key, another ``kind``, and every
        error of :func:`interpolation_data`; one line naming the path.
    """
    where = os.fsdecode(os.fspath(path))
    data = read_npz(path, what=FILE_WHAT) if arrays is None else arrays
    if file_kind(data, where) != INTERPOLATION_KIND:
        raise FedTheoryError(
            f"{where} is not an interpolation file (it has no kind "
            f"{INTERPOLATION_KIND!r}); expected {FILE_WHAT}"
        )
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise FedTheoryError(f"{where} lacks {', '.join(missing)}; expected {FILE_WHAT}")
    unknown = sorted(set(data) - set(REQUIRED) - set(METADATA))
    if unknown:
        raise FedTheoryError(
            f"{where} has unknown arrays {unknown}: an interpolation file holds "
            f"{', '.join(REQUIRED)} and optionally {', '.join(METADATA)}"
        )
    meta = {
        k: (str(data[k]) if data[k].dtype.kind == "U" else data[k]) for k in METADATA if k in data
    }
    return interpolation_data(**{k: data[k] for k in REQUIRED if k != "kind"}, where=where, **meta)


# -- the smallest interpolant ------------------------------------------------------------------
def lowest_interpolant(
    points: Any, grads: Any, values: Any, x: Any, *, mu: float, L: float
) -> tuple[float, np.ndarray]:
    """Value and gradient at ``x`` of the smallest function of F_{mu,L} through one client's
    data (Taylor 2017, Thm 3.14): W(x) = min { f : the data and (x, g, f) satisfy the
    interpolation inequalities for some g }, and grad W(x) that g (unique).

    Computed by conjugacy: centred at x, with d_j = x_j - x, s_j = g_j - mu d_j and
    L' = L - mu, the inequalities are those of h(y) = f(x + y) - mu/2 ||y||^2 in F_{0,L'}
    (Taylor, Hendrickx and Glineur 2017, Thm 4's reduction), whose conjugate h* is
    1/L'-strongly convex with h*(s_j) = <s_j, d_j> - h(d_j). The smallest h is the conjugate
    of the largest h*: ||s||^2/(2L') plus the convex envelope of c_j = h*(s_j) - ||s_j||^2/(2L')
    on conv{s_j}. So::

        W(x) = -min_{a in simplex} ( ||sum_j a_j s_j||^2 / (2L') + sum_j a_j c_j ),
        grad W(x) = sum_j a*_j s_j,

    a convex quadratic program over the simplex of the data's P rows (:func:`simplex_qp`,
    exact active set), unique in s = sum_j a_j s_j. Tested against the literal program of
    Thm 3.14 solved by Clarabel.

    Parameters
    ----------
    points, grads : array (P, d)
    values : array (P,)
    x : array (d,)
    mu, L : float, 0 <= mu < L

    Returns
    -------
    value : float
    grad : numpy.ndarray (d,)
    """
    mu, L = _class_constants(mu, L, "")
    X = np.asarray(points)
    X, G, F, _ = _client_arrays(
        X[None],
        np.asarray(grads)[None],
        np.asarray(values)[None],
        [X.shape[0] if X.ndim else 0],
        "",
    )
    x = check_finite("x", x)
    if x.shape != X.shape[2:]:
        raise AssumptionError(f"x must have shape (d,) = {X.shape[2:]}, got {x.shape}")
    return _lowest(X[0], G[0], F[0], x, mu, L)


def _lowest(
    X: np.ndarray, G: np.ndarray, F: np.ndarray, x: np.ndarray, mu: float, L: float
) -> tuple[float, np.ndarray]:
    """:func:`lowest_interpolant` on checked float64 arrays."""
    D = X - x
    Lp = L - mu
    S = G - mu * D
    c = (S * D).sum(1) - F + 0.5 * mu * (D * D).sum(1) - (S * S).sum(1) / (2.0 * Lp)
    a = simplex_qp(S, c, Lp)
    s = a @ S
    return float(-(s @ s / (2.0 * Lp) + a @ c)), s


def simplex_qp(
    S: np.ndarray, c: np.ndarray, Lp: float, *, max_iter: int | None = None
) -> np.ndarray:
    """argmin over the simplex {a >= 0, sum a = 1} of ||S^T a||^2 / (2 Lp) + c^T a.

    A primal active-set method (Nocedal and Wright 2006, Alg. 16.3) on the face of the free
    rows F, in an orthonormal basis of the face's directions (sum p = 0) that diagonalizes the
    curvature (the SVD of S_F^T Z): along a direction of zero curvature (below 1e-13 of the
    largest) where the objective decreases it moves to the face's boundary; otherwise it takes
    the Newton step, stopping at the first row that reaches 0. At a stationary point of the
    face (the projected gradient below 1e-12 of the objective's scale), a row outside F with a
    negative multiplier joins F; none: optimal. Every iterate is feasible. It starts at the
    best vertex, so a query whose vertex is optimal (near a stored point) costs one check.

    Raises
    ------
    FedTheoryError
        No convergence within ``max_iter`` (default 20 P + 50) steps.
    """
    S = np.asarray(S, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    P = S.shape[0]
    steps = 20 * P + 50 if max_iter is None else max_iter
    sq = (S * S).sum(1)
    fscale = max(float(np.abs(c).max()), float(sq.max()) / Lp, np.finfo(np.float64).tiny)
    tol = 1e-12 * fscale
    a = np.zeros(P)
    j0 = int(np.argmin(sq / (2.0 * Lp) + c))
    a[j0] = 1.0
    free = [j0]
    for _ in range(steps):
        F = np.array(free)
        grad = S @ (a[F] @ S[F]) / Lp + c
        if F.size > 1:
            Z = np.linalg.qr(np.ones((F.size, 1)), mode="complete")[0][:, 1:]
            _, sv, Vt = np.linalg.svd(S[F].T @ Z / np.sqrt(Lp), full_matrices=True)
            curv = np.zeros(F.size - 1)
            curv[: sv.size] = sv**2
            slope = Vt @ (Z.T @ grad[F])  # along each principal direction of the face
            flat = curv <= 1e-13 * curv.max(initial=0.0)
            if np.linalg.norm(slope[flat]) > tol:  # zero curvature, descent: to the boundary
                _move(a, free, F, -Z @ (Vt[flat].T @ slope[flat]), np.inf)
                continue
            if np.linalg.norm(slope[~flat]) > tol:  # Newton step, cut at the boundary
                _move(a, free, F, -Z @ (Vt[~flat].T @ (slope[~flat] / curv[~flat])), 1.0)
                continue
        nu = float(grad[F] @ a[F])
        lam = grad - nu  # the multipliers of the rows at 0
        lam[F] = np.inf
        k = int(np.argmin(lam))
        if lam[k] >= -tol:
            return a
        free.append(k)
    raise FedTheoryError(
        f"the interpolant's quadratic program over {P} rows did not converge in {steps} "
        "active-set steps"
    )


def _move(a: np.ndarray, free: list, F: np.ndarray, p: np.ndarray, t_max: float) -> None:
    """a_F <- a_F + t p with the largest t <= t_max that keeps a_F >= 0; a row that reaches 0
    there leaves the free rows (exactly 0 from now on)."""
    neg = p < 0
    ratio = np.full(F.size, np.inf)
    ratio[neg] = a[F][neg] / -p[neg]
    b = int(np.argmin(ratio))
    t = min(t_max, float(ratio[b]))
    a[F] = np.maximum(a[F] + t * p, 0.0)
    if t == float(ratio[b]):
        a[F[b]] = 0.0
        free.remove(int(F[b]))
    a /= a.sum()


def _lowest_conic(
    X: np.ndarray, G: np.ndarray, F: np.ndarray, x: np.ndarray, mu: float, L: float
) -> tuple[float, np.ndarray]:
    """The literal program of Taylor 2017, Thm 3.14, solved by Clarabel through cvxpy: min f
    over (g, f) such that the data and (x, g, f) satisfy every interpolation inequality of
    F_{mu,L} in both orders (the reference the active set is tested against; its gradient is
    accurate to about the square root of the solver's tolerance)."""
    import cvxpy as cp  # noqa: PLC0415  (optional extra fedtheory[pep])

    f = cp.Variable()
    g = cp.Variable(X.shape[1])
    cc = 1.0 / (2.0 * (1.0 - mu / L))
    cons = []
    for xj, gj, fj in zip(X, G, F, strict=True):
        dx = xj - x
        q = mu * float(dx @ dx)
        # data row above the new point, and the new point above the data row
        cons.append(
            fj >= f + g @ dx + cc * (cp.sum_squares(gj - g) / L + q - 2 * mu / L * (gj - g) @ dx)
        )
        cons.append(
            f >= fj - gj @ dx + cc * (cp.sum_squares(g - gj) / L + q + 2 * mu / L * (g - gj) @ dx)
        )
    problem = cp.Problem(cp.Minimize(f), cons)
    problem.solve(solver=cp.CLARABEL)
    if problem.status != cp.OPTIMAL:
        raise FedTheoryError(
            f"Clarabel did not solve the interpolant's program: status {problem.status}"
        )
    return float(f.value), np.asarray(g.value, dtype=np.float64)


class _Interpolant:
    """Values and gradients of every client's smallest interpolant at rows of points."""

    def __init__(self, data: InterpolationData, solver: str, match_rtol: float) -> None:
        self.data = data
        self.solver = solver
        P = data.points.shape[1]
        self.valid = np.arange(P)[None, :] < data.counts[:, None]
        pts = data.points[self.valid]
        scale = max(
            float(np.sqrt(((pts - data.x_star) ** 2).sum(-1).max())),
            float(np.sqrt((pts**2).sum(-1).max())),
            np.finfo(np.float64).tiny,
        )
        self.match2 = (match_rtol * scale) ** 2
        self.solves = 0  # programs solved so far (queries off the stored points)

    def evaluate(self, rows: np.ndarray, clients: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``rows (R, d)`` of clients ``clients (R,)`` -> values (R,), gradients (R, d): the
        stored ones at a stored point (within ``match_rtol`` of the data's scale), else a solve
        per distinct (client, point)."""
        d = self.data
        dist2 = ((d.points[clients] - rows[:, None, :]) ** 2).sum(-1)
        dist2 = np.where(self.valid[clients], dist2, np.inf)
        j = np.argmin(dist2, axis=1)
        r = np.arange(rows.shape[0])
        hit = dist2[r, j] <= self.match2
        values = d.values[clients, j].copy()
        grads = d.grads[clients, j].copy()
        miss = np.flatnonzero(~hit)
        if miss.size:
            keys = np.column_stack([clients[miss].astype(np.float64), rows[miss]])
            uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
            out_v = np.empty(uniq.shape[0])
            out_g = np.empty((uniq.shape[0], rows.shape[1]))
            self.solves += uniq.shape[0]
            for u, key in enumerate(uniq):  # one small convex program per distinct query
                X, G, F = d.client(int(key[0]))
                if self.solver == "clarabel":
                    out_v[u], out_g[u] = _lowest_conic(X, G, F, key[1:], d.mu, d.L)
                else:
                    out_v[u], out_g[u] = _lowest(X, G, F, key[1:], d.mu, d.L)
            values[miss] = out_v[inverse.reshape(-1)]
            grads[miss] = out_g[inverse.reshape(-1)]
        return values, grads


class InterpolatedProblem:
    """A replayed counterexample: client i is the smallest L-smooth, mu-strongly convex function
    through its interpolation data (Taylor 2017, Thm 3.14; :func:`lowest_interpolant`).

    At a stored point of client i (within ``match_rtol`` times the data's scale, the largest
    of ||x_j - x*|| and ||x_j||) its gradient and value are the stored ones (there the
    interpolant's program has a single feasible point); elsewhere one small convex program per
    distinct (client, point) of the call: a quadratic program over the simplex of the client's
    P rows, solved exactly by an active set (``solver="active-set"``), or the literal program of
    Thm 3.14 by Clarabel (``solver="clarabel"``, needs ``fedtheory[pep]``; a cross-check).
    Replay-only: evaluations loop over the distinct queries in Python. Cost, FedAvg with
    N = 2, K = 2, R = 4 on files of 9 rows per client (d = 1 and 6; docs/bounds.md): no program
    at all when the run queries the stored points (the replay 0.006-0.012 CPU s); off them
    0.6-0.9 ms a gradient with the active set, 59-66 ms with Clarabel.

    Parameters
    ----------
    data : InterpolationData
        From :func:`read_interpolation` or :func:`interpolation_data`.
    solver : {"active-set", "clarabel"}
    match_rtol : float
        Relative distance within which a query is the stored point (default 1e-9).
    dtype : float64 (default) or float32
        The dtype of nothing here: evaluations are in float64 and returned in the query's dtype.

    Attributes
    ----------
    n_clients, dim : N and d of the file
    x_star, f_star : the file's x* and f(x*) = (1/N) sum_i f_i(x*) (the stored values where x*
        is a data point of every client)
    x0 : the file's start, which :func:`fedtheory.simulation.simulate` uses when the run gives
        none
    L, mu : the class constants of every client (so of f)
    metadata : dict, the run the file records (lr, local_steps, rounds, algorithm, ...)
    """

    stochastic = False

    def __init__(
        self,
        data: InterpolationData,
        *,
        solver: str = "active-set",
        match_rtol: float = 1e-9,
        dtype: Any = None,
    ) -> None:
        if not isinstance(data, InterpolationData):
            raise AssumptionError(
                f"InterpolatedProblem needs InterpolationData (read_interpolation), got "
                f"{type(data).__name__}"
            )
        if solver not in SOLVERS:
            raise AssumptionError(
                f"unknown interpolant solver {solver!r}: known are {', '.join(SOLVERS)}"
            )
        if solver == "clarabel":
            require("pep", "the interpolant's conic solver (solver='clarabel')")
        self.dtype = resolve_dtype(dtype)
        self.data = data
        self.solver = solver
        self._interp = _Interpolant(data, solver, check_positive("match_rtol", match_rtol))
        self.n_clients, self.dim = data.n_clients, data.dim
        self.x_star = data.x_star.copy()
        self.x0 = data.x0.copy()
        self.L, self.mu = data.L, data.mu
        self.metadata = dict(data.metadata)
        at_star = self._interp.evaluate(
            np.broadcast_to(self.x_star, (self.n_clients, self.dim)), np.arange(self.n_clients)
        )[0]
        self.f_star = float(at_star.mean())

    def _rows(self, X: Array, clients: Array) -> tuple[Any, np.ndarray, np.ndarray]:
        """X as float64 rows and the client of each row (``clients`` broadcast to X's rows)."""
        xp = get_namespace(X)
        if X.shape[-1] != self.dim:
            raise AssumptionError(f"X must end with dim = {self.dim}, got {X.shape}")
        rows = to_numpy(X).astype(np.float64).reshape(-1, self.dim)
        cl = np.broadcast_to(to_numpy(clients).astype(np.int64), X.shape[:-1]).reshape(-1)
        return xp, rows, cl

    def grads(self, X: Array, rng: Any = None) -> Array:
        """grad f_i(X[..., i, :]) for every client: ``(..., N, d) -> (..., N, d)`` (exact:
        ``rng`` changes nothing)."""
        N, d = self.n_clients, self.dim
        if X.shape[-2:] != (N, d):
            raise AssumptionError(f"X must end with (clients, dim) = {(N, d)}, got {X.shape}")
        return self._grads(X, np.arange(N))

    def grads_of(self, X: Array, clients: Array) -> Array:
        """Gradients of the clients ``clients`` (u,) at the rows ``X (..., u, d)``."""
        return self._grads(X, clients)

    def grads_at(self, Xs: Array, clients: Array, rng: Any = None) -> Array:
        """Gradients of the clients ``clients (S, M)`` at ``Xs (S, M, d)``."""
        return self._grads(Xs, clients)

    def _grads(self, X: Array, clients: Array) -> Array:
        xp, rows, cl = self._rows(X, clients)
        G = self._interp.evaluate(rows, cl)[1]
        return xp.asarray(G.reshape(X.shape), dtype=X.dtype)

    def client_losses(self, X: Array) -> Array:
        """f_i(X[..., i, :]): ``(..., N, d) -> (..., N)``."""
        xp, rows, cl = self._rows(X, np.arange(self.n_clients))
        V = self._interp.evaluate(rows, cl)[0]
        return xp.asarray(V.reshape(X.shape[:-1]), dtype=X.dtype)

    def _mean(self, x: Array, which: int) -> Array:
        """The mean over clients of their values (``which`` 0) or gradients (1) at ``x (..., d)``."""
        N, d = self.n_clients, self.dim
        if x.shape[-1] != d:
            raise AssumptionError(f"x must end with dim = {d}, got {x.shape}")
        xp = get_namespace(x)
        B = int(np.prod(x.shape[:-1]))
        rows = np.repeat(to_numpy(x).astype(np.float64).reshape(B, 1, d), N, axis=1)
        out = self._interp.evaluate(rows.reshape(B * N, d), np.tile(np.arange(N), B))[which]
        out = out.reshape((B, N) + out.shape[1:]).mean(axis=1)
        return xp.asarray(out.reshape(x.shape[:-1] + out.shape[1:]), dtype=x.dtype)

    def loss(self, x: Array) -> Array:
        """f(x) = (1/N) sum_i f_i(x) for ``x`` of shape ``(..., d)``."""
        return self._mean(x, 0)

    def full_grad(self, x: Array) -> Array:
        """grad f(x) = (1/N) sum_i grad f_i(x) for ``x`` of shape ``(..., d)``."""
        return self._mean(x, 1)

    @property
    def solves(self) -> int:
        """How many small programs the problem has solved (queries off the stored points)."""
        return self._interp.solves

    def __repr__(self) -> str:
        return (
            f"InterpolatedProblem(N={self.n_clients}, d={self.dim}, mu={self.mu:g}, L={self.L:g}, "
            f"rows={self.data.counts.tolist()}, solver={self.solver!r})"
        )


def load_interpolated(path: str | os.PathLike, **kw: Any) -> InterpolatedProblem:
    """The :class:`InterpolatedProblem` of an interpolation file (``kw``: its options)."""
    return InterpolatedProblem(read_interpolation(path), **kw)
