"""The class a bound is checked on: quadratic clients, every smooth strongly convex client, or
both side by side.

``quadratic`` (:func:`fedtheory.bounds.check.check`): the exact oracle on one instance and a
search over quadratic instances; a violation found there refutes the bound, a bound that holds
there may still fail on other functions of the theorem's class. ``smooth-strongly-convex``
(:func:`fedtheory.bounds.general.check_general`): the worst case over the whole class by
performance estimation. ``both``: the two, their worst values per setting and the ratio, one
verdict per class. The words: ``violated`` (with its file) and ``holds on the class
searched``, never "proved".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedtheory.bounds.check import BoundCheck, check
from fedtheory.bounds.general import GENERAL, GeneralCheck, check_general
from fedtheory.bounds.spec import BoundSpec, load_spec
from fedtheory.errors import AssumptionError

#: The choices of ``fedtheory bound --class``.
CLASS_CHOICES = ("quadratic", GENERAL, "both")


def quadratic_dict(res: BoundCheck) -> dict:
    """The quadratic check's JSON with the per-class keys (``class``, ``unbounded``,
    ``solver``: the exact oracle, whose value is the worst instance's exact value)."""
    out = res.to_dict()
    w = res.worst
    out.update(
        {
            "class": "quadratic",
            "unbounded": False,
            "lacks": None,
            "solver": {
                "name": "exact oracle",
                "status": "exact" if w is not None else "no instance",
                "value": None if w is None else w.exact,
                "cross_check": None,
            },
        }
    )
    for e in out["instances"]:
        e["class"] = "quadratic"
    return out


@dataclass
class ClassCheck:
    """The outcome of :func:`check_classes`: one result per class checked.

    Attributes
    ----------
    functions : {"quadratic", "smooth-strongly-convex", "both"}
    quadratic : BoundCheck or None
    general : GeneralCheck or None
    """

    functions: str
    quadratic: BoundCheck | None
    general: GeneralCheck | None

    @property
    def violated(self) -> bool:
        return any(r.violated for r in (self.quadratic, self.general) if r is not None)

    def by_setting(self) -> list[dict]:
        """Per setting (N, K, M) the general worst value, the quadratic worst found and their
        ratio (general over quadratic; >= 1 up to the solver's accuracy)."""
        if self.quadratic is None or self.general is None:
            return []
        rows = []
        for e in self.general.instances:
            same = [
                q.exact
                for q in self.quadratic.instances
                if q.defined and all(q.sizes.get(k) == e.sizes.get(k) for k in ("N", "K", "M"))
            ]
            quad = max(same, default=math.nan)
            rows.append(
                {
                    **{k: e.sizes[k] for k in ("N", "K", "M")},
                    "general": e.exact,
                    "quadratic": quad,
                    "ratio": e.exact / quad if quad and math.isfinite(quad) else math.nan,
                }
            )
        return rows

    def to_dict(self) -> dict:
        if self.functions == "quadratic":
            return quadratic_dict(self.quadratic)
        if self.functions == GENERAL:
            return {
                **self.general.to_dict(),
                "spec": self.spec_dict(),
                "spec_file": self.general.spec.path,
            }
        q, g = quadratic_dict(self.quadratic), self.general.to_dict()
        top = g if g["violated"] or not q["violated"] else q
        rows = self.by_setting()
        worst_row = max(rows, key=lambda r: r["general"], default=None)
        return {
            "class": "both",
            "violated": self.violated,
            "worst": top["worst"],
            "instances": [*q["instances"], *g["instances"]],
            "implied_constant": _union_implied(
                q.get("implied_constant"), g.get("implied_constant")
            ),
            "unbounded": g["unbounded"],
            "lacks": g["lacks"],
            "solver": g["solver"],
            "ratio": None if worst_row is None else worst_row["ratio"],
            "by_setting": rows,
            "classes": {"quadratic": q, GENERAL: g},
            "spec": self.spec_dict(),
            "spec_file": self.general.spec.path,
            "sentence": self.sentence(),
        }

    def spec_dict(self) -> dict:
        spec = (self.general or self.quadratic).spec
        return spec.to_dict()

    def sentence(self) -> str:
        parts = []
        if self.quadratic is not None:
            s = self.quadratic.sentence()
            if not self.quadratic.violated and s.startswith("Holds"):
                s = "Quadratic clients: holds on the class searched. " + s
            else:
                s = "Quadratic clients: " + s
            parts.append(s)
        if self.general is not None:
            parts.append(self.general.sentence())
        rows = self.by_setting()
        if rows:
            r = max(rows, key=lambda r: r["general"])
            parts.append(
                f"General over quadratic worst at N={r['N']} K={r['K']}"
                + (f" M={r['M']}" if r["M"] is not None else "")
                + f": {r['ratio']:.4g}."
            )
        return " ".join(parts)


def _union_implied(a: dict | None, b: dict | None) -> dict | None:
    """The implied constant over both classes' instances: the more demanding of the two."""
    if a is None or b is None:
        return a or b
    va, vb = a.get("value"), b.get("value")
    if va is None or vb is None:
        return b if vb is None else a
    grows = str(b.get("direction", "")).startswith("smallest")
    return b if (vb >= va if grows else vb <= va) else a


def resolve_class(spec: BoundSpec, functions: str | None) -> str:
    """The class to check: ``functions`` (a choice of :data:`CLASS_CHOICES`) or the spec's
    ``[class] functions`` (``quadratic`` by default)."""
    if functions is None:
        return spec.functions
    if functions not in CLASS_CHOICES:
        raise AssumptionError(
            f"the class must be one of {', '.join(CLASS_CHOICES)}, got {functions!r}"
        )
    return functions


def check_classes(
    spec: BoundSpec | str | dict,
    *,
    functions: str | None = None,
    out_dir: str | Path | None = None,
    name: str | None = None,
    cross_check: bool = True,
    **quadratic_kw: Any,
) -> ClassCheck:
    """Check a stated bound on the quadratic class, the general class, or both.

    Parameters
    ----------
    spec : BoundSpec, path of a TOML file, or a dict of its keys
    functions : {"quadratic", "smooth-strongly-convex", "both"}, optional
        Default: the spec's ``[class] functions``.
    out_dir, name :
        Where the counterexample files go and their stem (both classes).
    cross_check : bool
        The general class's SCS cross-check.
    **quadratic_kw :
        The quadratic check's other arguments (:func:`fedtheory.bounds.check.check`:
        ``search``, ``seed``, ``problem``, ``problem_file``, ``measure_seeds``, ``workers``,
        ``refine``, ``progress``).

    Raises
    ------
    FedTheoryError
        As the classes' checks; ``mu = 0`` or a spec without ``dim`` on the quadratic class.
    """
    if isinstance(spec, dict):
        spec = BoundSpec.from_dict(spec)
    elif not isinstance(spec, BoundSpec):
        spec = load_spec(spec)
    which = resolve_class(spec, functions)
    quad = gen = None
    if which in ("quadratic", "both"):
        cls = spec.instance_class
        if cls is not None and (cls.mu == 0 or not cls.dim):
            raise AssumptionError(
                "the quadratic class needs mu > 0 and dim in [class] (mu = 0 and a class "
                "without dim are for smooth-strongly-convex clients only)"
            )
        quad = check(spec, functions="quadratic", out_dir=out_dir, name=name, **quadratic_kw)
    if which in (GENERAL, "both"):
        stray = sorted(
            k
            for k, v in quadratic_kw.items()
            if v is not None
            and k not in ("search", "seed", "workers", "refine", "measure_seeds", "progress")
        )
        if stray and which == GENERAL:
            raise AssumptionError(
                f"the general class checks the class only: {', '.join(stray)} name one instance"
            )
        gen = check_general(
            spec,
            out_dir=out_dir,
            name=name,
            cross_check=cross_check,
            refuse_unsolved=which == GENERAL,
        )
    return ClassCheck(which, quad, gen)
