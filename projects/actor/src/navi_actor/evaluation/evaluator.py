"""Evaluate a policy: pure inference (``torch.inference_mode``), never a gradient step.

Episodes are gathered across the drone batch until ``episodes`` have finished; the first ones to
finish (by step, then drone index) are reported, so two policies evaluated with the same seed on the
same scenes are compared on the same spawn sequence. Path length sums each drone's displacement
between consecutive poses; the step that ends an episode is not counted (its next pose is already
the respawn), a documented one-step undercount.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Protocol

import torch
from torch import nn

from navi_actor.models import clip_action
from navi_actor.runners.env_protocol import VectorEnv


class ActResult(Protocol):
    """The part of an acting step the evaluator uses."""

    @property
    def action(self) -> torch.Tensor:
        """[B, 4] raw action (clipped before the environment)."""
        ...

    @property
    def state(self) -> torch.Tensor:
        """[B, S] recurrent state after the step."""
        ...


class ActingPolicy(Protocol):
    """Anything that acts like :class:`~navi_actor.models.NaviPolicy` (also the baselines)."""

    def initial_state(self, batch_size: int, device: torch.device | str | None = None) -> torch.Tensor:
        """Zero state [B, S]."""
        ...

    def act(
        self, obs: torch.Tensor, state: torch.Tensor, episode_start: torch.Tensor, deterministic: bool = False
    ) -> ActResult:
        """One acting step."""
        ...


@dataclass(frozen=True)
class EvaluationReport:
    """Aggregate results over ``episodes`` finished episodes."""

    episodes: int
    mean_return: float
    std_return: float
    mean_length: float
    collision_rate: float  # collisions per drone-step over the finished episodes
    coverage: float  # mean coverage at episode end
    path_length: float  # mean metres flown per episode
    deterministic: bool
    seed: int

    def as_dict(self) -> dict[str, float | int | bool]:
        """Plain dict (JSON output)."""
        return asdict(self)


class _EpisodeAccumulator:
    """Per-drone running sums; finished rows are appended to host lists once per step with an end."""

    def __init__(self, num_actors: int, device: torch.device) -> None:
        self.running = torch.zeros(4, num_actors, device=device)  # return, length, collisions, path
        self.finished: list[list[float]] = []  # rows of [return, length, collisions, path, coverage]

    def add(self, reward: torch.Tensor, collision: torch.Tensor, path: torch.Tensor) -> None:
        self.running += torch.stack([reward, torch.ones_like(reward), collision, path])

    def close(self, done: torch.Tensor, coverage: torch.Tensor) -> None:
        if not bool(done.any()):
            return
        ended = torch.cat([self.running[:, done], coverage[done].unsqueeze(0)])  # [5, E]
        self.finished.extend(ended.T.tolist())
        self.running[:, done] = 0.0


@torch.inference_mode()
def evaluate_policy(
    policy: ActingPolicy,
    env: VectorEnv,
    episodes: int,
    *,
    deterministic: bool = False,
    seed: int = 0,
    max_env_steps: int = 1_000_000,
) -> EvaluationReport:
    """Run ``policy`` on ``env`` until ``episodes`` episodes have finished.

    Args:
        policy: the policy (its recurrent state is carried step to step, reset at episode starts).
        env: batched environment; reset with ``seed``.
        episodes: finished episodes to report (>= 1).
        deterministic: act with the Gaussian mean instead of sampling. Sampling is the default: it is
            the policy PPO trained; a recurrent policy's mean action can settle into loops (on the
            learning benchmark it covered 0.6x the cells of its sampled self).
        seed: environment reset seed and torch seed for sampled actions.
        max_env_steps: safety cap on drone-steps; exceeding it raises.

    Returns:
        :class:`EvaluationReport`.

    Raises:
        RuntimeError: fewer than ``episodes`` episodes finished within ``max_env_steps``.
    """
    if episodes < 1:
        raise ValueError("episodes must be >= 1")
    was_training = isinstance(policy, nn.Module) and policy.training
    if isinstance(policy, nn.Module):
        policy.eval()
    torch.manual_seed(seed)
    device = env.device
    B = env.num_actors
    obs = env.reset(seed).to(device)
    state = policy.initial_state(B, device)
    episode_start = torch.ones(B, dtype=torch.bool, device=device)
    totals = _EpisodeAccumulator(B, device)
    position, _ = env.poses()
    steps = 0
    while len(totals.finished) < episodes:
        if steps >= max_env_steps:
            raise RuntimeError(
                f"only {len(totals.finished)} of {episodes} episodes finished in {max_env_steps} drone-steps"
            )
        acted = policy.act(obs, state, episode_start, deterministic=deterministic)
        step = env.step(clip_action(acted.action))
        done = step.terminated | step.truncated
        new_position, _ = env.poses()
        moved = (new_position - position).norm(dim=1).to(device) * (~done).float()
        zeros = torch.zeros(B, device=device)
        totals.add(step.reward.to(device), step.info.get("collision", zeros).float().to(device), moved)
        totals.close(done.to(device), step.info.get("coverage", zeros).float().to(device))
        obs, state, episode_start, position = (
            step.obs.to(device).clone(),
            acted.state,
            done.to(device),
            new_position,
        )
        steps += B
    if isinstance(policy, nn.Module):
        policy.train(was_training)
    rows = torch.tensor(totals.finished[:episodes], dtype=torch.float64)  # [E, 5]
    returns, lengths = rows[:, 0], rows[:, 1]
    return EvaluationReport(
        episodes=episodes,
        mean_return=float(returns.mean()),
        std_return=float(returns.std()) if episodes > 1 else 0.0,
        mean_length=float(lengths.mean()),
        collision_rate=float(rows[:, 2].sum() / lengths.sum()),
        coverage=float(rows[:, 4].mean()),
        path_length=float(rows[:, 3].mean()),
        deterministic=deterministic,
        seed=seed,
    )
