#!/usr/bin/env python3
"""Compares devarray's output of the d2l-next corpus cells with the real d2l 1.0.3 and framework's.

Two steps, both notebook-style per chapter (cells in order in one namespace, a failing cell does not
stop the next), both seeded the same way (mx.random.seed / torch.manual_seed, numpy, random):

  1. the reference, run by a Python that has the framework and d2l==1.0.3 (CPU only):
       VENV/bin/python tools/d2l_next_compare.py ref --dialect pytorch --out ref-pytorch.json
     Every top-level expression whose value is not None is shown with IPython's PlainTextFormatter
     (devarray shows every top-level expression of a program, so the two are comparable). IPython
     magics (`%matplotlib inline`) are dropped. `../data` (the book's data root) is
     $D2L_NEXT_DATA (default /tmp/data), so the torchvision FashionMNIST files placed there
     (FashionMNIST/raw/*-ubyte) are read, never downloaded.
  2. devarray, with the corpus's own runner and the same seed:
       python3 ../shared/corpus/d2l-next/run.py DEVARRAY --seed 0 --json dev.json
     then
       python3 tools/d2l_next_compare.py compare dev.json ref-pytorch.json [ref-mxnet.json]
     prints each cell whose text differs (after stripping trailing spaces and blank end lines) and
     the count of cells with output that are identical. Cells that printed nothing on both sides,
     or did not run on one side, are not counted (a status difference is listed).
"""
import argparse
import ast
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import traceback

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'shared', 'corpus',
                      'd2l-next')


def seed_code(dialect, seed):
    if dialect == 'mxnet':
        return (f'import mxnet as _mx, numpy as _onp, random as _r\n'
                f'_mx.random.seed({seed}); _onp.random.seed({seed}); _r.seed({seed})\n')
    return f'import torch as _t, random as _r\n_t.manual_seed({seed}); _r.seed({seed})\n'


def load_cells(path):
    sys.path.insert(0, CORPUS)
    from run import load_cells as corpus_load_cells  # the corpus runner's own cell split
    return corpus_load_cells(path)


def run_chapter_child(ch, seed):
    from IPython.core.formatters import PlainTextFormatter
    show = PlainTextFormatter()  # Jupyter's text/plain
    ns = {'__name__': '__main__'}
    exec(seed_code(ch['dialect'], seed), ns)
    results = []
    for k, cell in enumerate(load_cells(os.path.join(CORPUS, ch['file']))):
        out, err, status, error = io.StringIO(), io.StringIO(), 'ran', ''
        code = '\n'.join(l for l in cell.split('\n') if not l.lstrip().startswith(('%', '!')))
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                for node in ast.parse(code).body:
                    if isinstance(node, ast.Expr):
                        value = eval(compile(ast.Expression(node.value), f'<cell {k}>', 'eval'), ns)
                        if value is not None:
                            print(show(value))
                    else:
                        exec(compile(ast.Module([node], type_ignores=[]), f'<cell {k}>', 'exec'), ns)
        except BaseException as e:  # noqa: BLE001 -- a cell's failure is its result
            status = 'failed'
            error = ''.join(traceback.format_exception_only(type(e), e)).strip()
        results.append({'cell': k, 'status': status, 'stdout': out.getvalue(), 'error': error})
    return results


def reference(args):
    manifest = json.load(open(os.path.join(CORPUS, 'manifest.json'), encoding='utf-8'))
    if args.child:
        ch = next(c for c in manifest['chapters'] if c['name'] == args.child)
        sys.stdout.write('@@JSON@@' + json.dumps(run_chapter_child(ch, args.seed)))
        return
    data = os.environ.get('D2L_NEXT_DATA', '/tmp/data')
    out = {'dialect': args.dialect, 'seed': args.seed, 'results': {}}
    for ch in manifest['chapters']:
        if ch['dialect'] != args.dialect or (args.only and args.only not in ch['name']):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            cwd = os.path.join(tmp, 'work')
            os.mkdir(cwd)
            if os.path.isdir(data):
                os.symlink(data, os.path.join(tmp, 'data'))
            env = dict(os.environ, CUDA_VISIBLE_DEVICES='')
            p = subprocess.run([sys.executable, os.path.abspath(__file__), 'ref', '--child',
                                ch['name'], '--seed', str(args.seed)],
                               cwd=cwd, env=env, capture_output=True, text=True,
                               timeout=args.timeout)
        if '@@JSON@@' not in p.stdout:
            print(f"{ch['name']}: the reference run failed (rc {p.returncode})\n{p.stderr[-2000:]}")
            continue
        res = json.loads(p.stdout.split('@@JSON@@')[-1])
        out['results'][ch['name']] = res
        print(f"{ch['name']:40s} {sum(r['status'] == 'ran' for r in res):3d}/{len(res)}", flush=True)
    with open(args.out, 'w', encoding='utf-8') as f:
        json.dump(out, f, indent=1, ensure_ascii=False)


def norm(text):
    lines = [l.rstrip() for l in (text or '').split('\n')]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return '\n'.join(lines)


def compare(args):
    dev = json.load(open(args.devarray, encoding='utf-8'))['results']
    refs = {}
    for path in args.refs:
        refs.update(json.load(open(path, encoding='utf-8'))['results'])
    compared = identical = 0
    for name, cells in dev.items():
        if name not in refs:
            print(f'{name}: no reference')
            continue
        for mine, real in zip(cells, refs[name]):
            if mine['status'] != 'ran' or real['status'] != 'ran':
                if mine['status'] != real['status']:
                    print(f"{name} cell {mine['cell']}: devarray {mine['status']}, real "
                          f"{real['status']} {real.get('error', '')[-200:]}")
                continue
            a, b = norm(mine['stdout']), norm(real['stdout'])
            if not a and not b:
                continue
            compared += 1
            if a == b:
                identical += 1
            else:
                print(f"=== {name} cell {mine['cell']}\n--- devarray\n{a}\n--- real\n{b}")
    print(f'{identical}/{compared} cells with output identical')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = ap.add_subparsers(dest='step', required=True)
    r = sub.add_parser('ref')
    r.add_argument('--dialect', choices=['mxnet', 'pytorch'])
    r.add_argument('--seed', type=int, default=0)
    r.add_argument('--out', default='ref.json')
    r.add_argument('--only', default=None)
    r.add_argument('--timeout', type=float, default=1800)
    r.add_argument('--child', default=None)
    c = sub.add_parser('compare')
    c.add_argument('devarray')
    c.add_argument('refs', nargs='+')
    args = ap.parse_args()
    reference(args) if args.step == 'ref' else compare(args)


if __name__ == '__main__':
    main()
