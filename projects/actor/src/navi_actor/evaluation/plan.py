"""Episode plans: the fixed list of (scene, start pose) every evaluated policy flies.

A fair comparison flies every policy through exactly the same episodes (Habitat-Lab and EnvPool
evaluate on fixed episode lists): for every evaluation scene, K start poses are drawn once from
the scene's qualified spawns with the plan's seed. The evaluator runs each planned episode to its
own end and counts it exactly once, so short episodes or fast scenes are not over-represented and
two policies are compared episode by episode (paired differences).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import torch

from navi_actor.envs.protocol import VectorEnv


class PlannedEnv(VectorEnv, Protocol):
    """A :class:`VectorEnv` whose episodes can be started at chosen scenes and poses.

    One method is optional: ``hold_scenes(count)`` (see :func:`hold_plan_scenes`).
    """

    @property
    def num_scenes(self) -> int:
        """Scenes a plan may name (corpus indices ``0 .. num_scenes-1``)."""
        ...

    @property
    def dt(self) -> float:
        """Seconds per step (mean speed = path / (steps * dt))."""
        ...

    def sample_starts(self, scene: int, count: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``count`` start poses of ``scene``: positions [count,3], yaws [count] (same seed, same poses)."""
        ...

    def start_episodes(
        self, rows: torch.Tensor, scenes: torch.Tensor, positions: torch.Tensor, yaws: torch.Tensor
    ) -> torch.Tensor:
        """Start episodes for drones ``rows`` at the given scenes and poses; returns obs [B,3,Az,El]."""
        ...

    def reachable_cells(self, scene: int) -> int | None:
        """Visit cells of ``scene`` a drone can reach (coverage share denominator), or None if unknown."""
        ...


@dataclass(frozen=True)
class EpisodePlan:
    """Planned episodes, scene by scene (K consecutive entries per scene).

    Attributes:
        scenes: [N] long corpus scene index of each episode.
        positions: [N,3] start positions (metres). yaws: [N] start headings (rad).
        seed: the seed the starts were drawn with.
    """

    scenes: torch.Tensor
    positions: torch.Tensor
    yaws: torch.Tensor
    seed: int

    @property
    def size(self) -> int:
        """N, the number of planned episodes."""
        return int(self.scenes.shape[0])

    def same_starts(self, other: EpisodePlan) -> bool:
        """True when ``other`` plans exactly the same (scene, start pose) list."""
        return (
            torch.equal(self.scenes, other.scenes)
            and torch.equal(self.positions, other.positions)
            and torch.equal(self.yaws, other.yaws)
        )


def make_plan(
    env: PlannedEnv, episodes_per_scene: int, seed: int, scenes: Sequence[int] | None = None
) -> EpisodePlan:
    """Draw ``episodes_per_scene`` start poses for every scene of ``env`` (or of ``scenes``).

    Args:
        env: the environment (its qualified spawns are the candidates).
        episodes_per_scene: K >= 1.
        seed: plan seed; scene ``s`` draws its starts with ``seed * 1_000_003 + s`` so adding a
            scene to the list leaves the other scenes' starts unchanged.
        scenes: corpus indices to plan (default: all).

    Returns:
        The :class:`EpisodePlan`.
    """
    if episodes_per_scene < 1:
        raise ValueError(f"episodes per scene must be >= 1, got {episodes_per_scene}")
    chosen = list(range(env.num_scenes)) if scenes is None else [int(s) for s in scenes]
    if not chosen:
        raise ValueError("an episode plan needs at least one scene")
    hold_plan_scenes(env, len(set(chosen)))
    positions, yaws = [], []
    for scene in chosen:
        position, yaw = env.sample_starts(scene, episodes_per_scene, seed * 1_000_003 + scene)
        positions.append(position.float().cpu())
        yaws.append(yaw.float().cpu())
    scene_ids = torch.tensor(chosen, dtype=torch.int64).repeat_interleave(episodes_per_scene)
    return EpisodePlan(scene_ids, torch.cat(positions), torch.cat(yaws), seed)


def hold_plan_scenes(env: PlannedEnv, count: int) -> None:
    """Ask ``env`` to keep the ``count`` scenes of a plan loaded, where it can (``hold_scenes``).

    Why: every policy flies the whole plan, scene after scene; an environment whose scene cache is
    smaller than the plan would evict each scene before the next policy's turn and load it again
    (on the default corpus that was 29 % of a checkpoint selection's time).
    """
    hold = getattr(env, "hold_scenes", None)
    if hold is not None:
        hold(int(count))
