"""The figure registry and the writer of PNG + PDF + sidecar JSON (written atomically)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedtheory._version import __version__
from fedtheory.errors import FedTheoryError, MissingExtraError
from fedtheory.extras import require
from fedtheory.io import (
    check_output_dir,
    figure_bytes,
    jsonable,
    progress,
    provenance,
    pyplot,
    temporary_directory,
    write_atomic,
)
from fedtheory.validation import did_you_mean


@dataclass(frozen=True)
class FigureSpec:
    """``build(config)`` returns ``(figure, data)``: a matplotlib Figure, or a callable
    ``draw(path)`` when the owning module's plotting function writes the file itself."""

    name: str
    title: str
    build: Callable[[dict], tuple[Any, dict]] = field(repr=False)
    config: dict = field(default_factory=dict)
    needs: tuple[str, ...] = ()  # optional extras the builder imports (fedtheory.extras)


@dataclass
class FigureResult:
    """A written figure (``paths``), or one not drawn because an optional extra is missing
    (``missing`` holds the one-line reason and ``paths`` is empty), or, with
    ``generate(keep_going=True)``, one whose builder failed (``error`` holds the one-line
    error and ``paths`` what was written before it failed)."""

    name: str
    paths: list[Path]
    seconds: float
    missing: str | None = None
    error: str | None = None


FIGURES: dict[str, FigureSpec] = {}


def figure(name: str, *, title: str, config: dict, needs: tuple[str, ...] = ()) -> Callable:
    """Register ``build(config) -> (fig, data)`` as figure ``name`` with its default config and
    the optional extras it needs."""

    def deco(build):
        FIGURES[name] = FigureSpec(name, title, build, config, tuple(needs))
        return build

    return deco


def _savefig(fig, fmt: str) -> bytes:
    # No timestamps in the files: the same data gives the same bytes.
    return figure_bytes(fig, fmt, dpi=110, bbox_inches="tight")


def sidecar(spec: FigureSpec, config: dict, data: dict) -> dict:
    """The sidecar JSON of a figure: its name and title, provenance (``date`` UTC ISO 8601,
    ``commit`` of the git work tree it was made from or None, ``versions`` of fedtheory,
    NumPy, SciPy, matplotlib and Python: :func:`fedtheory.io.provenance`), the exact
    configuration, the seeds and the data drawn. Two sidecars of the same figure and seeds
    differ only in the provenance keys."""
    made = provenance()
    return jsonable(
        {
            "figure": spec.name,
            "title": spec.title,
            "fedtheory_version": __version__,
            "date": made["date"],
            "commit": made["commit"],
            "versions": made["versions"],
            "config": config,
            "seeds": config.get("seeds", config.get("seed")),
            "data": data,
        }
    )


def generate_one(name: str, out_dir: str | Path = "figures", **overrides: Any) -> FigureResult:
    """Build figure ``name`` (config: its defaults updated with ``overrides``) and write
    ``NAME.png``, ``NAME.pdf`` and ``NAME.json`` into ``out_dir``.

    Raises
    ------
    MissingExtraError
        The figure needs an optional extra that is not installed (before anything is computed).
    """
    plt = pyplot()
    spec = FIGURES[name]
    for extra in spec.needs:
        require(extra, f"figure {name}")
    config = {**spec.config, **overrides}
    out = check_output_dir(out_dir)  # a bad folder is refused before the figure is computed
    t0 = time.perf_counter()
    drawn, data = spec.build(dict(config))
    paths = []
    if callable(drawn) and not hasattr(drawn, "savefig"):
        # The owning module's plotting function writes the file itself: ``drawn(path)``, into a
        # scratch folder (always removed); the bytes then go through the one writer.
        with temporary_directory(f"fedtheory-{name}-") as scratch:
            for fmt in ("png", "pdf"):
                try:
                    drawn(scratch / f"{name}.{fmt}")
                finally:
                    plt.close("all")
                data_bytes = (scratch / f"{name}.{fmt}").read_bytes()
                paths.append(write_atomic(out / f"{name}.{fmt}", data_bytes))
    else:
        try:
            for fmt in ("png", "pdf"):
                paths.append(write_atomic(out / f"{name}.{fmt}", _savefig(drawn, fmt)))
        finally:
            plt.close(drawn)
    meta = sidecar(spec, config, data)
    text = json.dumps(meta, indent=1)
    if len(text) > 100_000:  # long curves: one line per top-level key keeps the file small
        text = (
            "{\n"
            + ",\n".join(
                f"{json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}" for k, v in meta.items()
            )
            + "\n}"
        )
    text += "\n"
    paths.append(write_atomic(out / f"{name}.json", text))
    return FigureResult(name, paths, time.perf_counter() - t0)


def generate(
    names: list[str] | None = None,
    out_dir: str | Path = "figures",
    *,
    quiet: bool = False,
    keep_going: bool = False,
) -> list[FigureResult]:
    """Regenerate ``names`` (all registered figures when None), reporting each figure on
    stderr as it is written (:func:`fedtheory.io.progress`: a bar on a terminal, a line such as
    ``[3/9] figure fedavg_floor written 12.0 s`` in a log; nothing when ``quiet``).

    A figure whose optional extra is missing is not drawn (its result says why in ``missing``)
    and the others still are. Any other error propagates, unless ``keep_going``: then it is
    recorded in the figure's ``error`` (type and first line) and the next figures are drawn.

    Raises
    ------
    FedTheoryError
        An unknown figure name or a bad output folder (before anything is drawn).
    """

    names = list(names or FIGURES)
    unknown = [n for n in names if n not in FIGURES]
    if unknown:
        raise FedTheoryError(
            f"unknown figure {', '.join(unknown)}{did_you_mean(unknown[0], FIGURES)}: choose "
            f"from {', '.join(FIGURES)}"
        )
    check_output_dir(out_dir)
    results = []
    bar = progress(total=len(names), desc="figures", unit="fig", disable=quiet)
    try:
        for name in names:
            bar.set_postfix_str(name)
            t0 = time.perf_counter()
            try:
                r = generate_one(name, out_dir)
                said = "written"
            except MissingExtraError as exc:
                r = FigureResult(name, [], time.perf_counter() - t0, missing=str(exc))
                said = "not drawn (missing extra)"
            except Exception as exc:
                if not keep_going:
                    raise
                first = str(exc).splitlines()[0] if str(exc) else ""
                r = FigureResult(
                    name, [], time.perf_counter() - t0, error=f"{type(exc).__name__}: {first}"
                )
                said = f"FAILED ({r.error})"
            results.append(r)
            bar.done(f"figure {name} {said}", seconds=r.seconds)
    finally:
        bar.close()
    return results
