"""Notebooks executed through the kernel with nbclient, as `jupyter execute` does.

Every notebook in tutorials/ is executed on the kernel its metadata names
(devarray-sim2) and its fresh outputs are compared with the outputs stored in
the file: stream text and the text/plain of results and displays, and the
ename/evalue of errors. Cells tagged `nondeterministic-output` (timings, the
machine's device table) are run but not compared, and durations such as
`16.6 ms` are masked everywhere. The kernel runs with DEVARRAY_DETERMINISTIC=1, so
`%transfers` tables have no time column and their counts are compared.

After a change that alters what a tutorial prints, review and store the new
outputs with `NOTEBOOKS=overwrite bash tests/kernel/run.sh -k tutorial`
(then check `git diff tutorials/`).
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from helpers import execute, running_kernel

REPO = Path(__file__).resolve().parents[2]
TUTORIALS = sorted((REPO / "tutorials").glob("*.ipynb"))

VARIES = "nondeterministic-output"
RAISES = "raises-exception"
TUTORIAL_KERNEL = "devarray-sim2"
DURATION = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ns|us|µs|ms|s)\b")


def run(notebook: nbformat.NotebookNode, kernel_name: str = "devarray") -> nbformat.NotebookNode:
    # No per-cell timestamps: stored notebooks change only when outputs do.
    client = NotebookClient(notebook, kernel_name=kernel_name, timeout=120, record_timing=False)
    # DEVARRAY_DETERMINISTIC leaves the time column out of %transfers, as in the transcripts, so
    # its copy counts and bytes can be compared; timings belong in nondeterministic-output cells.
    client.execute(env={**os.environ, "DEVARRAY_DETERMINISTIC": "1"})
    return notebook


def comparable(cell: nbformat.NotebookNode) -> list[tuple[str, ...]]:
    """What must stay the same when the cell runs again."""
    seen: list[tuple[str, ...]] = []
    for output in cell.get("outputs", []):
        kind = output["output_type"]
        if kind == "stream":
            text = DURATION.sub("<duration>", output["text"])
            # Consecutive stream messages of one name are one piece of text.
            if seen and seen[-1][0] == "stream" and seen[-1][1] == output["name"]:
                seen[-1] = ("stream", output["name"], seen[-1][2] + text)
            else:
                seen.append(("stream", output["name"], text))
        elif kind in ("execute_result", "display_data"):
            seen.append((kind, DURATION.sub("<duration>", output["data"].get("text/plain", ""))))
        elif kind == "error":
            seen.append(("error", output["ename"], output["evalue"]))
    return seen


def tags(cell: nbformat.NotebookNode) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def uses_torch(notebook: nbformat.NotebookNode) -> bool:
    return any(
        cell.cell_type == "code" and re.search(r"^\s*import torch\b", cell.source, re.MULTILINE)
        for cell in notebook.cells
    )


@functools.cache
def kernel_has_torch(kernel_name: str) -> bool:
    """Whether the kernel's build has the PyTorch dialect: it was written
    beside these tests, and its notebook can only run once both are merged."""
    with running_kernel(kernel_name) as (_, kc):
        reply, _ = execute(kc, "import torch")
        content = reply["content"]
        if content["status"] == "ok":
            return True
        assert content["ename"] == "ModuleNotFoundError", content
        return False


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


def test_a_cell_tagged_raises_exception_lets_the_notebook_go_on() -> None:
    notebook = nbformat.v4.new_notebook()
    failing = nbformat.v4.new_code_cell("ones(2) @ gpu(0) + ones(2)")
    failing.metadata["tags"] = [RAISES]
    notebook.cells = [failing, nbformat.v4.new_code_cell("1 + 1")]
    run(notebook, kernel_name=TUTORIAL_KERNEL)
    assert comparable(failing) == [(
        "error",
        "DeviceError",
        "add: inputs are on different devices: the first is on gpu(0), the second on cpu(0). "
        "Move one explicitly, e.g. x.copyto(cpu(0)) or y.as_in_context(gpu(0))",
    )]
    assert comparable(notebook.cells[1]) == [("execute_result", "2")]


def test_comparable_masks_durations_and_joins_streams() -> None:
    cell = nbformat.v4.new_code_cell("")
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="took 16.6 ms\n"),
        nbformat.v4.new_output("stream", name="stdout", text="and 2 s"),
        nbformat.v4.new_output("execute_result", data={"text/plain": "3", "text/html": "<b>3</b>"},
                               execution_count=1),
        nbformat.v4.new_output("error", ename="E", evalue="v", traceback=["x"]),
    ]
    assert comparable(cell) == [
        ("stream", "stdout", "took <duration>\nand <duration>"),
        ("execute_result", "3"),
        ("error", "E", "v"),
    ]


@pytest.mark.parametrize(
    "path",
    TUTORIALS or [pytest.param(None, marks=pytest.mark.skip(reason="tutorials/ has no notebooks yet"))],
    ids=lambda p: p.name if p else "none",
)
def test_tutorial_notebook_executes_with_its_stored_outputs(path: Path | None) -> None:
    assert path is not None
    stored = nbformat.read(path, as_version=4)
    kernel = stored.metadata.get("kernelspec", {}).get("name")
    assert kernel == TUTORIAL_KERNEL, f"{path.name}: kernelspec is {kernel!r}, not {TUTORIAL_KERNEL!r}"
    if uses_torch(stored) and not kernel_has_torch(kernel):
        pytest.skip(f"{path.name} needs the PyTorch dialect (`import torch`), which this build lacks")
    executed = run(nbformat.read(path, as_version=4), kernel_name=kernel)

    if os.environ.get("NOTEBOOKS") == "overwrite":
        nbformat.write(executed, path)
        return

    stored_cells = [c for c in stored.cells if c.cell_type == "code"]
    executed_cells = [c for c in executed.cells if c.cell_type == "code"]
    for number, (before, after) in enumerate(zip(stored_cells, executed_cells), start=1):
        source = before.source
        assert before.get("outputs") or not after.get("outputs"), (
            f"{path.name}, code cell {number} has no stored outputs; store them with "
            "NOTEBOOKS=overwrite bash tests/kernel/run.sh -k tutorial\n" + source
        )
        errors = [o for o in after.outputs if o["output_type"] == "error"]
        assert bool(errors) == (RAISES in tags(before)), (
            f"{path.name}, code cell {number}: an error must come exactly from the cells tagged "
            f"{RAISES!r}\n{source}"
        )
        if VARIES in tags(before):
            continue
        assert comparable(after) == comparable(before), f"{path.name}, code cell {number}:\n{source}"
