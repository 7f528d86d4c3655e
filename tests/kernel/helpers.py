"""Small helpers shared by the kernel tests."""

from __future__ import annotations

import re
import time
from contextlib import contextmanager
from typing import Any, Iterator

from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager, start_new_kernel

# What the `kernel` fixture (conftest.py) gives a test: the manager, to interrupt or restart
# the kernel, and a started client.
Kernel = tuple[KernelManager, BlockingKernelClient]

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text)


@contextmanager
def running_kernel(kernel_name: str = "devarray", **options: Any) -> Iterator[Kernel]:
    """A started kernel and its client, shut down on leaving (also when the test fails)."""
    km, kc = start_new_kernel(kernel_name=kernel_name, **options)
    try:
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def collect(kc: BlockingKernelClient, msg_id: str, timeout: float = 15) -> list[dict[str, Any]]:
    """IOPub messages caused by msg_id, up to and including its idle status."""
    deadline = time.monotonic() + timeout
    messages = []
    while True:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"no idle status for {msg_id} within {timeout}s; got {messages}"
        msg = kc.get_iopub_msg(timeout=remaining)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        messages.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return messages


def shell_reply(kc: BlockingKernelClient, msg_id: str, timeout: float = 15) -> dict[str, Any]:
    """The shell reply to msg_id, skipping replies to anything else."""
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"no shell reply to {msg_id} within {timeout}s"
        reply = kc.get_shell_msg(timeout=remaining)
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply


def execute(
    kc: BlockingKernelClient, code: str, timeout: float = 15, **options: Any
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run code; return its execute_reply and its IOPub messages (through idle)."""
    msg_id = kc.execute(code, **options)
    reply = shell_reply(kc, msg_id, timeout)
    return reply, collect(kc, msg_id, timeout)


def execute_ok(kc: BlockingKernelClient, code: str, timeout: float = 60) -> list[dict[str, Any]]:
    """Run code that must succeed; return its IOPub messages."""
    reply, outputs = execute(kc, code, timeout=timeout)
    assert reply["content"]["status"] == "ok", reply["content"]
    return outputs


def result_text(outputs: list[dict[str, Any]]) -> str | None:
    for msg in outputs:
        if msg["msg_type"] == "execute_result":
            return msg["content"]["data"]["text/plain"]
    return None
