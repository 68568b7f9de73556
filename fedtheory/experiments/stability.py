"""The stability map of 003 Figure 4: exact per-round rates against the step size.

For FOCUS (003 Algorithm 1), SCAFFOLD (Karimireddy et al. 2020) and FedAvg on the authors'
Figure 4 problem (N = 16, d = 50, K = 3) in the three regimes of the figure (full
participation; uniform 4 of 16; weighted 4 of 16 without replacement), :func:`run_stability_map`
computes with :mod:`fedtheory.analysis.exact`

* the exact mean-square rate rho(P -> E[M_S P M_S^T]) against the step size eta (E||x_r - x*||^2
  decays like its r-th power; FedAvg's error decays like it to its floor),
* the largest stable step size (mean-square rate < 1) by bisection
  (:func:`~fedtheory.analysis.exact.largest_stable_lr`; every rate the bisection computes is a
  point of the curve, so the boundary is resolved where it matters),
* the paper's step sizes (6e-4, 1.5e-4, 1e-4) and the rates there.

:func:`plot_stability_map` draws one panel per regime. The mean-square rates of the partial
regimes need an eigensolver on operators with 361,675 unknowns (packed symmetric matrices); the
eigensolver tolerance ``tol`` (default 1e-4, the relative residual of the eigenpair: rates to
a few 1e-4 on this problem, against solves at 1e-9, far below what a plot shows) trades accuracy
for time.

The (regime, algorithm) settings are independent, so :func:`run_stability_map` computes them in
``workers`` forked processes (one BLAS thread each, as :func:`~fedtheory.analysis.exact.exact_rates`
pins it): every number is the one the same setting gives in one process, bit for bit; only the
wall time changes. Within a setting the work is sequential (each bisection step depends on the
last) and is the eigensolver's: 40 to 300 applications of the mean-square operator per rate at
25-45 ms each on Figure 4, and up to 2,500 where FOCUS's near-1 mode is the top (eta about 2e-3
to 2.9e-3 under partial participation: a cluster of eigenvalues within 1e-4 of 1). Each curve's
solves share a warm start (:class:`~fedtheory.analysis.exact.WarmStart`), which saves little on
these clusters (the eigenvector rotates within the cluster as eta moves).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from fedtheory.algorithms.registry import display_name
from fedtheory.analysis.exact import WarmStart, exact_rates, largest_stable_lr
from fedtheory.experiments.result import ExperimentResult
from fedtheory.io import jsonable, pyplot, save_figure
from fedtheory.parallel import fork_all
from fedtheory.problems.quadratic import figure4_problem
from fedtheory.simulation.spec import build_participation
from fedtheory.validation import available_cores, check_int, check_positive

ALGORITHMS = ("focus", "scaffold", "fedavg")
#: regime -> (participation name, clients per round, the paper's step size).
REGIMES = {
    "full": ("full", None, 6e-4),
    "uniform": ("uniform", 4, 1.5e-4),
    "arbitrary": ("weighted", 4, 1e-4),
}

#: The map's eigensolver. At its loose tolerance (1e-4) Krylov-Schur's test that the Ritz value
#: stopped moving keeps it off the transient Ritz values of this far-from-normal operator;
#: ARPACK at 1e-4, from the positive definite start, returned 0.8352 for FOCUS's 0.8244 (003
#: Figure 4, uniform 4 of 16, eta = 1.5e-4) and needs 1e-6 to be within 1e-7 (docs/exact-rates.md).
EIGENSOLVER = "krylov-schur"


def _model(name: str, m: int | None, problem: Any) -> Any:
    """A regime's model on the Figure 4 problem (weighted: its own draw weights)."""
    return build_participation(name, problem, clients_per_round=m).model


@dataclass(repr=False)
class StabilityCurve(ExperimentResult):
    """One algorithm's exact mean-square rate against the step size in one regime.

    Attributes
    ----------
    lr, mean_square_rate : list of float
        The step sizes evaluated (sorted) and their exact mean-square rates.
    largest_stable_lr : float
        The bisected largest step with a rate below 1; ``bracket`` its final bracket.
    bracket : list of float
    rate_at_paper_lr : float or None
    seconds : float
    applications : int
        Applications of the mean-square operator by the curve's eigen-solves.
    """

    lr: list
    mean_square_rate: list
    largest_stable_lr: float
    bracket: list
    rate_at_paper_lr: float | None
    seconds: float
    applications: int = 0


@dataclass(repr=False)
class StabilityRegime(ExperimentResult):
    """One regime of the stability map: its participation model, the paper's step and one
    :class:`StabilityCurve` per algorithm."""

    participation: dict
    paper_lr: float
    curves: dict

    def to_dict(self) -> dict[str, Any]:
        """The sidecar's layout: the curves beside the regime's fields, keyed by algorithm."""
        out = {"participation": self.participation, "paper_lr": self.paper_lr}
        out.update({alg: cur.to_dict() for alg, cur in self.curves.items()})
        return jsonable(out)


@dataclass(repr=False)
class StabilityMapResult(ExperimentResult):
    """:func:`run_stability_map`'s result (``result.regimes["uniform"].curves["focus"]``)."""

    problem: str
    local_steps: int
    tol: float
    rtol: float
    regimes: dict

    def to_dict(self) -> dict[str, Any]:
        return jsonable(
            {
                "problem": self.problem,
                "local_steps": self.local_steps,
                "tol": self.tol,
                "rtol": self.rtol,
                "regimes": {k: r.to_dict() for k, r in self.regimes.items()},
            }
        )

    def _summary(self) -> str:
        return "; ".join(
            f"{name}: "
            + ", ".join(f"{a} eta_max {c.largest_stable_lr:.3g}" for a, c in reg.curves.items())
            for name, reg in self.regimes.items()
        )


def run_stability_map(
    *,
    algorithms: tuple[str, ...] = ALGORITHMS,
    regimes: tuple[str, ...] = tuple(REGIMES),
    local_steps: int = 3,
    extra: tuple[float, ...] = (0.5, 1.3),
    tol: float = 1e-4,
    rtol: float = 5e-2,
    problem: Any = None,
    workers: int | None = None,
) -> StabilityMapResult:
    """Exact mean-square rates against the step size on the 003 Figure 4 problem.

    Parameters
    ----------
    algorithms, regimes : tuple of str
        Subsets of :data:`ALGORITHMS` and :data:`REGIMES`.
    local_steps : int
        K (3 in the paper).
    extra : tuple of float
        Besides the bisection's points, the rate is computed at these multiples of the paper's
        step (below 1) and of the largest stable step (above 1).
    tol : float
        Eigensolver tolerance of each mean-square rate (the relative residual of the
        Krylov-Schur eigenpair, :data:`EIGENSOLVER`).
    rtol : float
        Relative width of the bisection's final bracket.
    problem : QuadraticProblem, optional
        Default :func:`~fedtheory.problems.figure4_problem` (it carries the weighted regime's
        probabilities, ``participation_p``).
    workers : int, optional
        Forked processes computing the (regime, algorithm) settings at once (default: the
        cores this process may use, :func:`~fedtheory.validation.available_cores`; 1, a
        platform without ``fork`` or a daemon process: this process). The numbers do not
        depend on it.

    Returns
    -------
    StabilityMapResult
        ``regimes[regime]`` is a :class:`StabilityRegime` (its participation, the paper's step
        and a :class:`StabilityCurve` per algorithm); ``to_dict()`` is the sidecar's layout.
    """
    K = check_int("the number of local steps K", local_steps, minimum=1)
    tol = check_positive("tol", tol)
    rtol = check_positive("rtol", rtol)
    workers = available_cores() if workers is None else check_int("workers", workers, minimum=1)
    problem = figure4_problem() if problem is None else problem
    out: dict[str, Any] = {
        "problem": "003 Figure 4 least squares (N=16, d=50)",
        "local_steps": K,
        "tol": tol,
        "rtol": rtol,
        "regimes": {},
    }
    for regime in regimes:
        name, m, eta_p = REGIMES[regime]
        model = _model(name, m, problem)
        out["regimes"][regime] = StabilityRegime(model.describe(), eta_p, {})
    job = _Settings(problem, K, tuple(extra), tol, rtol)
    todo = [(regime, alg) for regime in regimes for alg in algorithms]
    for (regime, alg), cur in zip(todo, job.map(todo, workers), strict=True):
        out["regimes"][regime].curves[alg] = StabilityCurve(**cur)
    return StabilityMapResult(**out)


class _Settings:
    """The (regime, algorithm) settings of one stability map, computed by :meth:`run` here or
    by :meth:`map` in forked processes (the problem and models reach them through ``fork``)."""

    def __init__(self, problem: Any, K: int, extra: tuple, tol: float, rtol: float) -> None:
        self.problem, self.K, self.extra, self.tol, self.rtol = problem, K, extra, tol, rtol

    def run(self, regime: str, alg: str) -> dict[str, Any]:
        """One curve: the bisection's rates, the extra points and the largest stable step."""
        name, m, eta_p = REGIMES[regime]
        problem, K, tol = self.problem, self.K, self.tol
        model = _model(name, m, problem)
        t0 = time.perf_counter()
        warm = WarmStart()  # every eigen-solve of the curve starts from the previous eigenvector
        st = largest_stable_lr(
            problem,
            alg,
            model,
            lr_start=eta_p,
            local_steps=K,
            rtol=self.rtol,
            tol=tol,
            warm_start=warm,
            eigensolver=EIGENSOLVER,
        )
        pts = dict(st.evaluated)
        more = [f * eta_p for f in self.extra if f < 1] + [f * st.hi for f in self.extra if f > 1]
        for eta in more:
            r = exact_rates(
                problem,
                alg,
                model,
                lr=eta,
                local_steps=K,
                tol=tol,
                stationary=False,
                verify=False,
                warm_start=warm,
                eigensolver=EIGENSOLVER,
            )
            pts[eta] = r.mean_square_rate
        lrs = sorted(pts)
        return {
            "lr": lrs,
            "mean_square_rate": [pts[e] for e in lrs],
            "largest_stable_lr": st.lr,
            "bracket": [st.lo, st.hi],
            "rate_at_paper_lr": pts.get(eta_p),
            "seconds": time.perf_counter() - t0,
            "applications": warm.applications,
        }

    def map(self, todo: list, workers: int) -> list[dict[str, Any]]:
        """:meth:`run` of every setting, in order; in ``workers`` forked processes when more
        than one (the longest settings first: SCAFFOLD's operator costs twice FOCUS's, FedAvg's
        is dense and takes milliseconds)."""
        cost = {"scaffold": 0, "focus": 1}
        order = sorted(
            range(len(todo)), key=lambda i: (todo[i][0] == "full", cost.get(todo[i][1], 2))
        )
        return fork_all(lambda setting: self.run(*setting), todo, workers=workers, order=order)


def _panel_title(regime: str, participation: dict) -> str:
    """ "full participation", "uniform: 4 of 16", "arbitrary: weighted 4 of 16" (the model's
    name only where it says more than the regime's)."""
    model, n = participation.get("model"), participation.get("n_clients")
    m = participation.get("clients_per_round")
    if model == "full":
        return "full participation"
    who = f"{m} of {n}" if m is not None and n is not None else ""
    what = who if model == regime else f"{model} {who}".strip()
    return f"{regime}: {what}" if what else regime


def plot_stability_map(data: StabilityMapResult, path: Any = None) -> Any:
    """One panel per regime: mean-square rate against eta (log scale) per algorithm, the
    largest stable step (dotted vertical, per algorithm) and the paper's step (grey band).

    Returns the matplotlib Figure (saved to ``path`` when given)."""
    plt = pyplot()

    regs = data.regimes
    fig, axes = plt.subplots(1, len(regs), figsize=(5.2 * len(regs), 4.2), squeeze=False)
    colors = {"focus": "C0", "scaffold": "C2", "fedavg": "C3"}
    for ax, (regime, reg) in zip(axes[0], regs.items(), strict=True):
        ax.axvline(reg.paper_lr, color="0.6", lw=6, alpha=0.35, label="paper's step")
        ax.axhline(1.0, color="k", lw=0.8)
        for alg, cur in reg.curves.items():
            c = colors.get(alg, None)
            ax.plot(
                cur.lr,
                cur.mean_square_rate,
                marker="o",
                ms=3,
                color=c,
                label=rf"{display_name(alg)}: $\eta_{{\max}}$ = {cur.largest_stable_lr:.3g}",
            )
            ax.axvline(cur.largest_stable_lr, color=c, ls=":", lw=1.2)
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(plt.NullFormatter())  # labelled minor ticks collide
        ax.set_xlabel(r"step size $\eta$")
        ax.set_ylabel("exact mean-square rate per round")
        ax.set_title(_panel_title(regime, reg.participation))
        ax.set_ylim(0.0, 1.3)
        ax.legend(fontsize=7, loc="lower left")
    fig.suptitle(
        f"003 Figure 4 problem, K = {data.local_steps}: exact mean-square rate vs step size "
        "(dotted: largest stable step)"
    )
    fig.tight_layout()
    if path is not None:
        save_figure(fig, path, dpi=110, bbox_inches="tight")
    return fig
