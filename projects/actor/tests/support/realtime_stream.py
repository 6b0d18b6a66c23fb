"""A 20 Hz observation stream, a planned chunk policy, and one run of ``navi-actor serve --inference
realtime`` as a real process against them: shared by the CPU tests and the accelerator tests so the
two cannot drift.

The test plays a real-time environment: a thread publishes one observation per tick at ``HZ``
(``step_id`` = tick) and subscribers read the brain's actions and telemetry.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from env_bridge import observation_message
from realtime_policy import SMALL_REALTIME_POLICY, saved_chunk_policy

from navi_actor.checkpoints import Checkpoint, save_checkpoint
from navi_actor.envs.point import PointGoalEnv
from navi_actor.inference import PolicyStepper
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_actor.service.realtime_inference import InferenceLoop, InferencePlan
from navi_actor.service.realtime_shared import SKIPPED_OBSERVATIONS, SharedState
from navi_common import Publisher, Subscriber, free_tcp_endpoint
from navi_contracts import Action, TelemetryEvent, topics

HZ, H = 20.0, 8
PLAN = -0.7 + 0.2 * np.arange(H, dtype=np.float32)  # forward action of chunk entry k: tells k apart


def planned_checkpoint(tmp_path: Path) -> Path:
    """A policy whose chunk ignores the observation: entry k has forward action ``PLAN[k]``."""
    torch.manual_seed(0)
    policy = NaviPolicy(PolicyConfig(visit_input=False, action_chunk=H, **SMALL_REALTIME_POLICY))  # type: ignore[arg-type]
    assert policy.actor.chunk is not None
    with torch.no_grad():
        policy.actor.mean.weight.zero_()
        policy.actor.chunk.weight.zero_()
        biases = torch.zeros(H, 4)
        biases[:, 0] = torch.from_numpy(PLAN)
        policy.actor.mean.bias.copy_(biases[0])
        assert policy.actor.chunk_relative  # the default head: entry k = mean + delta_k
        policy.actor.chunk.bias.copy_((biases[1:] - biases[0]).flatten())
    return save_checkpoint(
        Checkpoint(model=policy.state_dict(), policy_config=policy.cfg), tmp_path / "plan.pt"
    )


class RealtimeEnvironment:
    """Publishes PointGoalEnv observations of 2 drones at ``HZ``, one tick per period, until closed,
    with the drones' poses as the environment server sends them (the default policy reads its map)."""

    def __init__(self, endpoint: str) -> None:
        self.publisher = Publisher(endpoint)
        self.env = PointGoalEnv(2, azimuth=32, elevation=8, max_steps=1000)
        self.obs = self.env.reset(3)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self.publisher.wait_for_subscribers(topics.DISTANCE_MATRIX, timeout_ms=10_000)
        self.thread.start()

    def _run(self) -> None:
        env_ids, episode_ids = np.arange(2, dtype=np.int32), np.zeros(2, dtype=np.int64)
        started, tick = time.monotonic(), 0
        while not self.stop.is_set():
            self.publisher.publish(
                topics.DISTANCE_MATRIX,
                observation_message(self.obs, env_ids, episode_ids, tick, self.env.poses()),  # as the server
            )
            tick += 1
            self.stop.wait(max(0.0, started + tick / HZ - time.monotonic()))

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=3)
        self.publisher.close()


def receive(subscriber: Subscriber, seconds: float) -> list[Action]:
    """Every action published in the next ``seconds``."""
    actions, deadline = [], time.monotonic() + seconds
    while (remaining := deadline - time.monotonic()) > 0:
        received = subscriber.recv(timeout_ms=int(remaining * 1e3) + 1)
        if received is not None and isinstance(received[1], Action):
            actions.append(received[1])
    return actions


def first_action(subscriber: Subscriber, timeout_s: float = 60.0) -> Action:
    received = subscriber.recv(timeout_ms=int(timeout_s * 1e3))
    assert received is not None and isinstance(received[1], Action), "the realtime brain never acted"
    return received[1]


def new_chunk_start(action: Action) -> int:
    """First tick of ``action``'s chunk that follows the plan of the observation it answers."""
    assert action.chunk is not None and action.start_tick is not None
    ticks = action.start_tick + np.arange(action.chunk.shape[1])
    offsets = ticks - action.step_id - 1  # entry index of the answering chunk for each tick
    follows = (offsets < H) & np.isclose(action.chunk[0, :, 0], PLAN[np.clip(offsets, 0, H - 1)])
    first = int(np.argmax(follows))
    assert follows[first:].all(), "after the new chunk starts, every tick follows it"
    return int(ticks[first])


def brain_stats(subscriber: Subscriber, latest: dict[str, float]) -> dict[str, float]:
    """Drain the brain's telemetry; the newest ``actor.service.stats`` payload."""
    while (message := subscriber.recv(timeout_ms=0)) is not None:
        if isinstance(message[1], TelemetryEvent) and message[1].event_type == "actor.service.stats":
            latest = dict(message[1].payload)
    return latest


@dataclass
class RealtimeRun:
    """What one run of the real-time brain process published, and how it exited."""

    actions: list[Action]  #: every action of the measured window
    before: dict[str, float]  #: the newest ``actor.service.stats`` before the window
    after: dict[str, float]  #: the newest one a stats period after it
    seconds: float  #: the window plus that stats period
    returncode: int | None
    errors: str  #: the end of the process's stderr


def run_realtime_brain(tmp_path: Path, options: list[str], measured_s: float = 3.0) -> RealtimeRun:
    """``navi-actor serve --inference realtime`` on :func:`planned_checkpoint` against a 20 Hz stream,
    with ``options`` added (latency, blending, device); stopped with SIGTERM after the window."""
    env_endpoint, brain_endpoint = free_tcp_endpoint(), free_tcp_endpoint()
    argv = [sys.executable, "-m", "navi_actor.service", "--inference", "realtime",
            "--sub-endpoint", env_endpoint, "--pub-endpoint", brain_endpoint,
            "--checkpoint", str(planned_checkpoint(tmp_path)), "--deterministic",
            "--control-hz", str(HZ), *options]  # fmt: skip
    variables = {**os.environ, "NAVI_ACTOR_SERVICE__STATS_SECONDS": "0.5", "NAVI_ACTOR_LOG_LEVEL": "warning"}
    environment = RealtimeEnvironment(env_endpoint)
    subscriber = Subscriber(brain_endpoint, [topics.ACTION])
    telemetry = Subscriber(brain_endpoint, [topics.TELEMETRY_EVENT])
    brain = subprocess.Popen(argv, env=variables, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        environment.start()
        first_action(subscriber)  # the inference process is up (spawn, torch import, policy)
        receive(subscriber, 1.0)  # and past its first, slowest inferences
        before = brain_stats(telemetry, {})
        actions = receive(subscriber, measured_s)
        time.sleep(0.6)  # one more stats period
        after = brain_stats(telemetry, before)
    finally:
        brain.send_signal(signal.SIGTERM)
        try:
            _, errors = brain.communicate(timeout=20)
        finally:
            if brain.poll() is None:
                brain.kill()
            environment.close()
            subscriber.close()
            telemetry.close()
    return RealtimeRun(
        actions, before, after, measured_s + 0.6, brain.returncode, errors.decode(errors="replace")[-2000:]
    )


def assert_keeps_its_rate_and_starts_chunks_after_the_delay(run: RealtimeRun) -> None:
    """What a run with 150 +- 20 ms of injected latency and no blending must show."""
    assert run.returncode == 0, run.errors
    before, after = run.before, run.after
    assert before and after, "no actor.service.stats events"
    periods = after["control_periods"] - before["control_periods"]
    assert after["missed_periods"] - before["missed_periods"] == 0
    assert periods >= 0.8 * run.seconds * HZ, f"{periods} control periods in about {run.seconds} s at {HZ} Hz"
    assert after["inferences"] - before["inferences"] < 0.5 * periods  # inference ran at its own pace
    # 150 +- 20 ms of latency is 3-4 periods: a chunk answering tick s takes effect at s + 4 or later,
    # its first entries (for ticks already committed) dropped, the rest exactly the plan's
    delays = [new_chunk_start(action) - action.step_id for action in run.actions]
    assert min(delays) >= 4 and max(delays) <= 8, delays
    starts = [action.start_tick for action in run.actions]
    assert all(a is not None for a in starts) and starts == sorted(starts)  # never a stale schedule
    last_ticks = [(a.start_tick or 0) + (0 if a.chunk is None else a.chunk.shape[1]) - 1 for a in run.actions]
    assert last_ticks == [a.step_id + H for a in run.actions]  # each schedule ends with its chunk's last tick


def assert_inference_follows_the_consumed_observations(
    tmp_path: Path, device: str, atol: float, visit_source: str | None = None
) -> None:
    """The inference loop on ``device``, stepped by hand on shared memory (no process), against a CPU
    :class:`PolicyStepper` fed only the consumed observations: a skipped observation never touches the
    memory, a changed episode id resets that drone only, as the sequential brain does.

    ``visit_source``: the policy reads its visit memory (``positions`` / ``frontiers``) from the
    poses the observations carry through shared memory."""
    policy, path, layout, condition, shared = saved_chunk_policy(tmp_path, visit_source=visit_source)
    config = policy.cfg
    plan = InferencePlan(
        block_name=shared.name, layout=layout.as_dict(), checkpoint=str(path), policy_id="p",
        fresh_config_json=config.model_dump_json(), device=device, deterministic=True, seed=0,
        period_s=10.0, latency_ms=0.0, jitter_ms=0.0, blend=False, delay_window=10, torch_threads=None,
        needs_poses=visit_source is not None,
    )  # fmt: skip
    loop = InferenceLoop(plan, SharedState(layout, condition, name=shared.name), threading.Event())
    reference = PolicyStepper(policy, 2, deterministic=True)
    env = PointGoalEnv(2, azimuth=32, elevation=8, max_steps=1000)
    frames = [env.reset(1)]
    poses = [env.poses()]
    for _ in range(4):
        frames.append(env.step(torch.full((2, 4), 0.3)).obs.clone())
        poses.append(env.poses())
    episode_ids = np.zeros(2, dtype=np.int64)
    schedule = np.zeros((2, layout.capacity, 4), dtype=np.float32)
    try:
        for tick, consumed in [(0, True), (1, False), (2, True), (3, True)]:
            if tick == 3:
                episode_ids = np.array([0, 1], dtype=np.int64)  # drone 1 starts a new episode
                reference.end_episodes(torch.tensor([False, True]))
            message = observation_message(
                frames[tick], np.arange(2, dtype=np.int32), episode_ids, tick, poses[tick]
            )
            shared.write_observation(message, time.monotonic())
            if not consumed:
                continue
            taken = loop._take()
            assert taken == tick
            loop._infer(tick)
            expected = reference.act_chunk(frames[tick], poses[tick])  # [B, H, 4], entry 0 = act's
            _, start, length, answers = shared.read_schedule(schedule) or (0, 0, 0, 0)
            assert (start, answers) == (tick + 1, tick) and length == 3  # the chunk from the next tick
            np.testing.assert_allclose(schedule[:, :3], expected.numpy(), atol=atol)
        assert int(shared.header[SKIPPED_OBSERVATIONS]) == 1  # tick 1 was overwritten unread
    finally:
        loop.shared.close()
        shared.close()
