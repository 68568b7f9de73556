"""Instances of a bound's setting: one named problem, or draws from an instance class.

An :class:`Instance` is a least-squares problem (A, b), the discrete setting (K, M) and the
participation probabilities; it builds the problem and the participation model the exact oracle
and the simulator take, and writes itself as the ``.npz`` problem file that
``fedtheory rate --problem-file`` and ``fedtheory simulate --problem-file`` read
(:class:`~fedtheory.problems.ProblemFile`: A (N, n, d), b (N, n), lam), with ``p`` beside it as
``.p.npy`` for ``--probabilities``.

A class instance is a point of a continuous parameter vector (:class:`Draw`): client spectra
(clipped to [mu, L]), client rotations (Cayley transforms of skew-symmetric matrices), client
optima and raw participation weights, so the search refines instances with
:func:`scipy.optimize.minimize` over that vector.
"""

from __future__ import annotations

import io
import os
import shlex
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from fedtheory.bounds.spec import AFTER_ROUNDS, BoundSpec
from fedtheory.errors import AssumptionError
from fedtheory.io import write_atomic
from fedtheory.participation import model_info
from fedtheory.problems import LeastSquaresProblem, make_problem
from fedtheory.simulation.settings import SETTINGS
from fedtheory.simulation.spec import build_participation


@dataclass(frozen=True, eq=False)
class Instance:
    """One instance: least-squares clients, K, M and the participation probabilities.

    Attributes
    ----------
    A : ndarray (N, n, d)
    b : ndarray (N, n)
    lam : float
        Ridge weight (0 for class draws).
    local_steps : int
    clients_per_round : int or None
    p : ndarray (N,) or None
        Bernoulli p_i, or weighted draw weights (summing to 1); None for full and uniform.
    label : str
        Where it came from ("figure4", "draw 17", "refined from draw 17", ...).
    problem_name : str or None
        A built-in problem name (then ``A``/``b`` may be None).
    notes : tuple of str
        What differs from the spec's keys, one line each (:func:`named_instance`).
    """

    A: np.ndarray | None
    b: np.ndarray | None
    lam: float
    local_steps: int
    clients_per_round: int | None
    p: np.ndarray | None
    label: str
    problem_name: str | None = None
    problem_path: str | None = None
    _problem: Any = field(default=None, repr=False)
    noise: float = 0.0
    notes: tuple[str, ...] = ()

    @cached_property
    def problem(self) -> Any:
        if self._problem is not None:
            return self._problem
        return LeastSquaresProblem(self.A, self.b, self.lam, noise=self.noise)

    @property
    def n_clients(self) -> int:
        return int(self.problem.n_clients)

    @property
    def dim(self) -> int:
        return int(self.problem.dim)

    def participation(self, spec: BoundSpec) -> Any:
        """The participation model of this instance under ``spec``."""
        return participation_model(spec, self.n_clients, self.clients_per_round, self.p)

    def sizes(self) -> dict:
        return {
            "N": self.n_clients,
            "d": self.dim,
            "K": self.local_steps,
            "M": self.clients_per_round,
        }

    # -- problem files ----------------------------------------------------------------------
    def write(self, path: str | os.PathLike) -> dict:
        """Write the problem file (and ``<stem>.p.npy`` when there are probabilities).

        Returns ``{"problem_file": path, "probabilities_file": path or None}``. Both go through
        the atomic writer: an existing file is replaced whole or not at all.

        Raises
        ------
        AssumptionError
            For a built-in problem that is not least squares (nothing to write).
        """
        if self.A is None:
            raise AssumptionError(f"{self.label}: not a least-squares problem, no file to write")
        path = Path(path)
        buf = io.BytesIO()
        np.savez(buf, A=self.A, b=self.b, lam=np.float64(self.lam))
        write_atomic(path, buf.getvalue())
        p_file = None
        if self.p is not None:
            p_file = self.write_probabilities(path.with_suffix(".p.npy"))
        return {"problem_file": str(path), "probabilities_file": p_file}

    def write_probabilities(self, path: str | os.PathLike) -> str:
        """Write ``p`` as ``.npy`` (atomically, for ``--probabilities``); returns the path."""
        pbuf = io.BytesIO()
        np.save(pbuf, np.asarray(self.p, dtype=np.float64))
        write_atomic(Path(path), pbuf.getvalue())
        return str(path)

    def rate_command(self, spec: BoundSpec, eta: float, files: dict) -> str:
        """The ``fedtheory rate`` command line that recomputes the exact value on the file."""
        where = (
            ["--problem", files["problem"]]
            if files.get("problem")
            else ["--problem-file", files["problem_file"]]
        )
        words = [
            "fedtheory",
            "rate",
            *where,
            "--algorithm",
            spec.algorithm_source or spec.algorithm,
            "--participation",
            spec.participation,
        ]
        if self.clients_per_round is not None and self.p is None:
            words += ["--clients-per-round", str(self.clients_per_round)]
        if spec.participation == "weighted":
            words += ["--clients-per-round", str(self.clients_per_round)]
        if files.get("probabilities_file"):
            words += ["--probabilities", files["probabilities_file"]]
        read = model_info(spec.participation).reads
        for name in ("empty", "replace", "markov_a", "markov_b", "start"):
            setting, value = SETTINGS[name], getattr(spec, name)
            if (
                setting.key in read
                and value is not None
                and (name == "empty" or value != setting.default)
            ):
                flag = setting.flags[0]
                words += [flag] if value is True else [flag, str(value)]
        words += [
            "--aggregation",
            spec.aggregation,
            "--local-steps",
            str(self.local_steps),
            "--lr",
            repr(float(eta)),
        ]
        if spec.global_lr is not None:
            words += ["--global-lr", repr(spec.global_lr)]
        if spec.prox_mu is not None:
            words += ["--prox-mu", repr(spec.prox_mu)]
        if spec.noise:
            words += ["--noise", repr(spec.noise)]
        for name, value in spec.options.items():  # arrays as comma-separated numbers
            text = ",".join(map(repr, np.ravel(value).tolist())) if np.ndim(value) else value
            words += ["--option", f"{name}={text}"]
        return " ".join(shlex.quote(w) for w in words)


def participation_model(spec: BoundSpec, n: int, m: int | None, p: Any) -> Any:
    """The participation model of ``spec`` on n clients with M = ``m`` per round and
    probabilities ``p`` (Bernoulli p_i, weighted draw weights; None: from M): the one builder,
    :func:`~fedtheory.simulation.spec.build_participation`."""
    return build_participation(spec.participation, n, **model_settings(spec, m, p)).model


def model_settings(spec: BoundSpec, clients_per_round: int | None, p: Any) -> dict:
    """The participation settings of an instance under ``spec``, by their table names (only
    those its model reads: a class draw carries probabilities for every model)."""
    read = model_info(spec.participation).reads
    out = {"clients_per_round": clients_per_round, "probabilities": p}
    out.update({k: getattr(spec, k) for k in ("empty", "replace", "markov_a", "markov_b", "start")})
    return {k: v for k, v in out.items() if SETTINGS[k].key in read}


def _listed(values: tuple[int, ...]) -> str:
    return str(values[0]) if len(values) == 1 else "[" + ", ".join(map(str, values)) + "]"


def named_instance(
    spec: BoundSpec, *, problem: str | None = None, problem_file: str | None = None
) -> Instance:
    """The one instance a spec (or the command line) names: a built-in problem or a file.

    N is the problem's. M is the spec's ``clients_per_round`` when it gives one value, else
    (a list for the class search) the problem's own setting where it declares one
    (``clients_per_round``: 003 Figure 4's 4 of 16), else the list's first; K is the first
    ``local_steps``; ``p`` is the spec's, or (weighted) the problem's own ``participation_p``.
    ``notes`` says in one line each what differs from the spec's keys (a flag that replaced
    the spec's problem, an N the spec's ``clients`` do not list, an M or K chosen from a list).
    """
    flag = problem is not None or problem_file is not None
    name = problem if flag else spec.problem
    path = problem_file if flag else spec.problem_file
    given = f"--problem {name}" if name is not None else f"--problem-file {path}"
    prob = make_problem(name, path=path, exact=True)
    label = str(name or path)
    notes = []
    if flag and (spec.problem is not None or spec.problem_file is not None):
        key = "problem" if spec.problem is not None else "problem_file"
        notes.append(f"{given} replaces the spec's {key} = {spec.problem or spec.problem_file}")
    N = int(prob.n_clients)
    if spec.clients is not None and N not in spec.clients:
        notes.append(
            f"{label} has N = {N} clients; the spec's clients = {_listed(spec.clients)} "
            "apply to the class search only"
        )
    if spec.noise:
        prob.noise = float(spec.noise)
    p = np.asarray(spec.p, dtype=np.float64) if spec.p is not None else None
    if p is not None and p.size != N:
        raise AssumptionError(f"p has {p.size} entries, the problem {N} clients")
    M = None
    own = getattr(prob, "clients_per_round", None)
    listed = spec.clients_per_round
    if listed and len(listed) == 1:
        M = listed[0]
        if own is not None and own != M:
            notes.append(
                f"M = {M} from the spec's clients_per_round ({label}'s own setting is {own} of {N})"
            )
    elif listed:
        M = own if own is not None else listed[0]
        why = f"{label}'s own setting" if own is not None else "the first of the list"
        notes.append(
            f"M = {M} ({why}); the spec's clients_per_round = {_listed(listed)} apply "
            "to the class search"
        )
    if M is not None and not 1 <= M <= N:
        raise AssumptionError(f"clients_per_round {M} must lie in [1, N = {N}]")
    if p is None:  # the problem's own draw weights, where the model takes them (figure4's)
        built = build_participation(spec.participation, prob, **model_settings(spec, M, None))
        if built.probabilities_from == "problem":
            p = np.asarray(prob.participation_p, dtype=np.float64)
    if spec.participation == "weighted" and p is not None:
        p = p / p.sum()
    K = spec.local_steps[0]
    if len(spec.local_steps) > 1:
        notes.append(
            f"K = {K} (the first of the spec's local_steps = "
            f"{_listed(spec.local_steps)}; they apply to the class search)"
        )
    A = getattr(prob, "A", None)
    return Instance(
        None if A is None else np.asarray(A, dtype=np.float64),
        None if A is None else np.asarray(prob.b, dtype=np.float64),
        float(getattr(prob, "lam", 0.0)),
        K,
        M,
        p,
        label=label,
        problem_name=name,
        problem_path=path,
        _problem=prob,
        notes=tuple(notes),
    )


# -- the instance class -----------------------------------------------------------------------
@dataclass(frozen=True)
class Draw:
    """A class instance as a parameter vector plus its discrete setting.

    ``theta`` = (eigenvalues (N d), skew parameters (N d(d-1)/2), optima offsets (N d),
    centre z (d), raw participation weights (N, when drawn)).
    """

    N: int
    d: int
    K: int
    M: int | None
    theta: np.ndarray
    label: str

    def blocks(self) -> dict[str, slice]:
        """Where each part of ``theta`` lies: ``lam`` (N d), ``skew`` (N d(d-1)/2), ``e`` (N d),
        ``z`` (d), ``r`` (N raw participation weights, when drawn)."""
        N, d = self.N, self.d
        sizes = (("lam", N * d), ("skew", N * (d * (d - 1) // 2)), ("e", N * d), ("z", d))
        out, i = {}, 0
        for name, size in sizes:
            out[name] = slice(i, i + size)
            i += size
        if self.theta.size > i:
            out["r"] = slice(i, i + N)
        return out

    def parts(self, spec: BoundSpec) -> dict[str, np.ndarray]:
        """The instance's pieces: clipped spectra ``lam`` (N, d), skew matrices ``S`` and
        rotations ``Q = (I - S)^{-1} (I + S)`` (N, d, d), optima ``xs`` (N, d), offsets ``e``,
        centre ``z``, raw weights ``r`` and probabilities ``p`` (None when not drawn)."""
        cls = spec.instance_class
        N, d = self.N, self.d
        t = np.asarray(self.theta, dtype=np.float64)
        b = self.blocks()
        lam = np.clip(t[b["lam"]], cls.mu, cls.L).reshape(N, d)
        iu = np.triu_indices(d, 1)
        S = np.zeros((N, d, d))
        S[:, iu[0], iu[1]] = t[b["skew"]].reshape(N, -1)
        S -= np.swapaxes(S, 1, 2)
        eye = np.eye(d)
        Q = np.linalg.solve(eye - S, eye + S)  # Cayley: orthogonal for skew S
        e = np.clip(t[b["e"]], -1.0, 1.0).reshape(N, d)
        z = t[b["z"]]
        A = np.sqrt(lam)[:, :, None] * np.swapaxes(Q, 1, 2)  # A_i = diag(sqrt lam) Q_i^T
        xs = _meet_class_bounds(A, z + cls.heterogeneity * e, spec)
        r = p = None
        if spec.p is not None:
            p = np.asarray(spec.p, dtype=np.float64)
        elif "r" in b:
            lo, hi = cls.p_range
            r = np.clip(t[b["r"]], lo, hi)
            p = r
        if p is not None and spec.participation == "weighted":
            p = p / p.sum()
        return {"lam": lam, "S": S, "Q": Q, "A": A, "e": e, "z": z, "xs": xs, "r": r, "p": p}

    def instance(self, spec: BoundSpec) -> Instance:
        """Build the instance: clip to the class, rotate, solve for b."""
        q = self.parts(spec)
        b = np.einsum("nkd,nd->nk", q["A"], q["xs"])
        return Instance(q["A"], b, 0.0, self.K, self.M, q["p"], self.label, noise=spec.noise)

    def bounds(self, spec: BoundSpec) -> list[tuple[float | None, float | None]]:
        """Box constraints of ``theta`` (the class: spectra in [mu, L], offsets in [-1, 1],
        weights in ``p_range``; rotations and the centre are free)."""
        cls = spec.instance_class
        out: list[tuple[float | None, float | None]] = [(None, None)] * self.theta.size
        for name, (lo, hi) in (
            ("lam", (cls.mu, cls.L)),
            ("e", (-1.0, 1.0)),
            ("r", tuple(cls.p_range)),
        ):
            sl = self.blocks().get(name)
            if sl is not None:
                out[sl] = [(lo, hi)] * (sl.stop - sl.start)
        return out

    def pullback(
        self,
        spec: BoundSpec,
        dH: np.ndarray,
        dxs: np.ndarray | None = None,
        dr: np.ndarray | None = None,
    ) -> np.ndarray:
        """d/dtheta from d/dH_j (N, d, d, symmetric), d/dx_j* (N, d) and d/dr (N,): the chain
        rule through H_j = Q_j diag(lam_j) Q_j^T, Q_j = (I - S_j)^{-1} (I + S_j)
        (dQ = (I - S)^{-1} dS (I + Q)), x_j* = z + heterogeneity e_j and the clipping (zero
        derivative outside the class's box)."""
        cls = spec.instance_class
        q = self.parts(spec)
        b = self.blocks()
        t = np.asarray(self.theta, dtype=np.float64)
        out = np.zeros(t.size)
        Q, lam, S = q["Q"], q["lam"], q["S"]
        G = 0.5 * (dH + np.swapaxes(dH, 1, 2))
        QtGQ = np.swapaxes(Q, 1, 2) @ G @ Q
        inside = (t[b["lam"]] >= cls.mu) & (t[b["lam"]] <= cls.L)
        out[b["lam"]] = np.diagonal(QtGQ, axis1=1, axis2=2).reshape(-1) * inside
        d = self.d
        if d > 1:
            X = 2 * (G @ Q) * lam[:, None, :]  # 2 G Q Lambda
            eye = np.eye(d)
            Y = np.linalg.solve(np.swapaxes(eye - S, 1, 2), X) @ np.swapaxes(eye + Q, 1, 2)
            iu = np.triu_indices(d, 1)
            out[b["skew"]] = (Y[:, iu[0], iu[1]] - Y[:, iu[1], iu[0]]).reshape(-1)
        if dxs is not None and fixes_optima(spec):
            raise AssumptionError(
                "the class fixes zeta2 or D2 (the optima are rescaled to meet them): no "
                "derivative through the optima"
            )
        if dxs is not None:
            inside = np.abs(t[b["e"]]) <= 1.0
            out[b["e"]] = cls.heterogeneity * dxs.reshape(-1) * inside
            out[b["z"]] = dxs.sum(axis=0)
        if dr is not None and "r" in b:
            lo, hi = cls.p_range
            inside = (t[b["r"]] >= lo) & (t[b["r"]] <= hi)
            out[b["r"]] = dr * inside
        return out


def _meet_class_bounds(A: np.ndarray, xs: np.ndarray, spec: BoundSpec) -> np.ndarray:
    """Client optima ``xs (N, d)`` moved so that the instance meets the class bounds with
    equality: (1/N) sum_i ||grad f_i(x*)||^2 = zeta2 (the spread about x* scaled, which keeps
    x* and scales every g_i* by the same factor) and ||x_0 - x*||^2 = ||x*||^2 = D2 (every
    optimum shifted by one vector, which shifts x* and keeps the g_i*), where the ``[class]``
    gives them (D2 also, at its default 1, for the quantities after R rounds). A draw with
    identical optima (zeta2 = 0) stays homogeneous."""
    cls = spec.instance_class
    H = np.einsum("nkd,nke->nde", A, A)
    x_star = np.linalg.solve(H.sum(axis=0), np.einsum("nde,ne->d", H, xs))
    if cls.zeta2 is not None:
        g = np.einsum("nde,ne->nd", H, x_star - xs)
        z2 = float(np.mean(np.sum(g * g, axis=1)))
        if z2 > 0:
            xs = x_star + np.sqrt(cls.zeta2 / z2) * (xs - x_star)
    if cls.D2 is not None or spec.quantity in AFTER_ROUNDS:
        norm = float(np.linalg.norm(x_star))
        u = x_star / norm if norm > 0 else np.eye(x_star.size)[0]
        xs = xs + (np.sqrt(spec.D2) * u - x_star)
    return xs


def fixes_optima(spec: BoundSpec) -> bool:
    """Whether draws rescale their optima to meet ``[class] zeta2`` or ``D2`` with equality
    (then zeta2 and D2 are the class's, whatever theta is)."""
    cls = spec.instance_class
    return cls.zeta2 is not None or cls.D2 is not None or spec.quantity in AFTER_ROUNDS


def draw_instance(spec: BoundSpec, rng: np.random.Generator, label: str) -> Draw:
    """A random class instance: spectra with mass at mu and L, rotations from aligned to
    scrambled, optima in the box z +- heterogeneity, participation weights in ``p_range``
    (one client at the low end a quarter of the time)."""
    cls = spec.instance_class
    Ns = [n for n in spec.clients]
    N = int(rng.choice(Ns))
    d = int(rng.choice(cls.dim))
    K = int(rng.choice(spec.local_steps))
    M = None
    if spec.clients_per_round:
        Ms = [m for m in spec.clients_per_round if m <= N]
        if not Ms:
            raise AssumptionError(
                f"no clients_per_round in {list(spec.clients_per_round)} is <= N = {N}"
            )
        M = int(rng.choice(Ms))
    lo, hi = np.log(cls.mu), np.log(cls.L)
    lam = np.exp(rng.uniform(lo, hi, N * d))
    u = rng.random(N * d)
    lam[u < 0.25] = cls.mu
    lam[u > 0.75] = cls.L
    nq = d * (d - 1) // 2
    scale = rng.choice([0.0, 0.3, 3.0])
    skew = scale * rng.standard_normal((N, nq))
    if rng.random() < 0.25:
        skew[:] = skew[0]  # every client rotated alike: commuting Hessians
    e = rng.uniform(-1.0, 1.0, N * d)
    z = rng.standard_normal(d)
    parts = [lam, skew.ravel(), e, z]
    if spec.p is None and spec.participation in ("weighted", "bernoulli"):
        plo, phi = cls.p_range
        r = rng.uniform(plo, phi, N)
        if rng.random() < 0.25:
            r[rng.integers(N)] = plo
        parts.append(r)
    return Draw(N, d, K, M, np.concatenate(parts), label)
