"""SimulationResult for a researcher: a short repr, xarray and pandas views, float32 kept and
recorded; the package's main entry points at the top level, imported lazily."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import fedtheory
from fedtheory.errors import MissingExtraError
from fedtheory.graphs import mixing_matrix, spectral_gap
from fedtheory.problems import make_problem, random_quadratic
from fedtheory.simulation import simulate
from fedtheory.simulation.metrics import MODEL_DIM
from fedtheory.sweep.store import DIMENSIONS, VARIABLES


@pytest.fixture(scope="module")
def run():
    P = random_quadratic(8, 3, seed=0)
    return simulate(P, "focus", "uniform", clients_per_round=3, lr=0.05, rounds=30, seeds=4, seed=7)


def test_repr_is_a_few_lines_that_say_what_ran(run):
    text = repr(run)
    assert len(text.splitlines()) <= 6 and len(text) < 600
    assert text.startswith("SimulationResult: focus, Uniform participation, 4 seeds (root seed 7)")
    assert "30 rounds, float64" in text and "metrics (4, 31): error" in text
    median = np.median(run.final("error"))
    assert f"median {median:.3g}" in text and "diverged: 0 of 4" in text


def test_repr_counts_diverged_seeds():
    P = random_quadratic(8, 3, seed=0)
    bad = simulate(P, "fedavg", "full", lr=50.0, rounds=20, seeds=2)
    assert bad.diverged.all()
    assert "2 of 2 seeds diverged" in repr(bad)


def test_to_xarray_has_seed_and_round_dims_and_the_config(run):
    pytest.importorskip("xarray")
    ds = run.to_xarray()
    assert ds["error"].dims == ("seed", "round")
    assert ds.sizes["round"] == 31 and list(ds["seed"].values) == run.seed_ids
    np.testing.assert_array_equal(ds["error"].values, run.error)
    np.testing.assert_array_equal(ds["x_final"].values, run.x_final)
    assert ds.attrs["algorithm"] == "focus" and ds.attrs["root_seed"] == 7
    assert json.loads(ds.attrs["config"])["lr"] == 0.05 and ds.attrs["config_lr"] == 0.05
    assert ds.attrs["dtype"] == "float64"
    # one description of a metric: the same CF attributes as a sweep store's
    assert ds["error"].attrs == {"long_name": VARIABLES["error"].long_name, "units": "1"}
    assert "||x_r - x*|| / ||x*||" in ds["error"].attrs["long_name"]


def test_to_xarray_is_tidy_like_a_sweep_store(run):
    """CF long_name and units on every variable and coordinate, the store's dimension names
    and CF attributes, and the run's settings as attributes."""
    pytest.importorskip("xarray")
    ds = run.to_xarray()
    for name in [*ds.data_vars, *ds.coords]:
        assert {"long_name", "units"} <= set(ds[name].attrs), name
    assert ds["x_final"].dims == ("seed", VARIABLES["x_final"].extra)  # the store's names
    for name in ("x_final", "diverged", "diverged_at", "diverging", "diverging_at"):
        assert ds[name].attrs["long_name"] == VARIABLES[name].long_name, name
        assert ds[name].attrs["units"] == VARIABLES[name].units, name
    for dim in ("seed", "round", VARIABLES["x_final"].extra):
        assert ds[dim].attrs == DIMENSIONS[dim], dim
    settings = {
        k: ds.attrs[k]
        for k in (
            "problem",
            "algorithm",
            "participation",
            "n_clients",
            "clients_per_round",
            "local_steps",
            "lr",
        )
    }
    assert settings == {
        "problem": "QuadraticProblem",
        "algorithm": "focus",
        "participation": "uniform",
        "n_clients": 8,
        "clients_per_round": 3,
        "local_steps": 1,
        "lr": 0.05,
    }
    named = simulate(
        make_problem("quadratic"),
        "fedavg",
        "bernoulli",
        rounds=2,
        lr=0.05,
        probabilities=[0.5, 0.25] * 8,
    ).to_xarray()
    assert named.attrs["problem"] == "quadratic" and named.attrs["clients_per_round"] == 6.0


def test_to_xarray_holds_only_the_recorded_metrics():
    pytest.importorskip("xarray")
    P = random_quadratic(8, 3, seed=0)
    res = simulate(
        P,
        "focus",
        "uniform",
        clients_per_round=3,
        lr=0.05,
        rounds=6,
        seeds=2,
        metrics=["error", "tracking_residual"],
    )
    ds = res.to_xarray()
    metrics = [v for v in ds.data_vars if ds[v].dims == ("seed", "round")]
    assert metrics == ["error", "tracking_residual"]
    # FOCUS's own metric: its name as long_name
    assert ds["tracking_residual"].attrs == {"long_name": "tracking_residual", "units": "1"}


def test_to_dataframe_is_long(run):
    pytest.importorskip("pandas")
    df = run.to_dataframe()
    assert list(df.columns) == ["seed", "round", "metric", "value", "diverged"]
    assert len(df) == 4 * 31 * len(run.metrics)
    row = df[(df.seed == run.seed_ids[2]) & (df["round"] == 30) & (df.metric == "error")]
    assert row["value"].item() == run.error[2, 30]


def test_to_dataframe_has_a_row_per_recorded_value_and_no_row_of_nan():
    """Thinned rounds and a diverged seed's frozen rounds have no value and no row; every
    recorded value has its row."""
    pytest.importorskip("pandas")
    P = random_quadratic(8, 3, seed=0)
    res = simulate(
        P,
        "fedavg",
        "full",
        lr=0.05,
        rounds=30,
        seeds=3,
        record_every=7,
        metrics=["error", "grad_norm2"],
    )
    df = res.to_dataframe()
    assert not df["value"].isna().any()
    assert len(df) == 3 * len(res.recorded_rounds) * 2
    assert sorted(set(df["round"])) == list(res.recorded_rounds)
    bad = simulate(P, "fedavg", "full", lr=50.0, rounds=20, seeds=2).to_dataframe()
    finite = int(
        np.isfinite(simulate(P, "fedavg", "full", lr=50.0, rounds=20, seeds=2).error).sum()
    )
    assert len(bad) == finite and not bad["value"].isna().any() and bad["diverged"].all()


def test_to_xarray_names_the_extra_when_xarray_is_missing(run, monkeypatch):
    monkeypatch.setitem(sys.modules, "xarray", None)  # blocks the import
    with pytest.raises(MissingExtraError, match=r"pip install 'fedtheory\[sweep\]'"):
        run.to_xarray()
    with pytest.raises(MissingExtraError, match="sweep"):
        run.to_dataframe()


def test_a_float32_run_keeps_and_records_float32():
    P = random_quadratic(8, 3, seed=0)
    r = simulate(
        P, "focus", "uniform", clients_per_round=3, lr=0.05, rounds=10, seeds=2, dtype=np.float32
    )
    assert r.dtype == "float32"
    assert all(v.dtype == np.float32 for v in r.metrics.values())
    assert r.x_final.dtype == np.float32 and "float32" in repr(r)
    blocks = simulate(
        P,
        "focus",
        "uniform",
        clients_per_round=3,
        lr=0.05,
        rounds=10,
        seeds=5,
        dtype=np.float32,
        seed_block=2,
        workers=1,
    )
    assert blocks.dtype == "float32" and blocks.error.dtype == np.float32


def test_top_level_entry_points_are_lazy(modules_loaded_by):
    heavy = ("scipy", "sympy", "fedtheory.simulation", "fedtheory.verify", "fedtheory.graphs")
    assert modules_loaded_by("import fedtheory", heavy) == []
    touched = modules_loaded_by("import fedtheory; fedtheory.simulate", heavy)
    assert "fedtheory.simulation" in touched and "fedtheory.verify" not in touched


def test_top_level_entry_points_are_the_library_functions():
    assert fedtheory.simulate is simulate and fedtheory.spectral_gap is spectral_gap
    assert fedtheory.mixing_matrix is mixing_matrix and fedtheory.make_problem is make_problem
    assert fedtheory.verify.run is not None and "simulate" in dir(fedtheory)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = fedtheory.nothing


def test_one_metric_vocabulary_and_the_earlier_names_still_run():
    """A metric has one name in Python, the CLI's JSON and the sweep store (``error``,
    ``f_minus_f_star``, ``tracking_residual``); the earlier Python names read the same arrays,
    with a DeprecationWarning."""
    P = random_quadratic(8, 3, seed=0)
    res = simulate(
        P, "focus", "uniform", clients_per_round=3, lr=0.05, rounds=5, seeds=2, metrics="all"
    )
    assert {"error", "f_minus_f_star", "grad_norm2", "tracking_residual"} <= set(res.metrics)
    for old, new in (
        ("rel_error", "error"),
        ("subopt", "f_minus_f_star"),
        ("tracking", "tracking_residual"),
    ):
        with pytest.warns(DeprecationWarning, match=f"{old!r} is now called {new!r}"):
            np.testing.assert_array_equal(getattr(res, old), res.metrics[new])
    with pytest.warns(DeprecationWarning):
        only = simulate(P, "fedavg", rounds=3, lr=0.05, metrics=["rel_error"])
    assert list(only.metrics) != [] and not np.isnan(only.error).all()


def test_the_model_axis_has_one_name_in_results_and_stores():
    """x_final's axis is ``component`` in a result's Dataset as in a sweep store."""
    pytest.importorskip("xarray")
    prob = random_quadratic(4, 3, seed=0)
    ds = simulate(prob, "fedavg", rounds=3, lr=0.01, average_from=1).to_xarray()
    assert ds["x_final"].dims == ("seed", MODEL_DIM) and ds["x_star"].dims == (MODEL_DIM,)
    assert ds["x_mean"].dims == ("seed", MODEL_DIM) and VARIABLES["x_final"].extra == MODEL_DIM
