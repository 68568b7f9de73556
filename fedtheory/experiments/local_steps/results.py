"""The local-steps study's result objects: one run, one fitted exponent, the whole study."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np


@dataclass
class StudyRun:
    """One grid point: an algorithm on a topology at (R, K, M), all seeds.

    Attributes
    ----------
    algorithm, topology : str (topology None for algorithms without gossip)
    rho : float or None
        ||W - 11^T/n||_2 of the gossip matrix (rho_max over clusters; the ring on S_r for
        afga-adapted).
    R, K, M, N, clusters : int
    eta, eta_l : float
    avg, min : ndarray (seeds,)
        (1/R) sum_{r<R} ||grad f(x_r)||^2 and min_{r<R} ||grad f(x_r)||^2 per seed
        (NaN for a seed that diverged). ``min`` is the minimum of one seed's realized values,
        so its seed mean estimates E[min_r ...], which lies below the min_r E[...] of 004
        Cor. 5.11.
    diverged : int
        Number of seeds that diverged (the runner's divergence flag).
    outside : list of str
        Violated theorem assumptions (empty: inside).
    wall_time : float
    """

    algorithm: str
    topology: str | None
    rho: float | None
    R: int
    K: int
    M: int
    N: int
    clusters: int
    eta: float
    eta_l: float
    avg: np.ndarray
    min: np.ndarray
    diverged: int
    outside: list
    wall_time: float

    @property
    def key(self) -> tuple:
        return (self.algorithm, self.topology)

    def mean(self, metric: str = "avg") -> float:
        v = getattr(self, metric)
        v = v[np.isfinite(v)]
        return float(v.mean()) if v.size else float("nan")


@dataclass
class ExponentFit:
    """A fitted exponent of the metric in one variable (K, R or M), the others fixed."""

    algorithm: str
    topology: str | None
    rho: float | None
    variable: str
    metric: str
    fixed: dict
    x: list
    exponent: float
    ci_low: float
    ci_high: float
    stderr: float
    r2: float
    n_seeds: int
    stated: float | None
    outside: list
    confidence: float

    def key_match(self, key: tuple, variable: str, metric: str, fixed: dict) -> bool:
        """True for the fit of (algorithm, topology) ``key`` along ``variable`` at ``fixed``."""
        return (
            (self.algorithm, self.topology) == key
            and self.variable == variable
            and self.metric == metric
            and all(self.fixed.get(k) == v for k, v in fixed.items())
        )

    @property
    def agrees(self) -> bool | None:
        """True when the stated exponent lies in the confidence interval (None: no statement)."""
        if self.stated is None or not np.isfinite(self.exponent):
            return None
        return bool(self.ci_low <= self.stated <= self.ci_high)


@dataclass
class LocalStepsStudy:
    """Result of :func:`run_local_steps_study` / :func:`run_rho_ablation`."""

    runs: list
    fits: list
    config: dict
    wall_time: float = 0.0
    rho_trends: list = field(default_factory=list)

    def to_dict(self) -> dict:
        runs = []
        for r in self.runs:
            d = asdict(r)
            d["avg_mean"], d["min_mean"] = r.mean("avg"), r.mean("min")
            runs.append(d)
        fits = []
        for f in self.fits:
            d = asdict(f)
            d["agrees"] = f.agrees
            fits.append(d)
        return {
            "config": self.config,
            "runs": runs,
            "fits": fits,
            "rho_trends": self.rho_trends,
            "wall_time_s": self.wall_time,
        }

    @classmethod
    def from_dict(cls, data: dict) -> LocalStepsStudy:
        """Rebuild a study from :meth:`to_dict` output (e.g. its ``--json`` file), to re-plot."""

        def num(v: Any) -> Any:
            return None if v is None else float(v)

        runs = []
        for d in data["runs"]:
            d = {k: v for k, v in d.items() if k not in ("avg_mean", "min_mean")}
            d["avg"] = np.asarray(d["avg"], dtype=float)
            d["min"] = np.asarray(d["min"], dtype=float)
            d["rho"] = num(d["rho"])
            runs.append(StudyRun(**d))
        fits = []
        for d in data["fits"]:
            d = {k: v for k, v in d.items() if k != "agrees"}
            for k in ("exponent", "ci_low", "ci_high", "stderr", "r2"):
                d[k] = float(d[k])
            d["rho"] = num(d["rho"])
            fits.append(ExponentFit(**d))
        return cls(
            runs=runs,
            fits=fits,
            config=data.get("config", {}),
            wall_time=float(data.get("wall_time_s", 0.0)),
            rho_trends=data.get("rho_trends", []),
        )

    def fit(
        self, algorithm: str, variable: str = "K", topology: str | None = None, metric: str = "avg"
    ) -> ExponentFit:
        """The first fit of ``variable`` for ``algorithm`` (and ``topology``)."""
        for f in self.fits:
            if (f.algorithm, f.variable, f.metric) == (algorithm, variable, metric) and (
                topology is None or f.topology == topology
            ):
                return f
        raise KeyError(f"no {variable} fit for {algorithm} on {topology}")

    def table(self, metric: str = "avg") -> str:
        """The fitted exponents as a plain-text table."""
        head = (
            f"{'algorithm':13s} {'topology':15s} {'rho':>6s} {'var':3s} {'at':12s} {'exponent':>9s} "
            f"{'CI':>19s} {'stated':>7s} {'seeds':>5s}  assumptions"
        )
        lines = [head, "-" * len(head)]
        for f in self.fits:
            if f.metric != metric:
                continue
            rho = "-" if f.rho is None else f"{f.rho:.3f}"
            st = "-" if f.stated is None else f"{f.stated:+.2f}"
            ci = f"[{f.ci_low:+.3f}, {f.ci_high:+.3f}]"
            note = "inside" if not f.outside else "outside assumptions: " + "; ".join(f.outside)
            at = ",".join(f"{k}={v}" for k, v in f.fixed.items())
            lines.append(
                f"{f.algorithm:13s} {str(f.topology or '-'):15s} {rho:>6s} {f.variable:3s} "
                f"{at:12s} {f.exponent:+9.3f} {ci:>19s} {st:>7s} {f.n_seeds:5d}  {note}"
            )
        return "\n".join(lines)
