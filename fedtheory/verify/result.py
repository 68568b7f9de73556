"""What a claim check returns: stated, measured, verdict and evidence.

A verdict is computed from a measurement, never written in. The helpers below turn a measured
condition into a verdict (:func:`judge`) and mark a setting that violates the theorem's
hypotheses (:func:`outside`). A check that cannot run (a crash, a module that does not import)
has no verdict: it is recorded as not run and makes ``fedtheory verify`` exit non-zero.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from fedtheory.io import jsonable

HOLDS = "holds"
FAILS = "fails"
OUTSIDE = "outside assumptions"
NOT_RUN = "not run"  # the check crashed: no verdict (fedtheory verify exits 1)
VERDICTS = (HOLDS, FAILS, OUTSIDE)


@dataclass
class Outcome:
    """The measurement of one claim (or one regime of it), with its verdict.

    Build it with :func:`judge` or :func:`outside`, not by writing a verdict in.
    """

    measured: Any
    verdict: str
    evidence: dict = field(default_factory=dict)
    criterion: str = ""
    uncertainty: str | None = None
    figure: str | None = None
    sub: str | None = None  # regime suffix: "uniform" makes the id "C2/uniform"
    stated: str | None = None  # overrides the claim's statement for this regime

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")


def judge(ok: bool, measured: Any, *, criterion: str, **kw: Any) -> Outcome:
    """``holds`` when the measured condition ``ok`` is true, ``fails`` otherwise.

    ``criterion`` states the threshold in words (it was fixed before looking at results and is
    repeated in the claim's docstring).
    """
    return Outcome(measured, HOLDS if bool(ok) else FAILS, criterion=criterion, **kw)


def outside(reason: str, measured: Any, **kw: Any) -> Outcome:
    """The setting violates an assumption of the theorem; ``reason`` names which."""
    ev = dict(kw.pop("evidence", {}))
    ev["violated_assumption"] = reason
    return Outcome(measured, OUTSIDE, evidence=ev, **kw)


@dataclass
class ClaimResult:
    """One row of the verification report (the JSON contract: ``id``, ``verdict``, ``stated``,
    ``measured``, plus the rest)."""

    id: str
    source: str
    stated: str
    measured: Any
    verdict: str
    evidence: dict = field(default_factory=dict)
    criterion: str = ""
    uncertainty: str | None = None
    figure: str | None = None
    tier: str = "quick"
    seconds: float = 0.0
    ran: bool = True
    reason: str | None = None  # which assumption is violated, or why the check did not run
    error: str | None = None  # the crash, when the check could not run

    def to_dict(self) -> dict:
        return jsonable(asdict(self))
