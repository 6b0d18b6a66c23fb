"""``PolicyStepper``: the one acting path shared by ``navi-actor infer`` and the brain service.

It is the trainer's acting step (``NaviPolicy.act`` with the recurrent state and episode-start mask,
then ``NaviPolicy.physics_action`` before physics, as in ``RolloutCollector.collect``) with the state
kept between calls. The in-process runner and the service loops differ only in where observations
come from, so the same checkpoint, seed and scene give the same actions on both paths.

A policy that reads its visit memory (``policy.visit_input``: past positions or the frontier map)
gets it here as in training: the stepper keeps one memory per drone and feeds it each observation
with the drones' poses (``poses=``: from ``env.poses()`` in process, from the observation message's
``poses`` in the brains), so such a policy acts the same served as evaluated.
"""

from __future__ import annotations

import torch

from navi_actor.models import ActOutput, NaviPolicy

Poses = tuple[torch.Tensor, torch.Tensor]
"""``(position [B, 3], yaw [B])`` of the drones, in world metres and radians."""

MISSING_POSES = (
    "this policy reads its visit memory (policy.visit_input), which needs the drones' poses with "
    "every observation, and none came"
)
"""The one-line refusal of an observation without poses (the stepper's and the real-time brain's)."""


class PolicyStepper:
    """Carries the recurrent state of ``B`` drones from one observation to the next.

    Args:
        policy: the policy (put in eval mode; never trained here).
        num_actors: B.
        deterministic: act with the Gaussian mean instead of sampling.
        device: where the state lives (default: the policy's device).
    """

    def __init__(
        self,
        policy: NaviPolicy,
        num_actors: int,
        *,
        deterministic: bool = True,
        device: torch.device | str | None = None,
    ) -> None:
        if num_actors < 1:
            raise ValueError(f"num_actors must be >= 1, got {num_actors}")
        self.policy = policy.eval()
        self.deterministic = deterministic
        self.device = torch.device(device) if device is not None else next(policy.parameters()).device
        self.num_actors = num_actors
        self.state = policy.initial_state(num_actors, self.device)
        self.episode_start = torch.ones(num_actors, dtype=torch.bool, device=self.device)
        self.memory = policy.new_memory(num_actors, self.device)  # None unless policy.memory_input
        self.visits = policy.new_visit_memory(num_actors, self.device)  # None unless policy.visit_input

    @property
    def needs_poses(self) -> bool:
        """Whether :meth:`act` needs the drones' poses (the policy reads its visit memory)."""
        return self.visits is not None

    def reset(self, num_actors: int | None = None) -> None:
        """Forget every drone's memory (a new batch of episodes, possibly of another size B).

        Args:
            num_actors: the new B; None keeps the current one.
        """
        if num_actors is not None and num_actors != self.num_actors:
            if num_actors < 1:
                raise ValueError(f"num_actors must be >= 1, got {num_actors}")
            self.num_actors = num_actors
            self.state = self.policy.initial_state(num_actors, self.device)
            self.memory = self.policy.new_memory(num_actors, self.device)
            self.visits = self.policy.new_visit_memory(num_actors, self.device)
        # a new tensor, not fill_: tensors made under inference_mode cannot be written outside it
        self.episode_start = torch.ones(self.num_actors, dtype=torch.bool, device=self.device)

    def _advance(self, obs: torch.Tensor, poses: Poses | None) -> ActOutput:
        """Run the policy on one observation batch and advance the recurrent state."""
        if obs.shape[0] != self.num_actors:
            raise ValueError(f"observation batch {obs.shape[0]} does not match {self.num_actors} drones")
        obs = obs.to(self.device)
        acted = self.policy.act(
            obs,
            self.state,
            self.episode_start,
            deterministic=self.deterministic,
            memory=self.memory,
            visit_features=self._visit_features(obs, poses),
        )
        self.state = acted.state
        self.episode_start = torch.zeros_like(self.episode_start)
        return acted

    def _visit_features(self, obs: torch.Tensor, poses: Poses | None) -> torch.Tensor | None:
        """The visit memory's features ``[B, F]`` after remembering this step (None without one)."""
        if self.visits is None:
            return None
        if poses is None:
            raise ValueError(MISSING_POSES)
        position, yaw = poses
        if position.shape != (self.num_actors, 3) or yaw.shape != (self.num_actors,):
            raise ValueError(
                f"poses have shapes {tuple(position.shape)} and {tuple(yaw.shape)}, "
                f"expected ({self.num_actors}, 3) and ({self.num_actors},)"
            )
        position, yaw = position.to(self.device, torch.float32), yaw.to(self.device, torch.float32)
        return self.visits.observe(position, yaw, self.episode_start, obs)

    @torch.inference_mode()
    def act(self, obs: torch.Tensor, poses: Poses | None = None) -> torch.Tensor:
        """Choose the actions for one observation batch and advance the recurrent state.

        Args:
            obs: ``[B, C, Az, El]`` float32 observations (moved to the stepper's device).
            poses: the drones' ``(position [B, 3], yaw [B])``; required when :attr:`needs_poses`,
                ignored otherwise.

        Returns:
            ``[B, 4]`` physics actions in [-1, 1] (the policy's clip or tanh of the raw action: what
            physics receives), on the stepper's device.
        """
        return self.policy.physics_action(self._advance(obs, poses).action)

    @torch.inference_mode()
    def act_chunk(self, obs: torch.Tensor, poses: Poses | None = None) -> torch.Tensor:
        """Like :meth:`act`, but return the whole action chunk ``[B, H, 4]`` as physics actions.

        Entry 0 is exactly what :meth:`act` returns (the sample, or the mean if deterministic); the
        later entries are the chunk head's mean actions for the next H-1 ticks (H = 1: none), mapped
        like entry 0 (a tanh policy's later means are squashed too).
        """
        acted = self._advance(obs, poses)
        chunk = acted.action[:, None]
        if acted.action_chunk is not None:
            chunk = torch.cat([chunk, acted.action_chunk[:, 1:]], dim=1)
        return self.policy.physics_action(chunk)

    def end_episodes(self, done: torch.Tensor) -> None:
        """Mark drones whose episode ended (terminated or truncated): their state resets next act.

        Args:
            done: ``[B]`` bool (any device).
        """
        self.episode_start = self.episode_start | done.to(self.device, torch.bool)
