"""The three-process stack over real sockets: environment server, brain, and this test as observer.

Covers the full loop, equivalence with in-process inference (same checkpoint, seed and scene,
deterministic, 200 steps), a brain restarted while the environment keeps serving, garbage on every
socket, and Ctrl+C within 2 s. The environment restart is in ``test_stack_launcher.py``.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from service_stack import DRONES, Stack, actions_from, reference_actions, stack_files

from navi_common import RemoteError, ReqClient, Subscriber
from navi_contracts import topics
from navi_contracts.samples import sample_action

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return stack_files(tmp_path_factory.mktemp("stack"))


@pytest.fixture(scope="module")
def stack(files: dict[str, Path]) -> Iterator[Stack]:
    """One environment server for the module (started once: start-up dominates on 2 cores)."""
    running = Stack(files)
    running.env = running.start_env()
    yield running
    running.close()


def test_three_process_stack_acts_exactly_like_in_process_inference(stack: Stack) -> None:
    with Subscriber(stack.brain_pub, [topics.ACTION]) as subscriber:
        brain = stack.start_brain("--total-steps", "200", "--wait-for-subscribers", "1", "--seed", "0")
        expected = reference_actions(stack.files, 200)  # computed while the brain starts
        served = actions_from(subscriber, 200, timeout_s=120)
        assert brain.wait(timeout=30) == 0
    step_ids = [action.step_id for action in served]
    assert step_ids == list(range(step_ids[0], step_ids[0] + 200))  # one action per env step, none lost
    stacked = np.stack([action.actions for action in served])
    assert np.array_equal(stacked, expected)  # bit-identical, every step, both drones


def _garbage(endpoint: str) -> None:
    """Raw bytes at a ZeroMQ port: not even a ZMTP greeting."""
    host, port = endpoint.removeprefix("tcp://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=2) as raw:
        raw.sendall(b"\x00\xffGET / HTTP/1.0\r\n\r\n" + os.urandom(256))


def test_stack_survives_a_brain_restart_garbage_and_stops_on_ctrl_c(stack: Stack) -> None:
    """Runs after the equivalence test: its brain exited and the environment kept serving, so this
    test's brain is the "brain restarted, environment still serving" case. (An environment killed
    and restarted mid-run is covered by ``test_stack_launcher.py``.)"""
    assert stack.env is not None and stack.env.poll() is None
    env = stack.env
    with Subscriber(stack.brain_pub, [topics.ACTION]) as subscriber:
        brain = stack.start_brain("--request-timeout-ms", "500")
        actions_from(subscriber, 20, timeout_s=120)
        # garbage on every socket: raw bytes at the env REP, the env PUB and the brain PUB; a
        # malformed request gets an error reply, and the loop keeps stepping
        for endpoint in (stack.rep, stack.env_pub, stack.brain_pub):
            _garbage(endpoint)
        client = ReqClient(stack.rep, timeout_ms=10_000, retries=0)
        with client, pytest.raises(RemoteError, match="StepRequest"):  # well-formed, wrong kind
            client.request(sample_action(batch=DRONES))
        actions_from(subscriber, 10)
        assert env.poll() is None and brain.poll() is None  # nobody died of the garbage
        # Ctrl+C: the brain exits within 2 s, cleanly
        brain.send_signal(signal.SIGINT)
        started = time.monotonic()
        code = brain.wait(timeout=10)
        assert time.monotonic() - started < 2.0
        assert code == 0  # SIGINT and SIGTERM end the brain the same way: a clean stop
