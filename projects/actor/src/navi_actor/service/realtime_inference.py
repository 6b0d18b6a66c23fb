"""The inference process of the real-time brain (spawned by :mod:`navi_actor.service.realtime_loop`).

It waits on the shared condition for an observation newer than the last one it consumed, copies it
out, advances the drones' recurrent state over exactly that observation (resetting a drone whose
episode id changed, and everyone when the drones or the tick numbering changed, as the sequential
brain does), predicts an action chunk, and writes the schedule the control process publishes: the
chunk aligned to the tick it takes effect (running-max delay estimate) and blended with the schedule
in force (:mod:`navi_actor.service.chunk_schedule`). ``latency_ms`` / ``jitter_ms`` sleep after the
forward pass, so a fast machine can play a slow one.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import time
from dataclasses import dataclass
from multiprocessing.synchronize import Condition, Event

import numpy as np
import torch

from navi_actor.checkpoints import load_checkpoint
from navi_actor.inference.policy_source import FRESH_POLICY_ID, PolicySource, build_policy
from navi_actor.inference.stepper import PolicyStepper
from navi_actor.models import PolicyConfig
from navi_actor.service.chunk_schedule import (
    DelayEstimator,
    Schedule,
    align_chunk,
    covered_delay,
    measured_delay,
    merge_schedules,
    upcoming_tick,
)
from navi_actor.service.realtime_shared import (
    CONSUMED,
    DELAY_TICKS,
    INFERENCES,
    OBS_TICK,
    OBS_VERSION,
    SCHEDULE_ANSWERS,
    SCHEDULE_LENGTH,
    SCHEDULE_START,
    SCHEDULE_VERSION,
    SharedLayout,
    SharedState,
)

_WAIT_S = 0.2  # longest wait for an observation: bounds the reaction to stop and to a dead parent
INFERENCE_NICENESS = 5
"""The inference process lowers its own scheduling priority by this much (any user may): on a busy
machine the light control process then wins the CPU and keeps its rate, the heavy inference waits."""


@dataclass(frozen=True)
class InferencePlan:
    """Everything the inference process needs, handed over once when it is spawned."""

    block_name: str
    layout: dict[str, int]
    checkpoint: str | None  #: the resolved checkpoint file; None: a fresh policy
    policy_id: str
    fresh_config_json: str
    device: str
    deterministic: bool
    seed: int
    period_s: float
    latency_ms: float
    jitter_ms: float
    blend: bool
    delay_window: int
    torch_threads: int | None
    needs_poses: bool = False  #: the policy reads its visit memory: every observation must carry poses


def run_inference_process(plan: InferencePlan, condition: Condition, stop: Event) -> None:
    """Spawn target: serve inferences until ``stop`` is set or the control process is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the control process decides when to stop
    if hasattr(os, "nice"):
        os.nice(INFERENCE_NICENESS)
    if plan.torch_threads is not None:
        torch.set_num_threads(plan.torch_threads)
    shared = SharedState(SharedLayout(**plan.layout), condition, name=plan.block_name)
    try:
        InferenceLoop(plan, shared, stop).run()
    finally:
        shared.close()


def _policy_source(plan: InferencePlan) -> PolicySource:
    if plan.checkpoint is None:
        return PolicySource(None, FRESH_POLICY_ID, None)
    from pathlib import Path

    return PolicySource(load_checkpoint(Path(plan.checkpoint)), plan.policy_id, Path(plan.checkpoint))


class InferenceLoop:
    """One policy, its recurrent state and the schedule it last wrote."""

    def __init__(self, plan: InferencePlan, shared: SharedState, stop: Event) -> None:
        self.plan, self.shared, self.stop = plan, shared, stop
        layout = shared.layout
        shape = (3, layout.azimuth, layout.elevation)
        fresh = PolicyConfig.model_validate_json(plan.fresh_config_json)
        policy = build_policy(_policy_source(plan), fresh, shape, device=plan.device, seed=plan.seed)
        torch.manual_seed(plan.seed)
        self.stepper = PolicyStepper(
            policy, layout.drones, deterministic=plan.deterministic, device=plan.device
        )
        self.obs = np.zeros((layout.drones, *shape), dtype=np.float32)
        self.obs_tensor = torch.from_numpy(self.obs)  # a view: refilled in place for every inference
        self.position = np.zeros((layout.drones, 3), dtype=np.float32)
        self.yaw = np.zeros(layout.drones, dtype=np.float32)
        self.poses = (torch.from_numpy(self.position), torch.from_numpy(self.yaw))  # views, as obs_tensor
        self.env_ids = np.zeros(layout.drones, dtype=np.int32)
        self.episode_ids = np.zeros(layout.drones, dtype=np.int64)
        self.last_tick: int | None = None
        self.estimator = DelayEstimator(plan.delay_window)
        self.previous: Schedule | None = None
        self.random = random.Random(plan.seed)

    def run(self) -> None:
        """Infer on every new observation until stopped."""
        parent = multiprocessing.parent_process()
        while not self.stop.is_set() and (parent is None or parent.is_alive()):
            tick = self._take()
            if tick is not None:
                self._infer(tick)

    def _take(self) -> int | None:
        """Copy the newest unconsumed observation out of shared memory; its tick, or None."""
        header, views = self.shared.header, self.shared.views
        with self.shared.condition:
            fresh = self.shared.condition.wait_for(
                lambda: header[OBS_VERSION] != header[CONSUMED] or self.stop.is_set(), timeout=_WAIT_S
            )
            if not fresh or self.stop.is_set():
                return None
            self.obs[:, 0] = views["depth"]
            self.obs[:, 1] = views["semantic"]
            self.obs[:, 2] = views["valid"]
            self.position[...] = views["position"]
            self.yaw[...] = views["yaw"]
            tick = int(header[OBS_TICK])
            same_drones = np.array_equal(views["env_ids"], self.env_ids)
            new_episode = views["episode_ids"] != self.episode_ids
            self.env_ids[...] = views["env_ids"]
            self.episode_ids[...] = views["episode_ids"]
            header[CONSUMED] = header[OBS_VERSION]
        if self.last_tick is None or not same_drones or tick < self.last_tick:
            self.stepper.reset()  # first observation, other drones or a restarted environment
            self.previous, self.estimator = None, DelayEstimator(self.plan.delay_window)
        else:
            self.stepper.end_episodes(torch.from_numpy(new_episode))
        self.last_tick = tick
        return tick

    def _infer(self, tick: int) -> None:
        poses = self.poses if self.stepper.needs_poses else None
        chunk = self.stepper.act_chunk(self.obs_tensor, poses).to("cpu")  # [B, H, A]
        self._sleep_injected_latency()
        header, views = self.shared.header, self.shared.views
        with self.shared.condition:
            latest_tick, arrival = int(header[OBS_TICK]), float(views["arrival"][0])
        upcoming = upcoming_tick(latest_tick, arrival, time.monotonic(), self.plan.period_s)
        self.estimator.record(measured_delay(tick, upcoming))
        delay = self.estimator.ticks
        # the estimate may run ahead of the environment (a tick started a few ms late): the schedule
        # starts no later than the earliest tick the environment can still execute
        earliest = latest_tick + 1
        new = align_chunk(chunk, tick, covered_delay(delay, tick, earliest, self.previous))
        merged = merge_schedules(self.previous, new, earliest, self.plan.blend, blend_ticks=delay)
        length = min(int(merged.actions.shape[1]), self.shared.layout.capacity)
        self.previous = Schedule(merged.start, merged.actions[:, :length])
        with self.shared.condition:
            views["schedule"][:, :length] = self.previous.actions.numpy()
            header[SCHEDULE_START], header[SCHEDULE_LENGTH] = merged.start, length
            header[SCHEDULE_ANSWERS], header[DELAY_TICKS] = tick, delay
            header[INFERENCES] += 1
            header[SCHEDULE_VERSION] += 1

    def _sleep_injected_latency(self) -> None:
        """Sleep ``latency_ms`` +- ``jitter_ms`` (uniform) after the forward pass (testing latency)."""
        plan = self.plan
        if plan.latency_ms <= 0 and plan.jitter_ms <= 0:
            return
        delay_ms = plan.latency_ms + self.random.uniform(-plan.jitter_ms, plan.jitter_ms)
        if delay_ms > 0:
            self.stop.wait(delay_ms / 1e3)
