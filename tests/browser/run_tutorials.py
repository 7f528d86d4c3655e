"""Every tutorial run in JupyterLab in a real headless Chromium, as a user would (Run All).

Starts JupyterLab on a copy of tutorials/ with their outputs cleared, opens each notebook
in Chromium (selenium), runs all cells on the kernel the notebook names, and checks:
every code cell ran (an execution count) and no cell produced an error unless it is tagged
`raises-exception`. Screenshots (light theme, one in the dark theme) go to the directory
given as the first argument, for a person to look at.

Needs Debian's chromium and chromium-driver and, in the venv, jupyterlab and selenium
(tests/browser/requirements.txt); tests/browser/run.sh sets it up. Exits non-zero on any
failure.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import nbformat
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".venv"
TIMEOUT = 180

# The notebook panel in focus, once its kernel is idle and its model loaded.
READY = """
const app = window.jupyterapp;
if (!app) return null;
const w = app.shell.currentWidget;
if (!w || !w.sessionContext || !w.context || !w.context.isReady) return null;
if (w.context.path !== arguments[0]) return null;
const k = w.sessionContext.session && w.sessionContext.session.kernel;
return k ? k.status : null;
"""

# What every code cell of the notebook in focus has done so far.
STATE = """
const w = window.jupyterapp.shell.currentWidget;
const cells = [];
for (const cell of w.content.widgets) {
  if (cell.model.type !== 'code') continue;
  const tags = cell.model.getMetadata('tags') || [];
  const outputs = cell.model.outputs.toJSON();
  cells.push({
    count: cell.model.executionCount,
    raises: tags.includes('raises-exception'),
    errors: outputs.filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue),
    html: outputs.filter(o => o.data && o.data['text/html']).length,
  });
}
const s = w.sessionContext.session;
return {status: s && s.kernel ? s.kernel.status : 'no kernel', cells: cells};
"""

SCROLL = """
const w = window.jupyterapp.shell.currentWidget;
const outer = w.content.node.querySelector('.jp-WindowedPanel-outer') || w.content.node;
outer.scrollTop = arguments[0];
return outer.scrollHeight;
"""


STEPS = [
    "from mxnet import gluon, nd, np, npx\nimport torch\n"
    "loader = gluon.data.DataLoader(gluon.data.ArrayDataset(nd.arange(40)), batch_size=4)\n"
    "for X in gluon.utils.Progress(loader, 'epoch 0'):\n    pass",
    "ones(2, 3) @ gpu(0)",
    "torch.ones(2, 3, device='cuda:1')",
    "torch.ones(2, 3, device='cuda:1').cpu().numpy()",
    "npx.set_np()\nnp.ones((2, 3), ctx=gpu(1))",
    "npx.reset_np()\nb = ones(2, 3).copyto(gpu(1))\n%transfers",
    "%devices",
    "def f(v):\n    return v + undefined_name\nf(1)",
    "ones?",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, what: str, timeout: float = TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    raise TimeoutError(f"timed out waiting for {what}")


def main(shots: Path) -> int:
    shots.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="devarray-lab-"))
    for source in sorted((REPO / "tutorials").glob("*.ipynb")):
        nb = nbformat.read(source, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = []
                cell.execution_count = None
        nbformat.write(nb, work / source.name)
    # The steps of issue 17 beside the tutorials: a progress bar, the dialects' rich
    # output, %transfers, a traceback and the `?` pager.
    steps = nbformat.v4.new_notebook()
    steps.metadata["kernelspec"] = {"name": "devarray-sim2", "display_name": "devarray (2 simulated GPUs)", "language": "devarray"}
    steps.cells = [nbformat.v4.new_code_cell(code) for code in STEPS]
    steps.cells[-2].metadata["tags"] = ["raises-exception"]
    nbformat.write(steps, work / "zz-notebook-steps.ipynb")
    token = secrets.token_hex(16)
    port = free_port()
    # Settings of its own (light theme, no news pop-up), so a run never depends on or
    # changes the user's JupyterLab.
    settings = work / ".lab-settings"
    news = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True)
    news.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    env = {
        **os.environ,
        "JUPYTER_PATH": str(VENV / "share" / "jupyter"),
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(work / ".lab-workspaces"),
        "JUPYTER_CONFIG_DIR": str(work / ".jupyter-config"),
        "JUPYTER_RUNTIME_DIR": str(work / ".jupyter-runtime"),
    }
    lab = subprocess.Popen(
        [
            str(VENV / "bin" / "jupyter"), "lab", "--no-browser", f"--port={port}",
            f"--IdentityProvider.token={token}", "--LabApp.expose_app_in_browser=True",
            f"--ServerApp.root_dir={work}", "--ServerApp.ip=127.0.0.1", "--allow-root",
        ],
        env=env, stdout=subprocess.DEVNULL, stderr=open(shots / "jupyterlab.log", "w"),
    )
    failures: list[str] = []
    started = time.monotonic()
    driver = None
    try:
        base = f"http://127.0.0.1:{port}"

        def up() -> bool:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                return True
            except OSError:
                return False

        wait_for(up, "JupyterLab to start")
        options = Options()
        options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"):
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)
        for path in sorted(work.glob("*.ipynb")):
            name = path.stem
            t0 = time.monotonic()
            driver.get(f"{base}/lab/tree/{path.name}?token={token}")
            wait_for(lambda: driver.execute_script(READY, path.name) == "idle", f"{name}: kernel idle")
            run_all = "window.jupyterapp.commands.execute('notebook:run-all-cells')"
            driver.execute_script(run_all)
            asked = time.monotonic()

            def finished():
                nonlocal asked
                state = driver.execute_script(STATE)
                # A Run All given while the panel was still settling does nothing: ask again.
                untouched = all(c["count"] is None for c in state["cells"])
                if untouched and state["status"] == "idle" and time.monotonic() - asked > 3:
                    driver.execute_script(run_all)
                    asked = time.monotonic()
                done = state["status"] == "idle" and all(c["count"] is not None for c in state["cells"])
                return state if done else None

            try:
                state = wait_for(finished, f"{name}: every cell run")
            except TimeoutError as e:
                failures.append(f"{e} (kernel {driver.execute_script(STATE)['status']})")
                driver.save_screenshot(str(shots / f"{name}-timeout.png"))
                state = driver.execute_script(STATE)
            for i, cell in enumerate(state["cells"]):
                if cell["errors"] and not cell["raises"]:
                    failures.append(f"{name}, code cell {i}: {cell['errors']}")
            height = driver.execute_script(SCROLL, 0)
            for k, top in enumerate(range(0, height, 900)):
                driver.execute_script(SCROLL, top)
                time.sleep(0.3)
                driver.save_screenshot(str(shots / f"{name}-{k:02d}.png"))
            html = sum(c["html"] for c in state["cells"])
            print(f"{name}: {len(state['cells'])} code cells, {html} HTML outputs, "
                  f"{time.monotonic() - t0:.1f} s", flush=True)
        driver.execute_script("window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
        time.sleep(1.5)
        driver.execute_script(SCROLL, 0)
        driver.save_screenshot(str(shots / "dark-theme.png"))
    finally:
        if driver is not None:
            driver.quit()
        lab.terminate()
        try:
            lab.wait(timeout=10)
        except subprocess.TimeoutExpired:
            lab.kill()
        shutil.rmtree(work, ignore_errors=True)
    print(f"total {time.monotonic() - started:.1f} s; screenshots in {shots}")
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "browser-screenshots")))
