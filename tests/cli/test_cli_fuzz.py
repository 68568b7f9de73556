"""Fuzz the command line: every subcommand, malformed arguments and files.

The contract (README): a command either succeeds (exit 0), or exits with status 2 and
at most a few lines on stderr, the last one ``fedtheory: error: ...``, never a traceback; and an
output file named on a failing command line is left exactly as it was (bytes and mtime).

Each subcommand of :data:`fedtheory.cli.SUBCOMMANDS` (new ones are picked up; one without a
strategy here fails :func:`test_every_subcommand_is_fuzzed`) gets a strategy that starts from a
small, valid command line and replaces some of its values, or adds options, with values drawn
either from "valid-looking but small" or from "bad" (wrong types, negative / zero / NaN / inf /
huge numbers, unknown flags, missing paths, folders as outputs, files with garbage content).
The expensive subcommands (nn, figures, verify) only reach their argument checks.

Every input found so far is answered; a new failure fails the test with its command line.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedtheory.algorithms import available
from fedtheory.cli import SUBCOMMANDS, main
from fedtheory.graphs import mixing_matrix

#: Examples per subcommand: the whole file runs in well under a minute on two cores.
EXAMPLES = {
    "sweep": 30,
    "verify": 30,
    "spectral": 50,
    "figures": 20,
    "simulate": 150,
    "study": 40,
    "participation": 80,
    "nn": 40,
    "rate": 40,
    "bound": 30,
}
#: At most this many lines on stderr for a refused command (warnings printed before the error
#: line included).
MAX_ERROR_LINES = 4

EXISTING = "existing.json"
EXISTING_BYTES = b'{"keep": "me"}\n'


# --- the files the command lines name --------------------------------------------------------
@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return make_work(tmp_path_factory.mktemp("fuzz"))


def make_work(d: Path) -> Path:
    """A folder of good and bad input files, a pre-existing output, and a folder."""
    rng = np.random.default_rng(0)
    np.save(d / "p4.npy", np.full(4, 0.25))
    (d / "p4.txt").write_text("0.1 0.2 0.3 0.4\n")
    np.save(d / "W.npy", mixing_matrix("ring", 6))
    sp.save_npz(d / "Wsparse.npz", sp.csr_array(mixing_matrix("ring", 6)))
    (d / "edges.txt").write_text("0 1\n1 2\n2 3\n3 0\n")
    (d / "trace.csv").write_text("1,0,1,0\n0,1,0,1\n1,1,0,0\n0,0,1,1\n")
    np.savez(d / "problem.npz", A=rng.standard_normal((4, 6, 3)), b=rng.standard_normal((4, 6)))
    # garbage
    (d / "text.txt").write_text("hello, world\n")
    (d / "empty.txt").write_text("")
    (d / "junk.bin").write_bytes(rng.integers(0, 256, 512, dtype=np.uint8).tobytes())
    (d / "nan.txt").write_text("0.5 nan 0.25 0.25\n")
    np.save(d / "vec.npy", np.ones(4))  # a .npy where an .npz is expected
    np.savez(d / "arch.npz", x=np.ones(4))  # an .npz where a .npy is expected
    np.save(d / "complex.npy", np.full((6, 6), 1 / 6) + 0j)
    np.save(d / "strings.npy", np.array(["0.5", "0.5"]))
    np.savez(d / "singular.npz", A=rng.standard_normal((2, 1, 5)), b=rng.standard_normal((2, 1)))
    # sweep specs that are refused before any worker starts
    (d / "unknown_key.toml").write_text(
        'problem = "quadratic"\nalgorithm = "fedavg"\nrounds = 2\n'
        "local_steps = 1\nlr = 0.1\nlrr = 0.2\n"
    )
    (d / "no_lr.toml").write_text(
        'problem = "quadratic"\nalgorithm = "fedavg"\nrounds = 2\nlocal_steps = 1\n'
    )
    (d / "nan_lr.toml").write_text(
        'problem = "quadratic"\nalgorithm = "fedavg"\nrounds = 2\nlocal_steps = 1\nlr = nan\n'
    )
    (d / "huge.toml").write_text(
        'problem = "quadratic"\nalgorithm = "fedavg"\nrounds = -2\n'
        "local_steps = 1\nlr = 0.1\nseeds = 100000000000000000000\n"
    )
    (d / "bad_file.toml").write_text(
        'problem_file = "junk.bin"\nalgorithm = "fedavg"\nrounds = 2\nlocal_steps = 1\nlr = 0.1\n'
    )
    (d / "not.toml").write_text("this is [not toml\n")
    gd = (
        'algorithm = "fedavg"\nclients = 4\nlr = "1/L_f"\nquantity = "mean_square_rate"\n'
        'condition = "eta <= 1/L_f"\n[class]\ndim = 3\nL = 10.0\nmu = 1.0\n'
    )
    (d / "bound.toml").write_text('bound = "(1 - eta*mu_f)**3"\n' + gd)
    (d / "bound_shape.toml").write_text('bound = "1 - c*eta*mu_f"\nconstant = "c"\n' + gd)
    (d / "bound_bad.toml").write_text('bound = "1 - eta*lambda_min"\n' + gd)
    (d / "folder").mkdir()
    (d / "fresh").mkdir()
    return d


def _reset(work: Path) -> None:
    """Restore the pre-existing output and empty the folder for new outputs."""
    path = work / EXISTING
    path.write_bytes(EXISTING_BYTES)
    os.utime(path, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    shutil.rmtree(work / "fresh", ignore_errors=True)
    (work / "fresh").mkdir()
    for leftover in work.glob(".*.tmp"):
        leftover.unlink()


# --- values ----------------------------------------------------------------------------------
#: Placeholders in a drawn command line: ``@name`` is ``work / name``.
GOOD_INPUT = {
    "vector": ["@p4.npy", "@p4.txt"],
    "matrix": ["@W.npy", "@Wsparse.npz"],
    "problem": ["@problem.npz"],
    "edges": ["@edges.txt"],
    "trace": ["@trace.csv"],
}
BAD_INPUT = [
    "@missing.npy",
    "@folder",
    "@text.txt",
    "@empty.txt",
    "@junk.bin",
    "@nan.txt",
    "@vec.npy",
    "@arch.npz",
    "@complex.npy",
    "@strings.npy",
    "@singular.npz",
    "",
    "@fresh/../folder/",
]
GOOD_OUTPUT = ["@fresh/out.json", "-", "/dev/null", "@" + EXISTING]
BAD_OUTPUT = ["@folder", "@folder/", "@missing_dir/out.json", "@text.txt/out.json", ""]
GOOD_PLOT = ["@fresh/plot.png", "@fresh/plot.pdf"]
BAD_PLOT = ["@folder", "@missing_dir/plot.png", "@fresh/plot.xyz", "@fresh/plot", "@" + EXISTING]
#: Huge counts: refused by the memory estimate where they size an array (rounds, seeds,
#: clients); never drawn for local steps, whose cost is time, not memory.
HUGE_INT = ["10" * 8, "9" * 25]
BAD_SMALL_INT = ["-1", "0", "-7", "2.5", "nan", "inf", "abc", "", "1e3", "0x10"]
BAD_INT = BAD_SMALL_INT + HUGE_INT
BAD_FLOAT = ["nan", "inf", "-inf", "-1", "0", "1e308", "1e-320", "abc", "", "1e999", "-0"]
UNKNOWN_FLAGS = ["--bogus", "--rounds-", "-Z", "--json=", "--", "--help-me"]


def value(good: list[str], bad: list[str]) -> st.SearchStrategy[str]:
    """A good value nine times in ten, else a bad one (a command line names several values,
    so about half of them are valid and run)."""
    return st.integers(0, 9).flatmap(
        lambda k: st.sampled_from(bad) if k == 9 else st.sampled_from(good)
    )


def ints(lo: int, hi: int) -> st.SearchStrategy[str]:
    return value([str(i) for i in range(lo, hi + 1)], BAD_INT)


def floats(*good: float) -> st.SearchStrategy[str]:
    return value([repr(g) for g in good], BAD_FLOAT)


@st.composite
def options(draw, base: list[str], extra: dict[str, Any], *, outputs: dict[str, Any]) -> list[str]:
    """``base`` plus some of the ``extra`` options (flag -> value strategy, or None for a
    switch), and maybe an output option and an unknown flag."""
    argv = list(base)
    for flag in draw(st.lists(st.sampled_from(sorted(extra)), max_size=4, unique=True)):
        argv.append(flag)
        if extra[flag] is not None:
            argv.append(draw(extra[flag]))
    for flag in draw(st.lists(st.sampled_from(sorted(outputs)), max_size=2, unique=True)):
        argv += [flag, draw(outputs[flag])]
    if draw(st.integers(0, 9)) == 9:  # (hypothesis favours small integers: 9 is the rare one)
        argv.insert(draw(st.integers(1, len(argv))), draw(st.sampled_from(UNKNOWN_FLAGS)))
    return argv


JSON_OUT = value(GOOD_OUTPUT, BAD_OUTPUT)
PLOT_OUT = value(GOOD_PLOT, BAD_PLOT)
VECTOR_IN = value(GOOD_INPUT["vector"], BAD_INPUT)


# --- one strategy per subcommand -------------------------------------------------------------
TOPOLOGIES = [
    "ring",
    "complete",
    "torus",
    "hypercube",
    "star",
    "path",
    "exponential",
    "erdos-renyi",
    "random-geometric",
    "identity",
    "one-peer-exponential",
]


@st.composite
def spectral_argv(draw) -> list[str]:
    source = draw(st.sampled_from(["topology", "topology", "matrix", "edges"]))
    if source == "topology":
        topo = draw(value(TOPOLOGIES, ["bogus", "RING", "", "complete-random"]))
        base = ["spectral", topo, "-N", draw(ints(4, 16))]
    elif source == "matrix":
        base = ["spectral", "--matrix", draw(value(GOOD_INPUT["matrix"], BAD_INPUT))]
    else:
        base = ["spectral", "--edges", draw(value(GOOD_INPUT["edges"], BAD_INPUT))]
    extra = {
        "--weights": value(
            ["uniform", "metropolis", "max-degree", "laplacian", "random"], ["bogus", ""]
        ),
        "--lazy": None,
        "--alpha": floats(0.1, 0.2),
        "--seed": ints(0, 3),
        "--p": floats(0.5, 0.9),
        "--radius": floats(0.5, 0.9),
        "--rows": ints(2, 4),
        "--cols": ints(2, 4),
        "--clusters": ints(1, 3),
        "--method": value(["auto", "dense", "sparse"], ["bogus"]),
        "--solver": value(["auto", "lu", "amg"], ["bogus"]),
        "--atol": floats(1e-10, 1e-8),
        "--gamma": floats(0.5, 0.9),
        "--setting": value(
            ["N=8,M=2", "N=16,M=4,C=2,m=1,K=2"],
            ["N=abc", "N=0", "N=-1,M=2", "N=8,M=20", "X=1", "N", "N=1e400", "N=8,M=2,C=3", ""],
        ),
    }
    return draw(options(base, extra, outputs={"--json": JSON_OUT, "--plot": PLOT_OUT}))


MODELS = ["full", "uniform", "weighted", "bernoulli", "markov", "cyclic", "cluster", "trace"]


#: What each model needs on a valid command line (N = 4 matches the probability files).
NEEDS = {
    "uniform": ["-M"],
    "weighted": ["-M", "--probabilities"],
    "bernoulli": ["-M"],
    "markov": ["-M"],
    "cyclic": ["-M"],
    "cluster": ["-M", "--clusters"],
    "trace": ["--trace"],
}


@st.composite
def participation_argv(draw) -> list[str]:
    model = draw(value(MODELS, ["bogus", ""]))
    extra = {
        "-M": ints(1, 2),
        "--probabilities": VECTOR_IN,
        "--empty-policy": value(["redraw", "skip"], ["bogus"]),
        "--replace": None,
        "--a": value(["0.3", "0.5", "@p4.npy"], BAD_FLOAT + BAD_INPUT),
        "--b": value(["0.3", "0.5", "@p4.txt"], BAD_FLOAT + BAD_INPUT),
        "--start": value(["stationary", "on", "off"], ["bogus"]),
        "--clusters": value(["1", "2"], BAD_INT),
        "--trace": value(GOOD_INPUT["trace"], BAD_INPUT),
        "--rounds": ints(1, 8),
        "--seed": ints(0, 3),
        "-N": value(["4"], BAD_INT),
    }
    base = ["participation", model, "-N", draw(value(["4"], BAD_INT))]
    for flag in NEEDS.get(model, []):
        base += [flag, draw(extra[flag])]
    plot = value(GOOD_PLOT, BAD_PLOT) if draw(st.integers(0, 4)) == 4 else st.sampled_from(BAD_PLOT)
    return draw(options(base, extra, outputs={"--json": JSON_OUT, "--plot": plot}))


ALGORITHMS = sorted(available())


@st.composite
def simulate_argv(draw) -> list[str]:
    if draw(st.booleans()):
        problem = ["--problem", draw(value(["quadratic", "least-squares"], ["bogus", ""]))]
    else:
        problem = ["--problem-file", draw(value(GOOD_INPUT["problem"], BAD_INPUT))]
    base = [
        "simulate",
        *problem,
        "--algorithm",
        draw(value(ALGORITHMS + ["FOCUS", "HA-Fed"], ["bogus", ""])),
        "-R",
        draw(ints(0, 4)),
        "-K",
        draw(value(["1", "2"], BAD_SMALL_INT)),
        "--lr",
        draw(floats(0.01, 0.05)),
    ]
    extra = {
        "--participation": value(
            ["full", "uniform", "weighted", "bernoulli", "markov", "cluster"], ["bogus"]
        ),
        "-M": ints(1, 4),
        "--probabilities": VECTOR_IN,
        "--aggregation": value(["mean", "weighted", "unbiased"], ["bogus"]),
        "--global-lr": floats(0.5, 1.0),
        "--beta1": floats(0.9, 0.0),
        "--beta2": floats(
            0.99,
        ),
        "--eps": floats(
            1e-8,
        ),
        "--eps-placement": value(["inside", "outside"], ["bogus"]),
        "--prox-mu": floats(0.1, 0.0),
        "--topology": value(["ring", "complete"], ["bogus", ""]),
        "--clusters": ints(1, 4),
        "--option": value(["cutoff=5", "graph_seed=1"], ["cutoff=abc", "bogus=1", "=", "x"]),
        "--seeds": ints(1, 3),
        "--seed": ints(0, 3),
        "--float32": None,
        "--fail-on-divergence": None,
        "--backend": value(["numpy"], ["cupy", "bogus"]),
        "-R": ints(0, 4),
        "--lr": floats(0.01, 5.0),
    }
    return draw(options(base, extra, outputs={"--json": JSON_OUT}))


@st.composite
def rate_argv(draw) -> list[str]:
    """The small problem file mostly (N = 4, d = 3: a rate in milliseconds), a built-in problem
    (N = 16) one time in eight; every algorithm, so the non-affine ones are refused."""
    if draw(st.integers(0, 7)) == 7:
        problem = ["--problem", draw(value(["quadratic"], ["bogus", ""]))]
    else:
        problem = ["--problem-file", draw(value(GOOD_INPUT["problem"], BAD_INPUT))]
    base = [
        "rate",
        *problem,
        "--algorithm",
        draw(value(ALGORITHMS + ["FOCUS", "SCAFFOLD"], ["bogus", ""])),
        "-K",
        draw(value(["1", "2"], BAD_SMALL_INT)),
        "--lr",
        draw(floats(0.01, 0.05)),
    ]
    extra = {
        "--participation": value(
            ["full", "uniform", "weighted", "bernoulli", "markov"], ["bogus", "cluster"]
        ),
        "-M": ints(1, 4),
        "--probabilities": VECTOR_IN,
        "--aggregation": value(["mean", "weighted", "unbiased"], ["bogus"]),
        "--empty": value(["redraw", "skip"], ["bogus"]),
        "--global-lr": floats(0.5, 1.0),
        "--prox-mu": floats(0.1, 0.0),
        "--noise": floats(0.0, 0.1),
        "--tol": floats(1e-10, 1e-6),
        "--largest-stable-lr": None,
        "--lr": floats(0.01, 50.0),
    }
    return draw(options(base, extra, outputs={"--json": JSON_OUT}))


@st.composite
def study_argv(draw) -> list[str]:
    which = draw(value(["local-steps", "rho"], ["bogus", ""]))
    base = [
        "study",
        which,
        "-N",
        draw(ints(4, 4)),
        "--clusters",
        "2",
        "--dim",
        "2",
        "--seeds",
        draw(ints(2, 2)),
        "--algorithms",
        draw(value(["fedamsgrad", "afga"], ["bogus", "", ","])),
    ]
    if which == "rho":
        base += [
            "--K",
            draw(value(["1", "2"], BAD_SMALL_INT)),
            "--R",
            draw(ints(2, 3)),
            "--M",
            draw(ints(1, 2)),
            "--topologies",
            draw(value(["ring,complete"], ["bogus", ""])),
        ]
    else:
        base += [
            "--K",
            draw(value(["1,2"], ["1,-2", "a,b", "", "0"])),
            "--R",
            draw(value(["3"], BAD_INT)),
            "--M",
            draw(value(["2"], BAD_INT)),
            "--topologies",
            draw(value(["ring"], ["bogus", ""])),
        ]
    extra = {
        "--problem": value(["pl", "quadratic"], ["bogus"]),
        "--sigma": floats(1.0, 0.5),
        "--sigma-g": floats(
            1.0,
        ),
        "--c-global": floats(
            0.05,
        ),
        "--c-local": floats(
            0.5,
        ),
        "--seed": ints(0, 3),
        "--graph-seed": ints(0, 3),
        "--metric": value(["avg", "min"], ["bogus"]),
        "--dim": ints(1, 3),
    }
    plot = st.sampled_from(BAD_PLOT)  # a drawn study costs seconds: only refused plots
    return draw(options(base, extra, outputs={"--json": JSON_OUT, "--plot": plot}))


@st.composite
def nn_argv(draw) -> list[str]:
    """Only argument checks: every command line carries one bad value that must be refused
    before any data is generated or any network trained."""
    bad = draw(
        st.sampled_from(
            [
                ["--algorithms", "bogus"],
                ["--rounds", "abc"],
                ["--clients", "2.5"],
                ["--activation", "sigmoid"],
                ["--lr", "AFGA"],
                ["--lr", "AFGA=abc"],
                ["--global-lr", "bogus=1"],
                ["--data", "@missing.npz"],
                ["--data", "@folder"],
                ["--data", "@junk.bin"],
                ["--data", "@vec.npy"],
                ["--data", "@text.txt"],
                ["--backend", "bogus"],
                ["--hidden"],
                ["--iid", "--alpha", "0.5"],
                ["--bogus"],
            ]
        )
    )
    extra = {"--seeds": ints(1, 2), "--rounds": ints(1, 2), "--seed": ints(0, 3)}
    argv = draw(options(["nn", *bad], extra, outputs={"--json": JSON_OUT}))
    return argv


@st.composite
def figures_argv(draw) -> list[str]:
    """Only argument checks: an unknown name, --list, or a refused output folder."""
    kind = draw(st.sampled_from(["list", "unknown", "out"]))
    if kind == "list":
        return ["figures", "--list", *draw(st.lists(st.sampled_from(["--bogus", "x"]), max_size=1))]
    if kind == "unknown":
        return ["figures", draw(st.sampled_from(["bogus", "", "participation,bogus"]))]
    out = draw(st.sampled_from(["@" + EXISTING, "@text.txt/sub", "@junk.bin", ""]))
    return ["figures", "participation", "--out", out]


@st.composite
def verify_argv(draw) -> list[str]:
    """Only argument checks: --list, unknown claim ids, bad seeds, refused outputs."""
    # (an empty --only is the whole catalog: minutes, so never drawn)
    only = draw(st.sampled_from(["BOGUS", "C2/bogus", "G1,BOGUS", ",", "C2/", "g1,bogus"]))
    argv = ["verify", "--only", only]
    if draw(st.booleans()):
        argv.append("--list")
    extra = {
        "--seed": value(["0", "1"], BAD_INT),
        "--full": None,
        "--figures-dir": st.sampled_from(["@fresh/figs", "@" + EXISTING, "@text.txt/x"]),
    }
    return draw(options(argv, extra, outputs={"--json": JSON_OUT, "--html": JSON_OUT}))


@st.composite
def sweep_argv(draw) -> list[str]:
    """Only refusals before any Dask worker starts: a bad spec file or a bad store."""
    spec = draw(
        st.sampled_from(
            [
                "@unknown_key.toml",
                "@no_lr.toml",
                "@nan_lr.toml",
                "@huge.toml",
                "@bad_file.toml",
                "@not.toml",
                *BAD_INPUT,
            ]
        )
    )
    store = draw(st.sampled_from(["@fresh/store", "@" + EXISTING, "@text.txt/sub", ""]))
    extra = {"--workers": value(["1"], BAD_INT), "--no-progress": None}
    return draw(options(["sweep", spec, "--store", store], extra, outputs={"--json": JSON_OUT}))


@st.composite
def bound_argv(draw) -> list[str]:
    """Small GD bounds (N = 4, d = 3: a search of 8 draws in milliseconds), bad specs, and the
    instance flags; counterexample files go to a fresh folder."""
    spec = draw(
        value(
            ["@bound.toml", "@bound_shape.toml"],
            ["@bound_bad.toml", "@not.toml", "@text.txt", "@junk.bin", "@folder", "bogus", ""],
        )
    )
    base = [
        "bound",
        spec,
        "--search",
        draw(value(["0", "3", "8"], BAD_SMALL_INT)),
        "--out-dir",
        draw(value(["@fresh"], ["@text.txt/sub", "@" + EXISTING])),
        "--seeds",
        draw(value(["0", "2"], ["-1"])),
    ]
    extra = {
        "--seed": ints(0, 3),
        "--problem-file": value(GOOD_INPUT["problem"], BAD_INPUT),
    }
    return draw(options(base, extra, outputs={"--json": JSON_OUT}))


STRATEGIES = {
    "sweep": sweep_argv(),
    "verify": verify_argv(),
    "spectral": spectral_argv(),
    "figures": figures_argv(),
    "simulate": simulate_argv(),
    "study": study_argv(),
    "participation": participation_argv(),
    "nn": nn_argv(),
    "rate": rate_argv(),
    "bound": bound_argv(),
}


# --- the contract ----------------------------------------------------------------------------
@dataclass
class Outcome:
    argv: list[str]
    status: int | None
    stdout: str
    stderr: str
    crash: str | None  # the last line of a traceback that escaped main

    def problems(self, work: Path, before: tuple[bytes, int]) -> list[str]:
        """Everything that breaks the contract (empty when the command behaved)."""
        out = []
        if self.crash:
            out.append(f"traceback: {self.crash}")
        elif self.status not in (0, 2, 3):
            out.append(f"exit status {self.status}")
        elif self.status == 3 and "--fail-on-divergence" not in self.argv:
            out.append("exit status 3 without --fail-on-divergence")
        lines = self.stderr.strip().splitlines()
        if "Traceback" in self.stderr:
            out.append("a traceback on stderr")
        if self.status == 2 and not self.crash:
            if not lines or not lines[-1].startswith("fedtheory: error: "):
                out.append(f"exit 2 without an error line: {self.stderr[-300:]!r}")
            if len(lines) > MAX_ERROR_LINES:
                out.append(f"{len(lines)} lines on stderr: {self.stderr[-300:]!r}")
        if self.argv[0] == "verify" and self.status == 0 and "--list" not in self.argv:
            if any("bogus" in i.lower() or i.endswith("/") for i in _only_ids(self.argv)):
                out.append("an unknown claim id was accepted (exit 0)")
        if self.status != 0 or self.crash:
            path = work / EXISTING
            if (path.read_bytes(), path.stat().st_mtime_ns) != before:
                out.append(f"{EXISTING} was changed by a failing command")
        leftovers = [p.name for p in work.glob(".*.tmp")]
        if leftovers:
            out.append(f"temporary files left: {leftovers}")
        return out


def run_cli(argv: list[str], work: Path) -> tuple[Outcome, list[str]]:
    """Run ``fedtheory argv`` in-process with ``@name`` replaced by ``work / name``."""
    _reset(work)
    path = work / EXISTING
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    real = [str(work / a[1:]) if a.startswith("@") else a for a in argv]
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    err = io.StringIO()
    status, crash = None, None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(real)
        except SystemExit as exc:  # --help
            status = exc.code if isinstance(exc.code, int) else 0
        except BaseException:  # a traceback is what the fuzzer looks for
            crash = traceback.format_exc().strip().splitlines()[-1]
    out.flush()
    outcome = Outcome(
        argv, status, out.buffer.getvalue().decode(errors="replace"), err.getvalue(), crash
    )
    return outcome, outcome.problems(work, before)


# --- known failures of the command line (the lead empties this table) ------------------------
def _only_ids(argv: list[str]) -> list[str]:
    return argv[argv.index("--only") + 1].split(",") if "--only" in argv[:-1] else []


# --- the tests -------------------------------------------------------------------------------
def test_every_subcommand_is_fuzzed():
    """A new subcommand needs a strategy here, and every strategy names a subcommand."""
    assert set(SUBCOMMANDS) == set(STRATEGIES), set(SUBCOMMANDS) ^ set(STRATEGIES)


#: Command lines run per subcommand in this session (reported by the fuzz test's assertion).
RUNS: dict[str, int] = {}


def _fuzz(name: str):
    @settings(
        max_examples=EXAMPLES[name],
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(argv=STRATEGIES[name])
    def check(work, argv):
        RUNS[name] = RUNS.get(name, 0) + 1
        outcome, problems = run_cli(argv, work)
        if problems:
            raise AssertionError(f"fedtheory {' '.join(argv)}: {'; '.join(problems)}")

    return check


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_cli_fuzz(work, name):
    RUNS[name] = 0
    _fuzz(name)(work)
    # hypothesis stops early only when it has drawn every distinct command line (figures)
    assert RUNS[name] >= min(EXAMPLES[name], 10), f"only {RUNS[name]} command lines ran"
