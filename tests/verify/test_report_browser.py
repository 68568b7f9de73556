"""The HTML report opens on the findings, checked in a real browser: Debian's chromium, headless,
driven by Playwright (benchmarks/report_in_browser.py). The page renders without a console
error, every figure loads, the failing and inconclusive claims come first with their evidence
open and their figures in view, the others stay collapsed, and a claim's seconds are those of
its progress line."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from fedtheory.analysis.stats import Effect
from fedtheory.cli import main
from fedtheory.verify import REGISTRY, Claim, all_claims, judge, judge_effect

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "report_in_browser.py"


@pytest.fixture(scope="module")
def browser():
    spec = importlib.util.spec_from_file_location("_report_in_browser", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    why = module.missing()
    if why:
        pytest.skip(f"the report's browser check cannot run here: {why}")
    return module


def _drawn(ctx, cid: str) -> str:
    path = ctx.figure_path(cid)
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([1, 2, 4], [3, 2, 1])
    ax.set(xlabel="K", ylabel="metric")
    fig.savefig(path, dpi=50)
    plt.close(fig)
    return str(path)


def _fails(ctx):
    return judge(
        False,
        "B leads A by 3 rounds",
        criterion="c",
        figure=_drawn(ctx, "Y1"),
        effect=Effect(-3.0, -4.0, -2.0, "rounds"),
        test="paired t",
    )


def _undecided(ctx):
    figure = _drawn(ctx, "Y2")
    return [
        judge_effect(
            Effect(0.1, -0.5, 0.7, "u"),
            "ratio 1.1 [0.6, 2.0]",
            criterion="c",
            test="t",
            sub="a",
            figure=figure,
            reason="the interval contains 1",
        ),
        judge(
            True,
            "fine",
            criterion="c",
            sub="b",
            figure=figure,
            effect=Effect.exact(1.0, "u"),
            test="exact",
        ),
    ]


def _holds(ctx):
    return judge(
        True,
        "as stated",
        criterion="c",
        figure=_drawn(ctx, "Y3"),
        effect=Effect.exact(1.0, "u"),
        test="exact",
    )


@pytest.fixture
def report(monkeypatch, tmp_path, capsys):
    all_claims()
    for cid, fn in (("Y1", _fails), ("Y2", _undecided), ("Y3", _holds)):
        regimes = ("a", "b") if cid == "Y2" else ()  # the regimes its outcomes report
        claim = Claim(cid, "test", f"test claim {cid}", fn, regimes=regimes)
        monkeypatch.setitem(REGISTRY, cid, claim)
    monkeypatch.delenv("FEDTHEORY_NO_PROGRESS", raising=False)
    page = tmp_path / "report.html"
    assert main(["verify", "--only", "Y3,Y1,Y2", "--workers", "1", "--html", str(page)]) == 0
    return page, capsys.readouterr().err


def test_the_report_opens_on_the_findings_in_a_real_browser(browser, report):
    page, progress = report
    seen = browser.inspect(page)
    assert seen["errors"] == []
    assert seen["images"] and all(i["complete"] and i["width"] > 0 for i in seen["images"])
    assert seen["findings"] == ["Y1", "Y2/a"]  # the fails first, then the inconclusive
    assert sorted(seen["open"]) == ["Y1", "Y2-a"]  # only the findings' evidence is open
    visible = {i["id"]: i["visible"] for i in seen["images"]}
    assert visible["fig-Y1"] and visible["fig-Y2-a"]  # their figures in view
    assert not visible["fig-Y3"]  # a claim that holds stays collapsed
    assert seen["first_screen"][:2] == ["fedtheory verify", "Findings"]
    # a claim's seconds on the page are those its progress line said (all its results)
    html = page.read_text()
    for claim in ("Y1", "Y2", "Y3"):
        said = re.search(rf"claim \d of 3 done: {claim}\S* \S+ ([0-9.]+) s", progress).group(1)
        assert f"<b>seconds:</b> {said} s" in html, claim
    assert "(claim Y2: its 2 results together)" in html
