#!/usr/bin/env python3
"""devarray vs PyTorch on the same NVIDIA GPU.

Runs each workload in devarray (a script through the release binary, timed inside devarray with
time.time() and waitall()) and in PyTorch (torch.cuda.synchronize around the same loop), then prints
both times and the ratio against DESIGN.md's GPU targets:
  GEMM within 10% of cuBLAS through PyTorch, fused elementwise within 15% of device copy
  bandwidth, pinned host-to-device copies within 10% of PyTorch.

Usage: cargo build --release && python3 bench/gpu_bench.py [--device 0] [--repeat 20]
Needs: an NVIDIA GPU, its driver, NVRTC/cuBLAS/cuRAND libraries on LD_LIBRARY_PATH, and torch.
The GPU kit (tests/gpu/kit.py) runs it with --binary (the kit's devarray) and --json (its
report's figures); on the emulated CUDA stack with --small --no-torch (sizes an interpreter runs,
devarray only). A workload that fails or passes --timeout is reported and the others still run.
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.join(ROOT, "target", "release", "devarray")

def workloads(small):
    """(name, devarray setup, devarray statement, torch setup, torch statement, work (for a
    rate), unit). --small: the same paths at sizes the CUDA emulator interprets in seconds (GEMM
    still goes to cuBLAS, the host-to-device copy still spans more than one 16 MiB staging piece)."""
    gemms = (64, 128) if small else (1024, 4096)
    n = 10 ** 5 if small else 10 ** 8  # elementwise and device copy (float32)
    h = 5 * 10 ** 6 if small else 64 << 20  # host <-> device (float32)
    def size(b):
        return f"{b >> 20} MiB" if b % (1 << 20) == 0 else f"{b / 1e6:g} MB"
    # (N, C, H, W) and K output channels: a ResNet-18 stage-1 layer, or a tiny one.
    cn, cc, ch, ck = (2, 4, 10, 4) if small else (64, 64, 56, 64)
    conv_text = f"({cn}, {cc}, {ch}, {ch}) -> {ck}"
    conv_flops = 2 * cn * ck * cc * 9 * ch * ch
    conv_setup = ("import torch; import torch.nn.functional as F; "
                  f"x = torch.randn({cn}, {cc}, {ch}, {ch}, device='cuda:{{d}}', requires_grad={{grad}}); "
                  f"w = torch.randn({ck}, {cc}, 3, 3, device='cuda:{{d}}', requires_grad={{grad}})")
    pn, pc, ph = (2, 4, 12) if small else (64, 64, 112)
    pool_text = f"({pn}, {pc}, {ph}, {ph})"
    pool_n = pn * pc * ph * ph
    pool_setup = ("import torch; import torch.nn.functional as F; "
                  f"x = torch.randn({pn}, {pc}, {ph}, {ph}, device='cuda:{{d}}')")
    out = []
    for g in gemms:
        out.append((f"sgemm {g}^2",
                    f"a = random.normal(0, 1, ({g}, {g})) @ gpu({{d}}); b = random.normal(0, 1, ({g}, {g})) @ gpu({{d}})",
                    "c = a @ b",
                    f"a = torch.randn({g}, {g}, device=dev); b = torch.randn({g}, {g}, device=dev)",
                    "c = a @ b", 2 * g ** 3, "GFLOP/s"))
    out += [
        (f"fused (z + 2).exp() * y, {n:.0e} float32".replace("e+0", "e"),
         f"z = ones({n}) @ gpu({{d}}); y = ones({n}) @ gpu({{d}})",
         "w = (z + 2).exp() * y",
         f"z = torch.ones({n}, device=dev); y = torch.ones({n}, device=dev)",
         "w = (z + 2).exp() * y", 3 * 4 * n, "GB/s"),
        (f"device copy {size(4 * n)}",
         f"z = ones({n}) @ gpu({{d}})",
         "w = z.copyto(gpu({d}))",
         f"z = torch.ones({n}, device=dev)",
         "w = z.clone()", 2 * 4 * n, "GB/s"),
        (f"host to device {size(4 * h)}",
         f"h = ones({h})",
         "g = h.copyto(gpu({d}))",
         f"h = torch.ones({h}).pin_memory()",
         "g = h.to(dev, non_blocking=True)", 4 * h, "GB/s"),
        (f"device to host {size(4 * h)}",
         f"g = ones({h}) @ gpu({{d}})",
         "h = g.asnumpy()",
         f"g = torch.ones({h}, device=dev)",
         "h = g.cpu()", 4 * h, "GB/s"),
        # Convolution as im2col (kernels/window.cu) + cuBLAS GEMM, its backward (the im2col
        # adjoint and two GEMMs), and max pooling (im2col + a row reduction), PyTorch's dialect.
        (f"conv2d 3x3 {conv_text}",
         conv_setup.replace("{grad}", "False"),
         "y = F.conv2d(x, w, padding=1)",
         conv_setup.replace("{grad}", "False").replace("'cuda:{d}'", "dev"),
         "y = F.conv2d(x, w, padding=1)", conv_flops, "GFLOP/s"),
        (f"conv2d 3x3 fwd+bwd {conv_text}",
         conv_setup.replace("{grad}", "True"),
         "F.conv2d(x, w, padding=1).sum().backward()",
         conv_setup.replace("{grad}", "True").replace("'cuda:{d}'", "dev"),
         "F.conv2d(x, w, padding=1).sum().backward()", 3 * conv_flops, "GFLOP/s"),
        (f"max_pool2d 3x3/2 {pool_text}",
         pool_setup,
         "y = F.max_pool2d(x, 3, 2, 1)",
         pool_setup.replace("'cuda:{d}'", "dev"),
         "y = F.max_pool2d(x, 3, 2, 1)", 4 * pool_n, "GB/s"),
        ("per-op latency: 3-element add",
         "a = ones(3) @ gpu({d}); b = ones(3) @ gpu({d})",
         "c = a + b",
         "a = torch.ones(3, device=dev); b = torch.ones(3, device=dev)",
         "c = a + b", None, "us/op"),
    ]
    return out


def devarray_time(binary, setup, stmt, repeat, device, timeout):
    setup = setup.format(d=device)
    stmt = stmt.format(d=device)
    script = "\n".join([
        "import time",
        setup,
        stmt,  # warm-up: compiles the kernels
        "waitall()",
        "t0 = time.time()",
        f"for _ in range({repeat}):",
        f"    {stmt}",
        "waitall()",
        "print(time.time() - t0)",
    ])
    out = subprocess.run([binary, "-c", script], capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0 or not out.stdout.strip():
        raise RuntimeError(f"devarray exited with {out.returncode}: {(out.stdout + out.stderr).strip()[-2000:]}")
    return float(out.stdout.strip().splitlines()[-1]) / repeat


def torch_time(torch, setup, stmt, repeat, device):
    env = {"torch": torch, "dev": torch.device(f"cuda:{device}")}
    exec(setup, env)
    exec(stmt, env)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(repeat):
        exec(stmt, env)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / repeat


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--binary", default=os.environ.get("DEVARRAY_BIN", BINARY),
                        help="the devarray binary (default: $DEVARRAY_BIN, else target/release/devarray)")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--small", action="store_true", help="small sizes (the CUDA emulator)")
    parser.add_argument("--no-torch", action="store_true", help="time devarray only")
    parser.add_argument("--timeout", type=float, default=60, help="seconds for each devarray run")
    args = parser.parse_args()
    torch, missing = None, None
    if not args.no_torch:
        try:
            import torch
        except ImportError as e:
            missing = f"PyTorch cannot be imported ({e}): pip install torch"
        if torch is not None and not torch.cuda.is_available():
            missing = "no CUDA GPU is visible to PyTorch"
            torch = None
    else:
        missing = "--no-torch"
    if not os.path.exists(args.binary):
        sys.exit(f"{args.binary} is missing: run cargo build --release first")
    device = torch.cuda.get_device_name(args.device) if torch else None
    print(f"{device or 'devarray only: ' + missing}, {args.repeat} repeats", flush=True)
    print(f"{'workload':42} {'devarray':>12} {'pytorch':>12} {'ratio':>7}", flush=True)
    rows = []
    for name, da_setup, da_stmt, t_setup, t_stmt, work, unit in workloads(args.small):
        row = {"workload": name, "unit": unit, "devarray": None, "pytorch": None, "ratio": None}
        try:
            da = devarray_time(args.binary, da_setup, da_stmt, args.repeat, args.device, args.timeout)
            pt = torch_time(torch, t_setup, t_stmt, args.repeat, args.device) if torch else None
        except Exception as e:  # one workload's failure is reported; the others still run
            row["error"] = f"{type(e).__name__}: {e}"
            rows.append(row)
            print(f"{name:42} error: {row['error']}", flush=True)
            continue
        if work is None:
            row["devarray"] = da * 1e6
            row["pytorch"] = pt * 1e6 if pt else None
            ratio = da / pt if pt else None  # lower is better
        else:
            scale = 1e9
            row["devarray"] = work / da / scale
            row["pytorch"] = work / pt / scale if pt else None
            ratio = pt / da if pt else None  # devarray throughput / pytorch throughput, higher is better
        row["ratio"] = ratio
        rows.append(row)
        da_s = f"{row['devarray']:.1f} {unit}"
        pt_s = f"{row['pytorch']:.1f} {unit}" if pt else "-"
        ratio_s = f"{ratio:7.2f}" if ratio is not None else "      -"
        print(f"{name:42} {da_s:>12} {pt_s:>12} {ratio_s}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device, "repeat": args.repeat, "pytorch": torch is not None,
                       "pytorch_missing": missing, "rows": rows}, f, indent=1)
    if any("error" in row for row in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
