"""The verification report: a text table, JSON (the contract), a self-contained HTML page, and
the claim catalog of docs/claims.md, generated from the registry (:func:`catalog_markdown`,
:func:`write_catalog`; ``python -m fedtheory.verify catalog docs/claims.md``)."""

from __future__ import annotations

import base64
import html
import inspect
import json
import textwrap
from pathlib import Path

from fedtheory._version import __version__
from fedtheory.errors import FedTheoryError
from fedtheory.extras import install_hint
from fedtheory.io import jsonable, provenance, utc_now, write_atomic
from fedtheory.verify.registry import FULL, QUICK, Claim, all_claims
from fedtheory.verify.result import (
    INCONCLUSIVE,
    NOT_RUN,
    PAPER_VERDICTS,
    VERDICTS,
    ClaimResult,
)

COLUMNS = (("claim", 13), ("source", 17), ("stated", 38), ("measured", 46), ("verdict", 19))


def verdict_label(r: ClaimResult) -> str:
    """The verdict, ``CRASHED`` for a check that raised, ``not run`` for one that was skipped
    (thorough tier only, a missing extra)."""
    return "CRASHED" if r.crashed else r.verdict


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _measured(r: ClaimResult) -> str:
    """The measured cell, with the exact value next to it where one is computed, the estimate
    on fresh seeds after a sequential stop, why an ``inconclusive`` row decides nothing, or why
    the claim was not run."""
    if r.skipped:
        return f"not run: {r.reason}"
    text = _cell(r.measured)
    if r.confirmation and r.confirmation.get("estimate") is not None:
        text += f"; on fresh seeds after the stop: {_effect_text(r.confirmation)}"
    if r.exact:
        text += f"; exact: {r.exact}"
    if r.verdict == INCONCLUSIVE and r.reason:
        text += f"; inconclusive: {r.reason}"
    return text


def format_table(results: list[ClaimResult]) -> str:
    """A fixed-width table (claim, source, stated, measured, verdict), long cells wrapped.

    Verdicts about the papers come first; measurements (quantities no outcome of which could
    contradict a claim), implementation invariants and formulas the available text does not
    state follow in a block of their own.
    """
    paper = [r for r in results if r.about_paper and not r.skipped]
    other = [r for r in results if not r.about_paper]
    skipped = [r for r in results if r.skipped]
    lines = _rows(paper)
    if other:
        lines += ["", f"{NOT_VERDICTS}:", *_rows(other)]
    if skipped:
        lines += ["", "Not run here (thorough tier only, or an optional extra is missing):",
                  *_rows(skipped)]  # fmt: skip
    return "\n".join(lines)


def _rows(results: list[ClaimResult]) -> list[str]:
    widths = [w for _, w in COLUMNS]
    sep = "-+-".join("-" * w for w in widths)
    lines = [" | ".join(name.ljust(w) for name, w in COLUMNS).rstrip(), sep]
    for r in results:
        cells = [r.id, r.source, r.stated, _measured(r), verdict_label(r)]
        wrapped = [textwrap.wrap(_cell(c), w) or [""] for c, w in zip(cells, widths, strict=True)]
        for i in range(max(len(x) for x in wrapped)):
            row = [
                (x[i] if i < len(x) else "").ljust(w) for x, w in zip(wrapped, widths, strict=True)
            ]
            lines.append(" | ".join(row).rstrip())
    return lines


#: The heading of the results that are not verdicts about the papers (table and HTML).
NOT_VERDICTS = ("Not verdicts about the papers (measurements no outcome of which could contradict "
                "a claim; implementation invariants; formulas the available text does not state)")  # fmt: skip


def summary(results: list[ClaimResult]) -> str:
    """Counts per verdict: the verdicts about the papers first (only those the measurement could
    have turned the other way, :data:`~fedtheory.verify.result.PAPER_VERDICTS`), then, besides
    them, measurements, invariants, not stated, not run and crashes."""
    counts: dict[str, int] = {}
    for r in results:
        counts[verdict_label(r)] = counts.get(verdict_label(r), 0) + 1
    paper = ", ".join(f"{counts[v]} {v}" for v in PAPER_VERDICTS if counts.get(v))
    rest = [f"{counts[v]} {v}" for v in VERDICTS if v not in PAPER_VERDICTS and counts.get(v)]
    if counts.get(NOT_RUN):
        rest.append(f"{counts[NOT_RUN]} not run")
    if counts.get("CRASHED"):
        rest.append(f"{counts['CRASHED']} CRASHED")
    head = f"claims about the papers: {paper or 'none'}"
    return head + ("; besides them: " + ", ".join(rest) if rest else "")


#: The version of the layout of :func:`to_json` (bumped when a key changes meaning).
JSON_SCHEMA = 2


def to_json(
    results: list[ClaimResult],
    *,
    tier: str = QUICK,
    seed: int = 0,
    seconds: float | None = None,
    date: str | None = None,
) -> dict:
    """The JSON contract of ``fedtheory verify --json``: one top-level object.

    Parameters
    ----------
    results : list of ClaimResult
    tier : {"quick", "thorough"}
    seed : int
        The base seed of every experiment (``--seed``).
    seconds : float, optional
        Wall time of the run.
    date : str, optional
        When the run ended, UTC ISO 8601 (default: now).

    Returns
    -------
    dict
        ``{"version", "schema", "seed", "date", "tier", "seconds", "summary", "results"}``:
        ``version`` is fedtheory's, ``results`` a list of objects with at least ``id``,
        ``verdict`` (one of :data:`~fedtheory.verify.result.VERDICTS`, ``measured`` among
        them, or ``not run``), ``stated``, ``measured`` (plus ``reason``, ``effect``,
        ``seeds``, ``test``, ``figure``, ...: :class:`~fedtheory.verify.result.ClaimResult`);
        ``summary`` counts the verdicts about the papers, then the others "besides them".
    """
    when = date or utc_now()
    return {
        "version": __version__,
        "schema": JSON_SCHEMA,
        "seed": int(seed),
        "date": when,
        "tier": tier,
        "seconds": None if seconds is None else round(float(seconds), 3),
        "summary": summary(results),
        "results": [r.to_dict() for r in results],
    }


def _effect_text(effect: dict | None) -> str:
    """``estimate [ci_low, ci_high] unit`` of a result's effect (empty when there is none)."""
    if not effect or effect.get("estimate") is None:
        return ""
    lo, hi = effect.get("ci_low"), effect.get("ci_high")
    ci = "" if lo is None or hi is None or lo == hi else f" [{lo:.4g}, {hi:.4g}]"
    return f"{effect['estimate']:.4g}{ci} {effect.get('unit', '')}".rstrip()


def _alt(r: ClaimResult) -> str:
    """What a claim's figure shows, for its ``alt`` text (never just a file name)."""
    return f"Figure of claim {r.id} ({r.source}): the measurement behind '{r.stated}'"


def _img(r: ClaimResult, seen: dict) -> str:
    """The figure of ``r`` inline as base64 PNG (once per page; later results link to it)."""
    path = r.figure
    if not path or not Path(path).is_file():
        return ""
    if path in seen:
        return f'<p><a href="#{seen[path]}">the figure of {html.escape(seen[path])} (above)</a></p>'
    anchor = "fig-" + r.id.replace("/", "-")
    seen[path] = anchor
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    alt = html.escape(_alt(r), quote=True)
    return f'<img id="{html.escape(anchor)}" alt="{alt}" src="data:image/png;base64,{data}">'


#: The report's sections, in order: (title, which results).
HTML_SECTIONS = (
    ("Claims about the papers", lambda r: r.about_paper and not r.skipped),
    (
        "Measurements, implementation invariants and formulas the available text does not state",
        lambda r: not r.about_paper,
    ),
    ("Not run here (thorough tier only, or an optional extra is missing)", lambda r: r.skipped),
)

_COLORS = {
    "holds": "#d4f4dd",
    "fails": "#f8d0d0",
    "inconclusive": "#e6e6f8",
    "outside assumptions": "#fff1c2",
    "measured": "#e9f2e4",
    "invariant": "#dfeff7",
    "not stated": "#eeeeee",
    NOT_RUN: "#f4f4f4",
}


def _row(r: ClaimResult) -> str:
    color = "#f4a0a0" if r.crashed else _COLORS.get(r.verdict, "#e8e8e8")
    anchor = html.escape(r.id.replace("/", "-"))
    return (
        "<tr>"
        f'<td><a href="#{anchor}">{html.escape(r.id)}</a></td>'
        f"<td>{html.escape(r.source)}</td><td>{html.escape(str(r.stated))}</td>"
        f"<td>{html.escape(_measured(r))}</td>"
        f'<td style="background:{color}">{html.escape(verdict_label(r))}</td></tr>'
    )


def _details(r: ClaimResult, seen: dict) -> str:
    """One claim's evidence: the decision in a few lines, the figure, and the raw evidence in a
    collapsed ``<details>``."""
    anchor = html.escape(r.id.replace("/", "-"))
    extra = "".join(
        f"<p><b>{k}:</b> {html.escape(str(v))}</p>"
        for k, v in (
            ("criterion", r.criterion),
            ("effect", _effect_text(r.effect)),
            ("on fresh seeds after the stop", _effect_text(r.confirmation)),
            ("seeds", r.seeds),
            ("test", r.test),
            ("uncertainty", r.uncertainty),
            ("reason", r.reason),
            ("seconds", f"{r.seconds:.2f}"),
        )
        if v
    )
    err = f"<pre class=err>{html.escape(r.error)}</pre>" if r.error else ""
    body = json.dumps(jsonable(r.evidence), indent=2)
    n = body.count("\n") + 1
    raw = (f"<details><summary>evidence ({n} lines of JSON)</summary>"
           f"<pre>{html.escape(body)}</pre></details>") if r.evidence else ""  # fmt: skip
    return (
        f'<details class=claim id="{anchor}"><summary><b>{html.escape(r.id)}</b>: '
        f"{html.escape(verdict_label(r))} &middot; {html.escape(str(r.stated))}</summary>"
        f"{extra}{err}{_img(r, seen)}{raw}</details>"
    )


def to_html(results: list[ClaimResult], *, tier: str, seconds: float) -> str:
    """A self-contained HTML page (viewport-ready): per section (the papers' claims; the
    measurements, implementation invariants and unstated formulas; the claims not run), a
    table, then each
    claim's evidence collapsed in a ``<details>`` with its figure inline (alt text saying what
    it shows)."""
    seen: dict = {}
    parts = []
    for title, keep in HTML_SECTIONS:
        rows = [r for r in results if keep(r)]
        if not rows:
            continue
        parts.append(
            f"<h2>{html.escape(title)}</h2>\n<table><tr><th>claim</th><th>source</th>"
            "<th>stated</th><th>measured</th><th>verdict</th></tr>\n"
            + "\n".join(_row(r) for r in rows)
            + "\n</table>\n"
            + "\n".join(_details(r, seen) for r in rows)
        )
    body = "\n".join(parts)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>fedtheory verify</title>
<style>
body{{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em}}
table{{border-collapse:collapse;margin-bottom:1em}}
td,th{{border:1px solid #bbb;padding:4px 8px;vertical-align:top}}
pre{{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:85%}}pre.err{{background:#fde}}
details.claim{{border-top:1px solid #ddd;padding:4px 0}}summary{{cursor:pointer}}
img{{max-width:100%;height:auto}}
</style></head><body>
<h1>fedtheory verify</h1>
<p>fedtheory {html.escape(__version__)}, {html.escape(tier)} tier, {len(results)} results in
{seconds:.1f} s. {html.escape(summary(results))}.</p>
{body}
</body></html>
"""


#: The catalog's sections, by the claim id's letter (docs/claims.md).
SECTIONS = {
    "G": "Graphs and mixing matrices",
    "P": "Participation and stochastic matrices",
    "F": "FedAvg bias (003 Sec. 2, App. C)",
    "C": "FOCUS and SG-FOCUS (003)",
    "A": "Adaptive federated optimization with gossip (000, 004)",
    "N": "Neural networks (MNIST-1D; the optional extra 'nn')",
}
#: The markers around the generated part of docs/claims.md (the rest is written by hand).
CATALOG_BEGIN = (
    "<!-- BEGIN claim catalog: generated from the registry by "
    "`python -m fedtheory.verify catalog docs/claims.md`; edit the claims' docstrings -->"
)
CATALOG_END = "<!-- END claim catalog -->"


def to_markdown(results: list[ClaimResult], *, tier: str, seconds: float) -> str:
    """The verdict table as a Markdown page (``fedtheory verify --markdown docs/verdicts.md``):
    the table ``fedtheory verify`` prints, its summary line and the run's provenance."""
    prov = provenance()
    return "\n".join([
        "# Verdicts, as `make run` prints them",
        "",
        f"Generated by `fedtheory verify{' --full' if tier == FULL else ''} --markdown "
        f"docs/verdicts.md` on {prov['date']} (fedtheory {__version__}, commit "
        f"{prov['commit']}), {tier} tier, {seconds:.0f} s. The verdicts are computed from the "
        "measurement with the rule fixed in each claim's docstring (docs/claims.md); `fails` is a "
        "result, not an error.",
        "",
        "```",
        format_table(results),
        "",
        f"{len(results)} results ({tier} tier): {summary(results)}",
        "```",
        "",
    ])  # fmt: skip


def catalog_markdown(claims: list[Claim] | None = None) -> str:
    """The claim catalog as Markdown, from the registry: per claim its id, source, statement,
    where it runs (tier, optional extras) and its docstring (the experiment and the decision
    rule fixed before measuring), grouped by :data:`SECTIONS`."""
    claims = all_claims() if claims is None else claims
    lines: list[str] = []
    current = None
    for c in claims:
        section = SECTIONS.get(c.group, "Other claims")
        if section != current:
            lines += [f"## {section}", ""]
            current = section
        runs = ("quick and thorough tiers" if c.tier == QUICK
                else "thorough tier only (`fedtheory verify --full`)")  # fmt: skip
        needs = "".join(f"; needs the optional extra `{e}` (`{install_hint(e)}`)"
                        for e in c.needs)  # fmt: skip
        lines += [
            f"### {c.id} ({c.source})",
            "",
            f"**Stated:** {c.stated}. **Runs in:** {runs}{needs}.",
            "",
            inspect.cleandoc(c.check.__doc__ or "(no docstring)"),
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def replace_catalog(text: str, catalog: str) -> str:
    """``text`` (docs/claims.md) with the part between :data:`CATALOG_BEGIN` and
    :data:`CATALOG_END` replaced by ``catalog``.

    Raises
    ------
    FedTheoryError
        When the markers are missing or out of order.
    """
    i, j = text.find(CATALOG_BEGIN), text.find(CATALOG_END)
    if i < 0 or j < i:
        raise FedTheoryError(
            "docs/claims.md has no generated-catalog markers: add the lines "
            f"{CATALOG_BEGIN!r} and {CATALOG_END!r} where the catalog goes"
        )
    return text[: i + len(CATALOG_BEGIN)] + "\n\n" + catalog + "\n" + text[j:]


def write_catalog(path: str | Path) -> Path:
    """Regenerate the catalog part of ``path`` (docs/claims.md) from the registry, atomically."""
    p = Path(path)
    return write_atomic(p, replace_catalog(p.read_text(), catalog_markdown()))
