"""What an IPython user expects of the notebook (issue 17), one test per item:
inspection (Shift+Tab) of the name under the cursor and of the callee inside
a call's parentheses, the `?` pager, tracebacks in IPython's form, skipped
cells without an execution count, `exit`, completion of modules, members and
keyword arguments, rich output in each dialect's words, progress bars,
`%transfers` in HTML and the no-GPU hint naming the simulated-GPU kernel."""

from __future__ import annotations

import re
from typing import Iterator

import pytest
from jupyter_client.blocking.client import BlockingKernelClient

from helpers import collect, execute, result_text, running_kernel, shell_reply, strip_ansi


@pytest.fixture(scope="module")
def kc() -> Iterator[BlockingKernelClient]:
    with running_kernel() as (_, client):
        yield client


@pytest.fixture(scope="module")
def sim2() -> Iterator[BlockingKernelClient]:
    with running_kernel("devarray-sim2") as (_, client):
        yield client


def inspect_text(kc: BlockingKernelClient, code: str, cursor: int, detail: int = 0) -> str | None:
    content = shell_reply(kc, kc.inspect(code, cursor_pos=cursor, detail_level=detail))["content"]
    assert content["status"] == "ok"
    return strip_ansi(content["data"]["text/plain"]) if content["found"] else None


def ok(kc: BlockingKernelClient, code: str) -> list[dict]:
    reply, outputs = execute(kc, code)
    assert reply["content"]["status"] == "ok", reply["content"]
    return outputs


def test_inspect_names_the_type_of_methods_and_attributes(kc: BlockingKernelClient) -> None:
    ok(kc, "x = ones(2, 3)")
    copyto = inspect_text(kc, "x.copyto", 8)
    assert copyto is not None and "Type:      method" in copyto and "Signature: x.copyto(" in copyto, copyto
    shape = inspect_text(kc, "x.shape", 7)
    assert shape is not None and "Type:        tuple" in shape and "(2, 3)" in shape, shape
    context = inspect_text(kc, "x.context", 9)
    assert context is not None and "Context" in context, context
    array = inspect_text(kc, "x", 1)
    assert array is not None
    for line in ("Type:        NDArray", "Shape:       (2, 3)", "Dtype:       float32", "Device:      cpu(0)"):
        assert line in array, array


@pytest.mark.parametrize(
    "code, cursor, signature",
    [
        ("ones(", 5, "Signature: ones("),
        ("import mxnet as mx\nmx.nd.ones(", 30, "Signature: ones("),
        ("x.copyto(", 9, "Signature: x.copyto("),
        ("ones(2, 3)", 8, "Signature: ones("),
    ],
)
def test_inspect_inside_a_call_shows_the_callee(kc: BlockingKernelClient, code: str, cursor: int, signature: str) -> None:
    ok(kc, "import mxnet as mx\nx = ones(2, 3)")
    text = inspect_text(kc, code, cursor)
    assert text is not None and text.startswith(signature), text


def test_question_mark_pages_help(kc: BlockingKernelClient) -> None:
    reply, _ = execute(kc, "ones?")
    payload = reply["content"]["payload"]
    assert [p["source"] for p in payload] == ["page"]
    assert strip_ansi(payload[0]["data"]["text/plain"]).startswith("Signature: ones(")
    ok(kc, 'def add(a, b=2):\n    """Add b to a."""\n    return a + b')
    reply, _ = execute(kc, "add??")
    text = strip_ansi(reply["content"]["payload"][0]["data"]["text/plain"])
    assert "Source:   \ndef add(a, b=2):" in text, text
    reply, outputs = execute(kc, "no_such_thing?")
    assert reply["content"]["payload"] == []
    assert [m["content"]["text"] for m in outputs if m["msg_type"] == "stream"] == ["Object `no_such_thing` not found.\n"]


def test_traceback_has_ipython_header_cell_frames_and_colour(kc: BlockingKernelClient) -> None:
    defined, _ = execute(kc, "def f(v):\n    return v + undefined_q")
    reply, _ = execute(kc, "1 + 1\nf(1)")
    n_def = defined["content"]["execution_count"]
    n_call = reply["content"]["execution_count"]
    tb = reply["content"]["traceback"]
    assert any("\x1b[" in line for line in tb), "the kernel colours tracebacks"
    plain = [strip_ansi(line) for line in tb]
    assert plain[0] == "-" * 75
    assert plain[1] == "NameError" + " " * 33 + "Traceback (most recent call last)"
    assert plain[2] == f"Cell In[{n_call}], line 2\n      1 1 + 1\n----> 2 f(1)\n"
    assert plain[3] == f"Cell In[{n_def}], line 2, in f\n      1 def f(v):\n----> 2     return v + undefined_q\n"
    assert plain[4] == "NameError: name 'undefined_q' is not defined"


def test_skipped_cells_have_no_execution_count(kc: BlockingKernelClient) -> None:
    failing = kc.execute("import time\ntime.sleep(0.5)\nundefined_for_abort")
    queued = kc.execute("1")
    assert shell_reply(kc, failing)["content"]["status"] == "error"
    content = shell_reply(kc, queued)["content"]
    assert content["status"] == "aborted"
    assert "execution_count" not in content, content
    collect(kc, queued)


@pytest.mark.parametrize("code", ["exit", "exit()", "quit", "quit()"])
def test_exit_asks_the_frontend_to_leave(kc: BlockingKernelClient, code: str) -> None:
    reply, _ = execute(kc, code)
    assert reply["content"]["status"] == "ok"
    assert reply["content"]["payload"] == [{"source": "ask_exit", "keepkernel": False}]
    # The kernel itself stays (the frontend shuts it down), as ipykernel does.
    assert result_text(ok(kc, "1 + 1")) == "2"


@pytest.mark.parametrize(
    "code, expected",
    [
        ("import mx", {"mxnet"}),
        ("from mxnet import n", {"nd", "np", "npx"}),
        ("import mxnet.n", {"nd", "np", "npx"}),
        ("ones(2, dt", {"dtype="}),
    ],
)
def test_completion_of_modules_members_and_keywords(kc: BlockingKernelClient, code: str, expected: set[str]) -> None:
    content = shell_reply(kc, kc.complete(code, cursor_pos=len(code)))["content"]
    assert expected <= set(content["matches"]), content["matches"]


def test_completion_of_attributes(kc: BlockingKernelClient) -> None:
    ok(kc, "x = ones(2, 3)")
    content = shell_reply(kc, kc.complete("x.as", cursor_pos=4))["content"]
    assert {"asnumpy", "as_in_context", "astype", "asscalar"} <= set(content["matches"]), content["matches"]


def test_progress_bar_is_html_updated_in_place_without_a_blank_line(kc: BlockingKernelClient) -> None:
    outputs = ok(
        kc,
        "from mxnet import gluon, nd\n"
        "loader = gluon.data.DataLoader(gluon.data.ArrayDataset(nd.arange(4)), batch_size=2)\n"
        "for X in gluon.utils.Progress(loader, 'epoch 0'):\n"
        "    pass",
    )
    shown = [m for m in outputs if m["msg_type"] in ("display_data", "update_display_data")]
    assert [m["msg_type"] for m in shown] == ["display_data", "update_display_data"]
    last = shown[-1]["content"]["data"]
    assert '<progress value="2" max="2"' in last["text/html"], last
    assert last["text/plain"].endswith("2/2")
    assert not [m for m in outputs if m["msg_type"] == "stream"], "no newline after the bar in a notebook"


def html_of(outputs: list[dict]) -> str:
    shown = [m for m in outputs if m["msg_type"] in ("execute_result", "display_data")]
    assert shown, outputs
    return shown[-1]["content"]["data"]["text/html"]


def test_rich_output_speaks_each_dialect(sim2: BlockingKernelClient) -> None:
    legacy = html_of(ok(sim2, "ones(2, 3) @ gpu(0)"))
    assert ">gpu(0)</span>" in legacy
    torch = html_of(ok(sim2, "import torch\ntorch.ones(2, 3, device='cuda:0')"))
    assert "device=&#39;cuda:0&#39;" in torch or "device='cuda:0'" in torch, torch
    assert "torch.float32" in torch and "gpu(0)" not in torch
    numpy = html_of(ok(sim2, "torch.ones(2, 3, device='cuda:0').cpu().numpy()"))
    assert "numpy.ndarray" in numpy and "cpu(0)" not in numpy and "badge" not in numpy
    npmode = ok(sim2, "from mxnet import np, npx\nnpx.set_np()\nnp.ones((2, 3), ctx=gpu(0))")
    assert result_text(npmode).endswith("ctx=gpu(0))")
    assert "ctx=gpu(0)" in html_of(npmode)
    ok(sim2, "npx.reset_np()")


def test_transfers_table_is_html_too(sim2: BlockingKernelClient) -> None:
    ok(sim2, "%transfers")
    outputs = ok(sim2, "a = ones(2, 3) @ gpu(0)\nb = a.copyto(gpu(1))\n%transfers")
    shown = [m for m in outputs if m["msg_type"] == "display_data"]
    assert len(shown) == 1, outputs
    data = shown[0]["content"]["data"]
    assert data["text/html"].startswith("<table") and "gpu(1)" in data["text/html"]
    assert "The transfer ledger has been reset." in data["text/plain"]


def test_device_tables_fit_80_columns(sim2: BlockingKernelClient) -> None:
    for code in ("%devices", "!nvidia-smi"):
        outputs = ok(sim2, code)
        text = "".join(
            m["content"]["text"] if m["msg_type"] == "stream" else m["content"]["data"]["text/plain"]
            for m in outputs
            if m["msg_type"] in ("stream", "display_data")
        )
        widest = max(len(line) for line in text.splitlines())
        assert widest <= 80, f"{code}: {widest} columns\n{text}"


def test_no_gpu_error_names_the_simulated_gpu_kernel(kc: BlockingKernelClient) -> None:
    reply, _ = execute(kc, "ones(2) @ gpu(0)")
    assert reply["content"]["status"] == "error"
    assert '"devarray (2 simulated GPUs)" kernel' in reply["content"]["evalue"], reply["content"]["evalue"]


def test_install_says_where_and_refuses_to_guess_a_prefix(kernel_binary, tmp_path) -> None:
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    refused = subprocess.run(
        [str(kernel_binary), "install", "--sys-prefix"], env=env, capture_output=True, text=True
    )
    assert refused.returncode != 0
    assert "will not guess" in refused.stderr, refused.stderr
    done = subprocess.run(
        [str(kernel_binary), "install", "--prefix", str(tmp_path)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    kernels = tmp_path / "share" / "jupyter" / "kernels"
    assert f"Installed kernelspec {kernels / 'devarray'}" in done.stdout
    assert f"Jupyter finds them in {kernels}" in done.stdout


def test_completion_carries_types_and_signatures(kc: BlockingKernelClient) -> None:
    content = shell_reply(kc, kc.complete("on", cursor_pos=2))["content"]
    types = {t["text"]: t for t in content["metadata"]["_jupyter_types_experimental"]}
    assert types["ones"]["type"] == "function"
    assert types["ones"]["signature"].startswith("(shape"), types["ones"]
    content = shell_reply(kc, kc.complete("ones(2, dt", cursor_pos=10))["content"]
    types = {t["text"]: t["type"] for t in content["metadata"]["_jupyter_types_experimental"]}
    assert types["dtype="] == "param"
    content = shell_reply(kc, kc.complete("import mx", cursor_pos=9))["content"]
    assert content["metadata"]["_jupyter_types_experimental"][0]["type"] == "module"


def test_help_question_mark_and_inspection_show_one_docstring(kc: BlockingKernelClient) -> None:
    outputs = ok(kc, "help(ones)")
    printed = "".join(m["content"]["text"] for m in outputs if m["msg_type"] == "stream").rstrip("\n")
    reply, _ = execute(kc, "ones?")
    paged = strip_ansi(reply["content"]["payload"][0]["data"]["text/plain"])
    inspected = inspect_text(kc, "ones", 4)
    assert printed == paged == inspected
    for section in ("Signature: ones(", "Docstring:\nAn array of ones.", "Parameters\n----------\n", "Example\n-------\n>>> "):
        assert section in printed, printed
