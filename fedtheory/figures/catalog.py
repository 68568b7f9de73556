"""The figures: each builder takes its config and returns ``(fig, data)``.

Builders draw with the owning module's plotting function where one exists and only fall back to
drawing here when it does not. Everything random is seeded from the config.
"""

from __future__ import annotations

import numpy as np

from fedtheory.figures.registry import figure, need


def _plt():
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return plt


def _figure4_p(n: int) -> np.ndarray:
    from fedtheory.verify.claims._common import figure4_probabilities  # noqa: PLC0415

    return figure4_probabilities(n)


@figure(
    "participation",
    title="Participation patterns (clients x rounds) and effective FedAvg weights q",
    config={"clients": 16, "per_round": 4, "rounds": 60, "seed": 0},
)
def participation_figure(cfg: dict):
    """Four participation models of 003 Sec. 3.1 (uniform 4/16, weighted 4/16 with the Figure 4
    weights, Bernoulli with p_i = min(M p_i, 1), Markov with stationary M/N), each drawn by the
    participation module's ``plot_participation``: the raster of one run and the effective
    weights q_i of plain-mean FedAvg (exact where the model has an exact method)."""
    make, markov_rates = need(
        "fedtheory.participation", "make_participation", "default_markov_rates"
    )
    plot_participation = need("fedtheory.participation.plot", "plot_participation")
    n, m, rounds, seed = cfg["clients"], cfg["per_round"], cfg["rounds"], cfg["seed"]
    p = _figure4_p(n)
    a, b = markov_rates(n, m)
    models = {
        "uniform": make("uniform", n, m),
        "weighted": make("weighted", n, m, p=p),
        "bernoulli": make("bernoulli", n, m, p=np.minimum(m * p, 1.0)),
        "markov": make("markov", n, m, a=a, b=b),
    }
    plt = _plt()
    fig, axes = plt.subplots(2, len(models), figsize=(13, 5.4), height_ratios=[2, 1])
    data = {"p_weighted": p, "models": {}}
    for j, (name, model) in enumerate(models.items()):
        _, d = plot_participation(
            model, rounds=rounds, seed=seed, axes=(axes[0, j], axes[1, j]), title=name
        )
        data["models"][name] = {**d, "describe": model.describe()}
    fig.suptitle("Participation over rounds (top) and FedAvg effective weights q (bottom)")
    fig.tight_layout()
    return fig, data


@figure(
    "spectral_gap",
    title="Spectral gap rho against n per topology, with the theorems' thresholds",
    config={
        "families": [
            "complete",
            "hypercube",
            "exponential",
            "torus",
            "erdos-renyi",
            "star",
            "ring",
        ],
        "sizes": [4, 8, 16, 32, 64, 128, 256],
        "draws": 8,
        "seed": 0,
    },
)
def spectral_gap_figure(cfg: dict):
    """rho = ||W - 11^T/n||_2 (left) and 1 - rho (right) from the graph toolkit's
    ``rho_versus_n`` (default weights; random families: median over draws), with the
    conditions of AFGA (rho <= M/(M+N)), CAFGA (rho_max <= m/(m+n)) and HA-Fed
    (rho_max <= 1/(2 sqrt(n-m))) for the papers' settings, and the papers' stated ring gaps.
    ``plot_rho_versus_n`` draws no thresholds, hence the drawing here."""
    rho_versus_n = need("fedtheory.graphs.plot", "rho_versus_n")
    PAPER_SETTINGS, afga, cafga, hafed = need(
        "fedtheory.graphs.conditions", "PAPER_SETTINGS", "afga_bound", "cafga_bound", "hafed_bound"
    )
    data = rho_versus_n(cfg["families"], cfg["sizes"], draws=cfg["draws"], seed=cfg["seed"])
    thresholds = {}
    for s in PAPER_SETTINGS:
        if s.name.startswith("004"):
            thresholds[f"HA-Fed {s.name} (n={s.n}, m={s.m})"] = hafed(s.n, s.m)
        else:
            thresholds[f"AFGA {s.name} (N={s.N}, M={s.M})"] = afga(s.N, s.M)
            thresholds[f"CAFGA {s.name} (n={s.n}, m={s.m})"] = cafga(s.n, s.m)
    # Equal bounds (e.g. 5/55 = 1/11) are drawn once with all their labels.
    merged: dict[float, list[str]] = {}
    for label, b in thresholds.items():
        merged.setdefault(round(b, 12), []).append(label)
    stated = {
        "000 ring n=50": (50, 0.995),
        "000 ring n=10": (10, 0.873),
        "004 ring n=8": (8, 0.805),
    }
    plt = _plt()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(13, 5))
    for name, d in data.items():
        if d["n"]:
            a1.plot(d["n"], d["rho"], marker="o", ms=3, label=name)
            pos = [(n, g) for n, g in zip(d["n"], d["one_minus_rho"], strict=True) if g > 0]
            if pos:
                a2.loglog(*zip(*pos, strict=True), marker="o", ms=3, label=name)
    colors = plt.cm.Greys(np.linspace(0.45, 0.9, len(merged)))
    for (b, labels), c in zip(sorted(merged.items()), colors, strict=True):
        a1.axhline(b, color=c, ls="--", lw=0.9)
        a1.text(
            4.2, b + 0.008, " / ".join(lbl.split(" (")[0] for lbl in labels), fontsize=6, color=c
        )
    for label, (n, r) in stated.items():
        a1.plot([n], [r], "k*", ms=9)
        a1.annotate(label, (n, r), textcoords="offset points", xytext=(4, -10), fontsize=7)
    a1.set_xscale("log", base=2)
    a1.set_xlabel("n (nodes)")
    a1.set_ylabel("rho = ||W - 11^T/n||_2")
    a1.set_ylim(-0.02, 1.04)
    a1.set_title("rho by topology; dashed: theorem thresholds; *: papers' ring values")
    a2.set_xlabel("n (nodes)")
    a2.set_ylabel("1 - rho")
    a2.set_title("1 - rho (computed from I - W)")
    a2.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return fig, {"families": data, "thresholds": thresholds, "paper_ring_values": stated}


@figure(
    "fedavg_floor",
    title="FedAvg error floor against the step size: uniform vs non-uniform participation",
    config={
        "clients": 10,
        "dim": 5,
        "per_round": 3,
        "local_steps": 2,
        "etas": [0.3, 0.1, 0.03, 0.01],
        "seeds": 8,
        "seed": 0,
    },
)
def fedavg_floor_figure(cfg: dict):
    """FedAvg on the heterogeneous quadratic of claims F2/F3 (``random_quadratic``, condition
    10), uniform vs weighted (Figure 4 recipe) sampling of M of N, K local steps. Measured: the
    floor (median of the last half of each run, mean +- standard error over seeds). Drawn
    closed forms: the distance of FedAvg's stationary mean (I - E[M_S])^{-1} E[c_S] to x* for
    each eta, and its eta -> 0 limit ||x_q* - x*|| (0 for uniform participation)."""
    simulate = need("fedtheory.simulation", "simulate")
    random_quadratic = need("fedtheory.problems.quadratic", "random_quadratic")
    make = need("fedtheory.participation", "make_participation")
    error_floor = need("fedtheory.analysis.rates", "error_floor")
    weighted_optimum, stationary_mean = need(
        "fedtheory.analysis.closed_forms", "weighted_optimum", "fedavg_stationary_mean"
    )
    n, m, k = cfg["clients"], cfg["per_round"], cfg["local_steps"]
    prob = random_quadratic(n, cfg["dim"], condition=10, heterogeneity=1.0, seed=cfg["seed"])
    xs = prob.x_star
    norm = float(np.linalg.norm(xs))
    models = {"uniform": make("uniform", n, m), "weighted": make("weighted", n, m, p=_figure4_p(n))}
    data: dict = {"x_star_norm": norm, "regimes": {}}
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for (name, model), color in zip(models.items(), ("C0", "C3"), strict=True):
        q = model.effective_weights("mean").value
        limit = float(np.linalg.norm(weighted_optimum(prob, q) - xs) / norm)
        floors, ses, closed, rounds = [], [], [], []
        for eta in cfg["etas"]:
            r = int(np.ceil(40 / (eta * prob.mu * k)))
            res = simulate(
                prob,
                "fedavg",
                model,
                rounds=r,
                seeds=cfg["seeds"],
                seed=cfg["seed"],
                lr=eta,
                local_steps=k,
                record_every=max(1, r // 400),
            )
            per = np.array([error_floor(e[np.isfinite(e)], tail=0.5) for e in res.rel_error])
            floors.append(float(per.mean()))
            ses.append(float(per.std(ddof=1) / np.sqrt(per.size)))
            sm = stationary_mean(prob, eta, k, model)
            closed.append(float(np.linalg.norm(sm.x - xs) / norm))
            rounds.append(r)
        etas = cfg["etas"]
        ax.errorbar(
            etas,
            floors,
            yerr=ses,
            marker="o",
            color=color,
            capsize=3,
            label=f"{name}: measured floor",
        )
        ax.plot(
            etas,
            closed,
            ls=":",
            color=color,
            label=f"{name}: ||stationary mean - x*|| (closed form)",
        )
        if limit > 1e-10:  # uniform participation: x_q* = x*, the limit is 0
            ax.axhline(
                limit,
                ls="--",
                color=color,
                lw=1,
                label=f"{name}: eta -> 0 limit ||x_q* - x*|| = {limit:.3f}",
            )
        data["regimes"][name] = {
            "q": q,
            "limit": limit,
            "etas": etas,
            "floor_mean": floors,
            "floor_stderr": ses,
            "stationary_mean_error": closed,
            "rounds": rounds,
        }
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("step size eta")
    ax.set_ylabel("||x - x*|| / ||x*||")
    ax.set_title(f"FedAvg floor, N={n}, M={m}, K={k} (003 Thm 2, Cor. 1-3)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig, data


@figure(
    "figure4",
    title="003 Figure 4 re-run: FOCUS against FedAvg, SCAFFOLD, FedAU, MIFA, Scaffnew",
    config={"rounds": 500, "seeds": 10, "seed": 0, "local_steps": 3, "baselines": "paper"},
)
def figure4_figure(cfg: dict):
    """The simulator engineer's ``run_figure4`` drawn by their ``plot_figure4`` (three panels:
    full, uniform 4/16, arbitrary weighted 4/16; the paper's step sizes)."""
    run_figure4, plot_figure4 = need("fedtheory.experiments.figure4", "run_figure4", "plot_figure4")
    data = run_figure4(
        rounds=cfg["rounds"],
        seeds=cfg["seeds"],
        seed=cfg["seed"],
        local_steps=cfg["local_steps"],
        baselines=cfg["baselines"],
    )
    fig = plot_figure4(data)
    # The sidecar keeps what is drawn (median curves) and the numbers behind them, not the
    # per-seed extras of run_figure4's return value.
    for reg in data["regimes"].values():
        reg.pop("curves_seed0", None)
    return fig, data


def _study_data(res) -> dict:
    """A study's data for the sidecar, without wall times (they differ run to run)."""
    data = res.to_dict()
    data.pop("wall_time_s", None)
    for run in data.get("runs", []):
        run.pop("wall_time", None)
    return data


@figure(
    "local_steps",
    title="The local-steps study: (1/R) sum_r ||grad f(x_r)||^2 against K, fitted and stated slopes",
    config={
        "algorithms": ["fedamsgrad", "afga"],
        "Ks": [1, 2, 4, 8, 16],
        "R": 200,
        "M": 5,
        "topologies": ["complete", "random", "ring"],
        "seeds": 10,
        "seed": 0,
    },
)
def local_steps_figure(cfg: dict):
    """Issue 5's ``run_local_steps_study`` in 000's Setting 2 (N = 50, M = 5) drawn by its
    ``plot_local_steps`` (metric against K per algorithm and topology, fitted and stated slopes;
    metric against rho at the largest K)."""
    run, plot = need("fedtheory.analysis.study", "run_local_steps_study", "plot_local_steps")
    res = run(
        tuple(cfg["algorithms"]),
        Ks=tuple(cfg["Ks"]),
        Rs=(cfg["R"],),
        Ms=(cfg["M"],),
        topologies=tuple(cfg["topologies"]),
        seeds=cfg["seeds"],
        seed=cfg["seed"],
        progress=False,
    )
    data = _study_data(res)
    return (lambda path: plot(res, path)), data


@figure(
    "rho_ablation",
    title="Rho ablation: the metric against the spectral gap of the gossip graph (claim A4)",
    config={
        "algorithms": ["afga"],
        "topologies": ["complete", "complete-random", "random", "torus", "ring"],
        "K": 8,
        "R": 200,
        "M": 5,
        "seeds": 10,
        "seed": 0,
    },
)
def rho_ablation_figure(cfg: dict):
    """Issue 5's ``run_rho_ablation`` drawn by its ``plot_rho_ablation`` (000 Fig. 1,
    004 Fig. 2b)."""
    run, plot = need("fedtheory.analysis.study", "run_rho_ablation", "plot_rho_ablation")
    res = run(
        tuple(cfg["algorithms"]),
        topologies=tuple(cfg["topologies"]),
        K=cfg["K"],
        R=cfg["R"],
        M=cfg["M"],
        seeds=cfg["seeds"],
        seed=cfg["seed"],
        progress=False,
    )
    data = _study_data(res)
    return (lambda path: plot(res, path)), data


@figure(
    "nn_n1",
    title="N1: a torch-free MLP on MNIST-1D, FedAvg / FedAMSGrad / AFGA / CAFGA test accuracy",
    config={"rounds": 100, "seeds": 3, "seed": 1},
)
def nn_n1_figure(cfg: dict):
    """The NN engineer's ``run_n1`` (50 clients, 5 per round, Dirichlet(0.6), K = 10; its other
    defaults) drawn by their ``plot_n1`` (mean +- std over seeds per round). Slow: about ten
    minutes on two cores."""
    run_n1 = need("fedtheory.nn.experiment", "run_n1")
    plot_n1 = need("fedtheory.nn.plot", "plot_n1")
    res = run_n1(rounds=cfg["rounds"], seeds=cfg["seeds"], seed=cfg["seed"])
    data = res.as_dict()
    for curve in data.get("curves", {}).values():
        curve.pop("wall_time", None)  # not data: differs run to run
    return plot_n1(res), data


@figure(
    "stability_map",
    title="Exact mean-square rate against the step size on the 003 Figure 4 problem",
    config={"local_steps": 3, "tol": 1e-4, "rtol": 5e-2, "extra": [0.5, 1.3]},
)
def stability_map_figure(cfg: dict):
    """Issue 13's ``run_stability_map`` drawn by its ``plot_stability_map``: FOCUS, SCAFFOLD
    and FedAvg in the three Figure 4 regimes (full, uniform 4/16, weighted 4/16), the exact
    per-round mean-square rate against eta, the largest stable step by bisection and the
    paper's steps. Deterministic (no seeds): exact rates, ARPACK tolerance ``tol``."""
    run, plot = need("fedtheory.experiments.stability", "run_stability_map", "plot_stability_map")
    data = run(
        local_steps=cfg["local_steps"], tol=cfg["tol"], rtol=cfg["rtol"],
        extra=tuple(cfg["extra"]),
    )  # fmt: skip
    for reg in data["regimes"].values():
        for cur in reg.values():
            if isinstance(cur, dict):
                cur.pop("seconds", None)  # not data: differs run to run
    return plot(data), data
