"""Notebooks executed through the kernel with nbclient, as `jupyter execute` does."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

REPO = Path(__file__).resolve().parents[2]
TUTORIALS = sorted((REPO / "tutorials").glob("*.ipynb"))


def run(notebook: nbformat.NotebookNode, kernel_name: str = "devarray") -> nbformat.NotebookNode:
    client = NotebookClient(notebook, kernel_name=kernel_name, timeout=120)
    client.execute()
    return notebook


def test_a_small_notebook_runs_with_outputs_in_order() -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("x = ones(2, 3)"),
        nbformat.v4.new_code_cell('print("shape", x.shape)\nx.sum()'),
        nbformat.v4.new_code_cell("x"),
    ]
    run(notebook)
    first, second, third = notebook.cells
    assert first.outputs == []
    assert [o.output_type for o in second.outputs] == ["stream", "execute_result"]
    assert second.outputs[0].text == "shape (2, 3)\n"
    assert third.outputs[0].output_type == "execute_result"
    assert third.outputs[0].data["text/plain"] == "\n[[1. 1. 1.]\n [1. 1. 1.]]\n<NDArray 2x3 @cpu(0)>"
    assert "text/html" in third.outputs[0].data
    assert [c.execution_count for c in notebook.cells] == [1, 2, 3]


def test_an_error_stops_the_notebook_with_its_name() -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("undefined_in_notebook")]
    with pytest.raises(CellExecutionError) as failure:
        run(notebook)
    assert "NameError" in str(failure.value)


@pytest.mark.parametrize(
    "path",
    TUTORIALS or [pytest.param(None, marks=pytest.mark.skip(reason="tutorials/ has no notebooks yet"))],
    ids=lambda p: p.name if p else "none",
)
def test_tutorial_notebook_executes(path: Path | None) -> None:
    assert path is not None
    notebook = nbformat.read(path, as_version=4)
    kernel = notebook.metadata.get("kernelspec", {}).get("name", "devarray")
    run(notebook, kernel_name=kernel)
