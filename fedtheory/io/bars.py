"""Progress that works everywhere: a tqdm bar on a terminal, ``tqdm.notebook`` in a Jupyter
kernel with ipywidgets, one line per finished unit on any other stderr (a log, a pipe, CI).
"""

from __future__ import annotations

import os
import sys
import time

from tqdm.std import tqdm


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
    each tenth of the total, and at the end. The subset of tqdm's interface used here
    (iteration, ``update``, ``set_postfix_str``, ``close``, ``write``, ``with``) works the same,
    so callers need not know which they got.
    """

    def __init__(self, iterable=None, *, total=None, desc=None, every=10.0, file=None, counts=None):
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

    def __iter__(self):
        for item in self.iterable:
            self._unit_start = time.perf_counter()
            yield item
            self.update(1)
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
        print(line, file=self.file, flush=True)

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

    def close(self) -> None:
        self._closed = True


class _TqdmProgress(tqdm):
    """tqdm with :meth:`LineProgress.done` and :meth:`LineProgress.started`: the label becomes
    the bar's postfix."""

    def started(self, label: str) -> None:
        self.set_postfix_str(label)

    def done(self, label: str | list[str], n: int = 1, seconds: float | None = None) -> None:
        self.set_postfix_str(label if isinstance(label, str) else ", ".join(label), refresh=False)
        self.update(n)


def progress(iterable=None, *, total=None, desc=None, disable=False, every=10.0, counts=None, **kw):
    """Progress on stderr that works everywhere.

    - stderr is a terminal: a tqdm bar;
    - inside a Jupyter kernel with ipywidgets: ``tqdm.notebook``'s widget;
    - any other stderr (``make run > log 2>&1``, a pipe, Slurm, CI, ``nohup``, a notebook
      without ipywidgets): :class:`LineProgress`, plain lines as units finish;
    - ``disable`` or the environment variable ``FEDTHEORY_NO_PROGRESS`` set: nothing.

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

        return _NotebookProgress(iterable, total=total, desc=desc, **kw)
    if sys.stderr is not None and sys.stderr.isatty():
        return _TqdmProgress(iterable, total=total, desc=desc, file=sys.stderr, **kw)
    return LineProgress(iterable, total=total, desc=desc, every=every, counts=counts)
