"""Claim N1: FedAvg, FedAMSGrad, AFGA and CAFGA training a torch-free MLP on MNIST-1D.

docs/claims.md, Neural networks: with a torch-free MLP on a heterogeneous classification task
(Dirichlet alpha = 0.6, 50 clients, 10% participation; 000 Section 6, Setting 2), the ordering of
FedAvg, FedAMSGrad, AFGA and CAFGA over several seeds, with spread. :func:`run_n1` trains each
with :func:`fedtheory.experiments.nn_training.train` and returns per-algorithm test accuracy (mean and
standard deviation over seeds) per evaluated round and at the end.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fedtheory.algorithms.base import seed_sequences
from fedtheory.algorithms.registry import display_name, info
from fedtheory.backend import get_backend, resolve_dtype, to_numpy
from fedtheory.errors import AssumptionError
from fedtheory.experiments.nn_training import TrainResult, train
from fedtheory.io import pyplot, renamed, save_figure
from fedtheory.problems.nn.conv import Conv1DNet
from fedtheory.problems.nn.data import (
    federated_from_arrays,
    federated_mnist1d,
    load_dataset,
    mnist1d,
)
from fedtheory.problems.nn.problem import MLPProblem

__all__ = [
    "NN_ALGORITHMS",
    "NN_SETTINGS",
    "N1_ALGORITHMS",
    "N1_PLAN",
    "N1_ROUNDS",
    "N1_TUNING_SEED",
    "N1_TUNING_SEEDS",
    "N1Result",
    "final_accuracy",
    "n1_participation",
    "nn_tuning",
    "plot_n1",
    "run_n1",
    "save_n1_figure",
    "static_options",
    "tuned_hyper",
    "tuning_decisive",
    "tuning_status",
]

#: The N1 algorithms, by registry name (reports use their display names).
N1_ALGORITHMS: tuple[str, ...] = ("fedavg", "fedamsgrad", "afga", "cafga")

#: Root seed and seed count of the hyper-parameter tuning (``benchmarks/tune_n1.py``). The
#: evaluation (claims N1-N4, the figure ``nn_n1``, the README) runs at root seed 0: another
#: root, so the tuning never sees an evaluation draw (data partition, initial network,
#: participation, minibatches); and the tuning scores on a *validation* split held out of the
#: training data (``evaluate_on="validation"``), never on the test split the claims report.
N1_TUNING_SEED: int = 271828
N1_TUNING_SEEDS: int = 2

#: The evaluation's sequential plan (claim N1): (seeds per block, budget) per tier, at the base
#: seed (0 by default). The figure ``nn_n1`` draws the quick tier's seeds in the same blocks, so
#: its runs are bit for bit the claim's (a seed's bits depend on its block's size).
N1_PLAN: dict[str, tuple[int, int]] = {"quick": (3, 6), "full": (4, 24)}
N1_ROUNDS: int = 100
#: The share of the training split held out as the validation split of the tuning.
VALIDATION_FRACTION: float = 0.2

#: The algorithms :func:`run_n1` trains: N1's four and the baselines of 000 Tables 1-3 (FedAdam,
#: SCAFFOLD, FedProx, FedDyn) and HA-Fed (004 Fig. 1).
NN_ALGORITHMS: tuple[str, ...] = (
    *N1_ALGORITHMS,
    "fedadam",
    "scaffold",
    "fedprox",
    "feddyn",
    "hafed",
)

#: The two federated settings of the MNIST-1D claims: 000 Setting 2 (Tables 1-5, Fig. 2: 50
#: clients, 10% per round, 5 clusters of 10, K = 10 here, ring gossip) and 004's (Sec. 6: 32
#: clients in 4 clusters of 8, p = 0.25 (2 per cluster), tau = 48, ring gossip).
NN_SETTINGS: dict[str, dict[str, Any]] = {
    "000-S2": {
        "n_clients": 50,
        "participation": 0.1,
        "clusters": 5,
        "local_steps": 10,
        "rounds": 100,
        "topology": "ring",
    },
    "004": {
        "n_clients": 32,
        "participation": 0.25,
        "clusters": 4,
        "local_steps": 48,
        "rounds": 60,
        "topology": "ring",
    },
}


def final_accuracy(res: TrainResult) -> np.ndarray:
    """Per seed, the mean accuracy over the last 5 evaluated rounds (000 Table 5's caption:
    "the average of the last 5 global rounds to represent final accuracy"); on the test split,
    or on the validation split when the run was made with ``evaluate_on="validation"``."""
    return res.accuracy[:, -5:].mean(axis=1)


#: Where ``benchmarks/tune_n1.py`` writes what it chose: per setting and algorithm the tuned
#: hyper-parameters, every grid point's validation accuracy, and whether the choice is interior.
TUNING_FILE = Path(__file__).with_name("nn_tuning.json")


@functools.cache
def nn_tuning() -> dict[str, Any]:
    """The tuning record (:data:`TUNING_FILE`): ``{"meta": ..., "settings": {setting:
    {algorithm: {"best": {...}, "status": {...}, "score": ..., "tried": ..., "scores": ...}}}}``."""
    return json.loads(TUNING_FILE.read_text())


def static_options(name: str, setting: str = "000-S2") -> dict[str, Any]:
    """The options of ``name`` that are the setting, not tuned: the gossip graph (ring) and the
    clusters of the clustered algorithms (000 Section 6; 004 Section 6)."""
    s = NN_SETTINGS[setting]
    alg = info(name)
    out: dict[str, Any] = {}
    if alg.gossip:
        out["topology"] = s["topology"]
    if alg.clustered:
        out["clusters"] = s["clusters"]
    return out


def tuned_hyper(name: str, setting: str = "000-S2") -> dict[str, Any]:
    """The tuned hyper-parameters of ``name`` in ``setting`` with its static options (raises
    :class:`~fedtheory.errors.AssumptionError` when the record has none)."""
    rec = nn_tuning()["settings"].get(setting, {})
    if name not in rec:
        raise AssumptionError(
            f"no tuned hyper-parameters for {display_name(name)} in setting {setting}: run "
            f"benchmarks/tune_n1.py (tuned there: {', '.join(rec) or 'none'})"
        )
    return {**rec[name]["best"], **static_options(name, setting)}


def tuning_status(name: str, setting: str = "000-S2") -> dict[str, str]:
    """Per tuned hyper-parameter of ``name``: "interior", "at the hard limit ..." or "grid's
    edge: extension budget spent" (:func:`fedtheory.experiments.tuning.tune_grid`)."""
    return dict(nn_tuning()["settings"][setting][name]["status"])


def tuning_decisive(name: str, setting: str = "000-S2") -> bool:
    """Whether every tuned value of ``name`` is interior or at a stated hard limit."""
    return all(
        v == "interior" or v.startswith("at the hard limit")
        for v in tuning_status(name, setting).values()
    )


def validation_split(arrays: dict[str, Any], seed: int) -> dict[str, Any]:
    """The training rows of ``arrays`` split into training and validation: a random
    :data:`VALIDATION_FRACTION` of them (``default_rng(seed)``) becomes ``x_test``/``y_test``,
    the given test split is dropped (the tuning never sees it)."""
    x, y = np.asarray(arrays["x"]), np.asarray(arrays["y"])
    perm = np.random.default_rng(seed).permutation(y.shape[0])
    k = max(1, int(round(VALIDATION_FRACTION * y.shape[0])))
    val, train_rows = perm[:k], np.sort(perm[k:])
    return {"x": x[train_rows], "y": y[train_rows], "x_test": x[val], "y_test": y[val]}


def n1_participation(name: str, n_clients: int, M: int, clusters: int | None) -> tuple[str, dict]:
    """Who takes part in N1: M of N uniformly without replacement; for a clustered algorithm
    (CAFGA) the ``cluster`` model with M / C clients per cluster (000 Algorithm 2 samples m
    clients in every cluster; Setting 2: 5 clusters of 10, m = 1).

    Raises
    ------
    AssumptionError
        When C does not divide N or M.
    """
    if not info(name).clustered or not clusters or clusters == 1:
        return "uniform", {"clients_per_round": M}
    C = int(clusters)
    if n_clients % C or M % C:
        raise AssumptionError(
            f"{display_name(name)} samples the same number of clients in each of {C} clusters: "
            f"{C} must divide N = {n_clients} and the clients per round M = {M}"
        )
    return "cluster", {"clients_per_round": M // C, "n_clusters": C}


@dataclass
class N1Result:
    """The N1 comparison.

    Attributes
    ----------
    results : dict
        Display name -> :class:`TrainResult`.
    setting : dict
        Data, model, participation and training constants.
    """

    results: dict[str, TrainResult]
    setting: dict

    def summary(self) -> dict[str, dict[str, float]]:
        """Final test accuracy per algorithm: mean, std (ddof = 1 when S > 1) over seeds,
        min, max, and the number of seeds."""
        out = {}
        for name, res in self.results.items():
            a = res.final_accuracy
            out[name] = {
                "mean": float(np.mean(a)),
                "std": float(np.std(a, ddof=1)) if a.size > 1 else 0.0,
                "min": float(np.min(a)),
                "max": float(np.max(a)),
                "seeds": int(a.size),
            }
        return out

    def ordering(self) -> list[str]:
        """Algorithms from the highest to the lowest mean final accuracy."""
        s = self.summary()
        return sorted(s, key=lambda k: -s[k]["mean"])

    as_dict = renamed("to_dict")

    def to_dict(self) -> dict[str, Any]:
        return {
            "claim": "N1",
            "setting": self.setting,
            "summary": self.summary(),
            "ordering": self.ordering(),
            "curves": {
                name: {
                    "rounds": r.rounds,
                    "accuracy_mean": r.accuracy.mean(axis=0),
                    "accuracy_std": r.accuracy.std(axis=0, ddof=1)
                    if r.accuracy.shape[0] > 1
                    else np.zeros(r.rounds.shape),
                    "accuracy": r.accuracy,
                    "train_loss_mean": r.train_loss.mean(axis=0),
                    "config": r.config,
                    "wall_time": r.wall_time,
                }
                for name, r in self.results.items()
            },
        }


def _n1_data(
    data: Any, n_clients: int, alpha: float | None, seed: int, num_samples: int, evaluate_on: str
) -> tuple[Any, str]:
    """Step 1 of :func:`run_n1`: the federated data (MNIST-1D or the user's), with the
    validation split held out when the run evaluates on it; and where the data came from."""
    if data is None:
        data_source = "MNIST-1D (mnist1d.make_dataset, generated locally)"
        if evaluate_on == "test":
            data = federated_mnist1d(n_clients, alpha=alpha, seed=seed, num_samples=num_samples)
        else:
            data = federated_from_arrays(
                validation_split(mnist1d(num_samples=num_samples), seed),
                n_clients,
                alpha=alpha,
                seed=seed,
            )
    else:
        data_source = str(data) if not isinstance(data, dict) else "user arrays"
        arrays = data if isinstance(data, dict) else load_dataset(data)
        if evaluate_on == "validation":
            arrays = validation_split(arrays, seed)
        data = federated_from_arrays(arrays, n_clients, alpha=alpha, seed=seed)
    return data, data_source


def _initial_networks(problem: Any, seed: int, ids: list[int]) -> np.ndarray:
    """Step 2: one initial network per seed, shared by all algorithms, from stream 3 of the
    seed's own SeedSequence child (streams 0-2 are the runner's)."""
    rngs = [
        np.random.default_rng(np.random.SeedSequence(sq.entropy, spawn_key=sq.spawn_key + (3,)))
        for sq in seed_sequences(seed, len(ids), ids)
    ]
    return np.stack([to_numpy(problem.init(rng)) for rng in rngs])


def _train_in_blocks(
    problem: Any,
    name: str,
    part: str,
    pkw: dict,
    chunks: list[slice],
    ids: list[int],
    x0: np.ndarray,
    **kw: Any,
) -> TrainResult:
    """Step 3: one algorithm trained on the seeds in consecutive blocks (a seed's bits depend on
    its block's size), the blocks' results joined."""
    parts = [
        train(
            problem,
            name,
            part,
            participation_kw=pkw,
            seeds=len(ids[ch]),
            seed_ids=ids[ch],
            x0=x0[ch],
            **kw,
        )
        for ch in chunks
    ]
    res = parts[0]
    if len(parts) > 1:
        res = TrainResult(
            res.algorithm,
            res.rounds,
            np.concatenate([p.accuracy for p in parts]),
            np.concatenate([p.train_loss for p in parts]),
            np.concatenate([p.x_final for p in parts]),
            sum(p.wall_time for p in parts),
            res.config,
        )
    return res


def run_n1(
    algorithms: list[str] | None = None,
    *,
    n_clients: int = 50,
    participation: float = 0.1,
    alpha: float | None = 0.6,
    rounds: int = 100,
    local_steps: int = 10,
    batch_size: int = 50,
    hidden: tuple[int, ...] = (64, 64),
    activation: str = "relu",
    conv: tuple[int, ...] | None = None,
    kernel: int = 5,
    stride: int = 2,
    seeds: int = 3,
    seed: int = 0,
    seed_ids: Sequence[int] | None = None,
    seed_block: int | None = None,
    num_samples: int = 5000,
    data: Any = None,
    eval_every: int = 5,
    hyper: dict[str, dict[str, Any]] | None = None,
    setting: str = "000-S2",
    evaluate_on: str = "test",
    backend: str | None = None,
    dtype: Any = None,
    progress: bool = False,
) -> N1Result:
    """Claims N1-N4: federated training of an MLP on MNIST-1D (FedAvg, FedAMSGrad, AFGA, CAFGA
    by default; any of :data:`NN_ALGORITHMS`).

    Parameters
    ----------
    algorithms : list of str, optional
        Names of :data:`NN_ALGORITHMS` (registry or display names, any case; default: N1's
        four).
    n_clients, participation, alpha :
        N = 50, M = participation * N = 5 clients per round (uniform without replacement),
        Dirichlet(0.6) labels (000 Section 6, Setting 2); ``alpha=None``: i.i.d. split.
    rounds, local_steps, batch_size :
        R, K and the per-client minibatch (000 uses batch 50).
    hidden, activation : MLP shape.
    conv : tuple of int, optional
        Channels of 1-D convolutions (kernel ``kernel``, stride ``stride``) before the dense
        layers ``hidden``: a :class:`~fedtheory.problems.nn.conv.Conv1DNet` instead of the MLP.
    seeds, seed :
        Seeds run batched; the data partition comes from the root ``seed``, seed s's initial
        network from its own SeedSequence child.
    seed_ids : sequence of int, optional
        Which seeds of the root to run (default ``0..seeds-1``; then ``seeds`` is ignored).
        Every algorithm runs the same ones: comparisons are paired.
    seed_block : int, optional
        Run the seeds in consecutive blocks of this many (default: all at once). A seed's bits
        depend on the size of its block (BLAS), so runs that must agree seed by seed (claim N1
        and the figure ``nn_n1``) use the same block size.
    num_samples : int
        MNIST-1D size before its 80/20 train/test split.
    data : str or Path or dict, optional
        A user's data set instead of MNIST-1D: an ``.npz`` path for
        :func:`~fedtheory.problems.nn.data.load_dataset` (validated: shapes, finite features, labels in
        range) or a dict of arrays ``x``, ``y`` (and ``x_test``, ``y_test``); partitioned the
        same way (:func:`~fedtheory.problems.nn.data.federated_from_arrays`).
    eval_every : int
    hyper : dict, optional
        Per-algorithm overrides of the tuned hyper-parameters (e.g.
        ``{"afga": {"global_lr": 0.03}}``).
    setting : {"000-S2", "004"}
        Whose tuned hyper-parameters and static options (ring gossip, clusters) are the
        defaults (:data:`NN_SETTINGS`, :func:`tuned_hyper`); the sizes are the keywords above.
    evaluate_on : {"test", "validation"}
        Report accuracy on the test split, or on a validation split of
        :data:`VALIDATION_FRACTION` of the training rows held out (seeded by ``seed``) before
        the partition: the tuning's, so that no hyper-parameter is chosen on the test split.
    backend, dtype : array backend and float dtype.

    Returns
    -------
    N1Result
        ``summary()`` gives per-algorithm final accuracy mean/std over seeds; ``ordering()``.
    """
    names = list(N1_ALGORITHMS) if algorithms is None else [info(a).name for a in algorithms]
    unknown = [n for n in names if n not in NN_ALGORITHMS]
    if unknown:
        raise AssumptionError(
            f"unknown N1 algorithm(s) {unknown}: choose from {', '.join(NN_ALGORITHMS)}"
        )
    if evaluate_on not in ("test", "validation"):
        raise AssumptionError(f"evaluate_on must be 'test' or 'validation', got {evaluate_on!r}")
    if setting not in NN_SETTINGS:
        raise AssumptionError(f"unknown setting {setting!r}: choose from {', '.join(NN_SETTINGS)}")
    M = int(round(participation * n_clients))
    if not 1 <= M <= n_clients:
        raise AssumptionError(
            f"participation {participation} of {n_clients} clients gives {M} clients per round"
        )
    xp = get_backend(backend)
    dt = resolve_dtype(dtype)
    data, data_source = _n1_data(data, n_clients, alpha, seed, num_samples, evaluate_on)
    net = None
    if conv:
        net = Conv1DNet(
            data.n_features,
            data.n_classes,
            channels=tuple(conv),
            kernel=kernel,
            stride=stride,
            hidden=tuple(hidden),
            activation=activation,
        )
    problem = MLPProblem(
        data,
        hidden=tuple(hidden),
        activation=activation,
        batch_size=batch_size,
        xp=xp,
        dtype=dt,
        model=net,
    )
    # Seeds differ in initialization, participation and minibatches; the data partition is
    # the one of ``seed``.
    ids = list(range(seeds)) if seed_ids is None else [int(i) for i in seed_ids]
    if not ids:
        raise AssumptionError("run_n1 needs at least one seed")
    x0 = _initial_networks(problem, seed, ids)
    block = len(ids) if seed_block is None else max(1, int(seed_block))
    chunks = [slice(i, min(i + block, len(ids))) for i in range(0, len(ids), block)]
    hyper = {info(k).name: v for k, v in (hyper or {}).items()}
    results = {}
    for name in names:
        cfg = {**tuned_hyper(name, setting), **hyper.get(name, {})}
        cfg["local_steps"] = local_steps
        part, pkw = n1_participation(name, n_clients, M, cfg.get("clusters"))
        res = _train_in_blocks(
            problem,
            name,
            part,
            pkw,
            chunks,
            ids,
            x0,
            rounds=rounds,
            seed=seed,
            eval_every=eval_every,
            progress=progress,
            **cfg,
        )
        res.config["participation_kw"] = pkw
        results[display_name(name)] = res
    setting = {
        "data": data_source,
        "num_samples": num_samples,
        "n_clients": n_clients,
        "clients_per_round": M,
        "partition": "iid" if alpha is None else f"Dirichlet({alpha})",
        "model": f"{type(problem.model).__name__}{problem.model.sizes} {activation}",
        "params": problem.dim,
        "batch_size": batch_size,
        "local_steps": local_steps,
        "rounds": rounds,
        "seeds": len(ids),
        "seed": seed,
        "seed_ids": ids,
        "seed_block": block,
        "evaluated_on": evaluate_on,
        "hyper_setting": setting,
        "backend": xp.__name__,
        "dtype": str(dt),
        "label_histogram_min_classes": int((data.label_histogram() > 0).sum(axis=1).min()),
    }
    return N1Result(results=results, setting=setting)


def plot_n1(result: Any, ax: Any = None):
    """Plot every algorithm's test-accuracy curve of an :class:`~fedtheory.experiments.n1.N1Result`.

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = pyplot()
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.0, 4.0), constrained_layout=True)
    else:
        fig = ax.figure
    for name, res in result.results.items():
        mean = res.accuracy.mean(axis=0)
        std = res.accuracy.std(axis=0, ddof=1) if res.accuracy.shape[0] > 1 else np.zeros_like(mean)
        (line,) = ax.plot(res.rounds, 100 * mean, label=name)
        ax.fill_between(
            res.rounds, 100 * (mean - std), 100 * (mean + std), color=line.get_color(), alpha=0.2
        )
    s = result.setting
    ax.set_xlabel("round")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(
        f"N1: {s['model']} on {s['data'].split(' (')[0]}, {s['n_clients']} clients, {s['clients_per_round']}/round, "
        f"{s['partition']}, {s['seeds']} seeds",
        fontsize=8,
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def save_n1_figure(result: Any, out: str | Path = "figures", name: str = "nn_n1") -> list[Path]:
    """Write ``out/name.png`` and ``out/name.pdf``; returns the paths."""
    plt = pyplot()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    fig = plot_n1(result)
    paths = [out / f"{name}.png", out / f"{name}.pdf"]
    for p in paths:
        save_figure(fig, p, dpi=150)
    plt.close(fig)
    return paths
