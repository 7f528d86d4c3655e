"""Protocol behaviour beyond the official suite: exact error content, execution
counts, streaming, inspect of user values, comms, user_expressions, the
stop-on-error queue and the simulated-GPU kernelspec."""

from __future__ import annotations

import time
from typing import Iterator

import pytest
from jupyter_client.blocking.client import BlockingKernelClient

from helpers import collect, execute, result_text, running_kernel, shell_reply, strip_ansi


@pytest.fixture(scope="module")
def kc() -> Iterator[BlockingKernelClient]:
    with running_kernel() as (_, client):
        yield client


def test_error_is_in_the_reply_and_on_iopub(kc: BlockingKernelClient) -> None:
    reply, outputs = execute(kc, "q")
    content = reply["content"]
    assert content["status"] == "error"
    assert (content["ename"], content["evalue"]) == ("NameError", "name 'q' is not defined")
    errors = [m for m in outputs if m["msg_type"] == "error"]
    assert len(errors) == 1
    error = errors[0]["content"]
    assert (error["ename"], error["evalue"]) == ("NameError", "name 'q' is not defined")
    assert error["traceback"] == content["traceback"]
    assert strip_ansi(error["traceback"][-1]) == "NameError: name 'q' is not defined"


def test_execution_count_and_execute_input(kc: BlockingKernelClient) -> None:
    first, outputs = execute(kc, "1")
    second, _ = execute(kc, "1")
    assert second["content"]["execution_count"] == first["content"]["execution_count"] + 1
    inputs = [m for m in outputs if m["msg_type"] == "execute_input"]
    assert [m["content"] for m in inputs] == [
        {"code": "1", "execution_count": first["content"]["execution_count"]}
    ]
    # Silent cells neither count nor announce themselves.
    silent, silent_outputs = execute(kc, "1", silent=True)
    assert silent["content"]["execution_count"] == second["content"]["execution_count"]
    assert [m["msg_type"] for m in silent_outputs] == ["status", "status"]
    assert execute(kc, "1")[0]["content"]["execution_count"] == second["content"]["execution_count"] + 1


def test_busy_first_and_idle_last(kc: BlockingKernelClient) -> None:
    _, outputs = execute(kc, 'print("a")\n1 + 1')
    states = [m["content"]["execution_state"] for m in outputs if m["msg_type"] == "status"]
    assert states == ["busy", "idle"]
    assert outputs[0]["msg_type"] == "status" and outputs[-1]["msg_type"] == "status"


def test_stdout_streams_while_the_cell_runs(kc: BlockingKernelClient) -> None:
    msg_id = kc.execute('import time\nprint("first")\ntime.sleep(1.5)\nprint("second")')
    arrived = {}
    deadline = time.monotonic() + 15
    while "idle" not in arrived and time.monotonic() < deadline:
        msg = kc.get_iopub_msg(timeout=15)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            arrived.setdefault(msg["content"]["text"].strip(), time.monotonic())
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            arrived["idle"] = time.monotonic()
    shell_reply(kc, msg_id)
    assert "first" in arrived and "second" in arrived, arrived
    assert arrived["second"] - arrived["first"] > 1.0, "stdout was held back until the cell ended"


def test_execute_result_carries_html_for_arrays(kc: BlockingKernelClient) -> None:
    _, outputs = execute(kc, "ones(2, 3)")
    results = [m["content"] for m in outputs if m["msg_type"] == "execute_result"]
    assert len(results) == 1
    assert results[0]["data"]["text/plain"] == "\n[[1. 1. 1.]\n [1. 1. 1.]]\n<NDArray 2x3 @cpu(0)>"
    assert "<table" in results[0]["data"]["text/html"]
    assert results[0]["transient"] == {}


def test_progress_bar_updates_one_output_in_place(kc: BlockingKernelClient) -> None:
    code = (
        "from mxnet import gluon\n"
        "p = gluon.utils.Progress(3, desc='epoch')\n"
        "for i in range(3):\n"
        "    p.update()\n"
        "p.close()"
    )
    _, outputs = execute(kc, code)
    shown = [m for m in outputs if m["msg_type"] in ("display_data", "update_display_data")]
    assert [m["msg_type"] for m in shown] == ["display_data", "update_display_data", "update_display_data"]
    ids = {m["content"]["transient"]["display_id"] for m in shown}
    assert len(ids) == 1, ids
    assert shown[-1]["content"]["data"]["text/plain"] == "epoch [" + "#" * 30 + "] 3/3"
    assert not [m for m in outputs if m["msg_type"] == "stream"], "no \\r lines in a notebook"


def test_only_the_last_expression_is_a_result(kc: BlockingKernelClient) -> None:
    _, outputs = execute(kc, "1 + 1\n2 + 2")
    assert [m["content"]["data"]["text/plain"] for m in outputs if m["msg_type"] == "execute_result"] == ["4"]


def test_inspect_shows_shape_dtype_and_device_of_user_values(kc: BlockingKernelClient) -> None:
    reply, _ = execute(kc, "inspected = ones(2, 3)")
    assert reply["content"]["status"] == "ok"
    msg_id = kc.inspect("inspected", cursor_pos=len("inspected"))
    content = shell_reply(kc, msg_id)["content"]
    assert content["status"] == "ok" and content["found"]
    text = content["data"]["text/plain"]
    for fact in ("(2, 3)", "float32", "cpu(0)"):
        assert fact in text, f"{fact!r} missing from inspect text {text!r}"


def test_inspect_unknown_name_is_not_found(kc: BlockingKernelClient) -> None:
    msg_id = kc.inspect("no_such_name_anywhere", cursor_pos=5)
    content = shell_reply(kc, msg_id)["content"]
    assert content == {"status": "ok", "found": False, "data": {}, "metadata": {}}


def test_is_complete_suggests_indent(kc: BlockingKernelClient) -> None:
    msg_id = kc.is_complete("for i in range(3):")
    content = shell_reply(kc, msg_id)["content"]
    assert content == {"status": "incomplete", "indent": "    "}


def test_complete_cursor_counts_code_points(kc: BlockingKernelClient) -> None:
    code = "é = 1\nnum_gp"
    msg_id = kc.complete(code, cursor_pos=len(code))
    content = shell_reply(kc, msg_id)["content"]
    assert content["matches"] == ["num_gpus"]
    assert (content["cursor_start"], content["cursor_end"]) == (len(code) - len("num_gp"), len(code))


def test_comm_info_and_comm_open(kc: BlockingKernelClient) -> None:
    msg_id = kc.comm_info()
    assert shell_reply(kc, msg_id)["content"] == {"status": "ok", "comms": {}}
    msg = kc.session.msg("comm_open", {"comm_id": "c-1", "target_name": "nope", "data": {}})
    kc.shell_channel.send(msg)
    outputs = collect(kc, msg["header"]["msg_id"])
    closes = [m["content"] for m in outputs if m["msg_type"] == "comm_close"]
    assert closes == [{"comm_id": "c-1", "data": {}}]


def test_kernel_info_on_the_control_channel(kc: BlockingKernelClient) -> None:
    msg = kc.session.msg("kernel_info_request", {})
    kc.control_channel.send(msg)
    reply = kc.get_control_msg(timeout=10)
    assert reply["parent_header"]["msg_id"] == msg["header"]["msg_id"]
    assert reply["content"]["language_info"]["name"] == "devarray"


def test_unknown_shell_request_is_survived(kc: BlockingKernelClient) -> None:
    kc.shell_channel.send(kc.session.msg("frobnicate_request", {"x": 1}))
    msg_id = kc.kernel_info()
    assert shell_reply(kc, msg_id)["content"]["status"] == "ok"


def test_user_expressions(kc: BlockingKernelClient) -> None:
    reply, _ = execute(kc, "ue = 5", user_expressions={"double": "ue * 2", "bad": "nope_nope"})
    expressions = reply["content"]["user_expressions"]
    assert expressions["double"] == {"status": "ok", "data": {"text/plain": "10"}, "metadata": {}}
    assert expressions["bad"]["status"] == "error"
    assert expressions["bad"]["ename"] == "NameError"


def test_failed_cell_aborts_the_queued_ones(kc: BlockingKernelClient) -> None:
    failing = kc.execute("import time\ntime.sleep(0.5)\nundefined_in_abort_test")
    queued = kc.execute("aborted_marker = 1")
    assert shell_reply(kc, failing)["content"]["status"] == "error"
    assert shell_reply(kc, queued)["content"]["status"] == "aborted"
    collect(kc, queued)
    reply, _ = execute(kc, "aborted_marker")
    assert reply["content"]["ename"] == "NameError"


def test_sim2_kernelspec_has_two_simulated_gpus() -> None:
    with running_kernel("devarray-sim2") as (km, kc):
        assert km.kernel_spec.display_name == "devarray (2 simulated GPUs)"
        assert km.kernel_spec.env == {"DEVARRAY_SIM_GPUS": "2"}
        assert km.kernel_spec.interrupt_mode == "message"
        _, outputs = execute(kc, "num_gpus()")
        assert result_text(outputs) == "2"
