"""Wavefront (SIMD) sphere tracing of the spherical sensor on a packed scene atlas.

Same hit rules as the scalar kernels in :mod:`navi_environment.tracer.scalar` (step by the
sampled distance, never less than ``min_step`` in brick cells, empty-space skip to the coarse
cell's exit face, hit below ``eps`` or at the interpolated zero crossing, miss outside the cube or
past ``t_max``), organised so that LLVM vectorises the march (the passes and how they vectorise:
:mod:`navi_environment.tracer.simd`):

* A job (a run of one drone's rays, see :func:`job_rays`) keeps :data:`SLOTS` rays in flight in
  structure-of-arrays state. One march iteration is four branch-free vector passes over the
  slots: locate the coarse cells, gather the brick index and coarse bound, gather the 8
  trilinear corners, then interpolate and advance. Why four passes and not one: each gather
  waits on memory (the brick pool is larger than L2); short loops whose iterations are
  independent keep many more gathers in flight than one long loop body (measured ~1.5x faster).
* After each iteration a scalar pass retires finished rays (recording t and the hit flag) and
  refills their slots with the job's next rays, so vectors stay full; once the job's rays are all
  started, the slots are compacted when fewer than half are still marching.
* At the end, a vector pass gathers the semantic ids of the hits and a scalar pass writes the
  observation rows and per-packet stats.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from navi_environment.tracer.scalar import PACKET, _sample_vox
from navi_environment.tracer.simd import (
    _FAST,
    _HIT,
    _IDLE,
    _MARCHING,
    _SCALAR,
    F,
    I,
    _advance,
    _brick_bases,
    _gather_corners,
    _hit_semantics,
    _jit,
    _locate_cells,
    _prepare_rays,
)

SLOTS = 512  # rays marched together per job (SoA state ~40 KiB: stays in L1/L2)
JOBS_PER_THREAD = 2  # parallel balance; beyond it, fewer and longer jobs are faster (fewer tails)

# rows of the float slot state [_SF_ROWS, SLOTS]
_DX, _DY, _DZ, _IX, _IY, _IZ, _T, _TP, _DP, _DC = range(10)
_SF_ROWS = 10
# rows of the int slot state [_SI_ROWS, SLOTS]
_ST, _ID, _NS, _CELL, _BASE, _P0, _P1, _P2, _P3, _DONE, _FLAG = range(11)
_SI_ROWS = 11
# rows of the per-ray float arrays [_RF_ROWS, job rays]: rotated dirs, inverse dirs, t after the
# shared first step, result t
_T0, _TR = 6, 7
_RF_ROWS = 8
# rows of the per-ray int arrays [_RI_ROWS, job rays]: status after the shared step, hit flag,
# semantic id of a hit in a brick (-1: look up the coarse cell), the hit's coarse cell
_ST0, _HITR, _SEM, _HIT_CELL = 0, 1, 2, 3
_RI_ROWS = 4


@_jit(**_SCALAR, forceinline=True)
def _copy_slot(sf, si, dst, src):  # type: ignore[no-untyped-def]
    """Move slot ``src``'s march state to slot ``dst`` (rows written out: no inner loops)."""
    sf[_DX, dst], sf[_DY, dst], sf[_DZ, dst] = sf[_DX, src], sf[_DY, src], sf[_DZ, src]
    sf[_IX, dst], sf[_IY, dst], sf[_IZ, dst] = sf[_IX, src], sf[_IY, src], sf[_IZ, src]
    sf[_T, dst], sf[_TP, dst], sf[_DP, dst] = sf[_T, src], sf[_TP, src], sf[_DP, src]
    si[_ST, dst], si[_ID, dst], si[_NS, dst] = si[_ST, src], si[_ID, src], si[_NS, src]


@_jit(**_SCALAR, forceinline=True)
def _start_ray(sf, si, rf, ri, slot, k, ns0, dp0):  # type: ignore[no-untyped-def]  # noqa: PLR0917
    """Load ray ``k`` of the job into ``slot`` (after its shared first step, if any)."""
    sf[_DX, slot], sf[_DY, slot], sf[_DZ, slot] = rf[_DX, k], rf[_DY, k], rf[_DZ, k]
    sf[_IX, slot], sf[_IY, slot], sf[_IZ, slot] = rf[_IX, k], rf[_IY, k], rf[_IZ, k]
    sf[_T, slot] = rf[_T0, k]
    sf[_TP, slot] = 0.0
    sf[_DP, slot] = dp0
    si[_ST, slot] = ri[_ST0, k]
    si[_ID, slot] = k
    si[_NS, slot] = ns0


@_jit(**_SCALAR)
def _retire_and_refill(m, n, nxt, marching, sf, si, rf, ri, ns0, dp0):  # type: ignore[no-untyped-def]  # noqa: PLR0917
    """Record the flagged slots' results (t, hit) and load the job's next rays into them.

    A slot out of iterations while still creeping along a surface (last sample < 1 voxel) is a
    hit, as in the scalar kernel. Why two loops: the first lists the flagged slots without a
    branch per slot (a finished slot is an unpredictable event, ~1 in 6 per iteration), the
    second serves only those. Returns ``(next ray, marching slots)``.
    """
    flags, listed = si[_FLAG], si[_DONE]
    count = 0
    for i in range(m):
        listed[count] = i
        count += flags[i]
    for j in range(count):
        i = listed[j]
        k = si[_ID, i]
        st = si[_ST, i]
        rf[_TR, k] = sf[_T, i]
        ri[_HITR, k] = (st == _HIT) | ((st == _MARCHING) & (sf[_DP, i] < 1.0))
        if nxt < n:
            _start_ray(sf, si, rf, ri, i, nxt, ns0, dp0)
            nxt += 1
            marching += 1
        else:
            si[_ST, i] = _IDLE
    return nxt, marching


@_jit(**_SCALAR)
def _compact(m, sf, si):  # type: ignore[no-untyped-def]
    """Move marching slots to the front; returns their count (the new wave width)."""
    k = 0
    for i in range(m):
        if si[_ST, i] == _MARCHING:
            if k != i:
                _copy_slot(sf, si, k, i)
            k += 1
    return k


@_jit(**_SCALAR)
def _march_job(  # type: ignore[no-untyped-def]  # noqa: PLR0917
    r_lo, n, o, c, sn, dirs_local, t_max, res, C, coff, inv_voxel,
    coarse_dist, brick_index, bricks_sdf, eps, min_step, max_steps, sf, si, rf, ri,
):  # fmt: skip
    """March rays ``r_lo .. r_lo+n-1`` from voxel-space origin ``o``; fills rf[_TR], ri[_HITR]."""
    ox, oy, oz = F(o[0]), F(o[1]), F(o[2])
    shared, d0, empty0 = False, 0.0, False
    if ox >= 0.0 and oy >= 0.0 and oz >= 0.0 and ox < res and oy < res and oz < res:
        d0, b0 = _sample_vox(o[0], o[1], o[2], C, coff, coarse_dist, brick_index, bricks_sdf, inv_voxel)
        shared = d0 >= eps
        empty0 = b0 < 0
    _prepare_rays(
        n, r_lo, c, sn, dirs_local, ox, oy, oz, shared, F(d0), empty0, F(min_step), t_max,
        rf[_DX], rf[_DY], rf[_DZ], rf[_IX], rf[_IY], rf[_IZ], rf[_T0], ri[_ST0],
    )  # fmt: skip
    ns0 = 1 if shared else 0  # the shared first step counts as one iteration
    dp0 = F(d0) if shared else F(-1.0)
    m = min(SLOTS, n)
    for i in range(m):
        _start_ray(sf, si, rf, ri, i, i, ns0, dp0)
    nxt, marching = m, m
    resf, res_in = F(res), F(res - 1e-3)
    Ci, coffi, inv_f = I(C), I(coff), F(inv_voxel)
    while marching > 0:
        _locate_cells(m, ox, oy, oz, res_in, Ci, coffi, sf[_DX], sf[_DY], sf[_DZ], sf[_T], si[_CELL])
        _brick_bases(
            m, ox, oy, oz, res_in, inv_f, sf[_DX], sf[_DY], sf[_DZ], sf[_T], si[_CELL], si[_BASE],
            sf[_DC], brick_index, coarse_dist,
        )  # fmt: skip
        _gather_corners(m, si[_BASE], bricks_sdf, si[_P0], si[_P1], si[_P2], si[_P3])
        marching = _advance(
            m, ox, oy, oz, resf, res_in, F(eps), F(min_step), t_max, I(max_steps),
            sf[_DX], sf[_DY], sf[_DZ], sf[_IX], sf[_IY], sf[_IZ], sf[_T], sf[_TP], sf[_DP], sf[_DC],
            si[_ST], si[_NS], si[_BASE], si[_P0], si[_P1], si[_P2], si[_P3], si[_FLAG],
        )  # fmt: skip
        nxt, marching = _retire_and_refill(m, n, nxt, marching, sf, si, rf, ri, ns0, dp0)
        if nxt >= n and 2 * marching < m:
            m = _compact(m, sf, si)


@_jit(**_SCALAR)
def _finish_job(  # type: ignore[no-untyped-def]  # noqa: PLR0917
    b, r_lo, n, voxel, horizon, rf, ri, out, out_copy, stats, coarse_sem,
):  # fmt: skip
    """Write the job's observation rows (depth/horizon, semantic, valid) and per-packet stats."""
    inv_h = 1.0 / horizon
    for p_lo in range(0, n, PACKET):
        nearest = 1.0
        hits = 0
        for k in range(p_lo, min(n, p_lo + PACKET)):
            depth, sem, valid = 1.0, 0.0, 0.0
            if ri[_HITR, k]:
                depth = min(rf[_TR, k] * voxel * inv_h, 1.0)
                sem = float(ri[_SEM, k]) if ri[_SEM, k] >= 0 else float(coarse_sem[ri[_HIT_CELL, k]])
                valid = 1.0
                hits += 1
            nearest = min(nearest, depth)
            r = r_lo + k
            out[b, 0, r] = depth
            out[b, 1, r] = sem
            out[b, 2, r] = valid
            out_copy[b, 0, r] = depth
            out_copy[b, 1, r] = sem
            out_copy[b, 2, r] = valid
        stats[b, (r_lo + p_lo) // PACKET, 0] = nearest
        stats[b, (r_lo + p_lo) // PACKET, 1] = hits


@_jit(**_SCALAR)
def _trace_job(  # type: ignore[no-untyped-def]  # noqa: PLR0917
    b, r_lo, n, origins, yaw, scene_ids, dirs_local, horizon, out, out_copy, stats,
    scene_f, scene_i, coarse_dist, coarse_sem, brick_index, bricks_sdf, bricks_sem,
    eps_vox, min_step_vox, max_steps,
):  # fmt: skip
    """Trace sensor rays ``r_lo .. r_lo+n-1`` of drone ``b`` into ``out``."""
    s = scene_ids[b]
    voxel = scene_f[s, 3]
    inv_voxel = 1.0 / voxel
    o = np.empty(3)
    for axis in range(3):
        o[axis] = (origins[b, axis] - scene_f[s, axis]) * inv_voxel
    res, C, coff = scene_i[s, 0], scene_i[s, 1], scene_i[s, 2]
    sf = np.empty((_SF_ROWS, SLOTS), dtype=np.float32)
    si = np.empty((_SI_ROWS, SLOTS), dtype=np.int32)
    rf = np.empty((_RF_ROWS, n), dtype=np.float32)
    ri = np.empty((_RI_ROWS, n), dtype=np.int32)
    _march_job(
        r_lo, n, o, F(math.cos(yaw[b])), F(math.sin(yaw[b])), dirs_local, F(horizon * inv_voxel),
        res, C, coff, inv_voxel, coarse_dist, brick_index, bricks_sdf,
        eps_vox, min_step_vox, max_steps, sf, si, rf, ri,
    )  # fmt: skip
    _hit_semantics(
        n, F(o[0]), F(o[1]), F(o[2]), F(res - 1e-3), I(C), I(coff), rf[_DX], rf[_DY], rf[_DZ], rf[_TR],
        ri[_HITR], ri[_SEM], ri[_HIT_CELL], brick_index, bricks_sem,
    )  # fmt: skip
    _finish_job(b, r_lo, n, voxel, horizon, rf, ri, out, out_copy, stats, coarse_sem)


def job_rays(drones: int, rays: int, threads: int) -> int:
    """Rays per job: as long as possible while each thread still gets JOBS_PER_THREAD jobs.

    Why long jobs: a job ends with a tail of few, slow rays in underfilled vectors; fewer jobs
    mean fewer tails (one job per drone measured ~10 % faster than 2048-ray jobs). Always a
    multiple of PACKET, so stats packets never straddle jobs.
    """
    per_drone = max(1, (JOBS_PER_THREAD * threads + drones - 1) // drones)
    per_job = (rays + per_drone - 1) // per_drone
    return max(PACKET, (per_job + PACKET - 1) // PACKET * PACKET)


@njit(parallel=True, cache=True, fastmath=_FAST)
def trace_sensor(  # type: ignore[no-untyped-def]  # noqa: PLR0917
    origins, yaw, scene_ids, dirs_local, horizon, out, out_copy, stats,
    scene_f, scene_i, coarse_dist, coarse_sem, brick_index, bricks_sdf, bricks_sem,
    eps_vox, min_step_vox, max_steps, rays_per_job,
):  # fmt: skip
    """Trace every drone's spherical sensor into ``out`` (and ``out_copy``): the wavefront kernel.

    Same arguments, outputs and rules as :func:`navi_environment.tracer.scalar.trace_sensor`
    (see there) plus ``rays_per_job``; results agree up to float32 rounding. Jobs (runs of
    ``rays_per_job`` rays of one drone, a multiple of PACKET: take :func:`job_rays`) run in
    parallel (``prange``). Why the caller sizes them: reading numba's thread count inside a
    kernel makes it uncacheable.

    Args:
        origins: [B,3] f32. yaw: [B] f32. scene_ids: [B] i32. dirs_local: [R,3] f32 drone frame.
        horizon: metres. out, out_copy: [B,3,R] f32 (may be the same array). stats: [B,P,2] f32,
            P = ceil(R / PACKET). Atlas arrays as :meth:`SceneAtlas.kernel_args` (``bricks_sdf``
            C-contiguous int16, 1000 samples per brick).
        eps_vox, min_step_vox, max_steps: hit rules.
        rays_per_job: see above.
    """
    R = dirs_local.shape[0]
    per_job = max(PACKET, rays_per_job // PACKET * PACKET)
    jobs_per_drone = (R + per_job - 1) // per_job
    for job in prange(origins.shape[0] * jobs_per_drone):
        b = job // jobs_per_drone
        r_lo = (job - b * jobs_per_drone) * per_job
        _trace_job(
            b, r_lo, min(per_job, R - r_lo), origins, yaw, scene_ids, dirs_local, horizon,
            out, out_copy, stats, scene_f, scene_i, coarse_dist, coarse_sem, brick_index, bricks_sdf,
            bricks_sem, eps_vox, min_step_vox, max_steps,
        )  # fmt: skip
