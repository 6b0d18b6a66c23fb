"""The real-time brain on the accelerator: its inference loop against the CPU stepper, its processes
against a 20 Hz stream with the policy on the GPU, and the delayed brain against the CPU.

The same checks run on the CPU in ``projects/actor/tests/service`` (``realtime_stream`` holds them).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from realtime_policy import SMALL_REALTIME_POLICY
from realtime_stream import (
    assert_inference_follows_the_consumed_observations,
    assert_keeps_its_rate_and_starts_chunks_after_the_delay,
    run_realtime_brain,
)

from navi_actor.envs.point import PointGoalEnv
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_actor.service.delayed_brain import VARIANTS, DelayedBrain

TOL = {"atol": 5e-4, "rtol": 5e-4}


@pytest.mark.usefixtures("exact_float32")
def test_inference_loop_on_the_accelerator_follows_the_cpu_stepper(tmp_path: Path, accel_device: str) -> None:
    """Chunks from shared memory on the GPU equal a CPU stepper fed only the consumed observations."""
    assert_inference_follows_the_consumed_observations(tmp_path, accel_device, atol=TOL["atol"])


@pytest.mark.slow
def test_realtime_brain_with_its_policy_on_the_accelerator_keeps_its_rate(
    tmp_path: Path, accel_device: str
) -> None:
    """``navi-actor serve --inference realtime --device cuda``: the spawned inference process holds the
    policy on the GPU; 150 +- 20 ms of injected latency; no control tick missed, chunks start after
    the measured delay."""
    run = run_realtime_brain(
        tmp_path, ["--latency-ms", "150", "--jitter-ms", "20", "--no-blend", "--device", accel_device]
    )
    assert_keeps_its_rate_and_starts_chunks_after_the_delay(run)


@pytest.mark.usefixtures("exact_float32")
@pytest.mark.parametrize("variant", VARIANTS)
def test_delayed_brain_on_the_accelerator_flies_as_on_the_cpu(variant: str, accel_device: str) -> None:
    """The in-process delayed brain (bench_delayed_flight, the DAgger recorder) gives the CPU's actions."""
    torch.manual_seed(0)
    cpu = NaviPolicy(PolicyConfig(visit_input=False, action_chunk=4, **SMALL_REALTIME_POLICY)).eval()  # type: ignore[arg-type]
    accel = copy.deepcopy(cpu).to(accel_device)
    env = PointGoalEnv(2, azimuth=32, elevation=8, max_steps=1000)
    frames = [env.reset(1)] + [env.step(torch.full((2, 4), 0.3)).obs.clone() for _ in range(11)]
    reference = DelayedBrain(cpu, 2, delay=3, variant=variant)
    brain = DelayedBrain(accel, 2, delay=3, variant=variant)
    with torch.no_grad():
        for tick, obs in enumerate(frames):
            expected = reference.action(tick, obs)
            got = brain.action(tick, obs.to(accel_device))
            assert got.device.type == torch.device(accel_device).type
            torch.testing.assert_close(got.cpu(), expected, **TOL, msg=f"{variant}: tick {tick}")
