"""Data without downloads: MNIST-1D generation, LEAF Synthetic, partitions, stacking, loading."""

import os

import numpy as np
import pytest
import requests
from hypothesis import given
from hypothesis import strategies as st

from fedtheory.errors import AssumptionError, FedTheoryError
from fedtheory.problems.nn.data import (
    DatasetError,
    FederatedData,
    check_dataset,
    dirichlet_partition,
    federated_mnist1d,
    federated_synthetic,
    iid_partition,
    leaf_synthetic,
    load_dataset,
    mnist1d,
)

seeds = st.integers(0, 2**32 - 1)


def test_mnist1d_is_generated_locally_without_network(monkeypatch, tmp_path):
    """No download and no file: requests.get would raise, the working directory stays empty,
    and the caller's global random state is left as it was."""
    pytest.importorskip("mnist1d")

    def no_network(*a, **k):
        raise AssertionError("mnist1d tried to download")

    monkeypatch.setattr(requests, "get", no_network)
    monkeypatch.chdir(tmp_path)
    np.random.seed(123)  # noqa: NPY002
    before = np.random.get_state()[1].copy()  # noqa: NPY002
    d = mnist1d(num_samples=200, seed=7)
    np.testing.assert_array_equal(np.random.get_state()[1], before)  # noqa: NPY002
    assert os.listdir(tmp_path) == []
    assert d["x"].shape == (160, 40) and d["x_test"].shape == (40, 40)
    assert d["y"].dtype == np.int64 and set(np.unique(d["y"])) <= set(range(10))
    assert np.bincount(np.concatenate([d["y"], d["y_test"]]), minlength=10).tolist() == [20] * 10
    again = mnist1d(num_samples=200, seed=7)
    np.testing.assert_array_equal(again["x"], d["x"])


@given(st.integers(20, 300), st.integers(1, 12), st.floats(0.05, 50.0), seeds)
def test_dirichlet_partition_is_a_partition(n, N, alpha, seed):
    labels = np.random.default_rng(seed).integers(0, 5, size=n)
    m = min(3, n // N)
    try:
        parts = dirichlet_partition(
            labels, N, alpha, np.random.default_rng(seed), min_size=m, max_tries=50
        )
    except AssumptionError as exc:  # allowed only as the documented refusal
        assert "no Dirichlet" in str(exc)
        return
    assert len(parts) == N
    allidx = np.concatenate(parts)
    np.testing.assert_array_equal(np.sort(allidx), np.arange(n))
    assert min(p.size for p in parts) >= m
    again = dirichlet_partition(
        labels, N, alpha, np.random.default_rng(seed), min_size=m, max_tries=50
    )
    for p, q in zip(parts, again, strict=True):
        np.testing.assert_array_equal(p, q)


def test_dirichlet_alpha_controls_heterogeneity():
    """Small alpha concentrates each client on few classes; large alpha approaches i.i.d."""
    labels = np.repeat(np.arange(10), 300)

    def mean_tv(alpha):
        parts = dirichlet_partition(labels, 20, alpha, np.random.default_rng(1))
        hist = np.stack([np.bincount(labels[p], minlength=10) / p.size for p in parts])
        return np.abs(hist - 0.1).sum(axis=1).mean() / 2  # total variation to uniform

    assert mean_tv(0.1) > 0.6 > mean_tv(0.6) > mean_tv(100.0)
    assert mean_tv(100.0) < 0.1


def test_dirichlet_refusals():
    y = np.zeros(10, dtype=int)
    with pytest.raises(AssumptionError, match="cannot give 5 clients at least 10"):
        dirichlet_partition(y, 5, 0.6, np.random.default_rng(0))
    with pytest.raises(AssumptionError, match="alpha must be finite and > 0"):
        dirichlet_partition(y, 2, 0.0, np.random.default_rng(0), min_size=1)
    with pytest.raises(AssumptionError, match="1-D integer"):
        dirichlet_partition(np.zeros(10), 2, 1.0, np.random.default_rng(0), min_size=1)


@given(st.integers(1, 200), st.integers(1, 20), seeds)
def test_iid_partition_sizes_differ_by_at_most_one(n, N, seed):
    if n < N:
        with pytest.raises(AssumptionError):
            iid_partition(n, N, np.random.default_rng(seed))
        return
    parts = iid_partition(n, N, np.random.default_rng(seed))
    sizes = [p.size for p in parts]
    assert max(sizes) - min(sizes) <= 1
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)), np.arange(n))


def test_leaf_synthetic_shapes_labels_and_heterogeneity():
    devs = leaf_synthetic(1.0, 1.0, 6, np.random.default_rng(0), samples=[50, 60, 70, 80, 90, 100])
    assert [X.shape for X, _ in devs] == [(n, 60) for n in (50, 60, 70, 80, 90, 100)]
    for _, y in devs:
        assert y.min() >= 0 and y.max() < 10
    same = leaf_synthetic(1.0, 1.0, 6, np.random.default_rng(0), samples=[50, 60, 70, 80, 90, 100])
    for (a, b), (c, d) in zip(devs, same, strict=True):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)

    # beta moves the devices' input means apart: spread of per-device feature means grows.
    def spread(beta):
        ds = leaf_synthetic(0.0, beta, 40, np.random.default_rng(3), samples=200)
        return np.std([X.mean() for X, _ in ds])

    assert spread(10.0) > 2 * spread(0.0)
    sizes = [X.shape[0] for X, _ in leaf_synthetic(0.5, 0.5, 30, np.random.default_rng(1))]
    assert min(sizes) >= 50 and max(sizes) <= 1000


def test_federated_data_stacking_keeps_every_row_once():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 4))
    y = rng.integers(0, 3, size=30)
    parts = [np.arange(0, 5), np.arange(5, 17), np.arange(17, 30)]
    fd = FederatedData.from_partition(X, y, parts, X[:4], y[:4], 3)
    assert fd.x.shape == (3, 13, 4) and fd.counts.tolist() == [5, 12, 13]
    for i, p in enumerate(parts):
        np.testing.assert_array_equal(fd.x[i, : p.size], X[p])
        np.testing.assert_array_equal(fd.y[i, : p.size], y[p])
        assert not fd.x[i, p.size :].any() and not fd.y[i, p.size :].any()
    assert fd.mask.sum() == 30
    assert fd.label_histogram().sum() == 30


def test_federated_mnist1d_and_synthetic_build():
    pytest.importorskip("mnist1d")
    fd = federated_mnist1d(10, alpha=0.6, seed=0, num_samples=500, min_size=5)
    assert fd.n_clients == 10 and fd.n_features == 40 and fd.n_classes == 10
    assert fd.counts.sum() == 400 and fd.counts.min() >= 5
    iid = federated_mnist1d(10, alpha=None, seed=0, num_samples=500)
    assert iid.counts.max() - iid.counts.min() <= 1
    syn = federated_synthetic(1.0, 1.0, 5, samples=40)
    assert syn.n_clients == 5 and syn.counts.tolist() == [32] * 5 and syn.x_test.shape == (40, 60)


@pytest.mark.parametrize(
    ("X", "y", "kw", "match"),
    [
        (np.zeros(5), np.zeros(5, int), {}, "features must be a 2-D array"),
        (np.zeros((5, 2)), np.zeros((5, 1), int), {}, "labels must be a 1-D array"),
        (np.zeros((5, 2)), np.zeros(4, int), {}, "5 feature rows but 4 labels"),
        (np.zeros((0, 2)), np.zeros(0, int), {}, "empty"),
        (np.zeros((5, 2)), np.zeros(5, int), {"n_features": 3}, "expected 3 features"),
        (np.full((5, 2), np.nan), np.zeros(5, int), {}, r"feature \[0, 0\] is not finite"),
        (
            np.zeros((5, 2)),
            np.array([0, 1, 2, 10, 1]),
            {"n_classes": 10},
            r"y\[3\] = 10 is outside \[0, 9\]",
        ),
        (np.zeros((5, 2)), np.array([0, -1, 2, 1, 1]), {}, r"y\[1\] = -1 is outside"),
        (np.zeros((5, 2)), np.array([0, 0.5, 1, 1, 1]), {}, "labels must be integers"),
        (np.zeros((5, 2)), np.array(list("abcde")), {}, "labels must be integers"),
    ],
)
def test_check_dataset_refuses_bad_data(X, y, kw, match):
    with pytest.raises(DatasetError, match=match):
        check_dataset(X, y, **kw)
    assert issubclass(DatasetError, FedTheoryError)


def test_load_dataset_round_trip_and_refusals(tmp_path):
    rng = np.random.default_rng(0)
    good = tmp_path / "good.npz"
    np.savez(
        good,
        x=rng.standard_normal((8, 3)),
        y=np.arange(8) % 4,
        x_test=rng.standard_normal((2, 3)),
        y_test=np.array([0, 3]),
    )
    d = load_dataset(good, n_classes=4)
    assert d["x"].shape == (8, 3) and d["y_test"].tolist() == [0, 3]
    bad = tmp_path / "bad.npz"
    np.savez(bad, x=np.zeros((8, 3)), y=np.arange(8))
    with pytest.raises(DatasetError, match=r"y\[4\] = 4 is outside \[0, 3\]"):
        load_dataset(bad, n_classes=4)
    np.savez(
        bad,
        x=np.zeros((8, 3)),
        y=np.zeros(8, int),
        x_test=np.zeros((2, 4)),
        y_test=np.zeros(2, int),
    )
    with pytest.raises(DatasetError, match="test split.*expected 3 features per sample, got 4"):
        load_dataset(bad)
    np.savez(bad, features=np.zeros((8, 3)))
    with pytest.raises(DatasetError, match="missing array"):
        load_dataset(bad)
    with pytest.raises(FileNotFoundError):
        load_dataset(tmp_path / "none.npz")
