"""Never silent: the heartbeat of :mod:`fedtheory.io.bars` says what runs while a unit of work
takes long, in a log as on a terminal, and stops cleanly.

The commands are slowed artificially (a sleep inside one unit of work) and run with a short
heartbeat (``FEDTHEORY_HEARTBEAT``), so that a gap the size of the real limit (20 s against the
default 10 s heartbeat) shows in a test that takes seconds: the slowed unit lasts six heartbeats
and no gap between two lines of stderr may exceed two (20 s at the default)."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from fedtheory.errors import FedTheoryError
from fedtheory.io import LineProgress, bars, duration, heartbeat_seconds, working
from fedtheory.problems import figure4_problem
from fedtheory.simulation import simulate
from fedtheory.verify import Claim, runner

BEAT = 0.5  # the heartbeat of the slowed runs (seconds)
SLOW = 6 * BEAT  # how long the slowed unit of work sleeps
LIMIT = 2 * BEAT  # the longest gap allowed: 20 s at the default heartbeat of 10 s

# A driver that slows one unit of work of a command by SLOW seconds, then runs the command.
DRIVER = textwrap.dedent("""
    import sys, time
    slow, what, argv = float(sys.argv[1]), sys.argv[2], sys.argv[3:]

    def slowed(module, name):
        inner = getattr(module, name)
        def wrapper(*args, **kw):
            time.sleep(slow)  # the unit of work takes long
            return inner(*args, **kw)
        setattr(module, name, wrapper)

    if what == "verify":
        import fedtheory.verify.runner as m
        slowed(m, "run_claim")
    elif what == "rate":
        import fedtheory.cli.rate as m
        slowed(m, "exact_rates")
    elif what == "bound":
        import fedtheory.cli.bound as m
        slowed(m, "check_classes")
    elif what == "start":  # the command's imports (verify: the claim catalog)
        import fedtheory.cli as m
        slowed(m, "build_parser")
    from fedtheory.cli import main
    sys.exit(main(argv))
""")


def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "FEDTHEORY_NO_PROGRESS"}
    env.update(MPLBACKEND="Agg", FEDTHEORY_HEARTBEAT=str(BEAT), **extra)
    return env


def _stamped(proc: subprocess.Popen) -> list[tuple[float, str]]:
    """Every line of the child's stderr (a pipe) with the seconds since the start."""
    t0, out = time.monotonic(), []
    for raw in proc.stderr:
        out.append((time.monotonic() - t0, raw.rstrip("\n")))
    proc.wait()
    return out


def _slowed(what: str, *argv: str, cwd=None) -> list[tuple[float, str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(SLOW), what, *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        cwd=cwd,
    )
    lines = _stamped(proc)
    assert proc.returncode == 0, "\n".join(line for _, line in lines)
    return lines


def _gaps(lines: list[tuple[float, str]], start: str) -> list[float]:
    """The gaps between consecutive lines from the first that starts with ``start`` on (the
    interpreter's start-up, imports included, is not the heartbeat's business)."""
    first = next(i for i, (_, line) in enumerate(lines) if line.startswith(start))
    times = [t for t, _ in lines[first:]]
    return list(np.diff(times))


def test_verify_is_never_silent_while_claims_run():
    """Two claims in forked children (the claims in this process: the Ctrl-C test below)."""
    lines = _slowed("verify", "verify", "--only", "G1,G2", "--workers", "2")
    text = [line for _, line in lines]
    gaps = _gaps(lines, "claim 1 of 2 started")
    assert max(gaps) <= LIMIT, (max(gaps), text)
    beats = [line for line in text if line.startswith("claims running: ")]
    assert len(beats) >= 2  # SLOW lasts several heartbeats: they say which claims run
    assert all(("G1" in b or "G2" in b) and "of 2 done" in b for b in beats)
    assert text[-1].startswith("claim 2 of 2 done: ")  # the heartbeat ended with the claims


def test_rate_says_what_it_computes_while_it_computes():
    lines = _slowed(
        "rate",
        "rate",
        "--problem",
        "quadratic",
        "--algorithm",
        "fedavg",
        "--participation",
        "full",
        "-K",
        "2",
        "--lr",
        "0.05",
    )
    text = [line for _, line in lines]
    unit = "exact rates of fedavg on quadratic (full participation, K = 2, lr = 0.05)"
    assert text[0] == f"{unit} ..."
    assert max(_gaps(lines, unit)) <= LIMIT, text
    assert sum(line.startswith(f"{unit} running ") for line in text) >= 2
    assert text[-1].startswith(f"{unit}: done in ")


def test_bound_says_what_it_checks_while_it_checks(tmp_path):
    spec = tmp_path / "gd.toml"
    spec.write_text(
        "\n".join(
            [
                'algorithm = "fedavg"',
                'participation = "full"',
                "clients = 3",
                "local_steps = 1",
                'lr = "1/L_f"',
                'quantity = "mean_square_rate"',
                'bound = "(1 - eta*mu_f)**2"',
                "[class]",
                "dim = 2",
                "L = 4.0",
                "mu = 1.0",
            ]
        )
    )
    lines = _slowed("bound", "bound", str(spec), "--search", "4", cwd=tmp_path)
    text = [line for _, line in lines]
    unit = "checking gd: a search of 4 draws over the class"
    assert text[0] == f"{unit} ..."
    assert max(_gaps(lines, unit)) <= LIMIT, text
    assert sum(line.startswith(f"{unit} running ") for line in text) >= 2


def test_a_slow_start_is_heard_of_and_a_quick_one_says_nothing():
    lines = _slowed("start", "verify", "--only", "G1", "--workers", "1")
    text = [line for _, line in lines]
    beats = [line for line in text if line.startswith("fedtheory verify: starting running ")]
    assert len(beats) >= 2 and max(_gaps(lines, beats[0])) <= LIMIT, text
    env = {k: v for k, v in _env().items() if k != "FEDTHEORY_HEARTBEAT"}  # 10 s: a quick start
    quick = subprocess.run(
        [sys.executable, "-m", "fedtheory", "spectral", "ring", "-N", "8"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert quick.stderr == ""


def test_ctrl_c_stops_the_heartbeat_and_the_command_at_once():
    proc = subprocess.Popen(
        [sys.executable, "-c", DRIVER, "60", "verify", "verify", "--only", "G1", "--workers", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    first = proc.stderr.readline()
    assert first.startswith("claim 1 of 1 started: G1")
    beat = proc.stderr.readline()  # the claim sleeps: the heartbeat speaks
    assert beat.startswith("claims running: G1 ")
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    rest = proc.stderr.read()  # to the end: the process and its heartbeat are gone
    proc.wait(timeout=30)
    assert time.monotonic() - t0 < 5
    assert proc.returncode == 2 and rest.strip().splitlines()[-1] == "fedtheory: error: interrupted"
    assert "Traceback" not in rest


def test_a_beat_says_what_runs_and_the_time_left_and_ends_with_the_bar():
    out = io.StringIO()
    bar = LineProgress(total=4, desc="figures", file=out, heartbeat=0.2)
    bar.set_postfix_str("figure4")
    bar.done("figure one written", seconds=0.0)
    time.sleep(0.7)
    beats = [line for line in out.getvalue().splitlines() if line.startswith("figures: ")]
    assert beats and beats[0].startswith("figures: figure4 running ")
    assert "; 1 of 4 done; about " in beats[0] and beats[0].endswith(" left")
    bar.close()
    n = len(out.getvalue().splitlines())
    time.sleep(0.5)
    assert len(out.getvalue().splitlines()) == n  # closed: no more beats


def test_the_heartbeat_thread_ends_when_nothing_is_open():
    bar = LineProgress(total=2, file=io.StringIO(), heartbeat=0.2)
    thread = bars._HEARTBEAT.thread
    assert thread is not None and thread.is_alive()
    bar.close()
    thread.join(timeout=3 * bars.TICK)
    assert not thread.is_alive()
    forgotten = LineProgress(total=2, file=io.StringIO(), heartbeat=0.2)  # never closed
    thread = bars._HEARTBEAT.thread
    del forgotten  # dropped: the heartbeat forgets it at its next tick
    thread.join(timeout=3 * bars.TICK)
    assert not thread.is_alive()


def test_working_says_when_a_unit_starts_and_ends(monkeypatch):
    monkeypatch.delenv("FEDTHEORY_NO_PROGRESS", raising=False)
    monkeypatch.setenv("FEDTHEORY_HEARTBEAT", "0.2")
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    with working("an eigen-solve") as unit:
        unit.set_postfix_str("Krylov-Schur")
        time.sleep(0.6)
    lines = err.getvalue().splitlines()
    assert lines[0] == "an eigen-solve ..."
    assert lines[1].startswith("an eigen-solve: Krylov-Schur running ")
    assert lines[-1].startswith("an eigen-solve: done in ")


def test_a_heartbeat_changes_no_computed_bit(monkeypatch):
    """A run with a heartbeat beating every 10 ms is the same bits as one without progress."""
    problem = figure4_problem()
    kw = dict(rounds=300, seeds=3, lr=1e-4, local_steps=3, clients_per_round=4)
    monkeypatch.setenv("FEDTHEORY_NO_PROGRESS", "1")
    quiet = simulate(problem, "focus", "uniform", **kw)
    monkeypatch.delenv("FEDTHEORY_NO_PROGRESS")
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    bar = LineProgress(total=1, file=io.StringIO(), heartbeat=0.01)
    try:
        loud = simulate(problem, "focus", "uniform", progress=True, **kw)
    finally:
        bar.close()
    assert np.array_equal(quiet.error, loud.error, equal_nan=True)
    assert np.array_equal(quiet.x_final, loud.x_final)


def test_the_heartbeat_setting_is_read_or_refused(monkeypatch):
    monkeypatch.setenv("FEDTHEORY_HEARTBEAT", "30")
    assert heartbeat_seconds() == 30.0
    for bad in ("0", "-1", "soon", "nan"):
        monkeypatch.setenv("FEDTHEORY_HEARTBEAT", bad)
        with pytest.raises(FedTheoryError, match="FEDTHEORY_HEARTBEAT must be a number"):
            heartbeat_seconds()
    assert [duration(s) for s in (4.25, 45, 130, 3600 + 300)] == [
        "4.2 s",
        "45 s",
        "2 min 10 s",
        "1 h 5 min",
    ]


def test_verify_estimates_the_time_left_from_the_costs_at_the_runs_own_pace(monkeypatch):
    """Costs 10, 20 and 30 s on 2 workers: before any claim ends the pace is the machine's
    load per core; once one ends, its seconds over its cost; a claim past its estimate leaves
    the estimate unknown rather than zero."""
    now = [0.0]
    monkeypatch.setattr(runner.time, "perf_counter", lambda: now[0])
    monkeypatch.setattr(runner, "_load_per_core", lambda: 2.0)
    claims = [Claim(cid, "test", "t", lambda ctx: None) for cid in ("Q1", "Q2", "Q3")]
    clock = runner.Clock(claims, "quick", workers=2)
    clock.cost = {"Q1": 10.0, "Q2": 20.0, "Q3": 30.0}
    clock.started("Q3")
    clock.started("Q2")
    now[0] = 10.0  # pace 2 (the load): Q3 has 50 s left, Q2 30 s, Q1 20 s waiting
    assert clock.time_left() == pytest.approx(max(50.0, (50 + 30 + 20) / 2))
    assert clock.status() == "claims running: Q3 10 s, Q2 10 s; 0 of 3 done"
    now[0] = 30.0
    clock.finished("Q2")  # 30 s for a cost of 20: pace 1.5
    clock.started("Q1")
    assert clock.time_left() == pytest.approx(max(45.0 - 30.0, 15.0, (15.0 + 15.0) / 2))
    now[0] = 60.0  # both past their estimates
    assert clock.time_left() is None
    clock.cost["Q1"] = None  # never measured: no estimate
    assert clock.time_left() is None
