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
        lines += [
            "",
            "Not run here (thorough tier only, or an optional extra is missing):",
            *_rows(skipped),
        ]
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
NOT_VERDICTS = (
    "Not verdicts about the papers (measurements no outcome of which could contradict "
    "a claim; implementation invariants; formulas the available text does not state)"
)


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


#: The verdicts a reviewer reads first (:func:`findings`), in this order, crashes before them.
FIRST = ("fails", "inconclusive")
#: The width of a line of :func:`findings`.
FINDINGS_WIDTH = 118


def first_clause(text: str) -> str:
    """``text`` up to its first ';' outside brackets: a ';' inside ``(...)`` or ``[...]``
    separates the parts of a parenthesis ("K exponent on the ring (rho 0.995; c = 0.01, ...)"),
    not the measurement's clauses."""
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(depth - 1, 0)
        elif ch == ";" and depth == 0:
            return text[:i]
    return text


def headline(r: ClaimResult, width: int = FINDINGS_WIDTH - 16) -> str:
    """A result in one line: a crash's error, an inconclusive row's reason, else the first
    clause of its measurement (:func:`first_clause`), cut at a word to ``width``."""
    if r.crashed:
        text = (r.error or "").splitlines()[0] if r.error else "the check crashed"
    elif r.verdict == "inconclusive" and r.reason:
        text = f"{first_clause(_cell(r.measured))} ({r.reason})"
    else:
        text = first_clause(_cell(r.measured))
    return textwrap.shorten(text, width, placeholder=" ...")


def findings(
    results: list[ClaimResult], *, seconds: float | None = None, tier: str | None = None
) -> str:
    """What a reviewer reads first: the count line (:func:`summary`), then the crashed, failing
    and inconclusive results grouped by verdict, one line each (:func:`headline`); the full
    table (:func:`format_table`) follows them in ``fedtheory verify``'s output."""
    took = "" if seconds is None else f" in {seconds:.1f} s"
    where = "" if tier is None else f" ({tier} tier)"
    lines = [f"{len(results)} results{took}{where}: {summary(results)}"]
    groups = [("CRASHED", [r for r in results if r.crashed])]
    groups += [(v, [r for r in results if r.verdict == v and r.ran]) for v in FIRST]
    # the ids in one column, as wide as the longest shown (13 at least), the lines within width
    shown = [r.id for _, rows in groups for r in rows]
    col = max([13, *map(len, shown)])
    for title, rows in groups:
        if rows:
            lines += ["", f"{title} ({len(rows)}):"]
            lines += [f"  {r.id:<{col}} {headline(r, FINDINGS_WIDTH - col - 3)}" for r in rows]
    if not any(rows for _, rows in groups):
        lines += ["", "No claim fails, none is inconclusive and no check crashed."]
    return "\n".join(lines)


def claim_seconds(results: list[ClaimResult]) -> dict[str, float]:
    """Each claim's wall seconds (the sum over its results, which share them): the seconds its
    progress line said when it finished."""
    out: dict[str, float] = {}
    for r in results:
        claim = r.id.split("/")[0]
        out[claim] = out.get(claim, 0.0) + float(r.seconds or 0.0)
    return out


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
    color = _color(r)
    anchor = html.escape(r.id.replace("/", "-"))
    return (
        "<tr>"
        f'<td><a href="#{anchor}">{html.escape(r.id)}</a></td>'
        f"<td>{html.escape(r.source)}</td><td>{html.escape(str(r.stated))}</td>"
        f"<td>{html.escape(_measured(r))}</td>"
        f'<td style="background:{color}">{html.escape(verdict_label(r))}</td></tr>'
    )


def is_finding(r: ClaimResult) -> bool:
    """A result a reviewer reads first: a crash, a ``fails`` or an ``inconclusive``."""
    return r.crashed or (r.ran and r.verdict in FIRST)


def _took(r: ClaimResult, results: list[ClaimResult]) -> str:
    """The seconds of ``r``'s claim, all its results together (what its progress line said)."""
    claim = r.id.split("/")[0]
    mine = [x for x in results if x.id.split("/")[0] == claim]
    took = claim_seconds(mine).get(claim, 0.0)
    return f"{took:.1f} s" + (
        f" (claim {claim}: its {len(mine)} results together)" if len(mine) > 1 else ""
    )


def _details(r: ClaimResult, seen: dict, took: str) -> str:
    """One claim's evidence: the decision in a few lines, the figure, and the raw evidence in a
    collapsed ``<details>``; a finding's (:func:`is_finding`) is open, its figure in view.
    ``took``: the claim's seconds (:func:`_took`)."""
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
            ("seconds", took if r.ran or r.crashed else ""),
        )
        if v
    )
    err = f"<pre class=err>{html.escape(r.error)}</pre>" if r.error else ""
    body = json.dumps(jsonable(r.evidence), indent=2)
    n = body.count("\n") + 1
    raw = (
        (
            f"<details><summary>evidence ({n} lines of JSON)</summary>"
            f"<pre>{html.escape(body)}</pre></details>"
        )
        if r.evidence
        else ""
    )
    opened = " open" if is_finding(r) else ""
    return (
        f'<details class=claim id="{anchor}"{opened}><summary><b>{html.escape(r.id)}</b>: '
        f"{html.escape(verdict_label(r))} &middot; {html.escape(str(r.stated))}</summary>"
        f"{extra}{err}{_img(r, seen)}{raw}</details>"
    )


def _findings_html(results: list[ClaimResult]) -> str:
    """The page's first section: the findings as a list, one line each, linking to their open
    evidence just below."""
    rows = [r for r in results if is_finding(r)]
    if not rows:
        return (
            "<h2>Findings</h2>\n<p>No claim fails, none is inconclusive and no check crashed.</p>"
        )
    items = "\n".join(
        f'<li><a href="#{html.escape(r.id.replace("/", "-"))}">{html.escape(r.id)}</a> '
        f'<span class=verdict style="background:{_color(r)}">{html.escape(verdict_label(r))}'
        f"</span> {html.escape(headline(r))}</li>"
        for r in sorted(
            rows, key=lambda r: (not r.crashed, FIRST.index(r.verdict) if r.verdict in FIRST else 0)
        )
    )
    return (
        f"<h2>Findings</h2>\n<p>{len(rows)} of {len(results)} results fail, are "
        f"inconclusive or crashed; each one's evidence follows, open.</p>\n"
        f"<ul class=findings>\n{items}\n</ul>"
    )


def _color(r: ClaimResult) -> str:
    return "#f4a0a0" if r.crashed else _COLORS.get(r.verdict, "#e8e8e8")


def to_html(results: list[ClaimResult], *, tier: str, seconds: float) -> str:
    """A self-contained HTML page (viewport-ready) that opens on the findings: the crashed,
    failing and inconclusive results listed one line each, then their evidence open with the
    figures in view; then per section (the papers' claims; the measurements, implementation
    invariants and unstated formulas; the claims not run) a table and every other claim's
    evidence collapsed in a ``<details>``, figures inline (alt text saying what they show).
    A claim's seconds are its results' together, as its progress line said."""
    seen: dict = {}
    found = [r for r in results if is_finding(r)]
    parts = [_findings_html(results)]
    parts += [_details(r, seen, _took(r, results)) for r in found]
    for title, keep in HTML_SECTIONS:
        rows = [r for r in results if keep(r)]
        if not rows:
            continue
        parts.append(
            f"<h2>{html.escape(title)}</h2>\n<table><tr><th>claim</th><th>source</th>"
            "<th>stated</th><th>measured</th><th>verdict</th></tr>\n"
            + "\n".join(_row(r) for r in rows)
            + "\n</table>\n"
            + "\n".join(_details(r, seen, _took(r, results)) for r in rows if not is_finding(r))
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
ul.findings li{{margin:0.2em 0}}span.verdict{{padding:0 6px;border-radius:3px}}
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
    what ``fedtheory verify`` prints (the findings first, then the table and its summary line)
    and the run's provenance."""
    prov = provenance()
    return "\n".join(
        [
            "# Verdicts, as `make run` prints them",
            "",
            f"Generated by `fedtheory verify{' --full' if tier == FULL else ''} --markdown "
            f"docs/verdicts.md` on {prov['date']} (fedtheory {__version__}, commit "
            f"{prov['commit']}), {tier} tier, {seconds:.0f} s. The verdicts are computed from the "
            "measurement with the rule fixed in each claim's docstring (docs/claims.md); `fails` is a "
            "result, not an error.",
            "",
            "```",
            findings(results, tier=tier),
            "",
            f"The full table ({len(results)} results):",
            "",
            format_table(results),
            "",
            f"{len(results)} results ({tier} tier): {summary(results)}",
            "```",
            "",
        ]
    )


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
        runs = (
            "quick and thorough tiers"
            if c.tier == QUICK
            else "thorough tier only (`fedtheory verify --full`)"
        )
        needs = "".join(f"; needs the optional extra `{e}` (`{install_hint(e)}`)" for e in c.needs)
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
