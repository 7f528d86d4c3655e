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
import re
import sys
from pathlib import Path

# The data-file helpers and the text data sets' plain Python, the same in both dialects.
TEXT = [
    "download", "extract", "download_extract", "tokenize", "Vocab", "TimeMachine",
    "read_data_nmt", "preprocess_nmt", "tokenize_nmt", "truncate_pad", "build_array_nmt",
    "load_data_nmt", "MTFraEng", "bleu", "check_len", "check_shape",
]

# The names devarray serves, in the order they are written (bases before subclasses).
SERVED = {
    "torch": [
        "use_svg_display", "set_figsize", "set_axes", "plot", "add_to_class",
        "HyperParameters", "ProgressBoard", "Module", "DataModule", "Trainer",
        "SyntheticRegressionData", "LinearRegressionScratch", "SGD", "LinearRegression",
        "FashionMNIST", "Classifier", "SoftmaxRegression", "cpu", "gpu", "num_gpus",
        "try_gpu", "try_all_gpus", "corr2d", "init_cnn", "LeNet", "Residual", "ResNeXtBlock",
        "Timer", "Benchmark", "split_batch", "resnet18", "train_batch_ch13", "train_ch13",
        "load_array", "synthetic_data", "sgd", "get_dataloader_workers", "load_data_fashion_mnist",
        "evaluate_accuracy_gpu", "train_ch6", "show_images", "linreg", "squared_loss",
        "get_fashion_mnist_labels", "Animator", "Accumulator", "accuracy", "evaluate_loss",
        "grad_clipping",
    ] + TEXT,
    "mxnet": [
        "use_svg_display", "set_figsize", "set_axes", "plot", "add_to_class",
        "HyperParameters", "ProgressBoard", "Module", "DataModule", "Trainer",
        "SyntheticRegressionData", "LinearRegressionScratch", "SGD", "LinearRegression",
        "FashionMNIST", "Classifier", "SoftmaxRegression", "cpu", "gpu", "num_gpus",
        "try_gpu", "try_all_gpus", "corr2d", "LeNet", "Residual", "ResNeXtBlock",
        "Timer", "Benchmark", "split_batch", "resnet18", "evaluate_accuracy_gpus",
        "train_batch_ch13", "train_ch13", "load_array", "synthetic_data", "sgd", "get_dataloader_workers",
        "load_data_fashion_mnist", "evaluate_accuracy_gpu", "train_ch6", "show_images",
        "linreg", "squared_loss", "get_fashion_mnist_labels", "Animator", "Accumulator",
        "accuracy", "evaluate_accuracy", "evaluate_loss", "grad_clipping",
    ] + TEXT,
}

# The later chapters' names (attention, transformers, seq2seq, RNNs, optimization, object
# detection, NLP pretraining, recommender systems), in the real file's order: their data sets
# come from ../data, as `download` finds them there.
LATER = {
    "torch": [
        "RNNScratch", "RNNLMScratch", "RNN", "RNNLM", "GRU", "show_list_len_pair_hist", "Encoder",
        "Decoder", "EncoderDecoder", "init_seq2seq", "Seq2SeqEncoder", "Seq2Seq", "show_heatmaps",
        "masked_softmax", "DotProductAttention", "AdditiveAttention", "AttentionDecoder",
        "MultiHeadAttention", "PositionalEncoding", "PositionWiseFFN", "AddNorm",
        "TransformerEncoderBlock", "TransformerEncoder", "annotate", "train_2d", "show_trace_2d",
        "get_data_ch11", "train_ch11", "train_concise_ch11", "box_corner_to_center",
        "box_center_to_corner", "bbox_to_rect", "multibox_prior", "show_bboxes", "box_iou",
        "assign_anchor_to_bbox", "offset_boxes", "multibox_target", "offset_inverse", "nms",
        "multibox_detection", "voc_colormap2label", "voc_label_indices", "voc_rand_crop",
        "read_csv_labels", "copyfile", "reorg_train_valid", "reorg_test", "read_ptb", "subsample",
        "get_centers_and_contexts", "RandomGenerator", "get_negatives", "batchify",
        "load_data_ptb", "TokenEmbedding", "get_tokens_and_segments", "BERTEncoder", "MaskLM",
        "NextSentencePred", "BERTModel", "_read_wiki", "_get_next_sentence",
        "_get_nsp_data_from_paragraph", "_replace_mlm_tokens", "_get_mlm_data_from_tokens",
        "_pad_bert_inputs", "_WikiTextDataset", "load_data_wiki", "_get_batch_loss_bert",
        "read_imdb", "load_data_imdb", "predict_sentiment", "read_snli", "SNLIDataset",
        "load_data_snli", "predict_snli", "HPOTrainer", "HPOSearcher", "RandomSearcher",
        "HPOScheduler", "BasicScheduler", "HPOTuner", "hpo_objective_lenet",
        "SuccessiveHalvingScheduler", "update_D", "update_G", "show_value_function_progress",
        "show_Q_function_progress", "sequence_mask", "MaskedSoftmaxCELoss", "train_seq2seq",
        "predict_seq2seq",
    ],
    "mxnet": [
        "RNNScratch", "RNNLMScratch", "RNN", "RNNLM", "GRU", "show_list_len_pair_hist", "Encoder",
        "Decoder", "EncoderDecoder", "Seq2SeqEncoder", "Seq2Seq", "show_heatmaps",
        "masked_softmax", "DotProductAttention", "AdditiveAttention", "AttentionDecoder",
        "MultiHeadAttention", "PositionalEncoding", "PositionWiseFFN", "AddNorm",
        "TransformerEncoderBlock", "TransformerEncoder", "annotate", "train_2d", "show_trace_2d",
        "get_data_ch11", "train_ch11", "train_concise_ch11", "box_corner_to_center",
        "box_center_to_corner", "bbox_to_rect", "multibox_prior", "show_bboxes", "box_iou",
        "assign_anchor_to_bbox", "offset_boxes", "multibox_target", "offset_inverse", "nms",
        "multibox_detection", "voc_colormap2label", "voc_label_indices", "voc_rand_crop",
        "read_csv_labels", "copyfile", "reorg_train_valid", "reorg_test", "read_ptb", "subsample",
        "get_centers_and_contexts", "RandomGenerator", "get_negatives", "batchify",
        "load_data_ptb", "TokenEmbedding", "get_tokens_and_segments", "BERTEncoder", "MaskLM",
        "NextSentencePred", "BERTModel", "_read_wiki", "_get_next_sentence",
        "_get_nsp_data_from_paragraph", "_replace_mlm_tokens", "_get_mlm_data_from_tokens",
        "_pad_bert_inputs", "_WikiTextDataset", "load_data_wiki", "_get_batch_loss_bert",
        "read_imdb", "load_data_imdb", "predict_sentiment", "read_snli", "SNLIDataset",
        "load_data_snli", "split_batch_multi_inputs", "predict_snli", "update_D", "update_G",
        "load_data_ml100k", "train_recsys_rating", "BPRLoss", "HingeLossbRec", "hit_and_auc",
        "evaluate_ranking", "train_ranking", "CTRDataset", "MaskedSoftmaxCELoss", "train_seq2seq",
        "predict_seq2seq",
    ],
}
# Later names whose base class devarray's framework does not offer yet: what each needs.
LACKS = {
    "torch": {},
    "mxnet": {},
}
for _dialect, _names in LATER.items():
    SERVED[_dialect] += [n for n in _names if n not in LACKS[_dialect]]

# Aliases whose framework function devarray does not have yet: left out, and the module's
# `__getattr__` names the missing function.
MISSING_TARGETS = {
    "torch": {},
    "mxnet": {},
}

# devarray never downloads: what `download` says instead (PATCHES puts it where the real one
# reaches the network).
OFFLINE = '''

def _offline(fname, url, sha1_hash):
    """Why d2l.download cannot give `fname`, and what to do (devarray never downloads)."""
    if os.path.exists(fname):
        sha1 = hashlib.sha1()
        with open(fname, 'rb') as f:
            sha1.update(f.read())
        found = f'{fname} has SHA-1 {sha1.hexdigest()}, not {sha1_hash}'
    else:
        found = f'{fname} is not there'
    return (f'{found}, and devarray never downloads. Fetch {url} on a machine with a '
            f'network and put it at {fname} (the folder the real d2l downloads to, '
            f'relative to where the program runs)'
            + (f'; its SHA-1 must be {sha1_hash}' if sha1_hash else ''))

'''

HEADER = {
    "torch": '''DATA_HUB = dict()
DATA_URL = 'http://d2l-data.s3-accelerate.amazonaws.com/'

import collections
import hashlib
import inspect
import math
import os
import random
import re
import shutil
import sys
import tarfile
import time
import zipfile
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
''' + OFFLINE,
    "mxnet": '''DATA_HUB = dict()
DATA_URL = 'http://d2l-data.s3-accelerate.amazonaws.com/'

import collections
import hashlib
import inspect
import math
import os
import random
import re
import shutil
import sys
import tarfile
import time
import zipfile
from collections import defaultdict
from IPython import display
from matplotlib import pyplot as plt
from matplotlib_inline import backend_inline

from mxnet import autograd, context, gluon, init, np, npx
from mxnet.gluon import nn, rnn
from mxnet.gluon.data.vision import transforms

nn_Module = nn.Block
d2l = sys.modules[__name__]
''' + OFFLINE,
}


# Where devarray's d2l differs from the real code: (name, real text, devarray's text).
PATCHES = [
    ("download", """    # Download
    print(f'Downloading {fname} from {url}...')
    r = requests.get(url, stream=True, verify=True)
    with open(fname, 'wb') as f:
        f.write(r.content)
    return fname""", """    # devarray never downloads: a file already there is used (checked when a SHA-1 is
    # given, as above), else the error says where to put it.
    if os.path.exists(fname) and not sha1_hash:
        return fname
    raise FileNotFoundError(_offline(fname, url, sha1_hash))"""),
]


def patch(name, text):
    for n, old, new in PATCHES:
        if n == name:
            if old not in text:
                sys.exit(f"the patch of {name} no longer applies")
            text = text.replace(old, new)
    return text


def data_hub(tree, source):
    """The real module's `d2l.DATA_HUB[...] = ...` registrations, in order."""
    return "\n".join(
        ast.get_source_segment(source, node) for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript)
        and ast.unparse(node.targets[0].value) == "d2l.DATA_HUB")


PACKAGES = [("pd.", "pandas"), ("gym", "gym"), ("Image.", "PIL"), ("distance_matrix", "scipy"),
            ("image.imread", "mxnet.image"), ("torchvision.io", "torchvision.io")]


def why(name, defs, source, served, lacks=None):
    """Why `name` is not in devarray's d2l: the data it downloads or the package it needs,
    looking through the library's names it uses in turn."""
    if lacks and name in lacks:
        return f"it needs {lacks[name]}, which devarray does not have yet"
    seen, todo, text = set(), [name], []
    while todo:
        n = todo.pop()
        if n in seen or n not in defs:
            continue
        seen.add(n)
        seg = ast.get_source_segment(source, defs[n])
        text.append(seg)
        todo += [m for m in re.findall(r"\b(?:d2l\.)?([A-Za-z_]\w*)\b", seg)
                 if m in defs and m not in served]
    text = "\n".join(text)
    files = re.findall(r"download(?:_extract)?\(\s*'([^']+)'", text)
    files += re.findall(r"d2l\.DATA_URL\s*\+\s*'([^']+)'", text)
    packages = [p for pat, p in PACKAGES if pat in text]
    if packages:
        return f"it needs {', '.join(dict.fromkeys(packages))}, which devarray does not have"
    if files:
        data = ", ".join(dict.fromkeys(files))
        return (f"it reads {data}, which the real library downloads, and devarray never "
                f"downloads. devarray's d2l.download and d2l.download_extract find such a file "
                f"in ../data when you put it there, but {name} itself is not ported")
    return "it is not ported yet"


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
        parts += [patch(n, render(defs[n], source)) + "\n" for n in served]
        parts.append(data_hub(tree, source) + "\n")
        missing_targets = MISSING_TARGETS[dialect]
        parts.append(aliases(source, missing_targets) + "\n")
        parts.append(
            "# Why each name the real library has is not here (tools/d2l_port.py's `why`).\n"
            "_NOT_IN_DEVARRAY = {\n"
            + "".join(f"    '{n}': {why(n, defs, source, served, LACKS[dialect])!r},\n" for n in others)
            + "}\n\n\n"
            "_MISSING_TARGETS = {\n"
            + "".join(f"    '{k}': '{v}',\n" for k, v in missing_targets.items())
            + "}\n\n\n"
            "def __getattr__(name):\n"
            "    if name in _MISSING_TARGETS:\n"
            "        raise AttributeError(\n"
            f"            f\"d2l.{dialect}.{{name}} is {{_MISSING_TARGETS[name]}}, which devarray does not have yet\")\n"
            "    if name in _NOT_IN_DEVARRAY:\n"
            "        raise AttributeError(\n"
            f"            f\"d2l.{dialect}.{{name}} is part of the real d2l library but not of devarray's: \"\n"
            "            f\"{_NOT_IN_DEVARRAY[name]}\")\n"
            f"    raise AttributeError(f\"module 'd2l.{dialect}' has no attribute '{{name}}'\")\n"
        )
        (out_dir / f"{dialect}.da").write_text("\n\n".join(parts))
        print(dialect, len(served), "served,", len(others), "not in devarray")


if __name__ == "__main__":
    main(sys.argv[1])
