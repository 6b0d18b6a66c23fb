"""The data-parallel learner's device path without Ray: one rank (world size 1) on the accelerator.

``make_data_parallel`` wraps the policy and the RND predictor in DDP with ``device_ids`` on CUDA and
all-reduces over NCCL (gloo on the CPU). With one rank, one update must leave exactly the single
learner's parameters. Ray is not needed (nor imported): the process group is made here, over TCP on
the loopback, and destroyed after.
"""

from __future__ import annotations

import datetime
import functools
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist

from navi_actor.config import ActorSettings
from navi_actor.distributed.data_parallel import ShardStorage, make_data_parallel
from navi_actor.distributed.fragment import storage_fields
from navi_actor.registry import ModelRegistry
from navi_actor.runners.env_factory import build_environment
from navi_actor.runners.learner_state import LearnerState
from navi_actor.runners.rollout_collector import RolloutCollector

COLUMNS = 4


def settings(device: str) -> ActorSettings:
    values: dict[str, Any] = {
        "temporal_core": "gru",
        "policy": {"embed_dim": 32, "vit_dim": 32, "vit_layers": 1, "ssm_head_dim": 16},
        "environment": {"backend": "point", "point_azimuth": 32, "point_elevation": 8, "point_max_steps": 12},
        "rollout": {"num_actors": COLUMNS, "rollout_length": 16, "sequence_length": 8},
        "ppo": {"epochs": 2, "num_minibatches": 2, "target_kl": None, "value_warmup_updates": 0},
        "train": {"device": device},
        "telemetry": {"enabled": False},
        "checkpoint": {"auto_resume": False},
    }
    return ActorSettings(**values)


@pytest.fixture
def process_group(accel_device: str) -> Iterator[str]:
    """A one-rank default process group (NCCL on CUDA, gloo on the CPU); yields its backend."""
    if dist.is_initialized():
        pytest.skip("a process group already exists in this process")
    backend = "nccl" if torch.device(accel_device).type == "cuda" else "gloo"
    if backend == "nccl" and not dist.is_nccl_available():
        pytest.skip("this torch build has no NCCL")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dist.init_process_group(
        backend, init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1,
        timeout=datetime.timedelta(seconds=60),
    )  # fmt: skip
    yield backend
    dist.destroy_process_group()


def learner(config: ActorSettings, tmp: Path, shape: tuple[int, ...]) -> LearnerState:
    return LearnerState.build(config, shape, COLUMNS, ModelRegistry(tmp / "models"), None)


@pytest.mark.timeout(180)
def test_one_rank_ddp_update_equals_the_single_learner(
    tmp_path: Path, accel_device: str, process_group: str
) -> None:
    config = settings(accel_device)
    dev = torch.device(accel_device)
    built = build_environment(config.environment, COLUMNS, accel_device)
    shape = tuple(built.env.observation_shape)
    single = learner(config, tmp_path, shape)
    storage = single.new_storage(shape, COLUMNS)
    collector = RolloutCollector(built.env, single.policy, storage, shaping=single.shaping.reward, seed=3)
    collector.collect(0.99, 0.95)
    rnd = {k: v.clone() for k, v in single.shaping.modules["rnd"].state_dict().items()}
    fresh = {k: v.clone() for k, v in single.policy.state_dict().items()}

    ranked = learner(config, tmp_path, shape)
    ranked.shaping.modules["rnd"].load_state_dict(rnd)
    shard = ranked.new_storage(shape, COLUMNS, functools.partial(ShardStorage, rank=0, ranks=1))
    make_data_parallel(ranked, 1)
    if dev.type == "cuda":
        assert ranked.learner.evaluate.device_ids == [dev.index or torch.cuda.current_device()]  # type: ignore[attr-defined]
    for name in storage_fields(storage):  # the frontier-map features the default policy read too
        getattr(shard, name).copy_(getattr(storage, name))
    assert collector.last_values is not None  # the bootstrap the single storage's returns used
    shard.compute_returns(collector.last_values, 0.99, 0.95)
    got = ranked.learner.update(shard, ranked.shuffle, ranked.shaping.auxiliary_step)
    want = single.learner.update(storage, single.shuffle, single.shaping.auxiliary_step)

    assert all(p.device.type == dev.type for p in ranked.policy.parameters())
    moved = max((single.policy.state_dict()[k] - v).abs().max().item() for k, v in fresh.items())
    assert moved > 1e-4  # the update changed the weights: the equality below is not vacuous
    for key, value in single.policy.state_dict().items():
        torch.testing.assert_close(ranked.policy.state_dict()[key], value, atol=2e-5, rtol=1e-4, msg=key)
    predictor = single.shaping.modules["rnd"].predictor.state_dict()
    for key, value in ranked.shaping.modules["rnd"].predictor.state_dict().items():
        torch.testing.assert_close(value, predictor[key], atol=2e-5, rtol=1e-4, msg=key)
    for name in ("policy_loss", "value_loss", "approx_kl"):
        assert got.metrics[name] == pytest.approx(want.metrics[name], rel=1e-3, abs=1e-5), name
