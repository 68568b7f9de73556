"""Claims P1-P4: participation models and the stochastic-matrix view of FedAvg (003 Sec. 3, App. C)."""

from __future__ import annotations

import numpy as np

from fedtheory.analysis.stats import Effect
from fedtheory.matrices import (
    collect,
    fedavg_matrix_form,
    left_eigenvector,
    model_assign,
    model_average,
    round_matrix,
)
from fedtheory.participation import Weighted, default_markov_rates, make_participation
from fedtheory.problems.quadratic import figure4_probabilities
from fedtheory.verify.claims._common import EXACT_TEST, fmt
from fedtheory.verify.registry import Context, claim
from fedtheory.verify.result import judge


def _models(n: int, m: int):
    """Every participation model of 003 Sec. 3.1 (plus Markov and cyclic) on n clients."""
    p = figure4_probabilities(n)
    a, b = default_markov_rates(n, m)
    return {
        "full": make_participation("full", n),
        "uniform": make_participation("uniform", n, m),
        "weighted": make_participation("weighted", n, m, p=p),
        "bernoulli": make_participation("bernoulli", n, m, p=np.minimum(m * p, 1.0)),
        "markov": make_participation("markov", n, m, a=a, b=b),
        "cyclic": make_participation("cyclic", n, m),
    }


@claim(
    "P1",
    source="003 Sec. 3",
    stated="A_S, V_S row stochastic and C_S column stochastic for every S",
)
def p1(ctx: Context):
    """Every subset S of N = 8 clients (all 256, the empty one included) with random positive
    weights on S summing to 1, plus one random S of N = 10^5 clients in sparse form.

    Criterion: all entries >= -1e-12 and every row (A, V) or column (C) sum within 1e-12 of 1
    (one float64 tolerance for both: V's server entry 1 - sum_S w_i is a rounded zero).
    """
    n = 8
    masks = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1).astype(bool)
    rng = np.random.default_rng(ctx.seed)
    w = rng.random(masks.shape) * masks
    w = np.divide(w, w.sum(1, keepdims=True), out=np.zeros_like(w), where=masks.any(1)[:, None])
    A = np.asarray(model_assign(masks, sparse=False))
    V = np.asarray(model_average(masks, w, sparse=False))
    C = np.asarray(collect(masks, sparse=False))
    dev = {
        "A_rows": float(np.abs(A.sum(-1) - 1).max()),
        "V_rows": float(np.abs(V.sum(-1) - 1).max()),
        "C_columns": float(np.abs(C.sum(-2) - 1).max()),
    }
    neg = float(min(A.min(), V.min(), C.min()))
    big = ctx.pick(10**5, 10**6)
    sm = rng.random(big) < 0.1
    sw = rng.random(big) * sm
    sw /= sw.sum()
    As, Vs, Cs = (
        model_assign(sm, sparse=True),
        model_average(sm, sw, sparse=True),
        collect(sm, sparse=True),
    )
    dev_sparse = {
        "A_rows": float(np.abs(np.asarray(As.sum(axis=1)).ravel() - 1).max()),
        "V_rows": float(np.abs(np.asarray(Vs.sum(axis=1)).ravel() - 1).max()),
        "C_columns": float(np.abs(np.asarray(Cs.sum(axis=0)).ravel() - 1).max()),
    }
    nnz = int(As.nnz + Vs.nnz + Cs.nnz)
    worst = max(*dev.values(), *dev_sparse.values())
    return judge(
        worst <= 1e-12 and neg >= -1e-12,
        f"max |sum - 1| = {fmt(worst)} over {2**n} sets (N = {n}) and N = {big} sparse "
        f"({nnz} non-zeros); min entry {neg:g}",
        criterion="entries >= -1e-12 and row/column sums within 1e-12 of 1",
        effect=Effect.exact(worst, "largest |row or column sum - 1|"),
        test=EXACT_TEST + f" on every sample (random draws from base seed {ctx.seed})",
        seeds=1,
        evidence={"dense": dev, "sparse": dev_sparse, "min_entry": neg, "sparse_nnz": nnz},
    )


@claim(
    "P2",
    source="003 App. C",
    stated="FedAvg in matrix form gives the per-client iterates, for every participation model",
)
def p2(ctx: Context):
    """``fedavg_matrix_form`` against a per-client loop written here (the paper's procedure),
    on a small heterogeneous quadratic (N = 6, d = 3, K = 3, eta = 0.1, 30 rounds), for full,
    uniform, weighted, Bernoulli, Markov and cyclic participation (plain-mean weights).

    Criterion: every server iterate agrees to 1e-12 (relative to max(1, ||x||)).
    """
    n, d, k, lr, rounds = 6, 3, 3, 0.1, ctx.pick(30, 200)
    rng = np.random.default_rng(ctx.seed)
    G = rng.standard_normal((n, d, d))
    H = np.einsum("nij,nkj->nik", G, G) / d + 0.1 * np.eye(d)
    h = rng.standard_normal((n, d))

    def grad(X):
        return np.einsum("nij,nj->ni", H, X) - h

    gaps = {}
    for name, model in _models(n, 2).items():
        masks = np.asarray(model.sample(rounds, seeds=1, seed=ctx.seed))[0]
        weights = np.asarray(model.weights(masks, "mean"))
        out = np.asarray(
            fedavg_matrix_form(grad, np.zeros(d), masks, weights, local_steps=k, lr=lr)
        )
        x = np.zeros(d)
        worst = 0.0
        for r in range(rounds):
            new = x.copy()
            for i in range(n):  # the per-client reference: a plain loop on purpose
                if masks[r, i]:
                    xi = x.copy()
                    for _ in range(k):
                        xi = xi - lr * (H[i] @ xi - h[i])
                    new = new + weights[r, i] * (xi - x)
            x = new
            server = out[(r + 1) * k, 0]
            worst = max(worst, float(np.abs(server - x).max() / max(1.0, np.abs(x).max())))
        gaps[name] = worst
    top = max(gaps.values())
    return judge(
        top <= 1e-12,
        f"max relative gap {fmt(top)} over {len(gaps)} models x {rounds} rounds",
        criterion="matrix-form and per-client server iterates agree to 1e-12",
        effect=Effect.exact(top, "largest relative gap between the two iterates"),
        test=EXACT_TEST + f" on every sample (random draws from base seed {ctx.seed})",
        seeds=1,
        evidence={"gap_by_model": gaps, "rounds": rounds, "local_steps": k, "lr": lr},
    )


@claim(
    "P3",
    source="003 App. C, eq. 37",
    stated="E[round matrix] has identical rows q^T; q is its left eigenvector; Monte Carlo agrees",
)
def p3(ctx: Context):
    """E[W_S] = sum_S P(S) W_S summed here over each model's exact support (uniform, weighted
    and Bernoulli on N = 8), with W_S from ``round_matrix``; then Monte Carlo of W_S over the
    model's own draws.

    Criterion: Dobrushin coefficient of E[W] (half the largest l1 distance between rows)
    <= 1e-12; the toolkit's ``left_eigenvector`` of E[W] equals its row to 1e-10; every entry
    of the Monte Carlo mean within 4 standard errors of the exact row.
    """
    n, m = 8, 3
    rounds = ctx.pick(4000, 40000)
    rows = {}
    worst_tau, worst_eig, worst_z = 0.0, 0.0, 0.0
    for name, model in _models(n, m).items():
        if name not in ("uniform", "weighted", "bernoulli"):
            continue
        support = model.support()
        if support is None:
            raise AssertionError(f"{name} has no exact support")
        draws, probs, _ = support
        draws = np.asarray(draws)
        w = np.asarray(model.weights(draws, "mean"))
        W = np.asarray(round_matrix(draws > 0, w, sparse=False))  # (K, N+1, N+1)
        EW = np.einsum("k,kij->ij", probs, W)
        tau = 0.5 * np.abs(EW[:, None, :] - EW[None, :, :]).sum(-1).max()
        q = np.asarray(left_eigenvector(EW))
        eig = float(np.abs(q - EW[0]).max())
        mc = np.asarray(model.sample(rounds, seeds=1, seed=ctx.seed))[0]
        wm = np.asarray(model.weights(mc, "mean"))
        Wmc = np.asarray(round_matrix(mc > 0, wm, sparse=False))[:, 0, :]  # rows are identical
        se = Wmc.std(0, ddof=1) / np.sqrt(rounds)
        z = np.where(se > 0, np.abs(Wmc.mean(0) - EW[0]) / np.where(se > 0, se, 1.0), 0.0)
        worst_tau, worst_eig = max(worst_tau, tau), max(worst_eig, eig)
        worst_z = max(worst_z, float(z.max()))
        rows[name] = {"row": EW[0], "tau": tau, "eig_gap": eig, "max_z": float(z.max())}
    return judge(
        worst_tau <= 1e-12 and worst_eig <= 1e-10 and worst_z <= 4,
        f"row spread {fmt(worst_tau)}; |q - row| {fmt(worst_eig)}; Monte Carlo max z "
        f"{worst_z:.2f} ({rounds} rounds) for uniform, weighted, Bernoulli",
        criterion="identical rows to 1e-12, left eigenvector = row to 1e-10, MC within 4 SE",
        effect=Effect.exact(worst_z, "largest |Monte Carlo - exact| in standard errors"),
        test=f"exact sums over each model's support; Monte Carlo z-test on every entry "
        f"({rounds} rounds), |z| <= 4 (about 6e-5 two-sided per entry)",
        seeds=1,
        evidence={"by_model": rows, "N": n, "M": m},
    )


@claim(
    "P4",
    source="003 Asm. 1",
    stated="weighted sampling without replacement: exact effective weights match Monte Carlo",
)
def p4(ctx: Context):
    """Case 3 on the Figure 4 setting (N = 16, M = 4, p = (u + 0.01) normalized, seed 5).

    Exact inclusion probabilities pi_i and plain-mean effective weights q_i from the
    participation model (dynamic program over subsets) against a Monte Carlo of its own draws.
    Criterion: every client's |exact - MC| is within 4 Monte Carlo standard errors, and the
    method reported is exact. Evidence also shows how far the naive guess pi_i = M p_i is.
    """
    p = figure4_probabilities(16)
    m = 4
    model = Weighted(p, m)
    pi = model.inclusion_probabilities()
    q = model.effective_weights("mean")
    rounds = ctx.pick(20_000, 200_000)
    # Two Monte Carlo estimates: the model's own sampler, and numpy's choice(replace=False, p=p)
    # called round by round (the paper's definition of Case 3, independent of the toolkit).
    own = np.asarray(model.sample(rounds, seeds=1, seed=ctx.seed))[0] > 0
    rng = np.random.default_rng(ctx.seed + 1)
    ref = np.zeros((rounds, p.size), dtype=bool)
    for r in range(rounds):
        ref[r, rng.choice(p.size, m, replace=False, p=p)] = True
    zs, diffs = {}, {}
    for name, draw in (("toolkit sampler", own), ("numpy choice", ref)):
        pi_mc = draw.mean(axis=0)
        pi_se = np.sqrt(pi_mc * (1 - pi_mc) / rounds)
        w = draw / draw.sum(axis=1, keepdims=True)
        q_mc, q_se = w.mean(axis=0), w.std(axis=0, ddof=1) / np.sqrt(rounds)
        z_pi = np.abs(pi.value - pi_mc) / np.maximum(pi_se, 1e-300)
        z_q = np.abs(q.value - q_mc) / np.maximum(q_se, 1e-300)
        zs[name] = float(max(z_pi.max(), z_q.max()))
        diffs[name] = {
            "pi_monte_carlo": pi_mc,
            "pi_stderr": pi_se,
            "q_monte_carlo": q_mc,
            "q_stderr": q_se,
            "max_z": zs[name],
        }
    zmax = max(zs.values())
    naive = np.abs(m * p - pi.value) / pi.value
    exact = bool(pi.exact and q.exact)
    return judge(
        exact and zmax <= 4.0,
        f"max z = {zmax:.2f} over 16 clients (pi and q, {rounds} rounds, numpy choice and "
        f"toolkit sampler); naive M p_i off by up to {naive.max():.0%}",
        criterion="exact method, and |exact - MC| <= 4 standard errors for every pi_i and q_i",
        effect=Effect.exact(zmax, "largest |exact - Monte Carlo| in standard errors"),
        test=f"Monte Carlo z-test on every pi_i and q_i ({rounds} rounds, two samplers), "
        "|z| <= 4 (about 6e-5 two-sided per entry)",
        seeds=1,
        uncertainty=f"Monte Carlo standard error about {fmt(np.sqrt(0.25 / rounds))} (pi)",
        evidence={
            "N": 16,
            "M": m,
            "p": p,
            "pi_exact": pi.value,
            "pi_method": pi.method,
            "q_exact": q.value,
            "q_method": q.method,
            "monte_carlo": diffs,
            "max_z": zmax,
            "naive_M_p_relative_error": naive,
        },
    )
