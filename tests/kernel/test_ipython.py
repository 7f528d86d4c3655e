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
from jupyter_client.manager import start_new_kernel

from helpers import collect, execute, result_text, shell_reply, strip_ansi


@pytest.fixture(scope="module")
def kc() -> Iterator[BlockingKernelClient]:
    km, client = start_new_kernel(kernel_name="devarray")
    yield client
    client.stop_channels()
    km.shutdown_kernel(now=True)


@pytest.fixture(scope="module")
def sim2() -> Iterator[BlockingKernelClient]:
    km, client = start_new_kernel(kernel_name="devarray-sim2")
    yield client
    client.stop_channels()
    km.shutdown_kernel(now=True)


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
    assert "Source:\ndef add(a, b=2):" in text, text
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
