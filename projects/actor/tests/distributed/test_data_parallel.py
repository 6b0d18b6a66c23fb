"""Data-parallel PPO: each learner rank's part of the single learner's minibatches, and the update.

Why exact: the ranks' gradients are averaged by DDP, so the update equals the single learner's only
if rank r's minibatch i is the single learner's minibatch i restricted to r's drone columns and
weighted by its share (navi_actor.distributed.data_parallel). The split needs no process group; the
update is checked with two real ranks in a gloo group (support/learner_ranks.py says why they are
spawned processes and not Ray Train workers).
"""

from __future__ import annotations

import socket
from pathlib import Path

import learner_ranks
import pytest
import torch
import torch.multiprocessing

from navi_actor.distributed.data_parallel import ShardStorage


def test_each_rank_takes_its_columns_of_the_single_learners_minibatches() -> None:
    # No process group needed: the split alone. Rank r's sequences of minibatch i are exactly the
    # single learner's minibatch i restricted to columns [4r, 4r + 4), with the share they carry.
    T, L, columns, ranks = 16, 8, 8, 2

    def storage(rank: int, width: int, parts: int) -> ShardStorage:
        store = ShardStorage(
            T, width, obs_shape=(1,), action_dim=1, state_size=1, sequence_length=L, rank=rank, ranks=parts
        )
        # Tag every (step, column) with its global column so a gathered batch says where it came from.
        store.sequence_states.copy_(
            (torch.arange(width) + rank * width).float().expand(T // L, width)[..., None]
            + 100 * torch.arange(T // L).float()[:, None, None]
        )
        return store

    def drawn(store: ShardStorage) -> list[tuple[list[float], float]]:
        generator = torch.Generator().manual_seed(5)
        return [(b.state0.flatten().tolist(), b.share) for b in store.sequence_minibatches(2, generator)]

    single = drawn(storage(0, columns, 1))
    halves = [drawn(storage(rank, columns // ranks, ranks)) for rank in range(ranks)]
    shares = []
    for index, (ids, share) in enumerate(single):
        assert share == 1.0
        for rank in range(ranks):
            mine = sorted(i for i in ids if rank * 4 <= i % 100 < rank * 4 + 4)
            got, got_share = halves[rank][index]
            assert got_share == len(mine) / len(ids)
            assert sorted(got) == mine or (not mine and got_share == 0.0)
            shares.append(got_share)
    assert sum(shares) == len(single)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize("acted_earlier", [False, True])
def test_two_learner_ranks_take_the_single_learners_step(
    tmp_path: Path, one_torch_thread: None, acted_earlier: bool
) -> None:
    # One update by 2 ranks, each holding half the drone columns, leaves the same parameters (policy,
    # RND predictor, optimiser) and metrics as the single learner on the same rollout; also when
    # older weights acted it (other log-probabilities), where each rank replays its own columns for
    # decoupled PPO's proximal policy.
    config = learner_ranks.settings()
    whole = learner_ranks.rollout(config, tmp_path)
    if acted_earlier:
        log_probs = whole["buffers"]["log_probs"]
        noise = torch.randn(log_probs.shape, generator=torch.Generator().manual_seed(5))
        whole["buffers"]["log_probs"] = log_probs + 0.3 * noise
        whole["acting_version"] = -1
    torch.save(whole, tmp_path / "rollout.pt")
    single, single_result = learner_ranks.update(config, tmp_path / "single", whole, 0, 1)
    torch.multiprocessing.spawn(
        learner_ranks.rank_update, args=(2, _free_port(), tmp_path), nprocs=2, join=True
    )
    ranked = torch.load(tmp_path / "rank0.pt", weights_only=False)

    fresh = learner_ranks.learner(config, tmp_path / "fresh", whole["shape"]).policy.state_dict()
    moved = max((single.policy.state_dict()[k] - fresh[k]).abs().max().item() for k in fresh)
    assert moved > 1e-4  # the update changed the weights: equality below is not vacuous
    for key, value in single.policy.state_dict().items():
        torch.testing.assert_close(ranked["policy"][key], value, atol=2e-5, rtol=1e-4, msg=key)
    for key, value in single.shaping.modules["rnd"].predictor.state_dict().items():
        torch.testing.assert_close(ranked["predictor"][key], value, atol=2e-5, rtol=1e-4, msg=key)
    steps = {int(s["step"]) for s in ranked["optimizer"]["state"].values()}
    assert steps == {2 * 2}  # 2 epochs x 2 minibatches, as the single learner
    for name in ("policy_loss", "value_loss", "approx_kl", "entropy", "auxiliary_loss", "explained_variance"):
        assert ranked["metrics"][name] == pytest.approx(single_result.metrics[name], rel=1e-3, abs=1e-5)
