"""The golden transcripts (tests/transcripts/**/*.txt) replayed through the kernel.

`cargo test --test transcripts` replays them through `devarray --transcript`;
here every statement goes to the kernel as one execute_request, and what comes
back (stdout and stderr, the text/plain of execute_result and display_data,
the error's traceback, plain because the kernel is started with NO_COLOR) must be exactly the expected output in
the file. Both frontends therefore produce the same text from one evaluator. The kernel's traceback has
IPython's form (`Cell In[n], line k` with numbered lines); it is read back into the REPL's CPython form,
frame by frame, and the caret lines (which IPython does not draw) are left out of the comparison.

One statement per cell is what makes the two agree: the REPL shows every
top-level expression, a notebook cell only its last one.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager

from helpers import execute, strip_ansi

REPO = Path(__file__).resolve().parents[2]
TRANSCRIPTS = sorted((REPO / "tests" / "transcripts").rglob("*.txt"))

PRIMARY = ">>> "
SECONDARY = "... "

# Variables that change what a session does; cleared so that the caller's
# environment cannot change a transcript's output (as tests/transcripts.rs does).
SESSION_VARIABLES = (
    "DEVARRAY_SIM_GPUS",
    "DEVARRAY_SIM_GPU_MEMORY",
    "DEVARRAY_CPU_MEMORY",
    "DEVARRAY_HISTORY",
)


@dataclass
class Statement:
    """One statement: its input lines as written (with prompts) and the output expected after them."""

    input_lines: list[str] = field(default_factory=list)
    expected: list[str] = field(default_factory=list)

    @property
    def code(self) -> str:
        lines = [strip_prompt(line) for line in self.input_lines]
        while lines and not lines[-1].strip():
            lines.pop()
        return "\n".join(lines) + "\n"


@dataclass
class Transcript:
    preamble: list[str]
    env: dict[str, str]
    statements: list[Statement]

    def render(self, outputs: list[str]) -> str:
        """The transcript as it would read with these outputs (one per statement)."""
        lines = list(self.preamble)
        for statement, output in zip(self.statements, outputs):
            lines.extend(statement.input_lines)
            lines.extend(output.splitlines())
        return "\n".join(lines) + "\n"


def prompt_kind(line: str) -> str | None:
    """'primary', 'secondary' or None, with bare prompts (trailing spaces stripped) allowed."""
    for prompt, kind in ((PRIMARY, "primary"), (SECONDARY, "secondary")):
        if line.startswith(prompt) or line.rstrip() == prompt.rstrip():
            return kind
    return None


def strip_prompt(line: str) -> str:
    return line[len(PRIMARY):] if len(line) > len(PRIMARY.rstrip()) else ""


def parse(text: str) -> Transcript:
    preamble: list[str] = []
    env: dict[str, str] = {}
    statements: list[Statement] = []
    for line in text.splitlines():
        kind = prompt_kind(line)
        if not statements and kind is None:
            # Comment lines before the first prompt; `# env: K=V ...` among them.
            preamble.append(line)
            if line.startswith("# env:"):
                for assignment in line[len("# env:"):].split():
                    name, equals, value = assignment.partition("=")
                    assert equals, f"`{assignment}` in `{line}` is not NAME=VALUE"
                    env[name] = value
            continue
        if kind == "primary":
            statements.append(Statement(input_lines=[line]))
        elif kind == "secondary" and not statements[-1].expected:
            statements[-1].input_lines.append(line)
        else:
            # A `... ` line after output would be a REPL echo that no input
            # produced; keeping it as output makes the mismatch visible.
            statements[-1].expected.append(line)
    return Transcript(preamble, env, statements)


def output_text(outputs: list[dict]) -> str:
    """What the REPL's transcript mode would print for these IOPub messages."""
    text = ""
    for msg in outputs:
        content = msg["content"]
        if msg["msg_type"] == "stream":
            text += content["text"]
        elif msg["msg_type"] in ("execute_result", "display_data"):
            text += content["data"]["text/plain"] + "\n"
        elif msg["msg_type"] == "error":
            if text and not text.endswith("\n"):
                text += "\n"
            text += repl_form([strip_ansi(line) for line in content["traceback"]]) + "\n"
    if text and not text.endswith("\n"):
        text += "\n"
    return text


# The kernel's no-GPU hint names the simulated-GPU kernel where the REPL names its switches.
KERNEL_HINT = (
    'To simulate GPUs in Jupyter, switch to the "devarray (2 simulated GPUs)" kernel '
    "(Kernel > Change Kernel...); outside Jupyter, start devarray with --sim-gpus 2 or set DEVARRAY_SIM_GPUS=2"
)
CLI_HINT = "To simulate GPUs, start devarray with --sim-gpus 2 or set DEVARRAY_SIM_GPUS=2"

CELL_FRAME = re.compile(r"^ *Cell In\[\d+\], line (\d+)(?:, in (.+))?$")
CARETS = re.compile(r"^\s*\^+\s*$")


def next_is_chain(traceback: list[str], entry: str) -> bool:
    """Whether `entry` is followed by the line between two chained exceptions."""
    i = traceback.index(entry)
    return i + 1 < len(traceback) and traceback[i + 1].startswith("\n")


def repl_form(traceback: list[str]) -> str:
    """An IPython-form traceback as the REPL would print it, without caret lines."""
    out: list[str] = []
    for entry in traceback:
        lines = entry.rstrip("\n").split("\n")
        if entry.startswith("-" * 20) or entry.endswith("Traceback (most recent call last)"):
            continue
        header = CELL_FRAME.match(lines[0])
        if entry.startswith("\n"):
            # The line between two chained exceptions, a blank line on each side.
            out.extend(lines + [""])
            continue
        if header is None:
            # IPython's `Name: ` for an empty message (the last one is trimmed below).
            out.extend(l[:-2] if l.endswith(": ") and next_is_chain(traceback, entry) else l
                       for l in lines)
            continue
        line_no, function = header.groups()
        if entry.startswith("  "):
            # A syntax error: the source line, carets, then the message.
            out.append(f"  line {line_no}")
            out.extend(lines[1:])
            continue
        out.append(f"  line {line_no}, in {function or '<module>'}")
        marked = next(l for l in lines[1:] if l.startswith("-") and ">" in l)
        out.append("    " + marked.split(" ", 2)[2].strip())
    if out and out[-1].endswith(": "):
        out[-1] = out[-1][:-2]
    if out:
        out[-1] = out[-1].replace(KERNEL_HINT, CLI_HINT)
    return "\n".join(l for l in out if not CARETS.match(l))


def without_carets(text: str) -> str:
    return "\n".join(l for l in text.split("\n") if not CARETS.match(l))


@pytest.fixture()
def kernel_for(request: pytest.FixtureRequest) -> Iterator:
    started: list[tuple[KernelManager, BlockingKernelClient]] = []

    def start(env: dict[str, str]) -> BlockingKernelClient:
        kernel_env = {k: v for k, v in os.environ.items() if k not in SESSION_VARIABLES}
        # Plain tracebacks, as `devarray --transcript` writes them.
        kernel_env["NO_COLOR"] = "1"
        kernel_env.update(env)
        km = KernelManager(kernel_name="devarray")
        km.start_kernel(env=kernel_env)
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=30)
        started.append((km, kc))
        return kc

    yield start
    for km, kc in started:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_parse_splits_statements_outputs_and_env() -> None:
    transcript = parse(
        "# env: A=1 B=two\n# note\n>>> x = 1\n>>> def f():\n...     return 2\n...\n>>> f()\n2\n"
        ">>> print('a', end='')\na\n"
    )
    assert transcript.env == {"A": "1", "B": "two"}
    assert transcript.preamble == ["# env: A=1 B=two", "# note"]
    assert [s.code for s in transcript.statements] == [
        "x = 1\n", "def f():\n    return 2\n", "f()\n", "print('a', end='')\n"
    ]
    assert [s.expected for s in transcript.statements] == [[], [], ["2"], ["a"]]
    text = "# env: A=1 B=two\n# note\n>>> x = 1\n>>> def f():\n...     return 2\n...\n>>> f()\n2\n"
    assert parse(text).render(["", "", "2\n"]) == text


def test_output_text_joins_streams_results_and_plain_tracebacks() -> None:
    messages = [
        {"msg_type": "stream", "content": {"text": "no newline"}},
        {"msg_type": "error", "content": {"traceback": [
            "-" * 75, "E    Traceback (most recent call last)",
            "\x1b[36mCell In[3], line 2\x1b[39m\n      1 a = 1\n----> 2 f(a)\n",
            "Cell In[1], line 1, in f\n----> 1 def f(x): return x + q\n", "E: e"]}},
    ]
    assert output_text(messages) == (
        "no newline\n  line 2, in <module>\n    f(a)\n  line 1, in f\n    def f(x): return x + q\nE: e\n"
    )
    result = {"msg_type": "execute_result", "content": {"data": {"text/plain": "3", "text/html": "<b>"}}}
    assert output_text([result]) == "3\n"
    assert output_text([]) == ""


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: str(p.relative_to(REPO / "tests" / "transcripts")))
def test_transcript_through_the_kernel(path: Path, kernel_for) -> None:
    text = path.read_text()
    transcript = parse(text)
    # Figures show inline at a cell's end in a notebook and as text in a terminal: a
    # transcript of the terminal's rendering says so and is checked by the REPL only.
    repl_only = [l for l in transcript.preamble if l.startswith("# frontend: repl only")]
    if repl_only:
        pytest.skip(repl_only[0])
    kc = kernel_for(transcript.env)
    outputs = []
    for statement in transcript.statements:
        # stop_on_error=False: an error in one statement must not abort the next.
        _, messages = execute(kc, statement.code, timeout=120, stop_on_error=False)
        for msg in messages:
            if msg["msg_type"] == "error":
                assert not any("\x1b" in line for line in msg["content"]["traceback"]), (
                    "a kernel started with NO_COLOR sent a coloured traceback"
                )
        outputs.append(output_text(messages))
    assert without_carets(transcript.render(outputs)) == without_carets(text)
