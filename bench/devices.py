#!/usr/bin/env python3
"""Asynchrony and two simulated GPUs, measured: prints times and ratios, never asserts.

    python3 bench/devices.py [DEVARRAY] [--n 512] [--reps 20]

1. queue vs work: a loop of matmuls on gpu(0) returns once queued; waiting counts the work
   (d2l's async-computation lesson). Ratio: time with synchronize / time without.
2. two devices: the same matmuls on gpu(0) alone, on gpu(1) alone, and on both at once
   (d2l's auto-parallelism lesson). Ratio both / slower-one is about 1 when the GPUs overlap,
   about 2 when they take turns.
3. copies overlapping compute: run then copy to the host, against run and copy together
   (non_blocking=True), as the same chapter does.
Each simulated GPU runs its kernels on a thread per core, so one GPU alone has the whole machine
and two at once share it (DEVARRAY_SIM_GPU_THREADS overrides the count); run with
DEVARRAY_SIM_GPU_THREADS=1 on two cores to give each of two GPUs a core of its own, as two cards.
"""
import argparse
import os
import subprocess
import sys
import tempfile

PROGRAM = r"""
import torch, time
n, reps = {n}, {reps}
x0 = torch.rand(size=(n, n), device='cuda:0')
x1 = torch.rand(size=(n, n), device='cuda:1')
def run(x):
    return [x.mm(x) for _ in range(reps)]
def timed(f):
    best = None
    for _ in range(3):
        torch.cuda.synchronize(0); torch.cuda.synchronize(1)
        t = time.perf_counter()
        f()
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    return best
_ = run(x0); _ = run(x1)
queued = timed(lambda: run(x0))
def work():
    run(x0); torch.cuda.synchronize(0)
done = timed(work)
def one0():
    run(x0); torch.cuda.synchronize(0)
def one1():
    run(x1); torch.cuda.synchronize(1)
def both():
    run(x0); run(x1); torch.cuda.synchronize(0); torch.cuda.synchronize(1)
t0, t1, tb = timed(one0), timed(one1), timed(both)
def copy_after():
    y = run(x0); torch.cuda.synchronize(0)
    z = [v.to('cpu') for v in y]
def copy_overlap():
    y = run(x0)
    z = [v.to('cpu', non_blocking=True) for v in y]
    torch.cuda.synchronize(0)
ta, to = timed(copy_after), timed(copy_overlap)
print(f"matmul {{n}}x{{n}} x{{reps}}")
print(f"1. loop returns after    {{queued*1e3:9.1f}} ms queued, {{done*1e3:9.1f}} ms with synchronize: ratio {{done/queued:.0f}}x")
print(f"2. gpu(0) alone          {{t0*1e3:9.1f}} ms")
print(f"   gpu(1) alone          {{t1*1e3:9.1f}} ms")
print(f"   both at once          {{tb*1e3:9.1f}} ms: both / slower = {{tb/max(t0, t1):.2f}}, both / sum = {{tb/(t0+t1):.2f}}")
print(f"3. run, then copy        {{ta*1e3:9.1f}} ms")
print(f"   run and copy together {{to*1e3:9.1f}} ms: ratio {{to/ta:.2f}}")
"""


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("devarray", nargs="?", default="target/release/devarray")
    p.add_argument("--n", type=int, default=512)
    p.add_argument("--reps", type=int, default=20)
    a = p.parse_args()
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(PROGRAM.format(n=a.n, reps=a.reps))
    env = {**os.environ, "DEVARRAY_SIM_GPUS": "2"}
    print(f"{a.devarray}, DEVARRAY_SIM_GPU_THREADS={os.environ.get('DEVARRAY_SIM_GPU_THREADS', '(one per core)')}")
    sys.stdout.flush()
    subprocess.run([a.devarray, f.name], env=env, check=True)
    os.unlink(f.name)


if __name__ == "__main__":
    main()
