"""The scripts of benchmarks/ load and parse their arguments.

They are run by hand (and their numbers go into the README), never by the test suite; this keeps
them from rotting between runs: a renamed module or function fails here, not on the next
measurement.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).parents[1] / "benchmarks").glob("*.py"))


def test_there_are_benchmarks():
    assert {p.stem for p in BENCHMARKS} >= {"bench_simulator", "bench_exact", "bench_sweep"}


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.stem)
def test_a_benchmark_imports_and_answers_help(path, monkeypatch, capsys):
    spec = importlib.util.spec_from_file_location(f"_bench_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    main = getattr(module, "main", None)
    assert callable(main), f"{path.name} has no main(argv)"
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    assert "usage:" in capsys.readouterr().out
