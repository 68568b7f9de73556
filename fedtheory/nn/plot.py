"""Figure of the N1 comparison: test accuracy per round, mean over seeds with a +-1 std band."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from fedtheory.io import save_figure

__all__ = ["plot_n1", "save_n1_figure"]


def plot_n1(result: Any, ax: Any = None):
    """Plot every algorithm's test-accuracy curve of an :class:`~fedtheory.experiments.n1.N1Result`.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt  # noqa: PLC0415

    if ax is None:
        fig, ax = plt.subplots(figsize=(6.0, 4.0), constrained_layout=True)
    else:
        fig = ax.figure
    for name, res in result.results.items():
        mean = res.accuracy.mean(axis=0)
        std = res.accuracy.std(axis=0, ddof=1) if res.accuracy.shape[0] > 1 else np.zeros_like(mean)
        (line,) = ax.plot(res.rounds, 100 * mean, label=name)
        ax.fill_between(
            res.rounds, 100 * (mean - std), 100 * (mean + std), color=line.get_color(), alpha=0.2
        )
    s = result.setting
    ax.set_xlabel("round")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(
        f"N1: {s['model']} on {s['data'].split(' (')[0]}, {s['n_clients']} clients, {s['clients_per_round']}/round, "
        f"{s['partition']}, {s['seeds']} seeds",
        fontsize=8,
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def save_n1_figure(result: Any, out: str | Path = "figures", name: str = "nn_n1") -> list[Path]:
    """Write ``out/name.png`` and ``out/name.pdf``; returns the paths."""
    import matplotlib.pyplot as plt  # noqa: PLC0415

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    fig = plot_n1(result)
    paths = [out / f"{name}.png", out / f"{name}.pdf"]
    for p in paths:
        save_figure(fig, p, dpi=150)
    plt.close(fig)
    return paths
