"""Claims A1-A6: adaptive federated optimization with gossip (000, 004).

A2-A5 run in 000's Setting 2 (N = 50 clients, M = 5 per round, C = 5 clusters of 10) on the
local-steps study's stochastic PL problem (``study_problem``: d = 10, gradient noise sigma = 1),
with the step-size schedules the theorems prescribe (``step_sizes``: eta = c x Theta-factor,
eta_l = c_l / sqrt(R K^2) or c_l / sqrt(R K)), c_l = 0.5, seeds batched and paired (every grid
point runs the same seed ids of the base seed).

O(.) rates are read as upper bounds in the theorem's regime (docs/claims.md, "Reading O(.)
claims"): on the metric the theorem bounds, at a horizon R that meets its condition on R, over
a window past the transient fixed before measuring (the second half of the rounds: the
theorem's bound on the average over all R rounds bounds the second-half average by twice as
much, and its O(1/R) term, the early rounds' share, no longer dominates). A measured exponent
whose interval lies below the stated one is consistent with the bound (``holds``), one whose
interval lies above it contradicts it (``fails``), one that contains it decides nothing
(``inconclusive``). Every exponent is measured at three step-size constants c in
{0.01, 0.02, 0.05}; a verdict that hinges on the constant is ``inconclusive``.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from fedtheory.analysis.comm_time import TABLE7_HOURS
from fedtheory.analysis.stats import Effect, jackknife_interval, sequential
from fedtheory.experiments.local_steps import (
    gradient_curves,
    step_sizes,
    study_problem,
    window_mean,
    window_min,
)
from fedtheory.experiments.time_to_target import SETTING1, hours_to_target, tune_constant
from fedtheory.io import pyplot
from fedtheory.participation import make_participation
from fedtheory.problems.quadratic import random_quadratic
from fedtheory.simulation import simulate
from fedtheory.verify.claims._common import decisive, fmt, interval, ordered_text, plan, save
from fedtheory.verify.registry import Context, claim
from fedtheory.verify.result import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    all_of,
    combined,
    judge,
    outside,
    unanimous,
    verdict_of,
)

LABEL = {"fedamsgrad": "FedAMSGrad", "afga": "AFGA", "cafga": "CAFGA", "hafed": "HA-Fed"}
#: The step-size constants c of every exponent (a verdict must not hinge on one of them).
CONSTANTS = (0.01, 0.02, 0.05)
#: Heterogeneity sigma_g of A2 (0: i.i.d. control; the dilemma is judged at the largest).
SIGMA_G = (0.0, 1.0, 5.0, 20.0)
R_STUDY, M_STUDY = 200, 5


def _ks(ctx: Context) -> tuple[int, ...]:
    return ctx.pick((1, 2, 4, 8), (1, 2, 4, 8, 16))


def _seeds(ctx: Context) -> int:
    return ctx.pick(12, 30)


def k_exponent(curves: list, Ks: tuple, stat, confidence: float) -> Effect:
    """Exponent of ``stat``(seed-mean curve) in K: the least-squares slope of log stat on log K,
    with a delete-one-seed jackknife interval (curves: one (seeds, R) array per K, same seeds).
    """
    data = np.stack(curves, axis=1)  # (seeds, len(Ks), R)
    lk = np.log(np.asarray(Ks, dtype=float))

    def slope(x: np.ndarray) -> float:
        y = np.log(stat(np.nanmean(x, axis=0)))  # (len(Ks),)
        return float(np.polyfit(lk, y, 1)[0])

    return jackknife_interval(slope, data, confidence, "exponent of the metric in K")


@claim(
    "A1",
    source="000 Sec. 3.2",
    stated="AFGA without re-sampling and with W = I equals FedAMSGrad exactly",
)
def a1(ctx: Context):
    """AFGA (re-sampling off, W = I) against FedAMSGrad on a noisy heterogeneous quadratic
    (N = 12, uniform 4 of 12, K = 3, 30 rounds, gradient noise: the same stream for both).

    Criterion: the iterates are bit-identical for every seed (max |difference| == 0).
    """
    n = 12
    prob = random_quadratic(n, 4, heterogeneity=2.0, noise=0.5, seed=ctx.seed)
    part = make_participation("uniform", n, 4)
    kw = dict(
        rounds=ctx.pick(30, 200),
        seeds=ctx.pick(5, 20),
        seed=ctx.seed,
        lr=0.05,
        local_steps=3,
        global_lr=0.05,
    )
    ref = simulate(prob, "fedamsgrad", part, **kw)
    afga = simulate(prob, "afga", part, resample=False, mixing=np.eye(n), **kw)
    gossip = simulate(prob, "afga", part, resample=False, topology="ring", **kw)
    diff = float(np.abs(np.asarray(afga.x_final) - np.asarray(ref.x_final)).max())
    curve = float(np.nanmax(np.abs(np.asarray(afga.grad_norm2) - np.asarray(ref.grad_norm2))))
    control = float(np.abs(np.asarray(gossip.x_final) - np.asarray(ref.x_final)).max())
    return judge(
        diff == 0 and curve == 0,
        f"max |x_AFGA - x_FedAMSGrad| = {diff:g} over {ref.seeds} seeds x {ref.rounds} rounds "
        f"(control: with a ring instead of I, {fmt(control)})",
        criterion="bit-identical final iterates and ||grad f||^2 curves",
        effect=Effect.exact(diff, "max |x_AFGA - x_FedAMSGrad|"),
        seeds=int(ref.seeds),
        test="every seed and round compared (an identity: any difference is a counter-example)",
        evidence={"max_abs_diff": diff, "curve_diff": curve, "ring_control_diff": control},
    )


@lru_cache(maxsize=4)
def _a2_sweep(tier: str, seed: int) -> dict:
    """FedAMSGrad's window-average K exponent per (sigma_g, c) (cached for A2's two rows)."""
    ctx = Context(tier=tier, seed=seed)
    Ks = _ks(ctx)
    level = 1 - 0.05 / len(SIGMA_G)
    out = {}
    for sg in SIGMA_G:
        for c in CONSTANTS:
            cur = gradient_curves("fedamsgrad", variable="K", values=Ks, R=R_STUDY, M=M_STUDY,
                                  c=c, sigma_g=sg, seeds=_seeds(ctx), seed=seed)  # fmt: skip
            out[(sg, c)] = {
                "effect": k_exponent(cur.curves, Ks, window_mean, level),
                "metric": [float(np.nanmean(window_mean(g))) for g in cur.curves],
                "outside": sorted({v for o in cur.outside for v in o}),
            }
    return out


def _a2_figure(ctx: Context, sweep: dict) -> str | None:
    path = ctx.figure_path("A2")
    if path is None:
        return None
    fig, ax = pyplot().subplots(figsize=(6, 4))
    x = np.array(SIGMA_G)
    for i, c in enumerate(CONSTANTS):
        e = [sweep[(sg, c)]["effect"] for sg in SIGMA_G]
        est = np.array([v.estimate for v in e])
        err = np.array([[v.estimate - v.ci_low for v in e], [v.ci_high - v.estimate for v in e]])
        ax.errorbar(x + 0.15 * (i - 1), est, yerr=err, marker="o", capsize=3, label=f"c = {c:g}")
    ax.axhline(0.0, color="k", lw=0.8)
    ax.axhline(0.5, color="C3", ls=":", lw=1.0, label="bound +1/2 (Wang et al. 2022b)")
    ax.set(xscale="symlog", xlabel="heterogeneity sigma_g",
           ylabel="K exponent of the second-half average ||grad f||^2",
           title="A2: FedAMSGrad, 5 of 50 clients, R = 200 (Bonferroni intervals)")  # fmt: skip
    ax.legend(fontsize=8)
    return save(fig, path)


@claim(
    "A2",
    source="004 Sec. 3; Wang et al. 2022b",
    stated="the dilemma of local steps: under heterogeneous partial participation, more local "
    "steps hurt FedAMSGrad (rate sqrt(K)/sqrt(RM), K exponent +1/2 at most)",
)
def a2(ctx: Context):
    """FedAMSGrad (schedule eta = c sqrt(K M), eta_l = c_l / sqrt(R K^2)), uniform 5 of 50
    clients, R = 200 (>= K M for every K: the condition of Wang et al. 2022b), K in {1, 2, 4, 8}
    (quick) / {1, 2, 4, 8, 16} (full), heterogeneity sigma_g in {0, 1, 5, 20}, c in
    {0.01, 0.02, 0.05}, 12 / 30 seeds. Metric: the average of ||grad f(x_r)||^2 over the
    second half of the rounds (the window rule of the module docstring); its K exponent is the
    slope of log(seed mean) on log K with a delete-one-seed jackknife interval at level
    1 - 0.05/4 (Bonferroni over the four sigma_g).

    Test: the jackknife interval above, the same 12 / 30 seed ids at every grid point.

    Criteria. ``A2/dilemma`` (004 Sec. 3: the dilemma "is largely due to data heterogeneity"): at
    the most
    heterogeneous point, sigma_g = 20, ``holds`` when the K exponent's interval lies above 0
    (more local steps hurt) at every c, ``fails`` when it lies below 0 at every c,
    ``inconclusive`` otherwise. The exponent against sigma_g is the evidence (and the figure).

    ``A2/rate`` (the O(sqrt(K)/sqrt(R M)) bound as an upper bound): per sigma_g, ``holds`` when
    the interval lies below +1/2 at every c, ``fails`` when it lies above +1/2 at every c, else
    ``inconclusive``; the row ``holds`` when every sigma_g holds and ``fails`` when one fails.
    """
    sweep = _a2_sweep(ctx.tier, ctx.seed)
    fig = _a2_figure(ctx, sweep)
    level = 1 - 0.05 / len(SIGMA_G)
    test = (f"slope of log(seed-mean second-half average) on log K, delete-one-seed jackknife, "
            f"Student-t, {100 * level:.4g}% (Bonferroni over 4 sigma_g)")  # fmt: skip
    outside_any = sorted({v for d in sweep.values() for v in d["outside"]})
    trend = "; ".join(
        f"sigma_g {sg:g}: "
        + ", ".join(interval(sweep[(sg, c)]["effect"], signed=True) for c in CONSTANTS)  # fmt: skip
        for sg in SIGMA_G
    )
    ev = {
        "K": list(_ks(ctx)),
        "R": R_STUDY,
        "constants": CONSTANTS,
        "sigma_g": SIGMA_G,
        "exponents": {
            f"sigma_g={sg:g},c={c:g}": d["effect"].to_dict() for (sg, c), d in sweep.items()
        },  # fmt: skip
        "window_average_per_K": {
            f"sigma_g={sg:g},c={c:g}": d["metric"] for (sg, c), d in sweep.items()
        },  # fmt: skip
    }
    if outside_any:  # R < K M somewhere: not the regime of the statement
        return outside(
            "; ".join(outside_any),
            trend,
            evidence=ev,
            figure=fig,
            effect=sweep[(SIGMA_G[-1], CONSTANTS[1])]["effect"],
            test=test,
        )
    top = {c: sweep[(SIGMA_G[-1], c)]["effect"] for c in CONSTANTS}
    dilemma = unanimous([verdict_of(e, claimed=1) for e in top.values()])
    kd = decisive(top, dilemma)
    per_sg = {}
    for sg in SIGMA_G:
        per_sg[sg] = unanimous(
            [verdict_of(sweep[(sg, c)]["effect"], null=0.5, claimed=-1) for c in CONSTANTS]
        )
    rate = all_of(list(per_sg.values()))
    rate_items = {(sg, c): sweep[(sg, c)]["effect"] for sg in SIGMA_G for c in CONSTANTS}
    kr = decisive(rate_items, rate, null=0.5, claimed=-1)
    n = _seeds(ctx)
    return [
        combined(
            dilemma,
            f"K exponent at sigma_g 20 (c = {', '.join(f'{c:g}' for c in CONSTANTS)}): "
            + ", ".join(interval(e, signed=True) for e in top.values())
            + "; at sigma_g 0: "
            + ", ".join(interval(sweep[(0.0, c)]["effect"], signed=True) for c in CONSTANTS),
            sub="dilemma",
            stated="FedAMSGrad, heterogeneous partial participation: more local steps hurt "
            "(004 Sec. 3)",
            criterion="at sigma_g = 20 the K exponent's interval above 0 at every c (below 0 at "
            "every c: fails)",
            effect=top[kd],
            seeds=n,
            test=test,
            figure=fig,
            evidence={**ev, "decisive_constant": kd, "exponent_vs_sigma_g": trend},
        ),
        combined(
            rate,
            "per sigma_g = 0, 1, 5, 20 (three c each): "
            + ", ".join(per_sg[sg] for sg in SIGMA_G)
            + f"; decisive: sigma_g {kr[0]:g}, c = {kr[1]:g}: "
            + interval(rate_items[kr], signed=True),
            sub="rate",
            stated="FedAMSGrad, partial participation: avg ||grad f||^2 = O(sqrt(K)/sqrt(RM)) "
            "(K exponent at most +1/2)",
            criterion="per sigma_g: interval below +1/2 at every c (above at every c: fails); "
            "holds when every sigma_g holds, fails when one fails",
            effect=rate_items[kr].shifted(0.5, "K exponent - 1/2"),
            seeds=n,
            test=test,
            figure=fig,
            evidence={
                **ev,
                "verdict_per_sigma_g": {str(k): v for k, v in per_sg.items()},
                "decisive": str(kr),
            },  # fmt: skip
        ),
    ]


@claim(
    "A3",
    source="000 Cor. 4.7; 004 Cor. 5.11",
    stated="AFGA/HA-Fed ~ 1/sqrt(RKM) when the spectral-gap condition holds (K exponent -1/2 "
    "at most)",
)
def a3(ctx: Context):
    """AFGA (000 Thm 4.6 / Cor. 4.7: eta = c N sqrt(K)/M, eta_l = c_l/sqrt(R K^2)) and HA-Fed
    (004 Cor. 5.11: eta = c sqrt(K M), eta_l = c_l/sqrt(R K); 5 clusters of 10, m = 1) on the
    complete graph (rho = 0: inside the spectral-gap conditions) and the ring (outside),
    heterogeneity sigma_g = 1, R = 200 (>= K M, 000 Cor. 4.7; > K M, 004 Cor. 5.11), K in
    {1, 2, 4, 8} (quick) / {1, 2, 4, 8, 16} (full), c in {0.01, 0.02, 0.05}, 12 / 30 seeds.
    Metric, the one each theorem bounds, over the window past the transient (the second half of
    the rounds): AFGA, the average of E||grad f(x_r)||^2 (000 Thm 4.6); HA-Fed, min_r
    E||grad f(x_r)||^2 (004 Cor. 5.11), E the seed mean. K exponent: slope of log metric on
    log K. Test: 95% delete-one-seed jackknife interval (Student-t, n - 1 degrees of freedom),
    the same seed ids at every K.

    Criterion, per (algorithm, topology): ``outside assumptions`` when the grid violates the
    theorem's conditions (named); else, per c, ``holds`` when the interval lies below -1/2,
    ``fails`` when it lies above -1/2, ``inconclusive`` when it contains -1/2; the row's verdict
    is the common one over the three c, ``inconclusive`` when they differ. AFGA's exponent in
    R (K = 4, R in {100, 200, 400}, c = 0.02) is reported next to it.
    """
    Ks, n = _ks(ctx), _seeds(ctx)
    metric = {"afga": window_mean, "hafed": window_min}
    fit = {}
    for alg in ("afga", "hafed"):
        for topo in ("complete", "ring"):
            for c in CONSTANTS:
                cur = gradient_curves(alg, variable="K", values=Ks, R=R_STUDY, M=M_STUDY,
                                      topology=topo, c=c, seeds=n, seed=ctx.seed)  # fmt: skip
                fit[(alg, topo, c)] = (k_exponent(cur.curves, Ks, metric[alg], 0.95), cur)
    r_cur = gradient_curves("afga", variable="R", values=(100, 200, 400), K=4, M=M_STUDY,
                            topology="complete", c=0.02, seeds=n, seed=ctx.seed)  # fmt: skip
    per_seed = np.stack([window_mean(g) for g in r_cur.curves], axis=1)  # (seeds, 3)
    r_exp = jackknife_interval(
        lambda x: float(np.polyfit(np.log([100, 200, 400]), np.log(np.nanmean(x, axis=0)), 1)[0]),
        per_seed, 0.95, "exponent of the metric in R",
    )  # fmt: skip
    test = "slope of log metric(seed mean) on log K, delete-one-seed jackknife, Student-t (95%)"
    fig = _a3_figure(ctx, fit, Ks)
    out = []
    for alg in ("afga", "hafed"):
        for topo in ("complete", "ring"):
            items = {c: fit[(alg, topo, c)][0] for c in CONSTANTS}
            cur = fit[(alg, topo, CONSTANTS[0])][1]
            text = "K exponent (c = 0.01, 0.02, 0.05): " + ", ".join(
                interval(e, signed=True) for e in items.values()
            )
            if alg == "afga" and topo == "complete":
                text += f"; R exponent {interval(r_exp, signed=True)}"
            ev = {
                "metric": "second-half average" if alg == "afga" else "second-half min of mean",
                "K": list(Ks),
                "R": R_STUDY,
                "rho": cur.rho[0],
                "exponents": {str(c): e.to_dict() for c, e in items.items()},
                "metric_per_K": {
                    str(c): [
                        float(metric[alg](np.nanmean(g, axis=0)))
                        for g in fit[(alg, topo, c)][1].curves
                    ]
                    for c in CONSTANTS
                },  # fmt: skip
                "R_exponent_afga_complete": r_exp.to_dict(),
            }
            sub = f"{alg}-{topo}"
            stated = f"{LABEL[alg]} on the {topo} graph: K exponent at most -1/2"
            violated = sorted({v for o in cur.outside for v in o})
            verdicts = [verdict_of(e, null=-0.5, claimed=-1) for e in items.values()]
            verdict = unanimous(verdicts)
            key = decisive(items, verdict, null=-0.5, claimed=-1)
            common = dict(sub=sub, stated=stated, evidence=ev, figure=fig, seeds=n, test=test,
                          effect=items[key])  # fmt: skip
            if violated:
                out.append(outside("; ".join(violated), text, **common))
            else:
                out.append(
                    combined(
                        verdict,
                        text,
                        criterion="K exponent's 95% interval below -1/2 at every c (above -1/2 "
                        "at every c: fails; differing: inconclusive)",
                        **common,
                    )
                )
    return out


def _a3_figure(ctx: Context, fit: dict, Ks: tuple) -> str | None:
    path = ctx.figure_path("A3")
    if path is None:
        return None
    fig, axes = pyplot().subplots(1, 2, figsize=(10, 4))
    for ax, alg in zip(axes, ("afga", "hafed"), strict=True):
        for i, (topo, c) in enumerate((t, c) for t in ("complete", "ring") for c in CONSTANTS):
            e, cur = fit[(alg, topo, c)]
            stat = window_mean if alg == "afga" else window_min
            y = [float(stat(np.nanmean(g, axis=0))) for g in cur.curves]
            ax.loglog(Ks, y, "o-" if topo == "complete" else "s--", color=f"C{i % 3}",
                      label=f"{topo}, c={c:g}: {e.estimate:+.2f}")  # fmt: skip
        ax.set(xlabel="K", ylabel="second-half " + ("average" if alg == "afga" else "min"),
               title=f"A3: {LABEL[alg]} (stated slope -1/2)")  # fmt: skip
        ax.legend(fontsize=7)
    return save(fig, path)


@claim("A4", source="000 Fig. 1; 004 Fig. 2b", stated="a smaller rho converges faster")
def a4(ctx: Context):
    """AFGA at K = 8, R = 200, M = 5 (000 Setting 2) on the complete, complete with random
    weights, random, torus and ring graphs (rho from 0 to 0.995), c in {0.01, 0.02, 0.05}.
    Metric per seed: (1/R) sum_r ||grad f(x_r)||^2 (000 Thm 4.6's). Statistic per seed and c:
    the Spearman rank correlation between rho and the metric over the five graphs (> 0: a
    smaller rho converges faster), the same seed ids on every graph. Sequential plan: blocks of
    8 seeds up to 32 (quick) / 16 up to 96 (full). Test: Student-t intervals of the mean
    correlation at level 1 - 0.05 / (looks x 3 constants) (Bonferroni).

    Criterion: ``holds`` when the interval lies above 0 at every c, ``fails`` when it lies below
    0 at every c, ``inconclusive`` otherwise.
    """
    topologies = ("complete", "complete-random", "random", "torus", "ring")
    pl = plan(ctx, (8, 32), (16, 96), comparisons=len(CONSTANTS))
    rhos: dict = {}
    means: dict = {c: {t: [] for t in topologies} for c in CONSTANTS}

    def draw(ids, active):
        out = {}
        for key in active:
            c = float(key)
            cur = gradient_curves("afga", variable="topology", values=topologies, K=8,
                                  R=R_STUDY, M=M_STUDY, c=c, seed_ids=ids,
                                  seed=ctx.seed)  # fmt: skip
            rhos.update(zip(topologies, cur.rho, strict=True))
            Y = np.stack([np.nanmean(g, axis=1) for g in cur.curves], axis=1)  # (seeds, T)
            for t, col in zip(topologies, Y.T, strict=True):
                means[c][t].extend(col.tolist())
            r = np.argsort(np.argsort(cur.rho))
            out[key] = [float(np.corrcoef(r, np.argsort(np.argsort(y)))[0, 1]) for y in Y]
        return out

    comps = sequential(draw, [str(c) for c in CONSTANTS], pl,
                       unit="Spearman correlation of rho and the metric")  # fmt: skip
    for c in comps.values():  # a correlation lies in [-1, 1]: so does its interval
        e = c.effect
        c.effect = Effect(e.estimate, max(e.ci_low, -1.0), min(e.ci_high, 1.0), e.unit,
                          e.confidence, e.n)  # fmt: skip
    verdicts = [verdict_of(c.effect) for c in comps.values()]
    verdict = unanimous(verdicts)
    key = decisive({k: c.effect for k, c in comps.items()}, verdict)
    text = "; ".join(
        f"c = {k}: Spearman {interval(c.effect, signed=True)} ({c.n} seeds)"
        for k, c in comps.items()
    )
    order = sorted(topologies, key=lambda t: rhos[t])
    text += "; metric at c = 0.02: " + ", ".join(
        f"{t} (rho {rhos[t]:.2f}) {fmt(np.mean(means[0.02][t]))}" for t in order
    )
    return combined(
        verdict,
        text,
        criterion="mean per-seed Spearman(rho, metric) interval above 0 at every c (below 0 at "
        "every c: fails)",
        effect=comps[key].effect,
        seeds=max(c.n for c in comps.values()),
        test=pl.describe("Student-t interval of the mean per-seed rank correlation"),
        evidence={
            "rho": rhos,
            "metric_mean": {
                str(c): {t: float(np.mean(v)) for t, v in m.items()} for c, m in means.items()
            },  # fmt: skip
            "spearman": {
                k: {"values": c.values, "history": c.history} for k, c in comps.items()
            },  # fmt: skip
        },
    )


@claim(
    "A5",
    source="000 Tables 4-5",
    stated="gossip alone can hurt, gossip + re-sampling helps, clustering helps more; the "
    "communication-adapted variant comes close",
)
def a5(ctx: Context):
    """The ablation of 000 Table 4 on the study's PL problem in Setting 2 (N = 50, M = 5,
    C = 5 clusters of 10 with one sampled per cluster, ring gossip, K = 8, R = 200, sigma_g = 1),
    every variant with the same step sizes (AFGA's schedule, c = 0.01, c_l = 0.5) and the same
    seed ids. Metric per seed, as Table 4 reads accuracy "at the last 5 rounds": the mean of
    ||grad f(x_r)||^2 over the last 5 rounds (smaller is better).

    Test: paired per-seed differences, sequential plan: blocks of 8 seeds up to 32 (quick) / 16
    up to 96 (full), Student-t intervals at level 1 - 0.05 / looks (each row its own claim).
    Criteria: ``A5/gossip``: gossip-only (AFGA without re-sampling) minus FedAMSGrad;
    ``A5/resampling``: FedAMSGrad minus AFGA; ``A5/clustering``: AFGA minus CAFGA; each
    ``holds`` when the interval lies above 0, ``fails`` below 0, else ``inconclusive``.
    ``A5/adapted``: the relative difference (adapted - AFGA) / AFGA per seed; ``holds`` when its
    interval lies inside +-10%, ``fails`` when wholly outside, else ``inconclusive``.
    """
    N, M, C, K, R = 50, 5, 5, 8, 200
    prob = study_problem("pl", N, 10, sigma=1.0, sigma_g=1.0, seed=0)
    eta, eta_l = step_sizes("afga", R=R, K=K, M=M, N=N, c=0.01, c_l=0.5)
    variants = {
        "FedAMSGrad": ("fedamsgrad", {}),
        "+gossip": ("afga", {"resample": False, "topology": "ring"}),
        "AFGA": ("afga", {"topology": "ring"}),
        "CAFGA": ("cafga", {"topology": "ring", "clusters": C}),
        "AFGA-adapted": ("afga-adapted", {"topology": "ring"}),
    }
    rows = {
        "gossip": ("+gossip", "FedAMSGrad", "gossip alone is worse than FedAMSGrad"),
        "resampling": (
            "FedAMSGrad",
            "AFGA",
            "AFGA (gossip + re-sampling) is better than FedAMSGrad",
        ),  # fmt: skip
        "clustering": ("AFGA", "CAFGA", "CAFGA is better than AFGA"),
        "adapted": ("AFGA-adapted", "AFGA", "communication-adapted AFGA comes close to AFGA"),
    }
    metric: dict = {k: [] for k in variants}

    def draw(ids, active):
        need = {v for r in active for v in rows[r][:2]}
        got = {}
        for name in need:
            alg, kw = variants[name]
            part = (make_participation("cluster", N, 1, n_clusters=C) if alg == "cafga"
                    else make_participation("uniform", N, M))  # fmt: skip
            res = simulate(prob, alg, part, rounds=R, seeds=len(ids), seed=ctx.seed,
                           seed_ids=ids, lr=eta_l, global_lr=eta, local_steps=K,
                           metrics=["grad_norm2"], **kw)  # fmt: skip
            got[name] = np.asarray(res.grad_norm2)[:, R - 4 : R + 1].mean(axis=1)
            metric[name].extend(got[name].tolist())
        out = {}
        for r in active:
            worse, better, _ = rows[r]
            d = got[worse] - got[better]
            out[r] = d / got[better] if r == "adapted" else d
        return out

    def decided(name, effect):
        if name == "adapted":
            return effect.within(-0.1, 0.1) != 0
        return effect.side(0.0) != 0

    pl = plan(ctx, (8, 32), (16, 96))
    comps = sequential(draw, list(rows), pl, unit="difference of the last-5-rounds metric",
                       decided=decided)  # fmt: skip
    test = pl.describe("paired t on per-seed differences")
    ev = {"eta": eta, "eta_l": eta_l, "K": K, "R": R, "metric": metric}
    out = []
    for r, (worse, better, what) in rows.items():
        comp = comps[r]
        mean = {k: fmt(np.mean(metric[k])) for k in (worse, better)}
        if r == "adapted":
            e = Effect(comp.effect.estimate, comp.effect.ci_low, comp.effect.ci_high,
                       "relative difference (adapted - AFGA) / AFGA", comp.effect.confidence,
                       comp.n)  # fmt: skip
            side = e.within(-0.1, 0.1)
            verdict = HOLDS if side == 1 else FAILS if side == -1 else INCONCLUSIVE
            text = (
                f"adapted vs AFGA: {e.estimate:+.1%} [{e.ci_low:+.1%}, {e.ci_high:+.1%}] "
                f"({comp.n} seeds; {worse} {mean[worse]}, {better} {mean[better]})"
            )
            criterion = "interval of the relative difference inside +-10% (wholly outside: fails)"
        else:
            e = comp.effect
            verdict = verdict_of(e)
            text = ordered_text(comp, better, worse, "ends", "lower in ||grad f||^2 than")
            text += f" (means: {worse} {mean[worse]}, {better} {mean[better]})"
            criterion = (
                f"interval of {worse} - {better} (last-5-rounds metric) above 0 (below 0: fails)"
            )
        out.append(
            combined(verdict, text, sub=r, stated=what, criterion=criterion, effect=e,
                     seeds=comp.n, test=test,
                     evidence={**ev, "differences": comp.values, "history": comp.history})
        )  # fmt: skip
    return out


#: A6: the demanding target (000 Table 7's 80% column: the only one where the paper's own table
#: supports the text), and the tuning grid of the schedule constant c (the same for every
#: algorithm; each is applied to the algorithm's own schedule).
A6_TARGET = 0.1
A6_GRID = (0.001, 0.003, 0.01, 0.03, 0.1)
#: Tuning seed ids of the base seed per tier, disjoint from the evaluation's (0, 1, ... < 1000).
A6_TUNING_IDS = {"quick": (1000, 1001), "full": (1000, 1001, 1002, 1003)}


@claim(
    "A6",
    source="000 App. B.1.1, Table 7",
    stated="with 1.8 s / 18 s transfers, AFGA and CAFGA reach high accuracy in less "
    "communication time than FedAMSGrad",
)
def a6(ctx: Context):
    """Simulated time to target in 000's Setting 1 (N = 100, M = 5, C = 5, K = 24, ring, R = 300
    rounds), the communication-time model of ``fedtheory.analysis.comm_time`` (t_cc = 1.8 s,
    t_cs = 18 s), on the study problem (sigma = 1, sigma_g = 1). The demanding target
    ||grad f||^2 <= 0.1 stands for Table 7's 80% (the paper's own table supports the text there
    only: at 70% FedAMSGrad 76.0 h < CAFGA 76.22 h < AFGA 91.76 h; at 80% CAFGA 179.82 h < AFGA
    250.86 h < FedAMSGrad 281.0 h; an earlier paraphrase of this claim ranked CAFGA < FedAMSGrad
    at 70%, which the table does not say).

    Tuning, the same budget for each algorithm's own schedule: c in {0.001, 0.003, 0.01, 0.03,
    0.1} (c_l = 0.5), chosen by the smallest median hours to the target on seed ids 1000-1001
    (quick) / 1000-1003 (full) of the base seed (disjoint from the evaluation's seed ids 0,
    1, ...); a choice at the grid's edge is reported. Evaluation: per seed,
    hours(FedAMSGrad) - hours(X) for X in AFGA, CAFGA (paired seed ids). Test: paired t,
    sequential plan: blocks of 4 seeds up to 12 (quick) / 8 up to 48 (full), Student-t
    intervals at level 1 - 0.05 / looks (each row its own claim).

    Criterion per row: ``holds`` when the interval lies above 0 (X is faster), ``fails`` when it
    lies below 0, ``inconclusive`` otherwise; a target not reached within the horizon by either
    algorithm in some seed ends the row ``inconclusive`` (the time is then unknown). A verdict
    against an algorithm needs its tuning to have bracketed its optimum: ``holds`` needs
    FedAMSGrad's chosen c, ``fails`` needs X's chosen c, inside the grid (not at its edge);
    otherwise the row is ``inconclusive`` (the tuning budget did not reach that algorithm's
    best constant).
    """
    algs = ("fedamsgrad", "afga", "cafga")
    tuned = {a: tune_constant(a, A6_GRID, A6_TARGET, seed=ctx.seed,
                          seed_ids=A6_TUNING_IDS[ctx.tier])
             for a in algs}  # fmt: skip
    hours: dict = {a: [] for a in algs}

    def draw(ids, active):
        got = {}
        for a in ("fedamsgrad", *active):
            h, _ = hours_to_target(a, tuned[a].c, A6_TARGET, seed=ctx.seed, seed_ids=ids)
            got[a] = h
            hours[a].extend(h.tolist())
        with np.errstate(invalid="ignore"):
            return {a: np.where(np.isfinite(got[a] + got["fedamsgrad"]),
                                got["fedamsgrad"] - got[a], np.nan) for a in active}  # fmt: skip

    pl = plan(ctx, (4, 12), (8, 48))
    comps = sequential(draw, ["afga", "cafga"], pl, unit="hours (FedAMSGrad - X)")
    test = pl.describe("paired t on per-seed differences of simulated hours")
    ev = {
        "setting": SETTING1,
        "target": A6_TARGET,
        "tuning": {
            a: {
                "c": t.c,
                "grid": t.grid,
                "median_hours": t.median_hours,
                "median_final": t.median_final,
                "seed_ids": t.seed_ids,
            }
            for a, t in tuned.items()
        },  # fmt: skip
        "hours": hours,
        "table7_hours": TABLE7_HOURS,
        "note": "000 Table 7 has FedAMSGrad 76.0 h < CAFGA 76.22 h at 70%: the paraphrase "
        "'CAFGA < FedAMSGrad < AFGA at 70%' is not the paper's; the text's claim is checked at "
        "the demanding target",
    }
    out = []
    for a, comp in comps.items():
        edge = [LABEL[b] for b in ("fedamsgrad", a) if tuned[b].c in (A6_GRID[0], A6_GRID[-1])]
        cs = f"(c: FedAMSGrad {tuned['fedamsgrad'].c:g}, {LABEL[a]} {tuned[a].c:g}" + (
            f"; at the grid's edge: {', '.join(edge)})" if edge else ")"
        )
        if comp.effect.estimate is None:
            missed = {b: int(np.sum(~np.isfinite(np.asarray(hours[b])))) for b in ("fedamsgrad", a)}
            text = (f"target {A6_TARGET:g} not reached within 300 rounds by "
                    + ", ".join(f"{LABEL[b]} in {k} of {len(hours[b])} seeds"
                                for b, k in missed.items() if k) + f" {cs}")  # fmt: skip
            out.append(
                combined(
                    INCONCLUSIVE,
                    text,
                    sub=LABEL[a],
                    criterion=_A6_RULE,
                    effect=comp.effect,
                    seeds=comp.n,
                    test=test,
                    evidence=ev,
                    reason="target not reached within the horizon",
                    stated=f"{LABEL[a]} reaches ||grad f||^2 <= 0.1 in less simulated "
                    "time than FedAMSGrad",
                )  # fmt: skip
            )
            continue
        text = ordered_text(comp, LABEL[a], "FedAMSGrad", f"reaches {A6_TARGET:g}", "h before")
        med = {b: float(np.median(hours[b])) for b in ("fedamsgrad", a)}
        text += f" {cs}; median {LABEL[a]} {med[a]:.1f} h, FedAMSGrad {med['fedamsgrad']:.1f} h"
        verdict = verdict_of(comp.effect)
        loser = {HOLDS: "fedamsgrad", FAILS: a}.get(verdict)
        reason = None
        if loser is not None and tuned[loser].c in (A6_GRID[0], A6_GRID[-1]):
            verdict = INCONCLUSIVE
            reason = (
                f"the tuning did not bracket {LABEL[loser]}'s optimum (c = {tuned[loser].c:g} "
                "at the grid's edge)"
            )
        out.append(
            combined(
                verdict,
                text,
                sub=LABEL[a],
                reason=reason,
                criterion=_A6_RULE,
                effect=comp.effect,
                seeds=comp.n,
                test=test,
                evidence={**ev, "differences": comp.values, "history": comp.history},
                stated=f"{LABEL[a]} reaches ||grad f||^2 <= 0.1 in less simulated time "
                "than FedAMSGrad",
            )  # fmt: skip
        )
    return out


_A6_RULE = (
    "interval of hours(FedAMSGrad) - hours(X) above 0 (below 0: fails); target not reached "
    "within the horizon, or the slower algorithm's tuned c at the grid's edge: inconclusive"
)
