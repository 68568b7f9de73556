"""Run many independent tasks at once, results as they finish: in forked processes on this
machine (:func:`fork_map`: `verify`'s claims) or as Dask tasks (:class:`Engine`: the sweep's
grid, `verify --scheduler`).

:func:`fork_map` runs ``fn(item)`` for every item in a fresh forked child each, at most
``workers`` at a time, in the order given (a caller that knows the tasks' costs gives the
longest first), each child with one BLAS thread. A child inherits everything through ``fork``
(closures, registries, caches, arrays: nothing is pickled on the way in) and sends its result
back through a pipe. It starts in a fraction of a second where Dask takes seconds: on the
shared 2-core machine at load 14, two forked children that each ran claim G1 took 0.36-0.53 s
from the first fork to the second result, a local cluster of two Dask workers 15.6-18.0 s to
start and 3.8-4.2 s to close (``benchmarks/bench_verify.py --startup``, three of each).

:class:`Engine` is the one place fedtheory talks to Dask. It starts a
:class:`distributed.LocalCluster` of ``workers`` processes, each with one BLAS thread (the
variables of :data:`WORKER_ENV` are in the worker process's environment from its start, through
Dask's ``distributed.nanny.pre-spawn-environ``, since OpenBLAS / MKL / OpenMP read them when
numpy loads), or connects to a running scheduler at
``scheduler`` (a Slurm cluster started with ``dask_jobqueue.SLURMCluster``, for instance).
:meth:`Engine.map` submits ``fn(item)`` for every item and yields ``(position, result)`` in the
order the tasks finish, with a progress bar, so the caller can keep every finished result at
once (the sweep writes each task's region of the store as it arrives).

Faults: a worker process that dies mid-task (killed, out of memory) loses nothing; the scheduler
runs its tasks again elsewhere, up to ``allowed_failures`` times per task (Dask's
``distributed.scheduler.allowed-failures``). An exception raised by ``fn`` itself is a property
of the input (fedtheory's tasks are deterministic) and stops the map with one line naming the
item, after ``retries`` further tries.

On a Slurm cluster (``pip install dask-jobqueue``)::

    from dask_jobqueue import SLURMCluster
    cluster = SLURMCluster(cores=1, processes=1, memory="4GB", walltime="02:00:00",
                           job_script_prologue=["export OMP_NUM_THREADS=1",
                                                "export OPENBLAS_NUM_THREADS=1",
                                                "export MKL_NUM_THREADS=1"])
    cluster.scale(jobs=32)
    # then: fedtheory sweep spec.toml --store /shared/run --scheduler <cluster.scheduler_address>

The optional sweep extra (dask[distributed]) is imported lazily, inside :class:`Engine`, so the
core package never needs it.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from multiprocessing.connection import wait
from types import ModuleType
from typing import Any

from threadpoolctl import threadpool_limits

from fedtheory.errors import FedTheoryError
from fedtheory.extras import import_extra

try:
    import resource
except ImportError:  # pragma: no cover - not on Unix
    resource = None  # type: ignore[assignment]
from fedtheory.io import progress as progress_bar
from fedtheory.validation import available_cores, worker_count

#: Environment of every local worker process: one BLAS / OpenMP thread each.
WORKER_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
}

#: Variables of Dask's default worker environment that local workers do not get (see
#: :meth:`Engine.__enter__`).
NO_WORKER_ENV = ("MALLOC_TRIM_THRESHOLD_",)


#: How long to try to reach a running scheduler before giving up.
CONNECT_TIMEOUT = "20s"


def _start_shielded(target: Callable[[], None]) -> None:
    """Run ``target`` (which starts worker processes) so that the processes it starts ignore
    Ctrl-C, while this thread still acts on Ctrl-C within 0.1 s.

    A terminal sends Ctrl-C (SIGINT) to the whole process group: each Dask worker printed its
    own KeyboardInterrupt traceback. A process started while SIGINT is ignored keeps ignoring it
    (the disposition survives ``exec``, and Python then installs no KeyboardInterrupt handler),
    so ``target`` runs in a helper thread while SIGINT is ignored and blocked; blocked, Linux
    keeps it pending instead of dropping it, and this thread finds it with
    :func:`signal.sigpending`, collects it and raises KeyboardInterrupt. Elsewhere (not the main
    thread, no ``sigpending``) ``target`` simply runs here.
    """
    if threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "sigpending"
    ):
        target()
        return
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    old_handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        thread = threading.Thread(target=target, daemon=True, name="fedtheory-start")
        thread.start()  # inherits the block: so do the threads it starts
        while thread.is_alive():
            # sigpending, not sigtimedwait: that returned a struct of garbage (no SIGINT sent)
            # in 1 of 6 starts of a one-worker cluster (tests/cli/test_cli_sweep.py)
            thread.join(0.1)
            if signal.SIGINT in signal.sigpending():
                signal.sigwait({signal.SIGINT})  # collect it, so it is not delivered later
                raise KeyboardInterrupt
    finally:
        signal.signal(signal.SIGINT, old_handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)


def _worker_processes(cluster: Any) -> list:
    """The local worker processes of a Dask LocalCluster (its nannies' processes; an empty list
    where Dask keeps them otherwise)."""
    out = []
    for nanny in getattr(cluster, "workers", {}).values():
        proc = getattr(getattr(getattr(nanny, "process", None), "process", None), "_process", None)
        if proc is not None and hasattr(proc, "terminate"):
            out.append(proc)
    return out


def sweep_module(module: str) -> ModuleType:
    """Import a module of the optional sweep extra (dask, zarr, xarray), or say in one line how
    to install it (:func:`fedtheory.extras.import_extra`)."""
    return import_extra(module, "sweep", "fedtheory sweep")


class Engine:
    """A Dask client on a local cluster or an existing scheduler, for :meth:`map`.

    Parameters
    ----------
    workers : int, optional
        Local worker processes (default: the cores this process may use,
        :func:`~fedtheory.validation.available_cores`), one thread and one BLAS thread each;
        never more than ``tasks`` nor two per core (:func:`~fedtheory.validation.worker_count`:
        ``--workers 1000`` on two cores starts four). Not with ``scheduler``.
    scheduler : str, optional
        Address of a running Dask scheduler (``tcp://host:8786``); its workers run the tasks
        and must be able to import fedtheory.
    allowed_failures : int
        How many times a task may lose its worker before it counts as failed (local cluster
        only; a running scheduler keeps its own setting).
    tasks : int, optional
        How many tasks the engine will run (caps the local workers).

    Examples
    --------
    >>> with Engine(workers=2) as engine:                       # doctest: +SKIP
    ...     squares = dict(engine.map(pow, [(2, 2), (3, 2)]))   # fn(item) for each item
    """

    def __init__(
        self,
        *,
        workers: int | None = None,
        scheduler: str | None = None,
        allowed_failures: int = 3,
        tasks: int | None = None,
    ) -> None:
        if workers is not None and scheduler is not None:
            raise FedTheoryError("give workers or a scheduler address, not both")
        if scheduler is not None and (not isinstance(scheduler, str) or not scheduler.strip()):
            raise FedTheoryError(
                f"a scheduler address is a string such as tcp://HOST:8786, got {scheduler!r}"
            )
        if workers is not None and (isinstance(workers, bool) or int(workers) != workers):
            raise FedTheoryError(f"workers must be a whole number, got {workers!r}")
        if workers is not None and workers < 1:
            raise FedTheoryError(f"workers must be >= 1, got {workers}")
        self.workers = (
            None if scheduler is not None else worker_count(workers or available_cores(), tasks)
        )
        self.scheduler = scheduler
        self.allowed_failures = int(allowed_failures)
        self.client: Any = None
        self._cluster: Any = None
        self._dd: ModuleType | None = None

    @property
    def address(self) -> str:
        """The scheduler's address (of the local cluster once started); for ``scheduler=``."""
        if self.client is None:
            raise FedTheoryError("the engine is not started: use it in a with block")
        return self.client.scheduler.address

    def describe(self) -> str:
        if self.scheduler is not None:
            return f"Dask scheduler {self.scheduler}"
        return f"local Dask cluster, {self.workers} worker process(es)"

    def __enter__(self) -> Engine:
        dask = sweep_module("dask")
        dd = self._dd = sweep_module("distributed")
        if self.scheduler is not None:
            try:
                self.client = dd.Client(self.scheduler, timeout=CONNECT_TIMEOUT)
            except (OSError, TimeoutError, ValueError) as exc:  # ValueError: not an address
                raise FedTheoryError(
                    f"cannot reach the Dask scheduler at {self.scheduler}: {exc} (an address "
                    "is tcp://HOST:PORT)"
                ) from None
            return self
        # Dask's nanny puts distributed.nanny.pre-spawn-environ into its own process's
        # environment just before it spawns a worker, so the worker's interpreter, and the BLAS
        # numpy loads, start with one thread (variables given as env= arrive only after the
        # worker has started). Dask lets the nanny's environment override that setting, so the
        # variables are set here too, and the driver's environment is put back once the
        # workers run (a nanny that restarts a worker sets them again).
        # Dask's default also sets MALLOC_TRIM_THRESHOLD_=65536 there, so glibc hands every
        # freed block above 64 KiB back to the OS and the next round faults it in again: a
        # sweep task ran 1.7x the CPU time it takes in a plain process (benchmarks/bench_sweep.py,
        # 12.0 s against 7.0 s for 12 tasks). The workers keep glibc's own (adaptive) threshold.
        inherited = dask.config.get("distributed.nanny.pre-spawn-environ", {})
        pre_spawn = {k: v for k, v in inherited.items() if k not in NO_WORKER_ENV}
        pre_spawn.update(WORKER_ENV)
        saved = {k: os.environ.get(k) for k in pre_spawn}
        os.environ.update(WORKER_ENV)
        config = {
            "distributed.nanny.pre-spawn-environ": pre_spawn,
            "distributed.scheduler.allowed-failures": self.allowed_failures,
            "distributed.worker.profile.enabled": False,  # no dashboard reads its samples
        }
        box: dict[str, Any] = {}

        def start() -> None:
            try:
                box["cluster"] = dd.LocalCluster(
                    n_workers=self.workers,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    silence_logs=logging.ERROR,
                )
            except BaseException as exc:  # handed to the main thread
                box["error"] = exc

        try:
            with dask.config.set(config):
                _start_shielded(start)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        if "error" in box:
            raise box["error"]
        self._cluster = box["cluster"]
        self.client = dd.Client(self._cluster)
        return self

    def __exit__(self, kind: Any, *exc: Any) -> None:
        self.close(interrupted=kind is not None and issubclass(kind, KeyboardInterrupt))

    def close(self, *, interrupted: bool = False) -> None:
        """Close the client and, when this engine started it, the local cluster; after Ctrl-C
        (``interrupted``) its worker processes are stopped at once, not asked to finish."""
        if self.client is not None:
            self.client.close(timeout=1 if interrupted else None)
            self.client = None
        if self._cluster is not None:
            if interrupted:
                for proc in _worker_processes(self._cluster):
                    proc.terminate()
            self._cluster.close(timeout=2 if interrupted else None)
            self._cluster = None

    def map(
        self,
        fn: Callable[[Any], Any],
        items: Iterable[Any],
        *,
        progress: bool = True,
        desc: str = "tasks",
        name: str = "fedtheory",
        describe: Callable[[Any], str] | None = None,
        retries: int = 0,
    ) -> Iterator[tuple[int, Any]]:
        """Run ``fn(item)`` for every item; yield ``(position, result)`` as each finishes.

        Parameters
        ----------
        fn : callable
            A module-level function (the workers import it by name) of one item.
        items : iterable
            Picklable arguments, one task each.
        progress : bool
            Show a progress bar on stderr (:func:`fedtheory.io.progress`).
        desc, name : str
            The bar's label; the prefix of the Dask task keys.
        describe : callable, optional
            ``describe(item)`` names a failed task in the error message (default ``repr``).
        retries : int
            Further tries of a task whose ``fn`` raised (worker deaths are retried regardless,
            see the class).

        Yields
        ------
        (int, object)
            The item's position in ``items`` and ``fn(item)``, in order of completion.

        Raises
        ------
        FedTheoryError
            The first task whose ``fn`` raised, or that lost its worker more than
            ``allowed_failures`` times; the tasks still running are cancelled.
        """
        if self.client is None:
            raise FedTheoryError("the engine is not started: use it in a with block")
        dd = self._dd
        items = list(items)
        token = os.urandom(4).hex()
        futures = [
            self.client.submit(fn, item, key=f"{name}-{token}-{i}", pure=False, retries=retries)
            for i, item in enumerate(items)
        ]
        position = {f.key: i for i, f in enumerate(futures)}
        bar = progress_bar(total=len(items), desc=desc, disable=not progress)
        try:
            for future in dd.as_completed(futures):
                i = position[future.key]
                try:
                    result = future.result()
                except Exception as exc:
                    what = describe(items[i]) if describe else repr(items[i])
                    if isinstance(exc, dd.KilledWorker):
                        raise FedTheoryError(
                            f"task {i} ({what}) lost its worker more than "
                            f"{self.allowed_failures} times (the last: "
                            f"{getattr(exc.last_worker, 'address', exc.last_worker)})"
                        ) from None
                    msg = str(exc).splitlines()[0] if str(exc) else ""
                    raise FedTheoryError(
                        f"task {i} ({what}) failed: {type(exc).__name__}: {msg}"
                    ) from exc
                future.release()
                bar.update(1)
                yield i, result
        finally:
            bar.close()
            pending = [f for f in futures if not f.done()]
            if pending:
                self.client.cancel(pending)


def map_tasks(
    fn: Callable[[Any], Any],
    items: Iterable[Any],
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: bool = True,
    desc: str = "tasks",
    describe: Callable[[Any], str] | None = None,
    retries: int = 0,
) -> Iterator[tuple[int, Any]]:
    """:meth:`Engine.map` on an engine started for this map and closed after it.

    ``fedtheory sweep`` and ``fedtheory verify --scheduler`` run their tasks this way.
    """
    items = list(items)
    with Engine(workers=workers, scheduler=scheduler, tasks=len(items)) as engine:
        yield from engine.map(
            fn, items, progress=progress, desc=desc, describe=describe, retries=retries
        )


def can_fork() -> bool:
    """Whether this process may run tasks in forked children: a platform with ``fork``, and a
    process allowed children (not a daemon: not a :func:`fork_map` child, not a Dask worker)."""
    return (
        "fork" in multiprocessing.get_all_start_methods()
        and not multiprocessing.current_process().daemon
    )


def cpu_time() -> float:
    """CPU seconds (user + system) of this process and of its children that have ended, all
    threads included (:func:`time.process_time` where ``resource`` is missing)."""
    if resource is None:  # pragma: no cover - not on Unix
        return time.process_time()
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def fork_map(
    fn: Callable[[Any], Any],
    items: Iterable[Any],
    *,
    workers: int,
    on_start: Callable[[int], None] | None = None,
    describe: Callable[[Any], str] | None = None,
    fresh: bool = True,
) -> Iterator[tuple[int, Any]]:
    """Run ``fn(item)`` for every item, each in a fresh forked child, at most ``workers`` at a
    time; yield ``(position, result)`` as each finishes.

    The items start in the order given (give the longest first: the longest-processing-time
    rule). Each child inherits this process through ``fork`` (``fn`` may be a closure; the items
    need not pickle) and runs ``fn(item)`` with one BLAS thread (threadpoolctl, as a Dask worker
    of :class:`Engine` has), as a daemon process: a :func:`fork_map` or forked simulation
    inside it runs in the child itself (:func:`can_fork`) rather than forking further. Only the
    result is pickled, back through a pipe. A child ignores SIGINT; the parent stops the children
    still running when the map ends early (an error, Ctrl-C, the caller leaving the loop).

    With ``workers`` 1, a platform without ``fork`` or in a daemon process, the items run here,
    one after the other, in the order given (with one BLAS thread as well).

    Parameters
    ----------
    fn : callable
        A function of one item; its result must pickle.
    items : iterable
    workers : int
        Children at once (>= 1; no more than the items nor two per core,
        :func:`~fedtheory.validation.worker_count`).
    on_start : callable, optional
        ``on_start(position)`` just before an item starts.
    describe : callable, optional
        ``describe(item)`` names a failed item in the error message (default ``repr``).
    fresh : bool
        Each item in a child of its own (True: nothing one item leaves behind, memory or a
        cache, reaches the next), or ``workers`` children that each run item after item (False:
        one fork per child, not per item; a fresh child per seed block of 1000 seeds of
        figure4_problem cost 8% more CPU than two children reused, 1.62 s against 1.50 s,
        ``fedtheory simulate ... --seeds 1000 --workers 2``).

    Raises
    ------
    FedTheoryError
        The first item whose ``fn`` raised (its type and message), or whose child died without
        a result (killed, out of memory: its exit code); the children still running are stopped.
    """
    if isinstance(workers, bool) or int(workers) != workers or workers < 1:
        raise FedTheoryError(f"workers must be a whole number >= 1, got {workers!r}")
    items = list(items)
    workers = worker_count(workers, len(items))  # never more than the items, nor 2 per core
    what = describe or repr
    if workers == 1 or len(items) <= 1 or not can_fork():
        for i, item in enumerate(items):
            if on_start is not None:
                on_start(i)
            with threadpool_limits(limits=1, user_api="blas"):
                yield i, fn(item)
        return
    if not fresh:
        yield from _reused_children(fn, items, workers, on_start, what)
        return
    context = multiprocessing.get_context("fork")
    running: dict[Any, tuple[int, Any]] = {}  # the parent's end of a child's pipe -> (i, child)
    todo = iter(enumerate(items))
    try:
        while True:
            while len(running) < workers:
                nxt = next(todo, None)
                if nxt is None:
                    break
                i, item = nxt
                if on_start is not None:
                    on_start(i)
                receive, send = context.Pipe(duplex=False)
                child = _start_child(context, _forked, (fn, item, send))
                send.close()  # the child holds the only writing end: EOF when it dies
                running[receive] = (i, child)
            if not running:
                return
            for receive in wait(list(running)):
                i, child = running.pop(receive)
                try:
                    payload = _result(receive, child, f"task {i} ({what(items[i])})")
                finally:
                    receive.close()
                    child.join()
                yield i, payload
    finally:
        for receive, (_, child) in running.items():
            child.terminate()
            child.join()
            receive.close()


def _reused_children(
    fn: Callable[[Any], Any],
    items: list,
    workers: int,
    on_start: Callable[[int], None] | None,
    what: Callable[[Any], str],
) -> Iterator[tuple[int, Any]]:
    """:func:`fork_map` with ``fresh=False``: ``workers`` forked children, each sent the
    position of its next item through its pipe as it returns a result (the items reach it
    through ``fork``)."""
    context = multiprocessing.get_context("fork")
    todo = iter(range(len(items)))
    children: list[tuple[Any, Any]] = []  # (the parent's end of the pipe, the child)
    busy: dict[Any, tuple[int, Any]] = {}  # the parent's end -> (position, child)
    done = False

    def hand_on(conn: Any, child: Any) -> None:
        i = next(todo, None)
        if i is None:
            conn.send(None)  # no more items: the child ends
            return
        if on_start is not None:
            on_start(i)
        conn.send(i)
        busy[conn] = (i, child)

    try:
        for _ in range(min(workers, len(items))):
            conn, end = context.Pipe(duplex=True)
            child = _start_child(context, _serve, (fn, items, end))
            end.close()  # the child holds the other end only: EOF when it dies
            children.append((conn, child))
        for conn, child in children:
            hand_on(conn, child)
        while busy:
            for conn in wait(list(busy)):
                i, child = busy.pop(conn)
                yield i, _result(conn, child, f"task {i} ({what(items[i])})")
                hand_on(conn, child)
        done = True  # every child was told to end
    finally:
        for conn, child in children:
            if not done:  # stopped early (an error, Ctrl-C, the caller left the loop)
                child.terminate()
            child.join()
            conn.close()


def _serve(fn: Callable[[Any], Any], items: list, conn: Any) -> None:
    """A reused :func:`fork_map` child: ``fn(items[i])`` for each position ``i`` it receives,
    with one BLAS thread, sent back as :func:`_forked` does, until it receives None."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops its children on Ctrl-C
    with threadpool_limits(limits=1, user_api="blas"):
        while True:
            i = conn.recv()
            if i is None:
                break
            try:
                conn.send((True, fn(items[i])))
            except Exception as exc:  # reported by the parent, naming the item
                conn.send(_failure(exc))
    conn.close()


def _start_child(context: Any, target: Callable, args: tuple) -> Any:
    """A started daemon child running ``target(*args)`` (what this process has buffered on
    stdout and stderr written first, so that the child does not write it again)."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    child = context.Process(target=target, args=args, daemon=True)
    child.start()
    return child


def _result(conn: Any, child: Any, task: str) -> Any:
    """The result a child sent through ``conn``, or a FedTheoryError naming ``task``: the
    child's error, or that it died without a result (its exit code)."""
    try:
        ok, payload = conn.recv()
    except EOFError:
        child.join()
        raise FedTheoryError(
            f"{task} ended without a result: its process exited with code {child.exitcode}"
        ) from None
    if not ok:
        raise FedTheoryError(f"{task} failed: {payload}")
    return payload


def _failure(exc: Exception) -> tuple[bool, str]:
    """What a child sends back for an error: ``(False, "Type: its first line")``."""
    lines = str(exc).splitlines()
    return False, f"{type(exc).__name__}: {lines[0] if lines else ''}"


def fork_all(
    fn: Callable[[Any], Any],
    items: Iterable[Any],
    *,
    workers: int,
    order: Sequence[int] | None = None,
    progress: bool = False,
    desc: str = "tasks",
    describe: Callable[[Any], str] | None = None,
    on_result: Callable[[int, Any], None] | None = None,
) -> list[Any]:
    """``[fn(item) for item in items]``, computed by :func:`fork_map`: ``workers`` forked
    children that run item after item (``fresh=False``), the results in the items' order. With ``workers`` 1,
    one item, or a process that may not fork (:func:`can_fork`), the items run here, one after
    the other, with the BLAS threads this process has.

    The one forked map of the simulator's seed blocks, the exact stability map and the bound
    search: ``fn`` may be a closure over the caller's job (nothing is pickled on the way in).

    Parameters
    ----------
    order : sequence of int, optional
        The positions of the items in the order they start (the longest first); default: as
        given.
    progress : bool
        A progress bar over the items on stderr, labelled ``desc``.
    describe : callable, optional
        Names a failed item in the error message (:func:`fork_map`).
    on_result : callable, optional
        ``on_result(position, result)`` in this process as each item finishes (in the order
        they finish), e.g. to report progress over the items.
    """
    items = list(items)
    order = list(range(len(items))) if order is None else [int(i) for i in order]
    if sorted(order) != list(range(len(items))):
        raise FedTheoryError("order must list every position of the items once")
    out: list[Any] = [None] * len(items)
    bar = progress_bar(total=len(items), desc=desc, disable=not progress)
    try:
        if workers == 1 or len(items) <= 1 or not can_fork():
            done: Iterable[tuple[int, Any]] = ((k, fn(items[i])) for k, i in enumerate(order))
        else:
            done = fork_map(
                fn, [items[i] for i in order], workers=workers, describe=describe, fresh=False
            )
        for k, result in done:
            out[order[k]] = result
            bar.update(1)
            if on_result is not None:
                on_result(order[k], result)
    finally:
        bar.close()
    return out


def _forked(fn: Callable[[Any], Any], item: Any, send: Any) -> None:
    """A :func:`fork_map` child: ``fn(item)`` with one BLAS thread, sent back as ``(True,
    result)``, or ``(False, "Type: message")`` when it raised or the result does not pickle."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops its children on Ctrl-C
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            result = fn(item)
        send.send((True, result))
    except Exception as exc:  # reported by the parent, naming the item
        send.send(_failure(exc))
    finally:
        send.close()
