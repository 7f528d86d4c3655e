#!/usr/bin/env python3
"""Training speed: devarray against the real framework on the same program, one table of ratios.

Each workload is one program in bench/train/, run unchanged by devarray (release build) and by the
framework it is written for: the seed's LeNet (MXNet dialect; devarray on two simulated GPUs, MXNet on
two CPU contexts), the book's LeNet and concise MLP (PyTorch), and a ResNet-18 training step at 96x96
(both dialects). The harness writes the first --images Fashion-MNIST training images into a data folder
(IDX files, as MXNet and torchvision read them) and puts ROOT, IMAGES, BATCH, EPOCHS/STEPS and SEED
above the program. The program times its own epoch (or steps) and prints one RESULT line with the
seconds and the loss it reached; interpreter start-up and imports are not timed. The two sides
alternate, process by process, for --rounds rounds; the table shows medians, the ratio
devarray/framework (below 1: devarray is faster), each side's loss, and the fraction of the machine's
peak float32 FLOP/s devarray's training reaches (FLOPs counted from the layers' shapes: forward, plus
twice that backward).

The frameworks live in two virtualenvs made on first use under --cache (default
~/.cache/devarray-bench): mxnet==1.9.1 with numpy==1.23.5, and torch + torchvision (CPU).

Usage:  python3 bench/train.py [--only lenet-mx,lenet-torch,mlp,resnet-mx,resnet-torch]
                               [--images 60000] [--rounds 3] [--devarray target/release/devarray]
"""
import argparse
import gzip
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DATA_DIRS = ["/usr/share/datasets/fashion-mnist",
             os.path.join(REPO, "..", "shared", "data", "fashion-mnist")]
PINS = {
    "mxnet": ["mxnet==1.9.1", "numpy==1.23.5"],
    "torch": ["torch==2.15.0", "torchvision==0.29.2"],
}


def conv_flops(cin, cout, k, hout, wout):
    return 2 * cin * cout * k * k * hout * wout


def lenet_seed_flops():
    # 28 -> conv5 (24) -> pool (12) -> conv3 (10) -> pool (5) -> 400 -> 120 -> 84 -> 10
    return (conv_flops(1, 6, 5, 24, 24) + conv_flops(6, 16, 3, 10, 10)
            + 2 * (400 * 120 + 120 * 84 + 84 * 10))


def lenet_book_flops():
    # 28 -> conv5 pad 2 (28) -> pool (14) -> conv5 (10) -> pool (5) -> 400 -> 120 -> 84 -> 10
    return (conv_flops(1, 6, 5, 28, 28) + conv_flops(6, 16, 5, 10, 10)
            + 2 * (400 * 120 + 120 * 84 + 84 * 10))


def mlp_flops():
    return 2 * (784 * 256 + 256 * 10)


def resnet18_flops(size=96):
    s = size // 2  # 7x7 stride 2
    f = conv_flops(1, 64, 7, s, s)
    s //= 2  # max pool stride 2
    cin = 64
    for cout, first in ((64, True), (128, False), (256, False), (512, False)):
        for i in range(2):
            if i == 0 and not first:
                s //= 2
                f += conv_flops(cin, cout, 3, s, s) + conv_flops(cin, cout, 1, s, s)
            else:
                f += conv_flops(cin if i == 0 else cout, cout, 3, s, s)
            f += conv_flops(cout, cout, 3, s, s)
            cin = cout
    return f + 2 * 512 * 10


# name -> program, framework, devarray environment, batch, per-image forward FLOPs, step workload?
WORKLOADS = {
    "lenet-mx": dict(prog="lenet_mxnet.py", fw="mxnet", env={"DEVARRAY_SIM_GPUS": "2"},
                     batch=256, flops=lenet_seed_flops(),
                     title="seed LeNet, MXNet dialect, 2 devices (epoch)"),
    "lenet-torch": dict(prog="lenet_torch.py", fw="torch", env={}, batch=256,
                        flops=lenet_book_flops(), title="book LeNet, PyTorch (epoch)"),
    "mlp": dict(prog="mlp_torch.py", fw="torch", env={}, batch=256, flops=mlp_flops(),
                title="book concise MLP, PyTorch (epoch)"),
    "resnet-mx": dict(prog="resnet_mxnet.py", fw="mxnet", env={}, batch=32, step=True,
                      flops=resnet18_flops(), title="ResNet-18 96x96, MXNet (step)"),
    "resnet-torch": dict(prog="resnet_torch.py", fw="torch", env={}, batch=32, step=True,
                         flops=resnet18_flops(), title="ResNet-18 96x96, PyTorch (step)"),
}

# MXNet checks its download's SHA-1 and would fetch the files again for a cut-down copy; the check is
# turned off for the framework side only (devarray never downloads).
MXNET_PRELUDE = ("import mxnet.gluon.utils as _utils\n"
                 "_utils.check_sha1 = lambda *a, **k: True\n")


def venv_python(cache, fw):
    d = os.path.join(cache, fw)
    py = os.path.join(d, "bin", "python")
    if not os.path.exists(os.path.join(d, ".ready")):
        print(f"making the {fw} virtualenv in {d} (once) ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", d], check=True)
        subprocess.run([py, "-m", "pip", "install", "--quiet", *PINS[fw]], check=True)
        open(os.path.join(d, ".ready"), "w").close()
    return py


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return f.read()


def find_file(name):
    for d in DATA_DIRS:
        for n in (name + ".gz", name):
            p = os.path.join(d, n)
            if os.path.exists(p):
                return p
    sys.exit(f"Fashion-MNIST file {name} not found in {DATA_DIRS} "
             "(apt-get install dataset-fashion-mnist)")


def make_data(cache, images):
    """The first `images` training images as IDX files, in the folder MXNet and devarray read
    (gzip) and in FashionMNIST/raw below it, where torchvision reads them (uncompressed)."""
    root = os.path.join(cache, f"fashion-mnist-{images}")
    raw = os.path.join(root, "FashionMNIST", "raw")
    if os.path.exists(os.path.join(root, ".ready")):
        return root
    os.makedirs(raw, exist_ok=True)
    for kind in ("train", "t10k"):
        imgs = read_idx(find_file(f"{kind}-images-idx3-ubyte"))
        labels = read_idx(find_file(f"{kind}-labels-idx1-ubyte"))
        n = min(images, struct.unpack(">I", imgs[4:8])[0]) if kind == "train" else \
            struct.unpack(">I", imgs[4:8])[0]
        imgs = imgs[:4] + struct.pack(">I", n) + imgs[8:16] + imgs[16:16 + n * 784]
        labels = labels[:4] + struct.pack(">I", n) + labels[8:8 + n]
        for name, body in ((f"{kind}-images-idx3-ubyte", imgs), (f"{kind}-labels-idx1-ubyte", labels)):
            with gzip.open(os.path.join(root, name + ".gz"), "wb", compresslevel=1) as f:
                f.write(body)
            with open(os.path.join(raw, name), "wb") as f:
                f.write(body)
    open(os.path.join(root, ".ready"), "w").close()
    return root


def program(w, root, images, steps, seed, real_mxnet):
    head = (f"ROOT = {root!r}\nIMAGES = {images}\nBATCH = {w['batch']}\nEPOCHS = 1\n"
            f"STEPS = {steps}\nSEED = {seed}\n")
    if real_mxnet:
        head += MXNET_PRELUDE
    with open(os.path.join(HERE, "train", w["prog"])) as f:
        return head + f.read()


RESULT = re.compile(r"RESULT seconds=([0-9.]+) loss=([0-9.naif-]+)")


def run_once(cmd, src, env, timeout):
    e = dict(os.environ)
    e.update(env)
    # This machine sets OpenBLAS tuning variables that slow a current OpenBLAS down (bench/compare.py).
    for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        e.pop(k, None)
    r = subprocess.run(cmd, input=src, capture_output=True, text=True, env=e, timeout=timeout)
    m = RESULT.search(r.stdout)
    if r.returncode != 0 or not m:
        tail = (r.stdout + r.stderr).strip().splitlines()[-15:]
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {r.returncode}):\n  " + "\n  ".join(tail))
    return float(m.group(1)), m.group(2)


def flops_per_cycle(info):
    """Float32 FLOP per cycle per core, and what was assumed, from /proc/cpuinfo's text.

    AVX-512 alone does not say how wide the FMA units are: Zen 4 (AMD family 25) runs 512-bit
    FMAs double-pumped on 256-bit units, so it peaks where AVX2 with two FMA ports does."""
    def field(name):
        m = re.search(rf"^{name}\s*:\s*(.*)$", info, re.M)
        return m.group(1).strip() if m else ""
    flags = set(field("flags").split())
    vendor, family = field("vendor_id"), field("cpu family")
    if "avx512f" in flags and vendor == "AuthenticAMD" and family == "25":
        return 32, "Zen 4: AVX-512 double-pumped on 2x256-bit FMA units, 32 FLOP/cycle"
    if "avx512f" in flags:
        return 64, "AVX-512 with 2 FMA units, 64 FLOP/cycle (1-unit parts peak at half)"
    if "avx2" in flags and "fma" in flags:
        return 32, "AVX2 with 2 FMA ports, 32 FLOP/cycle"
    if "avx" in flags:
        return 16, "AVX without FMA, 16 FLOP/cycle"
    return 8, "SSE, 8 FLOP/cycle"


def peak_gflops():
    """Float32 peak: cores x FLOP per cycle (`flops_per_cycle`) x clock; and what it assumed."""
    cores = os.cpu_count() or 1
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        pass
    mhz, per_cycle, assumed = 0.0, 32, "no /proc/cpuinfo: assumed 32 FLOP/cycle"
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
        mhz = max(float(x) for x in re.findall(r"cpu MHz\s*:\s*([0-9.]+)", info))
        per_cycle, assumed = flops_per_cycle(info)
    except (OSError, ValueError):
        pass
    return cores * per_cycle * (mhz or 2500.0) / 1000.0, cores, mhz, assumed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--devarray", default=os.path.join(REPO, "target", "release", "devarray"))
    ap.add_argument("--only", default=",".join(WORKLOADS),
                    help="comma-separated subset of " + ", ".join(WORKLOADS))
    ap.add_argument("--images", type=int, default=60000,
                    help="training images per epoch (default 60000, the whole set)")
    ap.add_argument("--steps", type=int, default=3, help="timed ResNet-18 steps (after a warm-up)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per run")
    ap.add_argument("--cache", default=os.path.join(os.path.expanduser("~"), ".cache",
                                                    "devarray-bench"))
    ap.add_argument("--plain", action="store_true",
                    help="also run devarray with DEVARRAY_PLAIN_CONV=1 (convolution and pooling "
                         "composed from slices, the path before the one-pass im2col)")
    ap.add_argument("--baseline", metavar="BINARY",
                    help="also time this other devarray build (e.g. main's) in the same "
                         "alternation: a before/after table from one run, under one load")
    ap.add_argument("--peak-gflops", type=float, help="the machine's float32 peak, if known")
    args = ap.parse_args()

    names = [n.strip() for n in args.only.split(",") if n.strip()]
    for n in names:
        if n not in WORKLOADS:
            sys.exit(f"unknown workload {n!r}; choose from {', '.join(WORKLOADS)}")
    if not os.access(args.devarray, os.X_OK):
        sys.exit(f"{args.devarray} is not built: cargo build --release --bin devarray")
    os.makedirs(args.cache, exist_ok=True)
    root = make_data(args.cache, args.images)
    images = min(args.images, 60000)
    pythons = {fw: venv_python(args.cache, fw) for fw in {WORKLOADS[n]["fw"] for n in names}}
    peak, cores, mhz, assumed = peak_gflops()
    if args.peak_gflops:
        peak = args.peak_gflops
    print(f"devarray: {args.devarray}; {images} images; {args.rounds} rounds, alternating; "
          f"peak {peak:.0f} GFLOP/s ({cores} cores, {mhz:.0f} MHz; {assumed})")

    rows = []
    for n in names:
        w = WORKLOADS[n]
        fw = w["fw"]
        dv_src = program(w, root, images, args.steps, args.seed, real_mxnet=False)
        fw_src = program(w, root, images, args.steps, args.seed, real_mxnet=fw == "mxnet")
        dv_cmd = [args.devarray, "-"]
        fw_cmd = [pythons[fw], "-"]
        times = {"devarray": [], fw: [], "plain": [], "baseline": []}
        for r in range(args.rounds):
            # Alternate which side goes first, so drift in the machine's load falls on both.
            order = [("devarray", dv_cmd, dv_src, w["env"]), (fw, fw_cmd, fw_src, {})]
            if args.plain:
                order.append(("plain", dv_cmd, dv_src, dict(w["env"], DEVARRAY_PLAIN_CONV="1")))
            if args.baseline:
                order.append(("baseline", [args.baseline, "-"], dv_src, w["env"]))
            if r % 2:
                order.reverse()
            for side, cmd, src, env in order:
                try:
                    t, loss = run_once(cmd, src, env, args.timeout)
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    print(f"{n}: {e}", file=sys.stderr)
                    t, loss = float("nan"), "error"
                times[side].append((t, loss))
                print(f"  {n} round {r + 1} {side}: {t:.3f} s, loss {loss}", flush=True)
        rows.append((n, w, times["devarray"], times[fw], times["plain"], times["baseline"]))

    print()
    plain_head = " devarray plain s | plain/devarray |" if args.plain else ""
    if args.baseline:
        plain_head += " baseline s | baseline/framework | baseline loss |"
    print(f"| workload | devarray s | framework s | devarray/framework | devarray loss | "
          f"framework loss | devarray % of peak |{plain_head}")
    print("|---|---|---|---|---|---|---|" + ("---|---|" if args.plain else "")
          + ("---|---|---|" if args.baseline else ""))
    for n, w, dv, fwt, plain, base in rows:
        dm = statistics.median(t for t, _ in dv)
        fm = statistics.median(t for t, _ in fwt)
        count = w["batch"] if w.get("step") else images
        flop = 3 * w["flops"] * count
        frac = flop / dm / 1e9 / peak * 100 if dm == dm and dm > 0 else float("nan")
        unit = "s/step" if w.get("step") else "s/epoch"
        extra = ""
        if plain:
            pm = statistics.median(t for t, _ in plain)
            extra = f" {pm:.3f} | {pm / dm:.2f}x |"
        if base:
            bm = statistics.median(t for t, _ in base)
            extra += f" {bm:.3f} | {bm / fm:.2f}x | {base[-1][1]} |"
        print(f"| {w['title']} | {dm:.3f} {unit} | {fm:.3f} | {dm / fm:.2f}x | {dv[-1][1]} | "
              f"{fwt[-1][1]} | {frac:.1f}% |{extra}")


if __name__ == "__main__":
    main()
