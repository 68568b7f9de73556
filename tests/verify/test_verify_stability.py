"""The verdict-stability contract: for any two base seeds, no claim is ``holds`` at one and
``fails`` at the other. Run here for the cheap claims whose verdicts rest on random draws
(comparisons, exponents, floors) at several base seeds of the quick tier; N1 and A6 (minutes
each) are left to ``fedtheory verify --seed``."""

from __future__ import annotations

import pytest

from fedtheory.verify import FAILS, HOLDS, VERDICTS, Context, run

#: claim -> base seeds: C2 flipped at base seeds 0-5 and A5 at 0-2 before their verdicts read
#: intervals; the others are checked at a few seeds (the test's time is kept to about a minute
#: per worker).
CASES = {
    "C2": range(6),
    "A5": range(3),
    "A4": range(2),
    "C4": range(3),
    "C5": range(3),
    "F2": range(3),
    "F3": range(3),
}


@pytest.mark.slow
@pytest.mark.parametrize("claim_id", sorted(CASES))
def test_no_claim_holds_at_one_base_seed_and_fails_at_another(claim_id):
    seen: dict[str, dict[int, str]] = {}
    for seed in CASES[claim_id]:
        for r in run(claim_id, Context(seed=seed)):
            assert r.ran, r.error
            assert r.verdict in VERDICTS and r.test and r.effect["unit"]
            seen.setdefault(r.id, {})[seed] = r.verdict
    for rid, by_seed in seen.items():
        verdicts = set(by_seed.values())
        assert not {HOLDS, FAILS} <= verdicts, f"{rid} flips with the base seed: {by_seed}"
