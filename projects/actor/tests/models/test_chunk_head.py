"""The chunk head (policy.action_chunk): masked targets, PPO and BC training, H = 1 unchanged, and
the relative head (policy.action_chunk_mode): entries are the current mean plus learned changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from point_rollouts import collected

from navi_actor.algorithms.losses import chunk_prediction_loss, chunk_targets
from navi_actor.algorithms.ppo import PPOLearner
from navi_actor.algorithms.update_metrics import CHUNK_METRIC
from navi_actor.bc import BCConfig
from navi_actor.bc.dataset import DemoData
from navi_actor.bc.trainer import train_bc
from navi_actor.checkpoints import Checkpoint, load_checkpoint, save_checkpoint
from navi_actor.config import PPOConfig
from navi_actor.models import NaviPolicy, PolicyConfig

SMALL = PolicyConfig(
    visit_input=False, temporal_core="gru", azimuth=16, elevation=8, embed_dim=32, vit_dim=32, vit_layers=1
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_targets_are_the_later_actions_of_the_same_episode_inside_the_sequence() -> None:
    # T=5, B=2, A=1; row 0 starts a new episode at t=2, row 1 never
    targets = torch.tensor([[0.0, 10.0], [1.0, 11.0], [2.0, 12.0], [3.0, 13.0], [4.0, 14.0]])[..., None]
    starts = torch.tensor([[True, True], [False, False], [True, False], [False, False], [False, False]])
    shifted, valid = chunk_targets(targets, starts, horizon=3)  # later offsets 1 and 2
    assert shifted.shape == (5, 2, 2, 1)
    assert shifted[0, 1, :, 0].tolist() == [11.0, 12.0] and shifted[3, 0, :, 0].tolist() == [4.0, 0.0]
    expected_row0 = [[True, False], [False, False], [True, True], [True, False], [False, False]]
    expected_row1 = [[True, True], [True, True], [True, True], [True, False], [False, False]]
    assert valid[:, 0].tolist() == expected_row0  # t=0: t+1 same episode, t+2 the new one; t=1: next is new
    assert valid[:, 1].tolist() == expected_row1  # only the sequence end masks


def test_loss_is_zero_on_valid_entries_and_ignores_masked_ones() -> None:
    targets = torch.arange(5.0)[:, None, None]  # [T=5, B=1, A=1]
    starts = torch.tensor([True, False, True, False, False])[:, None]
    shifted, valid = chunk_targets(targets, starts, horizon=3)
    exact = torch.where(valid[..., None], shifted, torch.full_like(shifted, 99.0))  # garbage where masked
    assert chunk_prediction_loss(exact, targets, starts).item() == 0.0
    off_by_one = exact + valid[..., None].float()
    assert chunk_prediction_loss(off_by_one, targets, starts).item() == pytest.approx(1.0)
    nothing_valid = torch.ones(1, 1, 1, dtype=torch.bool)
    assert chunk_prediction_loss(torch.ones(1, 1, 1, 1), torch.zeros(1, 1, 1), nothing_valid).item() == 0.0


def test_h1_has_no_chunk_parameters_and_ppo_is_bit_identical_whatever_the_coefficient() -> None:
    results = []
    for coef in (0.0, 0.5):
        torch.manual_seed(3)
        policy = NaviPolicy(SMALL)
        assert policy.actor.chunk is None and not any("chunk" in k for k in policy.state_dict())
        storage = collected(policy)
        learner = PPOLearner(policy, PPOConfig(epochs=2, num_minibatches=2, chunk_coef=coef))
        result = learner.update(storage, torch.Generator().manual_seed(0))
        assert CHUNK_METRIC not in result.metrics
        results.append(policy.state_dict())
    assert all(torch.equal(results[0][k], results[1][k]) for k in results[0])


def test_a_checkpoint_written_before_action_chunk_loads_and_acts_unchanged(tmp_path: Path) -> None:
    torch.manual_seed(4)
    policy = NaviPolicy(SMALL).eval()
    path = save_checkpoint(Checkpoint(model=policy.state_dict(), policy_config=SMALL), tmp_path / "old.pt")
    payload = torch.load(path, weights_only=True)
    old_config = json.loads(payload["policy_config"])
    del old_config["action_chunk"]  # the policy config as checkpoints stored it before the field existed
    payload["policy_config"] = json.dumps(old_config)
    torch.save(payload, path)
    loaded = load_checkpoint(path)
    assert loaded.policy_config.action_chunk == 1
    restored = NaviPolicy(loaded.policy_config).eval()
    restored.load_state_dict(loaded.model, strict=True)
    obs, state, start = torch.rand(2, 3, 16, 8), policy.initial_state(2), torch.ones(2, dtype=torch.bool)
    before, after = policy.act(obs, state, start, True), restored.act(obs, state, start, True)
    assert torch.equal(before.action, after.action) and after.action_chunk is None


def test_chunk_output_starts_with_the_mean_and_matches_the_sequence_evaluation() -> None:
    torch.manual_seed(0)
    policy = NaviPolicy(SMALL.model_copy(update={"action_chunk": 4})).eval()
    obs = torch.rand(3, 2, 3, 16, 8)
    starts = torch.tensor([[True, True], [False, False], [False, True]])
    state = policy.initial_state(2)
    chunks = []
    for t in range(3):
        out = policy.act(obs[t], state, starts[t], deterministic=True)
        state = out.state
        assert out.action_chunk is not None and out.action_chunk.shape == (2, 4, 4)
        assert torch.equal(out.action_chunk[:, 0], out.action_mean)
        chunks.append(out.action_chunk)
    with torch.no_grad():
        evaluated = policy.evaluate_sequences(obs, torch.zeros(3, 2, 4), policy.initial_state(2), starts)
    assert evaluated.later_means is not None
    torch.testing.assert_close(evaluated.later_means, torch.stack(chunks)[:, :, 1:], atol=1e-5, rtol=1e-4)


def test_ppo_updates_reduce_the_chunk_loss() -> None:
    torch.manual_seed(1)
    policy = NaviPolicy(SMALL.model_copy(update={"action_chunk": 4}))
    with torch.no_grad():
        assert policy.actor.chunk is not None
        policy.actor.chunk.bias.uniform_(-0.8, 0.8)  # predictions far from the policy's own means
    storage = collected(policy)
    learner = PPOLearner(policy, PPOConfig(epochs=2, num_minibatches=2, learning_rate=3e-3, target_kl=None))
    losses = [
        learner.update(storage, torch.Generator().manual_seed(i)).metrics[CHUNK_METRIC] for i in range(5)
    ]
    assert losses[0] > 0.05
    assert losses[-1] < 0.5 * losses[0]


def test_bc_trains_the_chunk_on_demonstrated_later_actions() -> None:
    frames, generator = 240, torch.Generator().manual_seed(0)
    phase = torch.arange(frames, dtype=torch.float32) * 0.2
    depth = (0.5 + 0.4 * torch.sin(phase))[:, None, None].expand(frames, 16, 8)
    observations = torch.stack([depth, torch.zeros_like(depth), torch.ones_like(depth)], dim=1).contiguous()
    actions = torch.stack([torch.sin(phase + 0.2 * k) for k in range(4)], dim=1) * 0.8
    starts = torch.arange(frames) % 40 == 0
    begin = torch.nonzero(starts).squeeze(1)
    data = DemoData(observations, actions, starts, torch.stack([begin, begin + 40], dim=1), sources=[])
    torch.manual_seed(2)
    policy = NaviPolicy(SMALL.model_copy(update={"action_chunk": 3}))
    config = BCConfig(epochs=6, sequence_length=10, streams=3, learning_rate=3e-3, holdout_fraction=0.0)
    history = train_bc(
        policy, data, data.select_episodes(torch.tensor([], dtype=torch.long)), config, generator
    )
    assert len(history.train_chunk_mse) == 6
    assert history.train_chunk_mse[-1] < 0.5 * history.train_chunk_mse[0]


def test_a_relative_head_starts_at_holding_and_its_loss_never_moves_the_mean() -> None:
    torch.manual_seed(5)
    policy = NaviPolicy(SMALL.model_copy(update={"action_chunk": 4}))
    assert policy.cfg.action_chunk_mode == "relative" and policy.actor.chunk is not None
    obs, starts = torch.rand(3, 2, 3, 16, 8), torch.tensor([[True, True], [False, False], [False, False]])
    with torch.no_grad():
        policy.actor.chunk.weight.zero_()  # no change predicted: every entry is the current mean
    out = policy.act(obs[0], policy.initial_state(2), starts[0], deterministic=True)
    assert out.action_chunk is not None
    assert torch.equal(out.action_chunk, out.action_mean[:, None].expand(2, 4, 4))
    with torch.no_grad():
        policy.actor.chunk.bias.copy_(torch.arange(12.0))  # delta_k = what the layer adds to the mean
    evaluated = policy.evaluate_sequences(obs, torch.zeros(3, 2, 4), policy.initial_state(2), starts)
    assert evaluated.later_means is not None
    offsets = torch.arange(12.0).view(3, 4)
    torch.testing.assert_close(evaluated.later_means, evaluated.action_mean.detach()[:, :, None] + offsets)
    chunk_prediction_loss(evaluated.later_means, torch.rand(3, 2, 4), starts).backward()
    assert policy.actor.mean.weight.grad is None and policy.actor.mean.bias.grad is None
    assert policy.actor.chunk.bias.grad is not None and policy.actor.chunk.bias.grad.abs().sum() > 0


def test_an_absolute_head_predicts_the_later_means_themselves() -> None:
    torch.manual_seed(6)
    policy = NaviPolicy(SMALL.model_copy(update={"action_chunk": 3, "action_chunk_mode": "absolute"}))
    assert policy.actor.chunk is not None
    with torch.no_grad():
        policy.actor.chunk.weight.zero_()
        policy.actor.chunk.bias.copy_(torch.arange(8.0))
    out = policy.act(torch.rand(2, 3, 16, 8), policy.initial_state(2), torch.ones(2, dtype=torch.bool), True)
    assert out.action_chunk is not None
    assert torch.equal(out.action_chunk[:, 1:], torch.arange(8.0).view(1, 2, 4).expand(2, 2, 4))


def test_a_chunked_checkpoint_written_before_the_mode_reads_absolute_and_acts_unchanged(
    tmp_path: Path,
) -> None:
    torch.manual_seed(7)
    config = SMALL.model_copy(update={"action_chunk": 3, "action_chunk_mode": "absolute"})
    policy = NaviPolicy(config).eval()
    path = save_checkpoint(Checkpoint(model=policy.state_dict(), policy_config=config), tmp_path / "old.pt")
    payload = torch.load(path, weights_only=True)
    old_config = json.loads(payload["policy_config"])
    del old_config["action_chunk_mode"]  # as chunked checkpoints stored it before the field existed
    payload["policy_config"] = json.dumps(old_config)
    torch.save(payload, path)
    loaded = load_checkpoint(path)
    assert loaded.policy_config.action_chunk_mode == "absolute"
    restored = NaviPolicy(loaded.policy_config).eval()
    restored.load_state_dict(loaded.model, strict=True)
    obs, state, start = torch.rand(2, 3, 16, 8), policy.initial_state(2), torch.ones(2, dtype=torch.bool)
    before, after = policy.act(obs, state, start, True), restored.act(obs, state, start, True)
    assert before.action_chunk is not None and after.action_chunk is not None
    assert torch.equal(before.action_chunk, after.action_chunk)


def test_a_smooth_head_shares_two_coefficients_over_every_entry() -> None:
    torch.manual_seed(8)
    policy = NaviPolicy(SMALL.model_copy(update={"action_chunk": 5, "action_chunk_mode": "smooth"}))
    assert policy.actor.chunk is not None and policy.actor.chunk.out_features == 2 * 4
    with torch.no_grad():
        policy.actor.chunk.weight.zero_()
        policy.actor.chunk.bias.copy_(torch.tensor([1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0]))  # v, c
    out = policy.act(torch.rand(2, 3, 16, 8), policy.initial_state(2), torch.ones(2, dtype=torch.bool), True)
    assert out.action_chunk is not None
    delta = out.action_chunk - out.action_mean[:, None]
    ahead = torch.arange(5.0) / 4.0  # s = k / (H-1); entry 0 is the mean itself
    torch.testing.assert_close(delta[0, :, 0], ahead)  # forward: s v with v = 1
    torch.testing.assert_close(delta[0, :, 3], 2.0 * ahead.square())  # yaw: s^2 c with c = 2
    assert not any("profile" in key for key in policy.state_dict())  # derived, not stored
