"""The local-steps scaling study: how (1/R) sum_r E||grad f(x_r)||^2 scales with R, K, M and rho.

Claims A2-A4 (docs/claims.md): the rates of docs/algorithms.md Section 6, measured. For a grid of rounds
R, local steps K, participating clients M and gossip topologies, every algorithm runs with the
step sizes its theorem prescribes (user-set constants c, c_l), many seeds batched in one
simulation per grid point, on a stochastic non-convex (PL, Karimi et al. 2016) or convex
(quadratic) problem whose gradient noise sigma and heterogeneity sigma_g are set by the user:

============  ==============================  ============================  ==================
algorithm     eta (server)                    eta_l (local)                 source
============  ==============================  ============================  ==================
fedamsgrad    c sqrt(K M)                     c_l / sqrt(R K^2)             Wang et al. 2022b
afga          c N sqrt(K) / M                 c_l / sqrt(R K^2)             000 Cor. 4.7
cafga         c n sqrt(K / m)                 c_l / sqrt(R K^2)             000 App. D, (33)
cafga-adapted (as cafga)
hafed         c sqrt(K M)                     c_l / sqrt(R K)               004 Cor. 5.11
other         c                               c_l / sqrt(R K)               (no theorem)
============  ==============================  ============================  ==================

FedAMSGrad's schedule is the one of Wang, Lin and Chen 2022b ("Communication-Efficient Adaptive
Federated Learning", ICML), as 004 Section 5.1 restates it (eta = Theta(sqrt(tau N)),
eta_l = Theta(1/sqrt(T tau^2)), with the M participants in place of N under partial
participation). The same eta_l = c_l / sqrt(R K^2) serves fedadam, fedyogi and fedadagrad.

The metric is the one the theorems bound, (1/R) sum_{r=1}^{R} E||grad f(x_r)||^2 with x_1 the
initial model (000 Thm 4.6), and min_r E||grad f(x_r)||^2 (004 Cor. 5.11). Exponents in K, R
and M are least-squares slopes of log metric on log K (R, M) fitted per seed, with a Student-t
confidence interval over seeds (:func:`fedtheory.analysis.rates.fit_power_law`), next to the
stated exponents:

- FedAMSGrad, partial participation: O(sqrt(K) / sqrt(R M)) -> K +1/2, R -1/2, M -1/2
  ("the dilemma of local steps", 004 Sec. 3; 000 Sec. 3.1); full participation
  O(1/sqrt(R K N)) -> K -1/2.
- AFGA (000 Cor. 4.7), CAFGA (000 Thm D.3, in m), HA-Fed (004 Cor. 5.11): K, R, M all -1/2.

A grid point outside a theorem's assumptions (rho > M/(M+N) for AFGA, rho_max > m/(m+n) for
CAFGA, rho_max > 1/(2 sqrt(n - m)) or C >= n for HA-Fed, R < K M) is run and reported with the
violated assumption under ``outside``: that is not a failure of the algorithm or of the theorem.

Entry points: :func:`run_local_steps_study`, :func:`run_rho_ablation`, :func:`plot_local_steps`,
:func:`plot_rho_ablation`; the command line is ``fedtheory study local-steps`` /
``fedtheory study rho``.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from fedtheory.algorithms.registry import available, gossip_rho, info
from fedtheory.analysis.rates import fit_power_law
from fedtheory.errors import AssumptionError
from fedtheory.graphs.conditions import afga_bound, cafga_bound, hafed_bound
from fedtheory.io import progress as bar
from fedtheory.io import pyplot, save_figure
from fedtheory.participation import Full, PerCluster, Uniform
from fedtheory.problems import PLProblem, random_quadratic
from fedtheory.simulation import simulate
from fedtheory.validation import check_int, check_positive

SCHEDULE_SOURCE = {
    "fedamsgrad": "Wang et al. 2022b (as restated in 004 Sec. 5.1): eta = c sqrt(K M), "
    "eta_l = c_l / sqrt(R K^2)",
    "afga": "000 Thm 4.6 / Cor. 4.7: eta = c N sqrt(K) / M, eta_l = c_l / sqrt(R K^2)",
    "cafga": "000 App. D (proof of Thm D.3, eq. 33): eta = c n sqrt(K / m), eta_l = c_l / sqrt(R K^2)",
    "hafed": "004 Cor. 5.11: eta = c sqrt(K M), eta_l = c_l / sqrt(R K)",
    "other": "no theorem schedule: eta = c, eta_l = c_l / sqrt(R K)",
}


def step_sizes(
    algorithm: str, *, R: int, K: int, M: int, N: int, clusters: int = 1, c: float, c_l: float
) -> tuple[float, float]:
    """(eta, eta_l) of ``algorithm``'s theorem schedule (table in the module docstring).

    Parameters
    ----------
    algorithm : str
        Registry name.
    R, K, M, N : int
        Rounds, local steps, participating clients per round, clients.
    clusters : int
        C (clustered algorithms: n = N / C clients and m = M / C sampled per cluster).
    c, c_l : float
        The user's constants in front of the Theta(.) of the schedules (> 0).
    """
    check_positive("the server-step constant c", c)
    check_positive("the local-step constant c_l", c_l)
    alg = info(algorithm)
    if alg.adaptive and not alg.gossip:  # FedAMSGrad's schedule (Wang et al. 2022b)
        return c * math.sqrt(K * M), c_l / math.sqrt(R * K * K)
    if alg.name in ("afga", "afga-adapted"):
        return c * N * math.sqrt(K) / M, c_l / math.sqrt(R * K * K)
    if alg.name in ("cafga", "cafga-adapted"):
        n, m = N // clusters, max(M // clusters, 1)
        return c * n * math.sqrt(K / m), c_l / math.sqrt(R * K * K)
    if alg.name == "hafed":
        return c * math.sqrt(K * M), c_l / math.sqrt(R * K)
    return c, c_l / math.sqrt(R * K)


def stated_exponents(algorithm: str, *, partial: bool) -> dict[str, float] | None:
    """The exponents of K, R and M the papers state for ``algorithm`` (None: no theorem)."""
    if algorithm == "fedamsgrad":
        return {"K": 0.5 if partial else -0.5, "R": -0.5, "M": -0.5}
    if algorithm in ("afga", "cafga", "hafed"):
        return {"K": -0.5, "R": -0.5, "M": -0.5}
    return None


def assumption_violations(
    algorithm: str, *, R: int, K: int, M: int, N: int, rho: float | None, clusters: int = 1
) -> list[str]:
    """The theorem assumptions a grid point violates, each named (empty: inside).

    AFGA: rho <= M/(M+N) (000 Thm 4.6), R >= K M (000 Cor. 4.7). CAFGA: rho_max <= m/(m+n)
    (000 Thm D.3). HA-Fed: rho_max <= 1/(2 sqrt(n - m)), C < n, R > K M (004 Cor. 5.11).
    FedAMSGrad: R >= K M (the condition of Wang et al. 2022b, 000 Remark 4.8). Algorithms
    without a theorem here get "no rate stated".
    """

    out: list[str] = []
    if stated_exponents(algorithm, partial=M < N) is None:
        return [f"no rate stated for {algorithm} in 000/004"]
    C = clusters
    n, m = N // C, max(M // C, 1)
    if algorithm == "afga":
        bound = afga_bound(N, M)
        if rho is not None and rho > bound + 1e-12:
            out.append(f"rho = {rho:.4g} > M/(M+N) = {bound:.4g} (000 Thm 4.6)")
    if algorithm == "cafga":
        bound = cafga_bound(n, m)
        if rho is not None and rho > bound + 1e-12:
            out.append(f"rho_max = {rho:.4g} > m/(m+n) = {bound:.4g} (000 Thm D.3)")
    if algorithm == "hafed":
        bound = hafed_bound(n, m)
        if rho is not None and rho > bound + 1e-12:
            out.append(f"rho_max = {rho:.4g} > 1/(2 sqrt(n-m)) = {bound:.4g} (004 Cor. 5.11)")
        if C >= n:
            out.append(f"C = {C} clusters >= n = {n} clients per cluster (004 Cor. 5.11)")
    return out + horizon_violations(algorithm, R=R, K=K, M=M)


def horizon_violations(algorithm: str, *, R: int, K: int, M: int) -> list[str]:
    """The corollaries' conditions on the horizon R a grid point violates, each named: R >= K M
    (AFGA, 000 Cor. 4.7; FedAMSGrad, Wang et al. 2022b and 000 Remark 4.8), R > K M (HA-Fed, 004
    Cor. 5.11). They say when the leading O(1/sqrt(R K M)) term dominates: a run that violates
    one has not reached the bound's regime (part of :func:`assumption_violations`)."""
    if algorithm == "hafed" and R <= K * M:
        return [f"R = {R} <= K M = {K * M} (004 Cor. 5.11)"]
    if algorithm in ("afga", "fedamsgrad") and R < K * M:
        src = "000 Cor. 4.7" if algorithm == "afga" else "Wang et al. 2022b; 000 Remark 4.8"
        return [f"R = {R} < K M = {K * M} ({src})"]
    return []


# ----------------------------------------------------------------------------------------------
# Problems
def study_problem(
    kind: str,
    n_clients: int,
    dim: int,
    *,
    sigma: float,
    sigma_g: float,
    seed: int = 0,
    dtype: Any = None,
) -> Any:
    """A stochastic problem with gradient noise ``sigma`` and heterogeneity ``sigma_g``.

    ``kind="pl"``: the non-convex PL problem of :class:`fedtheory.problems.PLProblem`
    (Karimi et al. 2016), client drifts u_i rescaled so that
    sigma_g^2 = (1/N) sum_i ||grad f_i(x*)||^2 = (1/N) sum_i ||u_i||^2 exactly.
    ``kind="quadratic"``: :func:`fedtheory.problems.random_quadratic` (condition 10), the
    heterogeneity rescaled so that its ``sigma_g`` property equals ``sigma_g``.
    sigma is the standard deviation of the additive Gaussian noise per coordinate.
    """

    check_positive("the gradient noise sigma", sigma, allow_zero=True)
    check_positive("the heterogeneity sigma_g", sigma_g, allow_zero=True)
    if kind == "pl":
        base = PLProblem(n_clients, dim, heterogeneity=1.0, seed=seed)
        s0 = float(np.sqrt((base.u.astype(np.float64) ** 2).sum(axis=1).mean()))
        h = 0.0 if s0 == 0 else sigma_g / s0
        return PLProblem(n_clients, dim, heterogeneity=h, noise=sigma, seed=seed, dtype=dtype)
    if kind == "quadratic":
        base = random_quadratic(n_clients, dim, heterogeneity=1.0, seed=seed)
        s0 = base.sigma_g or 0.0
        h = 0.0 if s0 == 0 else sigma_g / s0
        return random_quadratic(
            n_clients, dim, heterogeneity=h, noise=sigma, seed=seed, dtype=dtype
        )
    raise AssumptionError(f"unknown study problem {kind!r}: choose 'pl' or 'quadratic'")


# ----------------------------------------------------------------------------------------------
# Results
@dataclass
class StudyRun:
    """One grid point: an algorithm on a topology at (R, K, M), all seeds.

    Attributes
    ----------
    algorithm, topology : str (topology None for algorithms without gossip)
    rho : float or None
        ||W - 11^T/n||_2 of the gossip matrix (rho_max over clusters; the ring on S_r for
        afga-adapted).
    R, K, M, N, clusters : int
    eta, eta_l : float
    avg, min : ndarray (seeds,)
        (1/R) sum_{r<R} ||grad f(x_r)||^2 and min_{r<R} ||grad f(x_r)||^2 per seed
        (NaN for a seed that diverged). ``min`` is the minimum of one seed's realized values,
        so its seed mean estimates E[min_r ...], which lies below the min_r E[...] of 004
        Cor. 5.11.
    diverged : int
        Number of seeds that diverged (the runner's divergence flag).
    outside : list of str
        Violated theorem assumptions (empty: inside).
    wall_time : float
    """

    algorithm: str
    topology: str | None
    rho: float | None
    R: int
    K: int
    M: int
    N: int
    clusters: int
    eta: float
    eta_l: float
    avg: np.ndarray
    min: np.ndarray
    diverged: int
    outside: list
    wall_time: float

    @property
    def key(self) -> tuple:
        return (self.algorithm, self.topology)

    def mean(self, metric: str = "avg") -> float:
        v = getattr(self, metric)
        v = v[np.isfinite(v)]
        return float(v.mean()) if v.size else float("nan")


@dataclass
class ExponentFit:
    """A fitted exponent of the metric in one variable (K, R or M), the others fixed."""

    algorithm: str
    topology: str | None
    rho: float | None
    variable: str
    metric: str
    fixed: dict
    x: list
    exponent: float
    ci_low: float
    ci_high: float
    stderr: float
    r2: float
    n_seeds: int
    stated: float | None
    outside: list
    confidence: float

    def key_match(self, key: tuple, variable: str, metric: str, fixed: dict) -> bool:
        """True for the fit of (algorithm, topology) ``key`` along ``variable`` at ``fixed``."""
        return (
            (self.algorithm, self.topology) == key
            and self.variable == variable
            and self.metric == metric
            and all(self.fixed.get(k) == v for k, v in fixed.items())
        )

    @property
    def agrees(self) -> bool | None:
        """True when the stated exponent lies in the confidence interval (None: no statement)."""
        if self.stated is None or not np.isfinite(self.exponent):
            return None
        return bool(self.ci_low <= self.stated <= self.ci_high)


@dataclass
class LocalStepsStudy:
    """Result of :func:`run_local_steps_study` / :func:`run_rho_ablation`."""

    runs: list
    fits: list
    config: dict
    wall_time: float = 0.0
    rho_trends: list = field(default_factory=list)

    def to_dict(self) -> dict:
        runs = []
        for r in self.runs:
            d = asdict(r)
            d["avg_mean"], d["min_mean"] = r.mean("avg"), r.mean("min")
            runs.append(d)
        fits = []
        for f in self.fits:
            d = asdict(f)
            d["agrees"] = f.agrees
            fits.append(d)
        return {
            "config": self.config,
            "runs": runs,
            "fits": fits,
            "rho_trends": self.rho_trends,
            "wall_time_s": self.wall_time,
        }

    @classmethod
    def from_dict(cls, data: dict) -> LocalStepsStudy:
        """Rebuild a study from :meth:`to_dict` output (e.g. its ``--json`` file), to re-plot."""

        def num(v: Any) -> Any:
            return None if v is None else float(v)

        runs = []
        for d in data["runs"]:
            d = {k: v for k, v in d.items() if k not in ("avg_mean", "min_mean")}
            d["avg"] = np.asarray(d["avg"], dtype=float)
            d["min"] = np.asarray(d["min"], dtype=float)
            d["rho"] = num(d["rho"])
            runs.append(StudyRun(**d))
        fits = []
        for d in data["fits"]:
            d = {k: v for k, v in d.items() if k != "agrees"}
            for k in ("exponent", "ci_low", "ci_high", "stderr", "r2"):
                d[k] = float(d[k])
            d["rho"] = num(d["rho"])
            fits.append(ExponentFit(**d))
        return cls(runs=runs, fits=fits, config=data.get("config", {}),
                   wall_time=float(data.get("wall_time_s", 0.0)),
                   rho_trends=data.get("rho_trends", []))  # fmt: skip

    def fit(self, algorithm: str, variable: str = "K", topology: str | None = None,
            metric: str = "avg") -> ExponentFit:  # fmt: skip
        """The first fit of ``variable`` for ``algorithm`` (and ``topology``)."""
        for f in self.fits:
            if (f.algorithm, f.variable, f.metric) == (algorithm, variable, metric) and (
                topology is None or f.topology == topology
            ):
                return f
        raise KeyError(f"no {variable} fit for {algorithm} on {topology}")

    def table(self, metric: str = "avg") -> str:
        """The fitted exponents as a plain-text table."""
        head = (
            f"{'algorithm':13s} {'topology':15s} {'rho':>6s} {'var':3s} {'at':12s} {'exponent':>9s} "
            f"{'CI':>19s} {'stated':>7s} {'seeds':>5s}  assumptions"
        )
        lines = [head, "-" * len(head)]
        for f in self.fits:
            if f.metric != metric:
                continue
            rho = "-" if f.rho is None else f"{f.rho:.3f}"
            st = "-" if f.stated is None else f"{f.stated:+.2f}"
            ci = f"[{f.ci_low:+.3f}, {f.ci_high:+.3f}]"
            note = "inside" if not f.outside else "outside assumptions: " + "; ".join(f.outside)
            at = ",".join(f"{k}={v}" for k, v in f.fixed.items())
            lines.append(
                f"{f.algorithm:13s} {str(f.topology or '-'):15s} {rho:>6s} {f.variable:3s} "
                f"{at:12s} {f.exponent:+9.3f} {ci:>19s} {st:>7s} {f.n_seeds:5d}  {note}"
            )
        return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
def _rho(algorithm: str, topology: str | None, N: int, M: int, C: int, graph_seed: int) -> Any:
    alg = info(algorithm)
    if not alg.gossip:
        return None
    settings = {"topology": topology, "clusters": C if alg.clustered else None}
    if any(o.name == "graph_seed" for o in alg.options):
        settings["graph_seed"] = graph_seed
    return gossip_rho(alg.name, N, M, **settings)


def grid_conditions(algorithm: str, *, topology: str | None, R: int, K: int, M: int,
                    N: int = 50, C: int = 5, graph_seed: int = 0) -> tuple[Any, list[str]]:  # fmt: skip
    """(rho, violated assumptions) of one grid point of :func:`gradient_curves`, without running
    it: the gossip graph's rho (None without gossip) and :func:`assumption_violations`."""
    rho = _rho(algorithm, topology, N, M, C, graph_seed)
    cl = C if info(algorithm).clustered else 1
    return rho, assumption_violations(algorithm, R=R, K=K, M=M, N=N, rho=rho, clusters=cl)


def participation_for(algorithm: str, N: int, M: int, C: int) -> Any:
    """Who takes part at a grid point: everyone when M = N; m = M / C per cluster for a
    clustered algorithm (000 Alg. 2, 004 Sec. 4); else M of N uniformly."""

    if M == N:
        return Full(N)
    if info(algorithm).clustered:
        if M % C:
            raise AssumptionError(
                f"{algorithm} samples m = M / C per cluster: M = {M} is not a multiple of C = {C}"
            )
        return PerCluster(np.repeat(np.arange(C), N // C), M // C)
    return Uniform(N, M)


def _ints(name: str, values: Sequence[int], minimum: int = 1) -> list[int]:
    vals = [check_int(name, v, minimum=minimum) for v in values]
    if not vals:
        raise AssumptionError(f"the grid of {name} is empty")
    return sorted(set(vals))


def run_local_steps_study(
    algorithms: Sequence[str] = ("fedamsgrad", "afga"),
    *,
    Ks: Sequence[int] = (1, 2, 4, 8, 16),
    Rs: Sequence[int] = (200,),
    Ms: Sequence[int] = (5,),
    topologies: Sequence[str] = ("ring", "random", "complete"),
    n_clients: int = 50,
    clusters: int = 5,
    dim: int = 10,
    problem: str = "pl",
    sigma: float = 1.0,
    sigma_g: float = 1.0,
    c_global: float = 0.05,
    c_local: float = 0.5,
    constants: dict | None = None,
    beta1: float = 0.9,
    beta2: float = 0.99,
    eps: float = 1e-8,
    eps_placement: str | None = None,
    seeds: int = 20,
    seed: int = 0,
    graph_seed: int = 0,
    problem_seed: int = 0,
    confidence: float = 0.95,
    backend: str | None = None,
    progress: bool = True,
) -> LocalStepsStudy:
    """Run the grid and fit the exponents of K, R and M (module docstring).

    Parameters
    ----------
    algorithms : sequence of str
        Registry names (``fedamsgrad``, ``afga``, ``afga-adapted``, ``cafga``, ``hafed``,
        ``dsgd``, ``fedavg``, ...).
    Ks, Rs, Ms : sequences of int
        The grid; an exponent is fitted along every axis with at least two values.
    topologies : sequence of str
        Gossip graph families (:data:`fedtheory.graphs.FAMILIES`); on all N clients for
        AFGA/DSGD, inside every cluster for CAFGA/HA-Fed. Algorithms without gossip run once.
    n_clients, clusters, dim : int
        N, C (clustered algorithms), d.
    problem : {"pl", "quadratic"}
    sigma, sigma_g : float
        Gradient-noise standard deviation per coordinate and heterogeneity (:func:`study_problem`).
    c_global, c_local : float
        Constants c, c_l of the schedules; ``constants={"afga": (c, c_l), ...}`` overrides them
        per algorithm.
    beta1, beta2, eps, eps_placement
        Server-optimizer constants (000 Algorithm 1 defaults).
    seeds, seed : int
        Seeds per grid point (one batched simulation) and the root seed (the same seeds at every
        grid point: common random numbers across the grid).
    graph_seed, problem_seed : int
        Seeds of the random topologies and of the problem.
    confidence : float
        Level of the exponents' confidence intervals.
    backend : {"numpy", "cupy", "strict"}, optional
    progress : bool
        Show a progress bar (stderr, only on a terminal).

    Returns
    -------
    LocalStepsStudy

    Raises
    ------
    AssumptionError
        Empty grids, M > N, M not a multiple of C for clustered algorithms, N not a multiple of
        C, unknown problem or topology.
    """

    t0 = time.perf_counter()
    Ks, Rs, Ms = _ints("K", Ks), _ints("R", Rs), _ints("M", Ms)
    N = check_int("the number of clients N", n_clients, minimum=2)
    C = check_int("the number of clusters C", clusters, minimum=1)
    S = check_int("the number of seeds", seeds, minimum=1)
    if max(Ms) > N:
        raise AssumptionError(f"M = {max(Ms)} participating clients exceed N = {N}")
    known = available()
    algorithms = list(dict.fromkeys(algorithms))
    for a in algorithms:
        if a not in known:
            raise AssumptionError(f"unknown algorithm {a!r}: choose one of {', '.join(known)}")
    if any(info(a).clustered for a in algorithms) and N % C:
        raise AssumptionError(f"N = {N} clients do not split into C = {C} equal clusters")
    topologies = list(dict.fromkeys(topologies)) or ["ring"]
    prob = study_problem(
        problem, N, dim, sigma=sigma, sigma_g=sigma_g, seed=problem_seed
    )  # fmt: skip
    constants = dict(constants or {})

    jobs = []
    for a in algorithms:
        topos = topologies if info(a).gossip else [None]
        if a == "afga-adapted":  # a ring (or complete graph) formed on S_r (000 fn. 4)
            topos = [t for t in topologies if t in ("ring", "complete")] or ["ring"]
        for topo in topos:
            for R, K, M in itertools.product(Rs, Ks, Ms):
                jobs.append((a, topo, R, K, M))
    runs: list[StudyRun] = []
    rho_cache: dict = {}
    for a, topo, R, K, M in bar(jobs, desc="study", unit="run", disable=not progress):
        c, c_l = constants.get(a, (c_global, c_local))
        eta, eta_l = step_sizes(a, R=R, K=K, M=M, N=N, clusters=C, c=c, c_l=c_l)
        rk = (a, topo, M)
        if rk not in rho_cache:
            rho_cache[rk] = _rho(a, topo, N, M, C, graph_seed)
        rho = rho_cache[rk]
        model = participation_for(a, N, M, C)
        t1 = time.perf_counter()
        settings = dict(
            lr=eta_l, local_steps=K, global_lr=eta, beta1=beta1, beta2=beta2, eps=eps,
            eps_placement=eps_placement, topology=topo, clusters=C, graph_seed=graph_seed,
        )  # fmt: skip
        # The study's constants apply to every algorithm of the grid that reads them.
        accepted = info(a).accepted()
        settings = {k: v for k, v in settings.items() if k in accepted}
        res = simulate(prob, a, model, rounds=R, seeds=S, seed=seed, backend=backend, **settings)
        g = res.grad_norm2[:, :R]  # x_1 .. x_R of the theorems (x_1 = the initial model)
        with np.errstate(all="ignore"):
            avg = np.where(res.diverged, np.nan, g.mean(axis=1))
            mn = np.where(res.diverged, np.nan, g.min(axis=1))
        runs.append(
            StudyRun(
                algorithm=a, topology=topo, rho=rho, R=R, K=K, M=M, N=N,
                clusters=C if info(a).clustered else 1, eta=eta, eta_l=eta_l, avg=avg, min=mn,
                diverged=int(res.diverged.sum()),
                outside=assumption_violations(
                    a, R=R, K=K, M=M, N=N, rho=rho, clusters=C if info(a).clustered else 1
                ),
                wall_time=time.perf_counter() - t1,
            )
        )  # fmt: skip
    fits = fit_exponents(runs, confidence=confidence)
    config = {
        "algorithms": algorithms, "Ks": Ks, "Rs": Rs, "Ms": Ms, "topologies": topologies,
        "n_clients": N, "clusters": C, "dim": dim, "problem": problem, "sigma": sigma,
        "sigma_g": sigma_g, "c_global": c_global, "c_local": c_local,
        "constants": {k: list(v) for k, v in constants.items()}, "beta1": beta1,
        "beta2": beta2, "eps": eps, "eps_placement": eps_placement, "seeds": S, "seed": seed,
        "graph_seed": graph_seed, "problem_seed": problem_seed, "confidence": confidence,
        "schedules": {a: SCHEDULE_SOURCE.get(
            "fedamsgrad" if info(a).adaptive and not info(a).gossip else a,
            SCHEDULE_SOURCE["afga"] if a == "afga-adapted" else SCHEDULE_SOURCE["other"],
        ) for a in algorithms},
    }  # fmt: skip
    out = LocalStepsStudy(runs=runs, fits=fits, config=config)
    out.rho_trends = rho_trends(out)
    out.wall_time = time.perf_counter() - t0
    return out


@dataclass
class GradientCurves:
    """||grad f(x_r)||^2 per seed, round and grid value of one variable (claims A2-A4).

    Attributes
    ----------
    algorithm, topology : str (topology None without gossip)
    variable : str
        The swept variable ("K", "R" or "topology").
    values : list
        Its grid.
    curves : list of ndarray (seeds, R)
        ||grad f(x_r)||^2 for r = 1..R (x_1 the initial model, 000 Thm 4.6's indexing), one
        array per grid value; every grid value runs the same seed ids (paired). NaN from a
        seed's divergence on.
    rho : list of float or None
        ||W - 11^T/n||_2 per grid value.
    outside : list of list of str
        Violated theorem assumptions per grid value (:func:`assumption_violations`).
    settings : dict
        Everything else (R, M, N, C, c, c_l, sigma, sigma_g, step sizes per grid value, seeds).
    """

    algorithm: str
    topology: str | None
    variable: str
    values: list
    curves: list
    rho: list
    outside: list
    settings: dict


def window_mean(curve: np.ndarray, start: float = 0.5) -> np.ndarray:
    """Mean of ``curve`` (..., R) over rounds ``ceil(start R)..R`` (default: the second half,
    the window past the transient of claims A2-A3)."""
    R = curve.shape[-1]
    return curve[..., int(np.ceil(start * R)) :].mean(axis=-1)


def window_min(curve: np.ndarray, start: float = 0.5) -> np.ndarray:
    """Minimum of ``curve`` (..., R) over rounds ``ceil(start R)..R``."""
    R = curve.shape[-1]
    return curve[..., int(np.ceil(start * R)) :].min(axis=-1)


def gradient_curves(
    algorithm: str,
    *,
    variable: str = "K",
    values: Sequence[Any] = (1, 2, 4, 8),
    K: int = 8,
    R: int = 200,
    M: int = 5,
    n_clients: int = 50,
    clusters: int = 5,
    topology: str | None = None,
    c: float = 0.02,
    c_l: float = 0.5,
    sigma: float = 1.0,
    sigma_g: float = 1.0,
    dim: int = 10,
    seeds: int = 8,
    seed: int = 0,
    seed_ids: Sequence[int] | None = None,
    problem_seed: int = 0,
    graph_seed: int = 0,
    schedule: str | None = None,
    metric: str = "grad_norm2",
) -> GradientCurves:
    """Run ``algorithm`` with its theorem schedule (:func:`step_sizes`) on the PL study problem
    over a grid of K, R, M or topologies and keep every seed's ||grad f(x_r)||^2 curve.

    The statistics (window means, exponents, intervals) are the caller's: the claims compute
    them with :mod:`fedtheory.analysis.stats`. ``variable="topology"`` sweeps gossip graphs at
    the given K and R; ``"K"``, ``"R"`` or ``"M"`` sweep that integer with ``topology`` fixed
    (M = N is full participation). ``schedule`` names the algorithm whose step-size schedule is
    used (default: ``algorithm``'s own; 004 Rem. 5.10 runs HA-Fed with FedAMSGrad's).
    ``metric`` is the runner metric kept (``"grad_norm2"``, or ``"subopt"``: f(x_r) - f*).

    Raises
    ------
    AssumptionError
        An unknown variable, or a grid value the study rejects (see :func:`run_local_steps_study`).
    """
    if variable not in ("K", "R", "M", "topology"):
        raise AssumptionError(f"variable must be 'K', 'R', 'M' or 'topology', got {variable!r}")
    N, C = n_clients, clusters
    alg = info(algorithm)
    prob = study_problem("pl", N, dim, sigma=sigma, sigma_g=sigma_g, seed=problem_seed)
    ids = list(range(seeds)) if seed_ids is None else [int(i) for i in seed_ids]
    curves, rhos, outs, steps = [], [], [], []
    for v in values:
        k, r, m, topo = K, R, M, topology
        if variable == "K":
            k = int(v)
        elif variable == "R":
            r = int(v)
        elif variable == "M":
            m = int(v)
        else:
            topo = str(v)
        eta, eta_l = step_sizes(schedule or algorithm, R=r, K=k, M=m, N=N, clusters=C, c=c,
                                c_l=c_l)  # fmt: skip
        rho = _rho(algorithm, topo, N, m, C, graph_seed)
        settings = dict(lr=eta_l, local_steps=k, global_lr=eta, topology=topo,
                        clusters=C, graph_seed=graph_seed)  # fmt: skip
        accepted = alg.accepted()
        settings = {a: b for a, b in settings.items() if a in accepted}
        res = simulate(prob, algorithm, participation_for(algorithm, N, m, C), rounds=r,
                       seeds=len(ids), seed=seed, seed_ids=ids, metrics=[metric],
                       **settings)  # fmt: skip
        g = np.where(res.diverged[:, None], np.nan, np.asarray(getattr(res, metric))[:, :r])
        curves.append(g)
        rhos.append(rho)
        cl = C if alg.clustered else 1
        outs.append(assumption_violations(algorithm, R=r, K=k, M=m, N=N, rho=rho, clusters=cl))
        steps.append({"eta": eta, "eta_l": eta_l})
    return GradientCurves(
        algorithm=algorithm, topology=topology, variable=variable, values=list(values),
        curves=curves, rho=rhos, outside=outs,
        settings={"K": K, "R": R, "M": M, "N": N, "C": C, "c": c, "c_l": c_l, "sigma": sigma,
                  "sigma_g": sigma_g, "dim": dim, "seed": seed, "seed_ids": ids,
                  "problem_seed": problem_seed, "graph_seed": graph_seed, "steps": steps,
                  "schedule": schedule or algorithm, "metric": metric},
    )  # fmt: skip


def fit_exponents(
    runs: Sequence[StudyRun], *, confidence: float = 0.95, metrics: Sequence[str] = ("avg", "min")
) -> list[ExponentFit]:
    """Power-law exponents of each metric along K, R and M, per (algorithm, topology).

    For every axis with at least two grid values and every setting of the other two, the
    per-seed slopes of log metric on log variable are averaged with a t-interval over seeds
    (:func:`fedtheory.analysis.rates.fit_power_law`). Seeds that diverged or reached a metric
    of zero at some grid point are left out of that fit (``n_seeds`` says how many remain).
    """

    out: list[ExponentFit] = []
    groups: dict = {}
    for r in runs:
        groups.setdefault(r.key, []).append(r)
    axes = {"K": ("R", "M"), "R": ("K", "M"), "M": ("R", "K")}
    for (alg, topo), rs in groups.items():
        for var, others in axes.items():
            settings = sorted({tuple(getattr(r, o) for o in others) for r in rs})
            for fixed in settings:
                line = sorted(
                    (r for r in rs if tuple(getattr(r, o) for o in others) == fixed),
                    key=lambda r: getattr(r, var),
                )
                if len(line) < 2:
                    continue
                x = np.array([getattr(r, var) for r in line], dtype=float)
                for metric in metrics:
                    Y = np.stack([getattr(r, metric) for r in line], axis=1)  # (S, points)
                    ok = np.all(np.isfinite(Y) & (Y > 0), axis=1)
                    stated = stated_exponents(alg, partial=line[0].M < line[0].N)
                    outside = sorted({v for r in line for v in r.outside})
                    rhos = {r.rho for r in line}
                    rho = line[0].rho if len(rhos) == 1 else None
                    if ok.sum() == 0:
                        pl = None
                    else:
                        pl = fit_power_law(x, Y[ok], confidence=confidence)
                    nan = float("nan")
                    out.append(
                        ExponentFit(
                            algorithm=alg, topology=topo, rho=rho, variable=var, metric=metric,
                            fixed=dict(zip(others, fixed, strict=True)), x=x.tolist(),
                            exponent=pl.exponent if pl else nan,
                            ci_low=pl.ci_low if pl else nan, ci_high=pl.ci_high if pl else nan,
                            stderr=pl.stderr if pl else nan, r2=pl.r2 if pl else nan,
                            n_seeds=int(ok.sum()), stated=None if stated is None else stated[var],
                            outside=outside, confidence=confidence,
                        )
                    )  # fmt: skip
    return out


def rho_trends(result: LocalStepsStudy, metric: str = "avg") -> list[dict]:
    """Does a smaller rho converge faster? (claim A4).

    For each algorithm and each (R, K, M) with at least two topologies of distinct rho: the
    Spearman rank correlation between rho and the seed-mean metric (positive: smaller rho,
    smaller metric), and the per-seed fraction of topology pairs ordered like their rho.
    """

    out = []
    groups: dict = {}
    for r in result.runs:
        if r.rho is None:
            continue
        groups.setdefault((r.algorithm, r.R, r.K, r.M), []).append(r)
    for (alg, R, K, M), rs in sorted(groups.items(), key=lambda kv: str(kv[0])):
        if len({r.rho for r in rs}) < 2:
            continue
        rs = sorted(rs, key=lambda r: r.rho)
        rho = np.array([r.rho for r in rs])
        Y = np.stack([getattr(r, metric) for r in rs], axis=1)  # (S, T)
        mean = np.nanmean(Y, axis=0)
        sp = stats.spearmanr(rho, mean) if len(rs) > 2 else None
        pairs = [(i, j) for i in range(len(rs)) for j in range(i + 1, len(rs)) if rho[i] < rho[j]]
        with np.errstate(invalid="ignore"):
            agree = np.nanmean([np.mean(Y[:, i] < Y[:, j]) for i, j in pairs]) if pairs else np.nan
        out.append({
            "algorithm": alg, "R": R, "K": K, "M": M, "metric": metric,
            "topologies": [r.topology for r in rs], "rho": rho.tolist(), "mean": mean.tolist(),
            "spearman": None if sp is None else float(sp.statistic),
            "pair_fraction_ordered": float(agree),
            "smaller_rho_faster": bool(np.all(np.diff(mean) > 0)),
        })  # fmt: skip
    return out


def run_rho_ablation(
    algorithms: Sequence[str] = ("afga",),
    *,
    topologies: Sequence[str] = ("complete", "complete-random", "random", "torus", "ring"),
    K: int = 8,
    R: int = 200,
    M: int = 5,
    **kw: Any,
) -> LocalStepsStudy:
    """Metric against rho (claim A4; 000 Fig. 1, 004 Fig. 2b): one (R, K, M), many topologies.

    Keywords go to :func:`run_local_steps_study`. ``result.rho_trends`` holds the rank
    correlation of rho and the metric per algorithm.
    """
    return run_local_steps_study(algorithms, Ks=(K,), Rs=(R,), Ms=(M,), topologies=topologies, **kw)


# ----------------------------------------------------------------------------------------------
# Plots
def _label(alg: str, topo: str | None, rho: float | None) -> str:
    if topo is None:
        return alg
    return f"{alg}, {topo}" + ("" if rho is None else f" (rho={abs(rho):.3f})")


def _draw_vs_k(ax: Any, result: LocalStepsStudy, metric: str) -> None:
    runs = result.runs
    R0, M0 = max(r.R for r in runs), min(r.M for r in runs)  # the longest runs
    keys = list(dict.fromkeys(r.key for r in runs))
    for i, key in enumerate(keys):
        line = sorted((r for r in runs if r.key == key and r.R == R0 and r.M == M0),
                      key=lambda r: r.K)  # fmt: skip
        if not line:
            continue
        K = np.array([r.K for r in line], dtype=float)
        Y = np.stack([getattr(r, metric) for r in line], axis=1)
        with np.errstate(all="ignore"):
            mean = np.nanmean(Y, axis=0)
            n = np.maximum(np.isfinite(Y).sum(axis=0), 1)
            se = np.nanstd(Y, axis=0, ddof=1) / np.sqrt(n) if Y.shape[0] > 1 else 0 * mean
        color = f"C{i % 10}"
        ax.errorbar(K, mean, yerr=1.96 * se, fmt="o", color=color, ms=4, capsize=2,
                    label=_label(*key, line[0].rho))  # fmt: skip
        out = [bool(r.outside) for r in line]
        if any(out):
            ax.plot(K[out], mean[out], "o", mfc="white", mec=color, ms=7)
        try:
            f = next(f for f in result.fits if f.key_match(key, "K", metric, {"R": R0, "M": M0}))
        except StopIteration:
            f = None
        ok = np.isfinite(mean) & (mean > 0)
        if ok.sum() >= 2:
            logc = np.mean(np.log(mean[ok])) - (f.exponent if f else 0) * np.mean(np.log(K[ok]))
            if f is not None and np.isfinite(f.exponent):
                ax.plot(
                    K,
                    np.exp(logc) * K**f.exponent,
                    "-",
                    color=color,
                    lw=1,
                    label=f"fit {f.exponent:+.2f} [{f.ci_low:+.2f}, {f.ci_high:+.2f}]",
                )
            if f is not None and f.stated is not None:
                y0 = mean[ok][0] * (K / K[ok][0]) ** f.stated
                ax.plot(K, y0, ":", color=color, lw=1.2, label=f"stated {f.stated:+.1f}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("local steps K")
    ax.set_ylabel("(1/R) sum ||grad f(x_r)||^2" if metric == "avg" else "min_r ||grad f(x_r)||^2")
    ax.set_title(f"metric vs K (R={R0}, M={M0}); hollow: outside assumptions", fontsize=9)
    ax.legend(fontsize=6, loc="best")


def _draw_vs_rho(ax: Any, result: LocalStepsStudy, metric: str) -> None:
    runs = [r for r in result.runs if r.rho is not None]
    if not runs:
        ax.text(0.5, 0.5, "no gossip algorithm in this study", ha="center", transform=ax.transAxes)
        return
    K0, R0, M0 = max(r.K for r in runs), max(r.R for r in runs), min(r.M for r in runs)
    algs = list(dict.fromkeys(r.algorithm for r in runs))
    for i, a in enumerate(algs):
        pts = sorted((r for r in runs if r.algorithm == a and (r.K, r.R, r.M) == (K0, R0, M0)),
                     key=lambda r: r.rho)  # fmt: skip
        if not pts:
            continue
        rho = np.array([r.rho for r in pts])
        Y = np.stack([getattr(r, metric) for r in pts], axis=1)
        with np.errstate(all="ignore"):
            mean = np.nanmean(Y, axis=0)
            n = np.maximum(np.isfinite(Y).sum(axis=0), 1)
            se = np.nanstd(Y, axis=0, ddof=1) / np.sqrt(n) if Y.shape[0] > 1 else 0 * mean
        ax.errorbar(rho, mean, yerr=1.96 * se, fmt="o-", color=f"C{i % 10}", ms=4, capsize=2,
                    label=a)  # fmt: skip
        for r, y in zip(pts, mean, strict=True):
            ax.annotate(str(r.topology), (r.rho, y), fontsize=6, xytext=(2, 2),
                        textcoords="offset points")  # fmt: skip
    for r in result.runs:
        if r.rho is None and (r.K, r.R, r.M) == (K0, R0, M0):
            ax.axhline(r.mean(metric), ls="--", lw=0.8, color="gray")
            ax.text(0.0, r.mean(metric), f" {r.algorithm}", fontsize=6, va="bottom")
    ax.set_yscale("log")
    ax.set_xlabel("spectral gap rho = ||W - 11^T/n||_2 (rho_max for clusters)")
    ax.set_ylabel("metric")
    ax.set_title(f"metric vs rho (K={K0}, R={R0}, M={M0})", fontsize=9)
    ax.legend(fontsize=7)


def _save(fig: Any, path: Any) -> Any:
    """Write ``fig`` to ``path`` and close it (the path is returned)."""
    out = save_figure(fig, path, dpi=130, bbox_inches="tight")
    pyplot().close(fig)
    return out


def plot_local_steps(result: LocalStepsStudy, path: Any, *, metric: str = "avg") -> Any:
    """Two panels: the metric against K per algorithm and topology (log-log, 95% intervals over
    seeds, fitted slope solid, stated slope dotted, hollow markers outside the theorem's
    assumptions) and the metric against rho at the largest K. Returns the written path."""
    fig = pyplot().figure(figsize=(11, 4.5))
    ax1, ax2 = fig.subplots(1, 2)
    _draw_vs_k(ax1, result, metric)
    _draw_vs_rho(ax2, result, metric)
    return _save(fig, path)


def plot_rho_ablation(result: LocalStepsStudy, path: Any, *, metric: str = "avg") -> Any:
    """The metric against rho per algorithm (claim A4). Returns the written path."""
    fig = pyplot().figure(figsize=(6, 4.5))
    _draw_vs_rho(fig.subplots(), result, metric)
    return _save(fig, path)
