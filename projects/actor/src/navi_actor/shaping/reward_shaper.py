"""Actor-side reward shaping on top of the environment's reward.

Terms (each a ``[B]`` tensor, logged separately, summed into ``total``):

* ``existential``: a constant tax per step (-0.02), so idling is never free;
* ``velocity``: ``velocity_weight * speed`` (weight 0 by default: the environment's progress and
  exploration terms already reward motion, and a speed bonus invites reckless flight);
* ``novelty``: RND intrinsic reward times an annealed weight;
* ``loop``: ``-loop_weight * relu(score - threshold) / (1 - threshold)`` from the episodic memory's
  loop score, which already carries the temporal decay of old memories;
* ``spin``: ``-spin_weight * relu(|turning| - spin_free) / (1 - spin_free)``, where ``turning`` is a
  per-drone running mean of the executed yaw action over about ``spin_window`` steps (reset every
  episode). A sustained turn one way (circling, spinning in place) keeps ``|turning|`` high; a turn
  towards a new direction, or weaving, averages out. Under sampling noise a constant yaw bias in the
  mean costs nothing, but the mean action alone then flies in circles: this term charges the bias.

:func:`shaping_terms` is the pure function; :class:`RewardShaper` owns the RND module and the
episodic memory and feeds them from one rollout step.

Convention: the shaping terms of the transition taken from observation ``o_t`` are functions of
``o_t`` itself (a state-visitation reward): novelty of being at ``o_t``, looping back to ``o_t``.
This reuses the embedding ``act`` already computed for ``o_t`` (no second encoder pass) and keeps
both terms on the same observation; GAE carries the credit back to the actions that led there.
"""

from __future__ import annotations

import torch

from navi_actor.curiosity.rnd import RandomNetworkDistillation
from navi_actor.memory.episodic import EpisodicMemory
from navi_actor.shaping.config import ShapingConfig

SHAPING_TERMS: tuple[str, ...] = ("env", "existential", "velocity", "novelty", "loop", "spin", "total")


def shaping_terms(
    cfg: ShapingConfig,
    *,
    env_reward: torch.Tensor,
    speed: torch.Tensor,
    novelty: torch.Tensor,
    loop_score: torch.Tensor,
    step: int,
    turning: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """Combine the environment reward with the shaping terms.

    Args:
        cfg: Shaping weights.
        env_reward: ``[B]`` environment reward.
        speed: ``[B]`` drone speed in m/s.
        novelty: ``[B]`` normalised RND intrinsic reward.
        loop_score: ``[B]`` episodic-memory loop score in ``[0, 1]``.
        step: Global environment step (drives the novelty anneal).
        turning: ``[B]`` running mean of the executed yaw action in ``[-1, 1]`` (None: no spin term).

    Returns:
        Dict of ``[B]`` tensors keyed by :data:`SHAPING_TERMS`; ``total`` is their sum.
    """
    terms = {
        "env": env_reward,
        "existential": torch.full_like(env_reward, cfg.existential_tax),
        "velocity": cfg.velocity_weight * speed,
        "novelty": cfg.novelty.at(step) * novelty,
        "loop": -cfg.loop_weight
        * (loop_score - cfg.loop_threshold).clamp_min(0.0)
        / (1 - cfg.loop_threshold),
        "spin": torch.zeros_like(env_reward)
        if turning is None
        else -cfg.spin_weight * (turning.abs() - cfg.spin_free).clamp_min(0.0) / (1 - cfg.spin_free),
    }
    terms["total"] = (
        terms["env"] + terms["existential"] + terms["velocity"] + terms["novelty"] + terms["loop"]
        + terms["spin"]
    )  # fmt: skip
    return terms


class RewardShaper:
    """Owns RND and episodic memory; turns one rollout step into shaped rewards."""

    def __init__(
        self,
        cfg: ShapingConfig,
        *,
        num_drones: int,
        embed_dim: int,
        azimuth: int,
        elevation: int,
        device: torch.device | str = "cpu",
    ) -> None:
        self.cfg = cfg
        self.rnd = RandomNetworkDistillation(cfg.rnd, azimuth, elevation).to(device)
        self.memory = EpisodicMemory(cfg.memory, num_drones, embed_dim, device)
        self.turning = torch.zeros(num_drones, device=device)  # running mean of the yaw action

    def step(
        self,
        obs: torch.Tensor,
        embedding: torch.Tensor,
        episode_start: torch.Tensor,
        *,
        env_reward: torch.Tensor,
        speed: torch.Tensor,
        step: int,
        yaw: torch.Tensor | None = None,
        loop_score: torch.Tensor | None = None,
    ) -> dict[str, torch.Tensor]:
        """Shaped reward of the transition taken from ``obs`` (call once per rollout step).

        Args:
            obs: ``[B, 3, Az, El]`` observation the policy acted on.
            embedding: ``[B, D]`` policy embedding of ``obs`` (``ActOutput.embedding``).
            episode_start: ``[B]`` bool; True where ``obs`` opens a new episode.
            env_reward: ``[B]`` environment reward of the transition.
            speed: ``[B]`` drone speed in m/s.
            step: Global environment step.
            yaw: ``[B]`` executed (clipped) yaw action of the transition (None: no spin term).
            loop_score: ``[B]`` the loop score of ``obs`` when the policy already took it from this
                shaper's memory (``policy.memory_input``); None: score ``embedding`` here.

        Returns:
            Dict of ``[B]`` tensors, see :func:`shaping_terms`.
        """
        novelty = self.rnd.intrinsic_reward(obs)
        if loop_score is None:
            loop_score = self.memory.observe(embedding, episode_start)
        turning = None
        if yaw is not None:
            self.turning.mul_((~episode_start.bool()).float())
            self.turning += (yaw - self.turning) / self.cfg.spin_window
            turning = self.turning
        return shaping_terms(
            self.cfg, env_reward=env_reward, speed=speed, novelty=novelty, loop_score=loop_score, step=step,
            turning=turning,
        )  # fmt: skip
