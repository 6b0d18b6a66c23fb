"""Rollout storage: sentinels, state at sequence starts, minibatch shapes and contents."""

from __future__ import annotations

import pytest
import torch

from navi_actor.storage import RolloutStorage

T, B, L, S, OBS = 8, 3, 4, 5, (3, 4, 2)


def filled_storage() -> RolloutStorage:
    storage = RolloutStorage(T, B, obs_shape=OBS, action_dim=4, state_size=S, sequence_length=L)
    for t in range(T):
        tag = torch.arange(B, dtype=torch.float32) + 100 * t  # value = 100 t + b identifies each slot
        storage.insert(
            t,
            obs=tag.view(B, 1, 1, 1).expand(B, *OBS),
            state=tag.unsqueeze(1).expand(B, S),
            episode_start=torch.tensor([t == 0, t == 2, False]),
            action=tag.unsqueeze(1).expand(B, 4),
            log_prob=tag,
            value=tag,
        )
        storage.insert_outcome(t, tag, torch.zeros(B, dtype=torch.bool), torch.zeros(B, dtype=torch.bool))
    storage.compute_returns(torch.zeros(B), gamma=0.99, gae_lambda=0.95)
    return storage


def test_buffers_start_as_nan_sentinels_and_learning_refuses_them() -> None:
    storage = RolloutStorage(T, B, obs_shape=OBS, action_dim=4, state_size=S, sequence_length=L)
    assert storage.rewards.isnan().all() and storage.obs.isnan().all()
    with pytest.raises(RuntimeError, match="unwritten slots"):
        storage.compute_returns(torch.zeros(B), 0.99, 0.95)


def test_state_is_stored_only_at_sequence_starts() -> None:
    storage = filled_storage()
    assert storage.sequence_states.shape == (T // L, B, S)
    for chunk in range(T // L):
        expected = torch.arange(B, dtype=torch.float32) + 100 * chunk * L
        assert torch.equal(storage.sequence_states[chunk, :, 0], expected)


def test_minibatches_cover_every_sequence_once_with_matching_start_states() -> None:
    storage = filled_storage()
    batches = list(storage.sequence_minibatches(3, torch.Generator().manual_seed(0)))
    assert len(batches) == 3
    seen = []
    for batch in batches:
        M = storage.num_sequences // 3
        assert batch.obs.shape == (L, M, *OBS)
        assert batch.actions.shape == (L, M, 4)
        assert batch.old_log_probs.shape == batch.advantages.shape == batch.episode_starts.shape == (L, M)
        assert batch.state0.shape == (M, S)
        assert batch.obs.is_contiguous()
        for m in range(M):
            first = batch.old_log_probs[0, m].item()
            t0, b = divmod(int(first), 100)
            assert t0 % L == 0
            # consecutive time steps of the same drone
            assert batch.old_log_probs[:, m].tolist() == [100 * (t0 + i) + b for i in range(L)]
            assert batch.state0[m, 0].item() == first
            assert batch.obs[:, m, 0, 0, 0].tolist() == batch.old_log_probs[:, m].tolist()
            assert batch.episode_starts[:, m].tolist() == [
                (t0 + i == 0 and b == 0) or (t0 + i == 2 and b == 1) for i in range(L)
            ]
            seen.append((t0, b))
    assert sorted(seen) == sorted((c * L, b) for c in range(T // L) for b in range(B))


def test_advantages_normalised_once_over_the_whole_rollout() -> None:
    storage = filled_storage()
    assert storage.advantages.mean().abs().item() < 1e-5
    assert storage.advantages.std().item() == pytest.approx(1.0, abs=1e-4)


def test_truncated_rows_keep_their_final_value_and_others_zero() -> None:
    storage = RolloutStorage(T, B, obs_shape=OBS, action_dim=4, state_size=S, sequence_length=L)
    truncated = torch.tensor([True, False, False])
    storage.insert_outcome(
        0, torch.zeros(B), torch.zeros(B, dtype=torch.bool), truncated, torch.full((B,), 3.0)
    )
    assert storage.final_values[0].tolist() == [3.0, 0.0, 0.0]
    assert storage.truncated[0].tolist() == [True, False, False]


def test_bad_geometry_is_rejected_clearly() -> None:
    with pytest.raises(ValueError, match="multiple of the sequence length"):
        RolloutStorage(10, B, obs_shape=OBS, action_dim=4, state_size=S, sequence_length=4)
    storage = filled_storage()
    with pytest.raises(ValueError, match="equal minibatches"):
        next(storage.sequence_minibatches(4))
