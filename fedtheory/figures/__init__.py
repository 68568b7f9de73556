"""Regenerate every figure of the toolkit into ``figures/``: PNG, PDF and a sidecar JSON.

Each figure is a registered builder ``build(config) -> (matplotlib Figure, data dict)``. The
sidecar ``NAME.json`` holds the exact configuration, the seeds, the package version and the data
drawn, so a figure can be audited and re-plotted; the same seeds give identical data. Builders
call the other modules' own plotting functions where they exist (``plot_figure4``, the
participation raster, the study plots) rather than drawing again.

Run ``fedtheory figures [NAME ...]`` or ``python -m fedtheory.figures [NAME ...]``.
"""

from __future__ import annotations

from fedtheory.figures import catalog  # noqa: F401  (registers the figures)
from fedtheory.figures.registry import (
    FIGURES,
    FigureResult,
    FigureSpec,
    figure,
    generate,
    generate_one,
)

__all__ = [
    "FIGURES",
    "FigureResult",
    "FigureSpec",
    "figure",
    "generate",
    "generate_one",
]
