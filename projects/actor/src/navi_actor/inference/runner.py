"""In-process inference: step an environment with a policy, publish telemetry, never learn.

The canonical reference for the service stack: the same :class:`PolicyStepper` acts here on the
environment's tensors directly, with no sockets in between.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from navi_actor.envs.protocol import VectorEnv
from navi_actor.inference.stepper import PolicyStepper
from navi_actor.inference.telemetry import ActingTelemetry


@dataclass(frozen=True)
class InferenceSummary:
    """What an inference run did."""

    steps: int  # batched steps
    drone_steps: int
    episodes: int  # episodes that finished
    seconds: float
    interrupted: bool

    @property
    def steps_per_second(self) -> float:
        """Batched steps per second."""
        return self.steps / self.seconds if self.seconds > 0 else 0.0


def run_inference(
    env: VectorEnv,
    stepper: PolicyStepper,
    telemetry: ActingTelemetry,
    *,
    seed: int = 0,
    total_steps: int | None = None,
    episodes: int | None = None,
    stop: threading.Event | None = None,
    on_actions: Callable[[int, torch.Tensor], None] | None = None,
) -> InferenceSummary:
    """Act in ``env`` until ``total_steps`` batched steps or ``episodes`` finished episodes (or ``stop``).

    Args:
        env: the batched environment; reset once with ``seed``.
        stepper: the acting path (its state is reset here).
        telemetry: stats and observation publisher.
        seed: environment reset seed (and torch seed for sampled actions).
        total_steps: stop after this many batched steps (None: no step limit).
        episodes: stop once this many episodes have finished (None: no episode limit).
        stop: set it (e.g. from a signal handler) to end the loop after the current step.
        on_actions: called with ``(step_id, actions [B, 4])`` after each act (tests, recorders).

    Returns:
        :class:`InferenceSummary`.
    """
    torch.manual_seed(seed)
    obs = env.reset(seed)
    stepper.reset(env.num_actors)
    finished = torch.zeros((), dtype=torch.int64, device=env.device)
    step_id, started, interrupted = 0, time.monotonic(), False
    while total_steps is None or step_id < total_steps:
        if stop is not None and stop.is_set():
            interrupted = True
            break
        tick = time.perf_counter()
        actions = stepper.act(obs, env.poses() if stepper.needs_poses else None)
        if on_actions is not None:
            on_actions(step_id, actions)
        step = env.step(actions)
        done = step.terminated | step.truncated
        stepper.end_episodes(done)
        obs = step.obs
        telemetry.record_step(
            time.perf_counter() - tick, done, step.info["episode_return"], step.info.get("episode_length")
        )
        step_id += 1
        telemetry.maybe_publish(obs, step_id)
        if episodes is not None:
            finished += done.sum()
            if int(finished) >= episodes:  # host read only when an episode budget was asked for
                break
    telemetry.publish_stats(step_id)
    return InferenceSummary(
        steps=step_id,
        drone_steps=step_id * env.num_actors,
        episodes=telemetry.episodes,
        seconds=time.monotonic() - started,
        interrupted=interrupted,
    )
