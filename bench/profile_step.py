#!/usr/bin/env python3
"""Where a training step's CPU time goes: a self-time profile of the timed steps alone.

Runs one bench/train/ program under `perf record -e cpu-clock` (a software event, so it works in
virtual machines without hardware counters) and ranks functions by their share of the samples
taken in the last --tail fraction of the run, which leaves out start-up, data loading and the
warm-up step (that step's first touch of fresh pages shows as the kernel's clear_page). Samples in
devarray are named from the binary's own symbol table (`nm`), which works where `perf report`
cannot read the binary's symbols; kernel and libc samples keep perf's names.

Usage:  python3 bench/profile_step.py [--devarray target/release/devarray] [--workload resnet-torch]
                                      [--steps 4] [--images 512] [--tail 0.6] [--top 30]
Needs perf and binutils (nm, readelf); the data are made as bench/train.py makes them.
"""
import argparse
import bisect
import collections
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train  # noqa: E402  (the workloads, data and program text, as the benchmark runs them)


def text_symbols(binary):
    """(address, name) of every function in the binary, sorted by address."""
    out = subprocess.run(["nm", "-C", "--defined-only", binary], capture_output=True, text=True,
                         check=True).stdout
    syms = []
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[1] in "tTwW":
            syms.append((int(parts[0], 16), re.sub(r"::h[0-9a-f]{16}$", "", parts[2])))
    syms.sort()
    return syms


def text_segment_shift(binary):
    """Virtual address minus file offset of the executable segment (readelf's LOAD R E row)."""
    out = subprocess.run(["readelf", "-lW", binary], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "LOAD" and "E" in f[6:-1]:
            return int(f[2], 16) - int(f[1], 16)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--devarray", default=os.path.join(train.REPO, "target", "release", "devarray"))
    ap.add_argument("--workload", default="resnet-torch", choices=list(train.WORKLOADS))
    ap.add_argument("--steps", type=int, default=4, help="timed ResNet steps after the warm-up")
    ap.add_argument("--images", type=int, default=512)
    ap.add_argument("--tail", type=float, default=0.6,
                    help="fraction of the run, from its end, whose samples count")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--cache", default=os.path.join(os.path.expanduser("~"), ".cache",
                                                    "devarray-bench"))
    args = ap.parse_args()

    binary = os.path.realpath(args.devarray)
    w = train.WORKLOADS[args.workload]
    root = train.make_data(args.cache, args.images)
    src = train.program(w, root, args.images, args.steps, 0, real_mxnet=False)
    env = dict(os.environ, **w["env"])
    with tempfile.TemporaryDirectory() as tmp:
        prog = os.path.join(tmp, "program.py")
        data = os.path.join(tmp, "perf.data")
        with open(prog, "w") as f:
            f.write(src)
        run = subprocess.run(["perf", "record", "-e", "cpu-clock", "-F", "499", "-o", data,
                              binary, prog], capture_output=True, text=True, env=env)
        result = train.RESULT.search(run.stdout)
        if run.returncode != 0 or not result:
            sys.exit("the run failed:\n" + (run.stdout + run.stderr)[-2000:])
        mmaps = subprocess.run(["perf", "script", "-i", data, "--show-mmap-events"],
                               capture_output=True, text=True).stdout
        script = subprocess.run(["perf", "script", "-i", data, "-F", "time,ip,sym,dso"],
                                capture_output=True, text=True).stdout

    where = re.search(r"MMAP2? .*\[(0x[0-9a-f]+)\((0x[0-9a-f]+)\) @ (0x[0-9a-f]+) .*r-xp "
                      + re.escape(binary) + "$", mmaps, re.M)
    if not where:
        sys.exit(f"perf recorded no executable mapping of {binary}")
    start, offset = int(where.group(1), 16), int(where.group(3), 16)
    shift = text_segment_shift(binary)
    syms = text_symbols(binary)
    addrs = [a for a, _ in syms]

    samples = []
    for line in script.splitlines():
        m = re.match(r"\s*([0-9.]+):\s+([0-9a-f]+)\s+(.*?)\s*\((.*)\)$", line)
        if m:
            samples.append((float(m.group(1)), int(m.group(2), 16), m.group(3), m.group(4)))
    if not samples:
        sys.exit("perf recorded no samples")
    first, last = samples[0][0], samples[-1][0]
    cut = last - (last - first) * args.tail
    counts = collections.Counter()
    kept = 0
    for t, ip, sym, dso in samples:
        if t < cut:
            continue
        kept += 1
        if dso == binary:
            i = bisect.bisect_right(addrs, ip - start + offset + shift) - 1
            name = syms[i][1] if i >= 0 else "?"
        else:
            # The kernel and libc keep perf's names (clear_page: fresh pages; memmove: copies).
            name = f"[{os.path.basename(dso).strip('[]')}] {sym.split('+')[0]}"
        counts[name] += 1
    print(f"{args.workload}: {result.group(0)}; {kept} samples in the last {args.tail:.0%} "
          f"of the run ({binary})")
    for name, k in counts.most_common(args.top):
        print(f"{100 * k / kept:5.1f}%  {name[:140]}")


if __name__ == "__main__":
    main()
