#!/usr/bin/env python3
"""Method calls and attribute reads on instances against plain calls and global reads.

Runs the same program in devarray and in this CPython, in one run, and prints per-operation times
(loop overhead subtracted) and the ratios issue 14 asks for: an instance method call within 2x of
a plain function call, an attribute read within 2x of a global read.

Usage: python3 bench/language.py [path/to/devarray]   (default target/release/devarray)
"""
import subprocess
import sys

N = 300_000

PROGRAM = f"""
import time
class P:
    def __init__(self):
        self.x = 1
    def m(self, a):
        return a
def f(a):
    return a
p = P()
g = 1
def bench(n):
    t0 = time.perf_counter()
    for i in range(n):
        pass
    t1 = time.perf_counter()
    for i in range(n):
        f(i)
    t2 = time.perf_counter()
    for i in range(n):
        p.m(i)
    t3 = time.perf_counter()
    for i in range(n):
        g
    t4 = time.perf_counter()
    for i in range(n):
        p.x
    t5 = time.perf_counter()
    return [t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4]
best = None
for _ in range(5):
    r = bench({N})
    best = r if best is None else [min(a, b) for a, b in zip(best, r)]
print(' '.join(str(v) for v in best))
"""


def measure(cmd):
    out = subprocess.run(cmd, input=PROGRAM, capture_output=True, text=True, check=True).stdout
    loop, call, meth, glob, attr = (float(v) for v in out.split()[-5:])
    ns = lambda t: max(t - loop, 0.0) / N * 1e9
    return {"function call": ns(call), "method call": ns(meth), "global read": ns(glob), "attribute read": ns(attr)}


def main():
    devarray = sys.argv[1] if len(sys.argv) > 1 else "target/release/devarray"
    d = measure([devarray, "-"])
    c = measure([sys.executable, "-"])
    print(f"{'operation':<16} {'devarray ns':>12} {'CPython ns':>11} {'vs CPython':>11}")
    for k in d:
        print(f"{k:<16} {d[k]:>12.1f} {c[k]:>11.1f} {d[k] / c[k] if c[k] else float('nan'):>10.2f}x")
    mc = d["method call"] / d["function call"]
    ar = d["attribute read"] / d["global read"] if d["global read"] else float("nan")
    print(f"\nmethod call / function call:  devarray {mc:.2f}  (target <= 2; CPython {c['method call'] / c['function call']:.2f})")
    print(f"attribute read / global read: devarray {ar:.2f}  (target <= 2; CPython {c['attribute read'] / c['global read'] if c['global read'] else float('nan'):.2f})")


if __name__ == "__main__":
    main()
