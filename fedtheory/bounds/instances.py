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
        return {"N": self.n_clients, "d": self.dim, "K": self.local_steps,
                "M": self.clients_per_round}  # fmt: skip

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
            p_file = path.with_suffix(".p.npy")
            pbuf = io.BytesIO()
            np.save(pbuf, np.asarray(self.p, dtype=np.float64))
            write_atomic(p_file, pbuf.getvalue())
        return {"problem_file": str(path), "probabilities_file": None if p_file is None
                else str(p_file)}  # fmt: skip

    def rate_command(self, spec: BoundSpec, eta: float, files: dict) -> str:
        """The ``fedtheory rate`` command line that recomputes the exact value on the file."""
        words = ["fedtheory", "rate", "--problem-file", files["problem_file"], "--algorithm",
                 spec.algorithm_source or spec.algorithm, "--participation",
                 spec.participation]  # fmt: skip
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
        words += ["--aggregation", spec.aggregation, "--local-steps", str(self.local_steps),
                  "--lr", repr(float(eta))]  # fmt: skip
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


def named_instance(spec: BoundSpec, *, problem: str | None = None,
                   problem_file: str | None = None) -> Instance:  # fmt: skip
    """The one instance a spec (or the command line) names: a built-in problem or a file.

    K is the spec's first ``local_steps``, M its first ``clients_per_round``; ``p`` is the
    spec's, or (weighted) the problem's own ``participation_p`` (003 Figure 4's).
    """
    name = problem if problem is not None or problem_file is not None else spec.problem
    path = problem_file if problem is not None or problem_file is not None else spec.problem_file
    prob = make_problem(name, path=path, exact=True)
    if spec.noise:
        prob.noise = float(spec.noise)
    p = np.asarray(spec.p, dtype=np.float64) if spec.p is not None else None
    if p is not None and p.size != prob.n_clients:
        raise AssumptionError(f"p has {p.size} entries, the problem {prob.n_clients} clients")
    M = spec.clients_per_round[0] if spec.clients_per_round else None
    if M is not None and not 1 <= M <= prob.n_clients:
        raise AssumptionError(f"clients_per_round {M} must lie in [1, N = {prob.n_clients}]")
    if p is None:  # the problem's own draw weights, where the model takes them (figure4's)
        built = build_participation(spec.participation, prob, **model_settings(spec, M, None))
        if built.probabilities_from == "problem":
            p = np.asarray(prob.participation_p, dtype=np.float64)
    if spec.participation == "weighted" and p is not None:
        p = p / p.sum()
    A = getattr(prob, "A", None)
    return Instance(
        None if A is None else np.asarray(A, dtype=np.float64),
        None if A is None else np.asarray(prob.b, dtype=np.float64),
        float(getattr(prob, "lam", 0.0)), spec.local_steps[0], M, p,
        label=str(name or path), problem_name=name, problem_path=path, _problem=prob,
    )  # fmt: skip


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

    def instance(self, spec: BoundSpec) -> Instance:
        """Build the instance: clip to the class, rotate, solve for b."""
        cls = spec.instance_class
        N, d = self.N, self.d
        t = np.asarray(self.theta, dtype=np.float64)
        nq = d * (d - 1) // 2
        i = 0
        lam = np.clip(t[i : i + N * d], cls.mu, cls.L).reshape(N, d)
        i += N * d
        skew = t[i : i + N * nq].reshape(N, nq)
        i += N * nq
        e = np.clip(t[i : i + N * d], -1.0, 1.0).reshape(N, d)
        i += N * d
        z = t[i : i + d]
        i += d
        iu = np.triu_indices(d, 1)
        S = np.zeros((N, d, d))
        S[:, iu[0], iu[1]] = skew
        S -= np.swapaxes(S, 1, 2)
        eye = np.eye(d)
        Q = np.linalg.solve(eye - S, eye + S)  # Cayley: orthogonal for skew S
        A = np.sqrt(lam)[:, :, None] * np.swapaxes(Q, 1, 2)  # A_i = diag(sqrt lam) Q_i^T
        xs = _meet_class_bounds(A, z + cls.heterogeneity * e, spec)
        b = np.einsum("nkd,nd->nk", A, xs)
        p = None
        if spec.p is not None:
            p = np.asarray(spec.p, dtype=np.float64)
        elif spec.participation in ("weighted", "bernoulli"):
            lo, hi = cls.p_range
            p = np.clip(t[i : i + N], lo, hi)
        if p is not None and spec.participation == "weighted":
            p = p / p.sum()
        return Instance(A, b, 0.0, self.K, self.M, p, self.label, noise=spec.noise)


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
