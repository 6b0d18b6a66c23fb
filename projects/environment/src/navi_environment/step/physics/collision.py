"""Collision response: sweep the drone's sphere along its displacement, stop at the surface, slide.

The sweep is a ray cast against the surface inflated by the drone radius (same hit rules as the
sensor), so a drone can never tunnel through a wall the sensor sees. The sweep's surface sits a
thin ``skin`` inside the drone's current clearance, so a drone resting against a wall can always
move along it or away from it. A move that would end closer than ``radius - 2*skin`` and closer
than before is refused (the drone stays put), so pushing into a wall never creeps through it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch


class CollisionTracer(Protocol):
    """What collision needs from :class:`navi_environment.tracer.Tracer`."""

    def cast(
        self, origins: torch.Tensor, dirs: torch.Tensor, t_max: torch.Tensor, offsets: torch.Tensor,
        scene_ids: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]: ...  # fmt: skip

    def query(self, points: torch.Tensor, scene_ids: torch.Tensor) -> torch.Tensor: ...


@dataclass(frozen=True)
class CollisionResult:
    """Outcome of one collision-checked move.

    Attributes:
        position: [B,3] where the drone ends.
        collided: [B] bool, the sweep touched a surface.
        impact_speed: [B] m/s speed into the surface (along its normal) at contact, 0 if none.
        clearance: [B] distance from ``position`` to the nearest surface (sdf, metres).
    """

    position: torch.Tensor
    collided: torch.Tensor
    impact_speed: torch.Tensor
    clearance: torch.Tensor


_AXES = torch.tensor(
    [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], dtype=torch.float32
)


def surface_normals(
    tracer: CollisionTracer, points: torch.Tensor, scene_ids: torch.Tensor, h: float
) -> torch.Tensor:
    """Unit outward normals [B,3] from central differences of the distance field (step ``h``)."""
    B = points.shape[0]
    axes = _AXES.to(points.device)
    probes = (points[:, None, :] + h * axes[None]).reshape(-1, 3)  # [B*6, 3]
    d = tracer.query(probes, scene_ids.repeat_interleave(6)).view(B, 3, 2)
    grad = d[:, :, 0] - d[:, :, 1]
    return grad / grad.norm(dim=1, keepdim=True).clamp(min=1e-9)


def move_with_collisions(
    tracer: CollisionTracer,
    position: torch.Tensor,
    displacement: torch.Tensor,
    clearance: torch.Tensor,
    scene_ids: torch.Tensor,
    *,
    radius: float,
    dt: float,
    normal_step: float,
    skin: float,
) -> CollisionResult:
    """Move drones by ``displacement``, stopping (then sliding) at surfaces.

    Args:
        tracer: casts and queries the scene atlas.
        position: [B,3] start positions. displacement: [B,3] intended moves (metres).
        clearance: [B] current distance to the nearest surface.
        scene_ids: [B] int32 atlas ids.
        radius: drone radius, metres. dt: step seconds (for the impact speed).
        normal_step: finite-difference step for surface normals (about one voxel).
        skin: metres kept between sweep starts and the inflated surface (a few hit epsilons).

    Returns:
        The :class:`CollisionResult`.
    """
    length = displacement.norm(dim=1)
    direction = displacement / length.clamp(min=1e-9)[:, None]
    offset = (torch.clamp(clearance, max=radius) - skin).clamp(min=0.0)
    t, hit = tracer.cast(position, direction, length, offset, scene_ids)
    collided = hit & (length > 0)
    contact = position + direction * t[:, None]
    normal = surface_normals(tracer, contact, scene_ids, normal_step)
    velocity = displacement / dt
    into = -(velocity * normal).sum(dim=1)
    impact_speed = torch.where(collided, into.clamp(min=0.0), torch.zeros_like(into))
    remaining = displacement - direction * t[:, None]
    along = (remaining * normal).sum(dim=1, keepdim=True)
    tangential = remaining - along.clamp(max=0.0) * normal  # drop only the part going into the wall
    # The slide is swept too: an endpoint check alone could tunnel through a thin wall.
    slide_length = torch.where(collided, tangential.norm(dim=1), torch.zeros_like(length))
    slide_direction = tangential / tangential.norm(dim=1, keepdim=True).clamp(min=1e-9)
    t_slide, _ = tracer.cast(
        contact, slide_direction, slide_length, (offset - skin).clamp(min=0.0), scene_ids
    )
    final = contact + slide_direction * t_slide[:, None]
    final_clearance = tracer.query(final, scene_ids)
    refused = (final_clearance < radius - 2.0 * skin) & (final_clearance < clearance)
    final = torch.where(refused[:, None], position, final)
    final_clearance = torch.where(refused, clearance, final_clearance)
    return CollisionResult(
        position=final, collided=collided, impact_speed=impact_speed, clearance=final_clearance
    )
