"""Every notebook in notebooks/ runs top to bottom (nbclient, kernel python3 of this venv)."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
EXPECTED = {
    "01_spectral_gaps.ipynb",
    "02_participation_matrices.ipynb",
    "03_focus_vs_fedavg.ipynb",
    "04_local_steps_dilemma.ipynb",
}


def test_the_four_notebooks_are_there():
    assert EXPECTED <= {p.name for p in NOTEBOOKS}


def test_notebooks_are_committed_without_outputs():
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert not cell.outputs and cell.execution_count is None, path.name


#: A first cell that makes the test extra unimportable in the kernel: the notebooks must run
#: with the nn and sweep extras and Jupyter only (hypothesis and pytest come with 'test').
WITHOUT_TEST_EXTRA = "import sys\nsys.modules.update({'hypothesis': None, 'pytest': None})"


def test_notebooks_state_their_run_time():
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        assert "*Run time: about " in nb.cells[0].source, path.name
        assert "ran in" in nb.cells[-1].source and "_started" in nb.cells[1].source, path.name


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path, tmp_path, monkeypatch):
    """Each notebook runs without the test extra, prints no TqdmWarning ("IProgress not
    found": tqdm.auto without ipywidgets) and ends by printing its run time."""
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.delenv("FEDTHEORY_NO_PROGRESS", raising=False)  # as a reader runs it
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(WITHOUT_TEST_EXTRA))
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=120,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()  # raises CellExecutionError naming the failing cell
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs)
    assert "TqdmWarning" not in text and "IProgress not found" not in text
    assert "this notebook ran in" in "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    assert os.environ.get("MPLBACKEND") == "Agg"


def test_the_kernel_guard_blocks_the_test_extra(tmp_path):
    """The guard above is real: a cell importing hypothesis after it fails."""
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(WITHOUT_TEST_EXTRA),
            nbformat.v4.new_code_cell("import hypothesis"),
        ]
    )
    client = NotebookClient(
        nb, kernel_name="python3", timeout=60, resources={"metadata": {"path": str(tmp_path)}}
    )
    with pytest.raises(CellExecutionError, match="ModuleNotFoundError|ImportError"):
        client.execute()
