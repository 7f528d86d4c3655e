#!/usr/bin/env python3
"""devarray vs PyTorch on the same NVIDIA GPU.

Runs each workload in devarray (a script through the release binary, timed inside devarray with
time.time() and waitall()) and in PyTorch (torch.cuda.synchronize around the same loop), then prints
both times and the ratio against DESIGN.md's GPU targets:
  GEMM within 10% of cuBLAS through PyTorch, fused elementwise within 15% of device copy
  bandwidth, pinned host-to-device copies within 10% of PyTorch.

Usage: cargo build --release && python3 bench/gpu_bench.py [--device 0] [--repeat 20]
Needs: an NVIDIA GPU, its driver, NVRTC/cuBLAS/cuRAND libraries on LD_LIBRARY_PATH, and torch.
"""
import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.join(ROOT, "target", "release", "devarray")

# name, devarray setup, devarray statement, torch setup, torch statement, work (for a rate), unit
WORKLOADS = [
    ("sgemm 1024^2",
     "a = random.normal(0, 1, (1024, 1024)) @ gpu({d}); b = random.normal(0, 1, (1024, 1024)) @ gpu({d})",
     "c = a @ b",
     "a = torch.randn(1024, 1024, device=dev); b = torch.randn(1024, 1024, device=dev)",
     "c = a @ b", 2 * 1024 ** 3, "GFLOP/s"),
    ("sgemm 4096^2",
     "a = random.normal(0, 1, (4096, 4096)) @ gpu({d}); b = random.normal(0, 1, (4096, 4096)) @ gpu({d})",
     "c = a @ b",
     "a = torch.randn(4096, 4096, device=dev); b = torch.randn(4096, 4096, device=dev)",
     "c = a @ b", 2 * 4096 ** 3, "GFLOP/s"),
    ("fused (z + 2).exp() * y, 1e8 float32",
     "z = ones(100000000) @ gpu({d}); y = ones(100000000) @ gpu({d})",
     "w = (z + 2).exp() * y",
     "z = torch.ones(100000000, device=dev); y = torch.ones(100000000, device=dev)",
     "w = (z + 2).exp() * y", 3 * 4 * 10 ** 8, "GB/s"),
    ("device copy 400 MB",
     "z = ones(100000000) @ gpu({d})",
     "w = z.copyto(gpu({d}))",
     "z = torch.ones(100000000, device=dev)",
     "w = z.clone()", 2 * 4 * 10 ** 8, "GB/s"),
    ("host to device 256 MiB",
     "h = ones(67108864)",
     "g = h.copyto(gpu({d}))",
     "h = torch.ones(67108864).pin_memory()",
     "g = h.to(dev, non_blocking=True)", 256 << 20, "GB/s"),
    ("device to host 256 MiB",
     "g = ones(67108864) @ gpu({d})",
     "h = g.asnumpy()",
     "g = torch.ones(67108864, device=dev)",
     "h = g.cpu()", 256 << 20, "GB/s"),
    ("per-op latency: 3-element add",
     "a = ones(3) @ gpu({d}); b = ones(3) @ gpu({d})",
     "c = a + b",
     "a = torch.ones(3, device=dev); b = torch.ones(3, device=dev)",
     "c = a + b", None, "us/op"),
]


def devarray_time(setup, stmt, repeat, device):
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
    out = subprocess.run([BINARY, "-c", script], capture_output=True, text=True, check=True)
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
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("PyTorch is needed for the comparison: pip install torch")
    if not torch.cuda.is_available():
        sys.exit("no CUDA GPU is visible to PyTorch; this benchmark needs one")
    if not os.path.exists(BINARY):
        sys.exit(f"{BINARY} is missing: run cargo build --release first")
    print(f"{torch.cuda.get_device_name(args.device)}, {args.repeat} repeats")
    print(f"{'workload':42} {'devarray':>12} {'pytorch':>12} {'ratio':>7}")
    for name, da_setup, da_stmt, t_setup, t_stmt, work, unit in WORKLOADS:
        da = devarray_time(da_setup, da_stmt, args.repeat, args.device)
        pt = torch_time(torch, t_setup, t_stmt, args.repeat, args.device)
        if work is None:
            da_s, pt_s = f"{da * 1e6:.1f} {unit}", f"{pt * 1e6:.1f} {unit}"
            ratio = da / pt  # lower is better
        else:
            scale = 1e9
            da_s = f"{work / da / scale:.1f} {unit}"
            pt_s = f"{work / pt / scale:.1f} {unit}"
            ratio = pt / da  # devarray throughput / pytorch throughput, higher is better
        print(f"{name:42} {da_s:>12} {pt_s:>12} {ratio:7.2f}")


if __name__ == "__main__":
    main()
