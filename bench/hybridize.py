#!/usr/bin/env python3
"""The book's hybridize benchmark: 1000 calls of get_net() (Dense 256-relu, 128-relu, 2 on a
(1, 512) input), imperative against hybridized (MXNet) and against torch.jit.script (PyTorch);
and a 16-16-2 MLP, where the interpreter's share of a call (what compiling removes) shows;
both frameworks.

Prints seconds per 1000 calls (the median of ROUNDS rounds, imperative and compiled rounds
alternating, so that load on the machine slows both alike) and the ratio imperative / compiled
(above 1: compiling helps). Not a timed test: run it by hand, with a release build.

Usage: python3 bench/hybridize.py [path/to/devarray]   (default target/release/devarray)
"""
import subprocess
import sys

# 1000 calls per round; the median round of each, rounds alternating between the two.
ROUNDS = 7

MXNET = """
import time
from mxnet import np, npx
from mxnet.gluon import nn
npx.set_np()
def get_net(width):
    net = nn.HybridSequential()
    net.add(nn.Dense(width[0], activation='relu'), nn.Dense(width[1], activation='relu'), nn.Dense(2))
    net.initialize()
    return net
def bench(net, x):
    net(x)
    npx.waitall()
    t = time.perf_counter()
    for i in range(1000):
        net(x)
    npx.waitall()
    return time.perf_counter() - t
for label, width, features in (('book net', (256, 128), 512), ('16-16-2 MLP', (16, 16), 16)):
    x = np.random.normal(size=(1, features))
    imperative, hybridized = get_net(width), get_net(width)
    hybridized.hybridize()
    a, b = [], []
    for _ in range(ROUNDS):  # alternating, so a loaded machine slows both alike
        a.append(bench(imperative, x))
        b.append(bench(hybridized, x))
    a, b = sorted(a)[ROUNDS // 2], sorted(b)[ROUNDS // 2]
    print(f'mxnet  {label:12} imperative {a:.4f} s  hybridized {b:.4f} s  ratio {a / b:.2f}')
"""

TORCH = """
import time
import torch
from torch import nn
def get_net(width, features):
    return nn.Sequential(nn.Linear(features, width[0]), nn.ReLU(), nn.Linear(width[0], width[1]),
                         nn.ReLU(), nn.Linear(width[1], 2))
def bench(net, x):
    net(x)
    t = time.perf_counter()
    for i in range(1000):
        net(x)
    return time.perf_counter() - t
for label, width, features in (('book net', (256, 128), 512), ('16-16-2 MLP', (16, 16), 16)):
    x = torch.randn(size=(1, features))
    net = get_net(width, features)
    scripted = torch.jit.script(net)
    a, b = [], []
    for _ in range(ROUNDS):
        a.append(bench(net, x))
        b.append(bench(scripted, x))
    a, b = sorted(a)[ROUNDS // 2], sorted(b)[ROUNDS // 2]
    print(f'torch  {label:12} imperative {a:.4f} s  scripted   {b:.4f} s  ratio {a / b:.2f}')
"""


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "target/release/devarray"
    for program in (MXNET, TORCH):
        program = f"ROUNDS = {ROUNDS}\n" + program
        out = subprocess.run(
            [binary, "-c", program], capture_output=True, text=True, timeout=600
        )
        if out.returncode != 0:
            sys.exit(f"devarray failed:\n{out.stdout}{out.stderr}")
        print(out.stdout.strip())


if __name__ == "__main__":
    main()
