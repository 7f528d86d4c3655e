#!/usr/bin/env bash
# Kernel protocol tests: build devarray-kernel, install its kernelspecs into the
# repository's .venv (created on first use), and run pytest on tests/kernel.
# Exits non-zero when anything fails, including a run that collects no tests.
# Extra arguments go to pytest, e.g. `tests/kernel/run.sh -k interrupt`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
# pip is quick when everything pinned is already there, and it upgrades an
# older .venv when the pins move.
.venv/bin/pip install --quiet --disable-pip-version-check -r tests/kernel/requirements.txt

# Built with the workspace's test targets, so the devarray library is the one `cargo test
# --workspace` already built (dev-dependencies add regex features; `-p devarray-kernel` alone
# would compile the library a second time).
cargo build --workspace --bins --tests
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps |
    .venv/bin/python -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
KERNEL="$TARGET_DIR/debug/devarray-kernel"

"$KERNEL" install --prefix "$ROOT/.venv"
# Put the venv's kernelspecs first, ahead of any older `install --user` copy.
export JUPYTER_PATH="$ROOT/.venv/share/jupyter${JUPYTER_PATH:+:$JUPYTER_PATH}"
export DEVARRAY_KERNEL_BIN="$KERNEL"

status=0
.venv/bin/python -m pytest tests/kernel -ra "$@" || status=$?
if [ "$status" -eq 5 ]; then
    echo "tests/kernel/run.sh: pytest collected no tests, which counts as a failure" >&2
    status=1
fi
if [ "$status" -ne 0 ]; then
    echo "tests/kernel/run.sh: FAILED (exit status $status)" >&2
fi
exit "$status"
