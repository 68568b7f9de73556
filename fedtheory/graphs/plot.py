"""Pictures: a mixing matrix drawn as a graph with its weights, and rho against n per family."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import scipy.sparse as sp

from fedtheory.errors import AssumptionError
from fedtheory.graphs.conditions import (
    DEFAULT_TOPOLOGIES,
    PAPER_SETTINGS,
    afga_bound,
    cafga_bound,
    hafed_bound,
)
from fedtheory.graphs.families import family, mixing_matrix
from fedtheory.graphs.spectral import spectral_gap
from fedtheory.graphs.topologies import torus_shape
from fedtheory.graphs.validate import check_mixing_matrix
from fedtheory.io import check_figure_path, pyplot, save_figure
from fedtheory.validation import check_int, check_seed

LABEL_MAX_NODES = 40
"""Edge weights are written on the edges up to this many nodes."""

DRAW_MAX_NODES = 2000


def draw_mixing_graph(
    W: Any, path: str | Path, *, title: str | None = None, layout: str = "auto", seed: int = 0
) -> Path:
    """Draw the graph of W with its edge weights, rho in the title; save to ``path``.

    Nodes are placed on a circle (``layout="circular"``), on the rows x cols lattice of a torus
    or grid (``layout="grid"``: node ``r * cols + c`` at column c, row r; a torus's wrap-around
    edges are drawn dashed and light, so the lattice stays readable) or by a spring layout;
    ``auto`` picks the circle for up to 64 nodes. Self-weights ``w_ii`` label the nodes, ``w_ij``
    the edges (up to :data:`LABEL_MAX_NODES` nodes).
    """

    check_figure_path(path)  # before any drawing: a bad suffix or folder costs nothing
    seed = check_seed(seed)
    W = check_mixing_matrix(W)
    n = W.shape[0]
    if n > DRAW_MAX_NODES:
        raise AssumptionError(f"drawing is limited to {DRAW_MAX_NODES} nodes, got n = {n}")
    g = spectral_gap(W)
    Wc = sp.csr_array(W)
    S = sp.triu((Wc + Wc.T) / 2.0, k=1, format="coo")
    G = nx.Graph()
    G.add_nodes_from(range(n))
    G.add_weighted_edges_from(zip(S.row.tolist(), S.col.tolist(), S.data.tolist(), strict=True))
    if layout == "auto":
        layout = "circular" if n <= 64 else "spring"
    if layout == "grid":
        rows, cols = torus_shape(n)
        pos = {i: (i % cols, -(i // cols)) for i in range(n)}
    elif layout == "circular":
        pos = nx.circular_layout(G)
    else:
        pos = nx.spring_layout(G, seed=seed)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 7))
    widths = 0.5 + 4.0 * S.data / max(S.data.max(), 1e-300) if S.nnz else np.ones(0)
    edges = list(zip(S.row.tolist(), S.col.tolist(), strict=True))
    if layout == "grid":  # lattice neighbours as lines; a wrap-around edge as two dashed stubs
        near = [abs(pos[i][0] - pos[j][0]) + abs(pos[i][1] - pos[j][1]) <= 1 for i, j in edges]
        sel = [k for k, ok in enumerate(near) if ok]
        nx.draw_networkx_edges(
            G,
            pos,
            ax=ax,
            edgelist=[edges[k] for k in sel],
            width=[widths[k] for k in sel],
            edge_color="0.45",
        )
        for k in (k for k, ok in enumerate(near) if not ok):
            (xi, yi), (xj, yj) = pos[edges[k][0]], pos[edges[k][1]]
            dx, dy = np.sign(xi - xj) * 0.35, np.sign(yi - yj) * 0.35  # away from the other end
            for (x, y), s in (((xi, yi), 1), ((xj, yj), -1)):
                ax.plot([x, x + s * dx], [y, y + s * dy], ls="--", color="0.6", lw=widths[k])
    else:
        nx.draw_networkx_edges(G, pos, ax=ax, width=widths if S.nnz else 1.0, edge_color="0.45")
    nx.draw_networkx_nodes(
        G, pos, ax=ax, node_size=300 if n <= LABEL_MAX_NODES else 20, node_color="tab:blue"
    )
    if n <= LABEL_MAX_NODES:
        diag = Wc.diagonal()
        nx.draw_networkx_labels(
            G,
            pos,
            ax=ax,
            labels={i: f"{diag[i]:.2g}" for i in range(n)},
            font_size=7,
            font_color="white",
        )
        nx.draw_networkx_edge_labels(
            G,
            pos,
            ax=ax,
            font_size=7,
            edge_labels={
                (int(i), int(j)): f"{w:.3g}" for i, j, w in zip(S.row, S.col, S.data, strict=True)
            },
        )
    sym = "" if g.symmetric else f", |lambda_2| = {g.rho_lambda2:.4g} (W not symmetric)"
    head = f"{title}: " if title else ""
    conn = "" if g.connected else " (disconnected)"
    ax.set_title(
        f"{head}n = {n}, rho = ||W - J||_2 = {g.rho_norm:.4g}, "
        f"1 - rho = {g.one_minus_rho:.3g}{sym}{conn}",
        fontsize=9,
    )
    ax.set_axis_off()
    fig.tight_layout()
    path = save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path


FAMILY_SIZES = (4, 8, 16, 32, 64, 128, 256, 512)


def rho_versus_n(
    families: Sequence[str] = DEFAULT_TOPOLOGIES,
    sizes: Sequence[int] = FAMILY_SIZES,
    *,
    draws: int = 8,
    seed: int = 0,
) -> dict[str, dict[str, list[float]]]:
    """rho and 1 - rho of each family at each size (random families: median of ``draws``).

    Sizes where a family does not exist (hypercube off powers of 2, torus without an r x c
    factorization with r, c >= 3) are skipped.
    """
    seed = check_seed(seed)
    draws = check_int("the number of draws", draws, minimum=1)
    out: dict[str, dict[str, list[float]]] = {}
    for name in families:
        fam = family(name)
        ns, rhos, gaps = [], [], []
        for n in sizes:
            if fam.name == "hypercube" and n & (n - 1):
                continue
            if fam.name == "torus":
                if min(torus_shape(n)) < 3:
                    continue
            k = draws if fam.random else 1
            seeds = np.random.SeedSequence([seed, n]).spawn(k)
            res = [
                spectral_gap(mixing_matrix(fam.name, n, seed=np.random.default_rng(s)))
                for s in seeds
            ]
            ns.append(n)
            rhos.append(float(np.median([r.rho_norm for r in res])))
            gaps.append(float(np.median([r.one_minus_rho for r in res])))
        out[fam.name] = {"n": ns, "rho": rhos, "one_minus_rho": gaps}
    return out


def plot_rho_versus_n(
    path: str | Path, data: dict[str, dict[str, list[float]]] | None = None, **kw: Any
) -> Path:
    """Plot rho (left) and 1 - rho (right, log-log) against n for the topology families."""
    data = rho_versus_n(**kw) if data is None else data
    plt = pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.8))
    styles = [("o", "-"), ("s", "--"), ("^", "-."), ("D", ":"), ("v", "-"), ("x", "--")]
    for k, (name, d) in enumerate(data.items()):
        if not d["n"]:
            continue
        mk, ls = styles[k % len(styles)]
        style = dict(marker=mk, ls=ls, ms=4, mfc="none", label=name)
        a1.plot(d["n"], d["rho"], **style)
        pos = [(n, g) for n, g in zip(d["n"], d["one_minus_rho"], strict=True) if g > 0]
        if pos:
            a2.loglog(*zip(*pos, strict=True), **style)
    a1.set_xscale("log", base=2)
    a1.set_xlabel("n (nodes)")
    a1.set_ylabel(r"$\rho = \|W - \mathbf{1}\mathbf{1}^\top / n\|_2$")
    a1.set_ylim(-0.02, 1.02)
    a2.set_xlabel("n (nodes)")
    a2.set_ylabel(r"$1 - \rho$")
    a1.set_title(r"spectral gap $\rho$ by topology (default weights)")
    a2.set_title(r"$1 - \rho$ (random families: median over seeds; 0 not shown)")
    a2.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    path = save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path


def plot_gaps_with_thresholds(
    families: Sequence[str], sizes: Sequence[int], *, draws: int = 8, seed: int = 0
) -> tuple[Any, dict]:
    """rho = ||W - 11^T/n||_2 (left) and 1 - rho (right) against n for ``families`` (default
    weights; random families: the median over ``draws``), with the spectral-gap conditions of
    AFGA (rho <= M/(M+N), 000 Thm 4.6), CAFGA (rho_max <= m/(m+n), 000 Thm D.3) and HA-Fed
    (rho_max <= 1/(2 sqrt(n-m)), 004 Cor. 5.11) in the papers' settings, and the papers' stated
    ring gaps. Returns ``(figure, data)``."""

    data = rho_versus_n(families, sizes, draws=draws, seed=seed)
    thresholds = {}
    for s in PAPER_SETTINGS:
        if s.name.startswith("004"):
            thresholds[f"HA-Fed {s.name} (n={s.n}, m={s.m})"] = hafed_bound(s.n, s.m)
        else:
            thresholds[f"AFGA {s.name} (N={s.N}, M={s.M})"] = afga_bound(s.N, s.M)
            thresholds[f"CAFGA {s.name} (n={s.n}, m={s.m})"] = cafga_bound(s.n, s.m)
    # Equal bounds (e.g. 5/55 = 1/11) are drawn once with all their labels.
    merged: dict[float, list[str]] = {}
    for label, b in thresholds.items():
        merged.setdefault(round(b, 12), []).append(label)
    stated = {
        "000 ring n=50": (50, 0.995),
        "000 ring n=10": (10, 0.873),
        "004 ring n=8": (8, 0.805),
    }
    plt = pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(13, 5.4))
    # Families that coincide (the hypercube and the exponential graph at powers of two) stay
    # visible: each has its own marker and line style.
    styles = [
        ("o", "-"),
        ("s", "--"),
        ("^", ":"),
        ("D", "-."),
        ("v", "-"),
        ("P", "--"),
        ("X", ":"),
        ("*", "-."),
    ]
    for (name, d), (marker, ls) in zip(data.items(), styles * len(data), strict=False):
        if d["n"]:
            a1.plot(d["n"], d["rho"], marker=marker, ms=4, ls=ls, label=name)
            pos = [(n, g) for n, g in zip(d["n"], d["one_minus_rho"], strict=True) if g > 0]
            if pos:
                a2.loglog(*zip(*pos, strict=True), marker=marker, ms=4, ls=ls, label=name)
    # The thresholds, labelled on the right margin, one line per bound and spaced so that close
    # bounds (0.045, 0.091, 0.167, 0.204) never overlap.
    colors = plt.cm.Greys(np.linspace(0.45, 0.9, len(merged)))
    placed: list[float] = []
    for (b, labels), c in zip(sorted(merged.items()), colors, strict=True):
        a1.axhline(b, color=c, ls="--", lw=0.9)
        y = max([b, *(p + 0.045 for p in placed)])
        placed.append(y)
        settings = sorted({lbl.split(" (")[0].split(" ", 1)[1] for lbl in labels})
        algs = "/".join(dict.fromkeys(lbl.split(" ")[0] for lbl in labels))
        a1.annotate(
            f"{algs} {', '.join(settings)}: {b:.3f}",
            xy=(1.0, b),
            xycoords=("axes fraction", "data"),
            xytext=(1.01, y),
            textcoords=("axes fraction", "data"),
            fontsize=6.5,
            color=c,
            va="center",
            arrowprops={"arrowstyle": "-", "color": c, "lw": 0.6},
        )
    for label, (n, r) in stated.items():
        a1.plot([n], [r], "k*", ms=9)
        a1.annotate(label, (n, r), textcoords="offset points", xytext=(4, -10), fontsize=7)
    a1.set_xscale("log", base=2)
    a1.set_xlabel("n (nodes)")
    a1.set_ylabel(r"$\rho = \|W - \mathbf{1}\mathbf{1}^\top / n\|_2$")
    a1.set_ylim(-0.02, 1.04)
    a1.set_title(r"$\rho$ by topology; dashed: theorem thresholds; $\star$: papers' ring values")
    a2.set_xlabel("n (nodes)")
    a2.set_ylabel(r"$1 - \rho$")
    a2.set_title(r"$1 - \rho$ (computed from $I - W$)")
    a2.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return fig, {"families": data, "thresholds": thresholds, "paper_ring_values": stated}
