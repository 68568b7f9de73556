"""Exact per-round rates, fixed points and floors of affine federated algorithms on quadratics.

:func:`exact_rates` is the oracle: for a quadratic problem, an affine algorithm
(:data:`~fedtheory.analysis.exact.layouts.AFFINE_ALGORITHMS`) and a participation model it
returns, exactly (to rounding and a stated eigensolver tolerance),

* the **mean rate** rho(E[M_S]): E[z_r] - z_bar decays like its r-th power;
* the **mean-square rate** rho(P -> E[M_S P M_S^T]): E||z_r - z*||^2 decays like its r-th power
  (for full participation it equals the mean rate squared);
* the **fixed point** when every M_S shares one (FOCUS, SCAFFOLD: x*; FedAvg with full
  participation: Li et al. 2019a's point), else the **stationary mean**
  (I - E[M_S])^{-1} E[c_S];
* the **stationary mean-square error** lim_r E||x_r - x*||^2 (FedAvg's floor under random
  participation, 003 Theorem 2; SG-FOCUS's noise floor, 003 Theorems 3-5), split into
  ||E x - x*||^2 and tr Cov(x).

Rates are those of the states reached from the initialization (conserved directions removed,
:mod:`fedtheory.analysis.exact.system`). :func:`largest_stable_lr` bisects the step size on a
rate, :func:`exact_mse_curve` gives the exact transient E||x_r - x*||^2, and
:func:`problem_constants` the constants a reader needs to evaluate a theorem's step-size
condition (none of the three papers states a rate that can be evaluated as a number:
docs/stated-bounds.md; :func:`stated_rate` says so per algorithm, and :mod:`fedtheory.bounds`
checks a bound a reader types in against these rates).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from threadpoolctl import threadpool_limits

from fedtheory.algorithms.registry import info
from fedtheory.analysis.exact.extract import (
    RoundModel,
    build_algorithm,
    extract_round_model,
    quadratic_data,
)
from fedtheory.analysis.exact.law import MarkovLaw, participation_law
from fedtheory.analysis.exact.system import (
    DENSE_MAX,
    AffineSystem,
    MarkovSystem,
    solve_fixed_point,
    spectral_radius,
)
from fedtheory.errors import AssumptionError, FedTheoryError
from fedtheory.io import renamed
from fedtheory.participation.models import Full
from fedtheory.validation import check_duration, check_int, check_memory, check_positive

#: Relative size of the one-round fluctuation below which the stationary mean is a fixed point
#: common to every M_S.
FIXED_POINT_RTOL = 1e-9
#: The identity's weight (both of unit norm) added to a warm start's eigenvector.
WARM_IDENTITY = 0.1


def stated_rate(algorithm: str) -> str:
    """What the seed papers state about ``algorithm``'s rate (its registration's
    ``stated_rate``)."""
    return info(algorithm).stated_rate


@dataclass(frozen=True)
class ExactRates:
    """Exact rates and limits of one (problem, algorithm, participation, step size) setting.

    Attributes
    ----------
    algorithm : str
    participation : dict
        The participation model's description (with the aggregation rule).
    lr, local_steps, global_lr, noise : float, int, float, float
        The step size eta, K, the server step and the gradient-noise sigma actually used.
    state_dim : int
        Dimension of the reachable coordinates (``coordinates`` says which they are).
    coordinates : str
    conserved : int
        Conserved functionals removed (e.g. SCAFFOLD's c - mean_i c_i: d of them).
    mean_rate : float
        rho(E[M_S]).
    mean_square_rate : float
        rho of P -> E[M_S P M_S^T] on the reachable coordinates.
    fixed_point : ndarray (d,) or None
        x part of the fixed point shared by every M_S (None when there is none, or with noise).
    stationary_mean : ndarray (d,) or None
        lim E[x_r] (None when the mean rate is >= 1).
    stationary_mse : float or None
        lim E||x_r - x*||^2 (None when the mean-square rate is >= 1).
    stationary_bias2, stationary_variance : float or None
        ||lim E x_r - x*||^2 and tr lim Cov(x_r) (they sum to ``stationary_mse``).
    x_star : ndarray (d,)
        The minimizer of (1/N) sum_i f_i.
    exact : bool
        A common fixed point whose x part is x* (to 1e-8 relative): exact convergence.
    method : str
        One line: how the numbers were obtained.
    methods : dict
        Per quantity, how it was obtained (law, eigensolver, linear solver, verification).
    verification : float
        Largest relative residual of the round model against the algorithm's own round.
    stated : str
        What the papers state about this rate (:func:`stated_rate`).
    timings : dict
        Seconds per stage.
    """

    algorithm: str
    participation: dict
    lr: float
    local_steps: int
    global_lr: float
    noise: float
    state_dim: int
    coordinates: str
    conserved: int
    mean_rate: float
    mean_square_rate: float
    fixed_point: np.ndarray | None
    stationary_mean: np.ndarray | None
    stationary_mse: float | None
    stationary_bias2: float | None
    stationary_variance: float | None
    x_star: np.ndarray
    exact: bool
    method: str
    methods: dict = field(default_factory=dict)
    verification: float = float("nan")
    stated: str = ""
    timings: dict = field(default_factory=dict)

    @property
    def stationary_mse_relative(self) -> float | None:
        """lim E||x_r - x*||^2 / ||x*||^2."""
        if self.stationary_mse is None:
            return None
        return self.stationary_mse / max(float(self.x_star @ self.x_star), 1e-300)

    as_dict = renamed("to_dict")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (arrays as lists) with every field and the relative floor."""
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["stationary_mse_relative"] = self.stationary_mse_relative
        for k in ("fixed_point", "stationary_mean", "x_star"):
            if out[k] is not None:
                out[k] = np.asarray(out[k]).tolist()
        return out


@dataclass
class _Analysis:
    """An analysed setting: the result, the moment system and the dominant eigenvector."""

    result: ExactRates
    system: Any
    model: RoundModel
    ms_vector: np.ndarray | None = None
    mu: np.ndarray | None = None
    extras: dict = field(default_factory=dict)


@dataclass
class WarmStart:
    """A start vector carried from one mean-square eigen-solve to the next.

    The dominant eigenvector of a nearby operator (the previous step of a bisection, the
    previous point of a curve, the previous instance of a bound search's refinement) is a
    better start than the default (v v^T, v the dominant eigenvector of E[M_S]).
    ``exact_rates(..., warm_start=ws)`` starts its mean-square eigensolver from
    ``ws.vector`` when it has the operator's size, then stores the eigenvector it found there.

    Attributes
    ----------
    vector : ndarray or None
        The last eigenvector (packed upper triangle of a symmetric matrix, or the flattened
        matrix for operators solved densely), None before the first solve.
    applications : int
        Operator applications of every solve that used this holder (a running total).
    solves : int
        Mean-square eigen-solves that used it.
    """

    vector: np.ndarray | None = None
    applications: int = 0
    solves: int = 0

    def start(self, size: int) -> np.ndarray | None:
        """The stored vector when it fits an operator with ``size`` unknowns, else None."""
        v = self.vector
        return v if v is not None and v.shape == (size,) else None

    def keep(self, vector: np.ndarray | None, applications: int) -> None:
        """Store the eigenvector of a finished solve (None: keep the previous one)."""
        if vector is not None:
            self.vector = np.asarray(vector, dtype=np.float64)
        self.applications += int(applications)
        self.solves += 1


def _participation(participation: Any, n: int) -> Any:
    if participation is None or participation == "full":
        return Full(n)
    if isinstance(participation, str):
        raise AssumptionError(
            f"pass a participation model (fedtheory.participation.make_participation), "
            f"not the name {participation!r}"
        )
    if int(participation.n_clients) != n:
        raise AssumptionError(
            f"the participation model has {participation.n_clients} clients, the problem {n}"
        )
    return participation


_ANALYSE_KEYS = (
    "lr",
    "local_steps",
    "rule",
    "global_lr",
    "prox_mu",
    "options",
    "noise",
    "x0",
    "mean_square",
    "tol",
    "verify",
    "stationary",
    "warm_start",
    "progress",
    "eigensolver",
)


def _check_keywords(kw: dict, allowed: tuple[str, ...]) -> None:
    bad = sorted(set(kw) - set(allowed))
    if bad:
        raise TypeError(
            f"unknown keyword argument(s) {', '.join(bad)}; valid: {', '.join(allowed)}"
        )


def one_blas_thread(func: Any) -> Any:
    """Run ``func`` with BLAS limited to one thread (threadpoolctl), whatever the environment.

    The oracle's work is many small products and eigensolver steps: on a shared 2-core machine
    two BLAS threads contend and ran several times slower (measured: a 225 x 225 eigenproblem
    took 0.13-1.7 s with two threads under load and 19 ms with one; 003 Figure 4's uniform
    mean-square rate took 111 s against 46 s), and a machine with more cores gains little on
    these sizes. One thread is never the slow choice here; entering the limit costs ~1 ms.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kw: Any) -> Any:
        with threadpool_limits(limits=1, user_api="blas"):
            return func(*args, **kw)

    return wrapper


@one_blas_thread
def exact_rates(problem: Any, algorithm: Any, participation: Any = None, **kw: Any) -> ExactRates:
    """Exact per-round rates and limits of an affine algorithm on a quadratic problem.

    Parameters
    ----------
    problem : QuadraticProblem
        f_i(x) = 1/2 x^T H_i x - h_i^T x (least squares and ridge included), exact or with
        additive gradient noise ``problem.noise``.
    algorithm : str or Algorithm
        A registry name of :data:`~fedtheory.analysis.exact.layouts.AFFINE_ALGORITHMS`
        (``fedavg``, ``fedprox``, ``scaffold``, ``focus``, ``sg-focus``, ``scaffnew``, ``mifa``,
        ``feddyn``) or a built algorithm.
    participation : ParticipationModel, optional
        Full (default), Uniform, Weighted (with or without replacement), Bernoulli (its
        empty-round policy included), PerCluster, or Markov (N <= 10, chain-augmented).
    lr : float
        Step size eta (local; FOCUS's single eta). Required with an algorithm name.
    local_steps : int
        K. Required with an algorithm name.
    rule : {"mean", "weighted", "unbiased"}
        Aggregation rule of the weights w (default "mean").
    global_lr, prox_mu : float, optional
        Server step (default 1) and FedProx's mu.
    options : dict, optional
        Algorithm options (e.g. ``{"server_momentum": 0.9}``, ``{"variant": "focus-notebook"}``).
    noise : float, optional
        Gradient-noise sigma (default ``problem.noise``); acts on algorithms with stochastic
        gradients (``sg-focus``; FedAvg-type algorithms forward the simulator's stream too).
    x0 : array (d,), optional
        Initial server model (default 0): fixes the values of conserved quantities.
    mean_square : {"auto", "operator", "skip"}
        "auto" uses rho(M)^2 when the draw is deterministic (full participation); "skip"
        leaves the mean-square rate (NaN) and the stationary mean-square error (None) out where
        they need the mean-square operator (the mean rate and the stationary mean cost a dense
        eigen-decomposition and a solve; the operator's eigenvalue can take a minute); "operator"
        always computes the spectral radius of the mean-square operator.
    tol : float
        Eigensolver tolerance of the mean-square rate on large operators (ARPACK's ``tol``, or
        the relative residual ||T v - rho v|| / ||rho v|| of the Krylov-Schur eigenpair; default
        1e-10). The rate's error can be about a hundred times the residual on a cluster of a
        far-from-normal operator (5e-8 at a Krylov-Schur residual of 6e-10 on the 003 Figure 4
        problem); the method string reports the residual reached and how far the eigenvector is
        from positive semidefinite.
    verify : bool
        Check the extracted round model against the algorithm's own round (default True).
    stationary : bool
        Compute the stationary mean and mean-square error (default True).
    warm_start : WarmStart, optional
        Start the mean-square eigensolver from ``warm_start.vector`` (a nearby operator's
        eigenvector) and store the new eigenvector there.
    eigensolver : {"arpack", "krylov-schur"}
        The mean-square rate's eigensolver on large operators (default "arpack": its residual
        fixes the 003 Figure 4 rates to 1e-10; "krylov-schur" costs less outside the operator
        and reports a residual at every restart, but stops at a residual that leaves those
        rates 5e-8 to 1.4e-7 off; :func:`~fedtheory.analysis.exact.system.spectral_radius`).
    progress : callable, optional
        ``progress(stage, applications, value, residual)`` while a matrix-free solve runs:
        after every application of the mean-square operator (``stage`` "mean-square rate";
        Krylov-Schur: ``value`` the current estimate of the rate and ``residual`` its residual
        after every cycle; ARPACK: ``value`` None and ``residual`` nan, as ARPACK reports
        nothing before it converges) and every GMRES iteration of the
        stationary covariance (``stage`` "stationary mse", ``value`` None).

    Returns
    -------
    ExactRates

    Raises
    ------
    NotAffineError
        The algorithm's round is not affine (adaptive server steps, FedAU), or fails the
        verification.
    NotQuadraticError
        The problem is not quadratic (or uses minibatch gradients).
    FedTheoryError
        A participation model without an exact law (e.g. Bernoulli with N > 20).
    TypeError
        Unknown keyword arguments.

    Examples
    --------
    >>> from fedtheory.problems import random_quadratic
    >>> from fedtheory.participation import make_participation
    >>> prob = random_quadratic(4, 3, seed=0)
    >>> res = exact_rates(prob, "focus", make_participation("uniform", 4, 2), lr=0.05,
    ...                   local_steps=2)
    >>> bool(res.exact), res.state_dim
    (True, 15)
    """
    _check_keywords(kw, _ANALYSE_KEYS)
    return _analyse(problem, algorithm, participation, **kw).result


def _analyse(
    problem: Any,
    algorithm: Any,
    participation: Any = None,
    *,
    mean_square: str = "auto",
    tol: float = 1e-10,
    stationary: bool = True,
    warm_start: WarmStart | None = None,
    progress: Any = None,
    eigensolver: str = "arpack",
    **kw: Any,
) -> _Analysis:
    if mean_square not in ("auto", "operator", "skip"):
        raise AssumptionError(
            f"mean_square must be 'auto', 'operator' or 'skip', got {mean_square!r}"
        )
    tol = check_positive("the eigensolver tolerance", tol)
    if warm_start is not None and not isinstance(warm_start, WarmStart):
        raise AssumptionError(
            f"warm_start must be a fedtheory.analysis.exact.WarmStart, got "
            f"{type(warm_start).__name__}"
        )
    if progress is not None and not callable(progress):
        raise AssumptionError("progress must be a callable (stage, applications, value, residual)")
    t0 = time.perf_counter()
    st = _system(problem, algorithm, participation, **kw)
    timings = {"round model and law": time.perf_counter() - t0}
    common = {
        "alg": st.alg,
        "model": st.model,
        "law": st.law,
        "sigma": st.sigma,
        "x_star": st.x_star,
        "tol": tol,
        "stationary": stationary,
        "mean_square": mean_square,
        "warm": warm_start,
        "progress": progress,
        "solver": eigensolver,
        "timings": timings,
    }
    if isinstance(st.system, MarkovSystem):
        return _markov(st.system, **common)
    return _memoryless(st.system, **common)


def _result(alg, model, law, system, sigma, x_star, **fields) -> ExactRates:
    methods = fields.pop("methods")
    methods["round model"] = (
        "blocks of the affine round read off the algorithm's own round on basis states "
        f"(coordinates {model.layout.coordinates}); verified against round at random states "
        f"to {model.verification:.1e} relative"
    )
    methods["participation law"] = law.method
    line = (
        f"exact: affine round read off {alg.name}'s own round (verified to "
        f"{model.verification:.0e}), participation law by {law.method}; mean rate by "
        f"{methods['mean rate']}; mean-square rate by {methods['mean-square rate']}"
    )
    return ExactRates(
        algorithm=alg.name,
        participation=law.description,
        lr=float(alg.config.lr),
        local_steps=int(alg.config.local_steps),
        global_lr=float(alg.config.global_lr),
        noise=sigma if model.noise is not None else 0.0,
        coordinates=model.layout.coordinates,
        x_star=x_star,
        method=line,
        methods=methods,
        verification=model.verification,
        stated=stated_rate(alg.name),
        **fields,
    )


def _fixed_point_tol(A: np.ndarray) -> float:
    """Relative size of the one-round fluctuation at the computed stationary mean below which
    it is a common fixed point: FIXED_POINT_RTOL, or the error that solving with I - E[M_S]
    (condition number kappa) may leave, 64 eps kappa, when that is larger."""
    with np.errstate(all="ignore"):
        cond = float(np.linalg.cond(A, 1)) if A.size else 1.0
    if not np.isfinite(cond):
        return FIXED_POINT_RTOL
    return max(FIXED_POINT_RTOL, 64 * np.finfo(float).eps * cond)


def _is_x_star(x: np.ndarray, x_star: np.ndarray) -> bool:
    """A fixed point is x* when it lies within 1e-8 relative of it (exact convergence)."""
    return bool(np.linalg.norm(x - x_star) <= 1e-8 * max(np.linalg.norm(x_star), 1e-300))


def _mse_parts(Xr, xb, C, mean_x, x_star) -> tuple[float, float, float]:
    # tr(C_x) of a covariance; rounding may leave it a few ulps below zero: reported as 0.
    var = max(float(np.trace(Xr @ C @ Xr.T)), 0.0) if C is not None else 0.0
    bias2 = float(np.sum((mean_x - x_star) ** 2))
    return var + bias2, bias2, var


def _stage(progress: Any, stage: str) -> Any:
    """The solvers' callback ``(applications, value, residual)`` for ``progress`` at ``stage``."""
    if progress is None:
        return None
    return lambda apps, value, residual: progress(stage, apps, value, residual)


def _memoryless(
    s: AffineSystem,
    *,
    alg,
    model,
    law,
    sigma,
    x_star,
    tol,
    stationary,
    mean_square,
    warm,
    progress,
    solver,
    timings,
) -> _Analysis:
    methods: dict[str, str] = {}
    t0 = time.perf_counter()
    Mbar = s.mean_matrix()
    nr = s.n_r
    lam = np.linalg.eigvals(Mbar)  # the eigenvectors only where a start vector needs one
    top = int(np.argmax(np.abs(lam)))
    rho_mean = float(np.abs(lam[top]))
    methods["mean rate"] = f"dense eigenvalues ({nr} x {nr}) of R E[M_S] E"
    timings["mean rate"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    vec = None
    dense_T = None
    if law.deterministic and mean_square != "operator":
        rho_ms = rho_mean**2
        methods["mean-square rate"] = (
            "rho(M)^2: the draw is deterministic (full participation), and rho(M kron M) = rho(M)^2"
        )
    elif mean_square == "skip":
        rho_ms = float("nan")
        methods["mean-square rate"] = "not computed (mean_square='skip')"
    else:
        dim = nr * nr
        if dim <= DENSE_MAX:
            dense_T = s.ms_dense()
            apply, size = s.ms_vec, dim
        else:  # symmetric matrices, packed: half the unknowns
            apply, size = s.ms_vech, nr * (nr + 1) // 2
        pack = (lambda A: A.reshape(-1)) if dense_T is not None else s.pack
        eye = pack(np.eye(nr)) / np.sqrt(nr)  # unit Frobenius norm
        v0 = warm.start(size) if warm is not None else None
        if v0 is None:
            # v v^H, v the dominant eigenvector of E[M_S] (PSD, like the Perron eigenvector),
            # plus the identity: a positive definite start has a component along the Perron
            # vector whatever the spectrum (v v^H alone can be an exact eigenvector of another
            # eigenvalue: FOCUS's near-1 mode on Figure 4 at eta = 3e-3, uniform 4 of 16)
            lam, vecs = np.linalg.eig(Mbar)
            v = vecs[:, int(np.argmax(np.abs(lam)))]
            V0 = np.real(np.outer(v, v.conj()))
            v0 = pack(V0 / max(np.linalg.norm(V0), 1e-300)) + eye
        else:  # the previous eigenvector (its sign: positive trace), a little of the identity
            v0 = v0 / max(float(np.linalg.norm(v0)), 1e-300)
            v0 = (v0 if v0 @ eye >= 0 else -v0) + WARM_IDENTITY * eye
        rho_ms, vec, how, apps = spectral_radius(
            apply,
            size,
            dense=dense_T,
            v0=v0,
            tol=tol,
            positive=True,
            callback=_stage(progress, "mean-square rate"),
            fallback=eye,
            solver=solver,
        )
        if warm is not None:
            warm.keep(vec, apps)
        how += " of P -> E[M_S P M_S^T] (first and second moments of the participation "
        how += "coefficients)"
        if vec is not None:
            how += "; " + _perron_check(
                vec.reshape(nr, nr) if dense_T is not None else s.unpack(vec)
            )
        methods["mean-square rate"] = how
    timings["mean-square rate"] = time.perf_counter() - t0
    fields: dict[str, Any] = {
        "state_dim": nr,
        "conserved": int(s.red.tied.size),
        "mean_rate": rho_mean,
        "mean_square_rate": rho_ms,
        "fixed_point": None,
        "stationary_mean": None,
        "stationary_mse": None,
        "stationary_bias2": None,
        "stationary_variance": None,
        "exact": False,
    }
    mu = None
    if stationary and rho_mean < 1:
        t0 = time.perf_counter()
        mu = np.linalg.solve(np.eye(nr) - Mbar, s.mean_constant())
        mu_full = s.full_state(mu)
        Xr, xb = s.readout()
        mean_x = Xr @ mu + xb
        fields["stationary_mean"] = mean_x
        methods["stationary mean"] = "dense solve of (I - E[M_S]) mu = E[c_S]"
        phi = s.fluctuation(mu_full)
        Phi = s.local_to_reduced(phi)
        B = Phi.T @ s.cov_factor  # e_S = B xi_S with Cov(xi_S) = I
        cov_e = B @ B.T
        scale = np.abs(s.beta).max() * np.abs(mu_full).max() + np.abs(s.gamma).max()
        size = float(np.abs(B).max(initial=0.0))
        nz = s.noise_cov()
        common = size <= _fixed_point_tol(np.eye(nr) - Mbar) * scale and not np.any(nz)
        if common:
            fields["fixed_point"] = mean_x
            fields["exact"] = _is_x_star(mean_x, x_star)
        timings["stationary mean"] = time.perf_counter() - t0
        if rho_ms < 1:
            t0 = time.perf_counter()
            if common:
                C = None
                methods["stationary mse"] = (
                    "||x_fp - x*||^2: every M_S shares the fixed point (no fluctuation, no noise)"
                )
            else:
                Q = 0.5 * (cov_e + cov_e.T) + nz
                sol, how = solve_fixed_point(
                    s.ms_vec,
                    Q.reshape(-1),
                    dense=dense_T if dense_T is not None else _maybe_dense(s),
                    callback=_stage(progress, "stationary mse"),
                )
                C = sol.reshape(nr, nr)
                methods["stationary mse"] = (
                    f"stationary covariance C = E[M_S C M_S^T] + Cov(M_S mu + c_S) + noise, by "
                    f"{how}; mse = tr(C_x) + ||E x - x*||^2"
                )
            mse, bias2, var = _mse_parts(Xr, xb, C, mean_x, x_star)
            fields.update(stationary_mse=mse, stationary_bias2=bias2, stationary_variance=var)
            timings["stationary mse"] = time.perf_counter() - t0
    res = _result(alg, model, law, s, sigma, x_star, methods=methods, timings=timings, **fields)
    return _Analysis(res, s, model, ms_vector=vec, mu=mu)


def _perron_check(P: np.ndarray) -> str:
    """How far the eigenvector P (a symmetric matrix) is from positive semidefinite, in words.

    The spectral radius of a positive map is an eigenvalue with a positive semidefinite
    eigenvector (Krein-Rutman); the other eigenvectors of a cluster at the top are indefinite
    (biorthogonal to the positive definite left one). The smallest eigenvalue of P relative to
    its largest tells which one the solver found."""
    lam = np.linalg.eigvalsh(0.5 * (P + P.T))
    if abs(lam[0]) > abs(lam[-1]):
        lam = -lam[::-1]
    ratio = lam[0] / max(lam[-1], 1e-300)
    return f"eigenvector positive semidefinite to {max(-ratio, 0.0):.0e} of its norm"


def _maybe_dense(s: AffineSystem) -> np.ndarray | None:
    return s.ms_dense() if s.n_r * s.n_r <= DENSE_MAX else None


def _markov(
    s: MarkovSystem,
    *,
    alg,
    model,
    law,
    sigma,
    x_star,
    tol,
    stationary,
    mean_square,
    warm,
    progress,
    solver,
    timings,
) -> _Analysis:
    methods: dict[str, str] = {}
    Q, nr = s.Q, s.n_r
    t0 = time.perf_counter()
    dim1 = Q * nr
    A = s.mean_matrix() if dim1 <= DENSE_MAX else None
    rho_mean, _, how, _ = spectral_radius(
        lambda v: s.mean_apply(v.reshape(Q, nr)).reshape(-1), dim1, dense=A, tol=tol, solver=solver
    )
    methods["mean rate"] = how + " of the chain-augmented first-moment map"
    timings["mean rate"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    dim2 = Q * nr * nr
    dense_T = None
    if dim2 <= DENSE_MAX:
        dense_T = s.ms_dense()
    v0 = warm.start(dim2) if warm is not None else None
    if v0 is None:
        v0 = np.broadcast_to(np.eye(nr), (Q, nr, nr)).reshape(-1)
    rho_ms, vec, how, apps = spectral_radius(
        s.ms_vec,
        dim2,
        dense=dense_T,
        v0=v0,
        tol=tol,
        positive=True,
        callback=_stage(progress, "mean-square rate"),
        solver=solver,
        fallback=np.broadcast_to(np.eye(nr), (Q, nr, nr)).reshape(-1),
    )
    if warm is not None:
        warm.keep(vec, apps)
    methods["mean-square rate"] = how + " of the chain-augmented second-moment map"
    timings["mean-square rate"] = time.perf_counter() - t0
    fields: dict[str, Any] = {
        "state_dim": nr,
        "conserved": int(s.sys.red.tied.size),
        "mean_rate": rho_mean,
        "mean_square_rate": rho_ms,
        "fixed_point": None,
        "stationary_mean": None,
        "stationary_mse": None,
        "stationary_bias2": None,
        "stationary_variance": None,
        "exact": False,
    }
    if stationary and rho_mean < 1:
        t0 = time.perf_counter()
        P, pi = law.P, law.pi
        b = P.T @ (pi[:, None] * s.c)
        mu_flat, _ = solve_fixed_point(
            lambda v: s.mean_apply(v.reshape(Q, nr)).reshape(-1), b.reshape(-1), dense=A
        )
        mu = mu_flat.reshape(Q, nr)
        mbar = mu.sum(axis=0)
        Xr, xb = s.sys.readout()
        mean_x = Xr @ mbar + xb
        fields["stationary_mean"] = mean_x
        methods["stationary mean"] = "solve of the chain-augmented first-moment equation"
        e = (s.M @ mbar) + s.c - mbar  # (Q, n_r)
        nu = mu - pi[:, None] * mbar
        live = pi > 0
        scale = np.abs(s.M).max() * np.abs(mbar).max() + np.abs(s.c).max()
        tol_fp = _fixed_point_tol(np.eye(dim1) - A) if A is not None else FIXED_POINT_RTOL
        common = np.abs(e[live]).max() <= tol_fp * scale
        common = common and not np.any(s.noise)
        if common:
            fields["fixed_point"] = mean_x
            fields["exact"] = _is_x_star(mean_x, x_star)
        timings["stationary mean"] = time.perf_counter() - t0
        if rho_ms < 1:
            t0 = time.perf_counter()
            if common:
                C = None
                methods["stationary mse"] = "||x_fp - x*||^2: a fixed point shared by every M_q"
            else:
                Mnu = (s.M @ nu[..., None])[..., 0]
                term = Mnu[:, :, None] * e[:, None, :]
                term = term + np.swapaxes(term, 1, 2)
                term += pi[:, None, None] * (e[:, :, None] * e[:, None, :] + s.noise)
                K = np.einsum("qp,qab->pab", P, term)
                sol, how = solve_fixed_point(
                    s.ms_vec,
                    K.reshape(-1),
                    dense=dense_T,
                    callback=_stage(progress, "stationary mse"),
                )
                C = sol.reshape(Q, nr, nr).sum(axis=0)
                methods["stationary mse"] = f"chain-augmented stationary second moments by {how}"
            mse, bias2, var = _mse_parts(Xr, xb, C, mean_x, x_star)
            fields.update(stationary_mse=mse, stationary_bias2=bias2, stationary_variance=var)
            timings["stationary mse"] = time.perf_counter() - t0
    res = _result(alg, model, law, s, sigma, x_star, methods=methods, timings=timings, **fields)
    return _Analysis(res, s, model, ms_vector=vec)


class _Setting(NamedTuple):
    system: AffineSystem | MarkovSystem
    model: RoundModel
    alg: Any
    law: Any
    x_star: np.ndarray
    sigma: float


def _system(
    problem: Any,
    algorithm: Any,
    participation: Any = None,
    *,
    lr: float | None = None,
    local_steps: int | None = None,
    rule: str = "mean",
    global_lr: float | None = None,
    prox_mu: float | None = None,
    options: dict | None = None,
    noise: float | None = None,
    x0: Any = None,
    verify: bool = True,
) -> _Setting:
    """The round model, participation law and moment system of a setting (no spectra)."""
    H, _h = quadratic_data(problem)
    alg = build_algorithm(
        algorithm,
        problem,
        lr=lr,
        local_steps=local_steps,
        global_lr=global_lr,
        prox_mu=prox_mu,
        options=options,
    )
    part = _participation(participation, int(H.shape[0]))
    sigma = float(getattr(problem, "noise", 0.0)) if noise is None else noise
    sigma = check_positive("the gradient noise sigma", sigma, allow_zero=True)
    # the noise response is read only when a noise will act on it (sigma > 0)
    model = extract_round_model(problem, alg, x0=x0, verify=verify, noise=sigma > 0)
    law = participation_law(part, rule)
    if problem.x_star is None:
        raise AssumptionError("exact floors need x*, but the mean Hessian is singular")
    x_star = np.asarray(problem.x_star, dtype=np.float64)
    system = (
        MarkovSystem(model, law, sigma)
        if isinstance(law, MarkovLaw)
        else AffineSystem(model, law, sigma)
    )
    return _Setting(system, model, alg, law, x_star, sigma)


#: Seconds one round of the exact transient (:func:`exact_mse_curve`) takes at the least: one
#: application of the mean-square operator. Measured 68.5 us per round with FedAvg on 2 clients
#: of dimension 1 (R = 20000, ``time.process_time`` on the 2-core machine), FOCUS 84 us; a
#: third of the least, so that an estimate made with it is never longer than the work.
ROUND_SECONDS = 2e-5


@one_blas_thread
def exact_mse_curve(
    problem: Any,
    algorithm: Any,
    participation: Any = None,
    *,
    rounds: int,
    weight: np.ndarray | None = None,
    **kw: Any,
) -> np.ndarray:
    """The exact transient E||x_r - x*||^2, r = 0..rounds, from the algorithm's initialization.

    With ``weight`` W (d, d, symmetric), E (x_r - x*)^T W (x_r - x*) instead: on a quadratic
    f(x) - f* with W = H_f / 2 and ||grad f(x)||^2 with W = H_f^2 (H_f the mean Hessian).

    Propagates the exact first and second moments of the reduced state (one application of the
    mean-square operator per round): with eps_r = zeta_r - mu (mu the stationary mean),
    E[eps eps^T] <- T(E[eps eps^T]) + E[M_S m e_S^T] + E[e_S m^T M_S^T] + Cov(e_S) + noise,
    m <- E[M_S] m. Memoryless participation only. Keywords as :func:`exact_rates`.

    Raises
    ------
    FedTheoryError
        For Markov participation, or when I - E[M_S] is singular; ``SizeError`` for more rounds
        than memory or the time limit allow (:data:`ROUND_SECONDS` per round at the least).
    """
    rounds = check_int("the number of rounds", rounds, minimum=0)
    what = f"the exact transient of {rounds} rounds"
    check_memory(what, 8.0 * (rounds + 1), hint="ask for fewer rounds")
    check_duration(what, rounds * ROUND_SECONDS, hint="ask for fewer rounds")
    _check_keywords(kw, _ANALYSE_KEYS)
    for key in ("mean_square", "tol", "stationary", "warm_start", "progress", "eigensolver"):
        kw.pop(key, None)
    st = _system(problem, algorithm, participation, **kw)
    s, model, x_star = st.system, st.model, st.x_star
    if not isinstance(s, AffineSystem):
        raise FedTheoryError("exact_mse_curve needs a memoryless participation model")
    nr = s.n_r
    Mbar = s.mean_matrix()
    try:
        mu = np.linalg.solve(np.eye(nr) - Mbar, s.mean_constant())
    except np.linalg.LinAlgError:
        raise FedTheoryError("I - E[M_S] is singular: no stationary mean to centre on") from None
    mu_full = s.full_state(mu)
    Phi = s.local_to_reduced(s.fluctuation(mu_full))
    B = Phi.T @ s.cov_factor
    Q = B @ B.T + s.noise_cov()
    Xr, xb = s.readout()
    off = Xr @ mu + xb - x_star
    eps = s.reduce_state(model.z0) - mu
    S = np.outer(eps, eps)
    m = eps.copy()
    W = np.eye(Xr.shape[0]) if weight is None else np.asarray(weight, dtype=np.float64)
    if W.shape != (Xr.shape[0],) * 2:
        raise FedTheoryError(f"weight must be a ({Xr.shape[0]}, {Xr.shape[0]}) matrix")
    out = np.empty(rounds + 1)
    for r in range(rounds + 1):  # the rounds are sequential
        xm = Xr @ m
        out[r] = float(np.trace(W @ Xr @ S @ Xr.T) + 2 * off @ W @ xm + off @ W @ off)
        if r == rounds:
            break
        mf = s.embed_rows(m[:, None])[:, 0]
        loc = np.stack([mf[s.model.local_index(j)] for j in range(s.N)])
        Gm = s.local_to_reduced(np.einsum("kab,kb->ka", s.beta, loc[s.jk]))
        cross = Gm.T @ s.cov @ Phi
        S = s.ms_apply(S) + cross + cross.T + Q
        m = Mbar @ m
    return out


@dataclass(frozen=True)
class StableStep:
    """The largest stable step size found by bisection.

    Attributes
    ----------
    lr : float
        The largest step size found stable (the bracket's lower end).
    lo, hi : float
        Bracket: rate(lo) < 1 <= rate(hi), hi / lo - 1 <= rtol.
    rate_lo, rate_hi : float
        The rates at the bracket's ends (``rate_hi`` is nan when ``hi`` is known unstable from
        the mean rate alone: rho_ms >= rho_mean^2 >= 1 there).
    criterion : {"mean_square", "mean"}
    evaluations : int
        Mean-square rates computed (mean rates are cheap and not counted).
    seconds : float
    evaluated : tuple of (lr, rate) pairs
        Every rate of the criterion computed on the way, in order.
    applications : int
        Applications of the mean-square operator by the eigen-solves (0 for dense ones).
    """

    lr: float
    lo: float
    hi: float
    rate_lo: float
    rate_hi: float
    criterion: str
    evaluations: int
    seconds: float
    evaluated: tuple = ()
    applications: int = 0

    as_dict = renamed("to_dict")

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _bisect(rate: Any, lr: float, rtol: float, hi_known: float | None = None) -> tuple:
    """Bracket [lo, hi] with rate(lo) < 1 <= rate(hi) from ``lr`` (doubling/halving, or
    ``hi_known`` as a known unstable end), then geometric bisection to hi / lo <= 1 + rtol."""
    r0 = rate(lr)
    if r0 < 1:
        lo, rlo = lr, r0
        if hi_known is not None and hi_known > lr:
            hi, rhi = hi_known, float("nan")
        else:
            hi = 2 * lr
            rhi = rate(hi)
            while rhi < 1:
                lo, rlo, hi = hi, rhi, 2 * hi
                rhi = rate(hi)
    else:
        hi, rhi = lr, r0
        lo = lr / 2
        rlo = rate(lo)
        while rlo >= 1:
            hi, rhi, lo = lo, rlo, lo / 2
            rlo = rate(lo)
    while hi / lo - 1 > rtol:
        mid = float(np.sqrt(lo * hi))
        rm = rate(mid)
        if rm < 1:
            lo, rlo = mid, rm
        else:
            hi, rhi = mid, rm
    return lo, hi, rlo, rhi


@one_blas_thread
def largest_stable_lr(
    problem: Any,
    algorithm: str,
    participation: Any = None,
    *,
    lr_start: float,
    criterion: str = "mean_square",
    rtol: float = 1e-3,
    max_evals: int = 60,
    **kw: Any,
) -> StableStep:
    """The largest step size with rate < 1, by doubling/halving from ``lr_start`` and bisection.

    ``criterion="mean"``: the mean rate rho(E[M_S]) (dense eigenvalues, cheap).
    ``criterion="mean_square"``: the mean-square rate (E||z_r - z*||^2 stays bounded). Since
    rho_ms >= rho_mean^2 (Jensen for the positive map P -> E[M_S P M_S^T]), the mean boundary
    is found first and is a known unstable end of the mean-square bracket; the mean-square
    rate is then bisected between ``lr_start`` (halved until stable) and it. The boundary found
    is the one reached from ``lr_start``: a stability region that is not an interval is not
    explored beyond it. Other keywords as :func:`exact_rates` (``lr`` is the searched
    variable; ``tol`` is the eigensolver tolerance of each mean-square rate). Each mean-square
    eigen-solve starts from the previous one's eigenvector (a :class:`WarmStart`, this call's
    own unless ``warm_start`` passes one in: a curve of bisections can share one).

    Raises
    ------
    FedTheoryError
        When no bracket is found within ``max_evals`` mean-square evaluations.
    """
    if criterion not in ("mean_square", "mean"):
        raise AssumptionError(f"criterion must be 'mean_square' or 'mean', got {criterion!r}")
    _check_keywords(kw, tuple(k for k in _ANALYSE_KEYS if k != "lr"))
    lr = check_positive("lr_start", lr_start)
    rtol = check_positive("rtol", rtol)
    t0 = time.perf_counter()
    verify = kw.pop("verify", True)
    ms_kw = {k: kw.pop(k) for k in ("mean_square", "tol", "progress", "eigensolver") if k in kw}
    warm = kw.pop("warm_start", None)
    warm = WarmStart() if warm is None else warm
    apps0 = warm.applications
    kw.pop("stationary", None)
    count = [0]
    seen: dict[str, list] = {"mean": [], "mean_square": []}

    def mean_rate(eta: float) -> float:
        st = _system(problem, algorithm, participation, lr=eta, verify=False, **kw)
        A = st.system.mean_matrix()
        rho = float(np.abs(np.linalg.eigvals(A)).max(initial=0.0))
        seen["mean"].append((eta, rho))
        return rho

    def ms_rate(eta: float) -> float:
        if count[0] >= max_evals:
            raise FedTheoryError(f"no stability bracket within {max_evals} rate evaluations")
        an = _analyse(
            problem,
            algorithm,
            participation,
            lr=eta,
            stationary=False,
            verify=verify and count[0] == 0,
            warm_start=warm,
            **ms_kw,
            **kw,
        )
        count[0] += 1
        seen["mean_square"].append((eta, an.result.mean_square_rate))
        return an.result.mean_square_rate

    lo_m, hi_m, rlo_m, rhi_m = _bisect(mean_rate, lr, rtol)
    if criterion == "mean":
        return StableStep(
            lo_m,
            lo_m,
            hi_m,
            rlo_m,
            rhi_m,
            criterion,
            0,
            time.perf_counter() - t0,
            tuple(seen["mean"]),
        )
    lo, hi, rlo, rhi = _bisect(ms_rate, min(lr, lo_m), rtol, hi_known=hi_m)
    return StableStep(
        lo,
        lo,
        hi,
        rlo,
        rhi,
        criterion,
        count[0],
        time.perf_counter() - t0,
        tuple(seen["mean_square"]),
        warm.applications - apps0,
    )


@dataclass(frozen=True)
class ProblemConstants:
    """The constants a theorem's conditions are stated in (003 Assumptions 2-4).

    Attributes
    ----------
    n_clients, dim : int
    mu_i, L_i : ndarray (N,)
        Smallest and largest eigenvalue of each H_i (f_i is mu_i-strongly convex, L_i-smooth).
    mu, L : float
        Of the mean f = (1/N) sum_i f_i.
    """

    n_clients: int
    dim: int
    mu_i: np.ndarray
    L_i: np.ndarray
    mu: float
    L: float

    @property
    def L_max(self) -> float:
        """The L of "every f_i is L-smooth" (003 Assumption 2)."""
        return float(self.L_i.max())

    @property
    def mu_min(self) -> float:
        """The mu of "every f_i is mu-strongly convex" (003 Assumption 3)."""
        return float(self.mu_i.min())

    def step_products(self, lr: float, local_steps: int) -> dict[str, float]:
        """eta L, eta K L, eta N L (L = max_i L_i: FOCUS's server moves by the *sum* of N
        gradients) and eta mu, for the reader holding a theorem's step-size condition."""
        lr = check_positive("lr", lr)
        K = check_int("K", local_steps, minimum=1)
        L = self.L_max
        return {
            "eta_L": lr * L,
            "eta_K_L": lr * K * L,
            "eta_N_L": lr * self.n_clients * L,
            "eta_mu": lr * self.mu_min,
            "eta_K_N_L": lr * K * self.n_clients * L,
        }

    as_dict = renamed("to_dict")

    def to_dict(self, lr: float | None = None, local_steps: int | None = None) -> dict:
        out = {
            "n_clients": self.n_clients,
            "dim": self.dim,
            "mu_i": self.mu_i.tolist(),
            "L_i": self.L_i.tolist(),
            "mu_i_range": [self.mu_min, float(self.mu_i.max())],
            "L_i_range": [float(self.L_i.min()), self.L_max],
            "mu": self.mu,
            "L": self.L,
            "condition_number_clients": self.L_max / self.mu_min if self.mu_min > 0 else None,
        }
        if lr is not None and local_steps is not None:
            out["step_products"] = self.step_products(lr, local_steps)
        return out


def problem_constants(problem: Any) -> ProblemConstants:
    """Per-client and global smoothness and strong-convexity constants of a quadratic problem."""
    H, _ = quadratic_data(problem)
    eig = np.linalg.eigvalsh(H)
    Hm = np.linalg.eigvalsh(H.mean(axis=0))
    return ProblemConstants(
        n_clients=int(H.shape[0]),
        dim=int(H.shape[1]),
        mu_i=np.maximum(eig[:, 0], 0.0),
        L_i=eig[:, -1],
        mu=float(max(Hm[0], 0.0)),
        L=float(Hm[-1]),
    )
