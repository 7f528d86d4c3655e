#!/usr/bin/env bash
# Every tutorial (and the notebook steps of issue 17) run in JupyterLab in headless
# Chromium: Run All, no unexpected error, screenshots to look at. Needs Debian's
# chromium and chromium-driver. Builds and installs the kernelspecs into .venv as
# tests/kernel/run.sh does. Screenshots go to $1 (default target/browser-screenshots).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

for tool in chromium chromedriver; do
    if ! command -v "$tool" >/dev/null; then
        echo "tests/browser/run.sh: $tool is missing; install it with apt-get install chromium chromium-driver" >&2
        exit 1
    fi
done
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/pip install --quiet --disable-pip-version-check \
    -r tests/kernel/requirements.txt -r tests/browser/requirements.txt

cargo build -p devarray-kernel
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps |
    .venv/bin/python -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
"$TARGET_DIR/debug/devarray-kernel" install --prefix "$ROOT/.venv"

exec .venv/bin/python tests/browser/run_tutorials.py "${1:-$TARGET_DIR/browser-screenshots}"
