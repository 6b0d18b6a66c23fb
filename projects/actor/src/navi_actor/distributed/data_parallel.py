"""Data-parallel PPO over learner ranks: each rank a share of the rollout's drone columns, DDP gradients.

The single learner learns from a ``[T, K*B]`` storage: ``sequence_minibatches`` draws one
permutation of the ``C * K*B`` sequences (``s = chunk * K*B + column``) and cuts it into
minibatches. With ``N`` ranks, rank ``r`` holds the columns ``[r*W, (r+1)*W)`` (``W = K*B / N``:
whole sequences and their recurrent start states), draws the *same* permutation from the same
shuffle generator, and takes the part of every minibatch that falls in its columns. Each rank
weighs its mean losses by its share of the minibatch times ``N``; DDP averages the gradients over
the ranks, so the averaged gradient is exactly the single learner's minibatch gradient, the
clipped norm and the Adam step are the same on every rank, and the parameters stay equal to the
single learner's (projects/actor/tests/distributed/test_data_parallel.py). Advantage
normalisation, explained variance and the epoch metrics (and so the KL early stop) are summed over
the ranks.

The RND predictor is trained the same way through its own DDP wrapper; its running statistics are
folded on rank 0 from the whole rollout and broadcast (``sync_rnd``), so every rank's RND is
rank 0's. Nothing here imports Ray: the process group is Ray Train's (gloo on CPU, NCCL on CUDA).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from navi_actor.algorithms.gae import normalize_advantages
from navi_actor.runners.learner_state import LearnerState
from navi_actor.storage import RolloutStorage, SequenceBatch


def all_reduce_sum(tensor: torch.Tensor) -> torch.Tensor:
    """Sum ``tensor`` in place over every rank of the default process group."""
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor


class ShardStorage(RolloutStorage):
    """One rank's columns of the rollout; minibatches and normalisation are those of the whole.

    Args:
        *args, **kwargs: as :class:`RolloutStorage`, with ``num_envs`` the columns of this rank.
        rank: this rank's index; its columns start at ``rank * num_envs`` of the whole rollout.
        ranks: number of ranks (the whole rollout has ``ranks * num_envs`` columns).
    """

    def __init__(self, *args: Any, rank: int, ranks: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rank, self.ranks = rank, ranks

    def normalise_advantages(self, advantages: torch.Tensor) -> torch.Tensor:
        """Mean and (unbiased) std over every rank's advantages, as the single learner's."""
        if self.ranks == 1:
            return normalize_advantages(advantages)
        flat = advantages.double().flatten()
        sums = all_reduce_sum(torch.stack([flat.sum(), flat.new_tensor(float(flat.numel()))]))
        mean = sums[0] / sums[1]
        squares = all_reduce_sum((flat - mean).square().sum())
        std = (squares / (sums[1] - 1)).sqrt()
        return ((advantages - mean.float()) / (std.float() + 1e-8)).to(advantages.dtype)

    def sequence_minibatches(
        self, num_minibatches: int, generator: torch.Generator | None = None
    ) -> Iterator[SequenceBatch]:
        """This rank's part of each of the single learner's minibatches, with its share.

        A rank with no sequence in a minibatch still takes part in the gradient all-reduce: it
        evaluates one of its sequences with share 0.
        """
        width, columns = self.num_envs, self.num_envs * self.ranks
        total = self.num_chunks * columns
        if total % num_minibatches != 0:
            raise ValueError(
                f"{total} sequences ({self.num_chunks} chunks x {columns} drones) "
                f"cannot be split into {num_minibatches} equal minibatches"
            )
        per_batch = total // num_minibatches
        order = torch.randperm(total, generator=generator, device=self.device)
        for start in range(0, total, per_batch):
            ids = order[start : start + per_batch]
            chunk, column = ids // columns, ids % columns
            mine = column // width == self.rank
            local = chunk[mine] * width + column[mine] - self.rank * width
            count = int(local.numel())
            if count == 0:
                local = torch.zeros(1, dtype=ids.dtype, device=self.device)
            yield dataclasses.replace(self.gather(local), share=count / per_batch)


class SequenceEvaluator(nn.Module):
    """The policy's ``evaluate_sequences`` as a ``forward``, so DDP can wrap it."""

    def __init__(self, policy: nn.Module) -> None:
        super().__init__()
        self.policy = policy

    def forward(self, *args: torch.Tensor, **kwargs: torch.Tensor) -> Any:
        return self.policy.evaluate_sequences(*args, **kwargs)  # type: ignore[operator]


def _device_ids(device: torch.device) -> list[int] | None:
    return (
        [device.index if device.index is not None else torch.cuda.current_device()]
        if (device.type == "cuda")
        else None
    )


def make_data_parallel(state: LearnerState, ranks: int) -> None:
    """Train ``state``'s policy and RND predictor with DDP over ``ranks`` ranks (group initialised).

    DDP broadcasts rank 0's parameters when it wraps them, so every rank starts from rank 0's.

    Raises:
        ValueError: a setting the data-parallel learner does not support.
    """
    if state.settings.ppo.value_warmup_updates > 0:
        raise ValueError(
            "ppo.value_warmup_updates > 0 leaves the actor without gradients, which DDP cannot "
            "all-reduce: warm the critic up with one learner (--learners 1), then resume with more"
        )
    device = next(state.policy.parameters()).device
    learner = state.learner
    learner.evaluate = DistributedDataParallel(
        SequenceEvaluator(state.policy), device_ids=_device_ids(device)
    )
    learner.ranks, learner.all_reduce = ranks, all_reduce_sum
    rnd = state.shaping.modules["rnd"]
    predictor = DistributedDataParallel(rnd.predictor, device_ids=_device_ids(device))

    def train_predictor(batch: SequenceBatch) -> torch.Tensor:
        """``rnd.update`` with the predictor's gradients averaged over the ranks."""
        inputs = rnd.predictor_inputs(batch.obs.flatten(0, 1))  # [L, M, 3, Az, El] -> [L*M, F]
        with torch.no_grad():
            target = rnd.target(inputs)
        loss = (predictor(inputs) - target).square().mean()
        rnd.optimizer.zero_grad(set_to_none=True)
        (loss * (batch.share * ranks)).backward()
        rnd.optimizer.step()
        return loss.detach()

    state.shaping.auxiliary_step = train_predictor
    sync_rnd(state)


def sync_rnd(state: LearnerState) -> None:
    """Copy rank 0's RND (target, predictor, running statistics) to every rank."""
    for tensor in state.shaping.modules["rnd"].state_dict().values():
        dist.broadcast(tensor, src=0)


def broadcast_floats(values: list[float], device: torch.device) -> list[float]:
    """Rank 0's ``values`` on every rank (the loop's control: go on?, discount, time spent)."""
    tensor = torch.tensor(values, dtype=torch.float64, device=device)
    dist.broadcast(tensor, src=0)
    return [float(value) for value in tensor.tolist()]


def scatter_columns(whole: torch.Tensor | None, like: torch.Tensor, rank: int, ranks: int) -> None:
    """Rank 0 cuts ``whole [T, N*W, ...]`` (or ``[N*W]``) into N column blocks; rank r gets block r.

    Args:
        whole: the whole rollout's buffer on rank 0; None elsewhere.
        like: this rank's ``[T, W, ...]`` (or ``[W]``) buffer, written in place.
        rank: this rank.
        ranks: number of ranks.
    """
    column_dim = 0 if like.dim() == 1 else 1
    flags = like.dtype == torch.bool  # gloo moves no bool tensors: as bytes
    target = like.to(torch.uint8) if flags else like
    blocks = None
    if rank == 0:
        assert whole is not None
        blocks = [block.contiguous() for block in whole.chunk(ranks, dim=column_dim)]
        blocks = [block.to(torch.uint8) for block in blocks] if flags else blocks
    dist.scatter(target, blocks, src=0)
    if flags:
        like.copy_(target.bool())
