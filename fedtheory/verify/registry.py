"""The registry of claims: ids as in docs/claims.md, one small check function each.

A check receives a :class:`Context` (tier, seeds, where to draw figures) and returns an
:class:`~fedtheory.verify.result.Outcome` or a list of them (one per regime: ``C2/uniform``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    id: str
    source: str
    stated: str
    check: Callable[[Context], Any] = field(repr=False)

    @property
    def group(self) -> str:
        return self.id[0]


REGISTRY: dict[str, Claim] = {}
_ID = re.compile(r"^[A-Z]+[0-9]+$")


def claim(claim_id: str, *, source: str, stated: str) -> Callable:
    """Decorator registering ``check`` under ``claim_id`` (e.g. ``"G1"``)."""
    if not _ID.match(claim_id):
        raise ValueError(f"claim id {claim_id!r} is not of the form G1, C2, ...")

    def deco(check: Callable[[Context], Any]) -> Callable[[Context], Any]:
        if claim_id in REGISTRY:
            raise ValueError(f"claim {claim_id} is registered twice")
        REGISTRY[claim_id] = Claim(claim_id, source, stated, check)
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
