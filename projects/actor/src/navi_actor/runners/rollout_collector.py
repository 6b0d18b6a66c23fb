"""Collect one rollout: act WITH the recurrent state, clip before physics, shape, bootstrap truncations.

The collector owns the live acting state between rollouts (current observation, recurrent state and
episode-start mask), so consecutive rollouts continue the same episodes. Per-step work stays on the
device; the host sees one copy of the episode statistics per rollout (and one ``any()`` per step to
skip the bootstrap forward pass when nothing was truncated, which is the common case).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

import torch

from navi_actor.algorithms.stage_timer import StageTimer
from navi_actor.envs.protocol import VectorEnv, VectorStep
from navi_actor.memory.episodic import EpisodicMemory
from navi_actor.memory.frontiers import new_visit_reader
from navi_actor.models import ActOutput, NaviPolicy
from navi_actor.models.correlated_noise import CorrelatedNoise
from navi_actor.models.open_loop import OpenLoopSchedule
from navi_actor.models.quiet_drones import QuietDrones
from navi_actor.storage.rollout_storage import RolloutStorage


class RewardShaping(Protocol):
    """Actor-side reward terms added to the environment's reward (RND, loop penalty, tax...)."""

    def __call__(
        self, obs: torch.Tensor, step: VectorStep, acted: ActOutput, episode_start: torch.Tensor
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Return ``(shaping_total [B], {term: [B]})`` for the transition taken from ``obs``."""
        ...


@dataclass
class RolloutStats:
    """Host-side summary of one rollout."""

    env_steps: int
    finished_returns: list[float]  # environment-reward returns of episodes that ended
    finished_shaped_returns: list[float]
    finished_lengths: list[float]
    finished_coverage: list[float]
    collision_rate: float  # collisions per drone-step
    mean_speed: float
    reward_terms: dict[str, float]  # mean per drone-step, "env/<term>" and "shaping/<term>"
    timings: dict[str, float]  # seconds: env, policy, shaping, bootstrap
    num_actors: int = 0  # drones stepped together (the dashboard's "active actors")
    scene_of_actor0: float = float("nan")  # scene index actor 0 flew last (NaN: env has no scenes)


class RolloutCollector:
    """Steps ``env`` with ``policy`` into ``storage``.

    Args:
        env: batched environment (:class:`~navi_actor.envs.protocol.VectorEnv`).
        policy: the acting policy (same object the learner trains).
        storage: rollout buffers sized for ``env.num_actors``.
        shaping: optional actor-side reward shaping.
        seed: environment reset seed.
        on_step: optional callback with the post-step observation [B, 3, Az, El] (telemetry).
        open_loop_fraction: with a chunk head, the share of closed-loop ticks that start executing
            the chunk's later entries open loop (``ppo.open_loop_fraction``,
            :mod:`navi_actor.models.open_loop`); 0: always a fresh action.
        memory: the drones' episodic memory for a policy with ``memory_input`` (pass the shaper's,
            so the loop penalty and the policy read one memory; None: the policy's own new one).
        noise_correlation: ``rollout.noise_correlation``, the AR(1) coefficient of each drone's
            action noise (:mod:`navi_actor.models.correlated_noise`); 0: white noise. A tick that
            executes an open-loop chunk entry instead draws that entry's own white noise.
        quiet_drones: ``rollout.quiet_drones``, how many drones (the last ones) act with
            ``quiet_noise_scale`` x the policy's std (:mod:`navi_actor.models.quiet_drones`); 0: none.
            Not with open-loop chunks (the settings refuse the pair).
        quiet_noise_scale: ``rollout.quiet_noise_scale``, the share of the std they keep.

    A policy with ``visit_input`` reads the drones' visit memory, kept here and fed their poses
    (``env.poses()``) before every step; one with ``visit_prediction`` does not read it, but its
    features are recorded as the visit head's targets the same way.
    """

    def __init__(
        self,
        env: VectorEnv,
        policy: NaviPolicy,
        storage: RolloutStorage,
        *,
        shaping: RewardShaping | None = None,
        seed: int | None = None,
        on_step: Callable[[torch.Tensor], None] | None = None,
        open_loop_fraction: float = 0.0,
        memory: EpisodicMemory | None = None,
        noise_correlation: float = 0.0,
        quiet_drones: int = 0,
        quiet_noise_scale: float = 0.5,
    ) -> None:
        self.env, self.policy, self.storage, self.shaping = env, policy, storage, shaping
        self.noise: CorrelatedNoise | None = None
        if noise_correlation > 0.0:
            cfg = policy.cfg
            self.noise = CorrelatedNoise(
                env.num_actors, cfg.action_dim, noise_correlation, cfg.action_squash, storage.device
            )
        self.quiet: QuietDrones | None = None
        if quiet_drones > 0:
            self.quiet = QuietDrones(
                env.num_actors, quiet_drones, quiet_noise_scale, policy.cfg.action_squash, storage.device
            )
        self.open_loop: OpenLoopSchedule | None = None
        if open_loop_fraction > 0.0:
            self.open_loop = OpenLoopSchedule(
                env.num_actors,
                policy.cfg.action_chunk,
                fraction=open_loop_fraction,
                sequence_length=storage.sequence_length,
                squash=policy.cfg.action_squash,
                device=storage.device,
            )
        self.on_step = on_step
        device = storage.device
        B = env.num_actors
        self.obs = env.reset(seed).to(device).clone()
        self.state = policy.initial_state(B, device)
        self.episode_start = torch.ones(B, dtype=torch.bool, device=device)
        self.memory = memory if memory is not None else policy.new_memory(B, device)
        cfg = policy.cfg
        self.visits = (
            new_visit_reader(cfg.visits, B, cfg.azimuth, cfg.elevation, device)
            if policy.keeps_visit_features
            else None
        )
        self._running_return = torch.zeros(B, device=device)
        self._running_shaped = torch.zeros(B, device=device)
        self._running_length = torch.zeros(B, device=device)
        self._scene_index: torch.Tensor | None = None  # [B] last scene per drone, read once per rollout
        self.last_values: torch.Tensor | None = None  # [B] V(s_T) the last rollout bootstrapped from

    def restart(self, seed: int) -> None:
        """Reset the environment and start every drone's episode afresh (state, memories, returns).

        Why: something else stepped the environment between two rollouts (the labelled mean-action
        flights of ``ppo.dagger_every_steps``); the episodes in progress are dropped uncounted, as
        the rollout already bootstrapped their values.
        """
        device, drones = self.storage.device, self.env.num_actors
        self.obs = self.env.reset(seed).to(device).clone()
        self.state = self.policy.initial_state(drones, device)
        self.episode_start = torch.ones(drones, dtype=torch.bool, device=device)
        for running in (self._running_return, self._running_shaped, self._running_length):
            running.zero_()

    @torch.no_grad()
    def collect(self, gamma: float, gae_lambda: float) -> RolloutStats:
        """Fill the storage with one rollout and compute its advantages.

        Args:
            gamma: discount for GAE.
            gae_lambda: GAE lambda.

        Returns:
            :class:`RolloutStats` (one host copy for the whole rollout).
        """
        storage = self.storage
        T, B, device = storage.num_steps, self.env.num_actors, storage.device
        # On CUDA host clocks would charge the policy's queued kernels to the env step that waits for
        # them; CUDA events time each stage on the device's stream, resolved with one sync at the end.
        timer = StageTimer(use_cuda_events=device.type == "cuda")
        ended = torch.zeros(5, T, B, device=device)  # done, env return, shaped return, length, coverage
        sums: dict[str, torch.Tensor] = {}
        self.policy.eval()  # no behaviour change, but makes the intent explicit
        for t in range(T):
            with timer.stage("policy"):
                acted = self.policy.act(
                    self.obs, self.state, self.episode_start, memory=self.memory,
                    visit_features=self._visit_features(write=True),
                )  # fmt: skip
                if self.noise is not None:
                    assert acted.action_log_std is not None
                    noisy, noisy_log_prob = self.noise.step(
                        self.episode_start, acted.action, acted.action_mean, acted.action_log_std
                    )
                    acted = replace(
                        acted, action=noisy, log_prob=noisy_log_prob,
                        state=self.policy.with_executed_action(acted.state, noisy),
                    )  # fmt: skip
                if self.quiet is not None:
                    assert acted.action_log_std is not None
                    quieted, quiet_log_prob = self.quiet.step(
                        acted.action, acted.action_mean, acted.action_log_std
                    )
                    acted = replace(
                        acted, action=quieted, log_prob=quiet_log_prob,
                        state=self.policy.with_executed_action(acted.state, quieted),
                    )  # fmt: skip
                action, log_prob, lag = acted.action, acted.log_prob, None
                if self.open_loop is not None:
                    assert acted.action_chunk is not None and acted.action_log_std is not None
                    action, log_prob, lag = self.open_loop.step(
                        t, episode_start=self.episode_start, action=action, log_prob=log_prob,
                        chunk_means=acted.action_chunk, log_std=acted.action_log_std,
                    )  # fmt: skip
                    # the next step reads the executed chunk entry (policy.previous_action_input)
                    acted = replace(acted, state=self.policy.with_executed_action(acted.state, action))
                storage.insert(
                    t,
                    obs=self.obs,
                    state=self.state,
                    episode_start=self.episode_start,
                    action=action,
                    log_prob=log_prob,
                    value=acted.value,
                    lag=lag,
                    loop_score=acted.loop_score,
                    visit_features=acted.visit_features,
                    noise_log_scale=None if self.quiet is None else self.quiet.log_scales,
                )
            with timer.stage("env"):
                step = self.env.step(self.policy.physics_action(action))
            with timer.stage("shaping"):
                reward, terms = self._shape(step, acted if lag is None else replace(acted, action=action))
            with timer.stage("bootstrap"):
                final_value = self._truncation_values(step, acted)
            storage.insert_outcome(t, reward, step.terminated, step.truncated, final_value)
            self._account(t, step, reward, ended=ended, sums=sums, terms=terms)
            self.obs = step.obs.clone()  # the environment may reuse its buffers in place
            self.state, self.episode_start = acted.state, step.terminated | step.truncated
            if self.on_step is not None:
                self.on_step(self.obs)
        with timer.stage("policy"):
            self.last_values = self.policy.value(
                self.obs, self.state, self.episode_start, memory=self.memory,
                visit_features=self._visit_features(write=False),
            )  # fmt: skip
        storage.compute_returns(self.last_values, gamma, gae_lambda)
        return self._summarise(ended, sums, timer.totals())

    def _shape(self, step: VectorStep, acted: ActOutput) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        if self.shaping is None:
            return step.reward, {}
        bonus, terms = self.shaping(self.obs, step, acted, self.episode_start)
        return step.reward + bonus, terms

    def _visit_features(self, *, write: bool) -> torch.Tensor | None:
        """The drones' visit features ``[B, F]`` at their current poses (None if the policy neither
        reads nor predicts them);
        ``write``: remember the poses (an acting step), else only read them (a bootstrap value)."""
        if self.visits is None:
            return None
        position, yaw = self.env.poses()
        device = self.storage.device
        read = self.visits.observe if write else self.visits.peek
        return read(position.to(device), yaw.to(device), self.episode_start, self.obs)

    def _truncation_values(self, step: VectorStep, acted: ActOutput) -> torch.Tensor | None:
        """V(final_obs) with the state of this step (before any reset), only if a row was truncated.

        The final pose is gone after the auto-reset: the visit features are those of the pose the
        drone acted from, one step earlier.
        """
        if not bool(step.truncated.any()):
            return None
        no_reset = torch.zeros_like(step.truncated)
        final_obs = step.final_obs.to(self.storage.device)
        return self.policy.value(
            final_obs, acted.state, no_reset, memory=self.memory, visit_features=acted.visit_features
        )

    def _account(
        self,
        t: int,
        step: VectorStep,
        reward: torch.Tensor,
        *,
        ended: torch.Tensor,
        sums: dict[str, torch.Tensor],
        terms: dict[str, torch.Tensor],
    ) -> None:
        done = step.terminated | step.truncated
        self._scene_index = step.info.get("scene_index", self._scene_index)
        self._running_return += step.reward
        self._running_shaped += reward
        self._running_length += 1
        done_f = done.float()
        coverage = step.info.get("coverage", torch.zeros_like(reward))
        ended[:, t] = (
            torch.stack([done_f, self._running_return, self._running_shaped, self._running_length, coverage])
            * done_f
        )
        keep = 1.0 - done_f
        self._running_return *= keep
        self._running_shaped *= keep
        self._running_length *= keep
        for key, value in step.info.items():
            if key.startswith("reward/") or key in ("collision", "speed"):
                name = "env/" + key.removeprefix("reward/") if key.startswith("reward/") else key
                sums[name] = sums.get(name, 0.0) + value.float().sum()
        for key, value in terms.items():
            sums["shaping/" + key] = sums.get("shaping/" + key, 0.0) + value.float().sum()

    def _summarise(
        self, ended: torch.Tensor, sums: dict[str, torch.Tensor], timings: dict[str, float]
    ) -> RolloutStats:
        T, B = ended.shape[1:]
        names = list(sums)
        totals = torch.stack([sums[n] for n in names]).tolist() if names else []
        means = {n: v / (T * B) for n, v in zip(names, totals, strict=True)}
        mask = ended[0].bool()
        finished = ended[1:, mask].tolist()  # [4, E] one host copy
        return RolloutStats(
            env_steps=T * B,
            finished_returns=finished[0],
            finished_shaped_returns=finished[1],
            finished_lengths=finished[2],
            finished_coverage=finished[3],
            collision_rate=means.pop("collision", 0.0),
            mean_speed=means.pop("speed", 0.0),
            reward_terms=means,
            timings=timings,
            num_actors=B,
            scene_of_actor0=float(self._scene_index[0]) if self._scene_index is not None else float("nan"),
        )
