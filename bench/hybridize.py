#!/usr/bin/env python3
"""The book's hybridize benchmark: 1000 calls of get_net() (Dense 256-relu, 128-relu, 2 on a
(1, 512) input), imperative against hybridized (MXNet) and against torch.jit.script (PyTorch);
a 16-16-2 MLP, where the interpreter's share of a call (what compiling removes) shows; and a
LeNet (the book's, with batch norm: convolution, pooling and batch-norm layers in the plan) on
one 28x28 image; both frameworks. PyTorch's LeNet is also traced from a forward of its own
(`torch.jit.trace`: its layers recorded and replayed) and scripted from it (`torch.jit.script`
of a straight-line forward: recorded at the first two calls, replayed after), and so is a
16-16-2 MLP with a forward of its own.

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
    if width == 'lenet':
        net.add(nn.Conv2D(6, kernel_size=5, padding=2), nn.BatchNorm(), nn.Activation('sigmoid'),
                nn.AvgPool2D(pool_size=2, strides=2), nn.Conv2D(16, kernel_size=5), nn.BatchNorm(),
                nn.Activation('sigmoid'), nn.MaxPool2D(pool_size=2, strides=2),
                nn.Dense(120, activation='sigmoid'), nn.Dense(84, activation='sigmoid'), nn.Dense(10))
    else:
        net.add(nn.Dense(width[0], activation='relu'), nn.Dense(width[1], activation='relu'),
                nn.Dense(2))
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
for label, width, shape in (('book net', (256, 128), (1, 512)), ('16-16-2 MLP', (16, 16), (1, 16)),
                            ('LeNet', 'lenet', (1, 1, 28, 28))):
    x = np.random.normal(size=shape)
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
    if width == 'lenet':
        return nn.Sequential(
            nn.Conv2d(1, 6, kernel_size=5, padding=2), nn.BatchNorm2d(6), nn.Sigmoid(),
            nn.AvgPool2d(kernel_size=2, stride=2), nn.Conv2d(6, 16, kernel_size=5),
            nn.BatchNorm2d(16), nn.Sigmoid(), nn.MaxPool2d(kernel_size=2, stride=2), nn.Flatten(),
            nn.Linear(400, 120), nn.Sigmoid(), nn.Linear(120, 84), nn.Sigmoid(), nn.Linear(84, 10))
    return nn.Sequential(nn.Linear(features, width[0]), nn.ReLU(), nn.Linear(width[0], width[1]),
                         nn.ReLU(), nn.Linear(width[1], 2))
class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = get_net('lenet', None)
    def forward(self, x):
        for layer in self.body:
            x = layer(x)
        return x
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.h1, self.h2, self.out = nn.Linear(16, 16), nn.Linear(16, 16), nn.Linear(16, 2)
    def forward(self, x):
        return self.out(torch.relu(self.h2(torch.relu(self.h1(x)))))
def bench(net, x):
    net(x)
    t = time.perf_counter()
    for i in range(1000):
        net(x)
    return time.perf_counter() - t
for label, width, shape in (('book net', (256, 128), (1, 512)), ('16-16-2 MLP', (16, 16), (1, 16)),
                            ('LeNet', 'lenet', (1, 1, 28, 28)), ('LeNet fwd', None, (1, 1, 28, 28)),
                            ('LeNet fwd', 'script', (1, 1, 28, 28)), ('MLP fwd', 'mlp', (1, 16))):
    x = torch.randn(size=shape)
    if width is None:  # a forward of its own: torch.jit.trace records and replays it
        net = LeNet().eval()
        scripted, how = torch.jit.trace(net, x), 'traced  '
    elif width in ('script', 'mlp'):  # a forward of its own, scripted: recorded at the first calls
        net = (LeNet() if width == 'script' else MLP()).eval()
        scripted, how = torch.jit.script(net), 'scripted'
    else:
        net, how = get_net(width, shape[-1]).eval(), 'scripted'
        scripted = torch.jit.script(net)
    a, b = [], []
    for _ in range(ROUNDS):
        a.append(bench(net, x))
        b.append(bench(scripted, x))
    a, b = sorted(a)[ROUNDS // 2], sorted(b)[ROUNDS // 2]
    print(f'torch  {label:12} imperative {a:.4f} s  {how}   {b:.4f} s  ratio {a / b:.2f}')
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
