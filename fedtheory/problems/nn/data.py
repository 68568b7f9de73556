"""Federated classification data without downloads: generators, label partitions, stacking.

- :func:`mnist1d` generates MNIST-1D with the ``mnist1d`` package's own generator
  (``mnist1d.data.make_dataset``; never its download helper ``get_dataset``), in memory.
- :func:`leaf_synthetic` is LEAF's Synthetic(alpha, beta) generator (Li et al. 2020, FedProx,
  Section 5.1; Caldas et al. 2018, LEAF), already split over devices.
- :func:`dirichlet_partition` / :func:`iid_partition` split a centralized data set over N
  clients; :func:`dirichlet_partition` is the Dirichlet(alpha) label partition used by 000
  Section 6 (alpha = 0.6, "similar to Wang et al. 2020a;b").
- :class:`FederatedData` stacks the clients' shards into arrays of one shape.

Equal-size stacking (the choice made here). Dirichlet shards have unequal sizes n_i. They are
stacked into ``X (N, n_max, F)``, ``y (N, n_max)`` padded with zeros after each client's own
n_i rows, plus ``counts (N,)``. Nothing is duplicated or dropped: a client's minibatch draws B
row indices uniformly from ``[0, n_i)`` (its own rows only, with replacement, the i.i.d. sampling
of the SGD oracle E_xi f_i(x; xi)), and a full-batch pass weights row b of client i by
``1{b < n_i} / n_i``, so f_i is exactly the mean loss over client i's data and padding rows carry
weight zero.

References
----------
.. [1] S. Greydanus, D. Kobak, "Scaling down deep learning with MNIST-1D", ICML 2024;
   package ``mnist1d`` (``make_dataset``, ``get_dataset_args``).
.. [2] T. Li et al., "Federated Optimization in Heterogeneous Networks", MLSys 2020,
   Section 5.1 (Synthetic(alpha, beta)); S. Caldas et al., "LEAF: A Benchmark for Federated
   Settings", 2018 (``data/synthetic``).
.. [3] H. Wang et al., "Federated Learning with Matched Averaging", ICLR 2020 (Dirichlet label
   partition with per-client cap and minimum size); T.-M. H. Hsu, H. Qi, M. Brown, "Measuring
   the Effects of Non-Identical Data Distribution", 2019.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fedtheory.errors import AssumptionError, MissingExtraError
from fedtheory.io import read_npz
from fedtheory.validation import check_int, check_positive, check_seed

__all__ = [
    "DatasetError",
    "FederatedData",
    "check_dataset",
    "dirichlet_partition",
    "federated_from_arrays",
    "federated_mnist1d",
    "federated_synthetic",
    "iid_partition",
    "leaf_synthetic",
    "load_dataset",
    "mnist1d",
]


class DatasetError(AssumptionError):
    """A data set has the wrong shapes, non-finite features or labels out of range."""


def check_dataset(
    X: Any, y: Any, *, n_features: int | None = None, n_classes: int | None = None, name="data"
) -> tuple[np.ndarray, np.ndarray]:
    """Validate a centralized data set ``X (n, F)``, ``y (n,)`` and return it as arrays.

    Raises
    ------
    DatasetError
        Wrong number of dimensions, mismatched lengths, an empty set, a wrong feature count,
        non-finite features, non-integer labels or labels outside ``[0, n_classes)``.
    """
    X = np.asarray(X)
    y = np.asarray(y)
    if X.ndim != 2:
        raise DatasetError(
            f"{name}: features must be a 2-D array (samples, features), got shape {X.shape}"
        )
    if y.ndim != 1:
        raise DatasetError(f"{name}: labels must be a 1-D array (samples,), got shape {y.shape}")
    if X.shape[0] != y.shape[0]:
        raise DatasetError(
            f"{name}: {X.shape[0]} feature rows but {y.shape[0]} labels (they must match)"
        )
    if X.shape[0] == 0:
        raise DatasetError(f"{name}: the data set is empty")
    if n_features is not None and X.shape[1] != n_features:
        raise DatasetError(f"{name}: expected {n_features} features per sample, got {X.shape[1]}")
    if not np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.complexfloating):
        raise DatasetError(f"{name}: features must be real numbers, got dtype {X.dtype}")
    bad = ~np.isfinite(X.astype(np.float64, copy=False))
    if bad.any():
        i, j = (int(k) for k in np.argwhere(bad)[0])
        raise DatasetError(f"{name}: feature [{i}, {j}] is not finite ({X[i, j]})")
    if np.issubdtype(y.dtype, np.floating):
        if not np.all(np.isfinite(y)) or np.any(y != np.round(y)):
            raise DatasetError(f"{name}: labels must be integers, got non-integer values")
    elif not np.issubdtype(y.dtype, np.integer):
        raise DatasetError(f"{name}: labels must be integers, got dtype {y.dtype}")
    y = y.astype(np.int64)
    if y.min() < 0 or (n_classes is not None and y.max() >= n_classes):
        k = int(np.flatnonzero((y < 0) | (y >= (n_classes or np.iinfo(np.int64).max)))[0])
        hi = "n_classes - 1" if n_classes is None else str(n_classes - 1)
        raise DatasetError(f"{name}: label y[{k}] = {y[k]} is outside [0, {hi}]")
    return X.astype(np.float64, copy=False), y


def load_dataset(
    path: str | Path, *, n_features: int | None = None, n_classes: int | None = None
) -> dict[str, np.ndarray]:
    """Load a user's ``.npz`` file with arrays ``x``, ``y`` and optionally ``x_test``, ``y_test``.

    The test split, when present, must have the training split's feature count. Labels must lie
    in ``[0, n_classes)`` (``n_classes`` defaults to ``max(y) + 1`` over both splits).

    Raises
    ------
    DatasetError
        Missing arrays, wrong shapes or labels out of range (see :func:`check_dataset`).
    FileNotFoundError
        No such file (``filename`` is ``path`` as given).
    FedTheoryError
        Not an ``.npz`` archive (a ``.npy`` file, text, junk, a damaged archive), naming it.
    """
    arrays = read_npz(path, what="an .npz archive with arrays x, y (and x_test, y_test)")
    missing = [k for k in ("x", "y") if k not in arrays]
    if missing:
        raise DatasetError(
            f"{path}: missing array(s) {', '.join(missing)} (expected x, y and optionally x_test, y_test)"
        )
    if ("x_test" in arrays) != ("y_test" in arrays):
        raise DatasetError(f"{path}: x_test and y_test must be given together")
    X, y = check_dataset(
        arrays["x"], arrays["y"], n_features=n_features, n_classes=n_classes, name=str(path)
    )
    out = {"x": X, "y": y}
    if "x_test" in arrays:
        Xt, yt = check_dataset(
            arrays["x_test"],
            arrays["y_test"],
            n_features=X.shape[1],
            n_classes=n_classes,
            name=f"{path} (test split)",
        )
        out.update(x_test=Xt, y_test=yt)
    return out


# ------------------------------------------------------------------------------------------
# Generators
# ------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4)
def _mnist1d_cached(num_samples: int, seed: int, train_split: float) -> tuple[np.ndarray, ...]:
    from mnist1d.data import get_dataset_args, make_dataset  # noqa: PLC0415  (extra [nn])

    args = get_dataset_args()
    args.num_samples = num_samples
    args.seed = seed
    args.train_split = train_split
    # make_dataset seeds the global NumPy and random generators; leave the caller's untouched.
    np_state, py_state = np.random.get_state(), random.getstate()  # noqa: NPY002
    try:
        d = make_dataset(args)
    finally:
        np.random.set_state(np_state)  # noqa: NPY002
        random.setstate(py_state)
    out = (d["x"], d["y"], d["x_test"], d["y_test"])
    for a in out:
        a.setflags(write=False)
    return out


def mnist1d(num_samples: int = 5000, seed: int = 42, train_split: float = 0.8) -> dict[str, Any]:
    """MNIST-1D generated locally by ``mnist1d.data.make_dataset`` (no download).

    Parameters
    ----------
    num_samples : int
        Total samples before the train/test split (the package default is 5000; fewer for
        tests). Rounded down to a multiple of 10 by the generator (equal classes).
    seed : int
        The generator's seed (the package default 42 reproduces the published data set).
    train_split : float
        Fraction of samples in the training split.

    Returns
    -------
    dict
        ``x (n, 40)``, ``y (n,)``, ``x_test``, ``y_test`` (read-only arrays; float64 features,
        int64 labels) and ``n_classes = 10``.

    Raises
    ------
    MissingExtraError
        When the optional ``mnist1d`` package is missing (``pip install 'fedtheory[nn]'``; also
        an ``ImportError``).
    """
    n = check_int("num_samples", num_samples, minimum=20)
    if not 0 < float(train_split) < 1:
        raise AssumptionError(f"train_split must be in (0, 1), got {train_split}")
    try:
        x, y, xt, yt = _mnist1d_cached(n, int(seed), float(train_split))
    except ModuleNotFoundError as exc:  # pragma: no cover - depends on the installation
        raise MissingExtraError(
            "MNIST-1D needs the optional extra 'nn' (mnist1d not installed): "
            "pip install 'fedtheory[nn]'",
            extra="nn",
        ) from exc
    return {
        "x": x,
        "y": y.astype(np.int64),
        "x_test": xt,
        "y_test": yt.astype(np.int64),
        "n_classes": 10,
    }


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def leaf_synthetic(
    alpha: float,
    beta: float,
    n_clients: int,
    rng: np.random.Generator,
    *,
    n_features: int = 60,
    n_classes: int = 10,
    samples: Any = None,
    iid: bool = False,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """LEAF Synthetic(alpha, beta): one multinomial-logistic data set per device.

    For device k (FedProx, Section 5.1 and LEAF's ``data/synthetic`` generator):
    ``u_k ~ N(0, alpha)``, ``B_k ~ N(0, beta)``; ``W_k ~ N(u_k, 1)`` (C x F) and
    ``b_k ~ N(u_k, 1)``; ``v_k ~ N(B_k, 1)`` (F); ``x ~ N(v_k, Sigma)`` with
    ``Sigma = diag(j^{-1.2})``; ``y = argmax softmax(W_k x + b_k)``. alpha controls how much the
    local models differ, beta how much the local inputs differ. ``iid=True`` draws one shared
    (W, b) from N(0, 1) and ``v_k`` from N(0, 1) for everyone (FedProx's Synthetic-IID).

    Parameters
    ----------
    alpha, beta : float >= 0
        Variances (the papers write N(0, alpha)); alpha = beta = 0 gives identical devices'
        distributions up to sampling.
    n_clients : int
    rng : numpy.random.Generator
    n_features, n_classes : int
        60 and 10 in FedProx.
    samples : int or sequence of int, optional
        Samples per device. Default: LEAF's power law ``lognormal(4, 2) + 50``, capped at 1000
        to keep the stacked arrays small.

    Returns
    -------
    list of (X_k (n_k, F), y_k (n_k,))
    """
    a = check_positive("alpha", alpha, allow_zero=True)
    b = check_positive("beta", beta, allow_zero=True)
    N = check_int("n_clients", n_clients, minimum=1)
    F = check_int("n_features", n_features, minimum=1)
    C = check_int("n_classes", n_classes, minimum=2)
    if samples is None:
        sizes = np.minimum(rng.lognormal(4, 2, N).astype(np.int64) + 50, 1000)
    else:
        sizes = np.broadcast_to(np.asarray(samples, dtype=np.int64), (N,))
        if np.any(sizes < 1):
            raise AssumptionError(f"every device needs at least one sample, got {sizes.min()}")
    sd = np.arange(1, F + 1, dtype=np.float64) ** (-1.2 / 2)
    if iid:
        W_all = rng.normal(0.0, 1.0, (C, F))
        b_all = rng.normal(0.0, 1.0, C)
    out = []
    for k in range(N):
        u = rng.normal(0.0, np.sqrt(a))
        Bk = rng.normal(0.0, np.sqrt(b))
        if iid:
            W, bias, v = W_all, b_all, rng.normal(0.0, 1.0, F)
        else:
            W = rng.normal(u, 1.0, (C, F))
            bias = rng.normal(u, 1.0, C)
            v = rng.normal(Bk, 1.0, F)
        X = v + sd * rng.standard_normal((int(sizes[k]), F))
        y = np.argmax(_softmax(X @ W.T + bias), axis=1).astype(np.int64)
        out.append((X, y))
    return out


# ------------------------------------------------------------------------------------------
# Partitions
# ------------------------------------------------------------------------------------------


def iid_partition(n_samples: int, n_clients: int, rng: np.random.Generator) -> list[np.ndarray]:
    """A uniformly random split of ``range(n_samples)`` into N shards whose sizes differ by at
    most one."""
    n = check_int("n_samples", n_samples, minimum=1)
    N = check_int("n_clients", n_clients, minimum=1)
    if n < N:
        raise AssumptionError(f"cannot give {N} clients at least one of {n} samples each")
    return [np.sort(s) for s in np.array_split(rng.permutation(n), N)]


def dirichlet_partition(
    labels: Any,
    n_clients: int,
    alpha: float,
    rng: np.random.Generator,
    *,
    min_size: int = 10,
    max_tries: int = 1000,
) -> list[np.ndarray]:
    """Dirichlet(alpha) label partition of a data set over N clients.

    For every class c, the indices of class c are shuffled and cut according to proportions
    ``p ~ Dirichlet(alpha 1_N)``; a client that already holds ``n / N`` samples or more gets
    proportion 0 for the classes that follow (the cap of Wang et al. 2020, FedMA code, which 000
    follows). The draw is repeated until every client has at least ``min_size`` samples. Small
    alpha: each client sees few classes; alpha -> infinity: i.i.d.

    Parameters
    ----------
    labels : int array (n,)
    n_clients : int
    alpha : float > 0
        Concentration (000 uses 0.6).
    rng : numpy.random.Generator
    min_size : int
        Minimum samples per client (10 in the reference code).
    max_tries : int

    Returns
    -------
    list of int arrays
        Sorted sample indices of each client; together a partition of ``range(n)``.

    Raises
    ------
    AssumptionError
        Bad alpha / counts, or no draw met ``min_size`` within ``max_tries``.
    """
    y = np.asarray(labels)
    if y.ndim != 1 or not np.issubdtype(y.dtype, np.integer):
        raise AssumptionError(f"labels must be a 1-D integer array, got {y.dtype} {y.shape}")
    N = check_int("n_clients", n_clients, minimum=1)
    a = check_positive("alpha", alpha)
    m = check_int("min_size", min_size, minimum=0)
    n = y.shape[0]
    if n < N * m:
        raise AssumptionError(f"{n} samples cannot give {N} clients at least {m} samples each")
    classes = np.unique(y)
    for _ in range(check_int("max_tries", max_tries, minimum=1)):
        shards: list[list[np.ndarray]] = [[] for _ in range(N)]
        sizes = np.zeros(N, dtype=np.int64)
        for c in classes:
            idx = rng.permutation(np.flatnonzero(y == c))
            p = rng.dirichlet(np.full(N, a))
            p = p * (sizes < n / N)
            total = p.sum()
            p = p / total if total > 0 else np.full(N, 1.0 / N)
            cuts = (np.cumsum(p) * idx.size).astype(np.int64)[:-1]
            for i, part in enumerate(np.split(idx, cuts)):
                shards[i].append(part)
                sizes[i] += part.size
        if sizes.min() >= m:
            return [np.sort(np.concatenate(s)) for s in shards]
    raise AssumptionError(
        f"no Dirichlet({a}) draw in {max_tries} tries gave every one of {N} clients at least "
        f"{m} of {n} samples: raise alpha, lower min_size or use fewer clients"
    )


# ------------------------------------------------------------------------------------------
# Stacked federated data
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FederatedData:
    """Clients' shards stacked to one shape, plus a held-out test set.

    Attributes
    ----------
    x : array (N, n_max, F)
        Client i's rows are ``x[i, :counts[i]]``; the rest is zero padding.
    y : int array (N, n_max)
    counts : int array (N,)
        n_i >= 1.
    x_test : array (n_test, F)
    y_test : int array (n_test,)
    n_classes : int
    """

    x: np.ndarray
    y: np.ndarray
    counts: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    n_classes: int

    @property
    def n_clients(self) -> int:
        return int(self.x.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.x.shape[-1])

    @property
    def mask(self) -> np.ndarray:
        """Boolean (N, n_max): True on real rows."""
        return np.arange(self.x.shape[1]) < self.counts[:, None]

    def label_histogram(self) -> np.ndarray:
        """(N, C) counts of each class on each client."""
        out = np.zeros((self.n_clients, self.n_classes), dtype=np.int64)
        for i in range(self.n_clients):
            out[i] = np.bincount(self.y[i, : self.counts[i]], minlength=self.n_classes)
        return out

    @classmethod
    def from_shards(
        cls,
        shards: list[tuple[Any, Any]],
        x_test: Any,
        y_test: Any,
        n_classes: int | None = None,
    ) -> FederatedData:
        """Stack per-client ``(X_i, y_i)`` shards (validated) into padded arrays."""
        if not shards:
            raise DatasetError("at least one client shard is needed")
        checked = [check_dataset(X, y, name=f"client {i}") for i, (X, y) in enumerate(shards)]
        F = checked[0][0].shape[1]
        if n_classes is None:
            n_classes = 1 + max(int(y.max()) for _, y in checked)
            if y_test is not None and np.size(y_test):
                n_classes = max(n_classes, 1 + int(np.max(y_test)))
        C = check_int("n_classes", n_classes, minimum=2)
        for i, (X, y) in enumerate(checked):
            check_dataset(X, y, n_features=F, n_classes=C, name=f"client {i}")
        xt, yt = check_dataset(x_test, y_test, n_features=F, n_classes=C, name="test split")
        counts = np.array([X.shape[0] for X, _ in checked], dtype=np.int64)
        n_max = int(counts.max())
        x = np.zeros((len(checked), n_max, F))
        y = np.zeros((len(checked), n_max), dtype=np.int64)
        for i, (X, yy) in enumerate(checked):
            x[i, : counts[i]] = X
            y[i, : counts[i]] = yy
        return cls(x=x, y=y, counts=counts, x_test=xt, y_test=yt, n_classes=C)

    @classmethod
    def from_partition(
        cls,
        X: Any,
        y: Any,
        parts: list[np.ndarray],
        x_test: Any,
        y_test: Any,
        n_classes: int | None = None,
    ) -> FederatedData:
        """Stack a centralized data set split by index lists ``parts`` (one per client)."""
        X, y = check_dataset(X, y, n_classes=n_classes, name="training split")
        for i, p in enumerate(parts):
            if len(p) == 0:
                raise DatasetError(f"client {i} has no samples")
        return cls.from_shards([(X[p], y[p]) for p in parts], x_test, y_test, n_classes)


def federated_mnist1d(
    n_clients: int = 50,
    *,
    alpha: float | None = 0.6,
    seed: int = 0,
    num_samples: int = 5000,
    data_seed: int = 42,
    min_size: int = 10,
) -> FederatedData:
    """MNIST-1D over ``n_clients`` clients: Dirichlet(alpha) label partition (000 Section 6;
    ``alpha=None`` for an i.i.d. split), partition drawn from ``default_rng(seed)``."""
    d = mnist1d(num_samples=num_samples, seed=data_seed)
    rng = np.random.default_rng(check_seed(seed))
    if alpha is None:
        parts = iid_partition(d["y"].shape[0], n_clients, rng)
    else:
        parts = dirichlet_partition(d["y"], n_clients, alpha, rng, min_size=min_size)
    return FederatedData.from_partition(d["x"], d["y"], parts, d["x_test"], d["y_test"], 10)


def federated_from_arrays(
    d: dict[str, Any],
    n_clients: int,
    *,
    alpha: float | None = 0.6,
    seed: int = 0,
    test_fraction: float = 0.2,
    n_classes: int | None = None,
    min_size: int = 10,
) -> FederatedData:
    """Split a centralized data set (``x``, ``y`` and optionally ``x_test``, ``y_test``, as from
    :func:`load_dataset`) over clients: Dirichlet(alpha) labels or i.i.d. (``alpha=None``).
    Without a test split, a seeded random ``test_fraction`` of the rows is held out."""
    rng = np.random.default_rng(check_seed(seed))
    X, y = check_dataset(d["x"], d["y"], n_classes=n_classes, name="training split")
    if "x_test" in d:
        xt, yt = check_dataset(
            d["x_test"], d["y_test"], n_features=X.shape[1], n_classes=n_classes, name="test split"
        )
    else:
        if not 0 < float(test_fraction) < 1:
            raise AssumptionError(f"test_fraction must be in (0, 1), got {test_fraction}")
        perm = rng.permutation(y.shape[0])
        k = max(1, int(round(test_fraction * y.shape[0])))
        xt, yt, X, y = X[perm[:k]], y[perm[:k]], X[perm[k:]], y[perm[k:]]
    if n_classes is None:
        n_classes = int(max(y.max(), yt.max())) + 1
    if alpha is None:
        parts = iid_partition(y.shape[0], n_clients, rng)
    else:
        parts = dirichlet_partition(y, n_clients, alpha, rng, min_size=min_size)
    return FederatedData.from_partition(X, y, parts, xt, yt, n_classes)


def federated_synthetic(
    alpha: float,
    beta: float,
    n_clients: int = 30,
    *,
    seed: int = 0,
    test_fraction: float = 0.2,
    **kw: Any,
) -> FederatedData:
    """LEAF Synthetic(alpha, beta) stacked; the last ``test_fraction`` of every device's rows
    form the (pooled) test set, the rest the device's training shard."""
    rng = np.random.default_rng(check_seed(seed))
    devices = leaf_synthetic(alpha, beta, n_clients, rng, **kw)
    train, xt, yt = [], [], []
    for X, y in devices:
        k = max(1, int(round(X.shape[0] * (1 - test_fraction))))
        k = min(k, X.shape[0] - 1) if X.shape[0] > 1 else 1
        train.append((X[:k], y[:k]))
        xt.append(X[k:])
        yt.append(y[k:])
    return FederatedData.from_shards(
        train, np.concatenate(xt), np.concatenate(yt), kw.get("n_classes", 10)
    )
