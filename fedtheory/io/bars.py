"""Progress that works everywhere: a tqdm bar on a terminal, ``tqdm.notebook`` in a Jupyter
kernel with ipywidgets, one line per finished unit on any other stderr (a log, a pipe, CI), and
a heartbeat that keeps every one of them from going silent.

The heartbeat is one daemon thread per process, running while a progress object is open. Every
:data:`TICK` seconds it looks at the innermost open one: a bar on a terminal or in a notebook is
redrawn (its elapsed time and postfix move on), and in a log, after :data:`HEARTBEAT` seconds
without a line on the progress stream, the object's :meth:`LineProgress.beat` writes one line
saying what is running, for how long, and the time left where it can be estimated
(``claims running: N1 2 min 10 s, A6 1 min 5 s; 7 of 37 done; about 4 min left``). It only
reads clocks and labels, so it changes no computed bit; it stops within a tick of the last
progress object closing (Ctrl-C closes them on the way out), and at exit. A ``fork`` waits for
a line being written to end (the child never inherits a half-held lock), and a forked child
whose parent had progress open stays quiet: the parent speaks for it.

:func:`working` is the unit of work without a count (an eigen-solve, a search, one figure): a
line when it starts, the heartbeat while it runs, a line when it ends.
"""

from __future__ import annotations

import atexit
import contextlib
import math
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator

from tqdm.std import tqdm

from fedtheory.errors import FedTheoryError

#: The most seconds a log stays silent while progress is open: the heartbeat writes a line
#: after this much silence (so no gap between two lines exceeds it by more than a tick). The
#: environment variable ``FEDTHEORY_HEARTBEAT`` (seconds) sets another.
HEARTBEAT = 10.0
#: How often the heartbeat thread wakes (seconds; a quarter of a shorter heartbeat): a terminal
#: bar's clock moves this often.
TICK = 1.0


def heartbeat_seconds() -> float:
    """The heartbeat's silence in seconds: ``FEDTHEORY_HEARTBEAT`` when set, else
    :data:`HEARTBEAT`.

    Raises
    ------
    FedTheoryError
        ``FEDTHEORY_HEARTBEAT`` is not a number of seconds > 0 (``inf``: no heartbeat).
    """
    text = os.environ.get("FEDTHEORY_HEARTBEAT")
    if text is None or not text.strip():
        return HEARTBEAT
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value > 0:
        raise FedTheoryError(
            f"FEDTHEORY_HEARTBEAT must be a number of seconds > 0 (inf: none), got {text!r}"
        )
    return value


def duration(seconds: float) -> str:
    """``45 s``, ``2 min 10 s``, ``1 h 5 min``: a duration a reader takes in at a glance."""
    s = max(0.0, float(seconds))
    if not math.isfinite(s):
        return "unknown"
    if s < 60:
        return f"{s:.0f} s" if s >= 10 else f"{s:.1f} s"
    m, sec = divmod(int(round(s)), 60)
    if m < 60:
        return f"{m} min {sec} s" if sec else f"{m} min"
    h, m = divmod(m, 60)
    return f"{h} h {m} min" if m else f"{h} h"


class _Heartbeat:
    """The process's one heartbeat (module docstring): the open progress objects, innermost
    last, the time of the last line on the progress stream, and the thread that beats."""

    def __init__(self) -> None:
        self.lock = threading.RLock()  # held while a line is written and while a fork starts
        self.open: list = []
        self.last = time.monotonic()
        self.thread: threading.Thread | None = None
        self.stop: threading.Event | None = None
        self.quiet = False  # a forked child whose parent speaks for it

    def wrote(self) -> None:
        """A line went to the progress stream now."""
        self.last = time.monotonic()

    def register(self, bar) -> None:
        with self.lock:
            self.open.append(weakref.ref(bar))  # a bar dropped without close() is forgotten
            if self.thread is None and not self.quiet:
                self.stop = threading.Event()
                self.thread = threading.Thread(
                    target=self._run,
                    args=(self.stop, self._tick(bar)),
                    name="fedtheory-heartbeat",
                    daemon=True,
                )
                self.thread.start()

    @staticmethod
    def _tick(bar) -> float:
        """How long the thread sleeps between looks while ``bar`` is the innermost."""
        return min(TICK, getattr(bar, "heartbeat", math.inf) / 4)

    def unregister(self, bar) -> None:
        with self.lock:
            self.open = [r for r in self.open if r() is not None and r() is not bar]
            self._stop_if_idle()

    def _stop_if_idle(self) -> None:
        if not self.open and self.stop is not None:
            self.stop.set()  # the thread ends within a tick; nobody waits for it here
            self.thread = self.stop = None

    def _run(self, stop: threading.Event, tick: float) -> None:
        while not stop.wait(tick):
            with self.lock:
                self.open = [r for r in self.open if r() is not None]
                top = self.open[-1]() if self.open else None
                if stop.is_set() or top is None:
                    self._stop_if_idle()
                    return
                try:
                    tick = self._tick(top)
                    if isinstance(top, LineProgress):
                        if time.monotonic() - self.last >= top.heartbeat:
                            top.beat()
                    else:
                        top.refresh()  # a bar: its clock and postfix move on
                except Exception:  # a status that cannot be told is no reason to stop the work
                    pass

    def shutdown(self) -> None:
        """Stop the thread and wait for it (at exit: no thread writes during finalization)."""
        with self.lock:
            stop, thread = self.stop, self.thread
            self.open.clear()
            self.thread = self.stop = None
        if stop is not None:
            stop.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=2 * TICK)

    def before_fork(self) -> None:
        self.lock.acquire()

    def after_fork_in_parent(self) -> None:
        self.lock.release()

    def after_fork_in_child(self) -> None:
        self.lock = threading.RLock()
        self.quiet = bool(self.open) or self.quiet
        self.open = []
        self.thread = self.stop = None


_HEARTBEAT = _Heartbeat()
atexit.register(_HEARTBEAT.shutdown)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_HEARTBEAT.before_fork,
        after_in_parent=_HEARTBEAT.after_fork_in_parent,
        after_in_child=_HEARTBEAT.after_fork_in_child,
    )


def notebook_front_end() -> bool:
    """True inside a Jupyter kernel whose front end can draw widgets (ipywidgets installed):
    the one place :func:`progress` uses ``tqdm.notebook``; elsewhere (a terminal, a log, a
    notebook without ipywidgets) ``tqdm.auto`` would warn "IProgress not found"."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except AttributeError:
        return False
    if shell is None or type(shell).__name__ != "ZMQInteractiveShell":
        return False
    import importlib.util  # noqa: PLC0415  (only inside a kernel)

    return importlib.util.find_spec("ipywidgets") is not None


class LineProgress:
    """Progress for a stream that is not a terminal (a log file, a pipe, Slurm, CI, a notebook
    without widgets): plain lines, never carriage returns.

    :meth:`done` reports one finished unit in one line (``[12/68] C1/uniform holds 4.1 s``;
    with ``counts="claim"``: ``claim 12 of 68 done: C1/uniform holds 4.1 s``); :meth:`started`
    one unit that starts (``claim 14 of 68 started: C2 (running: N1, C2)``), so that a log of
    long units is not silent while they run; :meth:`update` (a unit without a label, e.g. one
    sweep task or one round) prints a line ``[k/N] desc`` at most every ``every`` seconds and at
    each tenth of the total, and at the end; :meth:`beat`, called by the heartbeat after
    ``heartbeat`` seconds without a line, says what is running and the time left (module
    docstring). The subset of tqdm's interface used here (iteration, ``update``,
    ``set_postfix_str``, ``close``, ``write``, ``with``) works the same, so callers need not
    know which they got.

    Parameters
    ----------
    status : callable, optional
        ``status()``: what is running, for the heartbeat's line (default: the unit under way,
        its time and the units done).
    eta : callable, optional
        ``eta()``: the seconds left, or None where no estimate can be made (default: the mean
        time of the units done times the units left).
    heartbeat : float, optional
        Seconds of silence after which the heartbeat writes a line (default
        :func:`heartbeat_seconds`; ``inf``: none).
    """

    def __init__(
        self,
        iterable=None,
        *,
        total=None,
        desc=None,
        every=10.0,
        file=None,
        counts=None,
        status: Callable[[], str] | None = None,
        eta: Callable[[], float | None] | None = None,
        heartbeat: float | None = None,
    ):
        self.iterable = iterable
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)
        self.total = total
        self.desc = desc or ""
        self.every = every
        self.file = file if file is not None else sys.stderr
        self.counts = counts
        self.n = 0
        self.n_started = 0
        self.postfix = ""
        self._start = self._last = time.perf_counter()
        self._unit_start = self._start
        self._step = max(1, total // 10) if total else None
        self._closed = False
        self._status, self._eta = status, eta
        self.heartbeat = heartbeat_seconds() if heartbeat is None else float(heartbeat)
        if math.isfinite(self.heartbeat):
            _HEARTBEAT.register(self)

    def __iter__(self):
        try:
            for item in self.iterable:
                self._unit_start = time.perf_counter()
                yield item
                self.update(1)
        finally:  # also when the loop is left early: the heartbeat stops speaking for it
            self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _count(self, n: int | None = None, what: str = "done") -> str:
        """``[k/N]`` (``[k/N started]``), or with ``counts``: ``claim k of N done:``."""
        n = self.n if n is None else n
        of = f" of {self.total}" if self.total else ""
        if self.counts:
            return f"{self.counts} {n}{of} {what}:"
        tail = "" if what == "done" else f" {what}"
        return f"[{n}/{self.total}{tail}]" if self.total else f"[{n}{tail}]"

    def write(self, line: str) -> None:
        """Print ``line`` on the progress stream, flushed."""
        with _HEARTBEAT.lock:
            print(line, file=self.file, flush=True)
            _HEARTBEAT.wrote()

    def status(self) -> str:
        """What is running now, for :meth:`beat`: the caller's ``status()``, or the unit under
        way (its postfix, else the description), how long it has run, and the units done."""
        if self._status is not None:
            return self._status()
        now = time.perf_counter()
        what = ": ".join(x for x in (self.desc, self.postfix) if x) or "working"
        text = f"{what} running {duration(now - self._unit_start)}"
        if self.total:
            text += f"; {self.n} of {self.total} done"
        elif self.n:
            text += f"; {self.n} done"
        return text

    def time_left(self) -> float | None:
        """Seconds left: the caller's ``eta()``, or the mean time per unit done times the units
        left (None before the first unit ends or without a total)."""
        if self._eta is not None:
            return self._eta()
        if not self.total or not self.n:
            return None
        elapsed = time.perf_counter() - self._start
        return elapsed / self.n * max(self.total - self.n, 0)

    def beat(self) -> None:
        """One heartbeat line: :meth:`status` and the time left where it can be estimated."""
        left = self.time_left()
        tail = "" if left is None else f"; about {duration(left)} left"
        self.write(f"{self.status()}{tail}")

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        """Name the unit under way (shown on the throttled lines)."""
        self.postfix = s

    def set_description(self, desc: str = "", refresh: bool = True) -> None:
        """What the units are (the throttled lines' label)."""
        self.desc = desc or ""

    def refresh(self) -> None:
        """Nothing to redraw: lines are written as units finish."""

    def started(self, label: str) -> None:
        """One more unit starts: a line ``[k/N started] label`` (``counts="claim"``: ``claim k
        of N started: label``), k counting the units started so far."""
        self.n_started += 1
        self.write(f"{self._count(self.n_started, 'started')} {label}")

    def done(self, label: str | list[str], n: int = 1, seconds: float | None = None) -> None:
        """``n`` units finished: one line ``[k/N] label S s`` (``counts="claim"``: ``claim k of N
        done: label S s``) per label (``seconds``: the unit's time, by default since the
        previous unit finished)."""
        now = time.perf_counter()
        self.n += n
        dt = now - self._unit_start if seconds is None else seconds
        for one in [label] if isinstance(label, str) else label:
            self.write(f"{self._count()} {one} {dt:.1f} s")
        self._last = self._unit_start = now

    def update(self, n: int = 1) -> None:
        """``n`` unlabelled units finished; a line now and then (see the class)."""
        before, self.n = self.n, self.n + n
        now = time.perf_counter()
        crossed = self._step is not None and before // self._step != self.n // self._step
        last = self.total is not None and self.n >= self.total
        if crossed or last or now - self._last >= self.every:
            what = f" {self.postfix}" if self.postfix else ""
            self.write(f"{self._count()} {self.desc}{what} {now - self._start:.1f} s")
            self._last = now
        self._unit_start = now  # the next unit starts

    def close(self) -> None:
        if not self._closed:
            _HEARTBEAT.unregister(self)
        self._closed = True


class _TqdmProgress(tqdm):
    """tqdm with :meth:`LineProgress.done` and :meth:`LineProgress.started`: the label becomes
    the bar's postfix; the heartbeat redraws it every :data:`TICK` seconds while it is open
    (its elapsed time moves on while a long unit runs)."""

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        if not self.disable:
            _HEARTBEAT.register(self)

    def started(self, label: str) -> None:
        self.set_postfix_str(label)

    def done(self, label: str | list[str], n: int = 1, seconds: float | None = None) -> None:
        self.set_postfix_str(label if isinstance(label, str) else ", ".join(label), refresh=False)
        self.update(n)

    def close(self) -> None:
        _HEARTBEAT.unregister(self)
        super().close()


def progress(
    iterable=None,
    *,
    total=None,
    desc=None,
    disable=False,
    every=10.0,
    counts=None,
    status=None,
    eta=None,
    **kw,
):
    """Progress on stderr that works everywhere.

    - stderr is a terminal: a tqdm bar;
    - inside a Jupyter kernel with ipywidgets: ``tqdm.notebook``'s widget;
    - any other stderr (``make run > log 2>&1``, a pipe, Slurm, CI, ``nohup``, a notebook
      without ipywidgets): :class:`LineProgress`, plain lines as units finish;
    - ``disable`` or the environment variable ``FEDTHEORY_NO_PROGRESS`` set: nothing.

    While it is open, the heartbeat (module docstring) redraws the bar every second, or in a
    log writes a line saying what is running after :data:`HEARTBEAT` seconds of silence.

    Every kind iterates like tqdm and has ``update``, ``set_postfix_str``, ``close``,
    ``done(label)`` (one finished unit with its label: a line in a log, the postfix on a bar) and
    ``started(label)`` (one unit starts: a line in a log, the postfix on a bar).

    Parameters
    ----------
    iterable : iterable, optional
        What to iterate over (or give ``total`` and call ``update``/``done``).
    total : int, optional
        The number of units (``len(iterable)`` by default).
    desc : str, optional
        What the units are ("verify", "figures").
    disable : bool
        No progress at all.
    every : float
        In line mode, the most seconds between two lines of unlabelled units.
    counts : str, optional
        In line mode, what a unit is called in the counts: ``"claim"`` writes ``claim 12 of 68
        done: ...`` where the default writes ``[12/68] ...``.
    status, eta : callable, optional
        In line mode, what the heartbeat's line says is running and the seconds left
        (:class:`LineProgress`).
    **kw
        Further keywords for tqdm (``unit``, ...); ignored in line mode.
    """
    if disable or os.environ.get("FEDTHEORY_NO_PROGRESS"):
        return _TqdmProgress(iterable, total=total, desc=desc, disable=True, file=sys.stderr, **kw)
    if notebook_front_end():
        from tqdm.notebook import tqdm as notebook_tqdm  # noqa: PLC0415  (kernels only)

        class _NotebookProgress(notebook_tqdm):
            done = _TqdmProgress.done
            started = _TqdmProgress.started

            def __init__(self, *args, **kw) -> None:
                super().__init__(*args, **kw)
                _HEARTBEAT.register(self)

            def close(self) -> None:
                _HEARTBEAT.unregister(self)
                super().close()

        return _NotebookProgress(iterable, total=total, desc=desc, **kw)
    if sys.stderr is not None and sys.stderr.isatty():
        return _TqdmProgress(iterable, total=total, desc=desc, file=sys.stderr, **kw)
    return LineProgress(
        iterable, total=total, desc=desc, every=every, counts=counts, status=status, eta=eta
    )


def lines_only() -> bool:
    """Whether :func:`progress` would write plain lines here (stderr neither a terminal nor a
    notebook's widget, progress not silenced)."""
    if os.environ.get("FEDTHEORY_NO_PROGRESS") or notebook_front_end():
        return False
    return not (sys.stderr is not None and sys.stderr.isatty())


@contextlib.contextmanager
def working(
    what: str,
    *,
    disable: bool = False,
    eta: Callable[[], float | None] | None = None,
    announce: bool = True,
) -> Iterator:
    """One unit of work without a count (an eigen-solve, a bound search, a store's set-up): a
    line ``what ...`` when it starts, the heartbeat while it runs (``what running 45 s``, a
    bar's clock on a terminal), ``what: done in 52 s`` when it ends (in a log).

    Yields the progress object: ``set_postfix_str(text)`` says what the unit is at now (the
    heartbeat's line carries it). Nothing at all when ``disable`` or ``FEDTHEORY_NO_PROGRESS``.
    ``announce=False``: no start and end lines and no bar, only the heartbeat's lines in a log
    when the unit outlasts :data:`HEARTBEAT` (a command's start-up: silent when it is quick).

    Examples
    --------
    >>> with working("exact rates of FOCUS on figure4") as unit:   # doctest: +SKIP
    ...     unit.set_postfix_str("mean-square eigen-solve")
    ...     rates = exact_rates(...)
    """
    if not announce:
        disable = disable or not lines_only()
    bar = progress(
        total=None, desc=what, disable=disable, eta=eta, bar_format="{desc}: {elapsed}{postfix}"
    )
    line = isinstance(bar, LineProgress) and announce
    t0 = time.perf_counter()
    if line:
        bar.write(f"{what} ...")
    try:
        yield bar
    finally:
        bar.close()
        if line:
            bar.write(f"{what}: done in {duration(time.perf_counter() - t0)}")
