"""Verification of the papers' claims (docs/claims.md): one registered check per claim.

Each check runs a small experiment with the toolkit's own machinery and returns what was stated,
what was measured and a verdict computed from the measurement: ``holds``, ``fails`` or
``outside assumptions``. A check that crashes (a module that does not import included) has no
verdict: it is recorded as not run and makes ``fedtheory verify`` exit non-zero.

Examples
--------
>>> from fedtheory.verify import run, Context
>>> [r.verdict for r in run("G2", Context())]  # doctest: +SKIP
['holds']
"""

from __future__ import annotations

# Importing the catalog registers every claim; it comes last because the claim modules use the
# registry above. ``fedtheory.verify`` without its claims would be an empty catalog.
from fedtheory.verify import claims  # noqa: F401
from fedtheory.verify.registry import FULL, QUICK, REGISTRY, Claim, Context, all_claims, claim
from fedtheory.verify.result import (
    FAILS,
    HOLDS,
    NOT_RUN,
    OUTSIDE,
    VERDICTS,
    ClaimResult,
    Outcome,
    judge,
    outside,
)
from fedtheory.verify.runner import run_claim, run_claims, select


def run(only=None, ctx: Context | None = None, *, quiet: bool = True) -> list[ClaimResult]:
    """Run the claims named in ``only`` (all when None) and return their results."""
    return run_claims(select(only), ctx or Context(), quiet=quiet)


__all__ = [
    "FAILS",
    "FULL",
    "HOLDS",
    "NOT_RUN",
    "OUTSIDE",
    "QUICK",
    "REGISTRY",
    "VERDICTS",
    "Claim",
    "ClaimResult",
    "Context",
    "Outcome",
    "all_claims",
    "claim",
    "judge",
    "outside",
    "run",
    "run_claim",
    "run_claims",
    "select",
]
