"""What a claim check returns: stated, measured, verdict, and how the verdict was reached.

A verdict is computed from a measurement, never written in. Seven words (docs/claims.md):

- ``holds`` / ``fails``: the measurement supports / contradicts the claim as the paper states
  it. For a random experiment this means a confidence interval excludes the null value on the
  claimed / the opposite side (:func:`judge_effect`); for an exact computation, a tolerance
  (:func:`judge`).
- ``inconclusive``: the interval contains the null value after the tier's seed budget (a tie
  included), or a target was not reached within the horizon.
- ``measured``: a quantity reported without a verdict, because no outcome of the measurement
  could have contradicted the claim (e.g. the constant a shape with a free constant implies:
  some finite constant always exists). Kept apart from the verdicts about the papers and not
  counted among them (:func:`measurement`).
- ``outside assumptions``: the setting violates a hypothesis of the theorem (:func:`outside`).
- ``invariant``: a property of the implementation (e.g. FOCUS's tracking identity), kept apart
  from the claims about the papers (:func:`invariant`). A violated invariant is a bug: it
  raises, and the runner records a crash.
- ``not stated``: the paper's formula is not in the available text (:func:`not_stated`, naming
  the theorem and what is lost).

Every outcome carries the decision rule fixed before measuring (``criterion``, also in the
claim's docstring), the effect with its interval and unit (:class:`~fedtheory.analysis.stats.
Effect`), the number of seeds and the test used. Where seeds were drawn sequentially and the
sampling stopped early, ``confirmation`` holds the effect on a fresh block of seeds drawn after
the stop: an estimate the stopping rule did not select (the decision's own estimate is inflated
by stopping when the interval first excludes 0).

Two margins apply to every verdict, whichever claim computes it:

- **A decision must survive its fresh-seed check.** An outcome ``holds`` or ``fails`` with a
  ``confirmation`` keeps its verdict only when the confirmation's interval lies on the same side
  of the null value (``Outcome.null``: 0, or a non-inferiority margin) as the decisive effect's;
  otherwise it is ``inconclusive`` with that reason (:func:`replicated`). A decision the
  stopping rule selected and fresh seeds do not reproduce is not a result.
- **A tie at the computation's accuracy decides nothing.** :func:`verdict_of` and
  :func:`judge_effect` take a ``floor`` (:func:`fedtheory.analysis.accuracy.absolute_floor` at
  the quantity's scale): the interval must clear the null value by more than it, so a quantity
  that is zero in exact arithmetic never decides by its rounding.

A claim without a verdict is ``not run``, for one of two reasons: it was not asked to run here
(a thorough-tier claim in the quick tier, an optional extra that is not installed: ``reason``
says which and how to get it; ``fedtheory verify`` still exits 0), or it crashed (a module that
does not import, a violated invariant: ``error`` holds the traceback and ``fedtheory verify``
exits 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from fedtheory.analysis.stats import Effect
from fedtheory.io import jsonable

HOLDS = "holds"
FAILS = "fails"
INCONCLUSIVE = "inconclusive"
OUTSIDE = "outside assumptions"
INVARIANT = "invariant"
NOT_STATED = "not stated"
MEASURED = "measured"
NOT_RUN = "not run"  # no verdict: skipped (tier, missing extra) or crashed (exit 1)
VERDICTS = (HOLDS, FAILS, INCONCLUSIVE, OUTSIDE, MEASURED, INVARIANT, NOT_STATED)
#: Verdicts about what the papers state, each of which the measurement could have turned the
#: other way (the others report a quantity, describe the implementation or the text).
PAPER_VERDICTS = (HOLDS, FAILS, INCONCLUSIVE, OUTSIDE)


class InvariantViolation(AssertionError):
    """An implementation invariant does not hold: a bug, recorded as a crash, not a verdict."""


@dataclass
class Outcome:
    """The measurement of one claim (or one regime of it), with its verdict.

    Build it with :func:`judge`, :func:`judge_effect`, :func:`outside`, :func:`invariant`,
    :func:`measurement` or :func:`not_stated`, not by writing a verdict in. A ``holds`` or
    ``fails`` with a ``confirmation`` that does not lie on the decisive effect's side of
    ``null`` becomes ``inconclusive`` here (:func:`replicated`; module docstring).

    Attributes
    ----------
    measured : str or number
        What the table shows.
    verdict : str
        One of :data:`VERDICTS`.
    criterion : str
        The decision rule, fixed before measuring.
    effect : Effect
        The effect with its interval and unit (a degenerate interval for an exact value).
    seeds : int or None
        Seeds behind the verdict (None: no random draw).
    test : str
        How the interval was obtained.
    exact : str or None
        The exact value where one is computed (e.g. from a closed form), next to ``measured``.
    null : float
        The value the effect is judged against (0; a non-inferiority margin), read by the
        fresh-seed check.
    """

    measured: Any
    verdict: str
    evidence: dict = field(default_factory=dict)
    criterion: str = ""
    effect: Effect | None = None
    seeds: int | None = None
    test: str = ""
    exact: str | None = None
    uncertainty: str | None = None
    figure: str | None = None
    sub: str | None = None  # regime suffix: "uniform" makes the id "C2/uniform"
    stated: str | None = None  # overrides the claim's statement for this regime
    reason: str | None = None  # why: the violated assumption, what is not stated, ...
    confirmation: Effect | None = None  # the effect on fresh seeds after a sequential stop
    null: float = 0.0  # what the effect is judged against (0, or a non-inferiority margin)

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")
        if self.verdict != NOT_STATED and (self.effect is None or not self.test):
            raise ValueError(
                f"a {self.verdict!r} outcome needs its effect and the test used "
                f"(effect={self.effect!r}, test={self.test!r})"
            )
        if self.verdict in (HOLDS, FAILS) and self.confirmation is not None:
            if not replicated(self.effect, self.confirmation, null=self.null):
                why = (
                    f"the fresh-seed check ({self.confirmation.text(4)}) does not lie on the "
                    f"side of {self.null:g} that decided '{self.verdict}' "
                    f"({self.effect.text(4)})"
                )
                self.evidence = {**self.evidence, "verdict_before_fresh_seed_check": self.verdict}
                self.reason = f"{self.reason}; {why}" if self.reason else why
                self.verdict = INCONCLUSIVE


def replicated(effect: Effect, confirmation: Effect, *, null: float = 0.0) -> bool:
    """Whether the fresh-seed check agrees with a decision: ``confirmation``'s interval lies on
    the same side of ``null`` as ``effect``'s, and that side is not 0 (a tie, a missing
    interval or a fresh block that diverged does not confirm anything)."""
    side = effect.side(null)
    return side != 0 and confirmation.side(null) == side


def judge(
    ok: bool, measured: Any, *, criterion: str, effect: Effect, test: str, **kw: Any
) -> Outcome:
    """``holds`` when the measured condition ``ok`` is true, ``fails`` otherwise.

    For exact computations (closed forms, deterministic runs, a property checked on every
    sample): there is no sampling error to weigh. ``criterion`` states the threshold in words
    (fixed before looking at results and repeated in the claim's docstring).
    """
    return Outcome(
        measured, HOLDS if bool(ok) else FAILS, criterion=criterion, effect=effect, test=test, **kw
    )


def verdict_of(effect: Effect, *, null: float = 0.0, claimed: int = 1, floor: float = 0.0) -> str:
    """The interval rule: ``holds`` when the interval excludes ``null`` on the ``claimed`` side
    (+1: above, -1: below), ``fails`` when it excludes it on the other side, else
    ``inconclusive`` (an interval that contains the null value, a tie, decides nothing). With
    ``floor`` > 0 the interval must clear ``null`` by more than ``floor`` (a tie at the
    computation's accuracy, :func:`fedtheory.analysis.accuracy.absolute_floor`)."""
    if claimed not in (1, -1):
        raise ValueError(f"claimed must be +1 or -1, got {claimed}")
    side = effect.side(null, floor)
    return HOLDS if side == claimed else FAILS if side == -claimed else INCONCLUSIVE


def judge_effect(
    effect: Effect,
    measured: Any,
    *,
    criterion: str,
    test: str,
    null: float = 0.0,
    claimed: int = 1,
    floor: float = 0.0,
    **kw: Any,
) -> Outcome:
    """An outcome by the interval rule (:func:`verdict_of`); a ``confirmation`` is checked
    against ``null`` (:func:`replicated`)."""
    return Outcome(
        measured,
        verdict_of(effect, null=null, claimed=claimed, floor=floor),
        criterion=criterion,
        effect=effect,
        test=test,
        null=null,
        **kw,
    )


def judge_equivalence(
    effect: Effect, measured: Any, *, low: float, high: float, criterion: str, test: str, **kw: Any
) -> Outcome:
    """``holds`` when the interval lies inside [low, high] ("comes close"), ``fails`` when it
    lies wholly outside, ``inconclusive`` otherwise (two one-sided tests)."""
    side = effect.within(low, high)
    verdict = HOLDS if side == 1 else FAILS if side == -1 else INCONCLUSIVE
    return Outcome(measured, verdict, criterion=criterion, effect=effect, test=test, **kw)


def all_of(verdicts: Sequence[str]) -> str:
    """A claim that needs every part (e.g. FOCUS beats every baseline): ``fails`` when one part
    fails, ``holds`` when all hold, else ``inconclusive``."""
    vs = list(verdicts)
    if FAILS in vs:
        return FAILS
    return HOLDS if vs and all(v == HOLDS for v in vs) else INCONCLUSIVE


def unanimous(verdicts: Sequence[str]) -> str:
    """One verdict over settings that must agree (e.g. three step-size constants): the common
    verdict, or ``inconclusive`` when it hinges on the setting."""
    vs = set(verdicts)
    return vs.pop() if len(vs) == 1 else INCONCLUSIVE


def combined(
    verdict: str, measured: Any, *, criterion: str, effect: Effect, test: str, **kw: Any
) -> Outcome:
    """An outcome whose verdict was combined from parts by :func:`all_of` or :func:`unanimous`
    (each part judged by the interval rule); a ``confirmation`` (the decisive part's fresh
    seeds) is checked against ``null`` (keyword, default 0: :func:`replicated`)."""
    if verdict not in (HOLDS, FAILS, INCONCLUSIVE):
        raise ValueError(f"a combined verdict is holds, fails or inconclusive, got {verdict!r}")
    return Outcome(measured, verdict, criterion=criterion, effect=effect, test=test, **kw)


def outside(reason: str, measured: Any, **kw: Any) -> Outcome:
    """The setting violates an assumption of the theorem; ``reason`` names which."""
    ev = dict(kw.pop("evidence", {}))
    ev["violated_assumption"] = reason
    kw.setdefault(
        "criterion",
        "outside assumptions when the setting violates a hypothesis of the "
        "theorem (the violated one is named); no verdict on the rate there",
    )
    return Outcome(measured, OUTSIDE, evidence=ev, reason=reason, **kw)


def measurement(measured: Any, *, criterion: str, effect: Effect, test: str, **kw: Any) -> Outcome:
    """A quantity reported without a verdict (``measured``): no outcome of the measurement
    could have contradicted the claim, so it is not counted among the verdicts about the papers.
    ``criterion`` says why (e.g. "none: a finite implied constant exists for every shape and
    instance"); ``effect`` is the quantity."""
    return Outcome(measured, MEASURED, criterion=criterion, effect=effect, test=test, **kw)


def invariant(
    ok: bool, measured: Any, *, criterion: str, effect: Effect, test: str, **kw: Any
) -> Outcome:
    """An implementation invariant: ``invariant`` when it holds; raises
    :class:`InvariantViolation` (a crash, never a verdict) when it does not."""
    if not ok:
        raise InvariantViolation(f"invariant violated: {measured} (criterion: {criterion})")
    return Outcome(measured, INVARIANT, criterion=criterion, effect=effect, test=test, **kw)


def not_stated(what: str, measured: Any, **kw: Any) -> Outcome:
    """The paper's formula is not in the available text; ``what`` names the theorem and what is
    lost. ``measured`` may still report the measurement (for a later exact or stated value)."""
    kw.setdefault(
        "criterion",
        "none: the formula is not in the available text, so there is "
        "no stated value to meet (no verdict about the paper)",
    )
    return Outcome(measured, NOT_STATED, reason=what, **kw)


@dataclass
class ClaimResult:
    """One row of the verification report (the JSON contract: ``id``, ``verdict``, ``stated``,
    ``measured``, ``reason``, ``effect`` {estimate, ci_low, ci_high, unit}, ``seeds``, ``test``,
    plus the rest)."""

    id: str
    source: str
    stated: str
    measured: Any
    verdict: str
    evidence: dict = field(default_factory=dict)
    criterion: str = ""
    effect: dict = field(default_factory=lambda: Effect.none().to_dict())
    seeds: int | None = None
    test: str | None = None
    exact: str | None = None
    uncertainty: str | None = None
    figure: str | None = None
    tier: str = "quick"
    seconds: float = 0.0  # the claim's wall time, divided among its results
    cpu_seconds: float = 0.0  # the claim's CPU time (its process and children), divided likewise
    ran: bool = True
    reason: str | None = None  # the violated assumption, what is not stated, why not run
    error: str | None = None  # the crash, when the check could not run
    confirmation: dict | None = None  # effect on fresh seeds after a sequential stop

    @property
    def crashed(self) -> bool:
        """Not run because the check raised (``error`` holds it): ``fedtheory verify`` exits 1."""
        return not self.ran and self.error is not None

    @property
    def skipped(self) -> bool:
        """Not run by design: a thorough-tier claim in the quick tier, or a missing extra
        (``reason`` says which)."""
        return not self.ran and self.error is None

    @property
    def about_paper(self) -> bool:
        """False for measurements, implementation invariants and formulas the text does not
        state."""
        return self.verdict in PAPER_VERDICTS or not self.ran

    def to_dict(self) -> dict:
        return jsonable(asdict(self))
