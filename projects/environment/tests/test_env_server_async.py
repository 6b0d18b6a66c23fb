"""Async mode of the environment server, driven by a fake brain publisher over real sockets.

Synchronisation is by handshakes and polling with timeouts only: the fake brain's XPUB waits for the
server's subscription, and the test waits for observations whose ``step_id`` proves what happened.
Actions from one publisher reach the server in order, so a valid action sent after bad ones proves
the bad ones were looked at (and skipped) first.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pytest

from navi_common import Publisher, RepServer, ReqClient, Subscriber, free_tcp_endpoint
from navi_contracts import Action, DistanceMatrix, StepRequest, StepResult, topics
from navi_environment.backend import SdfDagBackend
from navi_environment.config import EnvironmentSettings
from navi_environment.runtime.analytic import RoomSpec, room_scene
from navi_environment.server import AsyncActionLoop, EnvironmentService, ServerConfig, serve

DRONES = 2


@pytest.fixture(scope="module")
def backend() -> SdfDagBackend:
    """Two drones in a closed analytic room, 16 x 8 rays (fast to build and to step)."""
    settings = EnvironmentSettings(sensor={"azimuth_bins": 16, "elevation_bins": 8})  # type: ignore[arg-type]
    return SdfDagBackend(settings, DRONES, scenes=[room_scene(RoomSpec(hi=(8.0, 6.0, 3.0)), 64)])


@dataclass
class AsyncServer:
    """A running async loop with its sockets, plus the fake brain's publisher."""

    loop: AsyncActionLoop
    brain: Publisher
    observations: Subscriber
    rep: str
    thread: threading.Thread
    stop_event: threading.Event

    def stop(self) -> None:
        """Stop the loop and wait for it (its counters are final afterwards)."""
        self.stop_event.set()
        self.thread.join(timeout=5)
        assert not self.thread.is_alive(), "async loop did not stop on its stop event"


@pytest.fixture
def async_server(backend: SdfDagBackend) -> Iterator[AsyncServer]:
    brain_pub, env_pub, rep = free_tcp_endpoint(), free_tcp_endpoint(), free_tcp_endpoint()
    config = ServerConfig(mode="async", action_sub=brain_pub, republish_ms=40, poll_ms=5, seed=3)
    stop = threading.Event()
    with Publisher(brain_pub) as brain, Publisher(env_pub) as env_publisher:
        service = EnvironmentService(backend, env_publisher)  # one service behind REP and the loop
        with (
            RepServer(rep, service.handle, accepts=(StepRequest,)) as server,
            Subscriber(brain_pub, [topics.ACTION]) as actions,
            Subscriber(env_pub, [topics.DISTANCE_MATRIX]) as observations,
        ):
            loop = AsyncActionLoop(service, actions, server, config)
            thread = threading.Thread(target=loop.run, args=(stop,), daemon=True)
            thread.start()
            brain.wait_for_subscribers(topics.ACTION, count=1, timeout_ms=5000)
            running = AsyncServer(loop, brain, observations, rep, thread, stop)
            yield running
            running.stop()


def next_observation(subscriber: Subscriber, min_step: int, timeout_s: float = 10.0) -> DistanceMatrix:
    """The first observation with ``step_id >= min_step`` (older, re-published ones are skipped)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        received = subscriber.recv(timeout_ms=100)
        message = None if received is None else received[1]
        if isinstance(message, DistanceMatrix) and message.step_id >= min_step:
            return message
    raise AssertionError(f"no observation with step_id >= {min_step} within {timeout_s} s")


def action(step_id: int, env_ids: list[int] | None = None, value: float = 0.5) -> Action:
    ids = list(range(DRONES)) if env_ids is None else env_ids
    return Action(
        env_ids=np.array(ids, dtype=np.int32), actions=np.full((len(ids), 4), value, dtype=np.float32),
        policy_id="fake-brain", step_id=step_id, timestamp=time.time(),
    )  # fmt: skip


def test_steps_only_on_the_current_step_id_and_skips_everything_else(async_server: AsyncServer) -> None:
    brain, observations, loop = async_server.brain, async_server.observations, async_server.loop
    first = next_observation(observations, 0)  # the start-up reset, re-published until we listen
    start = first.step_id
    assert first.episode_ids.tolist() == [1, 1]
    brain.publish(topics.ACTION, action(start))
    stepped = next_observation(observations, start + 1)
    assert stepped.step_id == start + 1
    # duplicate (a re-send), garbage bytes, a foreign batch and a step from the future: all skipped
    brain.publish(topics.ACTION, action(start))
    brain.publish_raw(topics.ACTION, b"\xc1 not msgpack")
    brain.publish(topics.ACTION, action(start + 1, env_ids=[0, 0]))
    brain.publish(topics.ACTION, action(start + 1, env_ids=[0]))
    brain.publish(topics.ACTION, action(start + 50))
    brain.publish(topics.ACTION, action(start + 1, env_ids=[1, 0]))  # valid, any env-id order
    after = next_observation(observations, start + 2)
    assert after.step_id == start + 2  # exactly one step for the valid action
    # nothing else steps: while waiting, the same observation comes again (re-published)
    repeats = [next_observation(observations, start + 2) for _ in range(3)]
    assert {repeat.step_id for repeat in repeats} == {start + 2}
    async_server.stop()
    counters = loop.counters
    assert (counters.stepped, counters.stale, counters.rejected, counters.ahead) == (2, 1, 2, 1)
    assert counters.republished >= 3
    assert loop.actions.dropped == 1  # the garbage, logged by the subscriber


def test_rep_keeps_serving_and_a_reset_restarts_episodes(async_server: AsyncServer) -> None:
    brain, observations, loop = async_server.brain, async_server.observations, async_server.loop
    start = next_observation(observations, 0).step_id
    with ReqClient(async_server.rep, timeout_ms=5000, retries=0) as client:
        reset = client.request(StepRequest(request_id=7, reset=True, seed=1), expected=StepResult)
        assert reset.observation.step_id == start + 1
        assert reset.observation.episode_ids.tolist() == [2, 2]
        brain.publish(topics.ACTION, action(start))  # answers the pre-reset observation: stale
        brain.publish(topics.ACTION, action(start + 1, value=-1.0))
        assert next_observation(observations, start + 2).step_id == start + 2
        stepped = client.request(StepRequest(request_id=8, actions=action(start + 2)), expected=StepResult)
        assert stepped.observation.step_id == start + 3
    async_server.stop()
    assert (loop.counters.stepped, loop.counters.stale) == (1, 1)


def test_serve_in_async_mode_resets_publishes_and_stops(backend: SdfDagBackend) -> None:
    brain_pub, env_pub, rep = free_tcp_endpoint(), free_tcp_endpoint(), free_tcp_endpoint()
    config = ServerConfig(mode="async", action_sub=brain_pub, republish_ms=40)
    stop = threading.Event()
    with Publisher(brain_pub) as brain, Subscriber(env_pub, [topics.DISTANCE_MATRIX]) as observations:
        thread = threading.Thread(target=serve, args=(backend, env_pub, rep, stop, config), daemon=True)
        thread.start()
        brain.wait_for_subscribers(topics.ACTION, count=1, timeout_ms=5000)
        start = next_observation(observations, 0).step_id
        for step in range(start, start + 5):
            brain.publish(topics.ACTION, action(step, value=0.3))
            assert next_observation(observations, step + 1).step_id == step + 1
        stop.set()
        thread.join(timeout=5)
        assert not thread.is_alive()


def test_async_mode_refuses_to_run_without_a_pub_endpoint(backend: SdfDagBackend) -> None:
    with pytest.raises(ValueError, match="PUB"):
        ServerConfig(mode="async", pub_endpoint="")
    with pytest.raises(ValueError, match="PUB"):
        serve(backend, None, free_tcp_endpoint(), threading.Event(), ServerConfig(mode="async"))


def test_serve_command_explains_async_mode_and_refuses_it_without_a_pub() -> None:
    from click.testing import CliRunner

    from navi_environment.server.command import serve_command

    runner = CliRunner()
    shown = runner.invoke(serve_command, ["--help"])
    assert shown.exit_code == 0 and "--action-sub" in shown.output and "step_id" in shown.output
    refused = runner.invoke(serve_command, ["--mode", "async", "--pub-endpoint", ""])
    assert refused.exit_code == 2 and "async mode needs a PUB endpoint" in refused.output
    bad = runner.invoke(serve_command, ["--republish-ms", "0"])
    assert bad.exit_code == 2 and "republish_ms" in bad.output
