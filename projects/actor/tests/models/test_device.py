"""Device-agnostic code: everything runs on the ``meta`` device, so no tensor is created on the CPU.

A stray ``torch.zeros(...)`` without ``device=`` would raise here ("expected device meta"), and
would break CUDA in the same way; this catches it on machines without a GPU.
"""

from __future__ import annotations

import pytest
import torch

from navi_actor.models import ENCODER_BACKENDS, TEMPORAL_CORES, NaviPolicy, PolicyConfig
from navi_actor.shaping import RewardShaper, ShapingConfig

META = torch.device("meta")
# The first meta matmul/attention loads torch's meta registrations (a few CPU seconds, once).
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("core", TEMPORAL_CORES)
@pytest.mark.parametrize("encoder", ENCODER_BACKENDS)
def test_policy_runs_on_another_device(encoder: str, core: str) -> None:
    policy = NaviPolicy(
        PolicyConfig(visit_input=False, encoder_backend=encoder, temporal_core=core, azimuth=64, elevation=16)
    ).to(META)
    T, B = 5, 2
    state = policy.initial_state(B)
    assert state.device == META
    out = policy.act(
        torch.rand(B, 3, 64, 16, device=META), state, torch.zeros(B, dtype=torch.bool, device=META)
    )
    assert out.action.device == META and out.state.device == META
    starts = torch.zeros(T, B, dtype=torch.bool, device=META)
    evaluation = policy.evaluate_sequences(
        torch.rand(T, B, 3, 64, 16, device=META), torch.randn(T, B, 4, device=META), out.state, starts
    )
    (evaluation.log_prob.sum() + evaluation.value.sum()).backward()
    assert evaluation.final_state.device == META


def test_shaper_rnd_and_memory_run_on_another_device() -> None:
    shaper = RewardShaper(ShapingConfig(), num_drones=2, embed_dim=128, azimuth=64, elevation=16, device=META)
    zeros = torch.zeros(2, device=META)
    terms = shaper.step(
        torch.rand(2, 3, 64, 16, device=META),
        torch.randn(2, 128, device=META),
        torch.zeros(2, dtype=torch.bool, device=META),
        env_reward=zeros,
        speed=zeros,
        step=0,
    )
    assert all(term.device == META for term in terms.values())
    assert shaper.rnd.update(torch.rand(4, 3, 64, 16, device=META)).device == META
