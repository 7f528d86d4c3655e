#!/usr/bin/env bash
# devarray's GPU kit, the one command to run on the GPU machine (built by tests/gpu/kit.sh):
#   bash gpu-kit/run.sh              the machine's CUDA card(s)
#   bash gpu-kit/run.sh --emulated   the emulated CUDA stack built into the kit (what CI runs)
# Writes report.md, report.json and outputs/ into $OUT if it is set, else into the current folder,
# in under 6 minutes; exits 0 when every step passed. Needs bash, coreutils and a Python 3; uses
# PyTorch (for the benchmark's comparison) and NVIDIA's wheels (NVRTC, cuBLAS, cuRAND, NCCL) of
# whichever Python has them.
set -u
started=$(date +%s)
KIT="$(cd "$(dirname "$0")" && pwd)"
OUTDIR="${OUT:-$PWD}"
mkdir -p "$OUTDIR" || { echo "cannot create $OUTDIR" >&2; exit 2; }

# The Python that runs the kit: $PYTHON, else the first that imports torch (its site-packages
# hold the NVIDIA wheels), else the first that runs at all.
candidates=()
[ -n "${PYTHON:-}" ] && candidates+=("$PYTHON")
for p in python3 python /opt/conda/bin/python /usr/bin/python3 /usr/local/bin/python3; do
    command -v "$p" >/dev/null 2>&1 && candidates+=("$(command -v "$p")")
done
python=""
if [ "${1:-}" != "--emulated" ]; then
    for p in "${candidates[@]}"; do
        if timeout 60 "$p" -c 'import torch' >/dev/null 2>&1; then python="$p"; break; fi
    done
fi
if [ -z "$python" ]; then
    for p in "${candidates[@]}"; do
        if timeout 20 "$p" -c 'import sys; assert sys.version_info >= (3, 7)' >/dev/null 2>&1; then
            python="$p"; break
        fi
    done
fi
if [ -z "$python" ]; then
    msg="no Python 3.7+ found (tried: ${candidates[*]:-none}); set PYTHON=/path/to/python3"
    echo "$msg" >&2
    printf '# devarray GPU kit report\n\n**Overall: FAIL**\n\n%s\n' "$msg" > "$OUTDIR/report.md"
    printf '{"passed": false, "error": "%s"}\n' "$msg" > "$OUTDIR/report.json"
    exit 1
fi

# Six minutes in all: the kit stops its own steps in time to write the report, and is stopped
# from outside 10 s after its deadline in case it hangs.
spent=$(( $(date +%s) - started ))
deadline=$(( 340 - spent ))
timeout -k 5 $(( deadline + 10 )) "$python" "$KIT/kit.py" --out "$OUTDIR" --deadline "$deadline" "$@"
rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    printf '\n**The kit was stopped after %s s (timeout); the steps above are what it finished.**\n' \
        "$(( $(date +%s) - started ))" >> "$OUTDIR/report.md"
fi
exit "$rc"
