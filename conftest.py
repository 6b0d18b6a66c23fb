"""Repository-wide pytest setup: hypothesis profiles (``ci`` has no deadline on a noisy 2-core box) and
the process's SIGTERM handler restored after each test."""

import os
import signal
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
