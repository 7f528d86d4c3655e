"""Robustness and security: signatures, malformed frames, interrupt, shutdown
while busy, heartbeat, parent death and the listening address."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import zmq
from jupyter_client.connect import write_connection_file
from jupyter_client.manager import KernelManager
from jupyter_client.session import Session

from helpers import Kernel, execute, result_text, shell_reply

BUSY_LOOP = "counter = 0\nwhile True:\n    counter += 1\n"


def dealer(km: KernelManager, port: int) -> zmq.Socket:
    socket = zmq.Context.instance().socket(zmq.DEALER)
    socket.linger = 0
    socket.connect(f"tcp://{km.ip}:{port}")
    return socket


def assert_still_answers(km: KernelManager, socket: zmq.Socket) -> None:
    """A correctly signed kernel_info_request on `socket` gets its reply."""
    good = Session(key=km.session.key, signature_scheme="hmac-sha256")
    request = good.send(socket, "kernel_info_request", {})
    assert socket.poll(10_000), "the kernel stopped answering after the bad messages"
    _, reply = good.recv(socket)
    assert reply["msg_type"] == "kernel_info_reply"
    assert reply["parent_header"]["msg_id"] == request["header"]["msg_id"]


@pytest.mark.parametrize("channel", ["shell", "control"])
def test_badly_signed_and_unsigned_messages_are_dropped(kernel: Kernel, channel: str) -> None:
    km, _ = kernel
    socket = dealer(km, km.shell_port if channel == "shell" else km.control_port)
    forger = Session(key=b"not-the-connection-key", signature_scheme="hmac-sha256")
    forger.send(socket, "kernel_info_request", {})
    forger.send(socket, "execute_request", {"code": "forged = 1", "silent": False,
                                            "store_history": True, "user_expressions": {},
                                            "allow_stdin": False, "stop_on_error": True})
    unsigned = Session(key=b"")
    unsigned.send(socket, "kernel_info_request", {})
    assert socket.poll(1_000) == 0, "the kernel answered a message it could not authenticate"
    assert_still_answers(km, socket)
    socket.close()


def test_forged_execute_request_does_not_run(kernel: Kernel) -> None:
    km, kc = kernel
    socket = dealer(km, km.shell_port)
    forger = Session(key=b"not-the-connection-key", signature_scheme="hmac-sha256")
    forger.send(socket, "execute_request", {"code": "forged = 1", "silent": False,
                                            "store_history": True, "user_expressions": {},
                                            "allow_stdin": False, "stop_on_error": True})
    time.sleep(0.5)
    reply, _ = execute(kc, "forged")
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "NameError"
    socket.close()


def test_malformed_frames_are_survived(kernel: Kernel) -> None:
    km, _ = kernel
    good = Session(key=km.session.key, signature_scheme="hmac-sha256")
    for port in (km.shell_port, km.control_port):
        socket = dealer(km, port)
        socket.send_multipart([b"garbage"])
        socket.send_multipart([b"<IDS|MSG>"])
        socket.send_multipart([b"<IDS|MSG>", b"deadbeef", b"{}", b"{}"])
        socket.send_multipart([b"<IDS|MSG>", b"zz-not-hex", b"{}", b"{}", b"{}", b"{}"])
        # Correctly signed, but the JSON inside is broken or incomplete.
        for parts in ([b"{not json", b"{}", b"{}", b"{}"],
                      [good.pack(good.msg_header("execute_request")), b"{}", b"{}", b"{}"]):
            signature = good.sign(parts)
            socket.send_multipart([b"<IDS|MSG>", signature, *parts])
        assert socket.poll(500) == 0
        assert_still_answers(km, socket)
        socket.close()


@pytest.mark.parametrize("channel", ["shell", "control"])
def test_a_replayed_signed_message_is_dropped(kernel: Kernel, channel: str) -> None:
    """As ipykernel keeps a digest history: the same correctly signed frames sent again run once."""
    km, kc = kernel
    assert execute(kc, "hits = 0")[0]["content"]["status"] == "ok"
    socket = dealer(km, km.shell_port if channel == "shell" else km.control_port)
    good = Session(key=km.session.key, signature_scheme="hmac-sha256")
    if channel == "shell":
        msg = good.msg("execute_request", {"code": "hits += 1", "silent": False,
                                            "store_history": True, "user_expressions": {},
                                            "allow_stdin": False, "stop_on_error": True})
    else:
        msg = good.msg("kernel_info_request", {})
    frames = good.serialize(msg)
    socket.send_multipart(frames)
    assert socket.poll(10_000), "the first copy must be answered"
    good.recv(socket)
    socket.send_multipart(frames)
    assert socket.poll(1_000) == 0, "the kernel answered a replayed message"
    _, outputs = execute(kc, "hits")
    assert result_text(outputs) == ("1" if channel == "shell" else "0")
    assert_still_answers(km, socket)
    socket.close()


def test_deep_values_and_long_chains_keep_the_kernel_alive(kernel: Kernel) -> None:
    """The evaluation thread has the REPL's limits: deep values and long chains end in
    RecursionError (or a value), never in a dead kernel."""
    _, kc = kernel
    code = "a = []\nt = ()\nfor i in range(200000):\n    a = [a]\n    t = (t,)\n"
    assert execute(kc, code, timeout=120)[0]["content"]["status"] == "ok"
    for expr in ("a == a[0]", "hash(t)", "repr(a)", "x = 1" + " + 1" * 3000):
        reply, _ = execute(kc, expr)
        assert reply["content"]["status"] == "error", expr
        assert reply["content"]["ename"] == "RecursionError", expr
    assert execute(kc, "x = 1" + " + 1" * 2989)[0]["content"]["status"] == "ok"
    assert execute(kc, "a = 0\nt = 0")[0]["content"]["status"] == "ok"
    _, outputs = execute(kc, "x")
    assert result_text(outputs) == "2990"


def test_heartbeat_echoes(kernel: Kernel) -> None:
    km, _ = kernel
    socket = zmq.Context.instance().socket(zmq.REQ)
    socket.linger = 0
    socket.connect(f"tcp://{km.ip}:{km.hb_port}")
    socket.send(b"ping-123")
    assert socket.poll(5_000)
    assert socket.recv() == b"ping-123"
    socket.close()


def test_interrupt_stops_a_busy_loop_within_a_second_and_keeps_variables(kernel: Kernel) -> None:
    km, kc = kernel
    assert execute(kc, "kept = 41")[0]["content"]["status"] == "ok"
    msg_id = kc.execute(BUSY_LOOP)
    time.sleep(0.5)
    started = time.monotonic()
    km.interrupt_kernel()
    reply = shell_reply(kc, msg_id, timeout=5)
    elapsed = time.monotonic() - started
    assert elapsed < 1.0, f"the interrupt took {elapsed:.2f}s"
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    _, outputs = execute(kc, "kept + 1")
    assert result_text(outputs) == "42"
    _, outputs = execute(kc, "counter > 0")
    assert result_text(outputs) == "True"


@pytest.mark.parametrize("code", ["!sleep 30", "c = ones(6000, 6000)\nd = c @ c\nd = c @ c\nd = c @ c"])
def test_interrupt_stops_a_shell_command_and_a_cpu_kernel(kernel: Kernel, code: str) -> None:
    km, kc = kernel
    assert execute(kc, "kept = 41")[0]["content"]["status"] == "ok"
    msg_id = kc.execute(code)
    time.sleep(1.0)
    started = time.monotonic()
    km.interrupt_kernel()
    reply = shell_reply(kc, msg_id, timeout=20)
    elapsed = time.monotonic() - started
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    assert elapsed < 10.0, f"the interrupt took {elapsed:.2f}s"
    _, outputs = execute(kc, "kept + 1")
    assert result_text(outputs) == "42"


def test_interrupt_while_idle_does_not_hit_the_next_cell(kernel: Kernel) -> None:
    km, kc = kernel
    km.interrupt_kernel()
    time.sleep(0.2)
    _, outputs = execute(kc, "1 + 1")
    assert result_text(outputs) == "2"


def test_shutdown_is_answered_while_a_cell_runs(kernel: Kernel) -> None:
    km, kc = kernel
    kc.execute(BUSY_LOOP)
    time.sleep(0.3)
    msg = kc.session.msg("shutdown_request", {"restart": False})
    kc.control_channel.send(msg)
    reply = kc.get_control_msg(timeout=5)
    assert reply["parent_header"]["msg_id"] == msg["header"]["msg_id"]
    assert reply["content"] == {"status": "ok", "restart": False}
    deadline = time.monotonic() + 5
    while km.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not km.is_alive(), "the kernel did not exit after shutdown_request"


def _connection_file(tmp_path: Path) -> tuple[str, dict]:
    path, info = write_connection_file(str(tmp_path / "connection.json"), ip="127.0.0.1",
                                       key=b"a-test-key")
    return path, info


def test_kernel_exits_when_its_parent_dies(kernel_binary: Path, tmp_path: Path) -> None:
    path, _ = _connection_file(tmp_path)
    # A parent that starts the kernel, reports its pid, then waits to be killed.
    parent_code = textwrap.dedent(
        f"""
        import subprocess, sys, time
        child = subprocess.Popen([{str(kernel_binary)!r}, "run", "--connection-file", {path!r}])
        print(child.pid, flush=True)
        time.sleep(60)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", parent_code], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    kernel_pid = int(parent.stdout.readline())
    try:
        time.sleep(0.5)
        assert Path(f"/proc/{kernel_pid}").exists() or sys.platform != "linux"
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=5)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                os.kill(kernel_pid, 0)
            except ProcessLookupError:
                return
            # Reap it if it became our zombie (it is not our child, so usually not).
            time.sleep(0.1)
        pytest.fail("the kernel kept running after its parent was killed")
    finally:
        try:
            os.kill(kernel_pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/net/tcp")
def test_listens_only_on_the_connection_address(kernel_binary: Path, tmp_path: Path) -> None:
    path, info = _connection_file(tmp_path)
    process = subprocess.Popen([str(kernel_binary), "run", "--connection-file", path])
    try:
        ports = {info[name] for name in ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")}
        listening: dict[int, str] = {}
        deadline = time.monotonic() + 10
        while set(listening) != ports and time.monotonic() < deadline:
            time.sleep(0.1)
            listening = {}
            for table in ("/proc/net/tcp", "/proc/net/tcp6"):
                for line in Path(table).read_text().splitlines()[1:]:
                    fields = line.split()
                    address, port_hex = fields[1].rsplit(":", 1)
                    if fields[3] == "0A" and int(port_hex, 16) in ports:  # 0A = LISTEN
                        listening[int(port_hex, 16)] = address
        assert set(listening) == ports, f"not all ports are listening: {listening}"
        # 127.0.0.1 in /proc's little-endian hex.
        assert set(listening.values()) == {"0100007F"}, listening
    finally:
        process.kill()
        process.wait(timeout=5)


def test_bad_connection_file_is_a_clear_error(kernel_binary: Path, tmp_path: Path) -> None:
    missing = subprocess.run([str(kernel_binary), "run", "--connection-file", str(tmp_path / "nope.json")],
                             capture_output=True, text=True, timeout=10)
    assert missing.returncode == 1
    assert missing.stderr.startswith("devarray-kernel: error: cannot read the connection file ")
    broken = tmp_path / "broken.json"
    broken.write_text("{}")
    result = subprocess.run([str(kernel_binary), "run", "-f", str(broken)],
                            capture_output=True, text=True, timeout=10)
    assert result.returncode == 1
    assert "is not a Jupyter connection file: missing field" in result.stderr
    scheme = tmp_path / "scheme.json"
    path, info = _connection_file(tmp_path)
    info = dict(info, signature_scheme="hmac-md5", key=info["key"].decode() if isinstance(info["key"], bytes) else info["key"])
    scheme.write_text(json.dumps(info))
    result = subprocess.run([str(kernel_binary), "run", "-f", str(scheme)],
                            capture_output=True, text=True, timeout=10)
    assert result.returncode == 1
    assert 'supports only "hmac-sha256"' in result.stderr
