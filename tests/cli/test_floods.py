"""Commands answer in a screenful: equal rows are summarized, long tables cut with a count, and
a bare command that would run for a minute says what to give instead."""

from __future__ import annotations

import json

import pytest

from fedtheory.cli import main


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_equal_rows_are_one_row_with_a_count(capsys):
    code, out, _ = _run(capsys, "participation", "uniform", "-N", "1000", "-M", "10")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 4  # title, methods, header, one row for 1,000 clients
    assert lines[-1].split()[0] == "0-999" and lines[-1].endswith("(1000 clients)")
    assert "0.001" in lines[-1]
    code, out, _ = _run(capsys, "participation", "uniform", "-N", "1000", "-M", "10", "--all-rows")
    assert code == 0 and len(out.splitlines()) == 1003


def test_long_tables_of_different_rows_show_their_ends(capsys):
    argv = ("participation", "markov", "-N", "60", "-M", "3")
    code, out, _ = _run(capsys, *argv)
    lines = out.splitlines()
    assert code == 0 and len(lines) == 3 + 10 + 1 + 10
    assert lines[13].split()[0] == "..." and "40 clients not shown" in lines[13]
    assert lines[3].split()[0] == "0" and lines[-1].split()[0] == "59"
    code, out, _ = _run(capsys, *argv, "--json", "-")
    assert len(json.loads(out)["q_weighted"]) == 60  # the JSON has every client


def test_bare_spectral_answers_at_once_with_what_to_give(capsys, monkeypatch):
    def too_slow(*a, **k):
        raise AssertionError("the papers' tables were computed")

    monkeypatch.setattr("fedtheory.graphs.conditions.evaluate_setting", too_slow)
    monkeypatch.setattr("fedtheory.graphs.conditions.paper_values", too_slow)
    code, out, err = _run(capsys, "spectral")
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert "--report" in line and "TOPOLOGY -N N" in line
    with pytest.raises(AssertionError, match="tables were computed"):
        main(["spectral", "--report"])  # the tables are still there when asked for
