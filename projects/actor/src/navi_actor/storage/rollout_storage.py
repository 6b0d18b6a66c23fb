"""Preallocated on-device rollout storage with sequence-native minibatches for BPTT.

Every buffer is allocated once, shaped ``[T, B, ...]`` on the policy's device, and written by index.
Float buffers start as NaN (the sentinel): a slot read before it was written poisons the loss and the
sanity check in :meth:`RolloutStorage.compute_returns` instead of silently training on zeros.

Recurrent state is stored only where a training sequence starts (every ``sequence_length`` steps):
the learner replays each chunk of ``L`` steps from that state with the episode-start mask, which is
exactly what the policy did while acting.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

from navi_actor.algorithms.gae import gae_advantages, normalize_advantages


@dataclass(frozen=True)
class SequenceBatch:
    """One minibatch of M training sequences of length L (time-major)."""

    obs: torch.Tensor  # [L, M, C, Az, El]
    actions: torch.Tensor  # [L, M, A] raw (unclipped) samples
    old_log_probs: torch.Tensor  # [L, M]
    old_values: torch.Tensor  # [L, M]
    advantages: torch.Tensor  # [L, M] normalised
    returns: torch.Tensor  # [L, M]
    episode_starts: torch.Tensor  # [L, M] bool
    state0: torch.Tensor  # [M, S] recurrent state before the first step of each sequence
    # This batch's share of the minibatch's sequences: 1 for a single learner; a data-parallel rank
    # holding part of a minibatch weighs its losses by it (navi_actor.distributed.data_parallel).
    share: float = 1.0
    # [L, M] long: the chunk entry each action was drawn from (open-loop rollouts; 0: closed loop)
    lags: torch.Tensor | None = None
    # [L, M, A] targets of the symmetry loss (ppo.symmetry_coef): mirrored-back means on the mirrored
    # rollout; None when the learner did not compute them
    mirror_means: torch.Tensor | None = None
    # [L, M] episodic loop scores the policy read while acting (policy.memory_input; 0 otherwise)
    loop_scores: torch.Tensor | None = None
    # [L, M, F] visit features at acting time, read or predicted by the policy (policy.visit_input,
    # policy.visit_prediction; F = 0 otherwise)
    visit_features: torch.Tensor | None = None
    # [L, M] log of the share of the policy's std each action was drawn with (rollout.quiet_drones;
    # 0: the policy's own std)
    noise_log_scales: torch.Tensor | None = None
    # [L, M] log-probabilities under the learner's weights at the update's start, when older weights
    # acted (RolloutStorage.acting_version); None: the weights that acted are the learner's
    proximal_log_probs: torch.Tensor | None = None


class RolloutStorage:
    """Fixed-size buffers for one rollout of ``T`` steps by ``B`` drones.

    Args:
        num_steps: T, steps per rollout.
        num_envs: B, drones stepped together.
        obs_shape: per-drone observation shape, e.g. ``(3, Az, El)``.
        action_dim: A, action size (4).
        state_size: S, flattened recurrent state size of the policy.
        sequence_length: L, BPTT chunk length; must divide ``num_steps``.
        visit_features: F, visit features per step the policy reads or predicts (policy.visit_input,
            policy.visit_prediction; 0: none).
        device: where every buffer lives (the policy's device).
    """

    def __init__(
        self,
        num_steps: int,
        num_envs: int,
        *,
        obs_shape: tuple[int, ...],
        action_dim: int,
        state_size: int,
        sequence_length: int,
        visit_features: int = 0,
        device: torch.device | str = "cpu",
    ) -> None:
        if num_steps % sequence_length != 0:
            raise ValueError(
                f"rollout length {num_steps} must be a multiple of the sequence length {sequence_length}"
            )
        self.num_steps, self.num_envs, self.sequence_length = num_steps, num_envs, sequence_length
        self.num_chunks = num_steps // sequence_length
        self.device = torch.device(device)
        T, B = num_steps, num_envs

        def floats(*shape: int) -> torch.Tensor:
            return torch.full(shape, float("nan"), dtype=torch.float32, device=self.device)

        def flags() -> torch.Tensor:
            return torch.zeros((T, B), dtype=torch.bool, device=self.device)

        self.obs = floats(T, B, *obs_shape)
        self.actions = floats(T, B, action_dim)
        self.log_probs = floats(T, B)
        self.values = floats(T, B)
        self.rewards = floats(T, B)
        self.final_values = torch.zeros((T, B), dtype=torch.float32, device=self.device)
        self.terminated, self.truncated, self.episode_starts = flags(), flags(), flags()
        # chunk entry each action was drawn from (navi_actor.models.open_loop); 0: the tick's own
        self.lags = torch.zeros((T, B), dtype=torch.long, device=self.device)
        # the episodic loop score each step's core input carried (policy.memory_input); 0: none
        self.loop_scores = torch.zeros((T, B), dtype=torch.float32, device=self.device)
        # the visit features at each step (read: policy.visit_input; predicted: visit_prediction);
        # [T, B, 0]: none
        self.visit_features = torch.zeros((T, B, visit_features), dtype=torch.float32, device=self.device)
        # log of the share of the policy's std each action was drawn with (rollout.quiet_drones); 0: all
        self.noise_log_scales = torch.zeros((T, B), dtype=torch.float32, device=self.device)
        self.sequence_states = floats(self.num_chunks, B, state_size)
        self.advantages = floats(T, B)
        self.returns = floats(T, B)
        #: [T, B, A] set by the learner before an update that uses the symmetry loss; None otherwise
        self.mirror_means: torch.Tensor | None = None
        #: learner update index of the oldest weights that acted in this rollout, set by a rollout
        #: source that collects ahead of the learner (collect-ahead, Ray workers); None: the learner's
        #: own current weights acted (the serial collector)
        self.acting_version: int | None = None
        #: [T, B] set by the learner before an update on a rollout older weights acted (its
        #: log-probabilities under the weights at the update's start); None otherwise
        self.proximal_log_probs: torch.Tensor | None = None

    def insert(
        self,
        step: int,
        *,
        obs: torch.Tensor,
        state: torch.Tensor,
        episode_start: torch.Tensor,
        action: torch.Tensor,
        log_prob: torch.Tensor,
        value: torch.Tensor,
        lag: torch.Tensor | None = None,
        loop_score: torch.Tensor | None = None,
        visit_features: torch.Tensor | None = None,
        noise_log_scale: torch.Tensor | None = None,
    ) -> None:
        """Record what the policy saw and did at ``step`` (before the environment answered).

        Args:
            step: index in ``[0, T)``.
            obs: [B, C, Az, El] observation acted on.
            state: [B, S] recurrent state fed to the policy (before its episode-start reset).
            episode_start: [B] bool, True where this step starts a new episode.
            action: [B, A] raw sampled action (the log-prob refers to it, not to the clipped one).
            log_prob: [B] log-probability of ``action``.
            value: [B] critic value of ``obs``.
            lag: [B] long, the chunk entry ``action`` was drawn from (None: 0, a fresh action).
            loop_score: [B] episodic loop score the policy read (``ActOutput.loop_score``; None: 0).
            visit_features: [B, F] visit features the policy read (``ActOutput.visit_features``).
            noise_log_scale: [B] log of the share of the std ``action`` was drawn with
                (:mod:`navi_actor.models.quiet_drones`; None: 0, the policy's own std).
        """
        self.obs[step].copy_(obs)
        if lag is None:
            self.lags[step].zero_()
        else:
            self.lags[step].copy_(lag)
        if loop_score is None:
            self.loop_scores[step].zero_()
        else:
            self.loop_scores[step].copy_(loop_score)
        if visit_features is not None:
            self.visit_features[step].copy_(visit_features)
        if noise_log_scale is None:
            self.noise_log_scales[step].zero_()
        else:
            self.noise_log_scales[step].copy_(noise_log_scale)
        self.episode_starts[step].copy_(episode_start)
        self.actions[step].copy_(action)
        self.log_probs[step].copy_(log_prob)
        self.values[step].copy_(value)
        if step % self.sequence_length == 0:
            self.sequence_states[step // self.sequence_length].copy_(state)

    def insert_outcome(
        self,
        step: int,
        reward: torch.Tensor,
        terminated: torch.Tensor,
        truncated: torch.Tensor,
        final_value: torch.Tensor | None = None,
    ) -> None:
        """Record what the environment answered to the action taken at ``step``.

        Args:
            step: index in ``[0, T)``.
            reward: [B] total (environment + shaping) reward.
            terminated: [B] bool.
            truncated: [B] bool.
            final_value: [B] V(final observation) for truncated rows; None when no row was truncated.
        """
        self.rewards[step].copy_(reward)
        self.terminated[step].copy_(terminated)
        self.truncated[step].copy_(truncated)
        if final_value is None:
            self.final_values[step].zero_()
        else:
            self.final_values[step].copy_(torch.where(truncated, final_value, torch.zeros_like(final_value)))

    def compute_returns(self, last_values: torch.Tensor, gamma: float, gae_lambda: float) -> None:
        """Fill ``advantages`` (normalised once for the whole rollout) and ``returns``.

        Args:
            last_values: [B] V(observation after the last step), with the state after that step.
            gamma: discount.
            gae_lambda: GAE lambda.

        Raises:
            RuntimeError: if any reward, value or log-prob is NaN (never written, or a NaN reward).
        """
        written = torch.stack([self.rewards.isnan().any(), self.values.isnan().any()])
        if bool(written.any() or self.log_probs.isnan().any()):
            raise RuntimeError(
                "rollout storage holds NaN rewards, values or log-probs: unwritten slots (collect a full "
                "rollout before learning) or a non-finite reward from the environment"
            )
        advantages, returns = gae_advantages(
            self.rewards,
            self.values,
            self.terminated,
            self.truncated,
            final_values=self.final_values,
            last_values=last_values,
            gamma=gamma,
            gae_lambda=gae_lambda,
        )
        self.advantages.copy_(self.normalise_advantages(advantages))
        self.returns.copy_(returns)

    def normalise_advantages(self, advantages: torch.Tensor) -> torch.Tensor:
        """Zero-mean, unit-std over the rollout (a data-parallel shard reduces over all shards)."""
        return normalize_advantages(advantages)

    @property
    def num_sequences(self) -> int:
        """Number of training sequences in one rollout (chunks times drones)."""
        return self.num_chunks * self.num_envs

    def sequence_minibatches(
        self, num_minibatches: int, generator: torch.Generator | None = None
    ) -> Iterator[SequenceBatch]:
        """Shuffle the rollout's sequences and yield them in ``num_minibatches`` groups.

        Args:
            num_minibatches: groups per epoch; must divide :attr:`num_sequences`.
            generator: optional torch generator (on the storage's device) for a reproducible shuffle.

        Yields:
            :class:`SequenceBatch` of ``M = num_sequences / num_minibatches`` sequences of length L.
        """
        if self.num_sequences % num_minibatches != 0:
            raise ValueError(
                f"{self.num_sequences} sequences ({self.num_chunks} chunks x {self.num_envs} drones) "
                f"cannot be split into {num_minibatches} equal minibatches"
            )
        per_batch = self.num_sequences // num_minibatches
        order = torch.randperm(self.num_sequences, generator=generator, device=self.device)
        for start in range(0, self.num_sequences, per_batch):
            yield self.gather(order[start : start + per_batch])

    def _chunked(self, buffer: torch.Tensor) -> torch.Tensor:
        """A ``[T, B, ...]`` buffer viewed as ``[L, C, B, ...]`` (no copy: writes reach the buffer)."""
        return buffer.view(self.num_chunks, self.sequence_length, *buffer.shape[1:]).transpose(0, 1)

    def scatter(self, buffer: torch.Tensor, sequence_ids: torch.Tensor, values: torch.Tensor) -> None:
        """Write ``[L, M, ...]`` values of sequences ``sequence_ids`` into a ``[T, B, ...]`` buffer:
        the inverse of :meth:`gather`'s slicing."""
        self._chunked(buffer)[:, sequence_ids // self.num_envs, sequence_ids % self.num_envs] = values

    def gather(self, sequence_ids: torch.Tensor) -> SequenceBatch:
        """Slice sequences ``s = chunk * B + drone`` out of the ``[T, B]`` buffers, time-major."""
        chunk, drone = sequence_ids // self.num_envs, sequence_ids % self.num_envs

        def take(buffer: torch.Tensor) -> torch.Tensor:
            # [T, B, ...] -> [L, C, B, ...]; adjacent advanced indices (C, B) -> fresh [L, M, ...] tensor
            return self._chunked(buffer)[:, chunk, drone]

        return SequenceBatch(
            obs=take(self.obs),
            actions=take(self.actions),
            old_log_probs=take(self.log_probs),
            old_values=take(self.values),
            advantages=take(self.advantages),
            returns=take(self.returns),
            episode_starts=take(self.episode_starts),
            state0=self.sequence_states[chunk, drone],
            lags=take(self.lags),
            loop_scores=take(self.loop_scores),
            visit_features=take(self.visit_features),
            noise_log_scales=take(self.noise_log_scales),
            mirror_means=None if self.mirror_means is None else take(self.mirror_means),
            proximal_log_probs=None if self.proximal_log_probs is None else take(self.proximal_log_probs),
        )
