"""The stdin channel: input(), getpass() and sys.stdin in a cell, answered by the client
(allow_stdin=True) or refused as ipykernel refuses them (allow_stdin=False); an interrupt while
the kernel waits for the answer."""

from __future__ import annotations

import time

import pytest
from jupyter_client.blocking.client import BlockingKernelClient

from helpers import Kernel, collect, execute, result_text, shell_reply


def stdout_text(outputs: list[dict]) -> str:
    return "".join(
        m["content"]["text"]
        for m in outputs
        if m["msg_type"] == "stream" and m["content"]["name"] == "stdout"
    )


def answer(kc: BlockingKernelClient, value: str) -> dict:
    """Waits for the kernel's input_request, answers it with value and returns the request."""
    request = kc.get_stdin_msg(timeout=10)
    assert request["msg_type"] == "input_request"
    kc.input(value)
    return request


def test_input_is_asked_of_the_client_and_answered(kernel: Kernel) -> None:
    _, kc = kernel
    msg_id = kc.execute("print('before')\nname = input('name? ')\nprint('hi', name)", allow_stdin=True)
    request = answer(kc, "Ada")
    assert request["content"] == {"prompt": "name? ", "password": False}
    assert request["parent_header"]["msg_id"] == msg_id
    assert shell_reply(kc, msg_id)["content"]["status"] == "ok"
    assert stdout_text(collect(kc, msg_id)) == "before\nhi Ada\n"
    _, outputs = execute(kc, "name")
    assert result_text(outputs) == "'Ada'"


def test_getpass_and_sys_stdin_go_through_the_channel(kernel: Kernel) -> None:
    _, kc = kernel
    msg_id = kc.execute("import getpass\nsecret = getpass.getpass()", allow_stdin=True)
    assert answer(kc, "hunter2")["content"] == {"prompt": "Password: ", "password": True}
    assert shell_reply(kc, msg_id)["content"]["status"] == "ok"
    msg_id = kc.execute("import sys\nline = sys.stdin.readline()", allow_stdin=True)
    assert answer(kc, "abc")["content"] == {"prompt": "", "password": False}
    assert shell_reply(kc, msg_id)["content"]["status"] == "ok"
    _, outputs = execute(kc, "secret, line")
    assert result_text(outputs) == "('hunter2', 'abc\\n')"
    # A prompt that is not a str is str()ed.
    msg_id = kc.execute("n = int(input(42))", allow_stdin=True)
    assert answer(kc, "7")["content"]["prompt"] == "42"
    assert shell_reply(kc, msg_id)["content"]["status"] == "ok"


def test_ctrl_d_is_eof_error(kernel: Kernel) -> None:
    _, kc = kernel
    msg_id = kc.execute("input()", allow_stdin=True)
    answer(kc, "\x04")
    content = shell_reply(kc, msg_id)["content"]
    # ipykernel raises a bare EOFError.
    assert (content["ename"], content["evalue"]) == ("EOFError", "")


@pytest.mark.parametrize(
    ("code", "caller"),
    [("input('x')", "raw_input"), ("import getpass\ngetpass.getpass()", "getpass")],
)
def test_without_allow_stdin_input_is_stdin_not_implemented(
    kernel: Kernel, code: str, caller: str
) -> None:
    _, kc = kernel
    reply, _ = execute(kc, code, allow_stdin=False)
    content = reply["content"]
    assert content["ename"] == "StdinNotImplementedError"
    assert content["evalue"] == (
        f"{caller} was called, but this frontend does not support input requests."
    )
    # It is a NotImplementedError, as IPython's class.
    reply, outputs = execute(
        kc,
        "try:\n    input()\nexcept NotImplementedError as e:\n    caught = type(e).__name__\ncaught",
        allow_stdin=False,
    )
    assert result_text(outputs) == "'StdinNotImplementedError'"
    # sys.stdin is then the kernel's own stdin, which nobody writes to: a read finds nothing.
    _, outputs = execute(kc, "import sys\nsys.stdin.readline()", allow_stdin=False)
    assert result_text(outputs) == "''"


def test_interrupt_while_waiting_for_input_keeps_variables(kernel: Kernel) -> None:
    km, kc = kernel
    assert execute(kc, "kept = 41")[0]["content"]["status"] == "ok"
    msg_id = kc.execute("kept = 0\nvalue = input('never answered? ')", allow_stdin=True)
    assert kc.get_stdin_msg(timeout=10)["msg_type"] == "input_request"
    started = time.monotonic()
    km.interrupt_kernel()
    content = shell_reply(kc, msg_id, timeout=5)["content"]
    assert time.monotonic() - started < 1.0
    assert (content["ename"], content["evalue"]) == ("KeyboardInterrupt", "Interrupted by user")
    _, outputs = execute(kc, "kept, 'value' in globals()")
    assert result_text(outputs) == "(0, False)"
    # The next request is answered normally (a late reply to the old one is dropped).
    msg_id = kc.execute("value = input()", allow_stdin=True)
    answer(kc, "later")
    assert shell_reply(kc, msg_id)["content"]["status"] == "ok"
    _, outputs = execute(kc, "value")
    assert result_text(outputs) == "'later'"
