#!/usr/bin/env python3
"""Generator loops: time per item in devarray builds and in this CPython.

Rows: a for loop over a generator expression, sum() of one, a for loop over a generator function
(`while` with `x = yield`), next() item by item, making and draining many small generators, a
body with `yield` inside `try`, and one with `yield` inside an expression (`t = [(yield i)]`: on a
stack of its own before the parser hoisted such yields, `src/lang/lower.rs`; stackless now).

Usage: python3 bench/generators.py [devarray [other-devarray ...]] [--rounds N]
Each binary (and CPython) runs the program once per round, alternating; the table shows the median
ns per item of each row, and each binary's ratio to the first one.
"""
import statistics
import subprocess
import sys

N = 200_000

PROGRAM = f"""
import time
def count(n):
    i = 0
    while i < n:
        x = yield i
        i += 1
def guarded(n):
    try:
        for i in range(n):
            yield i
    finally:
        pass
def inside(n):
    for i in range(n):
        t = [(yield i)]
def bench(n):
    out = []
    t = time.perf_counter()
    for v in (x for x in range(n)):
        pass
    out.append(time.perf_counter() - t)
    t = time.perf_counter()
    sum(x for x in range(n))
    out.append(time.perf_counter() - t)
    t = time.perf_counter()
    for v in count(n):
        pass
    out.append(time.perf_counter() - t)
    t = time.perf_counter()
    g = count(n)
    for _ in range(n):
        next(g)
    out.append(time.perf_counter() - t)
    t = time.perf_counter()
    for _ in range(n // 4):
        list(x for x in (1, 2, 3, 4))
    out.append(time.perf_counter() - t)
    t = time.perf_counter()
    for v in guarded(n):
        pass
    out.append(time.perf_counter() - t)
    t = time.perf_counter()
    for v in inside(n):
        pass
    out.append(time.perf_counter() - t)
    return out
best = None
for _ in range(3):
    r = bench({N})
    best = r if best is None else [min(a, b) for a, b in zip(best, r)]
print(' '.join(str(v) for v in best))
"""

ROWS = ["for over genexpr", "sum(genexpr)", "for over def gen", "next(g) per item",
        "small genexprs", "try/yield", "yield in expr"]


def measure(cmd):
    out = subprocess.run(cmd, input=PROGRAM, capture_output=True, text=True, check=True).stdout
    return [float(v) / N * 1e9 for v in out.split()[-len(ROWS):]]


def main():
    args = sys.argv[1:]
    rounds = 5
    if "--rounds" in args:
        i = args.index("--rounds")
        rounds = int(args[i + 1])
        del args[i:i + 2]
    binaries = args or ["target/release/devarray"]
    runs = {b: [] for b in binaries + ["python"]}
    for _ in range(rounds):
        for b in binaries:
            runs[b].append(measure([b, "-"]))
        runs["python"].append(measure([sys.executable, "-"]))
    med = {b: [statistics.median(r[i] for r in rs) for i in range(len(ROWS))] for b, rs in runs.items()}
    names = [f"#{i}" for i in range(len(binaries))]
    print("ns per item, median of", rounds, "rounds;", ", ".join(f"{n} = {b}" for n, b in zip(names, binaries)))
    head = f"{'row':<20}" + "".join(f"{n:>10}" for n in names) + f"{'CPython':>10}"
    head += "".join(f"{n + '/#0':>10}" for n in names[1:])
    print(head)
    for i, row in enumerate(ROWS):
        line = f"{row:<20}" + "".join(f"{med[b][i]:>10.1f}" for b in binaries) + f"{med['python'][i]:>10.1f}"
        line += "".join(f"{med[b][i] / med[binaries[0]][i]:>10.2f}" for b in binaries[1:])
        print(line)


if __name__ == "__main__":
    main()
