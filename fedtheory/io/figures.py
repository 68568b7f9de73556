"""Figures out: pyplot on demand, the formats matplotlib writes, figures through the one
writer (byte-stable PNG/PDF: no timestamps).
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

from fedtheory.errors import FedTheoryError
from fedtheory.io.writing import check_output_path, write_atomic


def pyplot() -> Any:
    """``matplotlib.pyplot``, imported on first use.

    matplotlib is a core dependency, but importing pyplot costs about half a second, which every
    command would pay at start-up; so plotting code asks for it here. No backend is forced: a
    notebook keeps its inline backend, and a machine without a display gets matplotlib's
    non-interactive fallback (Agg).
    """
    import matplotlib.pyplot as plt  # noqa: PLC0415  (lazy: half a second at start-up)

    return plt


#: Metadata that would otherwise hold a timestamp or a version, per format (others have none).
_NO_STAMP = {
    "pdf": {"CreationDate": None},
    "png": {"Software": None},
    "svg": {"Date": None},
    "svgz": {"Date": None},
}
#: Formats a figure is never written as: a LaTeX fragment (needs TeX) and raw pixel dumps.
_NOT_FIGURES = ("pgf", "raw", "rgba")


def figure_formats() -> tuple[str, ...]:
    """The file suffixes (without the dot) :func:`save_figure` writes: matplotlib's, less a
    LaTeX fragment (pgf) and raw pixel dumps."""
    from matplotlib.backend_bases import FigureCanvasBase  # noqa: PLC0415  (lazy, as pyplot)

    return tuple(f for f in FigureCanvasBase.get_supported_filetypes() if f not in _NOT_FIGURES)


def check_figure_path(path: str | os.PathLike) -> str:
    """The format of a figure output ``path`` (its suffix; png without one, or for ``-``),
    checked with :func:`check_output_path`, before anything is drawn.

    Raises
    ------
    FedTheoryError
        An unknown suffix (the message lists the supported ones), or a path
        :func:`check_output_path` refuses.
    """
    given = os.fsdecode(os.fspath(path))
    fmt = "png" if given == "-" else (Path(given).suffix.lstrip(".").lower() or "png")
    formats = figure_formats()
    if fmt not in formats:
        raise FedTheoryError(
            f"cannot save a figure as {given}: unknown format .{fmt} "
            f"(use one of {', '.join('.' + f for f in formats)})"
        )
    check_output_path(given)
    return fmt


def figure_bytes(fig: Any, fmt: str = "png", **kw: Any) -> bytes:
    """``fig`` rendered as ``fmt`` (png, pdf, svg, ...); png, pdf and svg without timestamps or
    random ids: same figure, same bytes."""
    plt = pyplot()
    buf = io.BytesIO()
    meta = _NO_STAMP.get(fmt)
    with plt.rc_context({"svg.hashsalt": "fedtheory"}):
        fig.savefig(buf, format=fmt, **({"metadata": meta} if meta else {}), **kw)
    return buf.getvalue()


def save_figure(fig: Any, path: str | os.PathLike, **kw: Any) -> Path:
    """Save ``fig`` to ``path`` (format from its suffix, png without one) through
    :func:`write_atomic`, without timestamps.

    Keywords go to :meth:`matplotlib.figure.Figure.savefig` (``dpi``, ``bbox_inches``, ...).

    Raises
    ------
    FedTheoryError
        See :func:`check_figure_path`; raised before anything is rendered.
    """
    fmt = check_figure_path(path)
    return write_atomic(path, figure_bytes(fig, fmt, **kw))
