"""The service processes with their simulator and policy on the accelerator: ``navi-environment serve
--device cuda`` (step mode and realtime mode) and ``navi-actor serve --device cuda``, over real sockets.

The same runs on the CPU are ``tests/test_stack_service.py`` and ``tests/test_env_realtime_process.py``
(their pieces live in ``tests/support``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from realtime_env import assert_keeps_its_rate_while_the_slow_brain_answers, run_realtime_server
from service_stack import DRONES, Stack, actions_from, reference_actions, stack_files

from navi_common import Subscriber
from navi_contracts import topics

pytestmark = pytest.mark.slow

STEPS = 30
SAME_STEPS = 5  # two devices: the first steps match closely, later ones may drift apart
# The brain process keeps torch's CUDA defaults: cuDNN convolutions (the patch embedding) in TF32, a
# 10-bit mantissa. On the H200 the first 5 steps' actions differed from the CPU's by at most 0.004.
ACTION_ATOL = 1e-2


def test_stack_on_the_accelerator_acts_like_in_process_inference_on_the_cpu(
    tmp_path: Path, accel_device: str
) -> None:
    """Both processes on the GPU, step mode: one action per environment step, none lost, and the first
    steps' actions those of in-process inference on the CPU (same scene, checkpoint and seed)."""
    stack = Stack(stack_files(tmp_path), device=accel_device)
    try:
        stack.env = stack.start_env()
        with Subscriber(stack.brain_pub, [topics.ACTION]) as subscriber:
            brain = stack.start_brain(
                "--total-steps", str(STEPS), "--wait-for-subscribers", "1", "--seed", "0"
            )
            expected = reference_actions(stack.files, STEPS)
            served = actions_from(subscriber, STEPS, timeout_s=180)
            assert brain.wait(timeout=60) == 0
        assert stack.env.poll() is None  # the environment keeps serving
    finally:
        stack.close()
    step_ids = [action.step_id for action in served]
    assert step_ids == list(range(step_ids[0], step_ids[0] + STEPS))
    stacked = np.stack([action.actions for action in served])
    assert stacked.shape == (STEPS, DRONES, 4) and np.isfinite(stacked).all() and np.abs(stacked).max() <= 1
    np.testing.assert_allclose(stacked[:SAME_STEPS], expected[:SAME_STEPS], atol=ACTION_ATOL)


def test_realtime_server_on_the_accelerator_keeps_its_rate(
    tmp_path: Path, accel_device: str, processes: list[subprocess.Popen[bytes]]
) -> None:
    scene = stack_files(tmp_path)["scene"]
    payload, answered = run_realtime_server(scene, processes, "--device", accel_device)
    assert_keeps_its_rate_while_the_slow_brain_answers(payload, answered)
