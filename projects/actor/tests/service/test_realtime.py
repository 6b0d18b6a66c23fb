"""Real-time brain on real processes and sockets: the control loop keeps its rate while inference is
slow, chunks start at the tick they take effect after the measured delay, H = 1 works end to end.

The stream, the planned policy and the process run are in the test support module
``realtime_stream`` (the accelerator tests run the same process on the GPU).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from realtime_policy import SMALL_REALTIME_POLICY
from realtime_stream import (
    HZ,
    RealtimeEnvironment,
    assert_inference_follows_the_consumed_observations,
    assert_keeps_its_rate_and_starts_chunks_after_the_delay,
    first_action,
    receive,
    run_realtime_brain,
)

from navi_actor.service import BrainSettings, run_brain
from navi_common import Subscriber, free_tcp_endpoint
from navi_contracts import topics

SMALL = {**SMALL_REALTIME_POLICY, "visit_input": False}  # the schedules' timing, not the map's cost


@pytest.fixture(autouse=True)
def one_torch_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.slow
def test_control_keeps_its_rate_while_inference_is_slow_and_chunks_start_after_the_delay(
    tmp_path: Path,
) -> None:
    """``navi-actor serve --inference realtime`` as a real process (its own control loop, its spawned
    inference process) against a 20 Hz observation stream, with 150 +- 20 ms of injected latency."""
    run = run_realtime_brain(tmp_path, ["--latency-ms", "150", "--jitter-ms", "20", "--no-blend"])
    assert_keeps_its_rate_and_starts_chunks_after_the_delay(run)


@pytest.mark.slow
def test_realtime_brain_with_h1_publishes_single_action_schedules(tmp_path: Path) -> None:
    env_endpoint, brain_endpoint = free_tcp_endpoint(), free_tcp_endpoint()
    settings = BrainSettings(
        service={"inference": "realtime", "sub_endpoint": env_endpoint, "pub_endpoint": brain_endpoint,
                 "deterministic": True, "control_hz": HZ, "wait_for_subscribers": 1},
        policy=SMALL, train={"artifacts_dir": tmp_path},
    )  # fmt: skip
    environment = RealtimeEnvironment(env_endpoint)
    subscriber = Subscriber(brain_endpoint, [topics.ACTION])
    stop, steps = threading.Event(), [0]
    brain = threading.Thread(
        target=lambda: steps.__setitem__(0, run_brain(settings, tmp_path, stop)), daemon=True
    )
    brain.start()
    environment.start()
    try:
        action = first_action(subscriber)
        later = receive(subscriber, 1.0)
    finally:
        stop.set()
        brain.join(timeout=10)
        environment.close()
        subscriber.close()
    assert not brain.is_alive() and steps[0] >= 1
    for message in [action, *later]:
        # the newest single prediction, after whatever the previous schedule still commits
        assert message.chunk is not None and message.chunk.shape[0] == 2 and message.chunk.shape[2] == 4
        assert message.start_tick is not None and message.start_tick >= message.step_id + 1
        assert np.array_equal(message.chunk[:, 0], message.actions) and message.policy_id == "fresh"


@pytest.mark.parametrize("visit_source", [None, "positions", "frontiers"])
def test_inference_state_follows_exactly_the_consumed_observations(
    tmp_path: Path, visit_source: str | None
) -> None:
    """The inference loop, stepped by hand on shared memory (no process): a skipped observation never
    touches the memory, a changed episode id resets that drone only, as the sequential brain does;
    a policy reading its visit memory reads it from the poses that came through shared memory."""
    assert_inference_follows_the_consumed_observations(tmp_path, "cpu", atol=1e-6, visit_source=visit_source)
