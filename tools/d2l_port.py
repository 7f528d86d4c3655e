"""Regenerates src/modules/library/d2l/{torch,mxnet}.da from the real d2l 1.0.3 package (MIT-0).

devarray's d2l is the real library's code for the names devarray can serve, in devarray's
language (which runs this Python unchanged), so names, signatures, defaults and printed text are
the book's. What the real module imports that devarray has no use for (PIL, pandas, requests,
scipy, the download helpers) is left out, and every other name of the real library is answered
by the module's `__getattr__` with an error that says devarray lacks it.

    pip download d2l==1.0.3 --no-deps -d /tmp/d2l && unzip /tmp/d2l/*.whl -d /tmp/d2l
    python3 tools/d2l_port.py /tmp/d2l/d2l
"""
import ast
import sys
from pathlib import Path

# The names devarray serves, in the order they are written (bases before subclasses).
SERVED = {
    "torch": [
        "use_svg_display", "set_figsize", "set_axes", "plot", "add_to_class",
        "HyperParameters", "ProgressBoard", "Module", "DataModule", "Trainer",
        "SyntheticRegressionData", "LinearRegressionScratch", "SGD", "LinearRegression",
        "FashionMNIST", "Classifier", "SoftmaxRegression", "cpu", "gpu", "num_gpus",
        "try_gpu", "try_all_gpus", "corr2d", "init_cnn", "LeNet", "Residual", "ResNeXtBlock",
        "Timer", "Benchmark", "split_batch", "resnet18", "train_batch_ch13", "train_ch13",
        "synthetic_data", "sgd", "get_dataloader_workers", "load_data_fashion_mnist",
        "evaluate_accuracy_gpu", "train_ch6", "show_images", "linreg", "squared_loss",
        "get_fashion_mnist_labels", "Animator", "Accumulator", "accuracy", "evaluate_loss",
    ],
    "mxnet": [
        "use_svg_display", "set_figsize", "set_axes", "plot", "add_to_class",
        "HyperParameters", "ProgressBoard", "Module", "DataModule", "Trainer",
        "SyntheticRegressionData", "LinearRegressionScratch", "SGD", "LinearRegression",
        "FashionMNIST", "Classifier", "SoftmaxRegression", "cpu", "gpu", "num_gpus",
        "try_gpu", "try_all_gpus", "corr2d", "LeNet", "Residual", "ResNeXtBlock",
        "Timer", "Benchmark", "split_batch", "resnet18", "evaluate_accuracy_gpus",
        "train_batch_ch13", "train_ch13", "synthetic_data", "sgd", "get_dataloader_workers",
        "load_data_fashion_mnist", "evaluate_accuracy_gpu", "train_ch6", "show_images",
        "linreg", "squared_loss", "get_fashion_mnist_labels", "Animator", "Accumulator",
        "accuracy", "evaluate_accuracy", "evaluate_loss",
    ],
}

# Aliases whose framework function devarray does not have yet: left out, and the module's
# `__getattr__` names the missing function.
MISSING_TARGETS = {
    "torch": {"meshgrid": "torch.meshgrid", "sinh": "torch.sinh", "cosh": "torch.cosh",
              "linspace": "torch.linspace", "batch_matmul": "torch.bmm"},
    "mxnet": {"meshgrid": "np.meshgrid", "linspace": "np.linspace", "sinh": "np.sinh",
              "cosh": "np.cosh", "expand_dims": "np.expand_dims",
              "batch_matmul": "npx.batch_dot"},
}

HEADER = {
    "torch": '''import collections
import inspect
import math
import os
import random
import re
import sys
import time
from collections import defaultdict
from IPython import display
from matplotlib import pyplot as plt
from matplotlib_inline import backend_inline

import numpy as np
import torch
import torchvision
from torch import nn
from torch.nn import functional as F
from torch.utils import data
from torchvision import transforms

nn_Module = nn.Module
d2l = sys.modules[__name__]
''',
    "mxnet": '''import collections
import inspect
import math
import os
import random
import re
import sys
import time
from collections import defaultdict
from IPython import display
from matplotlib import pyplot as plt
from matplotlib_inline import backend_inline

from mxnet import autograd, context, gluon, init, np, npx
from mxnet.gluon import nn
from mxnet.gluon.data.vision import transforms

npx.set_np()
nn_Module = nn.Block
d2l = sys.modules[__name__]
''',
}


def final_definitions(tree, source):
    """Each top-level def/class by name, the last one winning (the book's file defines some
    twice); inside a class, a method defined twice keeps its last body."""
    found = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found[node.name] = node
    return found


def render(node, source):
    lines = source.splitlines()
    if isinstance(node, ast.ClassDef):
        last = {}
        for item in node.body:
            if isinstance(item, ast.FunctionDef):
                last[item.name] = item
        drop = set()
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and last[item.name] is not item:
                start = (item.decorator_list[0].lineno if item.decorator_list else item.lineno)
                drop.update(range(start - 1, item.end_lineno))
        start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
        kept = [l for i, l in enumerate(lines[start - 1:node.end_lineno], start - 1)
                if i not in drop]
    else:
        start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
        kept = lines[start - 1:node.end_lineno]
    return "\n".join(l.rstrip() for l in kept)


def aliases(source, missing):
    tail = source[source.index("# Alias defined in config.ini"):]
    return "\n".join(
        l for l in tail.splitlines()[1:]
        if l.strip() and l.split("=")[0].strip() not in missing
    )


def main(pkg):
    out_dir = Path(__file__).resolve().parent.parent / "src/modules/library/d2l"
    for dialect, served in SERVED.items():
        source = (Path(pkg) / f"{dialect}.py").read_text()
        tree = ast.parse(source)
        defs = final_definitions(tree, source)
        missing = [n for n in served if n not in defs]
        if missing:
            sys.exit(f"{dialect}.py has no {missing}")
        others = sorted(n for n in defs if n not in served)
        parts = [
            f'"""The book\'s helper library for {"PyTorch" if dialect == "torch" else "MXNet"} '
            f'(d2l 1.0.3\'s `d2l/{dialect}.py`, MIT-0),\nin devarray\'s language. Generated by '
            f'tools/d2l_port.py: the real definitions of the names devarray\nserves; the '
            f'library\'s other names raise an AttributeError that says so."""\n',
            HEADER[dialect],
        ]
        parts += [render(defs[n], source) + "\n" for n in served]
        missing_targets = MISSING_TARGETS[dialect]
        parts.append(aliases(source, missing_targets) + "\n")
        parts.append(
            "_NOT_IN_DEVARRAY = frozenset([\n"
            + "".join(f"    '{n}',\n" for n in others)
            + "])\n\n\n"
            "_MISSING_TARGETS = {\n"
            + "".join(f"    '{k}': '{v}',\n" for k, v in missing_targets.items())
            + "}\n\n\n"
            "def __getattr__(name):\n"
            "    if name in _MISSING_TARGETS:\n"
            "        raise AttributeError(\n"
            f"            f\"d2l.{dialect}.{{name}} is {{_MISSING_TARGETS[name]}}, which devarray does not have yet\")\n"
            "    if name in _NOT_IN_DEVARRAY:\n"
            "        raise AttributeError(\n"
            f"            f\"d2l.{dialect}.{{name}} is part of the real d2l library but not of devarray's \"\n"
            "            \"(it needs data sets, models or packages devarray cannot provide offline); \"\n"
            "            \"see src/modules/library/d2l for what devarray's d2l has\")\n"
            f"    raise AttributeError(f\"module 'd2l.{dialect}' has no attribute '{{name}}'\")\n"
        )
        (out_dir / f"{dialect}.da").write_text("\n\n".join(parts))
        print(dialect, len(served), "served,", len(others), "not in devarray")


if __name__ == "__main__":
    main(sys.argv[1])
