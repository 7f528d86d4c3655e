#!/usr/bin/env bash
# CPU benchmark: devarray and numpy side by side on the same workloads, one table of ratios.
# Usage: bash bench/run.sh        (about 4-5 minutes on 2 cores; numbers are noisy on a shared machine)
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=bench/.venv
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
    # Pinned so runs compare: numpy with its bundled OpenBLAS, threadpoolctl to report which kernel runs.
    "$VENV/bin/pip" install --quiet numpy==2.4.6 threadpoolctl==3.7.0
fi

cargo build --release --quiet --bin devarray
exec "$VENV/bin/python" bench/compare.py --devarray target/release/devarray "$@"
