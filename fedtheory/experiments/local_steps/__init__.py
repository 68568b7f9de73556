"""The local-steps scaling study: how (1/R) sum_r E||grad f(x_r)||^2 scales with R, K, M and rho.

Claims A2-A4 (docs/claims.md): the rates of docs/algorithms.md Section 6, measured. For a grid of rounds
R, local steps K, participating clients M and gossip topologies, every algorithm runs with the
step sizes its theorem prescribes (user-set constants c, c_l), many seeds batched in one
simulation per grid point, on a stochastic non-convex (PL, Karimi et al. 2016) or convex
(quadratic) problem whose gradient noise sigma and heterogeneity sigma_g are set by the user:

each algorithm's schedule is declared where it is registered
(``fedtheory.algorithms.info(name).schedule``: FedAMSGrad's family c sqrt(K M) and
c_l / sqrt(R K^2); AFGA c N sqrt(K) / M (000 Cor. 4.7); CAFGA c n sqrt(K / m) (000 App. D,
(33)); HA-Fed c sqrt(K M) and c_l / sqrt(R K) (004 Cor. 5.11); without a theorem c and
c_l / sqrt(R K)).

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

Modules, one concern each: :mod:`~fedtheory.experiments.local_steps.theory` (schedules, stated
exponents, assumptions, the study problem), :mod:`~fedtheory.experiments.local_steps.study`
(the grid and the fits), :mod:`~fedtheory.experiments.local_steps.curves` (gradient curves for the
claims), :mod:`~fedtheory.experiments.local_steps.results` (result objects) and
:mod:`~fedtheory.experiments.local_steps.plots`.
"""

from __future__ import annotations

from fedtheory.experiments.local_steps.curves import (
    GradientCurves,
    gradient_curves,
    window_mean,
    window_min,
)
from fedtheory.experiments.local_steps.plots import (
    plot_local_steps,
    plot_rho_ablation,
)
from fedtheory.experiments.local_steps.results import (
    ExponentFit,
    LocalStepsStudy,
    StudyRun,
)
from fedtheory.experiments.local_steps.study import (
    fit_exponents,
    rho_trends,
    run_local_steps_study,
    run_rho_ablation,
)
from fedtheory.experiments.local_steps.theory import (
    assumption_violations,
    grid_conditions,
    horizon_violations,
    participation_for,
    rho_at,
    schedule_source,
    stated_exponents,
    step_sizes,
    study_problem,
)

__all__ = [
    "ExponentFit",
    "GradientCurves",
    "LocalStepsStudy",
    "StudyRun",
    "assumption_violations",
    "fit_exponents",
    "gradient_curves",
    "grid_conditions",
    "horizon_violations",
    "participation_for",
    "plot_local_steps",
    "plot_rho_ablation",
    "rho_at",
    "rho_trends",
    "run_local_steps_study",
    "run_rho_ablation",
    "schedule_source",
    "stated_exponents",
    "step_sizes",
    "study_problem",
    "window_mean",
    "window_min",
]
