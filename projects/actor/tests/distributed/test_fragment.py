"""Without Ray: workers in-process, fragment tiling into the learner's storage, stats merge, errors.

The equivalence oracle: GAE is independent per drone column, so the learner's returns for the
columns of one fragment must equal what that worker's own collector computed for its drones (with
the same bootstrap value), and the advantages must be the whole batch's normalisation of them.
"""

from __future__ import annotations

import builtins
import dataclasses
import sys
from typing import Any

import pytest
import torch

from navi_actor.algorithms.gae import normalize_advantages
from navi_actor.config import ActorSettings
from navi_actor.distributed.config import DistributedConfig
from navi_actor.distributed.fragment import STORAGE_FIELDS, RolloutFragment, load_fragments, merge_stats
from navi_actor.distributed.ray_runtime import RayUnavailableError, require_ray
from navi_actor.distributed.worker import RolloutWorker, WeightsBundle
from navi_actor.models import NaviPolicy
from navi_actor.runners.rollout_collector import RolloutStats
from navi_actor.runners.shaping_adapter import build_actor_shaping
from navi_actor.storage import RolloutStorage

TINY_POLICY = {"embed_dim": 32, "vit_dim": 32, "vit_layers": 1, "ssm_head_dim": 16, "ssm_chunk": 8}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def settings(**policy: Any) -> ActorSettings:
    """A tiny policy on the point toy, without the visit input unless ``policy`` turns it on."""
    return ActorSettings(
        temporal_core="gru",
        policy=TINY_POLICY | {"visit_input": False} | policy,
        environment={"backend": "point", "point_azimuth": 16, "point_elevation": 8, "point_max_steps": 6},
        rollout={"num_actors": 2, "rollout_length": 16, "sequence_length": 8},
        telemetry={"enabled": False},
    )


def bundle(
    config: ActorSettings, run_id: str = "run-a", version: int = 0
) -> tuple[WeightsBundle, NaviPolicy]:
    torch.manual_seed(3)
    policy = NaviPolicy(config.policy_config((3, 16, 8)))
    rnd = build_actor_shaping(config, policy, 2, torch.device("cpu")).modules["rnd"]
    weights = WeightsBundle(
        run_id=run_id,
        version=version,
        policy_config=policy.cfg.model_dump_json(),
        policy={k: v.clone() for k, v in policy.state_dict().items()},
        rnd={k: v.clone() for k, v in rnd.state_dict().items()},
        step_id=0,
    )
    return weights, policy


@pytest.mark.slow  # two workers' first rollouts, cold caches: ~10 s on a loaded 2-core box
def test_fragments_tile_the_learner_storage_and_gae_matches_each_worker() -> None:
    config = settings()
    weights, policy = bundle(config)
    workers = [RolloutWorker(config, index, "cpu", 1) for index in range(2)]
    fragments = [worker.collect(weights) for worker in workers]
    assert [f.version for f in fragments] == [0, 0] and [f.run_id for f in fragments] == ["run-a"] * 2
    assert not torch.equal(  # differently seeded environments
        torch.from_numpy(fragments[0].buffers["obs"]), torch.from_numpy(fragments[1].buffers["obs"])
    )
    learner = RolloutStorage(
        16, 4, obs_shape=(3, 16, 8), action_dim=4, state_size=policy.state_size, sequence_length=8
    )
    last_values = load_fragments(learner, fragments)
    learner.compute_returns(last_values, config.rollout.gamma, config.rollout.gae_lambda)
    raw_advantages = learner.returns - learner.values
    for index, (worker, fragment) in enumerate(zip(workers, fragments, strict=True)):
        columns = slice(2 * index, 2 * index + 2)
        for name in STORAGE_FIELDS:
            assert torch.equal(getattr(learner, name)[:, columns], torch.from_numpy(fragment.buffers[name]))
        assert worker.collector is not None
        torch.testing.assert_close(learner.returns[:, columns], worker.collector.storage.returns)
    torch.testing.assert_close(learner.advantages, normalize_advantages(raw_advantages))
    assert fragments[0].stats.env_steps == 32 and fragments[0].observation.shape == (3, 16, 8)


@pytest.mark.parametrize("source", ["positions", "frontiers"])
def test_fragments_of_a_visit_reading_policy_carry_the_features_it_read(source: str) -> None:
    """The learner replays the visit features the worker's policy read when it acted: they travel in
    the fragment and land in the learner's columns, as every other buffer does."""
    config = settings(visit_input=True, visits={"source": source, "write_every": 1})
    weights, policy_module = bundle(config)
    features = policy_module.cfg.visits.features
    worker = RolloutWorker(config, 0, "cpu", 1)
    fragment = worker.collect(weights)
    assert worker.collector is not None and worker.collector.storage.visit_features is not None
    sent = fragment.buffers["visit_features"]
    assert sent.shape == (16, 2, features) and float(sent.max()) > 0.0  # the drones read something
    learner = RolloutStorage(
        16, 4, obs_shape=(3, 16, 8), action_dim=4, state_size=policy_module.state_size, sequence_length=8,
        visit_features=features,
    )  # fmt: skip
    older = dataclasses.replace(fragment, version=fragment.version - 1)
    load_fragments(learner, [fragment, older])
    assert learner.acting_version == fragment.version - 1  # the oldest weights that acted
    load_fragments(learner, [fragment, fragment])
    assert learner.acting_version == fragment.version
    assert learner.visit_features is not None
    assert torch.equal(learner.visit_features[:, 2:], torch.from_numpy(sent))
    del fragment.buffers["visit_features"]
    with pytest.raises(ValueError, match="fragment has no visit_features"):
        load_fragments(learner, [fragment, fragment])


def test_worker_adopts_new_weights_by_run_and_version() -> None:
    config = settings()
    weights, _ = bundle(config)
    worker = RolloutWorker(config, 0, "cpu", 1)
    worker.collect(weights)
    assert worker.policy is not None
    changed = {k: v + 1.0 if v.is_floating_point() else v for k, v in weights.policy.items()}
    key = next(k for k, v in changed.items() if v.is_floating_point())
    same_key = WeightsBundle(**{**weights.__dict__, "policy": changed})
    worker.collect(same_key)  # same (run, version): already loaded, nothing to do
    assert not torch.equal(worker.policy.state_dict()[key], changed[key])
    other_run = WeightsBundle(**{**weights.__dict__, "policy": changed, "run_id": "run-b"})
    fragment = worker.collect(other_run)  # a reused worker must not trust another run's version 0
    assert torch.equal(worker.policy.state_dict()[key], changed[key])
    assert (fragment.run_id, fragment.version) == ("run-b", 0)


def stats(steps: int, returns: list[float], collision: float, terms: dict[str, float]) -> RolloutStats:
    return RolloutStats(
        env_steps=steps,
        finished_returns=returns,
        finished_shaped_returns=[r - 1 for r in returns],
        finished_lengths=[5.0] * len(returns),
        finished_coverage=[0.5] * len(returns),
        collision_rate=collision,
        mean_speed=2.0,
        reward_terms=terms,
        timings={"env": 1.0 + steps / 100},
    )


def test_merge_stats_joins_episodes_and_weights_means_by_steps() -> None:
    def fragment(s: RolloutStats) -> Any:
        return RolloutFragment(0, "r", 0, {}, torch.zeros(1).numpy(), s, torch.zeros(1).numpy())

    merged = merge_stats(
        [
            fragment(stats(100, [1.0], 0.1, {"env/progress": 1.0})),
            fragment(stats(300, [2.0, 3.0], 0.5, {"env/progress": 3.0, "shaping/loop": -1.0})),
        ]
    )
    assert merged.env_steps == 400 and merged.finished_returns == [1.0, 2.0, 3.0]
    assert merged.finished_shaped_returns == [0.0, 1.0, 2.0]
    assert merged.collision_rate == pytest.approx((100 * 0.1 + 300 * 0.5) / 400)
    assert merged.reward_terms == pytest.approx({"env/progress": 2.5, "shaping/loop": -0.75})
    assert merged.timings == pytest.approx({"env": (2.0 + 4.0) / 2})  # parallel workers: mean, not sum


def test_load_fragments_rejects_a_batch_that_does_not_tile() -> None:
    config = settings()
    weights, policy = bundle(config)
    fragment = RolloutWorker(config, 0, "cpu", 1).collect(weights)
    learner = RolloutStorage(
        16, 4, obs_shape=(3, 16, 8), action_dim=4, state_size=policy.state_size, sequence_length=8
    )
    with pytest.raises(ValueError, match="do not fill a storage of 4"):
        load_fragments(learner, [fragment])


def test_missing_ray_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_ray(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "ray", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(RayUnavailableError, match=r"uv sync --extra distributed"):
        require_ray()


def test_config_rejects_an_address_without_a_port() -> None:
    with pytest.raises(ValueError, match="ray://HOST:PORT"):
        DistributedConfig(address="headnode")
    assert DistributedConfig(address="ray://10.0.0.5:10001").address == "ray://10.0.0.5:10001"
    assert DistributedConfig(address="auto").num_workers == 2
