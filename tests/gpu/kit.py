#!/usr/bin/env python3
"""The GPU kit's driver: runs every check of gpu-kit/ and writes report.md and report.json.

Started by gpu-kit/run.sh (which picks the Python, preferably the one with PyTorch). Standard
library only: the GPU machine has no network and the CI machine has no PyTorch. Every step runs
its programs in child processes with a timeout cut to what is left of the kit's own deadline; a
step that fails or times out is recorded and the next one runs. The report is rewritten after
every step, so even a run killed from outside leaves what it had.

  python3 kit.py [--emulated] [--out DIR] [--deadline SECONDS]

Exit status: 0 when every step passed, 1 when one did not, 2 for a bad invocation.
"""
import argparse
import concurrent.futures
import datetime
import difflib
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

KIT = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.join(KIT, "bin")

# The CUDA libraries the backend opens (through cudarc, by these base names) and the sonames a
# CUDA 12 build wants; CUDA 13 wheels (nvidia/cu13/lib) have .13 ones, used when no 12 is there.
LIBRARIES = {
    "nvrtc": ("libnvrtc.so", ["12", "13"]),
    "cublas": ("libcublas.so", ["12", "13"]),
    "curand": ("libcurand.so", ["10"]),
    "nccl": ("libnccl.so", ["2"]),
}

STATUS_MARK = {"passed": "PASS", "failed": "FAIL", "timeout": "TIMEOUT", "skipped": "SKIP"}


class Kit:
    def __init__(self, args):
        self.emulated = args.emulated
        self.out = os.path.abspath(args.out)
        self.start = time.time()
        self.deadline = self.start + args.deadline
        self.tmp = tempfile.mkdtemp(prefix="devarray-gpu-kit-")
        self.env = dict(os.environ)
        self.cards = 0
        self.report = {
            "kit": self.read_build_info(),
            "mode": "emulated" if self.emulated else "real",
            "started": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
            "host": os.uname().nodename,
            "python": sys.executable + " " + sys.version.split()[0],
            "card": {},
            "libraries": {},
            "steps": {},
        }
        os.makedirs(os.path.join(self.out, "outputs"), exist_ok=True)

    # ---------------------------------------------------------------- plumbing

    @staticmethod
    def read_build_info():
        try:
            with open(os.path.join(KIT, "BUILD.json")) as f:
                return json.load(f)
        except (OSError, ValueError) as e:
            return {"error": f"BUILD.json unreadable: {e}"}

    def left(self):
        return self.deadline - time.time()

    def run(self, argv, timeout, env=None, stdin=None, cwd=None):
        """Runs a child; returns (status, exit code, stdout, stderr, seconds). The timeout is
        cut to the kit's deadline (less a margin to write the report)."""
        timeout = max(1.0, min(timeout, self.left() - 2))
        started = time.time()
        try:
            # A session of its own, so that a timeout ends the child's children too (the
            # benchmark's devarray runs) and their pipes close.
            p = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                                 env=env or self.env, cwd=cwd, start_new_session=True)
        except OSError as e:
            return "failed", None, "", f"cannot run {argv[0]}: {e}", time.time() - started
        try:
            out, err = p.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                p.kill()
            out, err = p.communicate()
            return "timeout", None, out, err + f"\n[killed after {timeout:.0f} s]", time.time() - started
        status = "passed" if p.returncode == 0 else "failed"
        return status, p.returncode, out, err, time.time() - started

    def save_output(self, name, text):
        path = os.path.join(self.out, "outputs", name)
        with open(path, "w") as f:
            f.write(text)
        return os.path.relpath(path, self.out)

    def step(self, name, function, budget):
        """Runs one step with `budget` seconds at most; an exception is the step's failure."""
        started = time.time()
        if self.left() < 10:
            result = {"status": "skipped", "summary": "no time left before the kit's deadline"}
        else:
            saved = self.deadline
            self.deadline = min(self.deadline, time.time() + budget)
            try:
                result = function()
            except Exception as e:  # the kit must go on to the next step
                import traceback
                result = {"status": "failed", "summary": f"the kit itself failed: {e!r}",
                          "text": traceback.format_exc()}
            finally:
                self.deadline = saved
        result["seconds"] = round(time.time() - started, 1)
        self.report["steps"][name] = result
        print(f"[{STATUS_MARK.get(result['status'], result['status'])}] {name}: "
              f"{result.get('summary', '')} ({result['seconds']} s)", flush=True)
        self.write()

    # ---------------------------------------------------------------- card and libraries

    def find_card(self):
        card = self.report["card"]
        if self.emulated:
            card["nvidia_smi"] = "not run: emulated CUDA stack (tests/cuda_emu), 2 cards"
            return
        if not shutil.which("nvidia-smi"):
            card["nvidia_smi"] = "nvidia-smi not found on PATH"
            return
        query = "index,name,compute_cap,memory.total,driver_version"
        status, code, out, err, _ = self.run(
            ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"], 30)
        if status != "passed":
            # Older drivers lack compute_cap: ask again without it.
            query = "index,name,memory.total,driver_version"
            status, code, out, err2, _ = self.run(
                ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"], 30)
            err += err2
        if status != "passed":
            card["nvidia_smi"] = f"nvidia-smi {status}: {(out + err).strip()[:2000]}"
            return
        fields = query.split(",")
        cards = []
        for line in out.strip().splitlines():
            values = [v.strip() for v in line.split(",")]
            cards.append(dict(zip(fields, values)))
        card["nvidia_smi"] = cards
        status, _, out, _, _ = self.run(["nvidia-smi"], 30)
        if status == "passed":
            m = re.search(r"CUDA Version:\s*([\d.]+)", out)
            card["driver_cuda_version"] = m.group(1) if m else None

    def site_dirs(self):
        """Folders that may hold NVIDIA's wheels: every site-packages of the Pythons here."""
        dirs = []
        pythons = [sys.executable]
        for name in ["python3", "python"]:
            path = shutil.which(name)
            if path:
                pythons.append(path)
        pythons += glob.glob("/opt/conda/bin/python") + glob.glob("/usr/local/bin/python3*")
        seen = set()
        for python in pythons:
            real = os.path.realpath(python)
            if real in seen or not os.access(real, os.X_OK):
                continue
            seen.add(real)
            status, _, out, _, _ = self.run(
                [python, "-c", "import site, sys; print('\\n'.join(site.getsitepackages() + "
                               "[site.getusersitepackages()] + sys.path))"], 20)
            if status == "passed":
                dirs += [d for d in out.splitlines() if d.strip()]
        dirs += glob.glob("/usr/local/lib/python3*/*-packages") + glob.glob("/usr/lib/python3*/*-packages")
        dirs += glob.glob("/opt/conda/lib/python3*/site-packages") + glob.glob("/root/.local/lib/python3*/site-packages")
        dirs += glob.glob("/home/*/.local/lib/python3*/site-packages")
        if self.emulated:
            # CI's NVRTC wheel (tests/cuda/setup_nvrtc.sh) lives in the checkout's .venv.
            dirs += glob.glob(os.path.join(KIT, "..", ".venv", "lib", "python3*", "site-packages"))
        out = []
        for d in dirs:
            d = os.path.realpath(d)
            if os.path.isdir(d) and d not in out:
                out.append(d)
        return out

    def find_libraries(self):
        """Finds NVRTC, cuBLAS, cuRAND and NCCL (the wheels' nvidia/*/lib first, then the CUDA
        toolkit and the loader's cache) and links them under the base names the backend opens,
        in a folder put first on LD_LIBRARY_PATH for every child."""
        lib_dirs = []
        for site in self.site_dirs():
            lib_dirs += sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib")))
        lib_dirs += sorted(glob.glob("/usr/local/cuda*/lib64")) + sorted(glob.glob("/usr/local/cuda*/targets/*/lib"))
        lib_dirs += ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"]
        hint = os.environ.get("DEVARRAY_NVRTC_LIB")
        if hint:
            lib_dirs.insert(0, os.path.dirname(os.path.abspath(hint)))
        links = os.path.join(self.tmp, "lib")
        os.makedirs(links, exist_ok=True)
        found = {}
        used_dirs = []
        for key, (base, versions) in LIBRARIES.items():
            if self.emulated and key != "nvrtc":
                found[key] = {"found": True, "path": os.path.join(KIT, "emu", "libcuda_emu.so"),
                              "origin": "the CUDA emulator"}
                continue
            choice = None
            for version in versions:
                for d in lib_dirs:
                    candidates = sorted(glob.glob(os.path.join(d, f"{base}.{version}*")))
                    if candidates:
                        choice = candidates[0]
                        break
                if choice:
                    break
            if not choice:
                found[key] = {"found": False, "searched": len(lib_dirs)}
                continue
            real = os.path.realpath(choice)
            entry = {"found": True, "path": choice, "file": real, "folder": os.path.dirname(choice)}
            m = re.search(r"/nvidia/([^/]+)/lib/", choice)
            entry["origin"] = f"pip wheel (nvidia/{m.group(1)})" if m else "system"
            soname = os.path.basename(choice)
            entry["soname"] = soname
            if not soname.startswith(f"{base}.{versions[0]}"):
                entry["note"] = (f"no {base}.{versions[0]} found; {soname} is used through the "
                                 f"CUDA {versions[0]} bindings")
            # The backend opens the base name first; the versioned name too, for the driver's
            # own lookups.
            for name in [base, soname]:
                link = os.path.join(links, name)
                if not os.path.lexists(link):
                    os.symlink(choice, link)
            if os.path.dirname(choice) not in used_dirs:
                used_dirs.append(os.path.dirname(choice))
            found[key] = entry
        # The libraries' own dependencies (cublasLt, nvrtc-builtins) sit beside them.
        path = [links] + used_dirs
        if self.emulated:
            emu = self.emulator_links()
            path.insert(0, emu)
            found["driver"] = {"found": True, "path": os.path.join(KIT, "emu", "libcuda_emu.so"),
                               "origin": "the CUDA emulator (tests/cuda_emu)"}
        old = os.environ.get("LD_LIBRARY_PATH")
        self.env["LD_LIBRARY_PATH"] = ":".join(path + ([old] if old else []))
        if found.get("nvrtc", {}).get("found"):
            self.env["DEVARRAY_NVRTC_LIB"] = found["nvrtc"]["path"]
        self.report["libraries"] = found
        self.report["library_folders_searched"] = lib_dirs
        self.report["LD_LIBRARY_PATH"] = self.env["LD_LIBRARY_PATH"]

    def emulator_links(self):
        """The emulator under the names cudarc looks for (as tests/cuda/emu.rs links it)."""
        links = os.path.join(self.tmp, "emu")
        os.makedirs(links, exist_ok=True)
        lib = os.path.join(KIT, "emu", "libcuda_emu.so")
        for name in ["libcuda.so", "libcuda.so.1", "libcublas.so", "libcublas.so.12", "libcurand.so",
                     "libcurand.so.10", "libnccl.so", "libnccl.so.2"]:
            os.symlink(lib, os.path.join(links, name))
        self.env["CUDA_EMU_DEVICES"] = "2"
        self.env["CUDA_EMU_MEMORY"] = self.env.get("CUDA_EMU_MEMORY", "1G")
        return links

    # ---------------------------------------------------------------- steps

    def probe(self):
        """The backend's own view (tests/conformance.rs `cuda_probe_report`)."""
        status, code, out, err, _ = self.run(
            [os.path.join(BIN, "conformance"), "cuda_probe_report", "--exact", "--nocapture",
             "--test-threads", "1"], 60)
        lines = [l for l in (out + err).splitlines() if l.startswith("KIT-")]
        cards = [l[len("KIT-CARD "):] for l in lines if l.startswith("KIT-CARD ")]
        self.cards = len(cards)
        probe = next((l[len("KIT-PROBE "):] for l in lines if l.startswith("KIT-PROBE ")), None)
        self.report["card"]["devarray"] = {"probe": probe, "cards": cards,
                                           "open_errors": [l for l in lines if l.startswith("KIT-OPEN-ERROR")]}
        if status == "passed" and self.cards > 0:
            return {"status": "passed", "summary": f"{self.cards} CUDA card(s): " + "; ".join(cards)}
        text = (out + err)[-4000:]
        return {"status": "failed" if status == "passed" else status,
                "summary": "devarray sees no usable CUDA card" if status == "passed" else f"the probe {status}",
                "text": text}

    def nvrtc(self):
        """Every kernel compiled by the NVRTC found, for sm_80 and sm_90 (tests/cuda_nvrtc.rs)."""
        if "DEVARRAY_NVRTC_LIB" not in self.env:
            return {"status": "failed", "summary": "no NVRTC library found"}
        argv = [os.path.join(BIN, "cuda_nvrtc"), "--test-threads", "2"]
        if self.emulated:
            # CI's cargo test compiles every kernel already; here only that the kit's NVRTC
            # path works (a broken kernel's log comes back).
            argv.append("a_broken_kernel")
        status, code, out, err, secs = self.run(argv, 120)
        counts = parse_libtest(out)
        result = {"status": status, "summary": f"{counts['passed']} passed, {counts['failed']} failed"}
        if status != "passed":
            result["text"] = (out + err)[-6000:]
        return result

    def conformance(self):
        """The conformance suite's CUDA cases, once per card (each run sees one card, the
        cases take the last GPU), then the two-card paths (NCCL, peer copies) when there are
        two cards or more."""
        runs = []
        base = [os.path.join(BIN, "conformance"), "--test-threads", "2"]
        if self.emulated:
            # The emulator ignores CUDA_VISIBLE_DEVICES: one run on its two cards (the cases
            # use gpu(1)), the multi-card paths with it.
            runs.append(("emulated cards (cases on gpu(1))", base + ["cuda"], {}))
        else:
            for card in range(max(self.cards, 1)):
                runs.append((f"card {card}", base + ["cuda::"], {"CUDA_VISIBLE_DEVICES": str(card)}))
            if self.cards >= 2:
                runs.append(("all cards: NCCL and peer copies", base + ["cuda_backend_paths"], {}))
        per_run = max(30, (self.deadline - time.time() - 5) / len(runs))
        results, ok = [], True
        for label, argv, extra in runs:
            env = dict(self.env, DEVARRAY_REQUIRE_CUDA="1", **extra)
            # The emulated rerun test builds the emulator with cargo: not here.
            argv = argv + ["--skip", "the_cuda_cases_pass_on_the_emulated_driver"]
            status, code, out, err, secs = self.run(argv, per_run, env=env)
            counts = parse_libtest(out)
            failures = parse_failures(out)
            entry = {"run": label, "status": status, "passed": counts["passed"], "failed": counts["failed"],
                     "seconds": round(secs, 1), "failures": failures,
                     "output": self.save_output(f"conformance-{len(results)}.txt", out + "\n--- stderr\n" + err)}
            if status == "passed" and counts["passed"] == 0:
                entry["status"] = status = "failed"
                entry["failures"].append({"test": "(none)", "text": "no test ran:\n" + (out + err)[-3000:]})
            if status == "timeout" or (status == "failed" and not failures):
                entry["failures"].append({"test": "(run)", "text": (out + err)[-3000:]})
            ok = ok and status == "passed"
            results.append(entry)
        passed = sum(r["passed"] for r in results)
        failed = sum(r["failed"] for r in results)
        return {"status": "passed" if ok else ("timeout" if any(r["status"] == "timeout" for r in results) else "failed"),
                "summary": f"{passed} passed, {failed} failed in {len(results)} run(s)", "runs": results}

    def transcripts(self):
        """The seed chapters' GPU programs, run through devarray on the CUDA cards and compared
        with their transcripts (written for simulated GPUs)."""
        directory = os.path.join(KIT, "programs", "transcripts")
        random_lines = read_random_lines(os.path.join(KIT, "programs", "random_lines.txt"))
        files = sorted(glob.glob(os.path.join(directory, "*", "*.txt")))
        per_file = 120 if self.emulated else 60

        def one(path):
            name = os.path.relpath(path, directory)
            if self.left() < 5:
                return {"file": name, "dialect": dialect(name), "verdict": "not run (no time left)",
                        "cards_needed": None, "failed": True}
            with open(path) as f:
                expected = f.read()
            env, cards = header_env(expected, self.emulated)
            child = dict(self.env, NO_COLOR="1", **env)
            if self.emulated:
                child["CUDA_EMU_DEVICES"] = str(cards)
            elif self.cards > cards > 0:
                # As many cards as the program was written for (try_all_gpus() lists them all).
                child["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(cards))
            for variable in ["DEVARRAY_SIM_GPUS", "DEVARRAY_SIM_GPU_MEMORY", "DEVARRAY_DETERMINISTIC",
                             "DEVARRAY_CPU_MEMORY", "DEVARRAY_HISTORY"]:
                if variable not in env:
                    child.pop(variable, None)
            status, code, out, err, secs = self.run([os.path.join(BIN, "devarray"), "--transcript"],
                                                    per_file, env=child, stdin=expected)
            entry = {"file": name, "dialect": dialect(name), "cards_needed": cards, "seconds": round(secs, 1),
                     "output": self.save_output("transcript-" + name.replace("/", "-"), out + (
                         "\n--- stderr\n" + err if err else ""))}
            enough = self.emulated or self.cards >= cards
            if not enough:
                entry["note"] = (f"needs {cards} GPUs, this machine has {self.cards}: lines that use "
                                 f"gpu({self.cards}) are expected to differ")
            if status != "passed" or err.strip():
                entry.update(verdict=f"devarray {status}" + (f" (exit {code})" if code else ""),
                             stderr=err[-3000:])
                entry["failed"] = enough
            else:
                entry.update(compare(name, expected, out, random_lines))
                entry["failed"] = entry["verdict"] == "differs" and enough
            return entry

        # Independent processes: a few at a time (the emulator interprets each on one core).
        workers = max(1, min(4, os.cpu_count() or 1))
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            results = list(pool.map(one, files))
        ok = not any(r.pop("failed") for r in results)
        verdicts = {}
        for r in results:
            verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
        summary = ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()))
        if not self.emulated and self.cards == 0:
            ok, summary = False, summary + " (no usable CUDA card: nothing ran on a GPU)"
        return {"status": "passed" if ok and files else "failed",
                "summary": f"{len(files)} programs: {summary}", "programs": results}

    def bench(self):
        """bench/gpu_bench.py: devarray against PyTorch on the same card, ratios."""
        json_path = os.path.join(self.tmp, "bench.json")
        argv = [sys.executable, os.path.join(KIT, "bench", "gpu_bench.py"),
                "--binary", os.path.join(BIN, "devarray"), "--json", json_path]
        if self.emulated:
            argv += ["--small", "--repeat", "1", "--no-torch"]
        else:
            argv += ["--repeat", "10"]
        status, code, out, err, secs = self.run(argv, 240 if not self.emulated else 120)
        self.save_output("gpu_bench.txt", out + "\n--- stderr\n" + err)
        try:
            with open(json_path) as f:
                rows = json.load(f)
        except (OSError, ValueError):
            rows = None
        result = {"status": status, "table": out.strip()}
        if rows is not None:
            result["rows"] = rows["rows"]
            result["device"] = rows.get("device")
            errors = [r for r in rows["rows"] if r.get("error")]
            if errors:
                result["status"] = "failed"
            result["summary"] = (f"{len(rows['rows']) - len(errors)} of {len(rows['rows'])} workloads timed"
                                 + ("" if rows.get("pytorch") else "; PyTorch not compared: " + rows.get("pytorch_missing", "")))
        else:
            result["summary"] = f"gpu_bench.py {status}"
            result["text"] = (out + err)[-4000:]
        return result

    def lenet(self):
        """One training step of seed 003's LeNet on gpu(0) against the same step on cpu(0)."""
        env = dict(self.env, KIT_TMP=self.tmp, NO_COLOR="1",
                   DEVARRAY_FASHION_MNIST=os.path.join(KIT, "data", "fashion-mnist-tiny"),
                   KIT_BATCH="2" if self.emulated else "128", KIT_STEPS="1" if self.emulated else "20")
        env.pop("DEVARRAY_SIM_GPUS", None)
        status, code, out, err, secs = self.run(
            [os.path.join(BIN, "devarray"), os.path.join(KIT, "programs", "lenet_step.py")], 150, env=env)
        self.save_output("lenet_step.txt", out + "\n--- stderr\n" + err)
        line = next((l for l in out.splitlines() if l.startswith("KIT-RESULT ")), None)
        result = {"status": status, "text": (out + err)[-4000:]}
        if status == "passed" and line:
            figures = json.loads(line[len("KIT-RESULT "):])
            result["figures"] = figures
            # The first step from the same parameters: float32 on two devices, so close.
            loss_close = abs(figures["loss_cpu"] - figures["loss_gpu"]) <= 1e-4 * max(1.0, abs(figures["loss_cpu"]))
            params_close = figures["max_param_diff"] <= 1e-3
            if not (loss_close and params_close):
                result["status"] = "failed"
            result["summary"] = (f"batch {figures['batch']}: loss cpu {figures['loss_cpu']:.6f} vs gpu "
                                 f"{figures['loss_gpu']:.6f}, parameters within {figures['max_param_diff']:.2g}; "
                                 f"{figures['step_ms']:.2f} ms per step")
        else:
            result["status"] = "failed" if status == "passed" else status
            result["summary"] = f"devarray {status}" + (f" (exit {code})" if code else "")
        return result

    # ---------------------------------------------------------------- report

    def write(self):
        self.report["seconds"] = round(time.time() - self.start, 1)
        steps = self.report["steps"]
        self.report["passed"] = bool(steps) and all(s["status"] == "passed" for s in steps.values())
        with open(os.path.join(self.out, "report.json"), "w") as f:
            json.dump(self.report, f, indent=1)
        with open(os.path.join(self.out, "report.md"), "w") as f:
            f.write(markdown(self.report))


def dialect(name):
    return "pytorch" if "torch" in name else "mxnet"


def parse_libtest(out):
    counts = {"passed": 0, "failed": 0}
    for line in out.splitlines():
        m = re.match(r"test result: \w+\. (\d+) passed; (\d+) failed", line)
        if m:
            counts["passed"] += int(m.group(1))
            counts["failed"] += int(m.group(2))
    return counts


def parse_failures(out):
    """libtest's `---- NAME stdout ----` sections, one per failed test."""
    failures = []
    parts = re.split(r"^---- (\S+) stdout ----$", out, flags=re.M)
    for name, body in zip(parts[1::2], parts[2::2]):
        body = body.split("\nfailures:\n")[0]
        # Without the thread's name and id and libtest's hints, equal failures read equal.
        body = re.sub(r"^thread '[^']*' \(\d+\) panicked at", "panicked at", body, flags=re.M)
        body = "\n".join(l for l in body.splitlines()
                         if not l.startswith(("note: ", "stack backtrace:")))
        failures.append({"test": name, "text": body.strip()[:3000]})
    return failures


def read_random_lines(path):
    lines = {}
    try:
        with open(path) as f:
            for line in f:
                fields = line.split()
                if len(fields) == 3 and not line.startswith("#"):
                    lines.setdefault(fields[0], []).append((int(fields[1]), int(fields[2])))
    except OSError:
        pass
    return lines


def header_env(text, emulated):
    """The transcript's `# env:` header for a CUDA run: simulated GPUs become the cards (their
    count is what the program needs); a simulated GPU's memory becomes the emulated card's."""
    env, cards = {}, 0
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        if not line.startswith("# env:"):
            continue
        for assignment in line[len("# env:"):].split():
            name, _, value = assignment.partition("=")
            if name == "DEVARRAY_SIM_GPUS":
                cards = int(value) if value.isdigit() else 0
            elif name == "DEVARRAY_SIM_GPU_MEMORY":
                if emulated:
                    env["CUDA_EMU_MEMORY"] = value
            else:
                env[name] = value
    return env, cards


NUMBER = re.compile(r"[-+.eE0-9]+")


def skeleton(line):
    """A line's text with its numbers taken out (the same rule as tests/cuda_emulated_transcripts.rs)."""
    values, out = [], []
    token = ""
    for c in line + " ":
        if c.isdigit() or c in ".-e+":
            token += c
            continue
        if token:
            try:
                values.append(float(token))
                out.append("#")
            except ValueError:
                out.append(token)
            token = ""
        if not c.isspace():
            out.append(c)
    return "".join(out), values


def compare(name, expected, actual, random_lines):
    """Line by line, aligned (difflib) so that one extra or missing line does not make every
    later line differ. A line matches exactly, or within 1e-5 in its numbers, or (on the lines
    that show random samples) in everything but its numbers."""
    want, got = expected.splitlines(), actual.splitlines()
    ranges = random_lines.get(name, [])
    close = random = 0
    differing = []
    matcher = difflib.SequenceMatcher(a=want, b=got, autojunk=False)
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            continue
        if op == "replace" and a1 - a0 == b1 - b0:
            for k, (w, g) in enumerate(zip(want[a0:a1], got[b0:b1])):
                i = a0 + k
                ws, wv = skeleton(w)
                gs, gv = skeleton(g)
                if ws == gs and len(wv) == len(gv) and all(
                        abs(x - y) <= 1e-5 * max(abs(x), 1.0) or x == y for x, y in zip(wv, gv)):
                    close += 1
                elif ws == gs and any(lo <= i + 1 <= hi for lo, hi in ranges):
                    random += 1
                else:
                    differing.append({"line": i + 1, "expected": w, "printed_line": b0 + k + 1, "printed": g})
            continue
        for i in range(a0, a1):
            differing.append({"line": i + 1, "expected": want[i], "printed": None})
        for j in range(b0, b1):
            differing.append({"line": None, "expected": None, "printed_line": j + 1, "printed": got[j]})
    if differing:
        verdict = "differs"
    elif close or random:
        verdict = "matches"
    else:
        verdict = "identical"
    return {"verdict": verdict, "lines": len(want), "close_lines": close, "random_lines": random,
            "differing": differing[:40], "differing_count": len(differing)}


def fence(text):
    return "```\n" + text.rstrip() + "\n```\n"


def markdown(r):
    md = [f"# devarray GPU kit report ({r['mode']})\n"]
    kit = r.get("kit", {})
    md.append(f"Kit: commit `{kit.get('commit', '?')}` built {kit.get('built', '?')}; run {r['started']} on "
              f"`{r['host']}` in {r.get('seconds', '?')} s. Python: `{r['python']}`.\n")
    md.append(f"**Overall: {'PASS' if r.get('passed') else 'FAIL'}**\n")
    md.append("| step | result | seconds | summary |\n|---|---|---|---|")
    for name, s in r["steps"].items():
        summary = str(s.get("summary", "")).replace("|", "\\|").replace("\n", " ")
        md.append(f"| {name} | {STATUS_MARK.get(s['status'], s['status'])} | {s.get('seconds', '')} | {summary} |")
    md.append("")
    md.append("## Card\n")
    smi = r["card"].get("nvidia_smi")
    if isinstance(smi, list):
        md.append("| index | name | compute capability | memory (MiB) | driver |\n|---|---|---|---|---|")
        for c in smi:
            md.append(f"| {c.get('index')} | {c.get('name')} | {c.get('compute_cap', '?')} | "
                      f"{c.get('memory.total')} | {c.get('driver_version')} |")
        md.append(f"\nDriver's CUDA version: {r['card'].get('driver_cuda_version')}\n")
    else:
        md.append(f"nvidia-smi: {smi}\n")
    dev = r["card"].get("devarray")
    if dev:
        md.append("devarray's probe:\n")
        md.append(fence("\n".join([str(dev.get("probe"))] + dev.get("cards", []) + dev.get("open_errors", []))))
    md.append("## Libraries\n")
    md.append("| library | found | file | from |\n|---|---|---|---|")
    for key, lib in r["libraries"].items():
        if lib.get("found"):
            note = f" ({lib['note']})" if lib.get("note") else ""
            md.append(f"| {key} | yes | `{lib.get('file', lib.get('path'))}` | {lib.get('origin', '')}{note} |")
        else:
            md.append(f"| {key} | **no** | searched {lib.get('searched')} folders (report.json: "
                      f"library_folders_searched) | |")
    md.append(f"\nLD_LIBRARY_PATH for every step: `{r.get('LD_LIBRARY_PATH', '')}`\n")
    steps = r["steps"]
    for name, s in steps.items():
        md.append(f"## {name}: {STATUS_MARK.get(s['status'], s['status'])}\n")
        md.append(f"{s.get('summary', '')}\n")
        if name == "conformance":
            for run in s.get("runs", []):
                md.append(f"- {run['run']}: {run['status']}, {run['passed']} passed, {run['failed']} failed "
                          f"({run['seconds']} s; output in `{run['output']}`)")
                # One block per distinct text (a missing card fails every case the same way).
                texts = {}
                for failure in run["failures"]:
                    texts.setdefault(failure["text"], []).append(failure["test"])
                for text, tests in texts.items():
                    names = ", ".join(f"`{t}`" for t in tests[:5]) + (f" and {len(tests) - 5} more" if len(tests) > 5 else "")
                    md.append(f"\n  {names}:\n")
                    md.append(fence(text))
            md.append("")
        elif name == "seed programs":
            md.append("| program | dialect | GPUs needed | verdict | lines | within 1e-5 | random | differing |\n"
                      "|---|---|---|---|---|---|---|---|")
            for p in s.get("programs", []):
                md.append(f"| {p['file']} | {p['dialect']} | {p['cards_needed']} | {p['verdict']} | "
                          f"{p.get('lines', '')} | {p.get('close_lines', '')} | {p.get('random_lines', '')} | "
                          f"{p.get('differing_count', '')} |")
            for p in s.get("programs", []):
                if p.get("note") or p.get("differing") or p.get("stderr"):
                    md.append(f"\n### {p['file']}\n")
                    if p.get("note"):
                        md.append(p["note"] + "\n")
                    if p.get("stderr"):
                        md.append(fence(p["stderr"]))
                    diff = []
                    # Programs that could not run as written (too few cards): counts only.
                    shown = [] if p.get("note") else p.get("differing", [])[:20]
                    for d in shown:
                        if d["expected"] is not None:
                            diff.append(f"-{d['line']}: {d['expected']}")
                        if d["printed"] is not None:
                            diff.append(f"+{d['printed_line']}: {d['printed']}")
                    if diff:
                        md.append(f"Differing lines (the first {len(shown)}; -N: line N of the transcript, +M: line M printed on the card; "
                                  f"{p['differing_count']} in all, "
                                  f"output in `{p['output']}`):\n")
                        md.append(fence("\n".join(diff)))
            md.append("")
        elif name == "gpu_bench" and s.get("table"):
            md.append(fence(s["table"]))
        elif s.get("text") and s["status"] != "passed":
            md.append(fence(s["text"]))
        elif name == "lenet step" and s.get("text"):
            md.append(fence("\n".join(l for l in s["text"].splitlines() if not l.startswith("KIT-RESULT"))))
    md.append("## Reading this report\n")
    md.append("See the README's \"GPU kit\" section; the figures are in report.json and each program's "
              "full output is under outputs/.\n")
    return "\n".join(md) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--emulated", action="store_true",
                        help="run against the emulated CUDA stack (tests/cuda_emu) instead of a card")
    parser.add_argument("--out", default=os.environ.get("OUT") or os.getcwd(),
                        help="where report.md, report.json and outputs/ go (default: $OUT, else here)")
    parser.add_argument("--deadline", type=float, default=340,
                        help="seconds for the whole kit (default 340: run.sh stops it at 350)")
    args = parser.parse_args()
    kit = Kit(args)
    print(f"devarray GPU kit ({kit.report['mode']}): report in {kit.out}", flush=True)
    try:
        kit.find_card()
        kit.find_libraries()
        kit.write()
        # Budgets in seconds (at most; each step usually takes less), on a card and on the
        # emulator (which interprets every thread: slower, and on CI's two cores). The most
        # telling steps first; the compile check of every kernel takes what is left.
        real = not kit.emulated
        kit.step("probe", kit.probe, 30)
        kit.step("conformance", kit.conformance, 90 if real else 100)
        kit.step("seed programs", kit.transcripts, 70 if real else 120)
        kit.step("gpu_bench", kit.bench, 100 if real else 90)
        kit.step("lenet step", kit.lenet, 45 if real else 40)
        kit.step("nvrtc kernels", kit.nvrtc, 60 if real else 20)
    finally:
        kit.write()
        shutil.rmtree(kit.tmp, ignore_errors=True)
    print(f"report: {os.path.join(kit.out, 'report.md')} ({'PASS' if kit.report['passed'] else 'FAIL'})")
    return 0 if kit.report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
