"""Figures in the notebook as matplotlib-inline shows them (issue 25): a figure made in a
cell appears once at its end as image/png, image/svg+xml after set_matplotlib_formats('svg'),
plt.show() shows it at once, display(fig) shows it now and clear_output(wait=True) before
the next display gives the live-updating figure the d2l Animator relies on."""

from __future__ import annotations

import base64
import re
from typing import Iterator

import pytest
from jupyter_client.blocking.client import BlockingKernelClient

from helpers import execute_ok, running_kernel


@pytest.fixture()
def kc() -> Iterator[BlockingKernelClient]:
    # A fresh kernel per test: the picture format is a session setting.
    with running_kernel() as (_, client):
        yield client


def shown(outputs: list[dict]) -> list[dict]:
    """The display_data and clear_output messages, in order."""
    return [m for m in outputs if m["msg_type"] in ("display_data", "clear_output")]


def test_a_figure_made_in_a_cell_is_shown_once_at_its_end_as_png(kc: BlockingKernelClient) -> None:
    outputs = execute_ok(kc, "import matplotlib.pyplot as plt\n_ = plt.plot([1, 2, 3], [4, 5, 7])\nprint('drawn')")
    kinds = [m["msg_type"] for m in outputs if m["msg_type"] in ("stream", "display_data")]
    assert kinds == ["stream", "display_data"]
    data = shown(outputs)[0]["content"]["data"]
    assert data["text/plain"] == "<Figure size 640x480 with 1 Axes>"
    png = base64.b64decode(data["image/png"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    # Cut to its content as matplotlib-inline saves (bbox_inches='tight'): matplotlib 3.11
    # gives 547x413 pixels for this figure; from the IHDR chunk.
    assert int.from_bytes(png[16:20], "big") == 548
    assert int.from_bytes(png[20:24], "big") == 413
    # Closed after it was shown: the next cell shows nothing.
    assert shown(execute_ok(kc, "x = 1")) == []


def test_set_matplotlib_formats_svg_switches_to_svg_and_back(kc: BlockingKernelClient) -> None:
    execute_ok(kc, "import matplotlib.pyplot as plt\nfrom matplotlib_inline import backend_inline\nbackend_inline.set_matplotlib_formats('svg')")
    data = shown(execute_ok(kc, "plt.plot([1, 2], [3, 4], label='loss')\nplt.legend()\nplt.xlabel('epoch');"))[0]["content"]["data"]
    svg = data["image/svg+xml"]
    assert "image/png" not in data
    # The page cut to the content, x label included (matplotlib: 394.423125pt x 311.512781pt).
    assert svg.startswith("<?xml") and 'width="394.42332pt" height="311.912pt"' in svg
    assert ">epoch</text>" in svg and ">loss</text>" in svg
    execute_ok(kc, "from IPython import display\ndisplay.set_matplotlib_formats('png')")
    data = shown(execute_ok(kc, "plt.plot([1, 2], [3, 4]);"))[0]["content"]["data"]
    assert "image/png" in data and "image/svg+xml" not in data


def test_show_displays_now_and_closes(kc: BlockingKernelClient) -> None:
    outputs = execute_ok(kc, "import matplotlib.pyplot as plt\nplt.plot([1, 2]); plt.show()\nprint('after')")
    kinds = [m["msg_type"] for m in outputs if m["msg_type"] in ("stream", "display_data")]
    assert kinds == ["display_data", "stream"]


def test_display_and_clear_output_wait_animate_one_figure(kc: BlockingKernelClient) -> None:
    code = """
import matplotlib.pyplot as plt
from IPython import display
from matplotlib_inline import backend_inline
backend_inline.set_matplotlib_formats('svg')
fig, axes = plt.subplots(1, 1, figsize=(3.5, 2.5))
xs, ys = [], []
for epoch in range(3):
    xs.append(epoch)
    ys.append(1.0 / (epoch + 1))
    axes.cla()
    axes.plot(xs, ys, 'm--')
    axes.set_xlabel('epoch')
    display.display(fig)
    display.clear_output(wait=True)
"""
    seq = shown(execute_ok(kc, code))
    kinds = [m["msg_type"] for m in seq]
    # Three frames each followed by a deferred clear, then the figure once more at the end
    # of the cell (matplotlib-inline's flush), which the last clear makes the only one left.
    assert kinds == ["display_data", "clear_output"] * 3 + ["display_data"]
    assert all(m["content"]["wait"] for m in seq if m["msg_type"] == "clear_output")
    frames = [m["content"]["data"]["image/svg+xml"] for m in seq if m["msg_type"] == "display_data"]
    # 3.5x2.5 in (252pt x 180pt) cut to the content, which takes the x label in below: the
    # last frame is 232.603125pt x 184.000781pt in matplotlib 3.11.
    sizes = [tuple(float(v) for v in re.search(r'width="([\d.]+)pt" height="([\d.]+)pt"', f).groups()) for f in frames]
    assert all(w < 252 and h > 180 for w, h in sizes), sizes
    assert sizes[-1] == (232.60332, 184.4)
    assert all(">epoch</text>" in f for f in frames)
    # Each frame draws the dashed line so far: one more segment each time.
    segments = [re.search(r'<path d="([^"]*)"[^>]*stroke-dasharray', f).group(1).count("L") for f in frames]
    assert segments == [0, 1, 2, 2]


def test_figure_as_a_cell_result_carries_its_picture(kc: BlockingKernelClient) -> None:
    outputs = execute_ok(kc, "import matplotlib.pyplot as plt\nfig = plt.figure()\nfig")
    results = [m for m in outputs if m["msg_type"] == "execute_result"]
    assert results[0]["content"]["data"]["text/plain"] == "<Figure size 640x480 with 0 Axes>"
    assert "image/png" in results[0]["content"]["data"]

