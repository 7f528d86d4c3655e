#!/usr/bin/env python3
"""The book's hybridize benchmark: 1000 calls of get_net() (Dense 256-relu, 128-relu, 2 on a
(1, 512) input), imperative against hybridized (MXNet) and against torch.jit.script (PyTorch);
and a 16-16-2 MLP, where the interpreter's share of a call (what hybridize removes) shows.

Prints seconds per 1000 calls and the ratio imperative / compiled (above 1: compiling helps).
Not a timed test: run it by hand on a quiet machine, with a release build.

Usage: python3 bench/hybridize.py [path/to/devarray]   (default target/release/devarray)
"""
import subprocess
import sys

MXNET = """
import time
from mxnet import np, npx
from mxnet.gluon import nn
npx.set_np()
def get_net():
    net = nn.HybridSequential()
    net.add(nn.Dense(256, activation='relu'), nn.Dense(128, activation='relu'), nn.Dense(2))
    net.initialize()
    return net
x = np.random.normal(size=(1, 512))
def bench(net):
    net(x)
    npx.waitall()
    t = time.perf_counter()
    for i in range(1000):
        net(x)
    npx.waitall()
    return time.perf_counter() - t
net = get_net()
a = min(bench(net) for _ in range(3))
net.hybridize()
b = min(bench(net) for _ in range(3))
print(f'mxnet  imperative {a:.4f} s  hybridized {b:.4f} s  ratio {a / b:.2f}')
# The same with layers so small that the kernels cost little: what compiling saves per call.
def small_net():
    net = nn.HybridSequential()
    net.add(nn.Dense(16, activation='relu'), nn.Dense(16, activation='relu'), nn.Dense(2))
    net.initialize()
    return net
x = np.random.normal(size=(1, 16))
net = small_net()
a = min(bench(net) for _ in range(3))
net.hybridize()
b = min(bench(net) for _ in range(3))
print(f'mxnet  16-16-2 MLP: imperative {a:.4f} s  hybridized {b:.4f} s  ratio {a / b:.2f}')
"""

TORCH = """
import time
import torch
from torch import nn
def get_net():
    return nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                         nn.Linear(128, 2))
x = torch.randn(size=(1, 512))
def bench(net):
    net(x)
    t = time.perf_counter()
    for i in range(1000):
        net(x)
    return time.perf_counter() - t
net = get_net()
a = min(bench(net) for _ in range(3))
net = torch.jit.script(net)
b = min(bench(net) for _ in range(3))
print(f'torch  imperative {a:.4f} s  scripted   {b:.4f} s  ratio {a / b:.2f}')
"""


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "target/release/devarray"
    for program in (MXNET, TORCH):
        out = subprocess.run(
            [binary, "-c", program], capture_output=True, text=True, timeout=600
        )
        if out.returncode != 0:
            sys.exit(f"devarray failed:\n{out.stdout}{out.stderr}")
        print(out.stdout.strip())


if __name__ == "__main__":
    main()
