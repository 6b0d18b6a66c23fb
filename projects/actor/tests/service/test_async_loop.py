"""Brain async mode: acts on published observations, memory follows episode ids, no double acting."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from env_bridge import observation_message
from structlog.testing import capture_logs

from navi_actor.checkpoints import Checkpoint, save_checkpoint
from navi_actor.envs.point import PointGoalEnv
from navi_actor.inference import PolicyStepper
from navi_actor.models import NaviPolicy
from navi_actor.service import BrainSettings, run_brain
from navi_common import Publisher, Subscriber, free_tcp_endpoint
from navi_contracts import Action, topics

pytestmark = pytest.mark.usefixtures("one_torch_thread", "uncached_loggers")


class AsyncHarness:
    """The test plays the environment: PUB of observations, SUB of the brain's actions."""

    def __init__(self, tmp_path: Path, policy: NaviPolicy) -> None:
        self.policy = policy
        checkpoint = save_checkpoint(
            Checkpoint(model=self.policy.state_dict(), policy_config=self.policy.cfg), tmp_path / "p.pt"
        )
        self.env_endpoint, brain_endpoint = free_tcp_endpoint(), free_tcp_endpoint()
        self.env_pub = Publisher(self.env_endpoint)
        self.actions = Subscriber(brain_endpoint, [topics.ACTION])
        settings = BrainSettings(
            service={
                "mode": "async",
                "sub_endpoint": self.env_endpoint,
                "pub_endpoint": brain_endpoint,
                "checkpoint": checkpoint,
                "deterministic": True,
                "resend_ms": 150,
                "wait_for_subscribers": 1,
            },
            train={"artifacts_dir": tmp_path},
        )
        self.stop, self.result = threading.Event(), [0]
        self.thread = threading.Thread(target=self._run, args=(settings, tmp_path), daemon=True)
        self.thread.start()
        self.env_pub.wait_for_subscribers(topics.DISTANCE_MATRIX, timeout_ms=10_000)

    def _run(self, settings: BrainSettings, tmp_path: Path) -> None:
        self.result[0] = run_brain(settings, tmp_path, self.stop)

    def next_action(self) -> Action:
        received = self.actions.recv(timeout_ms=10_000)
        assert received is not None, "the brain did not answer"
        assert isinstance(received[1], Action)
        return received[1]

    def close(self) -> int:
        self.stop.set()
        self.thread.join(timeout=3)
        assert not self.thread.is_alive()
        self.env_pub.close()
        self.actions.close()
        return self.result[0]


def test_async_brain_matches_the_stepper_and_never_acts_twice(
    tmp_path: Path, small_policy: Callable[..., NaviPolicy]
) -> None:
    harness = AsyncHarness(tmp_path, small_policy("gru", seed=5))
    env, reference_env = PointGoalEnv(2, max_steps=4), PointGoalEnv(2, max_steps=4)
    obs, reference_obs = env.reset(9), reference_env.reset(9)
    stepper = PolicyStepper(harness.policy, 2, deterministic=True)
    env_ids, episode_ids = np.arange(2, dtype=np.int32), np.zeros(2, dtype=np.int64)
    with capture_logs() as logs:
        for step_id in range(12):
            message = observation_message(obs, env_ids, episode_ids, step_id)
            harness.env_pub.publish(topics.DISTANCE_MATRIX, message)
            action = harness.next_action()
            expected = stepper.act(reference_obs)
            assert action.step_id == step_id
            assert np.array_equal(action.actions, expected.numpy())
            if step_id == 6:  # garbage on the observation topic is dropped; the brain keeps going
                harness.env_pub.publish_raw(topics.DISTANCE_MATRIX, b"\x93garbage")
                resent = harness.next_action()  # the idle brain re-publishes its last action
                assert resent.step_id == step_id and np.array_equal(resent.actions, action.actions)
            step = env.step(torch.from_numpy(action.actions.copy()))
            reference = reference_env.step(expected)
            stepper.end_episodes(reference.terminated | reference.truncated)
            episode_ids = episode_ids + (step.terminated | step.truncated).numpy()
            obs, reference_obs = step.obs.clone(), reference.obs.clone()
        # the same observation again: no new decision, only the resend of the last action
        harness.env_pub.publish(topics.DISTANCE_MATRIX, message)
        again = harness.next_action()
        assert again.step_id == 11
    acted = harness.close()
    assert acted == 12
    assert episode_ids.sum() >= 4  # episodes ended during the run (max_steps=4)
    assert any(entry["event"] == "contracts.subscriber.message_dropped" for entry in logs)


def test_async_brain_resets_memory_when_the_environment_restarts(
    tmp_path: Path, small_policy: Callable[..., NaviPolicy]
) -> None:
    harness = AsyncHarness(tmp_path, small_policy("gru", seed=5))
    env = PointGoalEnv(1)
    obs = env.reset(0)
    ids, episodes = np.zeros(1, dtype=np.int32), np.zeros(1, dtype=np.int64)
    with capture_logs() as logs:
        for step_id in (0, 1, 2, 0):  # step ids going backwards: the environment restarted
            harness.env_pub.publish(topics.DISTANCE_MATRIX, observation_message(obs, ids, episodes, step_id))
            last = harness.next_action()
    fresh = PolicyStepper(harness.policy, 1, deterministic=True).act(obs)
    assert np.array_equal(last.actions, fresh.numpy())  # acted with a zero state again
    assert any(entry["event"] == "actor.service.resynced" for entry in logs)
    harness.close()


def test_settings_reject_an_unknown_mode(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="mode"):
        BrainSettings(service={"mode": "turbo"})  # type: ignore[dict-item]
    assert isinstance(BrainSettings().service.mode, str)


def test_before_the_first_observation_the_brain_waits_env_ready_timeout_quietly() -> None:
    """Issue 23: an environment still loading is not "silent" after 3 s; it gets env_ready_timeout_ms."""
    from navi_actor.service.async_loop import AsyncModeLoop
    from navi_actor.service.config import ServiceConfig

    def loop(**config: int) -> AsyncModeLoop:
        return AsyncModeLoop(None, None, None, None, ServiceConfig(**config))  # type: ignore[arg-type]

    loading = loop(silence_warning_ms=100, env_ready_timeout_ms=60_000)
    loading._idle(loading._last_seen + 5.0)  # 5 s without any observation yet
    assert not loading._silent
    late = loop(silence_warning_ms=100, env_ready_timeout_ms=1_000)
    late._idle(late._last_seen + 5.0)
    assert late._silent  # past the readiness timeout: env_silent is logged
