"""Benchmark: the batched simulator against per-client Python loops of the same algorithms.

Settings (each against a per-client loop of the same algorithm written below, one seed):

- ``focus``: 003 Figure 4 (:func:`fedtheory.problems.figure4_problem`: N = 16, 500 rows each,
  d = 50), FOCUS, uniform participation 4 of 16, K = 3, eta = 1.5e-4, 500 rounds; the loop is the
  authors' notebook style (client objects, A_i^T (A_i x - b_i), only the sampled clients compute,
  the error recorded every round as the notebook plots it);
- ``fedavg``: the same setting with FedAvg (plain averaging of the sampled clients' models);
- ``afga``: AFGA (000 Algorithm 1) on least squares with N = 50, d = 16, M = 5 (re-sampled at every
  local step), K = 24, gossip on a ring after every step, FedAMSGrad server, 50 rounds;
- ``hafed``: HA-Fed (004 Algorithm 1, partial participation) on least squares with N = 32 in 4
  clusters of 8, m = 2 sampled per cluster, every client computing and gossiping on a ring inside
  its cluster, K = 48, FedAMSGrad server, 50 rounds.

Rows per setting: the loop; the toolkit in-library (:func:`fedtheory.simulation.simulate`, the
default call: the error every round, one process) at 1, 100 and 1000 seeds, and at the largest
count with ``workers=`` the cores this process may use (seed blocks in forked processes, the same
bits); the whole command (``fedtheory simulate ... --json FILE`` in a subprocess: start-up,
simulation and output; its default ``--workers`` is the number of cores) at the same seed counts,
at the largest with ``--workers 1``, and with ``--out FILE.npz``. Every row is timed ``--reps``
times, the rows interleaved, the best wall time kept, with the CPU time of that repeat
(``process_time`` plus the user + system time of the finished child processes: a command, or the
forked workers; CPU time exceeds wall time where BLAS runs two threads or workers run side by
side).

Reported: seed-runs per second, the ratio to the loop's, and achieved GFLOP/s of useful work
against the dense float64 GEMM (2048^2, NumPy's BLAS, default threads) measured in the same run.
Useful FLOPs are the algorithm's own arithmetic in Hessian form, the same count for the loop and
the toolkit: 2 d^2 per gradient of a client that computes (participants only), plus 2 nnz(W) d
per gossip step; vector updates are left out. The toolkit performs fewer (FedAvg's K steps are
one affine map per client) or more (padding, dense gossip) FLOPs than that; the count is the
work the algorithm needs, so GFLOP/s compares implementations, not kernels.

Correctness gate: every loop's final model must equal the toolkit's seed-0 model (1 seed,
in-library, and seed 0 of the largest whole command, read back from its JSON and its npz) to
1e-10 relative to ||x*||, and the loop's per-round error curve the toolkit's to 1e-10 (largest
difference over the largest error); otherwise the benchmark fails (exit 1).

Targets (a verdict line each, met / NOT MET with the numbers): in-library at 1000
seeds <= 1.2 ms per seed-run in one process for ``focus``, ``fedavg`` and ``scaffold`` alike
(the default call: the error every round); the whole command at 1000 seeds (default
workers) >= 40x the loop's seed-runs per second (``focus``); one seed >= 3x the loop
(``focus``, reported). The adaptive/gossip settings are reported.

Run: ``.venv/bin/python benchmarks/bench_simulator.py [--settings focus fedavg afga hafed]
[--seeds 1 100 1000] [--reps 3] [--backend numpy|cupy] [--json out.json] [--quick]``
(``--quick``: 1 repeat, 1/10/20 seeds, a tenth of the rounds; a smoke run, not a measurement).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fedtheory.algorithms.gossip import cluster_mixing, cluster_weights, gossip_matrix
from fedtheory.backend import get_backend
from fedtheory.participation import make_participation
from fedtheory.problems import LeastSquaresProblem, figure4_problem, random_least_squares
from fedtheory.simulation import simulate
from fedtheory.simulation.runner import plan_run
from fedtheory.simulation.spec import RunSpec
from fedtheory.validation import available_cores

TOL = 1e-10
TARGET_COMMAND, TARGET_MS, TARGET_ONE = 40.0, 1.2, 3.0
#: The settings whose in-library time per seed-run carries the TARGET_MS verdict.
MS_TARGETED = ("focus", "fedavg", "scaffold")


# --- the settings ------------------------------------------------------------------------------
@dataclass
class Setting:
    name: str
    problem: Any
    algorithm: str
    participation: str
    m: int
    lr: float
    K: int
    rounds: int
    extra: dict = field(default_factory=dict)  # more simulate keywords (and CLI flags)
    gossip_nnz: int = 0  # nonzeros of the gossip matrix (useful FLOPs)
    problem_args: list = field(default_factory=list)  # how the CLI names the problem

    def model(self) -> Any:
        N = self.problem.n_clients
        if self.participation == "cluster":
            return make_participation("cluster", N, self.m, n_clusters=self.extra["clusters"])
        return make_participation(self.participation, N, self.m)

    def kwargs(self, rounds: int) -> dict:
        return dict(rounds=rounds, lr=self.lr, local_steps=self.K, **self.extra)

    def cli_args(self, rounds: int) -> list[str]:
        args = [*self.problem_args, "--algorithm", self.algorithm]
        args += ["--participation", self.participation, "--clients-per-round", str(self.m)]
        args += ["--rounds", str(rounds), "--local-steps", str(self.K), "--lr", repr(self.lr)]
        for k, v in self.extra.items():
            args += [f"--{k.replace('_', '-')}", str(v)]
        return args

    def useful_flops(self, rounds: int) -> float:
        """Useful FLOPs of one seed-run (see the module docstring)."""
        N, d = self.problem.n_clients, self.problem.dim
        computing = {"afga": self.m, "hafed": N}.get(self.algorithm, self.m)
        per_step = computing * 2 * d * d + 2 * self.gossip_nnz * d
        return rounds * self.K * per_step


def make_settings(workdir: Path) -> dict[str, Setting]:
    f4 = figure4_problem()
    out = {
        name: Setting(
            name, f4, name, "uniform", 4, 1.5e-4, 3, 500, problem_args=["--problem", "figure4"]
        )
        for name in ("focus", "fedavg", "scaffold")
    }
    for name, N, extra in (
        ("afga", 50, {"topology": "ring", "global_lr": 0.05}),
        ("hafed", 32, {"clusters": 4, "global_lr": 0.05}),
    ):
        p = random_least_squares(N, 32, 16, heterogeneity=1.0, seed=14)
        path = workdir / f"{name}.npz"
        np.savez(path, A=p.A, b=p.b, lam=0.0)
        prob = LeastSquaresProblem(p.A, p.b, 0.0)
        lr = 0.5 / prob.L_max
        part, m = ("uniform", 5) if name == "afga" else ("cluster", 2)
        K = 24 if name == "afga" else 48
        out[name] = Setting(
            name,
            prob,
            name,
            part,
            m,
            lr,
            K,
            50,
            extra=extra,
            gossip_nnz=3 * N,
            problem_args=["--problem-file", str(path)],
        )
    return out


# --- per-client loops (one seed, the toolkit's draws of seed 0) --------------------------------
class Client:
    """One client as in the FOCUS authors' notebook: its rows and its own state vectors."""

    def __init__(self, A: np.ndarray, b: np.ndarray) -> None:
        self.A, self.b = A, b[:, None]
        self.g_prev = np.zeros((A.shape[1], 1))

    def grad(self, x: np.ndarray) -> np.ndarray:
        return self.A.T.dot(self.A.dot(x) - self.b)


def _error(x: np.ndarray, xs: np.ndarray) -> float:
    return float(np.linalg.norm(x[:, 0] - xs) / np.linalg.norm(xs))


def loop_focus(st: Setting, draws: dict, rounds: int) -> tuple[np.ndarray, list]:
    P, xs = st.problem, st.problem.x_star
    clients = [Client(A, b) for A, b in zip(P.A, P.b, strict=True)]
    x = np.zeros((P.dim, 1))
    y = np.zeros_like(x)
    err = [_error(x, xs)]
    for r in range(rounds):
        for i in np.flatnonzero(draws["masks"][r]):
            c = clients[i]
            xi, yi = x.copy(), 0
            for k in range(st.K):
                if k > 0:
                    xi = xi - st.lr * yi
                g = c.grad(xi)
                yi = yi + g - c.g_prev
                c.g_prev = g
            y = y + yi
        x = x - st.lr * y
        err.append(_error(x, xs))
    return x[:, 0], err


def loop_fedavg(st: Setting, draws: dict, rounds: int) -> tuple[np.ndarray, list]:
    P, xs = st.problem, st.problem.x_star
    clients = [Client(A, b) for A, b in zip(P.A, P.b, strict=True)]
    x = np.zeros((P.dim, 1))
    err = [_error(x, xs)]
    for r in range(rounds):
        sampled = np.flatnonzero(draws["masks"][r])
        delta = np.zeros_like(x)
        for i in sampled:
            xi = x.copy()
            for _ in range(st.K):
                xi = xi - st.lr * clients[i].grad(xi)
            delta = delta + (xi - x)
        x = x + delta / len(sampled)
        err.append(_error(x, xs))
    return x[:, 0], err


def loop_scaffold(st: Setting, draws: dict, rounds: int) -> tuple[np.ndarray, list]:
    """SCAFFOLD option II (Karimireddy et al. 2020, Algorithm 1), server step 1, mean weights."""
    P, xs = st.problem, st.problem.x_star
    clients = [Client(A, b) for A, b in zip(P.A, P.b, strict=True)]
    x = np.zeros((P.dim, 1))
    c = np.zeros_like(x)
    c_i = [np.zeros_like(x) for _ in clients]
    err = [_error(x, xs)]
    for r in range(rounds):
        sampled = np.flatnonzero(draws["masks"][r])
        dx, dc = np.zeros_like(x), np.zeros_like(x)
        for i in sampled:
            y = x.copy()
            for _ in range(st.K):
                y = y - st.lr * (clients[i].grad(y) - c_i[i] + c)
            new = c_i[i] - c + (x - y) / (st.K * st.lr)
            dx, dc = dx + (y - x), dc + (new - c_i[i])
            c_i[i] = new
        x = x + dx / len(sampled)
        c = c + dc / len(clients)
        err.append(_error(x, xs))
    return x[:, 0], err


def _neighbours(W: np.ndarray) -> list[list[tuple[int, float]]]:
    return [[(int(j), float(W[i, j])) for j in np.flatnonzero(W[i])] for i in range(len(W))]


def _gossip_loop(st: Setting, draws: dict, rounds: int, W: np.ndarray, who: Any, weights: Any):
    """The shared per-client loop of AFGA and HA-Fed: every client starts from x, K steps of
    (computing clients step, every client averages its neighbours), Delta over the collecting
    set, FedAMSGrad server step (eps inside the root)."""
    P, xs = st.problem, st.problem.x_star
    clients = [Client(A, b) for A, b in zip(P.A, P.b, strict=True)]
    nbrs = _neighbours(W)
    eta, b1, b2, eps = st.extra["global_lr"], 0.9, 0.99, 1e-8
    x = np.zeros((P.dim, 1))
    m, v, v_hat = np.zeros_like(x), np.zeros_like(x), np.zeros_like(x)
    err = [_error(x, xs)]
    for r in range(rounds):
        models = [x.copy() for _ in clients]
        for t in range(st.K):
            for i in who(r, t):
                models[i] = models[i] - st.lr * clients[i].grad(models[i])
            models = [sum(w * models[j] for j, w in nb) for nb in nbrs]
        w = weights(r)
        delta = sum(w[i] * (models[i] - x) for i in np.flatnonzero(w))
        m = b1 * m + (1 - b1) * delta
        v = b2 * v + (1 - b2) * delta * delta
        v_hat = np.maximum(v_hat, v)
        x = x + eta * m / np.sqrt(v_hat + eps)
        err.append(_error(x, xs))
    return x[:, 0], err


def loop_afga(st: Setting, draws: dict, rounds: int) -> tuple[np.ndarray, list]:
    W = gossip_matrix("ring", st.problem.n_clients)
    masks, steps = draws["masks"], draws["step_masks"]
    who = lambda r, t: np.flatnonzero(steps[r, t])  # noqa: E731
    weights = lambda r: masks[r] / masks[r].sum()  # noqa: E731
    return _gossip_loop(st, draws, rounds, W, who, weights)


def loop_hafed(st: Setting, draws: dict, rounds: int) -> tuple[np.ndarray, list]:
    N, C = st.problem.n_clients, st.extra["clusters"]
    Wk = cluster_mixing("ring", C, N // C)
    W = np.zeros((N, N))
    for k in range(C):
        W[k * (N // C) : (k + 1) * (N // C), k * (N // C) : (k + 1) * (N // C)] = Wk[k]
    everyone = np.arange(N)
    weights = lambda r: cluster_weights(draws["masks"][r][None], C)[0]  # noqa: E731
    return _gossip_loop(st, draws, rounds, W, lambda r, t: everyone, weights)


LOOPS = {
    "focus": loop_focus,
    "fedavg": loop_fedavg,
    "scaffold": loop_scaffold,
    "afga": loop_afga,
    "hafed": loop_hafed,
}


# --- measuring -----------------------------------------------------------------------------
def _sync(xp: Any) -> None:
    if xp.__name__ == "cupy":
        xp.cuda.Device().synchronize()


def gemm_peak(xp: Any, n: int = 2048, reps: int = 5) -> float:
    """Measured dense float64 GEMM FLOP/s, n x n (best of ``reps``)."""
    a = xp.asarray(np.random.default_rng(0).standard_normal((n, n)))
    best = np.inf
    for _ in range(reps + 1):
        _sync(xp)
        t = time.perf_counter()
        a @ a
        _sync(xp)
        best = min(best, time.perf_counter() - t)
    return 2.0 * n**3 / best


def fedtheory_command() -> list[str]:
    exe = Path(sys.executable).with_name("fedtheory")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("fedtheory")
    if found:
        return [found]
    return [sys.executable, "-c", "import sys; from fedtheory.cli import main; sys.exit(main())"]


@dataclass
class Row:
    setting: str
    kind: str  # loop | library | command --json | command --out
    seeds: int
    run: Any  # () -> x_final of seed 0 (and the error curve for the loop / library)
    wall: float = np.inf
    cpu: float = np.inf
    out: Any = None


def timed(fn: Any) -> tuple[float, float, Any]:
    """Wall time, CPU time (this process and its finished children: a command, or the forked
    workers of ``workers=``) and the result of ``fn()``."""
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    w = time.perf_counter() - w0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    c = time.process_time() - c0 + (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    return w, c, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--settings", nargs="+", default=list(LOOPS), choices=list(LOOPS))
    ap.add_argument("--seeds", nargs="+", type=int, default=[1, 100, 1000])
    ap.add_argument("--reps", type=int, default=3, help="repeats per row (interleaved)")
    ap.add_argument("--backend", default="numpy", choices=("numpy", "cupy"))
    ap.add_argument("--json", default=None, help="also write the rows as JSON")
    ap.add_argument("--quick", action="store_true", help="smoke run: 1 repeat, few seeds/rounds")
    args = ap.parse_args(argv)
    if args.quick:
        args.reps, args.seeds = 1, [1, 10, 20]
    xp = get_backend(args.backend)
    work = Path(tempfile.mkdtemp(prefix="bench_simulator_"))
    settings = {k: v for k, v in make_settings(work).items() if k in args.settings}
    cmd = fedtheory_command()
    env = {**os.environ, "FEDTHEORY_NO_PROGRESS": "1"}
    top = max(args.seeds)
    cores = available_cores()
    load0 = os.getloadavg()
    peak = gemm_peak(xp)

    rows: list[Row] = []
    rounds: dict[str, int] = {}
    for name, st in settings.items():
        R = max(2, st.rounds // 10) if args.quick else st.rounds
        rounds[name] = R
        kw = st.kwargs(R)
        spec = RunSpec(rounds=kw.pop("rounds"), participation=st.model(), seeds=1)
        plan = plan_run(st.problem, st.algorithm, spec, **kw)
        draws = {"masks": plan.masks[0] > 0, "step_masks": None}
        if plan.step_masks is not None:
            draws["step_masks"] = plan.step_masks[0]
        rows.append(Row(name, "loop", 1, lambda st=st, d=draws, R=R: LOOPS[st.name](st, d, R)))

        def library(st: Setting = st, S: int = 1, R: int = R, workers: int = 1) -> Any:
            res = simulate(
                st.problem,
                st.algorithm,
                st.model(),
                seeds=S,
                backend=args.backend,
                workers=workers,
                **st.kwargs(R),
            )
            return res.x_final[0], res.error[0]

        def command(
            st: Setting = st, S: int = 1, R: int = R, npz: bool = False, workers: int = 0
        ) -> Any:
            path = work / f"{st.name}_{S}_{workers}.{'npz' if npz else 'json'}"
            flag = ["--out", str(path)] if npz else ["--json", str(path)]
            backend = ["--backend", args.backend] if args.backend != "numpy" else []
            backend += ["--workers", str(workers)] if workers else []
            argv = [*cmd, "simulate", *st.cli_args(R), "--seeds", str(S), *backend, *flag]
            subprocess.run(argv, check=True, env=env, stdout=subprocess.DEVNULL)
            return path

        for S in args.seeds:
            rows.append(Row(name, "library", S, lambda f=library, S=S: f(S=S)))
        if cores > 1:
            rows.append(
                Row(
                    name,
                    f"library, {cores} workers",
                    top,
                    lambda f=library: f(S=top, workers=cores),
                )
            )
        for S in args.seeds:
            rows.append(Row(name, "command --json", S, lambda f=command, S=S: f(S=S)))
        if cores > 1:
            rows.append(
                Row(name, "command --json --workers 1", top, lambda f=command: f(S=top, workers=1))
            )
        rows.append(Row(name, "command --out", top, lambda f=command: f(S=top, npz=True)))

    for st in settings.values():  # warm-up (imports, caches, BLAS), not timed
        simulate(st.problem, st.algorithm, st.model(), seeds=4, **st.kwargs(3))
    for _ in range(args.reps):
        for row in rows:
            w, c, out = timed(row.run)
            if w < row.wall:
                row.wall, row.cpu = w, c
            row.out = out
    load1 = os.getloadavg()

    # correctness gate: the loop, the library and the commands agree on seed 0
    failed = False
    for name, st in settings.items():
        xs = np.asarray(st.problem.x_star)
        mine = [r for r in rows if r.setting == name]
        x_loop, e_loop = mine[0].out
        e_loop = np.asarray(e_loop)
        for r in mine[1:]:
            if r.kind.startswith("library"):
                x, e = r.out
                e_gap = np.abs(np.asarray(e) - e_loop).max() / np.abs(e_loop).max()
            elif r.seeds == top and r.kind != "command --json --workers 1":  # read back
                if r.kind == "command --out":
                    with np.load(r.out) as z:
                        x = z["x_final"][0]
                else:
                    x = np.asarray(json.loads(r.out.read_text())["x_final"][0])
                e_gap = 0.0
            else:
                continue
            gap = np.abs(x - x_loop).max() / np.linalg.norm(xs)
            if not (gap <= TOL and e_gap <= TOL):
                print(
                    f"MISMATCH {name}: {r.kind} at {r.seeds} seeds differs from the loop by "
                    f"{gap:.2e} (model) / {e_gap:.2e} (error curve); tolerance {TOL:g}",
                    file=sys.stderr,
                )
                failed = True

    table = []
    for name, st in settings.items():
        mine = [r for r in rows if r.setting == name]
        loop = mine[0]
        flops = st.useful_flops(rounds[name])
        for r in mine:
            rate = r.seeds / r.wall
            table.append(
                dict(
                    setting=name,
                    implementation=r.kind,
                    seeds=r.seeds,
                    wall_s=r.wall,
                    cpu_s=r.cpu,
                    ms_per_seed_run=1e3 * r.wall / r.seeds,
                    seed_runs_per_s=rate,
                    vs_loop=rate / (1.0 / loop.wall),
                    vs_loop_cpu=(r.seeds / r.cpu) / (1.0 / loop.cpu),
                    gflops=flops * rate / 1e9,
                    peak_pct=100 * flops * rate / peak,
                )
            )

    proc = platform.processor() or platform.machine()
    print(
        f"\nbench_simulator: backend {args.backend}; {os.cpu_count()} CPUs ({proc}), "
        f"NumPy {np.__version__}; best of {args.reps} interleaved repeats per row"
    )
    print(
        f"load average (1/5/15 min): {load0[0]:.2f}/{load0[1]:.2f}/{load0[2]:.2f} at start, "
        f"{load1[0]:.2f}/{load1[1]:.2f}/{load1[2]:.2f} at end"
    )
    print(f"dense float64 GEMM (2048^2, default threads): {peak / 1e9:.1f} GFLOP/s")
    for name, st in settings.items():
        N, d = st.problem.n_clients, st.problem.dim
        print(
            f"{name}: {st.algorithm} on N={N}, d={d}, {st.participation} participation "
            f"(M={st.m}), K={st.K}, lr={st.lr:.3g}, {rounds[name]} rounds"
            + (f", {st.extra}" if st.extra else "")
        )
    print(
        "\n| setting | implementation | seeds | wall s | CPU s | ms / seed-run | seed-runs/s "
        "| vs loop | vs loop, CPU s | GFLOP/s (useful) | % of GEMM peak |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for t in table:
        print(
            f"| {t['setting']} | {t['implementation']} | {t['seeds']} | {t['wall_s']:.3f} "
            f"| {t['cpu_s']:.3f} | {t['ms_per_seed_run']:.3f} | {t['seed_runs_per_s']:.1f} "
            f"| {t['vs_loop']:.1f}x | {t['vs_loop_cpu']:.1f}x | {t['gflops']:.2f} "
            f"| {t['peak_pct']:.1f}% |"
        )

    verdicts = []

    def pick(setting: str, kind: str, seeds: int) -> dict | None:
        return next(
            (
                t
                for t in table
                if (t["setting"], t["implementation"], t["seeds"]) == (setting, kind, seeds)
            ),
            None,
        )

    if "focus" in settings:
        cmd_row = pick("focus", "command --json", top)
        lib_row = pick("focus", "library", top)
        par_row = pick("focus", f"library, {cores} workers", top)
        serial_cmd = pick("focus", "command --json --workers 1", top)
        one = pick("focus", "library", 1)
        if cmd_row:
            ok = cmd_row["vs_loop"] >= TARGET_COMMAND
            verdicts.append(
                f"whole command, {top} seeds, >= {TARGET_COMMAND:.0f}x the loop: "
                f"{'met' if ok else 'NOT MET'} ({cmd_row['vs_loop']:.1f}x in wall time, "
                f"{cmd_row['vs_loop_cpu']:.1f}x in CPU time; {cmd_row['wall_s']:.2f} s, "
                f"{cores} worker process(es)"
                + (f"; {serial_cmd['vs_loop']:.1f}x with --workers 1)" if serial_cmd else ")")
            )
        if par_row:
            verdicts.append(
                f"focus in-library, {top} seeds, {cores} worker processes (reported): "
                f"{par_row['ms_per_seed_run']:.2f} ms per seed-run"
            )
        if one:
            verdicts.append(
                f"focus, one seed (reported; target >= {TARGET_ONE:g}x): "
                f"{one['vs_loop']:.1f}x the loop in wall time, {one['vs_loop_cpu']:.1f}x in CPU "
                "time"
            )
    for name in (n for n in MS_TARGETED if n in settings):
        row = pick(name, "library", top)
        if row:
            ok = row["ms_per_seed_run"] <= TARGET_MS
            verdicts.append(
                f"{name} in-library, {top} seeds, one process, <= {TARGET_MS:g} ms per "
                f"seed-run: {'met' if ok else 'NOT MET'} ({row['ms_per_seed_run']:.2f} ms wall, "
                f"{1e3 * row['cpu_s'] / top:.2f} ms CPU; {row['gflops']:.1f} GFLOP/s = "
                f"{row['peak_pct']:.0f}% of the measured GEMM peak)"
            )
    for name in settings:
        if name == "focus":
            continue
        lib_row, cmd_row = pick(name, "library", top), pick(name, "command --json", top)
        if lib_row and cmd_row:
            verdicts.append(
                f"{name} (reported): {lib_row['vs_loop']:.1f}x the loop in-library, "
                f"{cmd_row['vs_loop']:.1f}x as a whole command, at {top} seeds"
            )
    print("\nverdicts (the targets above):")
    for v in verdicts:
        print(f"- {v}")
    print("correctness: " + ("FAILED (see above)" if failed else f"every row within {TOL:g}"))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(
                {
                    "gemm_peak_flops": peak,
                    "load_average": [load0, load1],
                    "rows": table,
                    "verdicts": verdicts,
                    "correct": not failed,
                },
                fh,
                indent=2,
            )
    shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
