"""Collect-ahead (``rollout.collect_ahead``): the next rollout is collected while the learner updates.

What must hold: each rollout is acted with the weights of exactly one update earlier (never weights
changing under it), its stored log-probabilities are those weights' own, the RND statistics the
collector gathers reach the learner's checkpoint, nothing steps the simulator after training ends,
errors and Ctrl+C reach the training thread, and the telemetry socket is used from one thread only.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from point_runner import interrupt_at_update, point_settings

from navi_actor.checkpoints import load_checkpoint
from navi_actor.config import ActorSettings
from navi_actor.runners.collect_ahead import AheadRollouts
from navi_actor.runners.env_factory import build_environment
from navi_actor.runners.on_policy_runner import OnPolicyRunner
from navi_actor.storage import RolloutStorage

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def settings(**overrides: Any) -> ActorSettings:
    """The point toy's runner settings, collecting ahead and starting afresh."""
    ahead = {"rollout": {"collect_ahead": True}, "checkpoint": {"every_steps": 10_000, "auto_resume": False}}
    return point_settings(**ahead, **overrides)


def step_counter(runner: OnPolicyRunner, fail_at: int | None = None) -> dict[str, int]:
    """Count the simulator's steps (``n``); raise a simulator fault at step ``fail_at``."""
    env, calls = runner.source.env, {"n": 0}  # type: ignore[attr-defined]
    original = env.step

    def counted(*args: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == fail_at:
            raise RuntimeError("simulator fault")
        return original(*args)

    env.step = counted
    return calls


def ahead_runner(config: ActorSettings, artifacts: Path, **kwargs: Any) -> OnPolicyRunner:
    built = build_environment(config.environment, config.rollout.num_actors, config.train.device)
    runner = OnPolicyRunner(config, built, artifacts_dir=artifacts, **kwargs)
    assert isinstance(runner.source, AheadRollouts)
    return runner


def rescored(
    runner: OnPolicyRunner, weights: dict[str, torch.Tensor], storage: RolloutStorage
) -> torch.Tensor:
    """Log-probabilities ``[T, B]`` of the stored actions under ``weights``, replayed from the rollout's
    first recurrent state (as acting produced them)."""
    policy = runner.policy
    current = {key: tensor.clone() for key, tensor in policy.state_dict().items()}
    policy.load_state_dict(weights)
    with torch.no_grad():
        evaluation = policy.evaluate_sequences(
            storage.obs, storage.actions, storage.sequence_states[0], storage.episode_starts,
            visit_features=storage.visit_features,
        )  # fmt: skip
    policy.load_state_dict(current)
    return evaluation.log_prob


def test_each_rollout_is_acted_with_the_weights_of_one_update_earlier(tmp_path: Path) -> None:
    runner = ahead_runner(settings(train={"total_steps": 128}), tmp_path)
    # weights[k]: the learner's weights after k updates
    weights = [{key: t.clone() for key, t in runner.policy.state_dict().items()}]
    gaps: list[tuple[float, float]] = []
    replays: list[tuple[int | None, bool]] = []  # (acting version, replayed for decoupled PPO?)
    original = runner.learner.update

    def update(storage: RolloutStorage, *args: Any, **kwargs: Any) -> Any:
        k = len(weights)  # this is update k (1-based); its rollout was acted with weights[max(k - 2, 0)]
        acted, current = weights[max(k - 2, 0)], weights[k - 1]
        gaps.append(
            (
                float((rescored(runner, acted, storage) - storage.log_probs).abs().max()),
                float((rescored(runner, current, storage) - storage.log_probs).abs().max()),
            )
        )
        result = original(storage, *args, **kwargs)
        weights.append({key: t.clone() for key, t in runner.policy.state_dict().items()})
        replays.append((storage.acting_version, storage.proximal_log_probs is not None))
        return result

    runner.learner.update = update  # type: ignore[method-assign]
    summary = runner.run_training()
    assert summary.updates_this_run == 4 and summary.steps_this_run == 128
    assert all(acted < 1e-4 for acted, _ in gaps), gaps  # the acting weights' own log-probs
    # from the third update on, the learner's weights have moved past the acting ones
    assert all(current > 1e-3 for _, current in gaps[2:]), gaps
    # tagged with the weights' version; the learner replays all but the first (acted by its weights)
    assert replays == [(0, False), (0, True), (1, True), (2, True)]


def test_the_collectors_rnd_statistics_reach_the_learner_and_its_checkpoint(tmp_path: Path) -> None:
    runner = ahead_runner(settings(), tmp_path)
    summary = runner.run_training()
    assert summary.updates_this_run == 2
    rnd = runner.shaping.modules["rnd"]
    # two rollouts handed over (16 steps x 2 drones each); the third, collected ahead, was dropped
    assert float(rnd.obs_stats.count) == pytest.approx(64, abs=1e-3)
    assert summary.final_checkpoint is not None
    saved = load_checkpoint(summary.final_checkpoint).auxiliary["rnd"]
    assert float(saved["obs_stats.count"]) == pytest.approx(64, abs=1e-3)
    manifest = json.loads(summary.run_dir.joinpath("manifest.json").read_text())
    assert manifest["collect_ahead"] is True  # the source says so, beside the settings


def test_nothing_steps_the_simulator_once_training_has_returned(tmp_path: Path) -> None:
    runner = ahead_runner(settings(), tmp_path)
    calls = step_counter(runner)
    summary = runner.run_training()
    after = calls["n"]
    time.sleep(0.2)
    assert calls["n"] == after == 3 * 16  # two rollouts learned, one collected ahead and dropped
    assert summary.steps_this_run == 64
    assert not any(t.name.startswith("navi-collect-ahead") for t in threading.enumerate())  # stopped


def test_an_error_in_the_collector_thread_reaches_the_training_thread(tmp_path: Path) -> None:
    runner = ahead_runner(settings(), tmp_path)
    step_counter(runner, fail_at=20)  # inside the second rollout, collected during the first update
    with pytest.raises(RuntimeError, match="simulator fault"):
        runner.run_training()
    runner.close()


def test_ctrl_c_during_an_update_keeps_the_final_checkpoint(tmp_path: Path) -> None:
    runner = ahead_runner(settings(train={"total_steps": None}), tmp_path)
    interrupt_at_update(runner, 2)
    summary = runner.run_training()
    assert summary.interrupted and summary.updates_this_run == 1
    assert summary.final_checkpoint is not None and load_checkpoint(summary.final_checkpoint).step_id == 32
    assert runner.source._pending is None  # type: ignore[attr-defined]  # the rollout in flight settled
    runner.close()


class RecordingTelemetry:
    """Stands in for :class:`TrainingTelemetry`: records which thread sent an observation."""

    def __init__(self) -> None:
        self.observation_threads: list[str] = []

    def maybe_publish_observation(self, obs: torch.Tensor, step_id: int) -> None:
        assert obs.shape[0] == 2
        self.observation_threads.append(threading.current_thread().name)

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None  # heartbeat, publish_update, ...


def test_observations_are_published_from_the_training_thread(tmp_path: Path) -> None:
    telemetry = RecordingTelemetry()
    runner = ahead_runner(settings(), tmp_path, telemetry=telemetry)
    runner.run_training()
    runner.close()
    assert telemetry.observation_threads and set(telemetry.observation_threads) == {
        threading.current_thread().name
    }


def test_collect_ahead_is_refused_with_ray_and_runs_with_dagger() -> None:
    with pytest.raises(ValueError, match=r"rollout\.collect_ahead needs train\.backend=local"):
        settings(train={"backend": "ray"})  # Ray's workers have distributed.collect_ahead
    # DAgger flights wait for the rollout in flight (tests/test_ppo_dagger.py runs them both ways)
    assert settings(environment={"backend": "sdfdag"}, ppo={"dagger_every_steps": 512}).rollout.collect_ahead
