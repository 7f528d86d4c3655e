"""Checks devarray's d2l against the real d2l 1.0.3, name by name, for both dialects.

For every name of issue 26's public surface and of ../shared/corpus/d2l-next/d2l-api.md (and
the methods the issue names), it compares:
  - the real library's `inspect.signature` text (run in a Python that has d2l 1.0.3 and the
    framework: PyTorch for `torch`, MXNet 1.9.1 for `mxnet`), with
  - the signature devarray's source gives (`src/modules/library/d2l/*.da` read with `ast`: the
    library is written in devarray's language, which is Python's syntax), and
  - what devarray itself answers for `d2l.NAME` (it exists, or the error it raises).

    python3 tools/d2l_surface.py DEVARRAY --torch-python VENV/bin/python --mxnet-python VENV/bin/python

Prints one line per difference and a count per dialect; exit status 1 when something differs.
Defaults that the real library evaluates at import (`devices=d2l.try_all_gpus()`) are compared
as source text on devarray's side and as the value's repr on the real side, so they are listed
separately as "evaluated default" and do not count as differences.
"""
import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Issue 26's Build list, part 1.
FUNCTIONS = [
    "Timer", "Benchmark", "Accumulator", "accuracy", "evaluate_accuracy", "evaluate_accuracy_gpu",
    "sgd", "split_batch", "load_data_fashion_mnist", "get_fashion_mnist_labels", "show_images",
    "Animator", "plot", "set_figsize", "set_axes", "use_svg_display", "train_ch6", "resnet18",
    "corr2d", "try_gpu", "try_all_gpus", "cpu", "gpu", "num_gpus",
]
CLASSES = {
    "HyperParameters": ["save_hyperparameters"],
    "ProgressBoard": ["draw"],
    "Module": ["loss", "forward", "plot", "training_step", "validation_step",
               "configure_optimizers", "apply_init"],
    "DataModule": ["get_dataloader", "train_dataloader", "val_dataloader"],
    "Trainer": ["fit", "prepare_data", "prepare_model", "fit_epoch", "prepare_batch",
                "clip_gradients"],
    "Classifier": ["accuracy", "loss", "layer_summary", "validation_step"],
    "FashionMNIST": ["text_labels", "get_dataloader", "visualize"],
    "Residual": ["forward"],
    "SGD": ["step", "zero_grad"],
}
OTHERS = ["add_to_class", "init_cnn", "load_array", "synthetic_data", "linreg", "squared_loss"]
ALIASES = ["tensor", "ones", "zeros", "arange", "float32", "reshape", "reduce_sum", "transpose",
           "matmul", "normal", "randn", "stack", "concat", "argmax", "astype", "size", "to",
           "numpy", "abs", "exp", "log", "sin", "cos", "linspace", "meshgrid", "sinh", "cosh",
           "tanh", "ones_like", "zeros_like", "int32", "float64", "eye", "rand", "expand_dims",
           "reduce_mean"]
# The data-file helpers (files already in ../data; devarray never downloads) and the text
# helpers, which are plain Python.
DATA = ["DATA_HUB", "DATA_URL", "download", "extract", "download_extract", "tokenize", "Vocab",
        "Vocab.to_tokens", "TimeMachine", "TimeMachine.build", "TimeMachine.get_dataloader",
        "read_data_nmt", "preprocess_nmt", "tokenize_nmt", "truncate_pad", "build_array_nmt",
        "load_data_nmt", "MTFraEng", "bleu", "check_len", "check_shape", "grad_clipping"]
# Names the real library has that need packages devarray does not ship: each must be
# devarray's AttributeError that says why.
UNSERVED = ["read_data_bananas", "load_data_voc", "read_voc_images", "frozen_lake"]
CLEAR = "is part of the real d2l library but not of devarray's: "

# Names whose data the real library downloads: devarray serves them, and called where the
# files are not in ../data each must raise the FileNotFoundError that says where to put them.
DOWNLOADED = {
    "load_data_wiki": "d2l.load_data_wiki(4, 8)",
    "load_data_snli": "d2l.load_data_snli(4)",
    "load_data_imdb": "d2l.load_data_imdb(4)",
    "TokenEmbedding": "d2l.TokenEmbedding('glove.6b.50d')",
}
NEVER = "devarray never downloads"

REAL = r'''
import inspect, json, sys, warnings
warnings.filterwarnings("ignore")
from d2l import DIALECT as d2l
names = json.loads(sys.argv[1])
out = {}
for n in names:
    obj = d2l
    try:
        for part in n.split("."):
            obj = getattr(obj, part)
    except AttributeError:
        out[n] = None
        continue
    try:
        out[n] = "sig " + str(inspect.signature(obj))
    except (TypeError, ValueError):
        out[n] = "value " + type(obj).__name__
print(json.dumps(out))
'''

DEVARRAY = r'''
from d2l import DIALECT as d2l
for n in NAMES:
    obj = d2l
    try:
        for part in n.split("."):
            obj = getattr(obj, part)
        print(n, "ok")
    except Exception as e:
        print(n, "error", type(e).__name__ + ": " + str(e).split("\n")[0])
for n, call in CALLS.items():
    try:
        eval(call)
        print(n, "ok")
    except Exception as e:
        print(n, "error", type(e).__name__ + ": " + str(e).split("\n")[0])
'''


def source_signatures(path):
    """name -> signature text from the devarray library source (functions, classes' __init__
    without self, methods as read through the class)."""
    tree = ast.parse(open(path).read())
    out = {}

    def text(args, drop_self):
        a = ast.arguments(**{f: getattr(args, f) for f in args._fields})
        if drop_self and a.posonlyargs:
            a.posonlyargs = a.posonlyargs[1:]
        elif drop_self and a.args:
            a.args = a.args[1:]
            if len(a.defaults) > len(a.args):
                a.defaults = a.defaults[1:]
        return "(" + ast.unparse(a) + ")"

    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = ("sig", text(node.args, False))
        elif isinstance(node, ast.ClassDef):
            init = None
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    # Read through the class, a method's signature keeps `self`.
                    out[node.name + "." + item.name] = ("sig", text(item.args, False))
                    if item.name == "__init__":
                        init = item
            out[node.name] = ("sig", text(init.args, True)) if init else ("inherited", "")
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = ("value", ast.unparse(node.value))
        # `@d2l.add_to_class(C)` functions at top level are FunctionDefs named as the method:
        # the class's later method wins, as in the real module.
    return out


def normalize(sig):
    """Signature text as inspect prints it: `(a, b=1, *args, **kwargs)`; strings in single
    quotes, no spaces around `=`."""
    return sig.replace('"', "'")


def check(dialect, python, devarray):
    names = FUNCTIONS + list(CLASSES) + OTHERS + ALIASES + DATA
    names += [c + "." + m for c, ms in CLASSES.items() for m in ms]
    real = json.loads(subprocess.run(
        [python, "-c", REAL.replace("DIALECT", dialect), json.dumps(names + UNSERVED)],
        capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1])
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(DEVARRAY.replace("DIALECT", dialect).replace("NAMES", repr(names + UNSERVED))
                .replace("CALLS", repr(DOWNLOADED)))
        script = f.name
    env = dict(os.environ, DEVARRAY_SIM_GPUS="0", NO_COLOR="1")
    run = subprocess.run([devarray, script], capture_output=True, text=True, env=env)
    os.unlink(script)
    answers = {}
    for line in run.stdout.splitlines():
        name, _, rest = line.partition(" ")
        answers[name] = rest
    src = source_signatures(os.path.join(ROOT, "src/modules/library/d2l", dialect + ".da"))
    differences = 0
    for n in names:
        r = real.get(n)
        if r is None:
            print(f"{dialect}: {n}: not in the real d2l 1.0.3 (listed by mistake)")
            continue
        got = answers.get(n, "missing from devarray's output")
        if got != "ok":
            differences += 1
            print(f"{dialect}: {n}: devarray: {got}")
            continue
        if not r.startswith("sig "):
            continue
        mine = src.get(n)
        if mine is None or mine[0] != "sig":
            # Inherited __init__, an alias or a built-in: nothing to read in the source.
            continue
        want, have = normalize(r[4:]), normalize(mine[1])
        if want != have:
            if any(ch in have for ch in "()") and have.count("(") > 1:
                print(f"{dialect}: {n}: evaluated default: real {want} / source {have}")
                continue
            differences += 1
            print(f"{dialect}: {n}: signature differs: real {want} / devarray {have}")
    for n in UNSERVED:
        if real.get(n) is None:
            continue
        got = answers.get(n, "")
        if not (got.startswith("error AttributeError") and CLEAR in got):
            differences += 1
            print(f"{dialect}: {n} (needs a download or a package): devarray answers "
                  f"{got or 'nothing'}; want an error that says why")
    for n in DOWNLOADED:
        got = answers.get(n, "")
        if not (got.startswith("error FileNotFoundError") and NEVER in got):
            differences += 1
            print(f"{dialect}: {n} (its data is downloaded): devarray answers "
                  f"{got or 'nothing'}; want the FileNotFoundError that says where to put it")
    print(f"{dialect}: {len(names)} names and methods checked, {len(UNSERVED)} unservable; "
          f"{differences} differences")
    return differences


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("devarray")
    ap.add_argument("--torch-python", default="/tmp/venv-torchref/bin/python")
    ap.add_argument("--mxnet-python", default="/tmp/venv-mx/bin/python")
    args = ap.parse_args()
    total = check("torch", args.torch_python, args.devarray)
    total += check("mxnet", args.mxnet_python, args.devarray)
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main()
