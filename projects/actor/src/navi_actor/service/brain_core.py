"""``BrainCore``: observation message in, action message out, with the drones' recurrent memory.

Both service modes use it. The policy is built when the first observation arrives, because only then
does the service know the sensor shape and the number of drones; a checkpoint trained for another
sensor is refused with a clear error at that point (it cannot be fixed by retrying), as is an
observation without the drones' poses for a policy that reads its visit memory.
"""

from __future__ import annotations

import numpy as np
import structlog
import torch

from navi_actor.inference.policy_source import PolicySource, build_policy
from navi_actor.inference.stepper import PolicyStepper
from navi_actor.models import PolicyConfig
from navi_actor.service.wire import action_message, message_poses, observation_tensor
from navi_contracts import Action, DistanceMatrix

log = structlog.get_logger()


class BrainCore:
    """Acts on wire observations with one :class:`PolicyStepper`.

    Args:
        source: where the weights come from.
        fresh_config: architecture used when ``source`` has no checkpoint.
        device: torch device of the policy.
        deterministic: act with the mean instead of sampling.
        seed: seed of a fresh policy's weights and of action sampling.
    """

    def __init__(
        self,
        source: PolicySource,
        fresh_config: PolicyConfig,
        *,
        device: torch.device | str = "cpu",
        deterministic: bool = False,
        seed: int = 0,
    ) -> None:
        self.source, self.fresh_config = source, fresh_config
        self.device = torch.device(device)
        self.deterministic, self.seed = deterministic, seed
        self.stepper: PolicyStepper | None = None
        self._shape: tuple[int, int, int] | None = None

    @property
    def policy_id(self) -> str:
        """The ``policy_id`` stamped on every action."""
        return self.source.policy_id

    def _ensure_stepper(self, shape: tuple[int, int, int], num_actors: int) -> PolicyStepper:
        if self.stepper is None or shape != self._shape:
            policy = build_policy(self.source, self.fresh_config, shape, device=self.device, seed=self.seed)
            torch.manual_seed(self.seed)  # sampled actions are reproducible per seed
            self.stepper = PolicyStepper(
                policy, num_actors, deterministic=self.deterministic, device=self.device
            )
            self._shape = shape
            log.info(
                "actor.service.policy_ready",
                policy_id=self.policy_id,
                observation_shape=list(shape),
                drones=num_actors,
                deterministic=self.deterministic,
            )
        elif self.stepper.num_actors != num_actors:
            self.stepper.reset(num_actors)
        return self.stepper

    def reset(self, message: DistanceMatrix) -> None:
        """Start every drone's memory afresh for the batch described by ``message``."""
        azimuth, elevation = message.matrix_shape
        stepper = self._ensure_stepper((3, int(azimuth), int(elevation)), int(message.env_ids.shape[0]))
        stepper.reset()

    def end_episodes(self, done: np.ndarray) -> None:
        """Reset the memory of drones whose episode ended (``done``: ``[B]`` bool) before the next act."""
        if self.stepper is not None:
            self.stepper.end_episodes(torch.from_numpy(np.asarray(done, dtype=np.bool_)))

    def act(self, message: DistanceMatrix) -> tuple[torch.Tensor, Action]:
        """Choose actions for one observation batch.

        Args:
            message: the observation (its B must match the last :meth:`reset`, else memory resets).

        Returns:
            ``(obs [B, 3, Az, El], Action)``: the tensor the policy saw and the message to send.
        """
        azimuth, elevation = message.matrix_shape
        B = int(message.env_ids.shape[0])
        stepper = self._ensure_stepper((3, int(azimuth), int(elevation)), B)
        obs = observation_tensor(message, self.device)
        actions = stepper.act(obs, message_poses(message, self.device) if stepper.needs_poses else None)
        return obs, action_message(actions, message.env_ids, message.step_id, self.policy_id)
