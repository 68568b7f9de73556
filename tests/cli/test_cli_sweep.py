"""The ``fedtheory sweep`` contract (issue 15): summary JSON, resume, one-line errors (exit 2)."""

from __future__ import annotations

import json

import pytest

from fedtheory.cli import main

pytest.importorskip("xarray")

SPEC = """
problem = "quadratic"
algorithm = ["focus", "fedavg"]
lr = [0.01, 0.02]
local_steps = 2
rounds = 20
seeds = 3
"""


def _run(args, capsys):
    code = main(["sweep", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture()
def spec(tmp_path):
    f = tmp_path / "spec.toml"
    f.write_text(SPEC)
    return f


def test_summary_json_then_resume(spec, tmp_path, capsys):
    store = tmp_path / "store"
    code, out, err = _run(
        [str(spec), "--store", str(store), "--workers", "1", "--json", "-", "--no-progress"], capsys
    )
    assert code == 0, err
    summary = json.loads(out)
    assert {k: summary[k] for k in ("tasks_total", "tasks_skipped", "tasks_run")} == {
        "tasks_total": 4,
        "tasks_skipped": 0,
        "tasks_run": 4,
    }
    assert summary["store"] == str(store) and summary["seconds"] > 0
    assert summary["dims"] == {"algorithm": 2, "lr": 2, "seed": 3, "round": 21, "component": 20}
    code, out, err = _run([str(spec), "--store", str(store)], capsys)
    assert code == 0, err
    assert out.startswith("sweep: 4 tasks, 4 already in the store, 0 run in ")
    written = tmp_path / "out" / "summary.json"
    code, out, err = _run([str(spec), "--store", str(store), "--json", str(written)], capsys)
    assert code == 2 and "the folder" in err and "does not exist" in err  # never made silently
    written.parent.mkdir()
    code, out, _ = _run([str(spec), "--store", str(store), "--json", str(written)], capsys)
    assert code == 0 and out.startswith("sweep: 4 tasks")  # a file: the summary for a person
    assert json.loads(written.read_text())["tasks_skipped"] == 4


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("lr = [0.1,\n", "is not valid TOML"),
        (SPEC + "lrate = 0.1\n", "unknown key 'lrate' in "),
        (SPEC.replace("local_steps = 2", "local_steps = 0"), "key 'local_steps' in "),
        (SPEC.replace("rounds = 20", "rounds = [20, 40]"), "key 'rounds' in "),
        (SPEC + 'participation = "uniform"\n', "participation 'uniform' needs clients_per_round"),
    ],
)
def test_bad_specs_are_one_line(tmp_path, capsys, text, message):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    code, out, err = _run([str(f), "--store", str(tmp_path / "s")], capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err
    assert not (tmp_path / "s").exists()


def test_other_bad_input_is_one_line(spec, tmp_path, capsys):
    cases = [
        ([str(tmp_path / "none.toml"), "--store", str(tmp_path / "s")], "no such spec file"),
        ([str(spec), "--store", str(tmp_path / "s"), "--workers", "0"], "workers must be >= 1"),
        ([str(spec), "--store", str(spec / "s")], "cannot create the store"),
    ]
    for args, message in cases:
        code, _, err = _run(args, capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1 and message in err, err


def test_store_from_another_spec_is_one_line(spec, tmp_path, capsys):
    store = tmp_path / "store"
    assert _run([str(spec), "--store", str(store), "--workers", "1"], capsys)[0] == 0
    spec.write_text(SPEC.replace("lr = ", "rounds = 30\nlr = ").replace("rounds = 20\n", ""))
    code, _, err = _run([str(spec), "--store", str(store), "--workers", "1"], capsys)
    assert code == 2
    assert err.strip().splitlines() == [
        f"fedtheory: error: the store {store} was made from a different spec (it differs in "
        "rounds): give another --store, or the spec it was made from (its attribute "
        "fedtheory_spec)"
    ]


def test_raising_seeds_grows_the_store_and_a_block_change_says_what_to_set(spec, tmp_path, capsys):
    """The obvious edit, seeds = 3 -> 4 in a spec without seed_block, grows the store in its
    own blocks of 3; a seed_block that would move the stored seeds is one line saying which
    value to set."""
    store = tmp_path / "store"
    assert _run([str(spec), "--store", str(store), "--workers", "1"], capsys)[0] == 0
    spec.write_text(SPEC.replace("seeds = 3", "seeds = 6\nseed_block = 2"))
    code, _, err = _run([str(spec), "--store", str(store), "--workers", "1"], capsys)
    assert code == 2
    assert err.strip().splitlines() == [
        f"fedtheory: error: the store {store} was made from a different spec (it differs in "
        "seed_block, seeds): its tasks hold seed_block = 3 seeds each: set seed_block = 3 (or "
        "leave seed_block out: the store's is kept) to grow it from 3 to 6 seeds, or give "
        "another --store"
    ]
    spec.write_text(SPEC.replace("seeds = 3", "seeds = 6"))
    code, out, err = _run([str(spec), "--store", str(store), "--workers", "1"], capsys)
    assert code == 0 and "extending the store (seed 3 -> 6)" in err


def test_help_shows_an_example_spec_and_the_keys(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["sweep", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "every key given as a list is swept" in out and "seed_block = 10" in out
    assert "SLURMCluster" in out and "Keys: problem, problem_file, algorithm" in out
