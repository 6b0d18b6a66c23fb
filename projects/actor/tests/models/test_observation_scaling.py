"""Input scaling: known values, identity for ``none``, and old checkpoints keep raw inputs."""

from __future__ import annotations

import json
import math

import pytest
import torch

from navi_actor.checkpoints.format import stored_policy_config
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_actor.models.observation_scaling import scale_observation

SMALL = PolicyConfig(  # a small GRU policy on a 16 x 8 sensor, without the visit input (it needs poses)
    visit_input=False, temporal_core="gru", azimuth=16, elevation=8, patch_size=8, embed_dim=32, vit_dim=32
)


def observation(depth_m: float, semantic: float, valid: float = 1.0, horizon: float = 30.0) -> torch.Tensor:
    obs = torch.empty(2, 3, 16, 8)
    obs[:, 0], obs[:, 1], obs[:, 2] = depth_m / horizon, semantic, valid
    return obs


def test_log_depth_spreads_the_near_range_and_scales_semantic_ids() -> None:
    scaled = {
        d: float(scale_observation(observation(d, 8.0), "log_depth")[0, 0, 0, 0]) for d in (0.3, 1, 3, 30)
    }
    assert math.isclose(scaled[30], 1.0, abs_tol=1e-6)
    assert math.isclose(scaled[1], 1 + math.log(1 / 30) / -math.log(1e-3), rel_tol=1e-5)
    assert scaled[0.3] < scaled[1] < scaled[3] < scaled[30]
    assert scaled[3] - scaled[1] > 2 * (3 - 1) / 30  # near-range differences are amplified
    out = scale_observation(observation(1.0, 8.0, valid=1.0), "log_depth")
    assert torch.all(out[:, 1] == 1.0) and torch.all(out[:, 2] == 1.0)
    assert torch.all(scale_observation(observation(0.0, 0.0), "log_depth")[:, 0] == 0.0)  # clamped, finite


def test_sqrt_depth_known_values() -> None:
    for metres, expected in ((1.0, math.sqrt(1 / 30)), (30.0, 1.0), (0.0, 0.0)):
        scaled = scale_observation(observation(metres, 4.0), "sqrt_depth")
        assert math.isclose(float(scaled[0, 0, 0, 0]), expected, abs_tol=1e-6)
        assert float(scaled[0, 1, 0, 0]) == 0.5


def concatenated_reference(obs: torch.Tensor, transform: str) -> torch.Tensor:
    """The scaling as it was first written: per-channel results joined with ``torch.cat``."""
    if transform == "sqrt_depth":
        depth = obs[:, :1].clamp_min(0.0).sqrt()
    else:
        depth = 1.0 + torch.log(obs[:, :1].clamp_min(1e-3)) / -math.log(1e-3)
    parts = [depth]
    if obs.shape[1] > 1:
        parts.append(obs[:, 1:2] * 0.125)
    if obs.shape[1] > 2:
        parts.append(obs[:, 2:])
    return torch.cat(parts, dim=1)


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
@pytest.mark.parametrize("transform", ["sqrt_depth", "log_depth"])
def test_the_scaling_written_in_place_equals_the_concatenated_one_bit_for_bit(
    transform: str, channels: int
) -> None:
    """Trained checkpoints and the recorded learning results rest on these exact values."""
    generator = torch.Generator().manual_seed(channels)
    obs = torch.rand(6, channels, 16, 8, generator=generator) * 1.2 - 0.1  # below 0 and above 1 too
    obs[:, 1:2] = torch.randint(0, 9, (6, 1, 16, 8), generator=generator).float()[:, : channels - 1]
    expected = concatenated_reference(obs, transform)
    scaled = scale_observation(obs, transform)
    assert scaled.shape == expected.shape and torch.equal(scaled, expected)
    strided = obs.transpose(2, 3).contiguous().transpose(2, 3)  # the same values, another layout
    from_strided = scale_observation(strided, transform)
    assert torch.equal(from_strided, expected) and from_strided.is_contiguous()


def test_none_is_the_identity() -> None:
    obs = observation(2.0, 3.0)
    assert scale_observation(obs, "none") is obs


def test_acting_and_sequence_evaluation_see_the_same_scaled_input() -> None:
    cfg = SMALL
    policy = NaviPolicy(cfg)
    assert cfg.input_transform == "sqrt_depth"
    obs = observation(1.5, 2.0)
    state = policy.initial_state(2)
    starts = torch.ones(2, dtype=torch.bool)
    acted = policy.act(obs, state, starts, deterministic=True)
    seq = policy.evaluate_sequences(obs[None], acted.action[None], state, starts[None])
    assert torch.allclose(seq.action_mean[0], acted.action_mean, atol=1e-6)
    raw = NaviPolicy(cfg.model_copy(update={"input_transform": "none"}))
    raw.load_state_dict(policy.state_dict())
    assert not torch.allclose(raw.encode(obs), policy.encode(obs))


def test_checkpoint_configs_without_the_field_read_as_raw_inputs() -> None:
    old = json.loads(PolicyConfig(temporal_core="gru").model_dump_json())
    del old["input_transform"]
    assert stored_policy_config(json.dumps(old)).input_transform == "none"
    current = PolicyConfig(temporal_core="gru").model_dump_json()
    assert stored_policy_config(current).input_transform == "sqrt_depth"


def test_an_untrained_policy_cruises_forward() -> None:
    cfg = SMALL
    policy = NaviPolicy(cfg)
    obs = torch.rand(5, 3, 16, 8)
    mean = policy.act(
        obs, policy.initial_state(5), torch.ones(5, dtype=torch.bool), deterministic=True
    ).action
    assert torch.allclose(mean[:, 0], torch.full((5,), cfg.init_forward_mean), atol=0.05)
    assert mean[:, 1:].abs().max() < 0.05  # vertical, lateral, yaw start near zero
