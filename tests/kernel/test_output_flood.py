"""Issue 29, findings 5 and 7: the kernel under abuse. Printed text is buffered into few stream
messages as ipykernel's OutStream does; `!cmd` output arrives whole, in order; user_expressions
are expressions only (a statement is a SyntaxError and changes nothing)."""

from __future__ import annotations

from typing import Iterator

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import start_new_kernel

from helpers import execute


@pytest.fixture(scope="module")
def kc() -> Iterator[BlockingKernelClient]:
    km, client = start_new_kernel(kernel_name="devarray")
    yield client
    client.stop_channels()
    km.shutdown_kernel(now=True)


def test_a_print_loop_sends_few_stream_messages(kc: BlockingKernelClient) -> None:
    n = 20000
    reply, outputs = execute(kc, f"for i in range({n}):\n    print(i)", timeout=120)
    assert reply["content"]["status"] == "ok"
    streams = [m["content"] for m in outputs if m["msg_type"] == "stream"]
    assert "".join(s["text"] for s in streams) == "".join(f"{i}\n" for i in range(n))
    # ipykernel sends one message per 200 ms flush; one per print is the flood.
    assert len(streams) < n // 100, len(streams)


def test_stdout_stderr_and_displays_keep_their_order(kc: BlockingKernelClient) -> None:
    code = "import sys\nprint('a')\nprint('b', file=sys.stderr)\nprint('c')\n1 + 1"
    _, outputs = execute(kc, code)
    seen = [
        (m["msg_type"], m["content"].get("name"), m["content"].get("text"))
        for m in outputs
        if m["msg_type"] in ("stream", "execute_result")
    ]
    assert seen == [
        ("stream", "stdout", "a\n"),
        ("stream", "stderr", "b\n"),
        ("stream", "stdout", "c\n"),
        ("execute_result", None, None),
    ]


def test_shell_output_arrives_whole(kc: BlockingKernelClient) -> None:
    _, outputs = execute(kc, "!seq 1 50000", timeout=60)
    text = "".join(m["content"]["text"] for m in outputs if m["msg_type"] == "stream")
    assert text == "".join(f"{i}\n" for i in range(1, 50001))


def test_user_expressions_run_no_statements(kc: BlockingKernelClient) -> None:
    execute(kc, "keep = 1")
    reply, _ = execute(kc, "", silent=True, user_expressions={"s": "keep = 0", "e": "keep + 1"})
    expressions = reply["content"]["user_expressions"]
    assert expressions["s"]["status"] == "error"
    assert expressions["s"]["ename"] == "SyntaxError"
    assert expressions["s"]["evalue"] == "invalid syntax (<string>, line 1)"
    assert expressions["e"] == {"status": "ok", "data": {"text/plain": "2"}, "metadata": {}}
    reply, _ = execute(kc, "keep")
    assert reply["content"]["status"] == "ok"
    _, outputs = execute(kc, "keep")
    results = [m["content"]["data"]["text/plain"] for m in outputs if m["msg_type"] == "execute_result"]
    assert results == ["1"]
