"""Claims N1-N4: federated training of a torch-free MLP on MNIST-1D (000 Sec. 6; 004 Sec. 6).

The papers train ConvMixer and ResNet models on CIFAR-10/100; here a small MLP (40-64-64-10) on
MNIST-1D (generated locally by the optional ``mnist1d`` package, the ``nn`` extra) stands in, in
the papers' federated settings (:data:`fedtheory.experiments.n1.NN_SETTINGS`). Every algorithm's
hyper-parameters were tuned by ``benchmarks/tune_n1.py`` at another root seed, on a validation
split held out of the training rows, with grids extended until the choice is interior and then
refined until neighbouring values differ by at most 1.5x (``fedtheory/experiments/
nn_tuning.json``); the claims evaluate at the base seed on the test
split. A comparison involving an algorithm whose tuning did not end interior (or at a stated
hard limit) is ``inconclusive``. Evaluation seeds are drawn sequentially in blocks
(:func:`fedtheory.analysis.stats.sequential`); where a comparison stopped early, one fresh block
after the stop gives an estimate not selected by the stopping rule, reported beside.

Regime of every claim here: the arms have learnt, the seed-mean final test accuracy of each at
least 0.3 (three times chance, 0.1); a comparison between untrained models says nothing about
the papers' claims (else ``inconclusive``, "regime not reached").
"""

from __future__ import annotations

import numpy as np

from fedtheory.algorithms.registry import display_name
from fedtheory.analysis.stats import sequential
from fedtheory.experiments.n1 import (
    N1_ALGORITHMS,
    N1_PLAN,
    N1_ROUNDS,
    N1_TUNING_SEED,
    NN_SETTINGS,
    final_accuracy,
    nn_tuning,
    run_n1,
    tuning_decisive,
)
from fedtheory.verify.claims._common import decisive, fmt, ordered_text, plan
from fedtheory.verify.regime import REGIME_NOT_REACHED
from fedtheory.verify.registry import FULL, Context, claim
from fedtheory.verify.result import INCONCLUSIVE, all_of, combined, verdict_of

# 000 Table 1 (CIFAR-10, Setting 2: 50 clients, 10%): CAFGA 82.10 > AFGA 80.02 >
# FedAMSGrad 79.59 > FedAvg 76.85; the same order in Setting 1 and in Table 2.
STATED_ORDER = ("cafga", "afga", "fedamsgrad", "fedavg")
#: The adjacent pairs of the stated order (the order of the means follows from them).
N1_PAIRS = tuple(zip(STATED_ORDER[:-1], STATED_ORDER[1:], strict=True))
#: The regime of the MNIST-1D claims: every arm's seed-mean final test accuracy at least this.
LEARNT = 0.3
#: The thorough tier's plan of the heavier MNIST-1D claims (N2-N4): (block, budget).
NN_FULL_PLAN = (3, 9)


def _tuning_evidence(names, setting: str = "000-S2") -> dict:
    rec = nn_tuning()
    return {
        "tuning_meta": rec.get("meta", {}),
        "tuning": {
            display_name(a): {
                k: rec["settings"][setting][a].get(k) for k in ("best", "status", "score", "tried")
            }
            for a in names
        },
    }


def _gate(verdict: str, names, means: dict, setting: str = "000-S2") -> tuple[str, str | None]:
    """The verdict after the regime (every arm learnt) and the tuning (every arm's choice
    interior or at a hard limit) are checked; the reason when either fails."""
    low = [n for n in means if means[n] is not None and means[n] < LEARNT]
    if low:
        return INCONCLUSIVE, (
            f"{REGIME_NOT_REACHED}: mean final test accuracy below {LEARNT:g} for {', '.join(low)}"
        )
    open_ = [display_name(a) for a in names if not tuning_decisive(a, setting)]
    if open_ and verdict != INCONCLUSIVE:
        return INCONCLUSIVE, f"the tuning of {', '.join(open_)} did not end interior"
    return verdict, None


@claim(
    "N1",
    source="000 Tables 1-3",
    stated="MLP, Dirichlet 0.6, 50 clients, 10%: ordering CAFGA > AFGA > FedAMSGrad > FedAvg",
    needs=("nn",),
    regimes=tuple(f"{display_name(a)}-vs-{display_name(b)}" for a, b in N1_PAIRS),
)
def n1(ctx: Context):
    """``run_n1`` (MNIST-1D generated locally, MLP 40-64-64-10, Dirichlet(0.6) over 50 clients,
    5 per round, K = 10, 100 rounds; 000 Setting 2) with the hyper-parameters tuned by
    ``benchmarks/tune_n1.py`` on a validation split at root seed 271828 (disjoint from the
    evaluation at the base seed, which reads the test split), accuracy evaluated every round.

    Statistic per seed and adjacent pair (A, B) of the stated order (CAFGA-AFGA,
    AFGA-FedAMSGrad, FedAMSGrad-FedAvg): final accuracy of A minus B, final accuracy being the
    mean test accuracy of the last 5 rounds; both run the same seed ids of the base seed (same
    data partition, initial network per seed). Test: paired t, sequential plan: blocks of 3
    seeds up to 6 (quick) / 4 up to 24 (full), Student-t intervals at level 1 - 0.05 / looks
    (each pair its own row); a pair stops drawing once decided, and one fresh block after an
    early stop is reported beside the decision. The figure ``nn_n1`` shows the quick tier's six
    seeds, run in the same blocks (the same bits).

    Criterion per pair: ``holds`` when the interval lies above 0 (A more accurate than B, as
    stated), ``fails`` when it lies below 0, ``inconclusive`` otherwise; ``inconclusive`` also
    when an arm has not learnt (mean final accuracy below 0.3: regime not reached) or when the
    tuning of A or B did not end interior (or at a stated hard limit).
    """
    block, budget = N1_PLAN[ctx.tier]
    pl = plan(ctx, N1_PLAN["quick"], N1_PLAN["full"])
    names = {f"{display_name(a)}-vs-{display_name(b)}": (a, b) for a, b in N1_PAIRS}
    acc: dict = {a: [] for a in N1_ALGORITHMS}
    setting: dict = {}

    def draw(ids, active):
        need = sorted({x for k in active for x in names[k]}, key=STATED_ORDER.index)
        res = run_n1(
            need, rounds=N1_ROUNDS, seed=ctx.seed, seed_ids=ids, seed_block=block, eval_every=1
        )
        setting.update(res.setting)
        got = {a: final_accuracy(res.results[display_name(a)]) for a in need}
        for a, v in got.items():
            acc[a].extend(v.tolist())
        return {k: got[names[k][0]] - got[names[k][1]] for k in active}

    comps = sequential(draw, list(names), pl, unit="final test accuracy (A - B)", confirm=True)
    test = pl.describe("paired t on per-seed accuracy differences")
    means = {a: (float(np.mean(v)) if v else None) for a, v in acc.items()}
    out = []
    for k, comp in comps.items():
        a, b = names[k]
        text = ordered_text(comp, display_name(a), display_name(b), "is", "more accurate than")
        text += f" (means {display_name(a)} {fmt(means[a])}, {display_name(b)} {fmt(means[b])})"
        verdict, reason = _gate(
            verdict_of(comp.effect), (a, b), {display_name(x): means[x] for x in (a, b)}
        )
        out.append(
            combined(
                verdict,
                text,
                sub=k,
                stated=f"{display_name(a)} more accurate than {display_name(b)} (000 Table 1)",
                criterion="interval of the accuracy difference above 0 (below 0: fails); an arm "
                "below 0.3 accuracy or a tuning not interior: inconclusive",
                effect=comp.effect,
                confirmation=comp.confirmation,
                reason=reason,
                seeds=comp.n,
                test=test,
                evidence={
                    "differences": comp.values,
                    "seed_ids": comp.seed_ids,
                    "history": comp.history,
                    "accuracy": {display_name(x): v for x, v in acc.items() if v},
                    "setting": setting,
                    "tuning_seed": N1_TUNING_SEED,
                    "evaluation_seed": ctx.seed,
                    **_tuning_evidence((a, b)),
                },
            )
        )
    return out


def _family(ctx: Context, arms: dict, pairs: dict, *, unit: str, metric, higher=True):
    """Paired sequential comparisons of MNIST-1D arms (N2-N4). ``arms``: arm -> run_n1 keywords
    (an algorithm and its setting); ``pairs``: comparison -> (A, B) claimed "A better than B";
    ``metric(TrainResult)`` per-seed values (``higher``: larger is better). Bonferroni over
    every comparison of the claim. Returns (comparisons, per-arm values, plan)."""
    pl = plan(ctx, NN_FULL_PLAN, NN_FULL_PLAN, comparisons=len(pairs))
    block = pl.block
    vals: dict = {a: [] for a in arms}

    def draw(ids, active):
        need = {x for k in active for x in pairs[k]}
        got = {}
        for arm in need:
            kw = dict(arms[arm])
            alg = kw.pop("algorithm")
            res = run_n1([alg], seed=ctx.seed, seed_ids=ids, seed_block=block, eval_every=1, **kw)
            got[arm] = metric(next(iter(res.results.values())))
            vals[arm].extend(got[arm].tolist())
        sign = 1.0 if higher else -1.0
        return {k: sign * (got[pairs[k][0]] - got[pairs[k][1]]) for k in active}

    comps = sequential(draw, list(pairs), pl, unit=unit, confirm=True)
    return comps, vals, pl


def _row(verdict_parts: dict, comps: dict, *, sub, stated, criterion, test, reason, ev):
    """One row combining several comparisons (all must hold; one failing fails)."""
    verdict = all_of(list(verdict_parts.values()))
    undefined = [k for k in verdict_parts if comps[k].effect.estimate is None]
    if undefined and not reason:
        reason = f"a run diverged (no accuracy) in {', '.join(undefined)}"
    if reason:
        verdict = INCONCLUSIVE
    key = decisive({k: comps[k].effect for k in verdict_parts}, verdict)
    return combined(
        verdict,
        "; ".join(
            f"{k}: {comps[k].effect.text()} ({comps[k].n_positive} of {comps[k].n} seeds as stated)"
            if comps[k].effect.estimate is not None
            else f"{k}: a run diverged after {comps[k].n} seeds"
            for k in verdict_parts
        ),
        sub=sub,
        stated=stated,
        criterion=criterion,
        effect=comps[key].effect,
        confirmation=comps[key].confirmation,
        reason=reason,
        seeds=max(comps[k].n for k in verdict_parts),
        test=test,
        evidence={
            **ev,
            "comparisons": {
                k: {
                    "values": comps[k].values,
                    "history": comps[k].history,
                    "confirmation": None
                    if comps[k].confirmation is None
                    else comps[k].confirmation.to_dict(),
                }
                for k in verdict_parts
            },
        },
    )


N2_ALPHAS = {"iid": None, "0.6": 0.6, "0.3": 0.3}


@claim(
    "N2",
    source="000 Fig. 2",
    stated="more heterogeneous data (Dirichlet 0.3 < 0.6 < i.i.d.) slows AFGA and CAFGA",
    tier=FULL,
    needs=("nn",),
    regimes=("AFGA", "CAFGA"),
)
def n2(ctx: Context):
    """000 Sec. 6.2 / Fig. 2 on MNIST-1D: AFGA and CAFGA in Setting 2 (50 clients, 5 per round,
    K = 10, 100 rounds, ring, CAFGA 5 clusters of 10) with the data split i.i.d., Dirichlet(0.6)
    and Dirichlet(0.3), each with the hyper-parameters tuned at Dirichlet(0.6) (the paper keeps
    "the rest of the experimental setup" of Setting 2). What differs from the paper: MNIST-1D
    and an MLP instead of CIFAR-10 and ConvMixer, 100 rounds instead of 500, K = 10 instead of
    24. Statistic per seed: the final test accuracy (mean of the last 5 rounds; the paper:
    "faster convergence and higher accuracy") of the less heterogeneous split minus the more
    heterogeneous one, for (i.i.d., 0.6) and (0.6, 0.3), per algorithm: four comparisons, the
    same seed ids (the same initial networks; the partitions differ by construction). Test:
    paired t, sequential plan: blocks of 3 seeds up to 9 (thorough tier only), Student-t
    intervals at level 1 - 0.05 / (looks x 4) (Bonferroni).

    Criterion per algorithm (rows ``N2/AFGA``, ``N2/CAFGA``): ``holds`` when both intervals lie
    above 0 (each step towards heterogeneity lowers the accuracy), ``fails`` when one lies below
    0, else ``inconclusive``; ``inconclusive`` also when an arm has not learnt (mean final
    accuracy below 0.3) or the algorithm's tuning did not end interior.
    """
    s = NN_SETTINGS["000-S2"]
    size = {k: s[k] for k in ("n_clients", "participation", "local_steps", "rounds")}
    arms = {
        f"{a}@{lab}": {"algorithm": a, "alpha": al, **size}
        for a in ("afga", "cafga")
        for lab, al in N2_ALPHAS.items()
    }
    pairs = {
        f"{a}: {hi} vs {lo}": (f"{a}@{hi}", f"{a}@{lo}")
        for a in ("afga", "cafga")
        for hi, lo in (("iid", "0.6"), ("0.6", "0.3"))
    }
    comps, vals, pl = _family(
        ctx,
        arms,
        pairs,
        unit="final test accuracy (less - more heterogeneous)",
        metric=final_accuracy,
    )
    test = pl.describe("paired t on per-seed accuracy differences")
    means = {arm: (float(np.mean(v)) if v else None) for arm, v in vals.items()}
    out = []
    for a in ("afga", "cafga"):
        parts = {k: verdict_of(comps[k].effect) for k in pairs if k.startswith(a)}
        mine = {arm: m for arm, m in means.items() if arm.startswith(a)}
        _, reason = _gate(INCONCLUSIVE, (a,), mine)
        if reason is None and not tuning_decisive(a):
            reason = f"the tuning of {display_name(a)} did not end interior"
        out.append(
            _row(
                parts,
                comps,
                sub=display_name(a),
                test=test,
                reason=reason,
                stated=f"{display_name(a)}: accuracy i.i.d. > Dirichlet 0.6 > Dirichlet 0.3 "
                "(000 Fig. 2)",
                criterion="both intervals (i.i.d. - 0.6, 0.6 - 0.3) above 0 (one below 0: fails)",
                ev={
                    "mean_final_accuracy": mine,
                    "alphas": list(N2_ALPHAS),
                    **_tuning_evidence((a,)),
                },
            )
        )
    return out


N3_BASELINES = ("fedadam", "scaffold", "fedprox", "feddyn")


@claim(
    "N3",
    source="000 Tables 1-3",
    stated="AFGA and CAFGA are more accurate than FedAdam, SCAFFOLD, FedProx and FedDyn, each "
    "tuned",
    tier=FULL,
    needs=("nn",),
    regimes=("AFGA", "CAFGA"),
)
def n3(ctx: Context):
    """000 Table 1 (CIFAR-10, Setting 2: AFGA 80.02, CAFGA 82.10 against FedAdam 78.46, SCAFFOLD
    76.46, FedProx 76.91, FedDyn 78.55; Table 2 (CIFAR-100) has SCAFFOLD ahead of both, which
    the text notes) on MNIST-1D: the MLP in Setting 2 (50 clients, 5 per round, Dirichlet(0.6),
    K = 10, 100 rounds; CAFGA 5 clusters of 10, ring gossip), every algorithm with its own
    hyper-parameters tuned on the validation split (``benchmarks/tune_n1.py``: local step;
    server step of the adaptive ones; FedProx's mu and FedDyn's alpha; the SGD server's step
    1, as in 000 Sec. 6). What differs from the paper: the data, the model, 100 rounds, K = 10.
    Statistic per seed: final test accuracy (mean of the last 5 rounds) of AFGA (CAFGA) minus
    each baseline's: eight comparisons, the same seed ids. Test: paired t, sequential plan:
    blocks of 3 seeds up to 9 (thorough tier only), Student-t intervals at level
    1 - 0.05 / (looks x 8) (Bonferroni).

    Criterion per algorithm (rows ``N3/AFGA``, ``N3/CAFGA``): ``holds`` when all four intervals
    lie above 0, ``fails`` when one lies below 0, else ``inconclusive``; ``inconclusive`` also
    when an arm has not learnt (mean final accuracy below 0.3) or a tuning did not end interior.
    """
    s = NN_SETTINGS["000-S2"]
    size = {k: s[k] for k in ("n_clients", "participation", "local_steps", "rounds")}
    arms = {a: {"algorithm": a, **size} for a in ("afga", "cafga", *N3_BASELINES)}
    pairs = {
        f"{display_name(a)} vs {display_name(b)}": (a, b)
        for a in ("afga", "cafga")
        for b in N3_BASELINES
    }
    comps, vals, pl = _family(
        ctx, arms, pairs, unit="final test accuracy (A - baseline)", metric=final_accuracy
    )
    test = pl.describe("paired t on per-seed accuracy differences")
    means = {display_name(arm): (float(np.mean(v)) if v else None) for arm, v in vals.items()}
    out = []
    for a in ("afga", "cafga"):
        parts = {k: verdict_of(comps[k].effect) for k, (x, _) in pairs.items() if x == a}
        mine = {
            display_name(x): means[display_name(x)]
            for x in (a, *N3_BASELINES)
            if means[display_name(x)] is not None
        }
        _, reason = _gate(INCONCLUSIVE, (a, *N3_BASELINES), mine)
        if reason is None:
            open_ = [display_name(x) for x in (a, *N3_BASELINES) if not tuning_decisive(x)]
            reason = f"the tuning of {', '.join(open_)} did not end interior" if open_ else None
        out.append(
            _row(
                parts,
                comps,
                sub=display_name(a),
                test=test,
                reason=reason,
                stated=f"{display_name(a)} more accurate than FedAdam, SCAFFOLD, FedProx, FedDyn "
                "(000 Table 1)",
                criterion="all four intervals (A - baseline) above 0 (one below 0: fails)",
                ev={"mean_final_accuracy": mine, **_tuning_evidence((a, *N3_BASELINES))},
            )
        )
    return out


def final_train_loss(res) -> np.ndarray:
    """Per seed, the mean training loss f(x) over the last 5 evaluated rounds."""
    return res.train_loss[:, -5:].mean(axis=1)


@claim(
    "N4",
    source="004 Fig. 1",
    stated="HA-Fed reaches a lower training loss and a higher test accuracy than FedAMSGrad",
    tier=FULL,
    needs=("nn",),
    regimes=("loss", "accuracy"),
)
def n4(ctx: Context):
    """004 Fig. 1 (CIFAR-100, ResNet-18 and ConvMixer: HA-Fed "achieves faster convergence
    than FedAMSGrad in reducing training loss" and "a higher test accuracy") on MNIST-1D, in
    004's setting (Sec. 6): 32 clients in 4 clusters of 8, ring gossip inside each cluster
    (rho_max 0.805), p = 0.25 (HA-Fed samples 2 per cluster; FedAMSGrad 8 of 32), tau = 48
    local steps, Dirichlet(0.6), 60 rounds; each tuned on its own on the validation split
    (``benchmarks/tune_n1.py``, setting "004"). What differs from the paper: the data, the
    model, 60 rounds. Statistics per seed, the same seed ids: FedAMSGrad's final training loss
    (f(x) on the clients' data, mean of the last 5 rounds) minus HA-Fed's, and HA-Fed's final
    test accuracy minus FedAMSGrad's: two comparisons. Test: paired t, sequential plan: blocks
    of 3 seeds up to 9 (thorough tier only), Student-t intervals at level
    1 - 0.05 / (looks x 2) (Bonferroni).

    Criterion per row (``N4/loss``, ``N4/accuracy``): ``holds`` when the interval lies above 0
    (HA-Fed better, as stated), ``fails`` below 0, else ``inconclusive``; ``inconclusive`` also
    when an arm has not learnt (mean final accuracy below 0.3) or a tuning did not end interior.
    """
    s = NN_SETTINGS["004"]
    size = {k: s[k] for k in ("n_clients", "participation", "local_steps", "rounds")}
    arms = {a: {"algorithm": a, "setting": "004", **size} for a in ("hafed", "fedamsgrad")}
    out = []
    runs: dict = {a: [] for a in arms}  # both statistics come from the same runs

    def draw(ids, active):
        got = {}
        for a, kw in arms.items():
            kw = dict(kw)
            alg = kw.pop("algorithm")
            res = next(
                iter(
                    run_n1(
                        [alg], seed=ctx.seed, seed_ids=ids, seed_block=len(ids), eval_every=1, **kw
                    ).results.values()
                )
            )
            got[a] = (final_train_loss(res), final_accuracy(res))
            runs[a].append(
                {"ids": list(ids), "loss": got[a][0].tolist(), "accuracy": got[a][1].tolist()}
            )
        out = {
            "loss": got["fedamsgrad"][0] - got["hafed"][0],
            "accuracy": got["hafed"][1] - got["fedamsgrad"][1],
        }
        return {k: out[k] for k in active}

    pl = plan(ctx, NN_FULL_PLAN, NN_FULL_PLAN, comparisons=2)
    comps = sequential(draw, ["loss", "accuracy"], pl, unit="HA-Fed better by", confirm=True)
    test = pl.describe("paired t on per-seed differences")
    acc = {
        display_name(a): float(np.mean([v for r in runs[a] for v in r["accuracy"]])) for a in arms
    }
    for row, stated in (
        ("loss", "HA-Fed reaches a lower training loss than FedAMSGrad"),
        ("accuracy", "HA-Fed reaches a higher test accuracy than FedAMSGrad"),
    ):
        comp = comps[row]
        verdict, reason = _gate(verdict_of(comp.effect), ("hafed", "fedamsgrad"), acc, "004")
        what = "lower in training loss than" if row == "loss" else "more accurate than"
        out.append(
            combined(
                verdict,
                ordered_text(comp, "HA-Fed", "FedAMSGrad", "is", what)
                + f" (mean accuracy HA-Fed {fmt(acc['HA-Fed'])}, FedAMSGrad {fmt(acc['FedAMSGrad'])})",
                sub=row,
                stated=stated + " (004 Fig. 1)",
                reason=reason,
                criterion="interval of the paired difference (HA-Fed better) above 0 (below 0: "
                "fails); an arm below 0.3 accuracy or a tuning not interior: inconclusive",
                effect=comp.effect,
                confirmation=comp.confirmation,
                seeds=comp.n,
                test=test,
                evidence={
                    "runs": runs,
                    "mean_accuracy": acc,
                    "setting": NN_SETTINGS["004"],
                    "differences": comp.values,
                    "history": comp.history,
                    **_tuning_evidence(("hafed", "fedamsgrad"), "004"),
                },
            )
        )
    return out
