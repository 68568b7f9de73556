"""The catalog's implied-constant rows on both classes (C1/rate, F2/floor): the general class's
constant and the quadratic one on the reduced papers' files, and one line naming the optional
extra where performance estimation is not installed."""

from __future__ import annotations

import math

import pytest

from fedtheory.bounds import check_classes, load_spec, paper_bounds
from fedtheory.errors import MissingExtraError
from fedtheory.verify import Context
from fedtheory.verify.claims import _implied
from fedtheory.verify.claims._implied import BOTH_CLASSES, both_classes


def test_the_rows_name_shipped_files_the_general_class_solves_whole():
    for row, name in BOTH_CLASSES.items():
        spec = load_spec(paper_bounds()[name])
        assert spec.participation == "full", row  # a sampled floor is not a fixed point


@pytest.mark.slow
def test_the_floor_row_reports_both_classes_constants():
    pytest.importorskip("PEPit", reason="the optional extra 'pep' is not installed")
    text, ev = both_classes(BOTH_CLASSES["F2/floor"], Context())
    q, g = ev["quadratic"], ev["general"]
    assert math.isfinite(q["implied_constant"]) and math.isfinite(g["implied_constant"])
    spec = load_spec(paper_bounds()[BOTH_CLASSES["F2/floor"]])
    assert len(g["settings"]) == len(spec.clients) * len(spec.local_steps)
    # the constant is the one `fedtheory bound NAME --class both` reports (same default budget)
    res = check_classes(spec, functions="both", seed=0, cross_check=True)
    assert q["implied_constant"] == pytest.approx(res.quadratic.implied["value"], rel=1e-12)
    assert g["implied_constant"] == pytest.approx(res.general.implied["value"], rel=1e-12)
    # every general worst floor at least the quadratic worst found at its setting
    for row in res.by_setting():
        assert not row["ratio"] < 1 - 1e-5, row
    assert "quadratic c = " in text and "general smooth strongly convex c = " in text


def test_without_the_extra_the_row_keeps_its_quadratic_constant(monkeypatch):
    def missing(*args, **kwargs):
        raise MissingExtraError("performance estimation needs the optional extra 'pep'")

    monkeypatch.setattr(_implied, "check_general", missing)
    text, ev = both_classes(BOTH_CLASSES["F2/floor"], Context())
    assert math.isfinite(ev["quadratic"]["implied_constant"])
    assert "extra 'pep'" in ev["general"]["not_run"] and "not computed" in text
