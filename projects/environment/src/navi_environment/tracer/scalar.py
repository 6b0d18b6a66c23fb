"""numba CPU kernels: sphere tracing, segment casts and point queries on a packed scene atlas.

The :class:`~navi_environment.tracer.Tracer` traces the sensor with the SIMD wavefront
kernel of :mod:`navi_environment.tracer.wavefront` (same rules, ~2x faster); the scalar
:func:`trace_sensor` here is its reference (equality tests, the benchmark's in-run baseline).

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


@njit(cache=True, fastmath=_FAST, nogil=True, boundscheck=False, error_model="numpy")
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


@njit(cache=True, fastmath=_FAST, nogil=True, boundscheck=False, error_model="numpy", forceinline=True)
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
_ROWS = 18  # float scratch rows per packet lane, see :func:`_march_jobs`
_NO_EXIT = 1.0e30  # inverse direction component of an axis the ray does not move along


@njit(cache=True, fastmath=_FAST, nogil=True, boundscheck=False, error_model="numpy", forceinline=True)
def _sample_vox(ux, uy, uz, C, coff, coarse_dist, brick_index, bricks_sdf, inv_voxel):  # type: ignore[no-untyped-def]  # noqa: PLR0917
    """Distance in voxels at voxel coordinates ``u`` (inside the cube) and the cell's brick (-1: none).

    Brick cells interpolate their 8 neighbouring int16 samples; other cells return their safe bound.
    ``int(x + 0.5) - 1`` is ``floor(x - 0.5)`` for the non-negative ``x`` seen here (no libm call).
    """
    cx = int(ux) >> 3
    cy = int(uy) >> 3
    cz = int(uz) >> 3
    cell = coff + (cx * C + cy) * C + cz
    b = brick_index[cell]
    if b < 0:
        return coarse_dist[cell] * inv_voxel, b
    xi = int(ux + 0.5)
    yi = int(uy + 0.5)
    zi = int(uz + 0.5)
    wx = ux + 0.5 - xi
    wy = uy + 0.5 - yi
    wz = uz + 0.5 - zi
    # local sample index: voxel index minus (8c - 1), in [0, 8]
    base = b * 1000 + (xi - (cx << 3)) * 100 + (yi - (cy << 3)) * 10 + (zi - (cz << 3))
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
    return (c0 + (c1 - c0) * wx) * _INV_QUANTA, b


@njit(cache=True, fastmath=_FAST, nogil=True, boundscheck=False, error_model="numpy", forceinline=True)
def _cell_exit(ux, uy, uz, ix, iy, iz, fx, fy, fz):  # type: ignore[no-untyped-def]  # noqa: PLR0917
    """Ray length (voxels) from ``u`` to where the ray leaves its 8^3 coarse cell.

    ``i*`` are the inverse direction components, ``f*`` the exit face offsets (8 forward, 0 back).
    Why: a cell without a brick has one safe bound for all its points, its faces included, so a
    ray may run to the exit face and then still step by that bound (empty-space skipping).
    """
    ex = (float(int(ux) & ~7) + fx - ux) * ix
    ey = (float(int(uy) & ~7) + fy - uy) * iy
    ez = (float(int(uz) & ~7) + fz - uz) * iz
    return max(min(ex, ey, ez), 0.0)


@njit(cache=True, fastmath=_FAST, nogil=True, boundscheck=False, error_model="numpy", forceinline=True)
def _shared_first_step(  # type: ignore[no-untyped-def]  # noqa: PLR0917
    n,
    w,
    li,
    lanes,
    scene_f,
    coarse_dist,
    brick_index,
    bricks_sdf,
    eps_vox,
    min_step_vox,
    t_max_vox,
    max_steps,
):
    """Take the first march step of ``n`` lanes that share lane 0's origin (and scene) at once.

    Why: the first sample of every ray of a drone is the same point, so sampling it once per
    packet instead of per ray saves one of the ~6 samples per ray without changing any result.
    Returns ``(active lanes, march iterations left)``; lanes whose first step leaves the range
    are removed. Origins outside the cube or on a surface are left to the regular loop.
    """
    ux, uy, uz = w[0, 0], w[1, 0], w[2, 0]
    res = li[2, 0]
    if not (ux >= 0.0 and uy >= 0.0 and uz >= 0.0 and ux < res and uy < res and uz < res):
        return n, max_steps
    d, b = _sample_vox(
        ux, uy, uz, li[0, 0], li[1, 0], coarse_dist, brick_index, bricks_sdf, 1.0 / scene_f[li[3, 0], 3]
    )
    d -= w[15, 0]
    if d < eps_vox:
        return n, max_steps
    active = 0
    for lane in range(n):
        w[13, lane] = 0.0
        w[14, lane] = d
        if b < 0:
            tl = d + _cell_exit(
                ux, uy, uz, w[6, lane], w[7, lane], w[8, lane], w[9, lane], w[10, lane], w[11, lane]
            )
        else:
            tl = d if d > min_step_vox else min_step_vox
        w[12, lane] = tl
        if tl <= t_max_vox:
            lanes[active] = lane
            active += 1
    return active, max_steps - 1


@njit(cache=True, fastmath=_FAST, nogil=True, boundscheck=False, error_model="numpy")
def _march_jobs(  # type: ignore[no-untyped-def]  # noqa: PLR0917, PLR0915, PLR0912, C901
    job_lo, job_hi, sensor, origins, yaw, dirs_in, t_max_in, offsets_in, scene_ids, rays_per_group,
    scene_f, scene_i, coarse_dist, coarse_sem, brick_index, bricks_sdf, bricks_sem,
    eps_vox, min_step_vox, max_steps, t_res, hit_res, sem_res,
):  # fmt: skip
    """March packets ``job_lo..job_hi-1`` of 16 rays, interleaving the rays of each packet.

    Why one long function: numba does not inline big callees, and a call passing ~30 arrays costs
    ~0.25 us, as much as marching a ray; so ray setup, marching and hit finishing share one frame.
    Why packets: one march step is a chain of dependent loads; interleaving independent rays lets
    the CPU overlap those chains. Finished lanes leave the active list (swap-remove).

    Two ray sources. ``sensor``: group = drone, ``origins [B,3]``, ``yaw [B]``, ``scene_ids [B]``,
    ``dirs_in [R,3]`` drone-frame directions, range ``t_max_in[0]``, no inflation. Otherwise:
    group = everything, ``origins``/``dirs_in [N,3]``, ``t_max_in``/``offsets_in``/``scene_ids [N]``.
    Results go to ``t_res``/``hit_res``/``sem_res`` at ``(job - job_lo) * PACKET + lane`` (for
    casts with ``job_lo = 0``: the ray index); ``t_max`` on a miss. All march quantities are in
    voxels of each ray's scene.
    """
    w = np.empty(
        (_ROWS, PACKET)
    )  # per lane: origin, dir, inverse dir, exit faces, t, t_prev, d_prev, offset, t_max
    lanes = np.empty(PACKET, dtype=np.int64)
    li = np.empty((4, PACKET), dtype=np.int64)  # per lane: C, coarse offset, resolution, scene
    packets_per_group = (rays_per_group + PACKET - 1) // PACKET
    for job in range(job_lo, job_hi):
        g = job // packets_per_group
        first = (job - g * packets_per_group) * PACKET
        n = min(PACKET, rays_per_group - first)
        row0 = (job - job_lo) * PACKET  # results of the range's packets, packed
        if sensor:
            c = math.cos(yaw[g])
            sn = math.sin(yaw[g])
        for lane in range(n):
            r = first + lane
            if sensor:
                s = scene_ids[g]
                lx = dirs_in[r, 0]
                ly = dirs_in[r, 1]
                dx = c * lx - sn * ly
                dy = sn * lx + c * ly
                dz = dirs_in[r, 2]
                ox, oy, oz = origins[g, 0], origins[g, 1], origins[g, 2]
                off, tm = 0.0, t_max_in[0]
            else:
                s = scene_ids[r]
                dx, dy, dz = dirs_in[r, 0], dirs_in[r, 1], dirs_in[r, 2]
                ox, oy, oz = origins[r, 0], origins[r, 1], origins[r, 2]
                off, tm = offsets_in[r], t_max_in[r]
            inv = 1.0 / scene_f[s, 3]
            w[0, lane] = (ox - scene_f[s, 0]) * inv
            w[1, lane] = (oy - scene_f[s, 1]) * inv
            w[2, lane] = (oz - scene_f[s, 2]) * inv
            w[3, lane] = dx
            w[4, lane] = dy
            w[5, lane] = dz
            w[6, lane] = 1.0 / dx if dx != 0.0 else _NO_EXIT
            w[7, lane] = 1.0 / dy if dy != 0.0 else _NO_EXIT
            w[8, lane] = 1.0 / dz if dz != 0.0 else _NO_EXIT
            w[9, lane] = 8.0 if dx >= 0.0 else 0.0  # dk == 0: +8 * 1e30, never the exit
            w[10, lane] = 8.0 if dy >= 0.0 else 0.0
            w[11, lane] = 8.0 if dz >= 0.0 else 0.0
            w[12, lane] = 0.0  # t
            w[13, lane] = 0.0  # t_prev
            w[14, lane] = -1.0  # d_prev
            w[15, lane] = off * inv
            w[16, lane] = inv
            w[17, lane] = tm * inv
            t_res[row0 + lane] = tm
            hit_res[row0 + lane] = False
            sem_res[row0 + lane] = 0
            lanes[lane] = lane
            li[0, lane] = scene_i[s, 1]
            li[1, lane] = scene_i[s, 2]
            li[2, lane] = scene_i[s, 0]
            li[3, lane] = s
        active = n
        steps = max_steps
        if sensor and n > 0:  # one shared origin: its sample bounds the first step of every lane
            active, steps = _shared_first_step(
                n, w, li, lanes, scene_f, coarse_dist, brick_index, bricks_sdf, eps_vox, min_step_vox,
                t_res[row0] / scene_f[li[3, 0], 3], max_steps,
            )  # fmt: skip
        for _ in range(steps):
            i = 0
            while i < active:
                lane = lanes[i]
                tl = w[12, lane]
                ux = w[0, lane] + tl * w[3, lane]
                uy = w[1, lane] + tl * w[4, lane]
                uz = w[2, lane] + tl * w[5, lane]
                res = li[2, lane]
                done = True
                if ux >= 0.0 and uy >= 0.0 and uz >= 0.0 and ux < res and uy < res and uz < res:
                    d, b = _sample_vox(
                        ux,
                        uy,
                        uz,
                        li[0, lane],
                        li[1, lane],
                        coarse_dist,
                        brick_index,
                        bricks_sdf,
                        w[16, lane],
                    )
                    d -= w[15, lane]
                    if d < eps_vox:
                        dp = w[14, lane]
                        if d < 0.0 and dp > 0.0:  # crossed the surface: interpolate the zero crossing
                            tp = w[13, lane]
                            tl = tp + (tl - tp) * dp / (dp - d)
                        w[12, lane] = tl
                        if tl <= w[17, lane]:
                            hit_res[row0 + lane] = True
                    else:
                        w[13, lane] = tl
                        w[14, lane] = d
                        if b < 0:
                            tl += d + _cell_exit(
                                ux,
                                uy,
                                uz,
                                w[6, lane],
                                w[7, lane],
                                w[8, lane],
                                w[9, lane],
                                w[10, lane],
                                w[11, lane],
                            )
                        else:
                            tl += d if d > min_step_vox else min_step_vox
                        w[12, lane] = tl
                        done = tl > w[17, lane]
                if done:
                    active -= 1
                    lanes[i] = lanes[active]
                else:
                    i += 1
            if active == 0:
                break
        for i in range(active):  # out of iterations while creeping along a surface: a hit
            if w[14, lanes[i]] < 1.0:
                hit_res[row0 + lanes[i]] = True
        for lane in range(n):
            if not hit_res[row0 + lane]:
                continue
            s = li[3, lane]
            res = li[2, lane]
            tl = w[12, lane]
            ux = min(max(w[0, lane] + tl * w[3, lane], 0.0), res - 1e-3)
            uy = min(max(w[1, lane] + tl * w[4, lane], 0.0), res - 1e-3)
            uz = min(max(w[2, lane] + tl * w[5, lane], 0.0), res - 1e-3)
            t_res[row0 + lane] = tl * scene_f[s, 3]
            sem_res[row0 + lane] = _semantic_at(
                ux, uy, uz, li[0, lane], li[1, lane], coarse_sem, brick_index, bricks_sem
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
    jobs = B * packets_per_drone
    chunks = min(jobs, 64)  # one call (and one scratch allocation) per chunk, not per packet
    per_chunk = (jobs + chunks - 1) // chunks
    for chunk in prange(chunks):
        _sensor_chunk(
            chunk * per_chunk, min(jobs, (chunk + 1) * per_chunk), origins, yaw, scene_ids, dirs_local,
            horizon, out, out_copy, stats,
            scene_f, scene_i, coarse_dist, coarse_sem, brick_index, bricks_sdf, bricks_sem,
            eps_vox, min_step_vox, max_steps,
        )  # fmt: skip


@njit(cache=True, fastmath=_FAST, nogil=True, boundscheck=False, error_model="numpy")
def _sensor_chunk(  # type: ignore[no-untyped-def]  # noqa: PLR0917
    job_lo, job_hi, origins, yaw, scene_ids, dirs_local, horizon, out, out_copy, stats,
    scene_f, scene_i, coarse_dist, coarse_sem, brick_index, bricks_sdf, bricks_sem,
    eps_vox, min_step_vox, max_steps,
):  # fmt: skip
    """Sensor packets ``job_lo..job_hi-1``: march them, then write observation rows and stats."""
    R = dirs_local.shape[0]
    packets_per_drone = (R + PACKET - 1) // PACKET
    b_lo = job_lo // packets_per_drone
    b_hi = (job_hi - 1) // packets_per_drone + 1
    rows = (job_hi - job_lo) * PACKET  # results of this chunk's packets only (small, no page faults)
    t_res = np.empty(rows)
    hit_res = np.empty(rows, dtype=np.bool_)
    sem_res = np.empty(rows, dtype=np.uint16)
    t_max = np.full(1, horizon)
    _march_jobs(
        job_lo - b_lo * packets_per_drone, job_hi - b_lo * packets_per_drone, True,
        origins[b_lo:b_hi], yaw[b_lo:b_hi], dirs_local, t_max, t_max, scene_ids[b_lo:b_hi], R,
        scene_f, scene_i, coarse_dist, coarse_sem, brick_index, bricks_sdf, bricks_sem,
        eps_vox, min_step_vox, max_steps, t_res, hit_res, sem_res,
    )  # fmt: skip
    inv_h = 1.0 / horizon
    for job in range(job_lo, job_hi):
        b = job // packets_per_drone
        p = job - b * packets_per_drone
        nearest = 1.0
        hits = 0
        for r in range(p * PACKET, min(R, (p + 1) * PACKET)):
            k = (job - job_lo) * PACKET + r - p * PACKET
            depth, sem, valid = 1.0, 0.0, 0.0
            if hit_res[k]:
                depth = min(t_res[k] * inv_h, 1.0)
                sem = float(sem_res[k])
                valid = 1.0
                hits += 1
            nearest = min(nearest, depth)
            out[b, 0, r] = depth
            out[b, 1, r] = sem
            out[b, 2, r] = valid
            out_copy[b, 0, r] = depth
            out_copy[b, 1, r] = sem
            out_copy[b, 2, r] = valid
        stats[b, p, 0] = nearest
        stats[b, p, 1] = hits


@njit(cache=True, fastmath=_FAST, nogil=True, boundscheck=False, error_model="numpy")
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
    res_t = np.empty(N)
    _march_jobs(
        0, (N + PACKET - 1) // PACKET, False, origins, t_max, dirs, t_max, offsets, scene_ids, N,
        scene_f, scene_i, coarse_dist, coarse_sem, brick_index, bricks_sdf, bricks_sem,
        eps_vox, min_step_vox, max_steps, res_t, out_hit, out_sem,
    )  # fmt: skip
    for k in range(N):
        out_t[k] = res_t[k]


@njit(cache=True, fastmath=_FAST, nogil=True, boundscheck=False, error_model="numpy")
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
