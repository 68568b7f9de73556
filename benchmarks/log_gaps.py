"""Check that a command's log is never silent for long: run it with stdout and stderr merged
into one pipe (as ``make run > log 2>&1``, Slurm or CI see it), stamp every line with the
seconds since the start, and report every gap between two lines (or between the start and the
first line, or the last line and the end) longer than ``--max-gap`` seconds.

By default the command is ``make run`` in this checkout. ``--clone`` runs it instead in a fresh
``git clone`` of this checkout's HEAD in a temporary folder, as a new user would (``make run``
then creates the virtual environment and installs the package first: the installer's lines are
checked too). ``--log FILE`` keeps the stamped log (``  12.3 | line``).

Exit status 0 when no gap is longer than ``--max-gap``, 1 otherwise (each gap is listed with
the line before it and the line after it), or the command's own exit status when it failed.

Usage::

    .venv/bin/python benchmarks/log_gaps.py [--max-gap 20] [--clone] [--log FILE] [-- CMD ...]

Measured: see docs/benchmarks.md ("Never silent").
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def stamped_lines(cmd: list[str], cwd: Path, env: dict | None = None):
    """Run ``cmd`` with stdout and stderr merged into one pipe; yield ``(seconds, line)`` for
    every line as it arrives, then ``(seconds, None)`` at the end, and return the exit status
    through ``StopIteration.value``."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0
    )
    pending = b""
    assert proc.stdout is not None
    while True:
        chunk = proc.stdout.read1(65536) if hasattr(proc.stdout, "read1") else proc.stdout.read(1)
        if not chunk:
            break
        pending += chunk
        # a carriage return (a tqdm bar, pip's spinner) ends a line too
        *complete, pending = pending.replace(b"\r", b"\n").split(b"\n")
        now = time.perf_counter() - t0
        for raw in complete:
            if raw.strip():
                yield now, raw.decode("utf-8", "replace")
    if pending.strip():
        yield time.perf_counter() - t0, pending.decode("utf-8", "replace")
    code = proc.wait()
    yield time.perf_counter() - t0, None
    return code


def gaps(stamps: list[tuple[float, str | None]], max_gap: float) -> list[tuple[float, int]]:
    """``(gap, index of the line after it)`` for every gap over ``max_gap`` seconds, the start
    (time 0) counting as a line."""
    out, last = [], 0.0
    for i, (t, _) in enumerate(stamps):
        if t - last > max_gap:
            out.append((t - last, i))
        last = t
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-gap", type=float, default=20.0, help="seconds (default 20)")
    ap.add_argument("--clone", action="store_true", help="run in a fresh clone of HEAD")
    ap.add_argument("--log", type=Path, help="keep the stamped log here")
    ap.add_argument("cmd", nargs=argparse.REMAINDER, help="the command (default: make run)")
    args = ap.parse_args(argv)
    cmd = [c for c in args.cmd if c != "--"] or ["make", "run"]
    with tempfile.TemporaryDirectory(prefix="fedtheory-gaps-") as tmp:
        cwd = ROOT
        if args.clone:
            cwd = Path(tmp) / "fedtheory"
            subprocess.run(["git", "clone", "-q", str(ROOT), str(cwd)], check=True)
        env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
        stamps: list[tuple[float, str | None]] = []
        lines = stamped_lines(cmd, cwd, env)
        log = args.log.open("w") if args.log else None
        try:
            while True:
                try:
                    t, line = next(lines)
                except StopIteration as stop:
                    code = stop.value
                    break
                stamps.append((t, line))
                if log is not None and line is not None:
                    print(f"{t:8.1f} | {line}", file=log, flush=True)
        finally:
            if log is not None:
                log.close()
    found = gaps(stamps, args.max_gap)
    n = sum(1 for _, line in stamps if line is not None)
    times = [0.0] + [t for t, _ in stamps]
    longest = max((b - a for a, b in zip(times, times[1:], strict=False)), default=0.0)
    print(
        f"{' '.join(cmd)}: exit {code}, {n} lines in {stamps[-1][0]:.1f} s, longest gap "
        f"{longest:.1f} s"
    )
    for gap, i in found:
        before = stamps[i - 1][1] if i > 0 else "(start)"
        after = stamps[i][1] if stamps[i][1] is not None else "(end)"
        print(
            f"  {gap:6.1f} s silent at {stamps[i][0] - gap:7.1f} s: after {before!r}, "
            f"before {after!r}"
        )
    print(f"{len(found)} gap(s) over {args.max_gap:g} s")
    if code:
        return code
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
