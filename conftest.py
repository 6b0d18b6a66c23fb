"""Repository-wide pytest setup: hypothesis profiles (``ci`` has no deadline on a noisy 2-core box),
the process's SIGTERM handler restored after each test, and the process fixtures that test modules of
several packages ask for with ``pytestmark = pytest.mark.usefixtures(...)``."""

import os
import signal
import subprocess
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", deadline=None, max_examples=50)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture(autouse=True)
def _restore_sigterm_handler() -> Iterator[None]:
    """Commands run in-process (CliRunner) install their own SIGTERM handler; give the test process
    its own back so one test's handler never decides how the next one ends."""
    previous = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, previous)


@pytest.fixture
def one_torch_thread() -> Iterator[None]:
    """One intra-op torch thread for the test, restored afterwards.

    Why: tiny models run fastest, and predictably on a shared 2-core machine, without a thread pool;
    where a brain and an environment share the process, one thread each avoids oversubscription.
    torch is imported here, not above: tests that never ask do not pay for it.
    """
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def restore_process_state() -> Iterator[None]:
    """Commands run in-process configure structlog and torch threads for their process: undo that."""
    import structlog
    import torch

    threads = torch.get_num_threads()
    yield
    structlog.reset_defaults()
    torch.set_num_threads(threads)


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Children a test starts (it appends them); any still running at the end are killed."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
