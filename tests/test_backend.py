import json
import os

import matplotlib.pyplot as plt
import numpy as np
import pytest

from fedtheory import BackendUnavailableError, get_backend, get_namespace, to_numpy
from fedtheory.backend import gpu_available, resolve_dtype
from fedtheory.io import dumps, save_figure, write_atomic


def test_numpy_is_default(monkeypatch):
    monkeypatch.delenv("FEDTHEORY_BACKEND", raising=False)
    assert get_backend() is np
    monkeypatch.setenv("FEDTHEORY_BACKEND", "numpy")
    assert get_backend() is np


def test_unknown_backend_is_one_clear_error():
    with pytest.raises(BackendUnavailableError, match="unknown array backend 'torch'"):
        get_backend("torch")


@pytest.mark.skipif(gpu_available(), reason="a GPU is present")
def test_cupy_without_gpu_says_why(monkeypatch):
    monkeypatch.setenv("FEDTHEORY_BACKEND", "cupy")
    with pytest.raises(BackendUnavailableError, match="CuPy"):
        get_backend()


def test_namespace_of_numpy_arrays_is_numpy():
    assert get_namespace(np.ones(3), 2.0) is np
    assert isinstance(to_numpy([1, 2]), np.ndarray)


def test_dtype_policy():
    assert resolve_dtype() == np.float64
    assert resolve_dtype("float32") == np.float32
    with pytest.raises(BackendUnavailableError):
        resolve_dtype(np.int64)


def test_json_writes_non_finite_as_null():
    out = json.loads(dumps({"a": np.array([1.0, np.nan, np.inf]), "b": np.int64(3)}))
    assert out == {"a": [1.0, None, None], "b": 3}
    back = np.array(json.loads(dumps({"e": np.array([[0.5, np.nan]])}))["e"], dtype=float)
    assert back.dtype == np.float64 and np.isnan(back[0, 1]) and back[0, 0] == 0.5


def test_write_atomic_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "x.json"
    with pytest.raises(TypeError):
        write_atomic(target, 123)  # not str/bytes: the write fails
    assert list(tmp_path.iterdir()) == []


def test_written_files_get_the_mode_open_would_give(tmp_path):

    umask = os.umask(0o022)
    try:
        path = write_atomic(tmp_path / "a.json", "{}")
    finally:
        os.umask(umask)
    assert (path.stat().st_mode & 0o777) == 0o644


@pytest.mark.parametrize("suffix", ["png", "pdf"])
def test_same_figure_same_bytes(tmp_path, suffix):

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    a = save_figure(fig, tmp_path / f"a.{suffix}").read_bytes()
    b = save_figure(fig, tmp_path / f"b.{suffix}").read_bytes()
    plt.close(fig)
    assert a == b and len(a) > 100
    assert b"CreationDate" not in a  # a timestamp would make every re-run a new file
