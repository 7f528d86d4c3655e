#!/usr/bin/env bash
# Installs NVRTC (the CUDA runtime compiler, from NVIDIA's PyPI wheel, which needs no driver and no
# GPU) into the repository's .venv, then prints the path of libnvrtc.so for DEVARRAY_NVRTC_LIB.
#   export DEVARRAY_NVRTC_LIB="$(tests/cuda/setup_nvrtc.sh)"
#   cargo test --test cuda_nvrtc
# Progress goes to stderr so that stdout is only the path.
set -euo pipefail
cd "$(dirname "$0")/../.."

# Pinned so that CI compiles the kernels with the same compiler every run.
NVRTC_WHEEL="nvidia-cuda-nvrtc-cu12==12.9.86"

if [ ! -x .venv/bin/python ]; then
    echo "creating .venv" >&2
    python3 -m venv .venv >&2
fi
if ! .venv/bin/python -m pip show nvidia-cuda-nvrtc-cu12 >/dev/null 2>&1; then
    echo "installing $NVRTC_WHEEL into .venv" >&2
    .venv/bin/python -m pip install --quiet --disable-pip-version-check "$NVRTC_WHEEL" >&2
fi

# The wheel puts the library in site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12 (beside the
# builtins library it loads at run time).
lib="$(find .venv -path '*nvidia/cuda_nvrtc/lib/libnvrtc.so*' ! -name '*builtins*' | sort | head -n 1)"
if [ -z "$lib" ]; then
    echo "error: libnvrtc.so was not found under .venv after installing $NVRTC_WHEEL" >&2
    exit 1
fi
realpath "$lib"
