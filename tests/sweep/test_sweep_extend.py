"""Sweeps a researcher can shape (issue 26): per-algorithm tables, zipped axes, stores that grow
by seeds or appended values, every problem of a spec at once, CF attributes through xarray.

Equality is bit for bit, through plain ``xarray.open_zarr``: a task gives the same bits for the
same configuration and seed block on this module's one-worker Dask cluster, so a store that was
extended equals one made in one go, and a point of a ``zip`` or ``run`` axis equals the same
point of a plain cartesian sweep.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from fedtheory.cli import main
from fedtheory.errors import FedTheoryError, StoreError
from fedtheory.sweep import Engine, check, load_spec, normalize
from fedtheory.sweep import open as open_sweep
from fedtheory.sweep import run as run_sweep
from fedtheory.sweep.spec import KEYS
from fedtheory.sweep.task import check_spec

xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")

#: FOCUS against FedAdam, each with its own settings: 3 points on the run axis.
COMPARE_TOML = """
problem = "quadratic"
lr = 0.01
local_steps = 2
rounds = 15
seeds = 2
seed_block = 2

[algorithms.focus]

[algorithms.fedadam]
global_lr = [0.1, 0.01]
beta1 = 0.8
"""

BASE = {"problem": "quadratic", "rounds": 15, "seed_block": 2}


@pytest.fixture(scope="module")
def engine():
    with Engine(workers=1) as eng:
        yield eng


def _sweep(engine, spec, path: Path) -> dict:
    return run_sweep(spec, path, scheduler=engine.address, progress=False)


def _load(path: Path):
    return xr.open_zarr(path).load()


# --- the spec --------------------------------------------------------------------------------


def test_per_algorithm_tables_make_one_run_axis(tmp_path):
    f = tmp_path / "compare.toml"
    f.write_text(COMPARE_TOML)
    spec = load_spec(f)
    (axis,) = spec.axes
    assert (axis.name, axis.keys) == ("run", ("algorithm", "global_lr", "beta1"))
    # FOCUS runs with the top-level (default) values, FedAdam with its table's
    assert axis.points == (("focus", 1.0, 0.9), ("fedadam", 0.1, 0.8), ("fedadam", 0.01, 0.8))
    assert spec.values["algorithm"] == ("focus", "fedadam")
    tasks = spec.tasks()
    assert [(t.config["algorithm"], t.config["global_lr"], t.config["lr"]) for t in tasks] == [
        ("focus", 1.0, 0.01),
        ("fedadam", 0.1, 0.01),
        ("fedadam", 0.01, 0.01),
    ]
    assert "global_lr" not in spec.fixed and spec.fixed["lr"] == 0.01
    again = normalize(spec.to_dict())
    assert again.hash == spec.hash and again.axes == spec.axes
    # another order of the tables is another layout, so another spec
    swapped = {
        **spec.to_dict(),
        "algorithm": None,
        "algorithms": dict(reversed(list(spec.to_dict()["algorithms"].items()))),
    }
    assert normalize(swapped).hash != spec.hash
    assert check_spec(spec).dim == 20  # every point builds


def test_a_table_with_a_setting_its_algorithm_does_not_read_is_refused():
    spec = normalize(
        {
            **BASE,
            "lr": 0.01,
            "local_steps": 1,
            "algorithms": {"fedadam": {}, "focus": {"global_lr": [0.5]}},
        }
    )
    with pytest.raises(FedTheoryError, match="focus does not use global_lr"):
        check_spec(spec)


def test_zip_pairs_values_into_one_axis():
    spec = normalize(
        {
            **BASE,
            "algorithm": ["focus", "fedavg"],
            "zip": {"lr": [0.02, 0.01, 0.005], "local_steps": [1, 2, 4]},
        }
    )
    assert [(a.name, a.keys) for a in spec.axes] == [
        ("algorithm", ("algorithm",)),
        ("zip", ("local_steps", "lr")),
    ]
    assert spec.grid_shape == (2, 3)
    pairs = [(t.config["lr"], t.config["local_steps"]) for t in spec.tasks()]
    assert pairs == [(0.02, 1), (0.01, 2), (0.005, 4)] * 2
    assert normalize(spec.to_dict()).hash == spec.hash


@pytest.mark.parametrize(
    ("change", "messages"),
    [
        (
            {"zip": {"lr": [0.1, 0.2, 0.3], "local_steps": [1, 2]}},
            ["the lists of [zip] in spec differ in length (lr has 3, local_steps has 2 values)"],
        ),
        ({"zip": {"lr": [0.1, 0.2]}}, ["[zip] in spec zips one key"]),
        (
            {"lr": 0.1, "zip": {"lr": [0.1, 0.2], "local_steps": [1, 2]}},
            ["key 'lr' in [zip] of spec is also given at the top level"],
        ),
        (
            {"zip": {"rounds": [1, 2], "lr": [0.1, 0.2]}},
            ["key 'rounds' in [zip] of spec cannot be"],
        ),
        ({"zip": {"lr": [0.1, 0.1], "local_steps": [1, 1]}}, ["lists the point (0.1, 1) twice"]),
        (
            {"algorithms": {"fedadam": {"rounds": 3}}},
            ["key 'rounds' in [algorithms.fedadam] of spec: an algorithm's table takes"],
        ),
        (
            {"algorithms": {"fedadam": {"global_lr": [-1.0]}}},
            ["key 'global_lr' in [algorithms.fedadam] of spec must be > 0, got -1.0"],
        ),
        (
            {"lr": [0.1, 0.2], "algorithms": {"fedadam": {"lr": 0.3}}},
            ["key 'lr' in [algorithms.fedadam] of spec is swept for every algorithm too"],
        ),
        (
            {"algorithm": "focus", "algorithms": {"fedadam": {}}},
            ["gives the algorithms as [algorithms.NAME] tables and as 'algorithm'"],
        ),
        ({"algorithms": {"fedadamx": {}}}, ["[algorithms.fedadamx] in spec: unknown algorithm"]),
        ({"algorithms": ["focus"]}, ["'algorithms' in spec must be a table"]),
    ],
)
def test_bad_tables_are_refused_naming_the_key(change, messages):
    raw = {**BASE, "algorithm": "fedadam", "lr": 0.1, "local_steps": 1}
    if "algorithms" in change:
        raw.pop("algorithm")
    for k in change.get("zip", {}):  # a zipped key is given in [zip] only
        raw.pop(k, None)
    raw.update(change)
    with pytest.raises(FedTheoryError) as err:
        normalize(raw)
    for message in messages:
        assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_every_problem_of_a_spec_is_reported_at_once(tmp_path, capsys):
    with pytest.raises(FedTheoryError) as err:
        normalize({"problem": "quadratic", "lr": -1.0, "learning_rate": 1, "seeds": 0})
    text = str(err.value)
    assert text.startswith("spec needs the keys 'algorithm' (")
    for part in (
        "'rounds' (rounds R)",
        "'local_steps' (local steps K)",
        "unknown key 'learning_rate' in spec",
        "key 'lr' in spec must be > 0, got -1.0",
        "key 'seeds' in spec must be >= 1, got 0",
    ):
        assert part in text, part
    assert "\n" not in text
    # a required key given in every algorithm's table is given
    spec = normalize(
        {
            **BASE,
            "local_steps": 1,
            "algorithms": {"focus": {"lr": 0.1}, "fedavg": {"lr": [0.1, 0.2]}},
        }
    )
    assert [p[1:] for p in spec.axes[0].points] == [(0.1,), (0.1,), (0.2,)]
    with pytest.raises(FedTheoryError, match="needs the key 'lr'"):
        normalize({**BASE, "local_steps": 1, "algorithms": {"focus": {"lr": 0.1}, "fedavg": {}}})
    bad = tmp_path / "bad.toml"
    bad.write_text('problem = "quadratic"\nlr = 0\n[zip]\nlocal_steps = [1, 2]\nbeta1 = [0.9]\n')
    assert main(["sweep", str(bad), "--store", str(tmp_path / "s")]) == 2
    err_lines = capsys.readouterr().err.strip().splitlines()
    assert len(err_lines) == 1
    for part in (
        "needs the keys 'algorithm'",
        "'rounds'",
        "key 'lr' in",
        "must be > 0",
        "local_steps has 2, beta1 has 1 values",
    ):
        assert part in err_lines[0], part
    assert not (tmp_path / "s").exists()


def _spec(**change) -> dict:
    return {
        **BASE,
        "algorithm": ["focus", "fedavg"],
        "lr": [0.01, 0.02],
        "local_steps": 2,
        "seeds": 4,
        **change,
    }


@pytest.mark.parametrize(
    ("new", "grown"),
    [
        (_spec(), []),
        (_spec(seeds=8), ["seed 4 -> 8"]),
        (_spec(seeds=5), ["seed 4 -> 5"]),
        (_spec(lr=[0.01, 0.02, 0.04]), ["lr 2 -> 3"]),
        (_spec(lr=[0.01, 0.02, 0.04], seeds=6), ["lr 2 -> 3", "seed 4 -> 6"]),
        (_spec(algorithm=["focus", "fedavg", "scaffold"]), ["algorithm 2 -> 3"]),
        (_spec(lr=[0.04, 0.01, 0.02]), None),  # inserted, not appended
        (_spec(lr=[0.01]), None),  # fewer
        (_spec(seeds=3), None),
        (_spec(seeds=8, seed_block=4), None),  # the stored blocks were of 2
        (_spec(rounds=16), None),
        (_spec(local_steps=[2, 3]), None),  # a fixed setting became an axis
        (_spec(local_steps=3), None),
    ],
)
def test_what_extends_a_spec(new, grown):
    old = normalize(_spec())  # seeds 4 in blocks of 2
    assert normalize(new).growth(old.hashable()) == grown


def test_more_seeds_need_full_blocks():
    old = normalize(_spec(seeds=5, seed_block=2))  # blocks (0, 1), (2, 3), (4,)
    assert normalize(_spec(seeds=6, seed_block=2)).growth(old.hashable()) is None
    old = normalize(_spec(seeds=4, seed_block=None))  # one block of 4
    assert normalize(_spec(seeds=8, seed_block=4)).growth(old.hashable()) == ["seed 4 -> 8"]
    assert normalize(_spec(seeds=8, seed_block=None)).growth(old.hashable()) is None  # 1 of 8


# --- stores ----------------------------------------------------------------------------------


def _final_spec(tmp_path: Path) -> Path:
    """COMPARE_TOML with more seeds and one more FedAdam step size."""
    f = tmp_path / "final.toml"
    f.write_text(
        COMPARE_TOML.replace("seeds = 2", "seeds = 4").replace("[0.1, 0.01]", "[0.1, 0.01, 0.001]")
    )
    return f


def test_compare_then_extend_equals_one_go(engine, tmp_path):
    first = tmp_path / "first.toml"
    first.write_text(COMPARE_TOML)
    more_seeds = tmp_path / "more.toml"
    more_seeds.write_text(COMPARE_TOML.replace("seeds = 2", "seeds = 4"))
    final = _final_spec(tmp_path)
    store = tmp_path / "grown"
    s1 = _sweep(engine, first, store)
    assert (s1["tasks_run"], s1["extended"], s1["dims"]["run"]) == (3, [], 3)
    before = _load(store)
    s2 = _sweep(engine, more_seeds, store)
    assert (s2["tasks_total"], s2["tasks_skipped"], s2["tasks_run"]) == (6, 3, 3)
    assert s2["extended"] == ["seed 2 -> 4"] and s2["metadata_repaired"] == []
    xr.testing.assert_identical(_load(store).isel(seed=[0, 1]).drop_attrs(), before.drop_attrs())
    s3 = _sweep(engine, final, store)
    assert (s3["tasks_total"], s3["tasks_skipped"], s3["tasks_run"]) == (8, 6, 2)
    assert s3["extended"] == ["run 3 -> 4"]
    again = _sweep(engine, final, store)
    assert (again["tasks_run"], again["extended"]) == (0, [])
    one_go = _sweep(engine, final, tmp_path / "one_go")
    assert one_go["tasks_run"] == 8
    # bit for bit, attributes and coordinates too, through plain xarray
    xr.testing.assert_identical(_load(store), _load(tmp_path / "one_go"))
    assert check(store).complete
    ds = open_sweep(store)
    assert list(ds.algorithm.values) == ["focus", "fedadam", "fedadam", "fedadam"]
    assert list(ds.global_lr.values) == [1.0, 0.1, 0.01, 0.001]
    final_error = ds.error.isel(round=-1).median("seed")
    best = final_error.groupby("algorithm").min()  # each algorithm at its best setting
    for alg in ("focus", "fedadam"):
        mine = final_error.where(ds.algorithm == alg, drop=True)
        assert float(best.sel(algorithm=alg)) == float(mine.min()) > 0


def test_an_extension_cut_short_is_refused_on_read_and_finished_on_resume(engine, tmp_path):
    first = tmp_path / "first.toml"
    first.write_text(COMPARE_TOML)
    final = _final_spec(tmp_path)
    store = tmp_path / "store"
    _sweep(engine, first, store)
    old_root = (store / "zarr.json").read_bytes()
    _sweep(engine, final, store)
    reference = _load(store)
    # as if the driver died after the arrays' metadata were rewritten, before the root was
    (store / "zarr.json").write_bytes(old_root)
    report = check(store)
    assert not report.intact and report.metadata  # the arrays disagree with the stored spec
    with pytest.raises(StoreError, match="is damaged, its metadata or coordinates are damaged"):
        open_sweep(store)
    again = _sweep(engine, final, store)
    assert again["tasks_run"] == 0 and again["extended"] == ["run 3 -> 4", "seed 2 -> 4"]
    xr.testing.assert_identical(_load(store), reference)


def test_an_extension_that_would_move_data_is_refused(engine, tmp_path):
    first = tmp_path / "first.toml"
    first.write_text(COMPARE_TOML)
    store = tmp_path / "store"
    _sweep(engine, first, store)
    before = _load(store)
    moved = tmp_path / "moved.toml"  # a value before the stored ones: every point would move
    moved.write_text(COMPARE_TOML.replace("[0.1, 0.01]", "[0.2, 0.1, 0.01]"))
    bigger = tmp_path / "bigger.toml"  # blocks of 4 would change the stored blocks of 2
    bigger.write_text(
        COMPARE_TOML.replace("seeds = 2\nseed_block = 2", "seeds = 4\nseed_block = 4")
    )
    for spec, keys in ((moved, "algorithms"), (bigger, "seed_block, seeds")):
        with pytest.raises(
            StoreError, match=rf"made from a different spec \(it differs in {keys}\)"
        ):
            _sweep(engine, spec, store)
    with pytest.raises(
        StoreError,
        match=r"seed_block, seeds\): its tasks hold seed_block = 2 "
        r"seeds each: set seed_block = 2 \(or leave seed_block out",
    ):
        _sweep(engine, bigger, store)
    other = tmp_path / "other"
    _sweep(engine, _with_problem(tmp_path, '["quadratic"]'), other)
    with pytest.raises(StoreError, match="would change the length of x_final from 20 to 50"):
        _sweep(engine, _with_problem(tmp_path, '["quadratic", "figure4"]'), other)
    xr.testing.assert_identical(_load(store), before)
    assert check(other).complete


def test_raising_seeds_alone_grows_the_store_in_its_own_blocks(engine, tmp_path):
    """The obvious edit: a spec without seed_block (one block of all its seeds) raised from 2
    to 4 seeds keeps the store's block of 2, runs only the new seeds, and equals a store made
    in one go with blocks of 2."""
    first = tmp_path / "first.toml"
    first.write_text(COMPARE_TOML.replace("seed_block = 2\n", ""))
    raised = tmp_path / "raised.toml"
    raised.write_text(COMPARE_TOML.replace("seeds = 2\nseed_block = 2\n", "seeds = 4\n"))
    store = tmp_path / "store"
    _sweep(engine, first, store)
    grown = _sweep(engine, raised, store)
    assert grown["extended"] == ["seed 2 -> 4"]
    assert (grown["tasks_total"], grown["tasks_skipped"], grown["tasks_run"]) == (6, 3, 3)
    one_go = tmp_path / "one_go"
    spec = tmp_path / "one_go.toml"
    spec.write_text(COMPARE_TOML.replace("seeds = 2", "seeds = 4"))
    _sweep(engine, spec, one_go)
    xr.testing.assert_identical(_load(store), _load(one_go))
    again = _sweep(engine, raised, store)  # the grown store is the raised spec's own
    assert (again["tasks_run"], again["extended"]) == (0, [])


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        ({"seeds": 4}, {"seeds": 2}, "the store holds 4 seeds: set seeds = 4 or more"),
        (
            {"seeds": 5, "seed_block": 2},
            {"seeds": 6, "seed_block": 2},
            "its 5 seeds end in a short block of 1 (seed_block = 2), and a store grows by whole "
            "blocks only: give another --store for seeds = 6",
        ),
        (
            {"seeds": 4, "seed_block": 2},
            {"seeds": 8, "seed_block": 4},
            "set seed_block = 2 (or leave seed_block out: the store's is kept)",
        ),
        ({"seeds": 4}, {"seeds": 4, "lr": 0.5}, None),  # not about seeds: no hint
    ],
)
def test_a_refused_seed_change_says_exactly_what_to_change(old, new, says):
    stored = normalize(_spec(**old)).hashable()
    assert normalize(_spec(**new)).on_store(stored).growth(stored) is None
    hint = normalize(_spec(**new)).seeds_hint(stored)
    assert hint == says if says is None else says in hint


def test_a_spec_without_seed_block_keeps_the_stores_when_it_adds_seeds():
    stored = normalize(_spec(seeds=4, seed_block=None)).hashable()  # one block of 4
    raised = normalize(_spec(seeds=8, seed_block=None))
    assert raised.growth(stored) is None  # alone it would be one block of 8
    kept = raised.on_store(stored)
    assert kept.values["seed_block"] == 4 and kept.growth(stored) == ["seed 4 -> 8"]
    assert normalize(_spec(seeds=8, seed_block=8)).on_store(stored).values["seed_block"] == 8
    assert raised.on_store(None) is raised


def _with_problem(tmp_path: Path, problem: str) -> Path:
    """COMPARE_TOML with another ``problem`` line (figure4's x has 50 components)."""
    f = tmp_path / f"problem{len(problem)}.toml"
    f.write_text(COMPARE_TOML.replace('problem = "quadratic"', f"problem = {problem}"))
    return f


def test_zip_and_run_points_equal_the_cartesian_sweep(engine, tmp_path):
    zipped = {
        **BASE,
        "algorithm": "fedavg",
        "seeds": 2,
        "zip": {"lr": [0.02, 0.01], "local_steps": [1, 3]},
    }
    grid = {**BASE, "algorithm": "fedavg", "seeds": 2, "lr": [0.02, 0.01], "local_steps": [1, 3]}
    _sweep(engine, zipped, tmp_path / "zip")
    _sweep(engine, grid, tmp_path / "grid")
    z, g = _load(tmp_path / "zip"), _load(tmp_path / "grid")
    assert z.error.dims == ("zip", "seed", "round")
    for i in range(2):
        at = {"lr": float(z.lr[i]), "local_steps": int(z.local_steps[i])}
        np.testing.assert_array_equal(z.error.isel(zip=i).values, g.error.sel(at).values)
        np.testing.assert_array_equal(z.x_final.isel(zip=i).values, g.x_final.sel(at).values)
    runs = {
        **BASE,
        "lr": 0.01,
        "local_steps": 2,
        "seeds": 2,
        "algorithms": {"focus": {}, "fedadam": {"global_lr": [0.1, 0.01]}},
    }
    plain = {
        **BASE,
        "lr": 0.01,
        "local_steps": 2,
        "seeds": 2,
        "algorithm": "fedadam",
        "global_lr": [0.1, 0.01],
    }
    _sweep(engine, runs, tmp_path / "runs")
    _sweep(engine, plain, tmp_path / "plain")
    r, p = _load(tmp_path / "runs"), _load(tmp_path / "plain")
    for i, lr in ((1, 0.1), (2, 0.01)):
        assert r.algorithm.values[i] == "fedadam" and float(r.global_lr[i]) == lr
        np.testing.assert_array_equal(r.error.isel(run=i).values, p.error.sel(global_lr=lr).values)


def test_cf_attributes_and_fixed_settings_through_xarray(engine, tmp_path):
    f = tmp_path / "compare.toml"
    f.write_text(COMPARE_TOML)
    _sweep(engine, f, tmp_path / "store")
    ds = xr.open_zarr(tmp_path / "store")
    for name, var in ds.variables.items():
        assert isinstance(var.attrs.get("long_name"), str) and var.attrs["long_name"], name
        if var.dtype.kind in "biuf":  # numbers; CF gives strings no units
            assert var.attrs.get("units") in ("1", "rounds"), name
        else:
            assert "units" not in var.attrs, name
    assert ds.error.attrs["units"] == "1" and ds["round"].attrs["units"] == "rounds"
    assert ds.diverged_at.attrs["units"] == "rounds"
    assert ds.global_lr.attrs == {"long_name": KEYS["global_lr"].long_name, "units": "1"}
    # fixed settings: plain attributes under their keys' names; swept ones are coordinates
    assert ds.attrs["problem"] == "quadratic" and ds.attrs["rounds"] == 15
    assert ds.attrs["lr"] == 0.01 and ds.attrs["seeds"] == 2 and ds.attrs["float32"] is False
    assert not {"algorithm", "global_lr", "beta1", "topology"} & set(ds.attrs)
    assert ds.algorithm.dtype.kind in "OT" and str(ds.algorithm.values[0]) == "focus"
    assert json.loads(ds.attrs["fedtheory_spec"])["algorithms"]["fedadam"]["beta1"] == 0.8


def test_a_key_some_algorithms_leave_unset_is_nan_or_empty(engine, tmp_path):
    spec = {
        **BASE,
        "lr": 0.01,
        "local_steps": 2,
        "seeds": 2,
        "algorithms": {"fedavg": {}, "cafga": {"clusters": [2, 4], "topology": "ring"}},
    }
    path = tmp_path / "store"
    assert _sweep(engine, spec, path)["tasks_run"] == 3
    ds = open_sweep(path)  # verified: the NaN coordinate is what the spec makes
    np.testing.assert_array_equal(ds.clusters.values, [np.nan, 2.0, 4.0])
    assert list(ds.topology.values) == ["", "ring", "ring"] and "topology" not in ds.attrs
    again = _sweep(engine, spec, path)
    assert (again["tasks_run"], again["metadata_repaired"]) == (0, [])


def test_a_store_of_format_2_is_refused_not_misread(engine, tmp_path):
    f = tmp_path / "compare.toml"
    f.write_text(COMPARE_TOML)
    path = tmp_path / "store"
    _sweep(engine, f, path)
    shutil.copytree(path, tmp_path / "copy")
    root = path / "zarr.json"
    meta = json.loads(root.read_text())
    meta["attributes"]["fedtheory_store"] = "fedtheory-sweep-2"
    root.write_text(json.dumps(meta))
    for call in (lambda: _sweep(engine, f, path), lambda: open_sweep(path), lambda: check(path)):
        with pytest.raises(
            StoreError, match="has format fedtheory-sweep-2, this fedtheory reads fedtheory-sweep-3"
        ):
            call()
    assert check(tmp_path / "copy").complete
