"""Shared set-up for the kernel tests: they need the kernelspecs that
tests/kernel/run.sh installs, and they fail loudly (never skip) without them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

from helpers import Kernel, running_kernel


def pytest_configure(config: pytest.Config) -> None:
    for name in ("devarray", "devarray-sim2"):
        try:
            spec = KernelSpecManager().get_kernel_spec(name)
        except NoSuchKernel:
            raise pytest.UsageError(
                f"kernelspec {name!r} is not installed; run tests/kernel/run.sh, which builds "
                "devarray-kernel and installs it into .venv"
            ) from None
        if not Path(spec.argv[0]).is_file():
            raise pytest.UsageError(
                f"kernelspec {name!r} points at {spec.argv[0]}, which does not exist; "
                "run tests/kernel/run.sh to reinstall it"
            )


@pytest.fixture(scope="session")
def kernel_binary() -> Path:
    """The devarray-kernel executable, for tests that start it by hand."""
    configured = os.environ.get("DEVARRAY_KERNEL_BIN")
    path = Path(configured) if configured else Path(KernelSpecManager().get_kernel_spec("devarray").argv[0])
    assert path.is_file(), f"devarray-kernel not found at {path}"
    return path


@pytest.fixture()
def kernel() -> Iterator[Kernel]:
    """A fresh `devarray` kernel per test, for tests that interrupt or restart it."""
    with running_kernel() as started:
        yield started
