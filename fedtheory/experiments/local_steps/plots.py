"""Plots of the local-steps study (against K) and of the rho ablation (against rho)."""

from __future__ import annotations

from typing import Any

import numpy as np

from fedtheory.experiments.local_steps.results import LocalStepsStudy
from fedtheory.io import pyplot, save_figure


def _label(alg: str, topo: str | None, rho: float | None) -> str:
    if topo is None:
        return alg
    return f"{alg}, {topo}" + ("" if rho is None else f" (rho={abs(rho):.3f})")


def _draw_vs_k(ax: Any, result: LocalStepsStudy, metric: str) -> None:
    runs = result.runs
    R0, M0 = max(r.R for r in runs), min(r.M for r in runs)  # the longest runs
    keys = list(dict.fromkeys(r.key for r in runs))
    for i, key in enumerate(keys):
        line = sorted(
            (r for r in runs if r.key == key and r.R == R0 and r.M == M0), key=lambda r: r.K
        )
        if not line:
            continue
        K = np.array([r.K for r in line], dtype=float)
        Y = np.stack([getattr(r, metric) for r in line], axis=1)
        with np.errstate(all="ignore"):
            mean = np.nanmean(Y, axis=0)
            n = np.maximum(np.isfinite(Y).sum(axis=0), 1)
            se = np.nanstd(Y, axis=0, ddof=1) / np.sqrt(n) if Y.shape[0] > 1 else 0 * mean
        color = f"C{i % 10}"
        ax.errorbar(
            K,
            mean,
            yerr=1.96 * se,
            fmt="o",
            color=color,
            ms=4,
            capsize=2,
            label=_label(*key, line[0].rho),
        )
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
        pts = sorted(
            (r for r in runs if r.algorithm == a and (r.K, r.R, r.M) == (K0, R0, M0)),
            key=lambda r: r.rho,
        )
        if not pts:
            continue
        rho = np.array([r.rho for r in pts])
        Y = np.stack([getattr(r, metric) for r in pts], axis=1)
        with np.errstate(all="ignore"):
            mean = np.nanmean(Y, axis=0)
            n = np.maximum(np.isfinite(Y).sum(axis=0), 1)
            se = np.nanstd(Y, axis=0, ddof=1) / np.sqrt(n) if Y.shape[0] > 1 else 0 * mean
        ax.errorbar(
            rho, mean, yerr=1.96 * se, fmt="o-", color=f"C{i % 10}", ms=4, capsize=2, label=a
        )
        for r, y in zip(pts, mean, strict=True):
            ax.annotate(
                str(r.topology), (r.rho, y), fontsize=6, xytext=(2, 2), textcoords="offset points"
            )
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
