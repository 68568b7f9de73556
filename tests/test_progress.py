"""Progress that works everywhere: a bar on a terminal, one line per finished unit on any other
stderr (a log, a pipe, CI), nothing when disabled; verify and figures report as they go."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from fedtheory.cli import main
from fedtheory.figures import registry
from fedtheory.io import LineProgress, progress, pyplot


def _env_with_progress() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "FEDTHEORY_NO_PROGRESS"}
    env["MPLBACKEND"] = "Agg"
    return env


def test_progress_picks_lines_off_a_terminal_and_nothing_when_disabled(monkeypatch):
    monkeypatch.delenv("FEDTHEORY_NO_PROGRESS", raising=False)
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # not a terminal
    assert isinstance(progress(total=3), LineProgress)
    assert not isinstance(progress(total=3, disable=True), LineProgress)
    monkeypatch.setenv("FEDTHEORY_NO_PROGRESS", "1")
    silent = progress(range(3))
    assert not isinstance(silent, LineProgress) and list(silent) == [0, 1, 2]
    silent.done("x")  # every kind takes done()


def test_line_progress_labels_each_unit_and_throttles_unlabelled_ones():
    out = io.StringIO()
    bar = LineProgress(total=3, desc="verify", file=out)
    bar.done("C1/uniform holds", seconds=4.1)
    bar.done(["C2/a fails", "C2/b holds"], seconds=0.25)
    lines = out.getvalue().splitlines()
    assert lines == [
        "[1/3] C1/uniform holds 4.1 s",
        "[2/3] C2/a fails 0.2 s",
        "[2/3] C2/b holds 0.2 s",
    ]
    out = io.StringIO()
    rounds = LineProgress(range(1000), desc="rounds", every=float("inf"), file=out)
    assert sum(1 for _ in rounds) == 1000
    lines = out.getvalue().splitlines()  # one line per tenth, not 1,000
    assert len(lines) == 10 and lines[-1].startswith("[1000/1000] rounds")
    assert "\r" not in out.getvalue()


def test_line_progress_counts_units_by_name_and_says_when_one_starts():
    out = io.StringIO()
    bar = LineProgress(total=37, desc="verify", file=out, counts="claim")
    bar.started("N1 (running: N1)")
    bar.started("C2 (running: N1, C2)")
    bar.done(["C2/a fails", "C2/b holds"], seconds=0.25)
    assert out.getvalue().splitlines() == [
        "claim 1 of 37 started: N1 (running: N1)",
        "claim 2 of 37 started: C2 (running: N1, C2)",
        "claim 1 of 37 done: C2/a fails 0.2 s",
        "claim 1 of 37 done: C2/b holds 0.2 s",
    ]


def _verify_log(tmp_path, *flags: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    err = tmp_path / "err.log"
    with open(err, "w") as fh:
        done = subprocess.run(
            [sys.executable, "-m", "fedtheory", "verify", "--only", "G1,G2", *flags],
            stdout=subprocess.PIPE,
            stderr=fh,
            text=True,
            env=_env_with_progress(),
            check=False,
        )
    assert done.returncode == 0
    return done, err.read_text().splitlines()


def test_verify_streams_a_line_per_claim_started_and_finished_to_a_redirected_stderr(tmp_path):
    """The log of ``make run > log 2>&1`` shows each claim as it starts (with the claims
    running) and as it finishes; the table is still printed at the end on stdout, and with
    ``--json -`` stdout holds only the JSON."""
    done, lines = _verify_log(tmp_path, "--workers", "1")
    assert lines[0] == "claim 1 of 2 started: G1"
    assert lines[1].startswith("claim 1 of 2 done: G1 holds ") and lines[1].endswith(" s")
    assert lines[2] == "claim 2 of 2 started: G2"
    assert lines[3].startswith("claim 2 of 2 done: G2 holds ")
    assert "G1" in done.stdout and "verdict" in done.stdout and "claim 1 of 2" not in done.stdout
    _, lines = _verify_log(tmp_path, "--workers", "2")  # G2, the longer, starts first
    assert lines[:2] == [
        "claim 1 of 2 started: G2 (running: G2)",
        "claim 2 of 2 started: G1 (running: G2, G1)",
    ]
    assert sorted(line.split(": ")[0] for line in lines[2:]) == [
        "claim 1 of 2 done",
        "claim 2 of 2 done",
    ]
    assert sorted(line.split(": ")[1].split()[0] for line in lines[2:]) == ["G1", "G2"]
    piped = subprocess.run(
        [sys.executable, "-m", "fedtheory", "verify", "--only", "G1", "--json", "-"],
        capture_output=True,
        text=True,
        env=_env_with_progress(),
        check=True,
    )
    json.loads(piped.stdout)  # pure JSON
    assert "claim 1 of 1 done: G1 holds" in piped.stderr


@pytest.fixture
def two_cheap_figures_one_broken(monkeypatch):
    plt = pyplot()

    def ok(config):
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, config["y"]])
        return fig, {"y": config["y"]}

    def broken(config):
        raise ValueError("the builder is broken\nsecond line")

    figures = {
        "first": registry.FigureSpec("first", "one line", ok, {"y": 1.0}),
        "broken": registry.FigureSpec("broken", "fails", broken, {}),
        "last": registry.FigureSpec("last", "another line", ok, {"y": 2.0}),
    }
    # the command first: importing it binds FIGURES, which must be the real one to restore
    monkeypatch.setattr("fedtheory.figures.command.FIGURES", figures)
    monkeypatch.setattr(registry, "FIGURES", figures)
    monkeypatch.delenv("FEDTHEORY_NO_PROGRESS", raising=False)
    return figures


def test_figures_reports_each_figure_and_goes_past_a_failing_one(
    two_cheap_figures_one_broken, tmp_path, capsys
):
    assert main(["figures", "--out", str(tmp_path)]) == 1
    cap = capsys.readouterr()
    err = cap.err.splitlines()
    assert err[0] == "[1/3 started] figure first"
    assert err[1].startswith("[1/3] figure first written")
    assert err[2] == "[2/3 started] figure broken"
    assert err[3].startswith("[2/3] figure broken FAILED (ValueError: the builder is broken)")
    assert err[4] == "[3/3 started] figure last"
    assert err[5].startswith("[3/3] figure last written")
    assert err[-1] == "fedtheory: error: figure broken failed: ValueError: the builder is broken"
    assert (tmp_path / "last.png").is_file() and (tmp_path / "last.json").is_file()
    assert "first" in cap.out and "last" in cap.out and "broken" not in cap.out


def test_generate_raises_unless_asked_to_keep_going(two_cheap_figures_one_broken, tmp_path):
    with pytest.raises(ValueError, match="broken"):
        registry.generate(["broken"], tmp_path, quiet=True)
    (r,) = registry.generate(["broken"], tmp_path, quiet=True, keep_going=True)
    assert r.error.startswith("ValueError") and not r.paths
