"""A table a reviewer reads first: ``fedtheory verify`` prints the findings (the count line,
then the crashed, failing and inconclusive results grouped, one line each) before the full
table, and the measured texts read as sentences a reviewer would sign."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fedtheory.analysis.stats import Comparison, Effect
from fedtheory.cli import main
from fedtheory.verify import REGISTRY, Claim, all_claims, judge, judge_effect
from fedtheory.verify.claims._common import ordered_text
from fedtheory.verify.regime import ShapeTest
from fedtheory.verify.report import FINDINGS_WIDTH, claim_seconds, findings, first_clause
from fedtheory.verify.result import ClaimResult

EX = dict(effect=Effect.exact(1.0, "unit"), test="exact")


def _fails(ctx):
    return judge(
        False,
        "X reaches 1e-10, 3 +- 1 rounds before Y (5 of 5 seeds); exact: 0.5",
        criterion="c",
        **EX,
    )


def _undecided(ctx):
    effect = Effect(0.1, -0.5, 0.7, "u", 0.95, 5)
    return [
        judge_effect(
            effect,
            "ratio 1.1 [0.6, 2.0]; more",
            criterion="c",
            test="t",
            sub="a",
            reason="the interval contains 1",
        ),
        judge(True, "fine", criterion="c", sub="b", **EX),
    ]


def _crash(ctx):
    raise ZeroDivisionError("boom")


@pytest.fixture
def three_kinds(monkeypatch):
    all_claims()
    for cid, fn in (("Z1", _fails), ("Z2", _undecided), ("Z3", _crash)):
        regimes = ("a", "b") if cid == "Z2" else ()  # the regimes its outcomes report
        claim = Claim(cid, "test", f"test claim {cid}", fn, regimes=regimes)
        monkeypatch.setitem(REGISTRY, cid, claim)


def test_verify_prints_the_findings_first_then_the_full_table(three_kinds, capsys):
    assert main(["verify", "--only", "Z1,Z2,Z3", "--workers", "1"]) == 1  # Z3 crashed
    out = capsys.readouterr().out
    head, _, table = out.partition("The full table (4 results):")
    lines = head.strip().splitlines()
    assert lines[0].startswith("4 results in ") and "1 fails" in lines[0]
    assert lines[1:] == [
        "",
        "CRASHED (1):",
        "  Z3            ZeroDivisionError: boom",
        "",
        "fails (1):",
        "  Z1            X reaches 1e-10, 3 +- 1 rounds before Y (5 of 5 seeds)",
        "",
        "inconclusive (1):",
        "  Z2/a          ratio 1.1 [0.6, 2.0] (the interval contains 1)",
    ]
    assert (
        "claim" in table
        and "Z2/b" in table
        and table.rstrip().splitlines()[-1].startswith("4 results in ")
    )


def test_findings_are_one_short_line_each_and_say_when_there_are_none():
    def row(i, verdict, measured):
        return ClaimResult(id=f"Q{i}", source="s", stated="t", measured=measured, verdict=verdict)

    many = [row(i, "fails", "word " * 80) for i in range(3)] + [row(9, "holds", "ok")]
    text = findings(many)
    assert all(len(line) <= FINDINGS_WIDTH for line in text.splitlines())
    assert [line.split()[0] for line in text.splitlines()[3:]] == ["Q0", "Q1", "Q2"]
    assert "No claim fails" in findings([row(1, "holds", "ok")])


def test_a_finding_is_cut_at_the_measurements_first_clause_never_inside_a_parenthesis():
    # A11 and A5/adapted-complete: a ';' inside the parenthesis is not the end of the clause
    a11 = "K exponent on the ring (rho 0.995; c = 0.01, 0.02): +0.18 [-0.06, +0.41]; control, -0.4"
    assert (
        first_clause(a11)
        == "K exponent on the ring (rho 0.995; c = 0.01, 0.02): +0.18 [-0.06, +0.41]"
    )
    measured = "X / Y ratio 4.48 [1.95, 10.3] (margin 1.25; 8 of 8 seeds); Z"
    long_id = ClaimResult(
        id="A5/adapted-complete", source="s", stated="t", verdict="fails", measured=measured
    )
    short = ClaimResult(id="C8", source="s", stated="t", verdict="fails", measured="a " * 80)
    lines = findings([long_id, short]).splitlines()[3:]
    assert (
        lines[0]
        == "  A5/adapted-complete X / Y ratio 4.48 [1.95, 10.3] (margin 1.25; 8 of 8 seeds)"
    )
    assert lines[1].index("a a") == lines[0].index("X /")  # one column for the ids
    assert all(len(line) <= FINDINGS_WIDTH for line in lines)


@given(st.text(alphabet="ab ;,", max_size=40))
def test_without_brackets_the_first_clause_ends_at_the_first_semicolon(text):
    assert first_clause(text) == text.split(";")[0]


def test_a_claims_seconds_are_its_results_together():
    rs = [
        ClaimResult(
            id=f"A6/{k}", source="s", stated="t", measured="m", verdict="fails", seconds=17.85
        )
        for k in ("a", "b")
    ]
    rs.append(
        ClaimResult(id="C1", source="s", stated="t", measured="m", verdict="holds", seconds=2.0)
    )
    assert claim_seconds(rs) == {"A6": pytest.approx(35.7), "C1": 2.0}


def _e(est, lo, hi):
    return Effect(est, lo, hi, "u")


def test_a_shape_reading_says_how_the_metric_moves_and_never_calls_a_miss_a_fit():
    # 000 Cor. 4.7 read in M (A12/AFGA): the metric falls like M^-1.94, far faster than the
    # bound's M^-0.5; the closest a M^-0.5 + b misses it by 657%
    text = ShapeTest(
        -0.5, 0.209, 0.0, _e(-1.94, -2.03, -1.84), _e(-1.44, -1.53, -1.34), 6.572, 0.975
    ).text("M")
    assert "fits" not in text
    assert text.startswith("slope in log M -1.94 [-2.03, -1.84]: falls faster than M^-0.5;")
    assert "closest a M^-0.5 + b is 0.209 M^-0.5 + 0, up to 657.2% off the metric" in text
    rises = ShapeTest(-0.5, 0.0, 0.0172, _e(0.41, 0.03, 0.78), _e(0.41, 0.03, 0.78), 0.405, 0.975)
    assert "rises, where the shape M^-0.5 falls" in rises.text("M")
    near = ShapeTest(-0.5, 0.93, 0.03, _e(-0.47, -0.52, -0.42), _e(0, -0.01, 0.01), 0.03, 0.975)
    assert "consistent with the shape's K^-0.5" in near.text("K")
    slower = ShapeTest(0.5, 8.55, 3.17, _e(0.41, 0.36, 0.46), _e(0, 0, 0), 0.003, 0.975)
    assert "rises more slowly than K^0.5" in slower.text("K")


def test_a_lead_reads_as_a_sentence():
    values = [3.0, 2.0, 4.0, 3.5, 2.5]
    comp = Comparison("lead", np.array(values), list(range(5)), _e(3.0, 2.3, 3.7), looks=1)
    assert ordered_text(comp, "X", "Y", "reaches 1e-10", "rounds before").startswith(
        "X reaches 1e-10, 3 +- "
    )
    assert ordered_text(comp, "X", "Y", "is", "more accurate than").startswith("X is 3 +- ")
