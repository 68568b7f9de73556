"""Claim N1: federated training of a torch-free MLP (000 Tables 1-3 setting)."""

from __future__ import annotations

import numpy as np

from fedtheory.algorithms.registry import display_name
from fedtheory.analysis.stats import sequential
from fedtheory.experiments.n1 import (
    N1_ALGORITHMS,
    N1_PLAN,
    N1_ROUNDS,
    N1_TUNING_SEED,
    final_accuracy,
    run_n1,
)
from fedtheory.verify.claims._common import fmt, ordered_text, plan
from fedtheory.verify.registry import Context, claim
from fedtheory.verify.result import combined, verdict_of

# 000 Table 1 (CIFAR-10, Setting 2: 50 clients, 10%): CAFGA 82.10 > AFGA 80.02 >
# FedAMSGrad 79.59 > FedAvg 76.85; the same order in Setting 1 and in Table 2.
STATED_ORDER = ("cafga", "afga", "fedamsgrad", "fedavg")
#: The adjacent pairs of the stated order (the order of the means follows from them).
N1_PAIRS = tuple(zip(STATED_ORDER[:-1], STATED_ORDER[1:], strict=True))


@claim(
    "N1",
    source="000 Tables 1-3",
    stated="MLP, Dirichlet 0.6, 50 clients, 10%: ordering CAFGA > AFGA > FedAMSGrad > FedAvg",
    needs=("nn",),
)
def n1(ctx: Context):
    """``run_n1`` (MNIST-1D generated locally, MLP 40-64-64-10, Dirichlet(0.6) over 50 clients,
    5 per round, K = 10, 100 rounds, ``N1_DEFAULTS``: tuned at root seed 271828, disjoint from
    the evaluation at the base seed), accuracy evaluated every round.

    Statistic per seed and adjacent pair (A, B) of the stated order (CAFGA-AFGA,
    AFGA-FedAMSGrad, FedAMSGrad-FedAvg): final accuracy of A minus B, final accuracy being the
    mean test accuracy of the last 5 rounds; both run the same seed ids of the base seed (same
    data partition, initial network per seed). Test: paired t, sequential plan: blocks of 3
    seeds up to 6 (quick) / 4 up to 24 (full), Student-t intervals at level 1 - 0.05 / looks
    (each pair its own row); a pair stops drawing once decided. The figure ``nn_n1`` shows the
    quick tier's six seeds, run in the same blocks (the same bits).

    Criterion per pair: ``holds`` when the interval lies above 0 (A more accurate than B, as
    stated), ``fails`` when it lies below 0, ``inconclusive`` otherwise.
    """
    block, budget = N1_PLAN[ctx.tier]
    pl = plan(ctx, N1_PLAN["quick"], N1_PLAN["full"])
    names = {f"{display_name(a)}-vs-{display_name(b)}": (a, b) for a, b in N1_PAIRS}
    acc: dict = {a: [] for a in N1_ALGORITHMS}
    setting: dict = {}

    def draw(ids, active):
        need = sorted({x for k in active for x in names[k]}, key=STATED_ORDER.index)
        res = run_n1(need, rounds=N1_ROUNDS, seed=ctx.seed, seed_ids=ids, seed_block=block,
                     eval_every=1)  # fmt: skip
        setting.update(res.setting)
        got = {a: final_accuracy(res.results[display_name(a)]) for a in need}
        for a, v in got.items():
            acc[a].extend(v.tolist())
        return {k: got[names[k][0]] - got[names[k][1]] for k in active}

    comps = sequential(draw, list(names), pl, unit="final test accuracy (A - B)")
    test = pl.describe("paired t on per-seed accuracy differences")
    means = {a: (fmt(np.mean(v)) if v else "-") for a, v in acc.items()}
    out = []
    for k, comp in comps.items():
        a, b = names[k]
        text = ordered_text(comp, display_name(a), display_name(b), "is", "more accurate than")
        text += f" (means {display_name(a)} {means[a]}, {display_name(b)} {means[b]})"
        out.append(
            combined(
                verdict_of(comp.effect),
                text,
                sub=k,
                stated=f"{display_name(a)} more accurate than {display_name(b)} (000 Table 1)",
                criterion="interval of the accuracy difference above 0 (below 0: fails)",
                effect=comp.effect,
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
                },
            )
        )
    return out
