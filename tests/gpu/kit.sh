#!/usr/bin/env bash
# Builds the GPU kit: a folder to copy to a machine with an NVIDIA GPU (no Rust, no network there)
# and run in one command, `bash gpu-kit/run.sh` (README, "The GPU kit").
#   bash tests/gpu/kit.sh [FOLDER]     (default: gpu-kit/ in the repository, ignored by git)
# It holds stripped release binaries (devarray, the conformance tests, the NVRTC kernel check),
# the CUDA emulator for `run.sh --emulated`, the seed chapters' GPU programs with their
# transcripts, the LeNet step, bench/gpu_bench.py and the FashionMNIST sample. At most 60 MiB.
# The kernels' .cu sources are compiled into the binary (include_str!), so none are carried.
set -euo pipefail
cd "$(dirname "$0")/../.."
KIT="${1:-gpu-kit}"
LIMIT_MIB=60
started=$(date +%s)
for tool in cargo python3 strip; do
    command -v "$tool" >/dev/null || { echo "error: $tool is needed to build the kit (strip: binutils)" >&2; exit 1; }
done

echo "== release build: devarray, the conformance and NVRTC tests, the CUDA emulator" >&2
# One build: the test build makes target/release/devarray too. (A separate `cargo build --bin`
# would compile the crate a second time: the dev-dependencies change the features of shared
# dependencies.)
cargo test --release --quiet --no-run --test conformance --test cuda_nvrtc --message-format=json \
    > target/gpu-kit-tests.json
cargo build --release --quiet -p cuda_emu
built=$(date +%s)

# The test executables cargo just built (their names carry a hash).
executable() {
    python3 -c '
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == sys.argv[2] and m.get("executable"):
        print(m["executable"])
' target/gpu-kit-tests.json "$1" | tail -n 1
}
conformance="$(executable conformance)"
nvrtc="$(executable cuda_nvrtc)"
[ -x "$conformance" ] && [ -x "$nvrtc" ] || { echo "error: test executables not found" >&2; exit 1; }

rm -rf "$KIT"
mkdir -p "$KIT/bin" "$KIT/emu" "$KIT/programs/transcripts/chapters" "$KIT/bench" "$KIT/data"
strip -o "$KIT/bin/devarray" target/release/devarray
strip -o "$KIT/bin/conformance" "$conformance"
strip -o "$KIT/bin/cuda_nvrtc" "$nvrtc"
strip -o "$KIT/emu/libcuda_emu.so" target/release/libcuda_emu.so
cp tests/gpu/run.sh tests/gpu/kit.py "$KIT/"
cp tests/gpu/lenet_step.py tests/cuda/random_lines.txt "$KIT/programs/"
cp bench/gpu_bench.py "$KIT/bench/"
cp -r tests/data/fashion-mnist-tiny "$KIT/data/"
# The seed chapters' GPU programs: the chapter transcripts written for simulated GPUs.
for f in tests/transcripts/chapters/*.txt; do
    if grep -q '^# env:.*DEVARRAY_SIM_GPUS=' "$f"; then
        cp "$f" "$KIT/programs/transcripts/chapters/"
    fi
done
commit="$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
if ! git diff --quiet HEAD -- src tests bench Cargo.toml Cargo.lock 2>/dev/null; then commit="$commit+changes"; fi
cat > "$KIT/BUILD.json" <<EOF
{"commit": "$commit", "built": "$(date -u '+%Y-%m-%d %H:%M UTC')", "rustc": "$(rustc --version)"}
EOF

bytes=$(du -sb "$KIT" | cut -f1)
du -sh "$KIT"
echo "built in $(( built - started )) s; kit in $KIT ($(ls "$KIT/programs/transcripts/chapters" | wc -l) seed programs)" >&2
if [ "$bytes" -gt $(( LIMIT_MIB << 20 )) ]; then
    echo "error: $KIT is $bytes bytes, over the ${LIMIT_MIB} MiB that can be sent to the GPU machine" >&2
    exit 1
fi
