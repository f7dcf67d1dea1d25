"""The notebooks run top to bottom, offline on CPU (their own asserts check the claims they make)."""

import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert {p.name for p in NOTEBOOKS} >= {"quickstart.ipynb", "advantage_explorer.ipynb"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
@pytest.mark.slow
def test_notebook_runs(path, tmp_path):
    copy = shutil.copy(path, tmp_path / path.name)
    notebook = nbformat.read(copy, as_version=4)
    NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    images = [o for c in notebook.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert images, "the notebook drew no figure"
    assert not [o for c in notebook.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
