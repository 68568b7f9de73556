"""Claims whose rules were made able to fail (C7 on a non-quadratic problem, A12's 004 Rem. 5.9
equality against the accuracy floor), on their quick tier where it takes seconds."""

from __future__ import annotations

import numpy as np
import pytest

from fedtheory.verify import FAILS, HOLDS, INCONCLUSIVE, Context, run
from fedtheory.verify.claims.adaptive import _a12_partial_equals_full
from fedtheory.verify.claims.focus import C7_SCALES, EXACT, _c7_problem


def test_c7s_heterogeneity_changes_the_problem_not_its_constants():
    """The rule's premise: at every h the same L and mu (Theorem 1's constants), while x* moves
    (on a quadratic family only a shift would, and nothing could fail)."""
    probs = [_c7_problem(h) for h in C7_SCALES]
    assert len({p.L for p in probs}) == 1 and len({p.mu for p in probs}) == 1
    xs = [p.x_star for p in probs]
    assert min(np.linalg.norm(a - b) for a, b in zip(xs, xs[1:], strict=False)) > 1e-3


@pytest.mark.slow
def test_c7_is_a_check_that_can_fail():
    """C7/focus's rule applied to FedAvg (the control) would not hold: its final errors sit far
    above 1e-10 at every h, so exact convergence is a property FOCUS can lack; C7/fedavg is
    judged by the interval of a measured exponent."""
    focus, fedavg = run("C7", Context())
    assert focus.id == "C7/focus" and fedavg.id == "C7/fedavg"
    control = focus.evidence["fedavg_control_median_final"]
    assert all(v > 1e3 * EXACT for v in control.values())
    per_h = focus.evidence["verdict_per_h"]
    assert focus.verdict == (
        FAILS
        if FAILS in per_h.values()
        else HOLDS
        if set(per_h.values()) == {HOLDS}
        else INCONCLUSIVE
    )
    e = fedavg.effect
    assert e["ci_low"] < e["estimate"] < e["ci_high"] and "exponent" in e["unit"]


@pytest.mark.slow
def test_rem59_compares_partial_and_full_participation_against_the_floor():
    """004 Rem. 5.9's equality is judged against absolute_floor at each seed's scale: the
    verdict follows the largest difference over the floor, which is finite and computed."""
    o = _a12_partial_equals_full(Context())
    per_c = o.evidence["per_constant"]
    over = max(max(v["largest_difference_over_floor"]) for v in per_c.values())
    assert o.effect.estimate == pytest.approx(over)
    assert o.verdict == (HOLDS if over <= 1.0 else FAILS)
    floors = np.concatenate([np.asarray(v["floor_per_seed"]) for v in per_c.values()])
    assert np.all(floors > 0) and np.all(floors < 1e-6)
