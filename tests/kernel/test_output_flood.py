"""Issue 29, findings 5 and 7: the kernel under abuse. Printed text is buffered into few stream
messages as ipykernel's OutStream does; `!cmd` output arrives whole, in order; user_expressions
are expressions only (a statement is a SyntaxError and changes nothing)."""

from __future__ import annotations

import time
from typing import Iterator

import pytest
import zmq
from jupyter_client.blocking.client import BlockingKernelClient

from helpers import collect, execute, running_kernel, shell_reply


@pytest.fixture(scope="module")
def kc() -> Iterator[BlockingKernelClient]:
    with running_kernel() as (_, client):
        yield client


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


def test_shell_output_is_streamed_not_hoarded() -> None:
    """Issue 29, finding 5: 100 MB of `!cmd` output reaches the client in chunks as it comes,
    and the kernel does not hold it all (it peaked at 2302 MiB for 200 MB)."""
    with running_kernel() as (km, client):
        pid = km.provisioner.pid
        execute(client, "1 + 1")
        before = peak_rss_mib(pid)
        n = 100_000
        _, outputs = execute(client, f"!yes {'x' * 999} | head -n {n}", timeout=600)
        streams = [m["content"]["text"] for m in outputs if m["msg_type"] == "stream"]
        assert sum(len(t) for t in streams) == n * 1000
        assert len(streams) > 10, "the output came in one piece, not as it was printed"
        grown = peak_rss_mib(pid) - before
        assert grown < 200, f"the kernel grew by {grown:.0f} MiB for 100 MB of shell output"


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


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM), in MiB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM line")


def test_a_subscriber_that_never_reads_cannot_grow_the_kernel() -> None:
    """Issue 29, finding 5: output queued for a client that never reads is bounded by that
    subscriber's high-water mark, as a zmq PUB socket bounds it: that client loses output past
    the mark, and every other client still gets all of it."""
    with running_kernel() as (km, kc):
        pid = km.provisioner.pid
        # A subscriber needs no key: this one subscribes to everything and never reads.
        stuck = zmq.Context.instance().socket(zmq.SUB)
        stuck.linger = 0
        stuck.setsockopt(zmq.RCVHWM, 1)
        stuck.setsockopt(zmq.RCVBUF, 4096)
        stuck.setsockopt(zmq.SUBSCRIBE, b"")
        stuck.connect(f"tcp://{km.ip}:{km.iopub_port}")
        time.sleep(0.5)
        execute(kc, "line = 'x' * 999")
        before = peak_rss_mib(pid)
        # 150 MB of output: far past the mark (32 MiB) and what the socket buffers hold.
        n = 150000
        reply, outputs = execute(kc, f"for i in range({n}):\n    print(line)", timeout=600)
        assert reply["content"]["status"] == "ok"
        grown = peak_rss_mib(pid) - before
        assert grown < 200, f"the kernel grew by {grown:.0f} MiB for an unread subscriber"
        stdout = "".join(
            m["content"]["text"]
            for m in outputs
            if m["msg_type"] == "stream" and m["content"]["name"] == "stdout"
        )
        # The client that reads lost nothing.
        assert len(stdout) == n * 1000, len(stdout)
        stderr = [m for m in outputs if m["msg_type"] == "stream" and m["content"]["name"] == "stderr"]
        assert stderr == []
        stuck.close()
        _, outputs = execute(kc, "print('after')")
        text = "".join(m["content"]["text"] for m in outputs if m["msg_type"] == "stream")
        assert text == "after\n", text[-500:]


def test_the_heartbeat_answers_while_a_cell_floods_output(kc: BlockingKernelClient) -> None:
    """The heartbeat runs on a thread of its own: a cell printing as fast as it can never
    delays a beat (a frontend would declare the kernel dead after a few seconds)."""
    km_hb_port = kc.hb_port
    msg_id = kc.execute("for i in range(300000):\n    print('flood', i)")
    beat = zmq.Context.instance().socket(zmq.REQ)
    beat.linger = 0
    beat.connect(f"tcp://{kc.ip}:{km_hb_port}")
    slowest = 0.0
    for i in range(20):
        started = time.monotonic()
        beat.send(f"ping-{i}".encode())
        assert beat.poll(5_000), f"no echo to ping {i} within 5 s"
        assert beat.recv() == f"ping-{i}".encode()
        slowest = max(slowest, time.monotonic() - started)
        time.sleep(0.05)
    beat.close()
    assert slowest < 1.0, f"a beat took {slowest:.2f}s"
    reply = shell_reply(kc, msg_id, timeout=600)
    assert reply["content"]["status"] == "ok"
    collect(kc, msg_id, timeout=600)


def test_a_peer_that_never_reads_its_echoes_cannot_stall_the_heartbeat(
    kc: BlockingKernelClient,
) -> None:
    """Issue 29, finding 7: a peer that sends pings and never reads the echoes (it needs no key)
    fills its queue in the kernel; the heartbeat must still answer every other client at once,
    as ipykernel's does (a frontend declares a kernel dead after a few missed beats)."""
    context = zmq.Context.instance()
    greedy = context.socket(zmq.DEALER)
    greedy.linger = 0
    greedy.setsockopt(zmq.RCVHWM, 1)
    greedy.setsockopt(zmq.RCVBUF, 4096)
    greedy.setsockopt(zmq.SNDTIMEO, 200)
    greedy.connect(f"tcp://{kc.ip}:{kc.hb_port}")
    ping = b"p" * 10_000
    sent = 0
    started = time.monotonic()
    # 200 MB of pings, or as many as the kernel takes in 10 s: far past what the socket buffers
    # and any queue of echoes hold.
    while sent < 20_000 and time.monotonic() - started < 10:
        try:
            greedy.send_multipart([b"", ping])
        except zmq.Again:
            break
        sent += 1
    assert sent > 1000, f"the kernel took only {sent} pings"
    beat = context.socket(zmq.REQ)
    beat.linger = 0
    beat.connect(f"tcp://{kc.ip}:{kc.hb_port}")
    slowest = 0.0
    for i in range(10):
        started = time.monotonic()
        beat.send(f"beat-{i}".encode())
        assert beat.poll(5_000), f"no echo to beat {i} within 5 s while a peer does not read"
        assert beat.recv() == f"beat-{i}".encode()
        slowest = max(slowest, time.monotonic() - started)
    beat.close()
    greedy.close()
    assert slowest < 1.0, f"a beat took {slowest:.2f}s"
    reply, _ = execute(kc, "1 + 1")
    assert reply["content"]["status"] == "ok"
