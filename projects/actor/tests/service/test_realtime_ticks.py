"""The real-time brain never schedules from a tick the environment may not have started yet.

The brain estimates the environment's upcoming tick from the newest observation's tick and arrival
time (one more tick per whole period since). The observation arrives a step and a transfer after
its tick's deadline, so a period after the arrival the environment may still be a few ms from
starting the next tick. A schedule published then with ``start_tick`` = the estimate replaces the
one covering that next tick, which the environment then runs on its fallback (the CI flake of
``tests/test_bench_realtime.py``: one tick of 9 for both drones at zero injected latency, logged as
a ``start_tick`` 332 message drained at tick 331, run 5 ms after its deadline).

Both sides are stepped by hand here, on shared memory and the environment's own scheduler, with
the clock handed in: deterministic, no processes, no sockets.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from env_bridge import observation_message
from realtime_policy import SMALL_REALTIME_POLICY, saved_chunk_policy

from navi_actor.envs.point import PointGoalEnv
from navi_actor.inference import PolicySource, resolve_policy_source
from navi_actor.models import PolicyConfig
from navi_actor.service import BrainSettings
from navi_actor.service.brain import realtime_plan
from navi_actor.service.config import ServiceConfig
from navi_actor.service.realtime_inference import InferenceLoop, InferencePlan
from navi_actor.service.realtime_loop import RealtimeLoop
from navi_actor.service.realtime_shared import (
    SCHEDULE_ANSWERS,
    SCHEDULE_LENGTH,
    SCHEDULE_START,
    SCHEDULE_VERSION,
    SharedLayout,
    SharedState,
)
from navi_contracts import Action
from navi_environment.server.realtime_schedule import ActionScheduler

SMALL = SMALL_REALTIME_POLICY
PERIOD = 0.05


class RecordingPublisher:
    """Keeps what the control loop publishes."""

    def __init__(self) -> None:
        self.actions: list[Action] = []

    def publish(self, topic: str, message: Any) -> None:
        if isinstance(message, Action):
            self.actions.append(message)


def plan_for(layout: SharedLayout, checkpoint: Path | None = None, period_s: float = PERIOD) -> InferencePlan:
    return InferencePlan(
        block_name="", layout=layout.as_dict(), checkpoint=None if checkpoint is None else str(checkpoint),
        policy_id="p",
        fresh_config_json=PolicyConfig(visit_input=False, action_chunk=3, **SMALL).model_dump_json(),  # type: ignore[arg-type]
        device="cpu", deterministic=True, seed=0, period_s=period_s, latency_ms=0.0, jitter_ms=0.0,
        blend=True, delay_window=10, torch_threads=None,
    )  # fmt: skip


def test_a_period_published_while_the_environment_starts_its_tick_late_keeps_that_tick_covered() -> None:
    """The logged failure, replayed: the schedule answering tick 330 covers ticks 331..336; the control
    loop's next period comes 1.02 periods after observation 330 arrived, when the environment has not
    drained tick 331 yet (it runs 5 ms late). Tick 331 must still run the scheduled action."""
    layout = SharedLayout(drones=2, azimuth=4, elevation=2)
    publisher = RecordingPublisher()
    loop = RealtimeLoop(plan_for(layout), None, publisher, None, ServiceConfig(control_hz=1 / PERIOD))  # type: ignore[arg-type]
    loop.shared = SharedState(layout, loop.condition)
    loop.schedule = np.zeros((2, layout.capacity, 4), dtype=np.float32)
    loop.env_ids = np.arange(2, dtype=np.int32)
    rows = np.linspace(-0.6, 0.6, 6, dtype=np.float32)  # forward action of the rows for ticks 331..336
    try:
        header = loop.shared.header
        loop.shared.views["schedule"][:, :6, 0] = rows
        header[SCHEDULE_START], header[SCHEDULE_LENGTH], header[SCHEDULE_ANSWERS] = 331, 6, 330
        header[SCHEDULE_VERSION] = 1
        arrival = 1000.0
        loop.latest_tick, loop.latest_arrival = 330, arrival
        environment = ActionScheduler(2)
        assert loop._publish(arrival + 0.004, new_only=True)  # the new schedule, out at once
        assert loop._publish(arrival + 1.02 * PERIOD)  # the next control period
        for action in publisher.actions:  # all drained at tick 331, which started late
            environment.receive(action, next_tick=331)
        executed = environment.tick(331)
    finally:
        loop.shared.close()
    assert [a.start_tick for a in publisher.actions] == [331, 331]  # never the estimate, 332
    assert int(environment.stats.fallback_ticks.sum()) == 0
    np.testing.assert_allclose(executed[:, 0], rows[0])
    assert loop.last_effect == 332  # the figures still use the estimate: it probably runs at 332


def test_a_schedule_written_while_the_environment_is_late_covers_its_next_tick(tmp_path: Path) -> None:
    """The inference side, by hand: the observation of tick 0 arrived 1.5 periods ago, so the estimate
    says tick 2 is next, but the environment (late) has not run tick 1. The schedule starts at tick 1
    with the chunk's first entry: nothing is left to the fallback."""
    _policy, path, layout, condition, shared = saved_chunk_policy(tmp_path)
    period = 10.0  # long, so the forward pass cannot move the estimate on a loaded machine
    plan = plan_for(layout, path, period)
    loop = InferenceLoop(plan, SharedState(layout, condition, name=shared.name), threading.Event())
    env = PointGoalEnv(2, azimuth=32, elevation=8, max_steps=1000)
    message = observation_message(env.reset(1), np.arange(2, dtype=np.int32), np.zeros(2, np.int64), 0)
    schedule = np.zeros((2, layout.capacity, 4), dtype=np.float32)
    try:
        shared.write_observation(message, time.monotonic() - 1.5 * period)
        assert loop._take() == 0
        loop._infer(0)
        assert loop.estimator.ticks == 2  # measured against the estimate: tick 2
        _, start, length, answers = shared.read_schedule(schedule) or (0, 0, 0, 0)
        environment = ActionScheduler(2)
        action = Action(
            env_ids=np.arange(2, dtype=np.int32), actions=schedule[:, 0].copy(), step_id=answers,
            start_tick=start, chunk=schedule[:, :length].copy(), policy_id="p", timestamp=0.0,
        )  # fmt: skip
        environment.receive(action, next_tick=1)
        environment.tick(1)
    finally:
        loop.shared.close()
        shared.close()
    assert (start, length, answers) == (1, 3, 0)  # the whole chunk, from the tick after observation 0
    assert int(environment.stats.fallback_ticks.sum()) == 0


class OneMessage:
    """A subscriber that has one message to give."""

    def __init__(self, message: Any) -> None:
        self.message = message

    def recv(self, timeout_ms: int) -> tuple[str, Any] | None:
        message, self.message = self.message, None
        return None if message is None else ("distance_matrix_v2", message)


def test_a_visit_reading_policy_is_planned_with_poses_and_refuses_observations_without_them(
    tmp_path: Path,
) -> None:
    """The plan says the policy needs poses (from its checkpoint); an observation without them ends
    the service in one line, before any inference process starts, as the sequential brain does."""
    _policy, path, layout, _condition, shared = saved_chunk_policy(tmp_path, visit_source="frontiers")
    shared.close()
    source = resolve_policy_source(path, tmp_path / "models")
    assert realtime_plan(BrainSettings(), source).needs_poses
    fresh = PolicySource(None, "fresh", None)
    assert realtime_plan(BrainSettings(), fresh).needs_poses  # the default policy reads the frontier map
    assert not realtime_plan(BrainSettings(policy={"visit_input": False}), fresh).needs_poses
    env = PointGoalEnv(2, azimuth=32, elevation=8)
    message = observation_message(env.reset(0), np.arange(2, dtype=np.int32), np.zeros(2, np.int64), 0)
    plan = replace(plan_for(layout, path), needs_poses=True)
    loop = RealtimeLoop(
        plan, OneMessage(message), RecordingPublisher(), None, ServiceConfig(control_hz=1 / PERIOD)
    )  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs the drones' poses with every observation"):
        loop._receive(0.0)
    assert loop.shared is None and loop.worker is None
