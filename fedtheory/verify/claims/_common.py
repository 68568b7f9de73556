"""Small helpers shared by the claim checks."""

from __future__ import annotations

import numpy as np

from fedtheory.io import pyplot, save_figure


def fmt(x: float, digits: int = 3) -> str:
    """A number for the table: 3 significant digits, scientific when small or large."""
    x = float(x)
    if x == 0 or 1e-3 <= abs(x) < 1e4:
        return f"{x:.{digits}g}"
    return f"{x:.{max(digits - 1, 1)}e}"


def mean_se(values) -> tuple[float, float]:
    """Mean and standard error over seeds (axis 0)."""
    v = np.asarray(values, dtype=float)
    if v.size < 2:
        return float(v.mean()), float("nan")
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size))


def save(fig, path) -> str:
    """Save and close ``fig``; returns the path as a string."""
    plt = pyplot()
    fig.tight_layout()
    save_figure(fig, path, dpi=90)
    plt.close(fig)
    return str(path)
