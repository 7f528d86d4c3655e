#!/usr/bin/env python3
"""devarray vs numpy on the CPU workloads of DESIGN.md "Performance targets", side by side.

Run through bench/run.sh (it makes bench/.venv and builds the release binary). Each workload is one
small program, written once in the Python subset both languages share: devarray runs it as a script,
numpy's Python runs it with `np` in place of the devarray built-ins. The program times its own loop
with time.perf_counter(), so interpreter start-up is excluded (except in the start-up row), does
warm-up rounds, and prints one line per timed round. The two sides alternate, process by process,
and the table shows medians. Both sides run under `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE`:
this machine sets both and they halve a current OpenBLAS's matmul; they are unset for these commands
only. numpy uses its bundled OpenBLAS; devarray uses the system OpenBLAS for large products when it
is installed (`devarray --version` says which, printed below), and one row shows it without.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

BLAS_ENV = ["env", "-u", "OPENBLAS_CORETYPE", "-u", "OPENBLAS_L2_SIZE"]
MIB256 = 256 * 1024 * 1024

# name, devarray setup, numpy setup, devarray statement, numpy statement, iterations per timed
# round, warm-up rounds, timed rounds, unit, scale (turns seconds per round into the unit),
# better ("lower" time or "higher" throughput), target ratio devarray/numpy; optional dev_env:
# environment settings (NAME=value) for the devarray process only.
NO_REUSE = ["DEVARRAY_NO_BUFFER_REUSE=1"]


def normal_pair(n):
    """Setups making two n x n float32 matrices `a` and `b` (devarray, numpy)."""
    dev = f"a = random.normal(0, 1, ({n}, {n}))\nb = random.normal(0, 1, ({n}, {n}))"
    rng = f"np.random.default_rng(0).standard_normal(({n}, {n}), dtype=np.float32)"
    return dict(dev_setup=dev, np_setup=f"a = {rng}\nb = {rng}")


def sgemm(n, warm, reps):
    return dict(name=f"sgemm {n}^2", **normal_pair(n), dev="c = a @ b", np="c = a @ b",
                inner=1, warm=warm, reps=reps, unit="GFLOP/s",
                per=lambda t: 2 * n**3 / t / 1e9, better="higher", target=1.0)


EXP = dict(
    name="(z + 2).exp() * y, 1e7 float32",
    dev_setup="z = ones(10000000)\ny = ones(10000000)",
    np_setup="z = np.ones(10000000, dtype=np.float32)\ny = np.ones(10000000, dtype=np.float32)",
    dev="w = (z + 2).exp() * y", np="w = np.exp(z + 2) * y",
    inner=1, warm=2, reps=7, unit="ms", per=lambda t: t * 1e3,
    better="lower", target=0.5,
)

COPY = dict(
    name="copyto 256 MiB, freed buffer reused",
    dev_setup="z = ones(67108864)", np_setup="z = np.ones(67108864, dtype=np.float32)",
    dev="c = z.copyto(cpu(0))", np="c = z.copy()",
    inner=1, warm=2, reps=9, unit="GB/s", per=lambda t: MIB256 / t / 1e9,
    better="higher", target=1.5,
)

WORKLOADS = [
    dict(
        name="c = a + b, 3 elements (per iteration)",
        dev_setup="a = ones(3)\nb = ones(3)",
        np_setup="a = np.ones(3, dtype=np.float32)\nb = np.ones(3, dtype=np.float32)",
        dev="c = a + b", np="c = a + b",
        inner=100_000, warm=1, reps=3, unit="us", per=lambda t: t / 100_000 * 1e6,
        better="lower", target=1.0,
    ),
    dict(
        name="x.sum().asscalar(), 3 elements",
        dev_setup="x = ones(3)", np_setup="x = np.ones(3, dtype=np.float32)",
        dev="s = x.sum().asscalar()", np="s = x.sum().item()",
        inner=100_000, warm=1, reps=3, unit="us", per=lambda t: t / 100_000 * 1e6,
        better="lower", target=1.0,
    ),
    EXP,
    # The same with buffer reuse off: every result lands in fresh pages (what reuse gains).
    dict(EXP, name=EXP["name"] + ", no buffer reuse", dev_env=NO_REUSE),
    dict(sgemm(100, warm=1, reps=5), name="sgemm 100x100 (per call)", inner=1000, unit="us",
         per=lambda t: t / 1000 * 1e6, better="lower"),
    sgemm(1024, warm=2, reps=7),
    sgemm(4096, warm=1, reps=3),
    # Without the system OpenBLAS: what a machine without it gets.
    dict(sgemm(4096, warm=1, reps=3), name="sgemm 4096^2, gemm crate only", dev_env=["DEVARRAY_BLAS=none"]),
    dict(
        name="1000 x (100x100 matmul + norm to float)", **normal_pair(100),
        dev="n = float((a @ b).norm().asscalar())", np="n = float(np.linalg.norm(a @ b))",
        inner=1000, warm=1, reps=5, unit="ms", per=lambda t: t * 1e3,
        better="lower", target=1.0,
    ),
    # New memory by definition: devarray's reuse of freed large buffers is turned off.
    dict(COPY, name="copyto 256 MiB into new memory", dev_env=NO_REUSE),
    # The same loop as users run it: the previous copy's freed buffer is reused (no page
    # zeroing by the kernel); numpy's side is unchanged.
    COPY,
]

PROGRAM = """import time
{setup}
for _round in range({rounds}):
    _start = time.perf_counter()
    for _i in range({inner}):
        {stmt}
    _took = time.perf_counter() - _start
    if _round >= {warm}:
        print('T', _took)
"""


def run(cmd):
    """Runs cmd to the end: (seconds from start to exit, stdout text, peak RSS in MB)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.stdout.read().decode()
    # wait4 rather than wait: it reports this child's own peak RSS (ru_maxrss, KiB on Linux).
    _, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"benchmark command failed ({proc.returncode}): {' '.join(cmd)}\n{out}")
    return took, out, usage.ru_maxrss / 1024


def timings(out):
    return [float(line.split()[1]) for line in out.splitlines() if line.startswith("T ")]


def fmt(x):
    return f"{x:.3g}" if x < 100 else f"{x:.0f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--devarray", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--rounds", type=int, default=2, help="processes per side per workload")
    ap.add_argument("--only", help="run only workloads whose name contains this")
    args = ap.parse_args()
    dev, py = os.path.abspath(args.devarray), args.python

    info = subprocess.run(
        BLAS_ENV + [py, "-c", "import numpy, threadpoolctl, pprint; "
                     "print('numpy', numpy.__version__); pprint.pprint(threadpoolctl.threadpool_info())"],
        check=True, capture_output=True, text=True).stdout
    print("numpy's thread pools (threadpoolctl.threadpool_info()):\n" + info)
    version = subprocess.run(BLAS_ENV + [dev, "--version"], check=True, capture_output=True, text=True)
    print("devarray --version:\n" + version.stdout)

    rows = []
    if not args.only or "start" in args.only:
        # Start-up: from exec to the first printed array, timed from outside; 2 warm-ups, 7 runs.
        dev_cmd = BLAS_ENV + [dev, "-c", "print(ones(3))"]
        np_cmd = BLAS_ENV + [py, "-c", "import numpy as np; print(np.ones(3))"]
        samples = {"d": [], "n": [], "drss": [], "nrss": []}
        for i in range(9):
            for side, cmd in (("d", dev_cmd), ("n", np_cmd)) if i % 2 == 0 else (("n", np_cmd), ("d", dev_cmd)):
                took, _, rss = run(cmd)
                if i >= 2:
                    samples[side].append(took * 1e3)
                    samples[side + "rss"].append(rss)
        d, n = statistics.median(samples["d"]), statistics.median(samples["n"])
        drss, nrss = max(samples["drss"]), max(samples["nrss"])
        rows.append(("process start to first print", "ms", d, n, "lower", 0.15, drss, nrss))
        rows.append(("peak RSS of that process", "MB", drss, nrss, "abs", 20.0, drss, nrss))

    for w in WORKLOADS:
        if args.only and args.only not in w["name"]:
            continue
        progs = {}
        for side, setup, stmt in (("d", w["dev_setup"], w["dev"]), ("n", "import numpy as np\n" + w["np_setup"], w["np"])):
            progs[side] = PROGRAM.format(setup=setup, stmt=stmt, inner=w["inner"],
                                         rounds=w["warm"] + w["reps"], warm=w["warm"])
        dev_path = f"/tmp/devarray-bench-{os.getpid()}.da"
        with open(dev_path, "w") as f:
            f.write(progs["d"])
        cmds = {"d": BLAS_ENV + w.get("dev_env", []) + [dev, dev_path], "n": BLAS_ENV + [py, "-c", progs["n"]]}
        samples = {"d": [], "n": []}
        rss = {"d": 0.0, "n": 0.0}
        for r in range(args.rounds):
            for side in ("d", "n") if r % 2 == 0 else ("n", "d"):
                _, out, peak = run(cmds[side])
                samples[side] += [w["per"](t) for t in timings(out)]
                rss[side] = max(rss[side], peak)
        os.unlink(dev_path)
        d, n = statistics.median(samples["d"]), statistics.median(samples["n"])
        rows.append((w["name"], w["unit"], d, n, w["better"], w["target"], rss["d"], rss["n"]))
        print(f"  {w['name']}: devarray {fmt(d)} {w['unit']}, numpy {fmt(n)} {w['unit']}", flush=True)

    header = ("workload", "devarray", "numpy", "ratio", "target", "met", "peak RSS MB (dev / np)")
    table = []
    for name, unit, d, n, better, target, drss, nrss in rows:
        if better == "abs":
            ratio, tgt, met = "", f"devarray <= {target:g} {unit}", d <= target
        elif better == "lower":
            ratio, tgt, met = f"{d / n:.2f}x", f"<= {target:g}x", d / n <= target
        else:
            ratio, tgt, met = f"{d / n:.2f}x", f">= {target:g}x", d / n >= target
        table.append((name, f"{fmt(d)} {unit}", f"{fmt(n)} {unit}", ratio, tgt,
                      "yes" if met else "NO", f"{drss:.0f} / {nrss:.0f}"))
    widths = [max(len(str(r[i])) for r in [header] + table) for i in range(len(header))]
    line = lambda r: "| " + " | ".join(str(c).ljust(wd) for c, wd in zip(r, widths)) + " |"
    print()
    print(line(header))
    print("|" + "|".join("-" * (wd + 2) for wd in widths) + "|")
    for r in table:
        print(line(r))
    print("\nratio = devarray / numpy (time rows: lower is better; GFLOP/s and GB/s rows: higher is better)")


if __name__ == "__main__":
    main()
