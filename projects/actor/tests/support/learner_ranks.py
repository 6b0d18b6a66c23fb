"""Data-parallel learner ranks as plain processes: one real rollout, and one PPO update by rank r of N.

The equality of N ranks' update with the single learner's is a property of
``navi_actor.distributed.data_parallel`` and a gloo process group, not of the launcher: Ray Train
only makes the group. The test therefore starts its ranks with ``torch.multiprocessing.spawn`` over
TCP on the loopback (seconds), not with a ``TorchTrainer`` (about a minute of actor start-up on 2
cores); the Ray Train launch itself is exercised by the ``--learners 2`` runs in
``distributed/test_learner_group.py``. This module is importable by name in the spawned ranks
(the tests' ``pythonpath``).
"""

from __future__ import annotations

import datetime
import functools
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from navi_actor.config import ActorSettings
from navi_actor.distributed.data_parallel import ShardStorage, make_data_parallel
from navi_actor.distributed.fragment import storage_fields
from navi_actor.registry import ModelRegistry
from navi_actor.runners.env_factory import build_environment
from navi_actor.runners.learner_state import LearnerState
from navi_actor.runners.rollout_collector import RolloutCollector

DRONES = 8  # the whole rollout's columns; each of N ranks holds DRONES / N


def settings() -> ActorSettings:
    """A tiny GRU policy on the point toy; two epochs of two minibatches, no KL early stop."""
    values: dict[str, Any] = {
        "temporal_core": "gru",
        "policy": {"embed_dim": 32, "vit_dim": 32, "vit_layers": 1, "ssm_head_dim": 16, "ssm_chunk": 8},
        "environment": {"backend": "point", "point_azimuth": 32, "point_elevation": 8, "point_max_steps": 40},
        "rollout": {"num_actors": 4, "rollout_length": 16, "sequence_length": 8},
        "ppo": {"epochs": 2, "num_minibatches": 2, "target_kl": None},
        "telemetry": {"enabled": False},
        "checkpoint": {"auto_resume": False},
    }
    return ActorSettings(**values)


def learner(config: ActorSettings, tmp: Path, observation_shape: tuple[int, ...]) -> LearnerState:
    return LearnerState.build(config, observation_shape, DRONES, ModelRegistry(tmp / "models"), None)


def rollout(config: ActorSettings, tmp: Path) -> dict[str, Any]:
    """One real rollout of 8 drones (point environment) and the RND state it was shaped with."""
    built = build_environment(config.environment, DRONES, "cpu")
    shape = tuple(built.env.observation_shape)
    state = learner(config, tmp, shape)
    storage = state.new_storage(shape, DRONES)
    collector = RolloutCollector(built.env, state.policy, storage, shaping=state.shaping.reward, seed=3)
    collector.collect(0.99, 0.95)
    return {
        "shape": shape,
        "buffers": {name: getattr(storage, name).clone() for name in storage_fields(storage)},
        "last_values": collector.last_values,  # V(s_T) as the collector read it (with its visit features)
        "rnd": {k: v.clone() for k, v in state.shaping.modules["rnd"].state_dict().items()},
    }


def update(config: ActorSettings, tmp: Path, whole: dict[str, Any], rank: int, ranks: int) -> Any:
    """Rank ``rank`` of ``ranks``: a fresh learner (same seed), its columns of the rollout, one update.

    With ``ranks`` > 1 the default process group must exist (``make_data_parallel`` wraps in DDP).
    """
    state = learner(config, tmp, whole["shape"])
    state.shaping.modules["rnd"].load_state_dict(whole["rnd"])
    shard = functools.partial(ShardStorage, rank=rank, ranks=ranks)
    storage = state.new_storage(whole["shape"], DRONES // ranks, shard)
    if ranks > 1:
        make_data_parallel(state, ranks)
    for name, buffer in whole["buffers"].items():
        getattr(storage, name).copy_(buffer.chunk(ranks, dim=1)[rank])
    storage.compute_returns(whole["last_values"].chunk(ranks)[rank], 0.99, 0.95)
    storage.acting_version = whole.get("acting_version")  # older weights acted: decoupled PPO
    result = state.learner.update(storage, state.shuffle, state.shaping.auxiliary_step)
    return state, result


def rank_update(rank: int, ranks: int, port: int, tmp: Path) -> None:
    """One spawned rank: join the gloo group, update from ``tmp/rollout.pt``; rank 0 saves the result."""
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=ranks,
        timeout=datetime.timedelta(seconds=120),
    )  # fmt: skip
    try:
        whole = torch.load(tmp / "rollout.pt", weights_only=False)
        state, result = update(settings(), tmp / f"rank{rank}", whole, rank, ranks)
        if rank == 0:
            torch.save(
                {
                    "policy": state.policy.state_dict(),
                    "predictor": state.shaping.modules["rnd"].predictor.state_dict(),
                    "optimizer": state.learner.optimizer.state_dict(),
                    "metrics": result.metrics,
                },
                tmp / "rank0.pt",
            )
        # Leave together: a rank that tore its gloo group down while the other was still saving
        # died once in CI with "terminate called without an active exception" (SIGABRT).
        dist.barrier()
    finally:
        dist.destroy_process_group()
