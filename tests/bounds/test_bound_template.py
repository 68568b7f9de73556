"""The bound format is learnable from the tool: ``fedtheory bound --help`` lists the spec's keys,
the ``[class]`` keys, the constants, the quantities and the functions from their one tables, and
``fedtheory bound --template [QUANTITY]`` prints a commented spec that, saved as a file, runs
as is and says what its worked example shows."""

from __future__ import annotations

import json
import tomllib

import pytest

from fedtheory.bounds import CONSTANTS, QUANTITIES, load_spec
from fedtheory.bounds.spec import CLASS_KEYS, FUNCTIONS, KEYS, REQUIRED, TEMPLATES, template
from fedtheory.cli import main


def _help(capsys) -> str:
    with pytest.raises(SystemExit):
        main(["bound", "--help"])
    return capsys.readouterr().out


def test_help_lists_every_key_constant_quantity_and_function(capsys):
    text = _help(capsys)
    lines = text.splitlines()
    for table in (KEYS, CLASS_KEYS, CONSTANTS, QUANTITIES):
        for name in table:  # each at the start of its own line, with its meaning
            assert any(line.startswith(f"  {name} ") for line in lines), name
    assert f"required: {', '.join(REQUIRED)}" in text
    assert all(f in text for f in FUNCTIONS)
    assert "default 'full'" in text and "default 1e-06" in text  # from BoundSpec's fields
    assert "docs/bounds.md" in text and "--template" in text


def test_every_quantity_has_a_template_and_an_unknown_one_is_refused(capsys):
    assert set(TEMPLATES) == set(QUANTITIES)
    assert main(["bound", "--template", "speed"]) == 2
    assert "invalid choice: 'speed'" in capsys.readouterr().err


def _saved(tmp_path, capsys, *flags: str):
    assert main(["bound", "--template", *flags]) == 0
    text = capsys.readouterr().out
    path = tmp_path / f"{flags[0] if flags else 'default'}.toml"
    path.write_text(text)
    return path, text


def test_the_default_template_saved_as_a_file_runs_as_is(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path, text = _saved(tmp_path, capsys)
    assert 'quantity = "mean_square_rate"' in text
    assert main(["bound", str(path), "--json", str(tmp_path / "out.json")]) == 0
    out = json.loads((tmp_path / "out.json").read_text())
    # gradient descent at eta = 1/L_f: the bound (1 - eta mu_f)^2 is its exact rate's maximum
    assert out["violated"] is False and out["worst"]["ratio"] == pytest.approx(1.0, abs=1e-9)
    assert "The example: gradient descent" in text and "with ratio 1" in text


@pytest.mark.parametrize(
    "quantity",
    [
        "mean_rate",
        "stationary_mse",
        "rounds_to",
        "mse_after_rounds",
        "f_minus_f_star_after_rounds",
        "grad_norm2_after_rounds",
    ],
)
def test_each_template_runs_and_does_what_it_says(quantity, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path, text = _saved(tmp_path, capsys, quantity)
    spec = load_spec(path)
    assert spec.quantity == quantity
    out_json = tmp_path / "out.json"
    assert main(["bound", str(path), "--search", "12", "--json", str(out_json)]) == 0
    out = json.loads(out_json.read_text())
    assert out["violated"] is False
    if quantity == "mean_rate":  # GD's mean rate is 1 - eta mu_f at eta = 1/L_f
        assert out["worst"]["ratio"] == pytest.approx(1.0, abs=1e-9)
    elif quantity == "stationary_mse":  # the free constant is reported
        assert out["implied_constant"]["value"] > 0
    else:
        assert out["worst"]["ratio"] <= 1


def test_the_template_shows_every_key_with_its_meaning():
    text = template("rounds_to")
    data = tomllib.loads(text)
    assert set(data) <= set(KEYS) and set(data["class"]) <= set(CLASS_KEYS)
    for name, key in KEYS.items():
        first = key.meaning.split()[0]
        assert f"# {first}" in text, name  # its meaning, on the comment line above it
        if name not in ("class", "options"):
            assert f"{name} = " in text  # set, or commented out with a value
    for name in CONSTANTS:
        assert f"#   {name} " in text
