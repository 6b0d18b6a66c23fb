"""NaviPolicy: API shapes, act/learn equivalence (PPO ratio invariant), config validation."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

from navi_actor.memory.frontiers import FrontierMemory
from navi_actor.models import ENCODER_BACKENDS, TEMPORAL_CORES, NaviPolicy, PolicyConfig

AZ, EL = 32, 8


def small_policy(encoder: str, core: str, **extra: object) -> NaviPolicy:
    torch.manual_seed(0)
    return NaviPolicy(
        PolicyConfig(
            visit_input=False, encoder_backend=encoder, temporal_core=core, azimuth=AZ, elevation=EL, **extra
        )
    )


def rollout(policy: NaviPolicy, obs: torch.Tensor, starts: torch.Tensor, state0: torch.Tensor):
    """Step ``act`` through a window the way the trainer does; return actions, log-probs, values, state."""
    state, actions, log_probs, values = state0, [], [], []
    for t in range(obs.shape[0]):
        out = policy.act(obs[t], state, starts[t])
        state = out.state
        actions.append(out.action)
        log_probs.append(out.log_prob)
        values.append(out.value)
    return torch.stack(actions), torch.stack(log_probs), torch.stack(values), state


@pytest.mark.parametrize("core", TEMPORAL_CORES)
@pytest.mark.parametrize("encoder", ENCODER_BACKENDS)
def test_ratio_invariant_before_first_update(encoder: str, core: str) -> None:
    """Re-evaluated log-probs equal the rollout's (resets mid-window, non-zero start state)."""
    policy = small_policy(encoder, core, ssm_chunk=8)
    T, B = 12, 3
    gen = torch.Generator().manual_seed(1)
    obs = torch.rand(T, B, 3, AZ, EL, generator=gen)
    starts = torch.zeros(T, B, dtype=torch.bool)
    starts[0, 0] = starts[5, 1] = starts[6, 1] = starts[8, 2] = starts[11, 0] = True  # chunk edge at 8
    warm_obs = torch.rand(3, B, 3, AZ, EL, generator=gen)
    _, _, _, state0 = rollout(policy, warm_obs, torch.zeros(3, B, dtype=torch.bool), policy.initial_state(B))
    assert state0.abs().sum() > 0  # a real carried state, not zeros
    actions, log_probs, values, final_state = rollout(policy, obs, starts, state0)
    evaluation = policy.evaluate_sequences(obs, actions, state0, starts)
    ratio = torch.exp(evaluation.log_prob - log_probs)
    assert (ratio - 1).abs().max().item() < 1e-4
    torch.testing.assert_close(evaluation.value, values, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(evaluation.final_state, final_state, atol=1e-4, rtol=1e-4)
    assert evaluation.entropy.shape == (T, B)
    assert evaluation.embedding.shape == (T, B, 128)


def test_gradients_flow_and_are_finite_with_resets() -> None:
    policy = small_policy("rayvit", "mamba2", ssm_chunk=4)
    T, B = 10, 2
    obs = torch.rand(T, B, 3, AZ, EL)
    starts = torch.zeros(T, B, dtype=torch.bool)
    starts[3, 0] = starts[4, 1] = True
    evaluation = policy.evaluate_sequences(obs, torch.randn(T, B, 4), policy.initial_state(B), starts)
    (evaluation.log_prob.mean() + evaluation.value.square().mean()).backward()
    grads = [p.grad for p in policy.parameters() if p.requires_grad]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    assert policy.core.a_log.grad.abs().sum() > 0  # the decay actually learns


def test_act_shapes_reset_and_determinism() -> None:
    policy = small_policy("rayvit", "gru")
    B = 5
    obs = torch.rand(B, 3, AZ, EL)
    state = torch.randn(B, policy.state_size)
    starts = torch.tensor([True, False, True, False, False])
    out = policy.act(obs, state, starts, deterministic=True)
    assert out.action.shape == (B, 4) and out.log_prob.shape == (B,) and out.value.shape == (B,)
    assert out.state.shape == (B, policy.state_size) and out.embedding.shape == (B, 128)
    torch.testing.assert_close(out.action, out.action_mean)
    from_zero = policy.act(obs, torch.zeros_like(state), torch.zeros(B, dtype=torch.bool), True)
    torch.testing.assert_close(out.state[starts], from_zero.state[starts])  # reset rows start from zero
    assert not torch.allclose(out.state[~starts], from_zero.state[~starts])
    torch.testing.assert_close(policy.value(obs, state, starts), out.value)


def test_no_behaviour_difference_between_train_and_eval_mode() -> None:
    for encoder in ENCODER_BACKENDS:
        policy = small_policy(encoder, "mamba2")
        obs, state = torch.rand(3, 3, AZ, EL), torch.randn(3, policy.state_size)
        starts = torch.zeros(3, dtype=torch.bool)
        policy.train()
        trained = policy.act(obs, state, starts, deterministic=True)
        policy.eval()
        evaluated = policy.act(obs, state, starts, deterministic=True)
        torch.testing.assert_close(trained.action, evaluated.action)
        torch.testing.assert_close(trained.state, evaluated.state)


def test_sampled_actions_are_raw_and_physics_action_clips_them() -> None:
    policy = small_policy("rayvit", "gru", init_log_std=1.0, log_std_max=1.0)
    out = policy.act(torch.rand(64, 3, AZ, EL), policy.initial_state(64), torch.ones(64, dtype=torch.bool))
    assert out.action.abs().max() > 1.0  # std e^1: the raw sample leaves [-1, 1] ...
    clipped = policy.physics_action(out.action)
    assert clipped.abs().max() <= 1.0  # ... and the default (clip) physics_action brings it back
    inside = out.action.abs() <= 1
    torch.testing.assert_close(clipped[inside], out.action[inside])


def test_full_size_default_policy_shapes() -> None:
    """The default 256x48 topology: 32x6 patches, 128-d embedding, mamba2 state, and the frontier
    map's 9 features read from the drones' poses."""
    torch.manual_seed(0)
    policy = NaviPolicy(PolicyConfig())
    assert policy.encoder.grid == (32, 6)
    obs = torch.rand(2, 3, 256, 48)
    memory = policy.new_visit_memory(2)
    assert isinstance(memory, FrontierMemory)
    start = torch.ones(2, dtype=torch.bool)
    visits = memory.observe(torch.tensor([[0.0, 0.0, 1.5], [3.0, 1.0, 1.0]]), torch.zeros(2), start, obs)
    assert visits.shape == (2, 9)
    out = policy.act(obs, policy.initial_state(2), start, visit_features=visits)
    assert out.embedding.shape == (2, 128) and out.action.shape == (2, 4)
    evaluation = policy.evaluate_sequences(
        obs[None], out.action[None], policy.initial_state(2), start[None], visit_features=visits[None]
    )
    assert (torch.exp(evaluation.log_prob[0] - out.log_prob) - 1).abs().max() < 1e-4


def test_config_rejects_unknown_selectors_with_choices() -> None:
    with pytest.raises(ValidationError, match="valid choices: rayvit, spherical_cnn"):
        PolicyConfig(encoder_backend="resnet")
    with pytest.raises(ValidationError, match="valid choices: mamba2, gru, mambapy"):
        PolicyConfig(temporal_core="lstm")
    with pytest.raises(ValidationError, match="divisible by patch_size"):
        PolicyConfig(azimuth=250)
    with pytest.raises(ValidationError):
        PolicyConfig(init_log_std=3.0)
    with pytest.raises(ValidationError):
        PolicyConfig().model_copy(update={}).__class__(embed_dim=128, unknown_field=1)


def test_bad_observation_shape_is_a_clear_error() -> None:
    policy = small_policy("rayvit", "gru")
    with pytest.raises(ValueError, match="does not match"):
        policy.act(torch.rand(2, 3, 16, 8), policy.initial_state(2), torch.zeros(2, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"state has shape \(2, 5\), expected \(2, 128\)"):
        policy.act(torch.rand(2, 3, AZ, EL), torch.zeros(2, 5), torch.zeros(2, dtype=torch.bool))
    with pytest.raises(ValueError, match="episode_starts has shape"):
        policy.evaluate_sequences(
            torch.rand(3, 2, 3, AZ, EL), torch.zeros(3, 2, 4), policy.initial_state(2), torch.zeros(2, 3)
        )
    obs = torch.rand(2, 3, AZ, EL)
    float_starts = policy.act(obs, torch.ones(2, 128), torch.tensor([1.0, 0.0]), deterministic=True)
    bool_starts = policy.act(obs, torch.ones(2, 128), torch.tensor([True, False]), deterministic=True)
    torch.testing.assert_close(float_starts.state, bool_starts.state)  # 0/1 flags act as booleans


def test_spherical_cnn_needs_stride_compatible_sensor() -> None:
    with pytest.raises(ValidationError, match="divisible by 16"):
        PolicyConfig(encoder_backend="spherical_cnn", azimuth=200, elevation=48)
