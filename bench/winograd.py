#!/usr/bin/env python3
"""Winograd F(2x2, 3x3) against im2col on the 3x3 stride-1 convolutions of ResNet-18 at 96x96.

For each layer shape, one devarray process per path (DEVARRAY_WINOGRAD=all / 0, alternating,
--rounds times) runs the convolution forward, then forward and backward (the input's and the
weight's gradients), --reps times each, and reports the CPU seconds per call (all threads,
`time.process_time`) of the median round. This is what `winograd_pays` in
src/runtime/array/conv_winograd.rs was chosen from.

Usage:  python3 bench/winograd.py [--devarray target/release/devarray] [--batch 32]
                                  [--rounds 3] [--reps 5]
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

# (channels in = out, map side): ResNet-18's 3x3 stride-1 layers at 96x96 input, and smaller
# channel counts to find where the transforms stop paying.
SHAPES = [(64, 24), (128, 12), (256, 6), (512, 3), (16, 24), (32, 24), (8, 24)]

PROGRAM = """
import time, torch
import torch.nn.functional as F
torch.manual_seed(0)
x = torch.randn({n}, {c}, {s}, {s}, requires_grad=True)
w = torch.randn({c}, {c}, 3, 3, requires_grad=True)
F.conv2d(x, w, padding=1).sum().backward()
t = time.process_time()
for _ in range({reps}):
    y = F.conv2d(x, w, padding=1)
fwd = (time.process_time() - t) / {reps}
t = time.process_time()
for _ in range({reps}):
    F.conv2d(x, w, padding=1).sum().backward()
both = (time.process_time() - t) / {reps}
print("RESULT", fwd, both)
"""


def run(binary, src, winograd):
    env = dict(os.environ, DEVARRAY_WINOGRAD="all" if winograd else "0", NO_COLOR="1")
    r = subprocess.run([binary, "-"], input=src, capture_output=True, text=True, env=env)
    for line in r.stdout.splitlines():
        if line.startswith("RESULT"):
            return tuple(float(v) for v in line.split()[1:])
    raise RuntimeError(f"{binary} failed (exit {r.returncode}): {r.stdout}{r.stderr}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--devarray", default=os.path.join(REPO, "target", "release", "devarray"))
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    if not os.access(args.devarray, os.X_OK):
        sys.exit(f"{args.devarray} is not built: cargo build --release --bin devarray")
    print(f"batch {args.batch}; CPU ms per call, median of {args.rounds} rounds")
    print("| C=K | map | im2col fwd | Winograd fwd | gain | im2col fwd+bwd | Winograd fwd+bwd | gain |")
    print("|---|---|---|---|---|---|---|---|")
    for c, s in SHAPES:
        src = PROGRAM.format(n=args.batch, c=c, s=s, reps=args.reps)
        times = {True: [], False: []}
        for _ in range(args.rounds):
            for wino in (False, True):
                times[wino].append(run(args.devarray, src, wino))
        med = {k: [statistics.median(t[i] for t in v) * 1e3 for i in range(2)]
               for k, v in times.items()}
        (pf, pb), (wf, wb) = med[False], med[True]
        print(f"| {c} | {s}x{s} | {pf:.2f} | {wf:.2f} | {pf / wf:.2f}x | {pb:.2f} | {wb:.2f} | "
              f"{pb / wb:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
