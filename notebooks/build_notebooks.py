"""Write the teaching notebooks of fedtheory from the cell sources below (outputs stripped).

Run ``python notebooks/build_notebooks.py`` after editing a notebook's cells here; ``make test``
executes every notebook top to bottom (tests/test_notebooks.py).
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent


def cells(*items: str) -> list:
    """Cells from source strings: a string starting with "md:" is markdown, the rest code."""
    out = []
    for text in items:
        text = text.strip("\n")
        if text.startswith("md:"):
            out.append(new_markdown_cell(text[3:].lstrip()))
        else:
            out.append(new_code_cell(text))
    return out


NOTEBOOKS: dict[str, list] = {}

NOTEBOOKS["01_spectral_gaps.ipynb"] = cells(
    """md:
# Spectral gaps, topologies and theorem conditions

The adaptive-gossip papers (000, 004) measure a gossip matrix W by its *spectral gap*
rho = ||W - 11^T/n||_2 (000 Assumption 4.5). Their theorems only hold when rho is small enough:
AFGA needs rho <= M/(M+N), CAFGA rho_max <= m/(m+n), HA-Fed rho_max <= 1/(2 sqrt(n-m)).
This notebook computes rho for the papers' topologies and checks those conditions.""",
    """
import numpy as np
from fedtheory.graphs import mixing_matrix, spectral_gap, stochasticity_report
from fedtheory.graphs.closedforms import ring_gap""",
    """md:
## The papers' ring values (docs/reference-values.md)

A ring with weights 1/3: 0.995 (n = 50), 0.873 (n = 10), 0.805 (n = 8); the balanced complete
graph W = 11^T/n has rho = 0.""",
    """
for n, stated in [(50, 0.995), (10, 0.873), (8, 0.805)]:
    g = spectral_gap(mixing_matrix("ring", n))
    closed, _ = ring_gap(n)
    print(f"ring n={n:3d}: rho = {g.rho_norm:.4f} (paper {stated}, closed form {closed:.4f}), "
          f"1 - rho = {g.one_minus_rho:.3e}, method: {g.method}")
print("complete n=50: rho =", spectral_gap(mixing_matrix("complete", 50)).rho_norm)""",
    """md:
## 1 - rho is computed in its own right

For large rings 1 - rho is tiny: it is obtained from I - W, never as 1.0 minus a rounded rho.
The sparse path handles 10^5 nodes in a moment.""",
    """
big = spectral_gap(mixing_matrix("ring", 10**5))
print(f"ring n=1e5: 1 - rho = {big.one_minus_rho:.6e} (closed form {ring_gap(10**5)[1]:.6e})")""",
    """md:
## Two definitions of rho (claim G4)

||W - J||_2 and |lambda_2(W)| agree for symmetric W and can differ for non-symmetric doubly
stochastic W, e.g. the static exponential graph of Ying et al. (2021).""",
    """
for name in ["ring", "exponential"]:
    W = mixing_matrix(name, 6)
    g = spectral_gap(W, method="dense")
    print(f"{name:12s} symmetric={g.symmetric}: ||W-J||_2 = {g.rho_norm:.4f}, |lambda_2| = {g.rho_lambda2:.4f}")""",
    """md:
## Assumption 4.5 and the counter-example of 000 App. C

diag(W_2, I_{n-2}) is doubly stochastic, but its graph is disconnected, so null(I - W) is larger
than span(1) and no gossip theorem applies.""",
    """
W2 = np.full((2, 2), 0.5)
W = np.block([[W2, np.zeros((2, 4))], [np.zeros((4, 2)), np.eye(4)]])
print(stochasticity_report(W))""",
    """md:
## Which topologies meet the theorems' conditions in the papers' settings (claim G5)""",
    """
from fedtheory.graphs.conditions import PAPER_SETTINGS, evaluate_setting

for setting in PAPER_SETTINGS[1:2] + PAPER_SETTINGS[-1:]:
    print(setting.name, f"(N={setting.N}, M={setting.M}, C={setting.C}, n={setting.n}, m={setting.m})")
    for row in evaluate_setting(setting, ("complete", "exponential", "erdos-renyi", "ring"), draws=4):
        print(f"  {row.topology:12s} rho_N={row.rho_N:.3f} (AFGA bound {row.afga_bound:.3f}) "
              f"rho_max={row.rho_max:.3f} (CAFGA {row.cafga_bound:.3f}, HA-Fed {row.hafed_bound:.3f})")""",
    """md:
The rings the papers run by default are far above every threshold: their experiments lie outside
their theorems' assumptions (`fedtheory verify --only G5`).

## rho against n""",
    """
%matplotlib inline
from fedtheory.figures import FIGURES
fig, data = FIGURES["spectral_gap"].build({**FIGURES["spectral_gap"].config, "sizes": [4, 8, 16, 32, 64], "draws": 2})""",
)

NOTEBOOKS["02_participation_matrices.ipynb"] = cells(
    """md:
# Participation models and the stochastic-matrix view of FedAvg

003 (Sections 3-4, Appendices C-D) writes "who takes part in a round" as matrices: the pull
A_S and the average V_S are row stochastic, the collect (push) C_S is column stochastic.
FedAvg's expected round matrix has identical rows q^T: FedAvg drifts towards
argmin sum_i q_i f_i.""",
    """
%matplotlib inline
import numpy as np
from fedtheory.participation import make_participation
from fedtheory.participation.plot import plot_participation
from fedtheory.matrices import (collect, expected_matrices, left_eigenvector, model_assign,
                                model_average, round_matrix)""",
    """md:
## Models, inclusion probabilities and effective weights""",
    """
rng = np.random.RandomState(5)
p = rng.rand(16) + 0.01
p /= p.sum()  # the Figure 4 recipe of 003
models = {
    "uniform": make_participation("uniform", 16, 4),
    "weighted": make_participation("weighted", 16, 4, p=p),
    "bernoulli": make_participation("bernoulli", 16, 4),
}
for name, model in models.items():
    pi, q = model.inclusion_probabilities(), model.effective_weights("mean")
    print(f"{name:9s} pi[:4] = {np.round(pi.value[:4], 4)} ({pi.method}); q[:4] = {np.round(q.value[:4], 4)}")""",
    """
fig, data = plot_participation(models["weighted"], rounds=40, seed=0)""",
    """md:
## The matrices of one round

Index 0 is the server. For S = {1, 3} (clients 1 and 3 of N = 4) with weights 0.3 and 0.7:""",
    """
mask = np.array([True, False, True, False])
w = np.array([0.3, 0.0, 0.7, 0.0])
A, V, C = model_assign(mask, sparse=False), model_average(mask, w, sparse=False), collect(mask, sparse=False)
print("A_S =\\n", A, "\\nrow sums", A.sum(1))
print("V_S =\\n", V, "\\nrow sums", V.sum(1))
print("C_S =\\n", C, "\\ncolumn sums", C.sum(0))""",
    """md:
## A randomized check, run here

For every N, every participation set S and every non-negative weights summing to 1 on S, A_S
and V_S are row stochastic and C_S is column stochastic (claim P1). Here: 100 random draws of
(N, S, w); the test suite checks the same property with hypothesis.""",
    """
from fedtheory.graphs import check_column_stochastic, check_row_stochastic

rng = np.random.default_rng(0)
for _ in range(100):
    n = rng.integers(1, 13)
    mask = rng.random(n) < 0.5
    w = rng.uniform(0.01, 1.0, n) * mask
    w = w / w.sum() if mask.any() else w
    check_row_stochastic("A_S", model_assign(mask, sparse=False))  # raises naming the row
    check_row_stochastic("V_S", model_average(mask, w, sparse=False))
    check_column_stochastic("C_S", collect(mask, sparse=False))
print("100 random (S, w): A_S, V_S row stochastic and C_S column stochastic")""",
    """md:
## Expected round matrix: identical rows, q its left eigenvector (claim P3)""",
    """
E = expected_matrices(models["weighted"], "mean", method="exact")
W = np.asarray(E.W)
print("max spread between rows of E[W]:", np.abs(W - W[0]).max())
print("left eigenvector == row:", np.allclose(left_eigenvector(W), E.row))
print("q (exact):", np.round(E.q, 4))
mc = expected_matrices(models["weighted"], "mean", method="monte-carlo", rounds=100, seeds=50)
print("max |q_MC - q| / stderr:", np.max(np.abs(mc.q - E.q) / mc.q_stderr).round(2))""",
)

NOTEBOOKS["03_focus_vs_fedavg.ipynb"] = cells(
    """md:
# FOCUS against FedAvg: exact convergence and the FedAvg bias

On the least-squares problem of 003 Figure 4 (16 clients, the authors' own data), FedAvg under
non-uniform participation stalls at a floor set by the participation-weighted optimum x_q*
(003 Theorem 2), while FOCUS converges exactly (Theorem 1).""",
    """
%matplotlib inline
import matplotlib.pyplot as plt
import numpy as np
from fedtheory.analysis import fedavg_stationary_mean, weighted_optimum
from fedtheory.participation import make_participation
from fedtheory.problems import figure4_problem
from fedtheory.simulation import simulate

problem = figure4_problem()
model = make_participation("weighted", 16, 4, p=problem.participation_p)
runs = {alg: simulate(problem, alg, model, rounds=500, seeds=5, lr=1e-4, local_steps=3,
                      average_from=200 if alg == "fedavg" else None, metrics="all")
        for alg in ("focus", "fedavg")}
for alg, run in runs.items():
    plt.semilogy(np.median(run.error, axis=0), label=alg)
plt.xlabel("round"); plt.ylabel("||x - x*|| / ||x*||"); plt.legend(); plt.show()""",
    """md:
## Where FedAvg stops: closed forms

The time- and seed-averaged FedAvg iterate against the stationary mean
(I - E[M_S])^{-1} E[c_S], and the eta -> 0 limit x_q*.""",
    """
x_star = problem.x_star
sm = fedavg_stationary_mean(problem, 1e-4, 3, model)
x_avg = runs["fedavg"].x_mean.mean(axis=0)
q = model.effective_weights("mean").value
rel = lambda x: np.linalg.norm(x - x_star) / np.linalg.norm(x_star)
print(f"FedAvg time/seed average : {rel(x_avg):.3e} from x*")
print(f"stationary mean (closed) : {rel(sm.x):.3e} from x*  ({sm.method})")
print(f"x_q* (eta -> 0 limit)    : {rel(weighted_optimum(problem, q)):.3e} from x*")
print(f"FOCUS final error (max over seeds): {runs['focus'].final().max():.1e}")
print(f"FOCUS tracking residual ||y - sum g_prev|| (max): {np.nanmax(runs['focus'].tracking_residual):.1e}")""",
    """md:
## Figure 4, three panels (the simulator's `run_figure4` / `plot_figure4`)

Each panel is one participation regime of 003 Figure 4 at the paper's step size for it: full
participation, 4 of 16 clients drawn uniformly, 4 of 16 drawn by the paper's weights
("arbitrary"). Every algorithm runs the same step size and the same participation draws; a
curve is the median of ||x_r - x*|| / ||x*|| over the seeds (the band: their middle half),
each algorithm with its own line style and markers, so that curves that coincide (FedAvg's and
MIFA's floors under full participation, the exact methods at machine precision) stay visible.
Methods with a floor flatten out above 1e-10; the others fall to machine precision. Which
algorithm leads in each panel is measured by the next cell from the curves drawn, not assumed
(003 states that FOCUS "outperforms the other algorithms in all scenarios").""",
    """
from fedtheory.experiments.figure4 import plot_figure4, run_figure4

data = run_figure4(rounds=300, seeds=3)
fig = plot_figure4(data)""",
    """
# Who leads each panel: the first round at which the median curve falls below 1e-10, and the
# final median error of the algorithms that never get there.
from fedtheory.algorithms.registry import display_name

for regime, reg in data.regimes.items():
    reached = {a: f["rounds_to_1e-10"] for a, f in reg.final.items()
               if f["rounds_to_1e-10"] is not None}
    order = sorted(reached, key=reached.get)
    lead = ", ".join(f"{display_name(a)} {reached[a]}" for a in order)
    never = ", ".join(
        f"{display_name(a)} " + (f"{f['median']:.1e}" if f["median"] is not None
                                 else f"(all {f['diverged']} seeds diverged)")
        for a, f in reg.final.items() if f["rounds_to_1e-10"] is None)
    first = display_name(order[0]) if order else "none"
    print(f"{regime}: first below 1e-10: {first}; rounds to 1e-10: {lead or '-'}; "
          f"never (final median): {never or '-'}")""",
    """md:
The same comparisons with paired seeds and a verdict, on 500 rounds: `fedtheory verify --only
C1,C2,F2` (C2 compares FOCUS with each baseline in each regime, paired over seeds, and says
whether FOCUS is first).""",
)


NOTEBOOKS["04_local_steps_dilemma.ipynb"] = cells(
    """md:
# The dilemma of local steps

Under partial participation FedAMSGrad's bound on (1/R) sum_r E||grad f(x_r)||^2 is
O(sqrt(K) / sqrt(R M)): more local steps K make it *worse* (004 Sec. 3, Wang et al. 2022b).
AFGA (000 Cor. 4.7) and HA-Fed (004 Cor. 5.11) state O(1/sqrt(R K M)) instead, but only when
the gossip graph's spectral gap rho is small enough. This notebook measures the exponents with
the study tool, each algorithm on the step-size schedule its theorem prescribes.""",
    """
%matplotlib inline
from IPython.display import Image, display
from fedtheory.experiments.local_steps import (plot_local_steps, run_local_steps_study, run_rho_ablation,
                                      stated_exponents, step_sizes)

for alg in ("fedamsgrad", "afga"):
    print(alg, "stated exponents (K, R, M):", stated_exponents(alg, partial=True))
    for K in (1, 4, 16):
        eta, eta_l = step_sizes(alg, R=100, K=K, M=5, N=50, c=0.01, c_l=0.5)
        print(f"   K={K:2d}: eta = {eta:.3g}, eta_l = {eta_l:.3g}")""",
    """md:
## A small study in 000's Setting 2 (N = 50, M = 5)

Seeds are batched: every grid point is one simulation. Grid points outside a theorem's
assumptions (the ring's rho = 0.995 > M/(M+N)) are flagged, not counted as failures.""",
    """
study = run_local_steps_study(("fedamsgrad", "afga"), Ks=(1, 2, 4, 8), Rs=(100,), Ms=(5,),
                              topologies=("complete", "ring"), seeds=5, progress=False)
print(study.table())""",
    """
path = plot_local_steps(study, "local_steps_small.png")
display(Image(filename=str(path)))""",
    """md:
## Does a smaller rho converge faster? (claim A4)""",
    """
ablation = run_rho_ablation(("afga",), topologies=("complete", "random", "ring"), K=4, R=100,
                            seeds=5, progress=False)
for run in sorted(ablation.runs, key=lambda r: r.rho):
    print(f"{run.topology:9s} rho = {run.rho:.3f}: metric {run.mean():.3f}")
print(ablation.rho_trends)""",
    """md:
## Communication time (000 Table 7)

With 1.8 s client-to-client and 18 s client-to-server transfers, the gossip steps of AFGA and
CAFGA cost extra time per round; the model is stated in `fedtheory.analysis.comm_time`.""",
    """
from fedtheory.analysis.comm_time import CommTimeModel, implied_round_time

model = CommTimeModel()
for alg in ("fedamsgrad", "afga", "cafga"):
    print(f"{alg:10s} {model.round_time(alg, 24):6.1f} s per round (K = 24)")
print("000 Table 7 + Table 5 imply", round(implied_round_time(223.48, 302)), "s per AFGA round")""",
    """md:
The same measurements as claims: `fedtheory verify --only A2,A3,A4,A6`.""",
)


NOTEBOOKS["05_sweeps.ipynb"] = cells(
    """md:
# Sweeps: FOCUS, SCAFFOLD and FedAvg over step size x local steps

A study is a grid. `fedtheory.sweep` runs every grid point x block of seeds as a task on Dask
(here a local cluster of two worker processes, one BLAS thread each) and writes each finished
task into a Zarr store that xarray opens. Running the same sweep on the same store again skips
what is done, so an interrupted sweep loses at most the tasks that were running.

The setting is 003 Figure 4's least-squares problem (16 clients, the authors' data) under
non-uniform participation: 4 clients per round drawn with the paper's probabilities p.""",
    """
%matplotlib inline
import json
import numpy as np
import xarray as xr
import fedtheory.sweep
from fedtheory.problems import figure4_problem

np.save("p.npy", figure4_problem().participation_p)
spec = {
    "problem": "figure4",
    "participation": "weighted",
    "clients_per_round": 4,
    "probabilities": "p.npy",
    "algorithm": ["focus", "scaffold", "fedavg"],   # lists are swept
    "lr": [1e-4, 3e-4, 1e-3],
    "local_steps": [1, 2, 4],
    "rounds": 300,
    "seeds": 4,
}
summary = fedtheory.sweep.run(spec, "figure4_sweep.zarr", workers=2, progress=False)
print(json.dumps({k: summary[k] for k in ("tasks_total", "tasks_skipped", "tasks_run", "dims")}))""",
    """md:
## The store is an xarray Dataset

`error` has one dimension per swept key plus `seed` and `round`; the normalized spec and the
fedtheory version are in the attributes.""",
    """
ds = xr.open_zarr("figure4_sweep.zarr")
print(ds)
print("complete:", bool(ds.complete.all().values), "| diverged seeds:", int(ds.diverged.sum()))""",
    """md:
## Final error against the step size, one panel per algorithm

FOCUS and SCAFFOLD are still converging to x* itself after 300 rounds (errors from 1e-4 down
to 1e-12, falling); FedAvg stalls near 1e-3, the floor set by the participation-weighted optimum
(003 Theorem 2), and neither a smaller step nor fewer local steps removes it.""",
    """
final = ds.error.isel(round=-1).median("seed")
grid = final.plot.line(x="lr", hue="local_steps", col="algorithm", xscale="log", yscale="log")""",
    """
curves = ds.error.median("seed").sel(lr=3e-4, local_steps=2)
lines = curves.plot.line(x="round", hue="algorithm", yscale="log")""",
    """md:
## Resume

The same call on the same store finds every task complete and runs nothing. A store made from a
different spec is refused (its hash is in the attributes).""",
    """
again = fedtheory.sweep.run(spec, "figure4_sweep.zarr", workers=2, progress=False)
print(again["tasks_skipped"], "skipped,", again["tasks_run"], "run")
try:
    fedtheory.sweep.run({**spec, "rounds": 400}, "figure4_sweep.zarr", workers=2)
except fedtheory.FedTheoryError as exc:
    print("refused:", exc)""",
    """md:
## The same sweep on a Slurm cluster

The command line takes the spec as TOML (the same keys):
`fedtheory sweep spec.toml --store DIR --workers 8`. On a cluster, start Dask workers as Slurm
jobs with `dask_jobqueue.SLURMCluster` (`pip install dask-jobqueue`) and hand its scheduler to
the sweep; the driver alone writes the store, the workers read the problem and probability files
at their paths (a shared file system):

```python
from dask_jobqueue import SLURMCluster

cluster = SLURMCluster(cores=1, processes=1, memory="4GB", walltime="02:00:00",
                       job_script_prologue=["export OMP_NUM_THREADS=1",
                                            "export OPENBLAS_NUM_THREADS=1",
                                            "export MKL_NUM_THREADS=1"])
cluster.scale(jobs=32)
fedtheory.sweep.run("spec.toml", "/scratch/me/figure4_sweep.zarr",
                    scheduler=cluster.scheduler_address)
```

or `fedtheory sweep spec.toml --store DIR --scheduler tcp://HOST:8786`.""",
)

NOTEBOOKS["06_exact_rates.ipynb"] = cells(
    """md:
# Exact rates: what "linear convergence" means, as a number

On quadratics f_i(x) = 1/2 x^T H_i x - h_i^T x, a round of FedAvg, SCAFFOLD, FOCUS (and more) is
an affine map of the algorithm's state given who participates: z <- M_S z + c_S.
`fedtheory.analysis.exact` reads M_S off each algorithm's own round and computes exactly

* the mean rate rho(E[M_S]) and the **mean-square rate** rho(P -> E[M_S P M_S^T]): the per-round
  factor of E||x_r - x*||^2;
* the fixed point shared by every M_S (FOCUS, SCAFFOLD: x*), or FedAvg's stationary mean;
* the **floor** lim E||x_r - x*||^2 of FedAvg under random participation.

None of the three papers states a rate that can be evaluated as a number (docs/stated-bounds.md):
these are the problem's exact rates, to compare measurements with.""",
    """
%matplotlib inline
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import fedtheory
from fedtheory.analysis.exact import exact_mse_curve, exact_rates, problem_constants
from fedtheory.participation import make_participation
from fedtheory.problems import figure4_problem, random_quadratic
from fedtheory.simulation import simulate""",
    """md:
## Exact against Monte Carlo on a small problem

FOCUS on 6 heterogeneous quadratics, 2 of 6 clients per round: the exact transient
E||x_r - x*||^2 against the mean over 1000 simulated seeds, and the exact mean-square rate against
the slope of the simulated curve. The mean rate squared (what E[x_r] alone predicts) is too
optimistic.""",
    """
prob = random_quadratic(6, 3, condition=5.0, seed=1)
model = make_participation("uniform", 6, 2)
res = exact_rates(prob, "focus", model, lr=0.08, local_steps=2)
curve = exact_mse_curve(prob, "focus", model, rounds=100, lr=0.08, local_steps=2)
sim = simulate(prob, "focus", model, rounds=100, seeds=1000, lr=0.08, local_steps=2,
               metrics=("error",))
mc = (sim.error**2).mean(axis=0) * (prob.x_star @ prob.x_star)
r = np.arange(20, 81)
fit = np.exp(np.polyfit(r, np.log(mc[20:81]), 1)[0])
print(f"exact mean-square rate {res.mean_square_rate:.6f}   Monte Carlo slope {fit:.6f}   "
      f"mean rate^2 {res.mean_rate**2:.6f}")
print(f"fixed point = x*: {res.exact};  state dimension {res.state_dim} ({res.coordinates})")
plt.semilogy(curve, label="exact E||x_r - x*||^2")
plt.semilogy(mc, "--", label="mean over 1000 seeds")
plt.xlabel("round"); plt.legend(); plt.show()""",
    """md:
## The 003 Figure 4 problem at the paper's step sizes

FOCUS with full participation (cheap: the draw is deterministic, so the mean-square rate is the
mean rate squared) and FedAvg in every regime (its state is x alone). The partial-participation
rates of FOCUS and SCAFFOLD need hundreds of applications of an operator on 361,675 unknowns
(half a minute each): they are read from the
stability map's data (`python -m fedtheory.figures stability_map`) and printed in full by
`benchmarks/bench_exact.py`.""",
    """
f4 = figure4_problem()
const = problem_constants(f4)
print(f"mu_i in [{const.mu_min:.1f}, {const.mu_i.max():.1f}], L_i in [{const.L_i.min():.1f}, "
      f"{const.L_max:.1f}]")
regimes = {"full": (make_participation("full", 16), 6e-4),
           "uniform": (make_participation("uniform", 16, 4), 1.5e-4),
           "arbitrary": (make_participation("weighted", 16, 4, p=f4.participation_p), 1e-4)}
for alg in ("focus", "fedavg"):
    r = exact_rates(f4, alg, regimes["full"][0], lr=6e-4, local_steps=3)
    print(f"full      {alg:9s} mean rate {r.mean_rate:.6f}  mean-square {r.mean_square_rate:.6f}"
          f"  fixed point = x*: {r.exact}")
for name in ("uniform", "arbitrary"):
    model, eta = regimes[name]
    r = exact_rates(f4, "fedavg", model, lr=eta, local_steps=3)
    print(f"{name:9s} fedavg    mean rate {r.mean_rate:.6f}  mean-square {r.mean_square_rate:.6f}"
          f"  floor E||x-x*||^2/||x*||^2 = {r.stationary_mse_relative:.3e}")
side = Path(fedtheory.__file__).resolve().parents[1] / "figures" / "stability_map.json"
if side.exists():
    data = json.loads(side.read_text())["data"]
    for name, reg in data["regimes"].items():
        for alg in ("focus", "scaffold", "fedavg"):
            print(f"{name:9s} {alg:9s} mean-square rate at the paper's step "
                  f"{reg[alg]['rate_at_paper_lr']:.6f}  (stability map data)")""",
    """md:
## FedAvg's floor against the step size

Weighted sampling of 3 of 10 heterogeneous quadratic clients, K = 2: the exact floor
lim E||x_r - x*||^2 (bias^2 + variance) against the simulated floor (mean of the last half of each
run's squared error over rounds and seeds). The old closed-form line, the distance of the
stationary *mean* from x*, is only the bias part.""",
    """
qp = random_quadratic(10, 5, condition=10, heterogeneity=1.0, seed=0)
p10 = np.random.RandomState(5).rand(10) + 0.01
w = make_participation("weighted", 10, 3, p=p10 / p10.sum())
etas = [0.3, 0.1, 0.05]
exact, bias, meas = [], [], []
for eta in etas:
    r = exact_rates(qp, "fedavg", w, lr=eta, local_steps=2)
    exact.append(r.stationary_mse); bias.append(r.stationary_bias2)
    R = int(np.ceil(20 / (eta * qp.mu * 2)))
    s = simulate(qp, "fedavg", w, rounds=R, seeds=8, lr=eta, local_steps=2,
                 metrics=("error",), record_every=max(1, R // 200))
    e2 = s.error**2 * (qp.x_star @ qp.x_star)
    meas.append(np.nanmean(e2[:, R // 2:]))
plt.loglog(etas, exact, "o-", label="exact floor lim E||x - x*||^2")
plt.loglog(etas, bias, "s:", label="||stationary mean - x*||^2 (bias only)")
plt.loglog(etas, meas, "x--", label="simulated (8 seeds, time average)")
plt.xlabel("step size eta"); plt.legend(); plt.show()""",
    """md:
## The stability map

Exact mean-square rate against the step size in the three Figure 4 regimes, the largest stable
step found by bisection (dotted) and the paper's step (grey).""",
    """
from IPython.display import Image, display
png = side.with_suffix(".png")
if png.exists():
    display(Image(filename=str(png)))
else:
    print("generate it with: python -m fedtheory.figures stability_map")""",
    """md:
From the command line: `fedtheory rate --problem figure4 --algorithm focus --participation
uniform --clients-per-round 4 --local-steps 3 --lr 1.5e-4`.""",
)


NOTEBOOKS["07_checking_bounds.ipynb"] = cells(
    """md:
# Checking a theorem's bound

A paper states a rate; its text here has lost the formula (docs/stated-bounds.md), but a reader
holding the PDF can type the bound in. `fedtheory.bounds` evaluates it against the exact oracle
on one instance, searches an instance class for the instance that breaks it, and, for an O(.)
shape with a free constant, reports the constant the shape implies (docs/bounds.md).""",
    """
%matplotlib inline
import matplotlib.pyplot as plt
import numpy as np

from fedtheory.analysis.exact import exact_mse_curve
from fedtheory.bounds import check, check_classes, implied_over, load_spec, paper_bounds
from fedtheory.errors import MissingExtraError""",
    """md:
## One instance: FOCUS on the 003 Figure 4 problem

Full participation at the paper's step 6e-4, K = 3, against the shape 1 - c eta mu_f K N: the
stated value at the implied constant, the exact mean-square rate (0.3598), the rate measured by
simulation, and the rounds to epsilon = 1e-6 under each.""",
    """
f4 = check({"algorithm": "focus", "local_steps": 3, "lr": 6e-4, "quantity": "mean_square_rate",
            "bound": "1 - c*eta*mu_f*K*N", "constant": "c", "problem": "figure4", "seeds": 1})
print(f4.table())
print(f4.sentence())
print("rounds to 1e-6:", f4.named["rounds_to_epsilon"])""",
    """md:
## A class: gradient descent, a true tight bound and a false one

K = 1 FedAvg with full participation is gradient descent: its mean-square factor is
max |1 - eta lambda|^2, so (1 - eta mu_f)^2 at eta = 1/L_f is tight on every instance, and
(1 - eta mu_f)^3 is false. The search finds the breaker and saves it.""",
    """
gd = {"algorithm": "fedavg", "clients": 4, "lr": "1/L_f", "quantity": "mean_square_rate",
      "condition": "eta <= 1/L_f", "class": {"dim": 3, "L": 10.0, "mu": 1.0}}
true = check({**gd, "bound": "(1 - eta*mu_f)**2"}, search=60)
false = check({**gd, "bound": "(1 - eta*mu_f)**3"}, search=60)
for name, r in (("(1 - eta mu_f)^2", true), ("(1 - eta mu_f)^3", false)):
    st = [e.stated for e in r.instances]
    ex = [e.exact for e in r.instances]
    plt.scatter(st, ex, s=10, label=f"{name}: violated {r.violated}")
lim = [0, 1]
plt.plot(lim, lim, "k:", lw=0.8)
plt.xlabel("stated factor"); plt.ylabel("exact mean-square factor"); plt.legend(); plt.show()
print(false.sentence())""",
    """md:
## A planted false bound under random participation, and its counterexample

FOCUS under Bernoulli participation against 1 - eta mu_f K N / 2, a rate that ignores p_min (it
holds under full participation on this class). The breaker has a rarely sampled client: its exact
E||x_r - x*||^2 falls far more slowly than the stated rate promises.""",
    """
spec = {"algorithm": "focus", "participation": "bernoulli", "clients": [3, 4, 6],
        "local_steps": [1, 2, 3], "lr": "1/(4*K*N*L)", "quantity": "mean_square_rate",
        "bound": "1 - eta*mu_f*K*N/2",
        "class": {"dim": [2, 3], "L": 10.0, "mu": 1.0, "p_range": [0.05, 1.0]}}
res = check(spec, search=100)
w = res.worst
inst = w.draw.instance(res.spec)
print(res.sentence(), "p_min =", round(w.constants["p_min"], 3))
R = 300
curve = exact_mse_curve(inst.problem, "focus", inst.participation(res.spec), rounds=R,
                        lr=w.eta, local_steps=inst.local_steps)
plt.semilogy(curve / curve[0], label="exact E||x_r - x*||^2 / ||x*||^2")
plt.semilogy(w.stated ** np.arange(R + 1), "--", label="stated rate^r")
plt.xlabel("round"); plt.legend(); plt.show()""",
    """md:
## Implied constants (the C1/rate row of the catalog)

For the linear-rate shapes a theorem of this kind takes, the largest constant c that bounds every
instance of the class around Figure 4 (the shipped `focus-thm1-rate.toml`): a paper's constant
above it is contradicted by the saved instance.""",
    """
shipped = load_spec(paper_bounds()["focus-thm1-rate"])
cls = check(shipped, search=30)
shapes = ["1 - c*eta*mu", "1 - c*eta*mu*K", "1 - c*eta*mu*K*p_min", "1 - c*eta*mu_f*K*N"]
for shape in shapes:
    imp = implied_over({**shipped.to_dict(), "bound": shape}, cls.instances)
    print(f"{shape:24s} largest c = {imp['value']:.4g}  (at {imp['argmax'].label})")
cs = [e.c for e in cls.instances]
plt.hist(cs, bins=20); plt.xlabel("c_i of 1 - c eta mu K p_min per instance"); plt.show()""",
    """md:
## Are quadratics the worst case?

The theorems hold for *every* L-smooth, mu-strongly convex client, while the search above draws
quadratic clients only: a bound that holds there may still be false. `check_classes(spec,
functions="both")` (`fedtheory bound SPEC --class both`) adds the worst case over the whole
class, a performance-estimation program per setting (Taylor, Hendrickx and Glineur 2017; the
optional extra `fedtheory[pep]`, docs/bounds.md). FedAvg's floor, N = 2, K = 2, eta = 0.05,
mu = 1, L = 10, zeta2 = 1, against a bound 10% above the exact worst quadratic floor 0.0017308
(docs/bounds.md): it holds on every quadratic drawn, and over the whole class it is violated.""",
    """
floor = {"algorithm": "fedavg", "clients": 2, "local_steps": 2, "lr": 0.05,
         "quantity": "stationary_mse", "bound": "1.1 * 0.0017308",
         "class": {"dim": [1, 2], "L": 10.0, "mu": 1.0, "zeta2": 1.0}}
try:
    res = check_classes(floor, functions="both", search=100, seed=0)
except MissingExtraError as exc:  # pip install 'fedtheory[pep]'
    res = None
    print(exc)
if res is not None:
    (row,) = res.by_setting()
    print(f"worst floor: over the quadratics drawn {row['quadratic']:.6g}, over every smooth "
          f"strongly convex client {row['general']:.6g} ({row['ratio']:.2f} times)")
    print(res.quadratic.sentence())
    print(res.general.sentence())
    plt.plot([e.exact for e in res.quadratic.instances], ".", ms=4, label="quadratic clients drawn")
    plt.axhline(0.0017308, color="C0", ls="--", lw=0.8, label="exact worst quadratic")
    plt.axhline(row["general"], color="C3", label="worst smooth strongly convex clients")
    plt.axhline(res.quadratic.instances[0].stated, color="k", ls=":", label="the bound")
    plt.xlabel("instance"); plt.ylabel("lim ||x_r - x*||^2"); plt.legend(loc="center right")
    plt.show()""",
    """md:
Which class is the worst case depends on the algorithm and the quantity. FOCUS under full
participation with a common minimizer: the general class's factor estimate W(5)/W(4) equals
the worst quadratic mean-square rate, so here quadratics suffice.""",
    """
rate = {"algorithm": "focus", "clients": 2, "local_steps": 2, "lr": 0.05, "rounds": 5,
        "quantity": "mean_square_rate", "bound": "0.81",
        "class": {"dim": 1, "L": 10.0, "mu": 1.0, "zeta2": 0.0}}
try:
    both = check_classes(rate, functions="both", search=24, seed=0, cross_check=False)
except MissingExtraError as exc:
    both = None
    print(exc)
if both is not None:
    (row,) = both.by_setting()
    print(f"FOCUS: worst quadratic factor {row['quadratic']:.8f}, over the class "
          f"W(5)/W(4) = {row['general']:.8f} (ratio {row['ratio']:.7f})")""",
    """md:
The papers' files are written for sampled participation, out of performance estimation's reach
(a sampled floor is the mean of a stationary distribution; a sampled rate needs C(N, M)^R
paths): `fedtheory bound fedavg-thm2-floor --class both` says so in one line. Their
full-participation versions, `fedavg-thm2-floor-full` and `focus-thm1-rate-full`, are solved
on both classes, and the catalog's C1/rate and F2/floor rows quote both implied constants: the
FedAvg floor over the class is 1.7 to 2.9 times the worst quadratic floor found at each
setting, FOCUS's factor the same (docs/bounds.md).""",
    """md:
From the command line: `fedtheory bound focus-thm1-rate --problem figure4`,
`fedtheory bound my-theorem.toml --search 200 --json out.json` with a spec of your own, or
`fedtheory bound my-theorem.toml --class both` for the theorem's whole class.""",
)


NOTEBOOKS["08_your_own_algorithm.ipynb"] = cells(
    """md:
# Your own algorithm: write it, check it, get its exact rate and a bound

A federated algorithm in fedtheory is a pair of pure functions on stacked state,
`init(problem, x0) -> state` and `round(state, problem, draw, rng) -> state`, registered with what
it reads (docs/own-algorithm.md). This notebook writes FedNova (normalized averaging, Wang et al.
2020) from scratch, checks its batched round against a per-client loop, simulates it, compares
its exact mean-square error with Monte Carlo, shows what the exact oracle says about a version
whose participation weights enter squared, and checks a bound.""",
    """
%matplotlib inline
import warnings
from pathlib import Path
from typing import Any, NamedTuple

import matplotlib.pyplot as plt
import numpy as np

import fedtheory
from fedtheory.algorithms import (Algorithm, Option, RoundDraw, field_layout, make_algorithm,
                                  register, resolve_algorithm)
from fedtheory.analysis.exact import NotAffineError, exact_mse_curve, exact_rates
from fedtheory.backend import get_namespace
from fedtheory.bounds import check
from fedtheory.participation import make_participation
from fedtheory.problems import random_quadratic
from fedtheory.simulation import simulate""",
    """md:
## 1. The round, on every seed and client at once

Client i runs tau_i = 1 + (i mod K) local steps; FedNova divides each change by tau_i and
rescales by tau_eff = mean_i tau_i. Clients are the rows of `X (S, N, d)`, seeds the first axis;
`draw.weights` are the aggregation weights (zero off the participants). The declaration says
what it reads (`uses`, `options`) and, for the exact oracle, that the round is affine with the
server model as its only coordinates (`field_layout(("x",))`).""",
    """
class NovaState(NamedTuple):
    x: Any  # (S, d) the server model


def my_fednova(config):
    lr, eta, normalized = config.lr, config.global_lr, config.option("normalized")

    def round_(state, problem, draw, rng=None):
        xp = get_namespace(state.x)
        N = problem.n_clients
        tau = 1 + np.arange(N) % config.local_steps
        X = xp.repeat(state.x[:, None, :], N, axis=1)
        for k in range(int(tau.max())):
            X = X - lr * (k < tau)[None, :, None] * problem.grads(X, rng)
        change = state.x[:, None, :] - X
        if normalized:
            change = change * (tau.mean() / tau)[None, :, None]
        return NovaState(x=state.x - eta * xp.einsum("sn,snd->sd", draw.weights, change))

    return Algorithm("my-fednova", lambda problem, x0: NovaState(x0), round_, config)


declare = register(
    "my-fednova", "FedNova written in a notebook", display="MyFedNova", uses=("global_lr",),
    options=(Option("normalized", True, bool, "normalized averaging"),),
    affine=True, exact_layout=field_layout(("x",)),
)
declare(my_fednova)
print(resolve_algorithm("MyFedNova"))""",
    """md:
Running that cell again (as one does in a notebook) registers the name again from the same
module, `__main__`: the new definition replaces the old one, with a warning. A name of
fedtheory's own (`fedavg`) would be refused.""",
    """
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    declare(my_fednova)  # what re-running the cell above does
print(caught[0].message)
try:
    register("fedavg", "a clash", display="x", not_exact="a probe")(my_fednova)
except fedtheory.errors.FedTheoryError as exc:
    print(exc)""",
    """md:
## 2. Check it against a per-client loop

The same round written client by client in plain Python, on the quadratic f_i = 1/2 x^T H_i x -
h_i^T x, at random states, participants and weights.""",
    """
def loop_round(problem, x, mask, w, lr, K, eta=1.0):
    tau = 1 + np.arange(problem.n_clients) % K
    total = np.zeros_like(x)
    for i in np.flatnonzero(mask):
        xi = x.copy()
        for _ in range(tau[i]):
            xi = xi - lr * (problem.H[i] @ xi - problem.h[i])
        total += w[i] * tau.mean() * (x - xi) / tau[i]
    return x - eta * total


prob = random_quadratic(5, 3, condition=5.0, seed=2)
rng = np.random.default_rng(0)
alg = make_algorithm("my-fednova", problem=prob, lr=0.08, local_steps=3)
x = rng.standard_normal((6, 3))
mask = rng.random((6, 5)) < 0.5
w = rng.random((6, 5)) * mask
batched = alg.round(alg.init(prob, x), prob, RoundDraw(mask=mask, weights=w), None).x
loop = np.array([loop_round(prob, x[s], mask[s], w[s], 0.08, 3) for s in range(6)])
print(f"largest difference, batched against the loop: {np.abs(batched - loop).max():.1e}")""",
    """md:
## 3. Exact mean-square error against Monte Carlo

Uniform participation, 2 of 5 clients per round: the exact E||x_r - x*||^2 of the oracle (read
off `round` itself, with the exact law of the draw) against the mean over 4000 simulated seeds.
Both settle on a floor: the normalized version's is the lower one (FedAvg with the same unequal
steps weighs client i by tau_i: the objective inconsistency FedNova removes).""",
    """
model = make_participation("uniform", 5, 2)
kw = dict(lr=0.08, local_steps=3)
R = 60
for normalized, style in ((True, "-"), (False, ":")):
    res = exact_rates(prob, "my-fednova", model, options={"normalized": normalized}, **kw)
    curve = exact_mse_curve(prob, "my-fednova", model, rounds=R,
                            options={"normalized": normalized}, **kw)
    sim = simulate(prob, "my-fednova", model, rounds=R, seeds=4000, metrics=("error",),
                   normalized=normalized, **kw)
    e2 = sim.error**2 * (prob.x_star @ prob.x_star)
    z = np.abs(e2.mean(axis=0) - curve)[1:] / (e2.std(axis=0)[1:] / np.sqrt(len(e2)))
    print(f"normalized={normalized!s:5}: mean-square rate {res.mean_square_rate:.4f}, floor "
          f"{res.stationary_mse:.3e}; Monte Carlo within {z.max():.1f} standard errors")
    plt.semilogy(curve, style, label=f"exact, normalized={normalized}")
    plt.semilogy(e2.mean(axis=0), "x", ms=3, label=f"4000 seeds, normalized={normalized}")
plt.xlabel("round"); plt.ylabel("E||x_r - x*||^2"); plt.legend(); plt.show()""",
    """md:
## 4. When the exact oracle refuses

FedNova's first version computed tau_eff from the draw's weights, sum_{i in S} w_i tau_i: the
weights then enter squared and the round is no longer linear in them. The oracle probes the
round (client j alone, weights 0, 1, 2) and says which property fails and where.""",
    """
def first_version(config):
    lr, K = config.lr, config.local_steps

    def round_(state, problem, draw, rng=None):
        N = problem.n_clients
        tau = 1 + np.arange(N) % K
        X = np.repeat(state.x[:, None, :], N, axis=1)
        for k in range(K):
            X = X - lr * (k < tau)[None, :, None] * problem.grads(X, rng)
        tau_eff = draw.weights @ tau  # from the draw: the weights enter twice
        step = np.einsum("sn,snd->sd", draw.weights, (state.x[:, None, :] - X) / tau[None, :, None])
        return NovaState(x=state.x - tau_eff[:, None] * step)

    return Algorithm("first-fednova", lambda p, x0: NovaState(x0), round_, config)


register("first-fednova", "FedNova, first version", display="FirstFedNova", affine=True,
         exact_layout=field_layout(("x",)))(first_version)
try:
    exact_rates(prob, "first-fednova", model, **kw)
except NotAffineError as exc:
    print(exc)""",
    """md:
## 5. A bound

Typed as in notebook 07: the linear-rate shape 1 - c eta mu_f K over a class of heterogeneous
quadratic clients, and the largest constant c that bounds every instance searched.""",
    """
res = check({"algorithm": "my-fednova", "participation": "uniform", "clients": [4, 6],
             "clients_per_round": 2, "local_steps": [1, 2, 3], "lr": "1/(4*K*L)",
             "quantity": "mean_square_rate", "bound": "1 - c*eta*mu_f*K", "constant": "c",
             "class": {"dim": [2, 3], "L": 10.0, "mu": 1.0}}, search=20)
print(res.sentence())""",
    """md:
## 6. From a file: the command line, specs and sweeps

An algorithm registered in a notebook lives in this kernel only. Put it in a file (as
docs/examples/fednova.py and docs/examples/server_momentum.py do) and every command loads it:
`fedtheory rate --algorithm docs/examples/fednova.py:fednova --problem figure4 --participation
uniform -M 4 -K 3 --lr 1.5e-4`, `algorithm = "fednova.py:fednova"` in a bound or sweep spec (a
path relative to the spec; a sweep's Dask workers import the file themselves). Loading a file
runs its code, as `python file.py` would.""",
    """
examples = Path(fedtheory.__file__).resolve().parents[1] / "docs" / "examples"
if examples.is_dir():  # a checkout of fedtheory (not an installed wheel)
    found = resolve_algorithm(f"{examples}/server_momentum.py:fedavgm")
    print(found.name, "from", found.file)
    heavy = exact_rates(prob, found.name, make_participation("full", 5), lr=0.08, local_steps=1,
                        global_lr=0.5, options={"server_momentum": 0.9})
    print(f"FedAvgM, K = 1, full participation: mean-square rate {heavy.mean_square_rate:.6f}")""",
)


#: Seconds each notebook took top to bottom (one CPU core, measured with
#: ``python notebooks/build_notebooks.py --time``); said in its first cell.
RUN_TIMES = {
    "01_spectral_gaps.ipynb": 4,
    "02_participation_matrices.ipynb": 2,
    "03_focus_vs_fedavg.ipynb": 3,
    "04_local_steps_dilemma.ipynb": 3,
    "05_sweeps.ipynb": 6,
    "06_exact_rates.ipynb": 10,
    "07_checking_bounds.ipynb": 20,
    "08_your_own_algorithm.ipynb": 10,
}


def timed(name: str, nb_cells: list) -> list:
    """``nb_cells`` with the run time stated under the title and measured: a cell after the
    title starts a clock, a last cell prints the time of the reader's own run."""
    title, rest = nb_cells[0], nb_cells[1:]
    said = RUN_TIMES.get(name)
    if said is not None:
        title = new_markdown_cell(
            title.source + f"\n\n*Run time: about {said:.0f} s on one CPU core (the last cell "
            "prints the time of your run).*"
        )
    start = new_code_cell(
        "import time\n\n_started = time.perf_counter()  # the last cell prints the run time"
    )
    end = new_code_cell('print(f"this notebook ran in {time.perf_counter() - _started:.1f} s")')
    return [title, start, *rest, end]


def build(names: list[str] | None = None) -> list[Path]:
    written = []
    for name, nb_cells in NOTEBOOKS.items():
        if names and name not in names:
            continue
        nb = new_notebook(cells=timed(name, nb_cells))
        for i, cell in enumerate(nb.cells):  # stable ids: a rebuild changes only what changed
            cell["id"] = f"{name.split('_')[0]}-{i:03d}"
        nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        nb.metadata["language_info"] = {"name": "python"}
        path = HERE / name
        nbformat.write(nb, path)
        written.append(path)
    return written


def measure(paths: list[Path]) -> dict:
    """Run each notebook (nbclient, kernel python3) and read the time its last cell prints."""
    from nbclient import NotebookClient  # noqa: PLC0415  (only for --time)

    import tempfile  # noqa: PLC0415

    times = {}
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        with tempfile.TemporaryDirectory() as scratch:  # what the notebook writes goes there
            NotebookClient(
                nb, kernel_name="python3", timeout=600, resources={"metadata": {"path": scratch}}
            ).execute()
        text = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
        times[path.name] = float(text.split("ran in ")[1].split(" s")[0])
        print(f"{path.name}: {times[path.name]:.1f} s")
    return times


if __name__ == "__main__":
    import sys

    args = [a for a in sys.argv[1:] if a != "--time"]
    written = build(args or None)
    for p in written:
        print(p)
    if "--time" in sys.argv:
        print("RUN_TIMES =", {k: round(v, 1) for k, v in measure(written).items()})
