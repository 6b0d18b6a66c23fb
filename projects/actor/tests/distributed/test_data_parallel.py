"""The data-parallel minibatch split: each learner rank's part of the single learner's minibatches.

Why exact: the ranks' gradients are averaged by DDP, so the update equals the single learner's only
if rank r's minibatch i is the single learner's minibatch i restricted to r's drone columns and
weighted by its share (navi_actor.distributed.data_parallel). No process group is needed here.
"""

from __future__ import annotations

import torch

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
