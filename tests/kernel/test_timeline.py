"""`%timeline` in the notebook (issue 27): after a cell it draws that cell's device work as
an SVG, one lane per device and per copy direction, each bar with a hover <title> naming the
op, its shape and its duration; the text/plain form is the text chart (or, with
DEVARRAY_DETERMINISTIC=1, the order of the work without times)."""

from __future__ import annotations

import os
import re
from typing import Iterator

import pytest
from jupyter_client.blocking.client import BlockingKernelClient

from helpers import execute_ok, running_kernel


def timeline_env(deterministic: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DEVARRAY_DETERMINISTIC"}
    if deterministic:
        env["DEVARRAY_DETERMINISTIC"] = "1"
    return env


@pytest.fixture()
def kc() -> Iterator[BlockingKernelClient]:
    with running_kernel("devarray-sim2", env=timeline_env(deterministic=False)) as (_, client):
        yield client


def timeline(kc: BlockingKernelClient) -> dict:
    shown = [m for m in execute_ok(kc, "%timeline") if m["msg_type"] == "display_data"]
    assert len(shown) == 1
    return shown[0]["content"]["data"]


WORK = (
    "import torch\n"
    "a = torch.ones(64, 64, device='cuda:0')\n"
    "b = torch.ones(64, 64, device='cuda:1')\n"
    "ys = [a @ a for _ in range(3)]\n"
    "zs = [b @ b for _ in range(3)]\n"
    "host = ys[-1].to('cpu')"
)


def test_timeline_draws_the_last_cell_as_svg_lanes_with_hover_titles(kc: BlockingKernelClient) -> None:
    execute_ok(kc, WORK)
    data = timeline(kc)
    html = data["text/html"]
    svg = html[html.index("<svg") : html.index("</svg>") + 6]
    # A lane per device and one for the copy direction used, named as %devices names them.
    for lane in ("cpu(0)", "gpu(0)", "gpu(1)", "gpu(0)→cpu(0)"):
        assert f">{lane}</text>" in svg, lane
    titles = re.findall(r"<title>([^<]*)</title>", svg)
    matmuls = [t for t in titles if t.startswith("matmul (64, 64) on gpu(")]
    assert len(matmuls) == 6, titles
    assert all(" ran " in t for t in matmuls)
    assert any(t.startswith("copy (64, 64) on gpu(0)→cpu(0): moved 16.0 KiB") for t in titles), titles
    # The text chart: a row per lane between bars, with the time the lane was busy.
    plain = data["text/plain"]
    assert plain.startswith("Timeline of the last cell: 8 ops and 1 copy on 4 lanes in ")
    assert re.search(r"^gpu\(1\) +\|.*\| .* busy \(\d+%\)$", plain, re.M), plain


def test_the_deterministic_text_lists_the_work_in_order_without_times() -> None:
    with running_kernel("devarray-sim2", env=timeline_env(deterministic=True)) as (km, kc):
        execute_ok(kc, WORK)
        plain = timeline(kc)["text/plain"]
        assert plain == (
            "Timeline of the last cell: 8 ops and 1 copy on 4 lanes\n"
            "cpu(0)         (idle)\n"
            "gpu(0)         full, matmul ×3\n"
            "gpu(1)         full, matmul ×3\n"
            "gpu(0)→cpu(0)  copy (16.0 KiB)"
        )
        # A cell without device work says so, and %timeline itself is not counted.
        execute_ok(kc, "x = 1")
        out = execute_ok(kc, "%timeline")
        text = "".join(m["content"].get("text", "") for m in out if m["msg_type"] == "stream")
        assert text == "No device work in the last cell: nothing was computed or copied.\n"
