"""Draw a participation model: the raster of who takes part (clients x rounds) and q."""

from __future__ import annotations

from typing import Any

import numpy as np

from fedtheory.io import pyplot
from fedtheory.participation.base import ParticipationModel, check_rule
from fedtheory.validation import check_int


def plot_participation(
    model: ParticipationModel,
    *,
    rounds: int = 60,
    seed: Any = 0,
    rule: str = "mean",
    axes: Any = None,
    title: str | None = None,
):
    """Raster of one run's participation (clients x rounds) above the effective weights q.

    Parameters
    ----------
    model : ParticipationModel
    rounds : int
        Rounds drawn for the raster (seed ``seed``, first seed of the batch).
    rule : {"mean", "weighted", "unbiased"}
        Aggregation rule of the q panel. Exact q is drawn as bars; Monte Carlo q with
        +-2 standard-error whiskers. The dashed line is the uniform weight 1/N.
    axes : pair of matplotlib Axes, optional
        Where to draw (raster, q); a new two-panel figure otherwise.

    Returns
    -------
    fig : matplotlib Figure
    data : dict
        ``mask`` (rounds, N) as drawn (multiplicities for sampling with replacement), ``q``,
        ``q_stderr``, ``q_method``.
    """
    check_rule(rule)
    rounds = check_int("rounds", rounds, minimum=1)
    if axes is None:
        fig, axes = pyplot().subplots(2, 1, figsize=(7.5, 6), height_ratios=[2, 1])
    ax_r, ax_q = axes
    fig = ax_r.figure
    draw = np.asarray(model.sample(rounds, seeds=1, seed=seed))[0]
    n = model.n_clients
    ax_r.imshow(draw.T.astype(float), aspect="auto", cmap="Greys", interpolation="nearest", vmin=0)
    ax_r.set_xlabel("round")
    ax_r.set_ylabel("client")
    size = (draw > 0).sum(axis=1)
    ax_r.set_title(
        title
        or f"{type(model).__name__}: {n} clients, mean |S| = {size.mean():.2f} over {rounds} rounds"
    )
    q = model.effective_weights(rule)
    ax_q.bar(np.arange(n), q.value, yerr=None if q.exact else 2 * q.stderr, color="tab:blue")
    ax_q.axhline(1.0 / n, color="k", lw=0.8, ls="--", label="1/N")
    ax_q.set_xlabel("client")
    ax_q.set_ylabel(f"q_i ({rule})")
    ax_q.set_title(f"effective FedAvg weights q ({q.method})", fontsize="small")
    ax_q.legend(loc="upper right", fontsize="small")
    fig.tight_layout()
    data = {"mask": draw, "q": q.value, "q_stderr": q.stderr, "q_method": q.method}
    return fig, data
