"""``--learners 2``: data-parallel PPO under Ray Train on a local 2-CPU cluster (gloo ranks).

One update by 2 ranks, each holding half the drone columns, leaves the same parameters (policy,
RND predictor, optimiser) as the single learner on the same rollout; a run trains and checkpoints
from rank 0 only and resumes with another learner count; a killed learner rank fails the run with
one clear message and leaves its checkpoints loadable.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

ray = pytest.importorskip("ray", reason="the 'distributed' extra (ray) is not installed")
pytest.importorskip("ray.train.torch", reason="the 'distributed' extra lacks ray[train]")

from navi_actor.checkpoints import load_checkpoint  # noqa: E402
from navi_actor.config import ActorSettings  # noqa: E402
from navi_actor.distributed import require_ray, train_distributed  # noqa: E402
from navi_actor.distributed.data_parallel import ShardStorage, make_data_parallel  # noqa: E402
from navi_actor.distributed.fragment import STORAGE_FIELDS  # noqa: E402
from navi_actor.registry import ModelRegistry  # noqa: E402
from navi_actor.runners.env_factory import build_environment  # noqa: E402
from navi_actor.runners.learner_state import LearnerState  # noqa: E402
from navi_actor.runners.rollout_collector import RolloutCollector  # noqa: E402

pytestmark = pytest.mark.slow

TINY_POLICY = {"embed_dim": 32, "vit_dim": 32, "vit_layers": 1, "ssm_head_dim": 16, "ssm_chunk": 8}


def settings(**overrides: Any) -> ActorSettings:
    values: dict[str, Any] = {
        "temporal_core": "gru",
        "policy": TINY_POLICY,
        "environment": {"backend": "point", "point_azimuth": 32, "point_elevation": 8, "point_max_steps": 40},
        "rollout": {"num_actors": 4, "rollout_length": 16, "sequence_length": 8},
        "ppo": {"epochs": 2, "num_minibatches": 2, "target_kl": None},
        "telemetry": {"enabled": False},
        "checkpoint": {"every_steps": 10_000, "auto_resume": False},
        "distributed": {"worker_cpus": 0.5, "learner_cpus": 0.5, "collect_ahead": False},
    }
    return ActorSettings(**(values | overrides))


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    require_ray()  # Ray's environment switches before the first init
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    sigint = signal.getsignal(signal.SIGINT)  # TorchTrainer.fit() in the main thread replaces it
    yield
    signal.signal(signal.SIGINT, sigint)
    ray.shutdown()


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _learner(config: ActorSettings, tmp: Path, observation_shape: tuple[int, ...]) -> LearnerState:
    return LearnerState.build(config, observation_shape, 8, ModelRegistry(tmp / "models"), None)


def _rollout(config: ActorSettings, tmp: Path) -> dict[str, Any]:
    """One real rollout of 8 drones (point environment) and the learner state it was collected with."""
    built = build_environment(config.environment, 8, "cpu")
    shape = tuple(built.env.observation_shape)
    state = _learner(config, tmp, shape)
    storage = state.new_storage(shape, 8)
    collector = RolloutCollector(built.env, state.policy, storage, shaping=state.shaping.reward, seed=3)
    collector.collect(0.99, 0.95)
    with torch.no_grad():
        last_values = state.policy.value(collector.obs, collector.state, collector.episode_start)
    return {
        "shape": shape,
        "buffers": {name: getattr(storage, name).clone() for name in STORAGE_FIELDS},
        "last_values": last_values,
        "rnd": {k: v.clone() for k, v in state.shaping.modules["rnd"].state_dict().items()},
    }


def _update(config: ActorSettings, tmp: Path, rollout: dict[str, Any], rank: int, ranks: int) -> Any:
    """Rank ``rank`` of ``ranks``: a fresh learner (same seed), its columns of the rollout, one update."""
    state = _learner(config, tmp, rollout["shape"])
    state.shaping.modules["rnd"].load_state_dict(rollout["rnd"])
    shard = functools.partial(ShardStorage, rank=rank, ranks=ranks)
    storage = state.new_storage(rollout["shape"], 8 // ranks, shard)
    if ranks > 1:
        make_data_parallel(state, ranks)
    for name, whole in rollout["buffers"].items():
        getattr(storage, name).copy_(whole.chunk(ranks, dim=1)[rank])
    storage.compute_returns(rollout["last_values"].chunk(ranks)[rank], 0.99, 0.95)
    result = state.learner.update(storage, state.shuffle, state.shaping.auxiliary_step)
    return state, result


def _rank_update(loop: dict[str, Any]) -> None:
    import ray.train

    context = ray.train.get_context()
    rank, ranks = context.get_world_rank(), context.get_world_size()
    torch.set_num_threads(1)
    state, result = _update(loop["settings"], loop["tmp"], loop["rollout"], rank, ranks)
    if rank == 0:
        torch.save(
            {
                "policy": state.policy.state_dict(),
                "predictor": state.shaping.modules["rnd"].predictor.state_dict(),
                "optimizer": state.learner.optimizer.state_dict(),
                "metrics": result.metrics,
            },
            loop["tmp"] / "rank0.pt",
        )
    ray.train.report({})


def test_two_learner_ranks_take_the_single_learners_step(tmp_path: Path) -> None:
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    config = settings()
    rollout = _rollout(config, tmp_path)
    single, single_result = _update(config, tmp_path, rollout, 0, 1)
    TorchTrainer(
        _rank_update,
        train_loop_config={"settings": config, "tmp": tmp_path, "rollout": rollout},
        scaling_config=ScalingConfig(num_workers=2, resources_per_worker={"CPU": 0.5}),
        run_config=RunConfig(storage_path=str(tmp_path / "ray_train")),
    ).fit()
    ranked = torch.load(tmp_path / "rank0.pt", weights_only=False)

    fresh = _learner(config, tmp_path, rollout["shape"]).policy.state_dict()
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


def _runs(artifacts: Path) -> list[Path]:
    return sorted(path for path in (artifacts / "runs").iterdir() if path.is_dir())


def test_a_two_learner_run_checkpoints_on_rank_0_stops_on_ctrl_c_and_resumes_with_one(tmp_path: Path) -> None:
    steps = 2 * 16 * 4  # workers x rollout_length x actors per worker: one update
    two = settings(
        train={"total_steps": 1000 * steps}, checkpoint={"every_steps": steps, "auto_resume": False}
    )
    distributed = two.distributed.model_copy(update={"num_workers": 2, "learners": 2})
    _when_a_checkpoint_exists(tmp_path, lambda: os.kill(os.getpid(), signal.SIGINT))  # Ctrl+C
    lines: list[str] = []
    first = train_distributed(two, distributed, artifacts_dir=tmp_path, progress=lines.append)
    assert first.interrupted and 0 < first.steps_this_run < 1000 * steps
    assert any(line.startswith("interrupted at step") for line in lines)  # rank 0's words, forwarded
    (run,) = _runs(tmp_path)  # rank 0 alone made a run folder
    assert run == first.run_dir
    assert json.loads((run / "finished.json").read_text())["interrupted"] is True
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["backend"] == "ray" and manifest["learners"] == 2
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert {r["distributed/learners"] for r in records} == {2.0}
    assert first.final_checkpoint is not None
    saved = load_checkpoint(first.final_checkpoint)  # the final checkpoint: nothing learned is lost
    assert saved.step_id == first.step_id and saved.update_index == len(records)
    assert saved.optimizer is not None and set(saved.auxiliary) == {"rnd", "rnd_optimizer"}

    one = settings(train={"total_steps": steps})
    resumed = train_distributed(
        one,
        one.distributed.model_copy(update={"num_workers": 2, "learners": 1}),
        artifacts_dir=tmp_path,
        checkpoint=first.final_checkpoint,
    )
    assert resumed.step_id == first.step_id + steps and resumed.final_checkpoint is not None
    final = load_checkpoint(resumed.final_checkpoint)
    assert final.update_index == saved.update_index + 1
    assert final.parent_checkpoint == str(first.final_checkpoint)


def _when_a_checkpoint_exists(artifacts: Path, then: Any) -> threading.Thread:
    def wait_then() -> None:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not list(artifacts.glob("runs/*/checkpoints/step_*.pt")):
            time.sleep(0.5)
        then()

    thread = threading.Thread(target=wait_then, daemon=True)
    thread.start()
    return thread


def _learner_rank_pids() -> list[int]:
    """Processes of Ray Train's learner ranks (Ray names them ``ray::RayTrainWorker...``)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "RayTrainWorker" in title:
            pids.append(int(entry.name))
    return pids


def test_a_killed_learner_rank_fails_the_run_with_one_line_and_valid_checkpoints(tmp_path: Path) -> None:
    steps = 2 * 16 * 4
    config = settings(
        train={"total_steps": 1000 * steps}, checkpoint={"every_steps": steps, "auto_resume": False}
    )
    distributed = config.distributed.model_copy(update={"num_workers": 2, "learners": 2})
    outcome: dict[str, BaseException] = {}

    def run() -> None:
        try:
            train_distributed(config, distributed, artifacts_dir=tmp_path)
        except BaseException as error:  # the assertion is in the test thread
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not list(tmp_path.glob("runs/*/checkpoints/step_*.pt")):
        time.sleep(0.5)
    assert list(tmp_path.glob("runs/*/checkpoints/step_*.pt")), "no checkpoint before the kill"
    pids = _learner_rank_pids()
    assert len(pids) >= 2
    os.kill(max(pids), signal.SIGKILL)
    thread.join(timeout=120)
    assert not thread.is_alive()
    error = outcome.get("error")
    assert isinstance(error, RuntimeError) and "a learner rank failed" in str(error)
    assert "\n" not in str(error)
    for path in tmp_path.glob("runs/*/checkpoints/step_*.pt"):
        assert load_checkpoint(path).step_id > 0
