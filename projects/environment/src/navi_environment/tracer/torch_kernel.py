"""Batched sphere tracing in pure torch: the CUDA path (also runs, slower, on CPU).

Same atlas, same rules and same order of operations as :mod:`navi_environment.tracer.scalar`,
one march iteration for all rays at a time with masks instead of per-ray loops. Why torch and not
numba.cuda/Triton: it runs (and is tested for equality with the numba kernel) on a machine without
a GPU, and on CUDA every iteration is a handful of fused-elementwise/gather launches.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

from navi_environment.runtime.scene import BRICK_QUANTA

_CORNERS = (0, 1, 10, 11, 100, 101, 110, 111)  # brick-local offsets of the 8 trilinear samples
_NO_EXIT = 1.0e30  # inverse direction of an axis a ray does not move along (as in numba)
_DONE_CHECK_EVERY = 8  # iterations between host syncs that ask "are all rays finished?"


def _cells(u: torch.Tensor, C: torch.Tensor, coff: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """[N,3] voxel coordinates -> (coarse cell index [N], coarse coords [N,3])."""
    c = u.long() >> 3
    return coff + (c[:, 0] * C + c[:, 1]) * C + c[:, 2], c


def _cell_exit(u: torch.Tensor, inv_dirs: torch.Tensor, exit_face: torch.Tensor) -> torch.Tensor:
    """Ray length in voxels [N] from ``u`` [N,3] to the exit face of its 8^3 coarse cell.

    Cells without a brick have one safe bound for all their points, faces included, so the march
    may run to the exit face and then step by that bound (the numba kernel's empty-space skip).
    """
    corner = torch.floor(u / 8.0) * 8.0
    return ((corner + exit_face - u) * inv_dirs).amin(dim=1).clamp(min=0.0)


def corner_offsets(device: torch.device) -> torch.Tensor:
    """[8] long brick-local offsets of the trilinear samples, made once per march (a host copy)."""
    return torch.tensor(_CORNERS, device=device, dtype=torch.long)


def distance_at(
    u: torch.Tensor,
    C: torch.Tensor,
    coff: torch.Tensor,
    voxel: torch.Tensor,
    atlas: dict[str, torch.Tensor],
    *,
    corners: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Distance (metres) at voxel coordinates ``u`` [N,3] inside the cube, voxel sizes ``voxel`` [N].

    ``corners``: :func:`corner_offsets` of ``u``'s device (made here when not given; a march passes
    its own so that no iteration copies from the host).

    Returns ``(d [N], brick [N])``; brick -1 means ``d`` is the coarse cell's safe bound.
    """
    cell, c = _cells(u, C, coff)
    brick = atlas["brick_index"][cell]
    f = u - 0.5
    f0 = torch.floor(f)
    w = f - f0
    local = f0.long() - (c << 3) + 1
    base = brick.clamp(min=0) * 1000 + local[:, 0] * 100 + local[:, 1] * 10 + local[:, 2]
    if corners is None:
        corners = corner_offsets(u.device)
    v = atlas["bricks_sdf"][base[:, None] + corners[None, :]].to(u.dtype)  # [N, 8] int16 quanta
    c00 = v[:, 0] + (v[:, 1] - v[:, 0]) * w[:, 2]
    c01 = v[:, 2] + (v[:, 3] - v[:, 2]) * w[:, 2]
    c10 = v[:, 4] + (v[:, 5] - v[:, 4]) * w[:, 2]
    c11 = v[:, 6] + (v[:, 7] - v[:, 6]) * w[:, 2]
    c0 = c00 + (c01 - c00) * w[:, 1]
    c1 = c10 + (c11 - c10) * w[:, 1]
    interp = (c0 + (c1 - c0) * w[:, 0]) * (voxel / BRICK_QUANTA)
    return torch.where(brick < 0, atlas["coarse_dist"][cell], interp), brick


def semantic_at(
    u: torch.Tensor, C: torch.Tensor, coff: torch.Tensor, atlas: dict[str, torch.Tensor]
) -> torch.Tensor:
    """Semantic id [N] int32 of the voxel containing each point ``u`` [N,3]."""
    cell, c = _cells(u, C, coff)
    brick = atlas["brick_index"][cell]
    local = u.long() - (c << 3) + 1
    index = brick.clamp(min=0) * 1000 + local[:, 0] * 100 + local[:, 1] * 10 + local[:, 2]
    return torch.where(brick < 0, atlas["coarse_sem"][cell], atlas["bricks_sem"][index])


def march_iteration(
    state: tuple[torch.Tensor, ...], ray: dict[str, torch.Tensor], atlas: dict[str, torch.Tensor]
) -> tuple[torch.Tensor, ...]:
    """One march iteration of every ray: ``state`` -> the next state (functional, no in-place).

    ``state`` is ``(t, t_prev, d_prev, t_out, hit, done)``; ``ray`` holds the rays (origins, dirs,
    t_max, offsets) and the per-ray constants that :func:`march_rays` derives once (scene origin,
    voxel size, resolution, coarse grid, rules).
    Why a function of its own: on CUDA each iteration is ~60 small launches, and
    ``tracer.torch_compile`` fuses this function (and only this one) with ``torch.compile``.
    """
    t, t_prev, d_prev, t_out, hit, done = state
    origins, dirs, t_max, upper, voxel = ray["origins"], ray["dirs"], ray["t_max"], ray["upper"], ray["voxel"]
    u = (origins + t[:, None] * dirs - ray["bmin"]) * ray["inv"][:, None]
    inside = ((u >= 0.0) & (u < upper)).all(dim=1)
    done = done | ~inside
    u_safe = torch.minimum(u.clamp(min=0.0), upper - 1e-3)
    d, brick = distance_at(u_safe, ray["C"], ray["coff"], voxel, atlas, corners=ray["corners"])
    d = d - ray["offsets"]
    at_surface = ~done & (d < ray["eps"])
    crossed = at_surface & (d < 0.0) & (d_prev > 0.0)
    t_hit = torch.where(crossed, t_prev + (t - t_prev) * d_prev / torch.where(crossed, d_prev - d, 1.0), t)
    accepted = at_surface & (t_hit <= t_max)
    t_out = torch.where(accepted, t_hit, t_out)
    hit = hit | accepted
    done = done | at_surface
    step = torch.where(brick < 0, d + _cell_exit(u_safe, ray["inv_dirs"], ray["exit_face"]) * voxel, d)
    step = torch.where((brick < 0) | (d > ray["min_step"]), step, ray["min_step"])
    active = ~done
    t_prev = torch.where(active, t, t_prev)
    d_prev = torch.where(active, d, d_prev)
    t = torch.where(active, t + step, t)
    done = done | (t > t_max)
    return t, t_prev, d_prev, t_out, hit, done


@functools.cache
def compiled_march_iteration() -> Callable[..., tuple[torch.Tensor, ...]]:
    """:func:`march_iteration` through ``torch.compile`` (built once per process, on first use)."""
    return torch.compile(march_iteration, dynamic=True)


def march_rays(
    origins: torch.Tensor,
    dirs: torch.Tensor,
    t_max: torch.Tensor,
    offsets: torch.Tensor,
    scene_ids: torch.Tensor,
    *,
    atlas: dict[str, torch.Tensor],
    eps_vox: float,
    min_step_vox: float,
    max_steps: int,
    compiled: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """March N rays; the torch twin of :func:`navi_environment.tracer.scalar.march_ray`.

    Args:
        origins: [N,3] f32. dirs: [N,3] f32 unit. t_max: [N] f32. offsets: [N] f32 surface inflation.
        scene_ids: [N] long atlas ids. atlas: :meth:`SceneAtlas.torch_arrays`.
        eps_vox, min_step_vox, max_steps: tracer rules (voxels of each ray's scene).
        compiled: run each iteration through :func:`compiled_march_iteration` (same arithmetic).

    Returns:
        ``t [N] f32`` (``t_max`` on a miss), ``hit [N] bool``, ``semantic [N] int32`` (0 on a miss).
    """
    sf = atlas["scene_f"][scene_ids]
    si = atlas["scene_i"][scene_ids]
    voxel = sf[:, 3]
    ray = {
        "origins": origins, "dirs": dirs, "t_max": t_max, "offsets": offsets,
        "bmin": sf[:, :3], "voxel": voxel, "inv": 1.0 / voxel, "upper": si[:, 0, None].to(origins.dtype),
        "C": si[:, 1], "coff": si[:, 2], "eps": eps_vox * voxel, "min_step": min_step_vox * voxel,
        "inv_dirs": torch.where(dirs != 0.0, 1.0 / torch.where(dirs != 0.0, dirs, 1.0), _NO_EXIT),
        "exit_face": torch.where(dirs >= 0.0, 8.0, 0.0), "corners": corner_offsets(origins.device),
    }  # fmt: skip
    n = origins.shape[0]
    t = torch.zeros(n, device=origins.device, dtype=origins.dtype)
    hit = torch.zeros(n, device=origins.device, dtype=torch.bool)
    state: tuple[torch.Tensor, ...] = (
        t,
        torch.zeros_like(t),
        torch.full_like(t, -1.0),
        t_max.clone(),
        hit,
        torch.zeros_like(hit),
    )
    iteration = compiled_march_iteration() if compiled else march_iteration
    for it in range(max_steps):
        state = iteration(state, ray, atlas)
        if (it + 1) % _DONE_CHECK_EVERY == 0 and bool(state[5].all()):
            break
    t, _, d_prev, t_out, hit, done = state
    creeping = ~done & (d_prev < voxel)  # out of iterations next to a surface: a hit, as in numba
    t_out = torch.where(creeping, t, t_out)
    hit = hit | creeping
    upper = ray["upper"]
    u_end = (origins + t_out[:, None] * dirs - ray["bmin"]) * ray["inv"][:, None]
    u_end = torch.minimum(u_end.clamp(min=0.0), upper - 1e-3)
    semantic = torch.where(hit, semantic_at(u_end, ray["C"], ray["coff"], atlas), 0)
    return t_out, hit, semantic


def query_points(
    points: torch.Tensor, scene_ids: torch.Tensor, atlas: dict[str, torch.Tensor]
) -> torch.Tensor:
    """Distance [N] at points [N,3] (large positive outside the scene cube), as the numba kernel."""
    sf = atlas["scene_f"][scene_ids]
    si = atlas["scene_i"][scene_ids]
    u = (points - sf[:, :3]) / sf[:, 3:4]
    upper = si[:, 0:1].to(points.dtype)
    inside = ((u >= 0.0) & (u < upper)).all(dim=1)
    d, _ = distance_at(torch.minimum(u.clamp(min=0.0), upper - 1e-3), si[:, 1], si[:, 2], sf[:, 3], atlas)
    return torch.where(inside, d, torch.full_like(d, 1.0e9))
