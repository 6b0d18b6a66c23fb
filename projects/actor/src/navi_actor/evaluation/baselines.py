"""Reference policies for evaluation and benchmarks: uniform random, a reactive heuristic and a
classical frontier explorer (the ceiling a learned policy is compared against)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import torch

if TYPE_CHECKING:
    from navi_environment.config import EnvironmentSettings


@dataclass(frozen=True)
class BaselineAct:
    """Minimal acting result: an action and an (empty) state."""

    action: torch.Tensor  # [B, 4]
    state: torch.Tensor  # [B, 0]


class RandomPolicy:
    """Uniform actions in [-1, 1] (uses the global torch RNG, seeded by the evaluator)."""

    def initial_state(self, batch_size: int, device: torch.device | str | None = None) -> torch.Tensor:
        """Stateless: [B, 0]."""
        return torch.zeros(batch_size, 0, device=device)

    def act(
        self, obs: torch.Tensor, state: torch.Tensor, episode_start: torch.Tensor, deterministic: bool = False
    ) -> BaselineAct:
        """Ignore the observation; sample uniformly."""
        del episode_start, deterministic
        action = torch.rand(obs.shape[0], 4, device=obs.device) * 2 - 1
        return BaselineAct(action, state)


class ReactiveHeuristic:
    """A memoryless obstacle avoider: fly straight while the way ahead is clear, drift towards the most
    open direction in front, and turn on the spot towards the most open direction overall when blocked.

    It is the controller one writes by hand without learning or memory, and it really flies (about
    0.23 m per step on the held-out corpus, colliding on 0-2.3 % of steps), so a learned policy beats it on
    coverage only through what it remembers and plans, not merely by moving. Two choices make that so:

    - only rays within ``band_deg`` of the horizontal count as obstacles: for level flight the floor
      and ceiling are not in the way (an earlier version averaged every elevation, saw the floor as
      near and crawled at 2 cm per step);
    - a direction's clearance is the nearest hit within ``window_deg`` either side of it, the clearance
      of a corridor rather than of one ray, so it does not aim through gaps it cannot pass.

    Depth is channel 0 of the observation, normalised by ``horizon_m`` (misses = 1); azimuth bin 0
    points along the heading and bin ``a`` lies at ``2*pi*a/Az`` (positive yaw turns towards it).

    Args:
        horizon_m: the sensor horizon the depth channel is normalised by.
        band_deg: half-height of the horizontal band of rays that count as obstacles.
        window_deg: half-width of the corridor whose nearest hit is a direction's clearance.
        stop_m: clearance ahead at or below which the drone stops moving forward.
        full_speed_m: clearance ahead from which it flies at full forward speed.
        turn_m: clearance ahead below which it turns towards the most open direction overall
            (otherwise it steers towards the most open direction within ``front_deg``).
        front_deg: half-width of the sector it steers within while the way ahead is clear.
    """

    def __init__(
        self,
        horizon_m: float = 30.0,
        *,
        band_deg: float = 30.0,
        window_deg: float = 22.5,
        stop_m: float = 1.0,
        full_speed_m: float = 4.0,
        turn_m: float = 2.5,
        front_deg: float = 60.0,
    ) -> None:
        if not 0.0 <= stop_m < full_speed_m:
            raise ValueError(f"need 0 <= stop_m < full_speed_m, got {stop_m} and {full_speed_m}")
        if horizon_m <= 0.0:
            raise ValueError(f"horizon_m must be positive, got {horizon_m}")
        self.horizon_m = horizon_m
        self.band_deg = band_deg
        self.window_deg = window_deg
        self.stop_m = stop_m
        self.full_speed_m = full_speed_m
        self.turn_m = turn_m
        self.front_deg = front_deg

    def initial_state(self, batch_size: int, device: torch.device | str | None = None) -> torch.Tensor:
        """Stateless: [B, 0]."""
        return torch.zeros(batch_size, 0, device=device)

    def clearance(self, obs: torch.Tensor) -> torch.Tensor:
        """[B, Az] metres of free flight along each azimuth, for a corridor ``window_deg`` either side."""
        depth = obs[:, 0]  # [B, Az, El]
        azimuth, elevation = depth.shape[1], depth.shape[2]
        centres = (torch.arange(elevation, device=obs.device) + 0.5) * (180.0 / elevation) - 90.0
        band = centres.abs() <= max(self.band_deg, float(centres.abs().min()))
        nearest = depth[:, :, band].amin(dim=2) * self.horizon_m  # [B, Az]
        half = min(azimuth // 2, round(self.window_deg / 360.0 * azimuth))
        wrapped = torch.cat([nearest[:, azimuth - half :], nearest, nearest[:, :half]], dim=1)
        return wrapped.unfold(1, 2 * half + 1, 1).amin(dim=2)

    def act(
        self, obs: torch.Tensor, state: torch.Tensor, episode_start: torch.Tensor, deterministic: bool = False
    ) -> BaselineAct:
        """Steer towards open space; slow down and turn as the way ahead closes."""
        del episode_start, deterministic
        clearance = self.clearance(obs)  # [B, Az]
        azimuth = clearance.shape[1]
        bins = torch.arange(azimuth, device=obs.device)
        angles = torch.remainder(bins * (2 * math.pi / azimuth) + math.pi, 2 * math.pi) - math.pi
        in_front = angles.abs() <= math.radians(self.front_deg)
        best_overall = angles[clearance.argmax(dim=1)]
        best_in_front = angles[clearance.masked_fill(~in_front, -1.0).argmax(dim=1)]
        ahead = clearance[:, 0]
        bearing = torch.where(ahead < self.turn_m, best_overall, best_in_front)
        forward = ((ahead - self.stop_m) / (self.full_speed_m - self.stop_m)).clamp(0.0, 1.0)
        yaw = (bearing / (math.pi / 4)).clamp(-1.0, 1.0)
        zeros = torch.zeros_like(forward)
        return BaselineAct(torch.stack([forward, zeros, zeros, yaw], dim=1), state)


class FrontierPolicy:
    """The classical frontier explorer (:class:`navi_environment.planning.FrontierPlanner`) as a policy.

    It maps each drone's flight slab from its depth rays and its own pose, flies a Dijkstra path to the
    best frontier (free space next to unknown), and once none is left visits the cells it has not been
    in. It senses what a learned policy senses plus its pose (``uses_pose``: the evaluator passes
    ``pose=env.poses()``); it never reads the scene. Its memory lives in the planner, so the
    returned state stays empty; ``episode_start`` rows start a new map.

    Args:
        settings: environment settings (sensor shape, horizon, physics).
        num_drones: B, the batch this policy acts for.
        **planner_kwargs: ``cell_m``, ``device`` and the planner's tunables.
    """

    uses_pose: ClassVar[bool] = True

    def __init__(self, settings: EnvironmentSettings, num_drones: int, **planner_kwargs: Any) -> None:
        from navi_environment.planning import FrontierPlanner  # numba-backed imports only when used

        self.planner = FrontierPlanner(settings, num_drones, **planner_kwargs)

    def initial_state(self, batch_size: int, device: torch.device | str | None = None) -> torch.Tensor:
        """Stateless for the caller: [B, 0]."""
        return torch.zeros(batch_size, 0, device=device)

    def act(
        self,
        obs: torch.Tensor,
        state: torch.Tensor,
        episode_start: torch.Tensor,
        deterministic: bool = False,
        pose: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> BaselineAct:
        """Plan and follow: ``pose = (position [B, 3], yaw [B])`` is required."""
        del deterministic  # the planner is deterministic either way
        if pose is None:
            raise ValueError("FrontierPolicy needs pose=(position, yaw); pass pose=env.poses()")
        self.planner.reset(episode_start.to(torch.bool))
        return BaselineAct(self.planner.act(obs, *pose), state)
