"""Open a ``fedtheory verify --html`` report in a real browser and say what a reader sees.

Debian's ``chromium`` package, headless, driven by Playwright through ``executable_path`` (the
browser Playwright would download itself cannot be fetched here; ``.ci/run`` installs both).
:func:`inspect` loads the page from its file and returns the console errors and uncaught page
errors, every figure (whether it loaded: ``complete`` with a width), the ids of the open
``<details>`` and of the findings listed first, and the text of the first screen;
``--screenshot OUT.png`` also writes the first screen (1280 x 900), as docs/report-first-screen.png
was made::

    .venv/bin/fedtheory verify --html /tmp/report.html
    .venv/bin/python benchmarks/report_in_browser.py /tmp/report.html \\
        --screenshot docs/report-first-screen.png

Exit status 0 when the page has no console error and every figure loaded, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

#: Debian's chromium.
CHROMIUM = "/usr/bin/chromium"
#: Headless, no sandbox (root in CI), nothing fetched in the background.
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: The first screen of a laptop.
VIEWPORT = {"width": 1280, "height": 900}


def missing() -> str | None:
    """Why the browser check cannot run here (None: it can)."""
    if shutil.which(CHROMIUM) is None:
        return f"no {CHROMIUM} (apt-get install chromium; .ci/run installs it)"
    try:
        import playwright.sync_api  # noqa: F401, PLC0415  (optional: the browser check only)
    except ImportError:
        return "no Python playwright (pip install playwright; .ci/run installs it)"
    return None


def inspect(report: str | Path, screenshot: str | Path | None = None) -> dict:
    """Load ``report`` in headless Chromium and return what a reader sees (module docstring)."""
    from playwright.sync_api import sync_playwright  # noqa: PLC0415  (optional, see missing)

    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(Path(report).resolve().as_uri(), wait_until="load")
            images = page.eval_on_selector_all(
                "img",
                "els => els.map(e => ({id: e.id, alt: e.alt, complete: e.complete, "
                "width: e.naturalWidth, visible: e.checkVisibility()}))",
            )
            opened = page.eval_on_selector_all("details.claim[open]", "els => els.map(e => e.id)")
            findings = page.eval_on_selector_all("ul.findings li a", "els => els.map(e => e.text)")
            first = page.evaluate(
                "() => { const h = window.innerHeight; return Array.from("
                "document.querySelectorAll('h1, h2, li, summary')).filter(e => "
                "e.getBoundingClientRect().top < h).map(e => e.innerText) }"
            )
            if screenshot is not None:
                page.screenshot(path=str(screenshot))
        finally:
            browser.close()
    return {
        "errors": errors,
        "images": images,
        "open": opened,
        "findings": findings,
        "first_screen": first,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report", help="a fedtheory verify --html file")
    ap.add_argument("--screenshot", metavar="OUT.png", help="write the first screen here")
    args = ap.parse_args(argv)
    why = missing()
    if why:
        print(f"cannot open the report in a browser: {why}", file=sys.stderr)
        return 2
    seen = inspect(args.report, args.screenshot)
    print(json.dumps(seen, indent=1))
    broken = [i for i in seen["images"] if not (i["complete"] and i["width"] > 0)]
    return 1 if seen["errors"] or broken else 0


if __name__ == "__main__":
    sys.exit(main())
