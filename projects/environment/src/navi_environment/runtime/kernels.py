"""numba CPU kernels: sphere tracing, segment casts and point queries on a packed scene atlas.

Three parallel kernels share two scalar helpers (:func:`_distance_at`, :func:`march_ray`), so the
sensor, the collision sweep and the spawn/clearance queries all obey the same hit rules:

* Step by the sampled distance, never less than ``min_step`` (<= half a voxel) once near a
  surface. A wall one voxel thick has a negative interpolated band at least one voxel wide along
  any ray, so a half-voxel step always lands inside it: rays never see through 1-voxel walls.
* A sample closer than ``eps`` is a hit at that distance; a sample past the surface (negative)
  is a hit at the linearly interpolated zero crossing between it and the previous sample.
* Leaving the scene cube or passing ``t_max`` is a miss.

All scalar work is float32-friendly; ``fastmath`` only allows reassociation and FMA contraction,
which moves results by rounding, not by rules (NaN/inf never occur: inputs are finite).

Atlas arrays (see :mod:`navi_environment.runtime.atlas`): ``scene_f [S,4]`` (bmin xyz, voxel),
``scene_i [S,3]`` (resolution, coarse cells per axis, coarse offset), ``coarse_dist``,
``coarse_sem``, ``brick_index`` (already offset into the packed brick pool), ``bricks_sdf``,
``bricks_sem`` (flattened bricks of 10^3 samples).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from navi_environment.runtime.scene import BRICK_QUANTA

# numba kernels take positional arguments only (no keyword-only parameters in nopython mode), hence
# the PLR0917 exemptions below.
_FAST = {"nsz", "arcp", "contract", "afn", "reassoc"}  # no 'nnan'/'ninf': keep comparisons honest
_INV_QUANTA = 1.0 / BRICK_QUANTA
_OUTSIDE = 1.0e9  # distance reported for points outside every scene cube (free, no surface known)


@njit(cache=True, fastmath=_FAST, nogil=True)
def _distance_at(ux, uy, uz, C, coff, coarse_dist, brick_index, bricks_sdf, voxel):  # type: ignore[no-untyped-def]  # noqa: PLR0917
    """Distance (metres) at voxel coordinates ``u`` (inside the cube) and the coarse cell index.

    Returns ``(distance, cell, brick)``; ``brick`` is -1 when the cell has no brick, and then the
    distance is the cell's safe bound rather than an interpolated sample.
    """
    ix = int(ux)
    iy = int(uy)
    iz = int(uz)
    cx = ix >> 3
    cy = iy >> 3
    cz = iz >> 3
    cell = coff + (cx * C + cy) * C + cz
    b = brick_index[cell]
    if b < 0:
        return coarse_dist[cell], cell, b
    fx = ux - 0.5
    fy = uy - 0.5
    fz = uz - 0.5
    x0 = math.floor(fx)
    y0 = math.floor(fy)
    z0 = math.floor(fz)
    wx = fx - x0
    wy = fy - y0
    wz = fz - z0
    # local sample index: voxel index minus (8c - 1), in [0, 8]
    base = (
        b * 1000
        + (int(x0) - (cx << 3) + 1) * 100
        + (int(y0) - (cy << 3) + 1) * 10
        + (int(z0) - (cz << 3) + 1)
    )
    v000 = float(bricks_sdf[base])
    v010 = float(bricks_sdf[base + 10])
    v100 = float(bricks_sdf[base + 100])
    v110 = float(bricks_sdf[base + 110])
    c00 = v000 + (float(bricks_sdf[base + 1]) - v000) * wz
    c01 = v010 + (float(bricks_sdf[base + 11]) - v010) * wz
    c10 = v100 + (float(bricks_sdf[base + 101]) - v100) * wz
    c11 = v110 + (float(bricks_sdf[base + 111]) - v110) * wz
    c0 = c00 + (c01 - c00) * wy
    c1 = c10 + (c11 - c10) * wy
    return (c0 + (c1 - c0) * wx) * (voxel * _INV_QUANTA), cell, b


@njit(cache=True, fastmath=_FAST, nogil=True)
def _semantic_at(ux, uy, uz, C, coff, coarse_sem, brick_index, bricks_sem):  # type: ignore[no-untyped-def]  # noqa: PLR0917
    """Semantic id of the voxel containing ``u`` (brick sample, else the coarse probe's id)."""
    ix = int(ux)
    iy = int(uy)
    iz = int(uz)
    cx = ix >> 3
    cy = iy >> 3
    cz = iz >> 3
    cell = coff + (cx * C + cy) * C + cz
    b = brick_index[cell]
    if b < 0:
        return coarse_sem[cell]
    return bricks_sem[
        b * 1000 + (ix - (cx << 3) + 1) * 100 + (iy - (cy << 3) + 1) * 10 + (iz - (cz << 3) + 1)
    ]


PACKET = 16  # rays marched together per thread: independent rays overlap their memory latency


@njit(cache=True, fastmath=_FAST, nogil=True)
def march_packet(  # type: ignore[no-untyped-def]  # noqa: PLR0917, PLR0915
    n, org, dirs, t_max, offset, sid,
    scene_f, scene_i, coarse_dist, coarse_sem, brick_index, bricks_sdf, bricks_sem,
    eps_vox, min_step_vox, max_steps, t_out, hit_out, sem_out, work,
):  # fmt: skip
    """March lanes ``0..n-1`` of a packet, one step per lane per round.

    Why packets: one march step is a chain of dependent loads and float ops; interleaving up to
    ``PACKET`` independent rays lets the CPU overlap those chains (2-3x faster than ray by ray).

    Args:
        n: active lanes. org, dirs: [PACKET,3] origins and unit directions. t_max, offset: [PACKET]
            range and surface inflation (metres). sid: [PACKET] atlas scene ids.
        t_out, hit_out, sem_out: [PACKET] results: distance (``t_max`` on a miss), hit, semantic.
        work: [4,PACKET] float scratch (reused across packets: no allocation per packet).
    """
    t = work[0]
    t_prev = work[1]
    d_prev = work[2]
    state = work[3]  # 0 marching, 1 hit, 2 miss
    for lane in range(n):
        t[lane] = 0.0
        t_prev[lane] = 0.0
        d_prev[lane] = -1.0
        state[lane] = 0.0
        t_out[lane] = t_max[lane]
        hit_out[lane] = False
        sem_out[lane] = 0
    remaining = n
    for _ in range(max_steps):
        for lane in range(n):
            if state[lane] != 0:
                continue
            s = sid[lane]
            voxel = scene_f[s, 3]
            inv = 1.0 / voxel
            res = scene_i[s, 0]
            tl = t[lane]
            ux = (org[lane, 0] + tl * dirs[lane, 0] - scene_f[s, 0]) * inv
            uy = (org[lane, 1] + tl * dirs[lane, 1] - scene_f[s, 1]) * inv
            uz = (org[lane, 2] + tl * dirs[lane, 2] - scene_f[s, 2]) * inv
            if not (ux >= 0.0 and uy >= 0.0 and uz >= 0.0 and ux < res and uy < res and uz < res):
                state[lane] = 2
                remaining -= 1
                continue
            d, _cell, b = _distance_at(
                ux, uy, uz, scene_i[s, 1], scene_i[s, 2], coarse_dist, brick_index, bricks_sdf, voxel
            )
            d -= offset[lane]
            if d < eps_vox * voxel:
                dp = d_prev[lane]
                if d < 0.0 and dp > 0.0:  # crossed the surface: interpolate the zero crossing
                    tl = t_prev[lane] + (tl - t_prev[lane]) * dp / (dp - d)
                state[lane] = 1 if tl <= t_max[lane] else 2
                t[lane] = tl
                remaining -= 1
                continue
            min_step = min_step_vox * voxel
            t_prev[lane] = tl
            d_prev[lane] = d
            tl += d if (b < 0 or d > min_step) else min_step
            t[lane] = tl
            if tl > t_max[lane]:
                state[lane] = 2
                remaining -= 1
        if remaining == 0:
            break
    for lane in range(n):
        s = sid[lane]
        voxel = scene_f[s, 3]
        if state[lane] == 0 and d_prev[lane] < voxel:
            state[lane] = 1  # out of iterations while creeping along a surface: a hit
        if state[lane] != 1:
            continue
        tl = t[lane]
        res = scene_i[s, 0]
        ux = min(max((org[lane, 0] + tl * dirs[lane, 0] - scene_f[s, 0]) / voxel, 0.0), res - 1e-3)
        uy = min(max((org[lane, 1] + tl * dirs[lane, 1] - scene_f[s, 1]) / voxel, 0.0), res - 1e-3)
        uz = min(max((org[lane, 2] + tl * dirs[lane, 2] - scene_f[s, 2]) / voxel, 0.0), res - 1e-3)
        t_out[lane] = tl
        hit_out[lane] = True
        sem_out[lane] = _semantic_at(
            ux, uy, uz, scene_i[s, 1], scene_i[s, 2], coarse_sem, brick_index, bricks_sem
        )


@njit(parallel=True, cache=True, fastmath=_FAST)
def trace_sensor(  # type: ignore[no-untyped-def]  # noqa: PLR0917
    origins, yaw, scene_ids, dirs_local, horizon, out, out_copy, stats,
    scene_f, scene_i, coarse_dist, coarse_sem, brick_index, bricks_sdf, bricks_sem,
    eps_vox, min_step_vox, max_steps,
):  # fmt: skip
    """Trace every drone's spherical sensor into ``out`` (and ``out_copy``).

    Args:
        origins: [B,3] f32 drone positions. yaw: [B] f32 heading (rad, about +z).
        scene_ids: [B] i32 atlas scene of each drone. dirs_local: [R,3] f32 unit rays, drone frame.
        horizon: sensor range, metres.
        out: [B,3,R] f32, written: depth/horizon (1 on a miss), semantic id, valid (0/1).
        out_copy: [B,3,R] f32 second destination written with the same values (the backend's
            ``final_obs``; pass ``out`` again for none). Writing twice here is cheaper than a copy.
        stats: [B,P,2] f32, P = ceil(R / PACKET): per packet, the nearest normalised depth and
            the number of hits. Reducing these [B,P] partials instead of the full [B,R]
            observation keeps per-step torch reductions tiny (no thread-pool wake-ups).
    """
    B = origins.shape[0]
    R = dirs_local.shape[0]
    packets_per_drone = (R + PACKET - 1) // PACKET
    inv_h = 1.0 / horizon
    jobs = B * packets_per_drone
    chunks = min(jobs, 256)  # scratch is allocated per chunk, not per packet
    per_chunk = (jobs + chunks - 1) // chunks
    for chunk in prange(chunks):
        org = np.empty((PACKET, 3))
        dirs = np.empty((PACKET, 3))
        t_max = np.full(PACKET, horizon)
        offset = np.zeros(PACKET)
        sid = np.zeros(PACKET, dtype=np.int64)
        t_out = np.empty(PACKET)
        hit_out = np.empty(PACKET, dtype=np.bool_)
        sem_out = np.empty(PACKET, dtype=np.uint16)
        work = np.empty((4, PACKET))
        for job in range(chunk * per_chunk, min(jobs, (chunk + 1) * per_chunk)):
            _sensor_packet(
                job, packets_per_drone, R, origins, yaw, scene_ids, dirs_local, inv_h, out, out_copy, stats,
                scene_f, scene_i, coarse_dist, coarse_sem, brick_index, bricks_sdf, bricks_sem,
                eps_vox, min_step_vox, max_steps,
                org, dirs, t_max, offset, sid, t_out, hit_out, sem_out, work,
            )  # fmt: skip


@njit(cache=True, fastmath=_FAST, nogil=True)
def _sensor_packet(  # type: ignore[no-untyped-def]  # noqa: PLR0917
    job, packets_per_drone, R, origins, yaw, scene_ids, dirs_local, inv_h, out, out_copy, stats,
    scene_f, scene_i, coarse_dist, coarse_sem, brick_index, bricks_sdf, bricks_sem,
    eps_vox, min_step_vox, max_steps, org, dirs, t_max, offset, sid, t_out, hit_out, sem_out, work,
):  # fmt: skip
    """One sensor packet: 16 consecutive rays of one drone, written into ``out``/``out_copy``/``stats``."""
    b = job // packets_per_drone
    first = (job - b * packets_per_drone) * PACKET
    n = min(PACKET, R - first)
    for lane in range(PACKET):
        sid[lane] = scene_ids[b]
    c = math.cos(yaw[b])
    s = math.sin(yaw[b])
    for lane in range(n):
        lx = dirs_local[first + lane, 0]
        ly = dirs_local[first + lane, 1]
        org[lane, 0] = origins[b, 0]
        org[lane, 1] = origins[b, 1]
        org[lane, 2] = origins[b, 2]
        dirs[lane, 0] = c * lx - s * ly
        dirs[lane, 1] = s * lx + c * ly
        dirs[lane, 2] = dirs_local[first + lane, 2]
    march_packet(
        n, org, dirs, t_max, offset, sid,
        scene_f, scene_i, coarse_dist, coarse_sem, brick_index, bricks_sdf, bricks_sem,
        eps_vox, min_step_vox, max_steps, t_out, hit_out, sem_out, work,
    )  # fmt: skip
    nearest = 1.0
    hits = 0
    for lane in range(n):
        r = first + lane
        depth, sem, valid = 1.0, 0.0, 0.0
        if hit_out[lane]:
            depth = min(t_out[lane] * inv_h, 1.0)
            sem = float(sem_out[lane])
            valid = 1.0
            hits += 1
        nearest = min(nearest, depth)
        out[b, 0, r] = depth
        out[b, 1, r] = sem
        out[b, 2, r] = valid
        out_copy[b, 0, r] = depth
        out_copy[b, 1, r] = sem
        out_copy[b, 2, r] = valid
    stats[b, job - b * packets_per_drone, 0] = nearest
    stats[b, job - b * packets_per_drone, 1] = hits


@njit(cache=True, fastmath=_FAST, nogil=True)
def cast_rays(  # type: ignore[no-untyped-def]  # noqa: PLR0917
    origins, dirs, t_max, offsets, scene_ids, out_t, out_hit, out_sem,
    scene_f, scene_i, coarse_dist, coarse_sem, brick_index, bricks_sdf, bricks_sem,
    eps_vox, min_step_vox, max_steps,
):  # fmt: skip
    """Cast N independent rays (unit ``dirs``) against surfaces inflated by ``offsets``.

    Serial on purpose: its callers (collision sweeps of B drones, spawn probes) cast few rays, and
    waking a thread pool costs more than the work, badly so on a loaded 2-core machine.
    Writes ``out_t [N]`` (``t_max`` on a miss), ``out_hit [N]`` bool and ``out_sem [N]`` u16.
    """
    N = origins.shape[0]
    org = np.zeros((PACKET, 3))
    dvec = np.zeros((PACKET, 3))
    tm = np.zeros(PACKET)
    off = np.zeros(PACKET)
    sid = np.zeros(PACKET, dtype=np.int64)
    t_out = np.empty(PACKET)
    hit_out = np.empty(PACKET, dtype=np.bool_)
    sem_out = np.empty(PACKET, dtype=np.uint16)
    work = np.empty((4, PACKET))
    for job in range((N + PACKET - 1) // PACKET):
        first = job * PACKET
        n = min(PACKET, N - first)
        for lane in range(n):
            for k in range(3):
                org[lane, k] = origins[first + lane, k]
                dvec[lane, k] = dirs[first + lane, k]
            tm[lane] = t_max[first + lane]
            off[lane] = offsets[first + lane]
            sid[lane] = scene_ids[first + lane]
        march_packet(
            n, org, dvec, tm, off, sid,
            scene_f, scene_i, coarse_dist, coarse_sem, brick_index, bricks_sdf, bricks_sem,
            eps_vox, min_step_vox, max_steps, t_out, hit_out, sem_out, work,
        )  # fmt: skip
        for lane in range(n):
            out_t[first + lane] = t_out[lane]
            out_hit[first + lane] = hit_out[lane]
            out_sem[first + lane] = sem_out[lane]


@njit(cache=True, fastmath=_FAST, nogil=True)
def query_points(  # type: ignore[no-untyped-def]  # noqa: PLR0917
    points, scene_ids, out_sdf, scene_f, scene_i, coarse_dist, brick_index, bricks_sdf
):
    """Distance at N points (``out_sdf [N]``): interpolated in bricks, the safe bound elsewhere.

    Points outside their scene's cube get a large positive value (no surface known there).
    Serial for the same reason as :func:`cast_rays`.
    """
    for n in range(points.shape[0]):
        s = scene_ids[n]
        voxel = scene_f[s, 3]
        res = scene_i[s, 0]
        ux = (points[n, 0] - scene_f[s, 0]) / voxel
        uy = (points[n, 1] - scene_f[s, 1]) / voxel
        uz = (points[n, 2] - scene_f[s, 2]) / voxel
        if ux >= 0.0 and uy >= 0.0 and uz >= 0.0 and ux < res and uy < res and uz < res:
            d, _cell, _b = _distance_at(
                ux, uy, uz, scene_i[s, 1], scene_i[s, 2], coarse_dist, brick_index, bricks_sdf, voxel
            )
            out_sdf[n] = d
        else:
            out_sdf[n] = _OUTSIDE
