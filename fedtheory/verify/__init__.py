"""Verification of the papers' claims (docs/claims.md): one registered check per claim.

Each check runs a small experiment with the toolkit's own machinery and returns what was stated,
what was measured and a verdict computed from the measurement (:mod:`fedtheory.verify.result`):
``holds``, ``fails``, ``inconclusive``, ``outside assumptions``, ``measured`` (a quantity no
outcome of which could contradict the claim), ``invariant`` (a property of the implementation)
or ``not stated`` (the paper's formula is not in the available text), with the
effect, its confidence interval, the number of seeds and the test behind it. A check that
crashes (a module that does not import included) has no verdict: it is recorded as not run and
makes ``fedtheory verify`` exit non-zero.

Importing this package registers the catalog (:mod:`fedtheory.verify.claims`).

Examples
--------
>>> from fedtheory.verify import run, Context
>>> [r.verdict for r in run("G2", Context())]  # doctest: +SKIP
['holds']
"""

from __future__ import annotations

# Importing the catalog registers every claim (the claim modules use the registry below, which
# they import themselves). ``fedtheory.verify`` without its claims would be an empty catalog.
from fedtheory.verify import claims  # noqa: F401
from fedtheory.verify.registry import FULL, QUICK, REGISTRY, Claim, Context, all_claims, claim
from fedtheory.verify.result import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    INVARIANT,
    MEASURED,
    NOT_RUN,
    NOT_STATED,
    OUTSIDE,
    PAPER_VERDICTS,
    VERDICTS,
    ClaimResult,
    InvariantViolation,
    Outcome,
    all_of,
    combined,
    invariant,
    judge,
    judge_effect,
    judge_equivalence,
    measurement,
    not_stated,
    outside,
    replicated,
    unanimous,
    verdict_of,
)
from fedtheory.verify.runner import run_claim, run_claims, select


def run(only=None, ctx: Context | None = None, *, quiet: bool = True) -> list[ClaimResult]:
    """Run the claims named in ``only`` (all when None) and return their results."""
    return run_claims(select(only), ctx or Context(), quiet=quiet)


__all__ = [
    "FAILS",
    "FULL",
    "HOLDS",
    "INCONCLUSIVE",
    "INVARIANT",
    "MEASURED",
    "NOT_RUN",
    "NOT_STATED",
    "OUTSIDE",
    "PAPER_VERDICTS",
    "QUICK",
    "REGISTRY",
    "VERDICTS",
    "Claim",
    "ClaimResult",
    "Context",
    "InvariantViolation",
    "Outcome",
    "all_claims",
    "all_of",
    "claim",
    "combined",
    "invariant",
    "judge",
    "judge_effect",
    "judge_equivalence",
    "measurement",
    "not_stated",
    "outside",
    "replicated",
    "run",
    "run_claim",
    "run_claims",
    "select",
    "unanimous",
    "verdict_of",
]
