"""Run claims and collect their results; a crash is recorded, never turned into a verdict.

:func:`run_claims` runs the claims on the cores this process may use: each claim in a forked
child (:func:`fedtheory.parallel.fork_map`), as many at once as there are cores, the most
expensive first (the longest-processing-time rule, on the costs measured by
``benchmarks/bench_verify.py``: :meth:`~fedtheory.verify.registry.Claim.cost`), so that the
longest claim does not start last; ``workers=1`` runs them here, one after the other, in the
catalog's order. Every claim runs with one BLAS thread wherever it runs, so a result is the same
bits for any number of workers (a BLAS reduction split over two threads may round differently
from one).
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Iterable
from typing import Any

import numpy as np

from fedtheory.analysis.stats import Effect
from fedtheory.backend import STRICT, get_backend
from fedtheory.errors import BackendUnavailableError, FedTheoryError, MissingExtraError
from fedtheory.extras import install_hint, missing
from fedtheory.io import duration, progress
from fedtheory.parallel import cpu_time, fork_map, map_tasks
from fedtheory.validation import available_cores, check_int, did_you_mean
from fedtheory.verify.registry import REGISTRY, Claim, Context, all_claims
from fedtheory.verify.result import NOT_RUN, ClaimResult, Outcome


def select(only: str | Iterable[str] | None = None) -> list[Claim]:
    """The claims named in ``only`` ("C1,F2"; a regime id such as "C2/uniform" selects C2), or
    all of them (``only`` None or empty).

    Raises
    ------
    FedTheoryError
        An unknown id (naming it and the known ones), a list that names no claim (","), a
        regime left empty ("C2/") or one the claim does not declare ("C2/bogus"): refused before
        any claim runs, not after minutes of it.
    """
    claims = all_claims()
    if not only:
        return claims
    names = [n.strip() for n in (only.split(",") if isinstance(only, str) else list(only))]
    if not any(names):
        raise FedTheoryError(
            f"--only {only!r} names no claim: give ids such as C1,F2 or C2/uniform (see --list)"
        )
    empty = [n for n in names if n.endswith("/")]
    if empty:
        raise FedTheoryError(
            f"no regime after the slash in {empty[0]!r}: write {empty[0][:-1]} for all its "
            f"regimes, or one of them such as C2/uniform"
        )
    wanted = {n.split("/")[0].upper() for n in names if n}
    known = {c.id for c in claims}
    unknown = sorted(wanted - known)
    if unknown:
        raise FedTheoryError(
            f"unknown claim id {', '.join(unknown)}{did_you_mean(unknown[0], known)}: known ids "
            f"are {', '.join(c.id for c in claims)}"
        )
    for n in names:
        cid, _, regime = n.partition("/")
        c = REGISTRY.get(cid.upper())
        if regime and c is not None and regime.upper() not in {r.upper() for r in c.regimes}:
            reports = ", ".join(f"{c.id}/{r}" for r in c.regimes) or f"only {c.id} (no regimes)"
            raise FedTheoryError(
                f"unknown regime {n}{did_you_mean(regime, c.regimes)}: {c.id} reports {reports}"
            )
    return [c for c in claims if c.id in wanted]


def keep_requested(
    results: list[ClaimResult], only: str | Iterable[str] | None
) -> list[ClaimResult]:
    """Drop the regimes not asked for: ``--only C2/uniform`` runs C2 and keeps C2/uniform (a
    crashed claim, which has no regimes, is always kept)."""
    if not only:
        return results
    names = only.split(",") if isinstance(only, str) else list(only)
    names = [n.strip().upper() for n in names if n.strip()]
    whole = {n for n in names if "/" not in n}
    regimes = {n for n in names if "/" in n}
    return [
        r
        for r in results
        if r.id.split("/")[0].upper() in whole or r.id.upper() in regimes or "/" not in r.id
    ]


def not_run_reason(claim: Claim, ctx: Context) -> str | None:
    """Why ``claim`` is not run in ``ctx`` (None: it runs): a thorough-tier claim in the quick
    tier, or an optional extra it needs that is not installed (naming the install command)."""
    if not claim.runs_in(ctx.tier):
        return f"thorough tier only: fedtheory verify --full --only {claim.id}"
    for extra in claim.needs:
        gone = missing(extra)
        if gone:
            return (
                f"needs the optional extra '{extra}' ({', '.join(gone)} not installed): "
                f"{install_hint(extra)}"
            )
    return None


def run_claim(claim: Claim, ctx: Context) -> list[ClaimResult]:
    """Run one claim's check at ``ctx.tier``; one result per regime it reports. A claim that
    does not run here (:func:`not_run_reason`, or a :class:`~fedtheory.errors.MissingExtraError`
    from inside the check) is one "not run" row with the reason; a crash is one "not run" row
    with the error."""
    t0, c0 = time.perf_counter(), cpu_time()
    base = {"source": claim.source, "tier": ctx.tier}

    def not_run(reason: str, **more: Any) -> list[ClaimResult]:
        return [
            ClaimResult(
                id=claim.id,
                stated=claim.stated,
                measured="-",
                verdict=NOT_RUN,
                ran=False,
                reason=reason,
                **more,
                **base,
            )
        ]

    skip = not_run_reason(claim, ctx)
    if skip is not None:
        return not_run(skip)
    try:
        out = claim.check(ctx)
        outcomes = list(out) if isinstance(out, list | tuple) else [out]
        bad = [type(o).__name__ for o in outcomes if not isinstance(o, Outcome)]
        if bad or not outcomes:
            raise TypeError(f"claim {claim.id} returned {bad or 'nothing'}, not Outcome objects")
        undeclared = [o.sub for o in outcomes if o.sub and o.sub not in claim.regimes]
        if undeclared:  # what --only checks before the run must be what the check reports
            raise TypeError(
                f"claim {claim.id} reported regime(s) {', '.join(undeclared)} that its "
                f"registration does not declare (regimes={claim.regimes!r})"
            )
    except MissingExtraError as exc:  # an optional extra the check found missing: not run
        timing = {"seconds": time.perf_counter() - t0, "cpu_seconds": cpu_time() - c0}
        return not_run(str(exc), **timing)
    except Exception as exc:  # a crash (a failed import included) is not a verdict
        timing = {"seconds": time.perf_counter() - t0, "cpu_seconds": cpu_time() - c0}
        error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
        return not_run("the check crashed", error=error, **timing)
    dt = (time.perf_counter() - t0) / max(len(outcomes), 1)
    cpu = (cpu_time() - c0) / max(len(outcomes), 1)
    results = []
    for o in outcomes:
        results.append(
            ClaimResult(
                id=f"{claim.id}/{o.sub}" if o.sub else claim.id,
                stated=o.stated or claim.stated,
                measured=o.measured,
                verdict=o.verdict,
                evidence=dict(o.evidence),
                criterion=o.criterion,
                effect=(o.effect or Effect.none()).to_dict(),
                seeds=o.seeds,
                test=o.test or None,
                exact=o.exact,
                uncertainty=o.uncertainty,
                figure=o.figure,
                reason=o.reason,
                confirmation=None if o.confirmation is None else o.confirmation.to_dict(),
                seconds=dt,
                cpu_seconds=cpu,
                **base,
            )
        )
    return results


def run_claim_task(item: tuple[str, Context]) -> list[ClaimResult]:
    """``run_claim`` of the claim with id ``item[0]`` in context ``item[1]``: one Dask task of
    ``fedtheory verify --scheduler`` (ids and contexts travel to the workers; the checks do
    not)."""
    claim_id, ctx = item
    return run_claim(REGISTRY[claim_id], ctx)


def on_cpu() -> bool:
    """Whether the claims compute on the CPU (the NumPy or the strict backend, as
    ``FEDTHEORY_BACKEND`` says): a CUDA context does not survive ``fork``, so on CuPy the
    claims run in this process, one after the other."""
    try:
        return get_backend() in (np, STRICT)
    except BackendUnavailableError:  # every claim reports the missing backend itself
        return True


def longest_first(claims: list[Claim], tier: str) -> list[Claim]:
    """``claims`` by decreasing measured cost in ``tier`` (:meth:`Claim.cost`), a claim never
    measured first (it may be long), ties in the catalog's order."""
    return sorted(
        claims, key=lambda c: -(c.cost(tier) if c.cost(tier) is not None else float("inf"))
    )


def run_claims(
    claims: list[Claim],
    ctx: Context,
    *,
    quiet: bool = False,
    workers: int | None = None,
    scheduler: str | None = None,
) -> list[ClaimResult]:
    """Run ``claims``, with progress on stderr (silent when ``quiet``); results in the
    catalog's order whichever way they ran, each the same bits (timings aside).

    Parameters
    ----------
    claims : list of Claim
    ctx : Context
    quiet : bool
        No progress.
    workers : int, optional
        Claims at once, each in a forked child (:func:`fedtheory.parallel.fork_map`), the most
        expensive first (:func:`longest_first`); default: the cores this process may use
        (:func:`~fedtheory.validation.available_cores`). 1: in this process, one after the
        other in the catalog's order (also on a GPU backend, :func:`on_cpu`, where ``fork`` is
        missing, or in a daemon process).
    scheduler : str, optional
        The address of a running Dask scheduler: the claims run there as tasks (the engine of
        ``fedtheory sweep``; the optional extra ``fedtheory[sweep]``). Not with ``workers``.

    On a terminal the progress is a bar; on any other stderr (a log, a pipe, CI) a line when a
    claim starts and one per result when it finishes (:func:`fedtheory.io.progress`), e.g.
    ``claim 12 of 37 started: C2 (running: N1, C2)`` and ``claim 9 of 37 done: C1/uniform holds
    4.1 s``, and, after 10 s without a line, the claims running with their times and the time
    left (:class:`Clock`: ``claims running: N1 2 min 10 s, A6 1 min 5 s; 7 of 37 done; about
    4 min left``), so a log-redirected run is never silent for long. A claim that does not run
    in this tier or without an optional extra (:func:`not_run_reason`) is answered at once.
    """
    if workers is not None and scheduler is not None:
        raise FedTheoryError("give workers or a scheduler address, not both")
    n_workers = available_cores() if workers is None else check_int("workers", workers, minimum=1)
    if not on_cpu():
        n_workers = 1
    clock = Clock(claims, ctx.tier, n_workers)
    bar = progress(
        total=len(claims),
        desc="verify",
        unit="claim",
        counts="claim",
        disable=quiet,
        status=clock.status,
        eta=clock.time_left,
    )
    done: dict[str, list[ClaimResult]] = {}
    running = clock.running  # claim id -> when it started, in the order they started

    def report(claim_id: str, res: list[ClaimResult]) -> None:
        done[claim_id] = res
        clock.finished(claim_id)
        bar.done(finished(res), seconds=sum(r.seconds or 0.0 for r in res))

    try:
        todo = []
        for c in claims:  # a claim that does not run here is answered at once, in this process
            if not_run_reason(c, ctx) is None:
                todo.append(c)
            else:
                bar.started(c.id)
                report(c.id, run_claim(c, ctx))
        if scheduler is not None:
            order = longest_first(todo, ctx.tier)
            tasks = map_tasks(
                run_claim_task,
                [(c.id, ctx) for c in order],
                scheduler=scheduler,
                progress=False,
                desc="verify",
                describe=lambda item: item[0],
            )
            for i, res in tasks:
                report(order[i].id, res)
        else:
            order = todo if n_workers == 1 else longest_first(todo, ctx.tier)

            def start(i: int) -> None:
                clock.started(order[i].id)
                also = f" (running: {', '.join(running)})" if n_workers > 1 else ""
                bar.started(f"{order[i].id}{also}")

            tasks = fork_map(
                lambda c: run_claim(c, ctx),
                order,
                workers=n_workers,
                on_start=start,
                describe=lambda c: c.id,
            )
            for i, res in tasks:
                report(order[i].id, res)
        return [r for c in claims for r in done[c.id]]
    finally:
        bar.close()


class Clock:
    """What the claims of a run are doing, for the heartbeat of :func:`run_claims`: the claims
    running and for how long, how many are done, and the time left.

    The time left is estimated from the claims' measured costs (:meth:`Claim.cost`, CPU seconds
    on one BLAS thread, counted as at least :attr:`FLOOR` seconds: a fork and the result's way
    back cost that much) scaled by this run's own pace: the wall seconds the finished claims
    took over their costs, at least 1 (before any finished: the load average per core, at
    least 1, or the slowest running claim's seconds so far over its cost, whichever is
    larger: on a shared machine a claim takes its cost times the processes per core). Each running claim has its scaled cost less the time it has run left,
    each waiting claim its scaled cost; the run ends no sooner than the longest of these and no
    sooner than their sum spread over the workers. Unknown (None) while a claim left was never
    measured, or when every claim left has run past its estimate.
    """

    #: The least seconds a claim counts for in the pace (fork, pipe, result).
    FLOOR = 1.0

    def __init__(self, claims: list[Claim], tier: str, workers: int) -> None:
        self.cost = {c.id: c.cost(tier) for c in claims}
        self.workers = max(1, int(workers))
        self.running: dict[str, float] = {}
        self.waiting = [c.id for c in claims]
        self.spent = self.expected = 0.0  # the finished claims' wall seconds and costs
        self.n_done, self.total = 0, len(claims)

    def started(self, claim_id: str) -> None:
        self.running[claim_id] = time.perf_counter()
        if claim_id in self.waiting:
            self.waiting.remove(claim_id)

    def finished(self, claim_id: str) -> None:
        t0 = self.running.pop(claim_id, None)
        if claim_id in self.waiting:
            self.waiting.remove(claim_id)
        self.n_done += 1
        cost = self.cost.get(claim_id)
        if t0 is not None and cost is not None:
            self.spent += time.perf_counter() - t0
            self.expected += max(cost, self.FLOOR)

    def status(self) -> str:
        """``claims running: N1 2 min 10 s, A6 1 min 5 s; 7 of 37 done``."""
        now = time.perf_counter()
        running = list(self.running.items())  # one C call: safe while the runner changes it
        names = ", ".join(f"{c} {duration(now - t0)}" for c, t0 in running)
        head = f"claims running: {names}" if names else "claims starting"
        return f"{head}; {self.n_done} of {self.total} done"

    def time_left(self) -> float | None:
        """Seconds left (class docstring), or None when a claim left has no measured cost."""
        now = time.perf_counter()
        running, waiting = list(self.running.items()), list(self.waiting)
        if any(self.cost.get(c) is None for c in [*dict(running), *waiting]):
            return None
        cost = {c: max(self.cost[c], self.FLOOR) for c in [*dict(running), *waiting]}
        if self.expected > 0:
            pace = max(1.0, self.spent / self.expected)
        else:  # nothing finished yet: the machine's load, the slowest running claim so far
            pace = max([_load_per_core()] + [(now - t0) / cost[c] for c, t0 in running])
        rest = [max(cost[c] * pace - (now - t0), 0.0) for c, t0 in running]
        rest += [cost[c] * pace for c in waiting]
        left = max(max(rest, default=0.0), sum(rest) / self.workers)
        return left if left > 0 or not running else None


def _load_per_core() -> float:
    """The one-minute load average per core this process may use, at least 1 (1 where the
    platform has no load average)."""
    try:
        return max(1.0, os.getloadavg()[0] / available_cores())
    except (OSError, AttributeError):  # pragma: no cover - no load average here
        return 1.0


def finished(results: list[ClaimResult]) -> list[str]:
    """One progress label per result of a finished claim: ``C1/uniform holds`` (a claim not
    run says why in a few words: ``N1 not run (needs the optional extra 'nn' ...)``)."""
    out = []
    for r in results:
        if r.ran:
            out.append(f"{r.id} {r.verdict}")
        else:
            why = "crashed" if r.crashed else (r.reason or "").split(":")[0]
            out.append(f"{r.id} {r.verdict} ({why})")
    return out
