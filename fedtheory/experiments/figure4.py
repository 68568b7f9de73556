"""003 Figure 4 re-run: FOCUS against FedAvg, SCAFFOLD, FedAU, MIFA and Scaffnew.

The problem is :func:`fedtheory.problems.figure4_problem` (the authors' own data); the
settings are the authors' notebook's (docs/algorithms.md section 5): K = 3 local steps, 500 rounds,
x_0 = 0, metric ||x - x*|| / ||x*||, step sizes 6e-4 (full participation), 1.5e-4 (uniform,
4 of 16) and 1e-4 (arbitrary: 4 of 16 weighted without replacement, p = (u + 0.01) normalized).
Every algorithm uses the same step size in a regime, as in the paper.

``baselines="paper"`` runs FedAU and MIFA as their own papers state them (Wang & Ji 2023
Algorithm 1: normalization by N; Gu et al. 2021: stored update x_i - x);
``baselines="notebook"`` as the FOCUS authors' notebook codes them (FedAU normalized by the sum
of the participants' weights; MIFA storing the difference of consecutive local end points).

Besides the curves, :func:`run_figure4` checks the closed forms: FedAvg's full-participation
floor against the fixed point of Li et al. (2019a), and, under random participation, FedAvg's
time- and seed-averaged iterate against the stationary mean (I - E[M_S])^{-1} E[c_S] with the
Monte Carlo standard error of the seed average.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from scipy import stats

from fedtheory.algorithms.registry import display_name
from fedtheory.analysis.closed_forms import fedavg_fixed_point, fedavg_stationary_mean
from fedtheory.analysis.exact import ExactRates, exact_rates
from fedtheory.experiments.result import ExperimentResult
from fedtheory.io import jsonable, pyplot, save_figure
from fedtheory.participation import make_participation
from fedtheory.problems.quadratic import figure4_problem
from fedtheory.simulation import simulate
from fedtheory.simulation.spec import build_participation

ALGORITHMS = ("focus", "fedavg", "scaffold", "fedau", "mifa", "scaffnew")
#: regime -> (participation name, clients per round, step size) as in the authors' notebook.
REGIMES = {
    "full": ("full", None, 6e-4),
    "uniform": ("uniform", 4, 1.5e-4),
    "arbitrary": ("weighted", 4, 1e-4),
}
BASELINE_OPTIONS = {
    "paper": {"fedau": {"normalize": "clients", "cutoff": 10}, "mifa": {"variant": "gu2021"}},
    "notebook": {
        "fedau": {"normalize": "weights", "cutoff": 10},
        "mifa": {"variant": "focus-notebook"},
    },
}


@dataclass(repr=False)
class Figure4Regime(ExperimentResult):
    """One panel of 003 Figure 4: one participation regime at its step size.

    Attributes
    ----------
    lr : float
    participation : str
    clients_per_round : int or None
    seeds : int
    curves : dict
        Algorithm -> median over seeds of ||x_r - x*|| / ||x*||, rounds 0..R (NaN from a
        seed's divergence on is left out of the median).
    curves_seed0 : dict
        Algorithm -> the same curve of seed 0.
    bands : dict
        Algorithm -> (25%, 75%) quantiles over seeds per round, the band drawn around the
        median (None under full participation: one deterministic run).
    final : dict
        Algorithm -> {"median", "min", "max", "diverged", "diverged_at", "rounds_to_1e-10"}.
    checks : dict
        The closed forms checked on the way (FOCUS's tracking residual; FedAvg's fixed point or
        stationary mean against the runs).
    """

    lr: float
    participation: str
    clients_per_round: int | None
    seeds: int
    curves: dict
    curves_seed0: dict
    final: dict
    checks: dict
    bands: dict


@dataclass(repr=False)
class Figure4Result(ExperimentResult):
    """:func:`run_figure4`'s result: the settings, ||x*|| and one :class:`Figure4Regime` per
    regime (``result.regimes["uniform"].final["focus"]["median"]``)."""

    config: dict
    x_star_norm: float
    participation_p: list
    regimes: dict

    def _summary(self) -> str:
        cells = []
        for name, reg in self.regimes.items():
            meds = ", ".join(f"{a} {v['median']:.1e}" for a, v in reg.final.items())
            cells.append(f"{name}: {meds}")
        return "final median error: " + "; ".join(cells)


def run_figure4(
    *,
    rounds: int = 500,
    seeds: int = 20,
    seed: int = 0,
    local_steps: int = 3,
    algorithms: tuple[str, ...] = ALGORITHMS,
    regimes: tuple[str, ...] = tuple(REGIMES),
    baselines: str = "paper",
    average_from: int = 200,
    backend: str | None = None,
) -> Figure4Result:
    """Run every algorithm in every regime on the Figure 4 problem (seeds batched).

    Parameters
    ----------
    rounds, seeds, seed, local_steps : int
        500 rounds and K = 3 in the paper; the seeds only matter under random participation.
    algorithms, regimes : tuple of str
    baselines : {"paper", "notebook"}
        How FedAU and MIFA are coded (see the module docstring).
    average_from : int
        First round of the time average compared with FedAvg's stationary mean.
    backend : "numpy" or "cupy", optional

    Returns
    -------
    Figure4Result
    """
    if baselines not in BASELINE_OPTIONS:
        raise ValueError(f"baselines must be 'paper' or 'notebook', got {baselines!r}")
    problem = figure4_problem()
    out: dict[str, Any] = {
        "config": {
            "rounds": rounds,
            "seeds": seeds,
            "seed": seed,
            "local_steps": local_steps,
            "algorithms": list(algorithms),
            "regimes": list(regimes),
            "baselines": baselines,
            "average_from": average_from,
            "step_sizes": {k: REGIMES[k][2] for k in regimes},
        },
        "x_star_norm": float(np.linalg.norm(problem.x_star)),
        "participation_p": problem.participation_p.tolist(),
        "regimes": {},
    }
    for regime in regimes:
        name, m, lr = REGIMES[regime]
        model = build_participation(name, problem, clients_per_round=m).model  # p: figure4's
        n_seeds = 1 if name == "full" else seeds
        reg: dict[str, Any] = {
            "lr": lr,
            "participation": name,
            "clients_per_round": m,
            "seeds": n_seeds,
            "curves": {},
            "curves_seed0": {},
            "final": {},
            "checks": {},
            "bands": {},
        }
        for alg in algorithms:
            opts = BASELINE_OPTIONS[baselines].get(alg, {})
            res = simulate(
                problem,
                alg,
                model,
                rounds=rounds,
                seeds=n_seeds,
                seed=seed,
                lr=lr,
                local_steps=local_steps,
                backend=backend,
                average_from=average_from if alg == "fedavg" else None,
                metrics="all",  # the sidecar's checks read FOCUS's tracking residual
                **opts,
            )
            err = res.error
            # median over seeds of the curves (a diverged seed is NaN from its divergence on)
            finite = np.isfinite(err).any(axis=0)
            med = np.full(err.shape[1], np.nan)
            med[finite] = np.nanmedian(err[:, finite], axis=0)
            reg["curves"][alg] = med
            reg["curves_seed0"][alg] = err[0]
            band = None
            if err.shape[0] > 1:
                band = np.full((2, err.shape[1]), np.nan)
                band[:, finite] = np.nanquantile(err[:, finite], (0.25, 0.75), axis=0)
            reg["bands"][alg] = band
            fin = err[:, -1]
            reg["final"][alg] = {
                "median": float(np.nanmedian(fin)) if np.isfinite(fin).any() else float("nan"),
                "min": float(np.nanmin(fin)) if np.isfinite(fin).any() else float("nan"),
                "max": float(np.nanmax(fin)) if np.isfinite(fin).any() else float("nan"),
                "diverged": int(res.diverged.sum()),
                "diverged_at": [int(v) for v in res.diverged_at if v >= 0][:5],
                "rounds_to_1e-10": _first_below(reg["curves"][alg], 1e-10),
            }
            if alg == "focus":
                reg["checks"]["focus_max_tracking_residual"] = float(
                    np.nanmax(res.tracking_residual)
                )
            if alg == "fedavg":
                reg["checks"].update(_fedavg_checks(problem, res, model, lr, local_steps, name))
        out["regimes"][regime] = Figure4Regime(**jsonable(reg))
    return Figure4Result(
        **jsonable({k: v for k, v in out.items() if k != "regimes"}), regimes=out["regimes"]
    )


def _fedavg_checks(problem, res, model, lr, K, name) -> dict[str, Any]:
    if name == "full":
        xb = fedavg_fixed_point(problem, lr, K)
        gap = np.linalg.norm(res.x_final[0] - xb) / np.linalg.norm(xb)
        return {
            "fedavg_fixed_point_rel_gap": float(gap),
            "fedavg_fixed_point_error": float(
                np.linalg.norm(xb - problem.x_star) / np.linalg.norm(problem.x_star)
            ),
        }
    sm = fedavg_stationary_mean(problem, lr, K, model)
    xm = res.x_mean  # (S, d) per-seed time averages over rounds average_from..R
    diff = xm.mean(axis=0) - sm.x
    se = xm.std(axis=0, ddof=1) / np.sqrt(xm.shape[0])
    z = diff / se
    return {
        "stationary_mean_method": sm.method,
        "stationary_mean_error": float(
            np.linalg.norm(sm.x - problem.x_star) / np.linalg.norm(problem.x_star)
        ),
        "time_seed_average_gap_norm": float(np.linalg.norm(diff)),
        "mc_stderr_norm": float(np.linalg.norm(se)),
        "max_abs_z": float(np.abs(z).max()),
        "chi2": float((z**2).sum()),
        "chi2_dof": int(z.size),
        # Bonferroni over the d coordinates at family-wise level 1%.
        "z_threshold": float(stats.norm.ppf(1 - 0.005 / z.size)),
        "within_stderr": bool(np.abs(z).max() <= stats.norm.ppf(1 - 0.005 / z.size)),
    }


def rounds_to_tolerance(
    regime: str,
    algorithms: tuple[str, ...] = ALGORITHMS,
    *,
    seed: int = 0,
    seed_ids: list[int] | None = None,
    tol: float = 1e-10,
    rounds: int = 500,
    local_steps: int = 3,
    baselines: str = "paper",
) -> dict[str, np.ndarray]:
    """Per seed, the first round at which ||x_r - x*|| / ||x*|| < ``tol``, per algorithm.

    The Figure 4 problem and ``regime``'s participation and step size (:data:`REGIMES`); every
    algorithm runs the same ``seed_ids`` of root ``seed``, so they see the same participation
    draws: the per-seed differences are paired. A seed that does not reach ``tol`` within
    ``rounds`` rounds (or diverges) gets ``rounds + 1``, a lower bound of its true value.
    Under full participation there is no randomness: one run, whatever ``seed_ids``.

    Returns
    -------
    dict of str to ndarray (seeds,) of int
    """
    if baselines not in BASELINE_OPTIONS:
        raise ValueError(f"baselines must be 'paper' or 'notebook', got {baselines!r}")
    problem = figure4_problem()
    name, m, lr = REGIMES[regime]
    model = build_participation(name, problem, clients_per_round=m).model  # p: figure4's
    ids = [0] if name == "full" else list(seed_ids if seed_ids is not None else [0])
    out = {}
    for alg in algorithms:
        res = simulate(
            problem,
            alg,
            model,
            rounds=rounds,
            seeds=len(ids),
            seed=seed,
            seed_ids=ids,
            lr=lr,
            local_steps=local_steps,
            metrics=["error"],
            **BASELINE_OPTIONS[baselines].get(alg, {}),
        )
        below = np.asarray(res.error) < tol  # NaN (diverged) compares False
        out[alg] = np.where(below.any(axis=1), below.argmax(axis=1), rounds + 1)
    return out


@lru_cache(maxsize=64)
def exact_figure4(
    algorithm: str,
    participation: str,
    lr: float,
    *,
    mean_square: str = "auto",
    local_steps: int = 3,
    baselines: str = "paper",
    tol: float = 1e-8,
) -> ExactRates:
    """Exact rates of ``algorithm`` on the Figure 4 problem (cached: deterministic, no seeds).

    ``participation``: ``full``, ``uniform`` (4 of 16), ``weighted`` (4 of 16, the paper's p;
    Figure 4's "arbitrary"), ``bernoulli`` (p_i = 4/16, empty rounds redrawn) or ``markov``
    (refused by the oracle: the chain-augmented state needs N <= 10). ``mean_square="skip"``
    gives the mean rate and the stationary mean in about a second; the mean-square rate of the
    850-dimensional FOCUS state takes tens of seconds (ARPACK, tolerance ``tol``). Raises what
    :func:`fedtheory.analysis.exact.exact_rates` raises (an algorithm that is not affine).
    """
    problem = figure4_problem()
    n = problem.n_clients
    model = {
        "full": lambda: make_participation("full", n),
        "uniform": lambda: make_participation("uniform", n, 4),
        "weighted": lambda: make_participation("weighted", n, 4, problem.participation_p),
        "bernoulli": lambda: make_participation("bernoulli", n, 4),
        "markov": lambda: make_participation("markov", n, 4),
    }[participation]()
    options = BASELINE_OPTIONS[baselines].get(algorithm, {})
    return exact_rates(
        problem,
        algorithm,
        model,
        lr=lr,
        local_steps=local_steps,
        mean_square=mean_square,
        tol=tol,
        **({"options": dict(options)} if options else {}),
    )


def _first_below(curve: np.ndarray, tol: float) -> int | None:
    """The first round at which ``curve`` is below ``tol`` (None if never)."""
    hit = np.flatnonzero(np.asarray(curve) < tol)
    return int(hit[0]) if hit.size else None


#: Line styles and markers of the curves, in the order of the algorithms: no curve hides another
#: where two coincide.
LINE_STYLES = ("-", "--", "-.", ":", (0, (5, 1.5, 1, 1.5, 1, 1.5)), (0, (8, 3)))
MARKERS = ("o", "s", "^", "v", "D", "x")


def plot_figure4(data: Figure4Result, path: Any = None) -> Any:
    """Draw the three panels (full, uniform, arbitrary) of :func:`run_figure4`'s result: per
    algorithm the median curve over seeds (its own colour, line style and markers, the markers
    of the algorithms at rounds apart, so that coinciding curves stay visible) and the band of
    the middle half of the seeds.

    Returns the matplotlib Figure; saves it to ``path`` when given.
    """
    plt = pyplot()
    regimes = list(data.regimes)
    titles = {
        "full": "full participation",
        "uniform": "uniform (4 of 16)",
        "arbitrary": "arbitrary (weighted 4 of 16)",
    }
    fig, axes = plt.subplots(1, len(regimes), figsize=(5.2 * len(regimes), 4.6), squeeze=False)
    for ax, regime in zip(axes[0], regimes, strict=True):
        reg = data.regimes[regime]
        n = len(reg.curves)
        for k, (alg, curve) in enumerate(reg.curves.items()):
            y = np.array([np.nan if v is None else v for v in curve], dtype=float)
            color = f"C{k}"
            # Curves that coincide (FedAvg and MIFA's floors under full participation, the
            # exact methods at 1e-15) stay apart: each its own line style and its own markers,
            # placed at rounds the others leave free.
            every = max(y.size // 6, 1)
            ax.semilogy(
                np.arange(y.size),
                y,
                label=display_name(alg),
                lw=1.6,
                color=color,
                ls=LINE_STYLES[k % len(LINE_STYLES)],
                marker=MARKERS[k % len(MARKERS)],
                ms=6,
                markevery=(k * every // n, every),
                mfc="none",
                mew=1.4,
            )
            band = reg.bands.get(alg)
            if band is not None:  # the middle half of the seeds
                lo, hi = (
                    np.array([np.nan if v is None else v for v in b], dtype=float) for b in band
                )
                ax.fill_between(np.arange(y.size), lo, hi, color=color, alpha=0.18, lw=0)
            fin = reg.final[alg]
            if fin["diverged"]:  # where the first seed diverged, and how many did
                r0 = min(fin["diverged_at"])
                ax.plot([r0], [1e1], marker="x", color=color, ms=8, mew=2, clip_on=False)
                ax.annotate(
                    f"{display_name(alg)}: {fin['diverged']} diverged",
                    (r0, 1e1),
                    textcoords="offset points",
                    xytext=(6, -4),
                    fontsize=7,
                    color=color,
                )
        ax.set_title(f"{titles.get(regime, regime)}, $\\eta$ = {reg.lr:g}")
        ax.set_xlabel("round $r$")
        ax.set_ylim(1e-16, 1e2)
        ax.grid(True, which="major", alpha=0.3)
    axes[0][0].set_ylabel(r"$\|x_r - x^\star\| \,/\, \|x^\star\|$")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9, frameon=False)
    cfg = data.config
    fig.suptitle(
        f"003 Figure 4 re-run: K = {cfg['local_steps']}, {cfg['rounds']} rounds, median of "
        f"{cfg['seeds']} seeds under random participation (band: the middle half), baselines as "
        f"in the {cfg['baselines']}s"
    )
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    if path is not None:
        save_figure(fig, path, dpi=110, bbox_inches="tight")
    return fig
