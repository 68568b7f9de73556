"""The registry of claims: ids as in docs/claims.md, one small check function each.

A check receives a :class:`Context` (tier, seeds, where to draw figures) and returns an
:class:`~fedtheory.verify.result.Outcome` or a list of them (one per regime: ``C2/uniform``).
A claim declares where it is registered what it needs to run: the lowest tier that runs it
(``tier="full"``: heavy studies that only ``fedtheory verify --full`` runs), the optional
extras it imports (``needs=("nn",)``: MNIST-1D) and the regimes it reports
(``regimes=("full", "uniform", "arbitrary")``: ``C2/uniform``); the runner records "not run"
with the reason instead of calling a check that cannot run, refuses ``--only C2/bogus`` before
anything runs, and records a claim that reports an undeclared regime as a crash
(:mod:`fedtheory.verify.runner`).

Each claim's cost, the CPU seconds its check took per tier, is measured by
``benchmarks/bench_verify.py --update``, which writes :data:`COSTS_FILE`; the runner starts the
most expensive claims first (:meth:`Claim.cost`).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedtheory.extras import EXTRAS

QUICK, FULL = "quick", "full"


@dataclass
class Context:
    """What a check may use: the tier, a base seed and a folder for figures (None: draw none)."""

    tier: str = QUICK
    seed: int = 0
    figure_dir: Path | None = None

    @property
    def full(self) -> bool:
        return self.tier == FULL

    def pick(self, quick: Any, full: Any) -> Any:
        """The quick-tier or the thorough-tier value of a size."""
        return full if self.full else quick

    def figure_path(self, claim_id: str) -> Path | None:
        if self.figure_dir is None:
            return None
        self.figure_dir.mkdir(parents=True, exist_ok=True)
        return self.figure_dir / f"{claim_id.replace('/', '_')}.png"


@dataclass(frozen=True)
class Claim:
    """A registered claim.

    Attributes
    ----------
    id, source, stated : str
        Catalog id, the paper and section, the statement in one line.
    check : callable
        ``check(ctx) -> Outcome | list[Outcome]``; its docstring holds the experiment and the
        decision rule fixed before measuring (docs/claims.md is generated from it).
    tier : {"quick", "full"}
        The lowest tier that runs the claim (``"full"``: only ``fedtheory verify --full``).
    needs : tuple of str
        Optional extras (:data:`fedtheory.extras.EXTRAS`) the check imports.
    regimes : tuple of str
        The regimes the check reports (``sub`` of its outcomes; its rows ``C2/uniform``); empty
        for a claim of one row.
    """

    id: str
    source: str
    stated: str
    check: Callable[[Context], Any] = field(repr=False)
    tier: str = QUICK
    needs: tuple[str, ...] = ()
    regimes: tuple[str, ...] = ()

    @property
    def group(self) -> str:
        return self.id[0]

    def runs_in(self, tier: str) -> bool:
        """Whether ``tier`` runs this claim (the thorough tier runs every claim)."""
        return tier == FULL or self.tier == QUICK

    def cost(self, tier: str) -> float | None:
        """The CPU seconds this claim's check took in ``tier`` when last measured
        (:data:`COSTS_FILE`; the quick tier's where ``tier`` was not measured), or None when it
        was never measured."""
        costs = measured_costs()
        for t in (tier, QUICK):
            if self.id in costs.get(t, {}):
                return float(costs[t][self.id])
        return None


#: The measured cost of every claim: ``{"meta": {command, date, load, ...}, "quick": {id:
#: CPU seconds}, "full": {...}}``, written by ``benchmarks/bench_verify.py --update``.
COSTS_FILE = Path(__file__).with_name("costs.json")


@functools.cache
def measured_costs() -> dict:
    """The contents of :data:`COSTS_FILE` (empty when it does not exist)."""
    try:
        return json.loads(COSTS_FILE.read_text())
    except FileNotFoundError:
        return {}


REGISTRY: dict[str, Claim] = {}
_ID = re.compile(r"^[A-Z]+[0-9]+$")
_REGIME = re.compile(r"^[^,/\s]+$")


def claim(
    claim_id: str,
    *,
    source: str,
    stated: str,
    tier: str = QUICK,
    needs: tuple[str, ...] = (),
    regimes: tuple[str, ...] = (),
) -> Callable:
    """Decorator registering ``check`` under ``claim_id`` (e.g. ``"G1"``); ``tier="full"`` for
    a claim only the thorough tier runs, ``needs`` for the optional extras it imports,
    ``regimes`` for the regimes it reports (``C2/uniform``: ``"uniform"``)."""
    if not _ID.match(claim_id):
        raise ValueError(f"claim id {claim_id!r} is not of the form G1, C2, ...")
    if tier not in (QUICK, FULL):
        raise ValueError(f"tier must be {QUICK!r} or {FULL!r}, got {tier!r}")
    unknown = [e for e in needs if e not in EXTRAS]
    if unknown:
        raise ValueError(f"claim {claim_id} needs unknown extras {unknown}: known {list(EXTRAS)}")

    regimes = tuple(regimes)
    bad = [r for r in regimes if not _REGIME.match(r)]
    if bad or len(set(regimes)) != len(regimes):
        raise ValueError(
            f"claim {claim_id}: regimes must be distinct names without ',', '/' or "
            f"spaces, got {list(regimes)}"
        )

    def deco(check: Callable[[Context], Any]) -> Callable[[Context], Any]:
        if claim_id in REGISTRY:
            raise ValueError(f"claim {claim_id} is registered twice")
        REGISTRY[claim_id] = Claim(claim_id, source, stated, check, tier, tuple(needs), regimes)
        return check

    return deco


def _key(cid: str) -> tuple:
    order = "GPFCAN"
    m = re.match(r"([A-Z]+)([0-9]+)", cid)
    head, num = m.group(1), int(m.group(2))
    return (order.index(head) if head in order else len(order), head, num)


def all_claims() -> list[Claim]:
    """Every registered claim, in the catalog's order (G, P, F, C, A, N); importing
    :mod:`fedtheory.verify` registers the catalog."""
    return [REGISTRY[k] for k in sorted(REGISTRY, key=_key)]
