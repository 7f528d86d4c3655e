#!/usr/bin/env python3
"""Memory of 200,000 suspended generators of several kinds: peak RSS (`/usr/bin/time -f %M`, KB)
of each devarray build and of this CPython, and bytes per generator (peak less an empty program's).

Usage: python3 bench/generator_memory.py [devarray ...]   (default target/release/devarray)
"""
import os
import subprocess
import sys
import tempfile

N = 200_000

KINDS = {
    "yield n": "def g(n):\n    yield n\n",
    "genexpr": None,
    "try: yield finally": "def g(n):\n    try:\n        yield n\n    finally:\n        pass\n",
    "with CM(): yield": (
        "class CM:\n    def __enter__(self): return self\n"
        "    def __exit__(self, *a): return False\n"
        "def g(n):\n    with CM():\n        yield n\n"
    ),
    "print((yield n))": "def g(n):\n    print((yield n))\n",
    "three locals": "def g(n):\n    a = n\n    b = n + 1\n    yield a + b\n",
    "for over range": "def g(n):\n    for i in range(n, n + 3):\n        yield i\n",
}


def program(body):
    if body is None:
        return f"gens = [(x for x in range(i, i + 3)) for i in range({N})]\nfor g in gens:\n    next(g)\n"
    return body + f"gens = [g(i) for i in range({N})]\nfor x in gens:\n    next(x)\n"


def peak_kb(cmd, path):
    r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd + [path],
                       capture_output=True, text=True)
    return int(r.stderr.strip().splitlines()[-1])


def main():
    binaries = sys.argv[1:] or ["target/release/devarray"]
    commands = [[b] for b in binaries] + [[sys.executable]]
    names = [f"#{i}" for i in range(len(binaries))] + ["CPython"]
    with tempfile.TemporaryDirectory() as d:
        empty = os.path.join(d, "empty.py")
        with open(empty, "w") as f:
            f.write("x = 1\n")
        base = [peak_kb(c, empty) for c in commands]
        print("peak KB (bytes per generator);", ", ".join(f"{n} = {b}" for n, b in zip(names, binaries)))
        print(f"{'body':<20}" + "".join(f"{n:>18}" for n in names))
        for kind, body in KINDS.items():
            path = os.path.join(d, "prog.py")
            with open(path, "w") as f:
                f.write(program(body))
            cells = []
            for c, b in zip(commands, base):
                kb = peak_kb(c, path)
                cells.append(f"{kb:>10} ({(kb - b) * 1024 / N:4.0f})")
            print(f"{kind:<20}" + "".join(f"{c:>18}" for c in cells))


if __name__ == "__main__":
    main()
