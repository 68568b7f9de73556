"""One local SGD step of the MLP for all 50 clients: batched vs a per-client Python loop.

Setting: MNIST-1D (generated locally), 50 clients, Dirichlet(0.6) partition (000 Section 6,
Setting 2), MLPs 40-64-64-10 and 40-16-10 (ReLU), minibatch 50 per client. One local step is "draw every
client's minibatch, compute every client's gradient, x_i <- x_i - eta_l g_i".

- batched: one :meth:`MLPProblem.grads` call on the stacked (S, 50, P) models (a few batched
  matmuls), then one array update;
- loop: the same step done client by client in Python (50 x S single-model forward/backward
  calls, the way per-client reference notebooks do it), on the same minibatch indices.

Both paths are checked to give the same result before timing. With a GPU and CuPy, the batched
step also runs on CuPy (timed with device synchronization); otherwise a 'no GPU' line is printed.

Usage: ``python benchmarks/bench_nn.py [--seeds 1 3] [--hidden 64,64 16] [--repeat 20]
[--json OUT]``
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from fedtheory.backend import gpu_available
from fedtheory.io import emit_json
from fedtheory.problems.nn.data import federated_mnist1d
from fedtheory.problems.nn.problem import MLPProblem

N_CLIENTS, BATCH, LR = 50, 50, 0.05


def _time(fn, repeat: int, sync=lambda: None) -> float:
    fn()
    sync()  # warm-up (and CuPy kernel compilation)
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t0)
    return min(ts)  # the least disturbed repetition (timeit's advice on a shared machine)


def bench(seeds: int, repeat: int, prob: MLPProblem, prob_gpu=None) -> dict:
    X = prob.init(np.random.default_rng(0), (seeds, N_CLIENTS))
    idx = prob.sample_batch(np.random.default_rng(1), (seeds,))
    rows = np.arange(N_CLIENTS)[:, None]
    H, y = prob.data.x[rows, idx], prob.data.y[rows, idx]
    model = prob.model

    def batched():
        _, G = model.loss_grad(X, H, y, 1.0 / BATCH)
        return X - LR * G

    def loop():
        out = np.empty_like(X)
        for s in range(seeds):
            for i in range(N_CLIENTS):
                _, g = model.loss_grad(X[s, i], H[s, i], y[s, i], 1.0 / BATCH)
                out[s, i] = X[s, i] - LR * g
        return out

    np.testing.assert_allclose(batched(), loop(), rtol=1e-10, atol=1e-12)
    row = {"seeds": seeds, "clients": N_CLIENTS, "params": prob.dim, "batch": BATCH}
    row["numpy_batched_ms"] = 1e3 * _time(batched, repeat)
    row["numpy_loop_ms"] = 1e3 * _time(loop, max(3, repeat // 4))
    row["loop_over_batched"] = row["numpy_loop_ms"] / row["numpy_batched_ms"]
    if prob_gpu is not None:
        import cupy as cp  # noqa: PLC0415  (optional extra fedtheory[gpu])

        Xg, Hg, yg = cp.asarray(X), cp.asarray(H), cp.asarray(y)

        def gpu():
            _, G = model.loss_grad(Xg, Hg, yg, 1.0 / BATCH)
            return Xg - LR * G

        np.testing.assert_allclose(gpu().get(), batched(), rtol=1e-9, atol=1e-11)
        row["cupy_batched_ms"] = 1e3 * _time(gpu, repeat, cp.cuda.Device().synchronize)
        row["numpy_batched_over_cupy"] = row["numpy_batched_ms"] / row["cupy_batched_ms"]
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 3])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument(
        "--hidden",
        nargs="+",
        default=["64,64", "16"],
        help="hidden widths of each model, comma-separated (default: 64,64 and 16)",
    )
    ap.add_argument("--json", default=None, help="write the table as JSON to this path")
    args = ap.parse_args(argv)
    data = federated_mnist1d(N_CLIENTS, alpha=0.6, seed=0)
    gpu = gpu_available()
    if not gpu:
        print("no GPU: CuPy rows skipped (CuPy missing or no CUDA device)")
    rows = []
    for spec in args.hidden:
        hidden = tuple(int(h) for h in spec.split(","))
        prob = MLPProblem(data, hidden=hidden, batch_size=BATCH)
        prob_gpu = None
        if gpu:
            import cupy as cp  # noqa: PLC0415  (optional extra fedtheory[gpu])

            prob_gpu = MLPProblem(data, hidden=hidden, batch_size=BATCH, xp=cp)
        for s in args.seeds:
            row = bench(s, args.repeat, prob, prob_gpu)
            row["model"] = f"MLP{prob.model.sizes}"
            rows.append(row)
    print(
        f"one local step for all {N_CLIENTS} clients, minibatch {BATCH} per client, float64, "
        "best of the repeats"
    )
    hdr = (
        f"{'model':>22} {'seeds':>5} {'P':>6} {'batched ms':>11} {'loop ms':>9} "
        f"{'loop/batched':>12}"
    )
    if gpu:
        hdr += f" {'cupy ms':>8} {'numpy/cupy':>10}"
    print(hdr)
    for r in rows:
        line = (
            f"{r['model']:>22} {r['seeds']:>5} {r['params']:>6} {r['numpy_batched_ms']:>11.2f} "
            f"{r['numpy_loop_ms']:>9.2f} {r['loop_over_batched']:>12.1f}"
        )
        if gpu:
            line += f" {r['cupy_batched_ms']:>8.3f} {r['numpy_batched_over_cupy']:>10.1f}"
        print(line)
    if args.json:
        emit_json({"benchmark": "nn_local_step", "rows": rows}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
