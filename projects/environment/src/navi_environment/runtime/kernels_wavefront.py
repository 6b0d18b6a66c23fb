"""Wavefront (SIMD) sphere tracing of the spherical sensor on a packed scene atlas.

Same hit rules as the scalar kernels in :mod:`navi_environment.runtime.kernels` (step by the
sampled distance, never less than ``min_step`` in brick cells, empty-space skip to the coarse
cell's exit face, hit below ``eps`` or at the interpolated zero crossing, miss outside the cube or
past ``t_max``), but organised so that LLVM vectorises the march with AVX-512/AVX2 gathers:

* A job (a run of one drone's rays, see :func:`job_rays`) keeps :data:`SLOTS` rays in flight in
  structure-of-arrays state. One march iteration is four branch-free passes over the slots, each
  a loop that numba/LLVM turns into 16-lane vector code: locate the coarse cells, gather the
  brick index and coarse bound, gather the 8 trilinear corners, then interpolate and advance.
  Why four passes and not one: each gather waits on memory (the brick pool is larger than L2);
  short loops whose iterations are independent keep many more gathers in flight than one long
  loop body, which measured ~1.5x faster per sample.
* After each iteration a scalar scan retires finished rays (recording t and the hit flag) and
  refills their slots with the job's next rays, so vectors stay full; once the job's rays are all
  started, the slots are compacted when fewer than half are still marching.
* Brick samples are int16 and x86 has no 16-bit gather, but the two z-neighbours of a trilinear
  corner are adjacent: one unaligned 32-bit load (:func:`_load_pair`) reads both, so the 8
  corners cost 4 scale-2 dword gathers straight from the int16 pool.
* ``noalias``: LLVM only vectorises a gather loop when it knows the stores cannot hit the
  gathered arrays, so the vector passes are compiled with numba's ``noalias`` flag (exposed as
  the ``no_alias`` jit option by :func:`_enable_no_alias_option`). Their array arguments are
  distinct scratch rows or read-only atlas arrays, which is what that flag promises.

State is float32 in voxel units (the scalar kernel uses float64): results differ by rounding only.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from llvmlite import ir
from numba import njit, prange
from numba.core import cpu, types
from numba.core.options import TargetOptions
from numba.extending import intrinsic

from navi_environment.runtime.kernels import PACKET, _sample_vox
from navi_environment.runtime.scene import BRICK_QUANTA


def _enable_no_alias_option() -> None:
    """Expose numba's internal ``noalias`` compiler flag as the ``no_alias`` option of ``njit``.

    numba sets this flag itself for the bodies of ``prange`` loops whose arrays provably do not
    alias; there is no public switch for ordinary functions, so map one (idempotent).
    """
    if not hasattr(cpu.CPUTargetOptions, "no_alias"):
        cpu.CPUTargetOptions.no_alias = TargetOptions.Mapping("noalias")  # type: ignore[attr-defined]


_enable_no_alias_option()

_FAST = {"nsz", "arcp", "contract", "afn", "reassoc"}  # as kernels.py: no 'nnan'/'ninf'
_VECTOR = {
    "cache": True, "fastmath": _FAST, "nogil": True, "boundscheck": False, "error_model": "numpy",
    "no_alias": True,
}  # fmt: skip
_jit: Any = njit  # the option dicts (and no_alias) are beyond numba's type stubs
_SCALAR = {"cache": True, "fastmath": _FAST, "nogil": True, "boundscheck": False, "error_model": "numpy"}

SLOTS = 512  # rays marched together per job (SoA state ~40 KiB: stays in L1/L2)
JOBS_PER_THREAD = 2  # parallel balance; beyond it, fewer and longer jobs are faster (fewer tails)

F = np.float32
I = np.int32  # noqa: E741  # int32 arithmetic keeps 16 lanes per AVX-512 vector (int64 halves it)
_F0, _F1, _HALF, _EIGHT = F(0.0), F(1.0), F(0.5), F(8.0)
_INV_QUANTA = F(1.0 / BRICK_QUANTA)
_NO_EXIT = F(1.0e30)
_I0, _I1, _I3, _I10, _I16, _I100, _I1000 = I(0), I(1), I(3), I(10), I(16), I(100), I(1000)
_CELL_MASK = I(-8)  # clears the low 3 bits: the voxel index of the coarse cell's lower face
_POSITIVE = I(0x7FFFFFFF)  # index & this: known non-negative, so LLVM emits 32-bit-index gathers

# slot status
_MARCHING, _HIT, _MISS, _IDLE = I(0), I(1), I(2), I(3)
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


@_jit(**_VECTOR)
def _prepare_rays(  # type: ignore[no-untyped-def]  # noqa: PLR0917
    n, r_lo, c, sn, dirs_local, ox, oy, oz, shared, d0, empty0, min_step, t_max, rf, ri
):
    """World directions (drone frame rotated by yaw), inverse directions and the first step.

    Why: every ray of a drone starts at the same point, so its first sample ``d0`` (taken once
    by the caller) bounds the first step of all of them; ``shared`` is False when the origin is
    outside the cube or on a surface, and then rays start at t = 0.
    """
    dxs, dys, dzs = rf[0], rf[1], rf[2]
    ixs, iys, izs = rf[3], rf[4], rf[5]
    t0s, st0s = rf[_T0], ri[_ST0]
    cube_x, cube_y, cube_z = F(I(ox) & _CELL_MASK), F(I(oy) & _CELL_MASK), F(I(oz) & _CELL_MASK)
    for k in range(n):
        lx = dirs_local[r_lo + k, 0]
        ly = dirs_local[r_lo + k, 1]
        dx = c * lx - sn * ly
        dy = sn * lx + c * ly
        dz = dirs_local[r_lo + k, 2]
        ix = _F1 / dx if dx != _F0 else _NO_EXIT
        iy = _F1 / dy if dy != _F0 else _NO_EXIT
        iz = _F1 / dz if dz != _F0 else _NO_EXIT
        dxs[k], dys[k], dzs[k], ixs[k], iys[k], izs[k] = dx, dy, dz, ix, iy, iz
        ex = (cube_x + (_EIGHT if dx >= _F0 else _F0) - ox) * ix
        ey = (cube_y + (_EIGHT if dy >= _F0 else _F0) - oy) * iy
        ez = (cube_z + (_EIGHT if dz >= _F0 else _F0) - oz) * iz
        skip = max(min(ex, ey, ez), _F0)
        t = (d0 + skip if empty0 else max(d0, min_step)) if shared else _F0
        t0s[k] = t
        st0s[k] = _MISS if t > t_max else _MARCHING


@_jit(**_VECTOR)
def _locate_cells(m, ox, oy, oz, res_in, C, coff, dxs, dys, dzs, ts, cells):  # type: ignore[no-untyped-def]  # noqa: PLR0917
    """Coarse cell of each slot's sample point (clamped into the cube; outside is judged later)."""
    for i in range(m):
        t = ts[i]
        cx = I(min(max(ox + t * dxs[i], _F0), res_in)) >> _I3
        cy = I(min(max(oy + t * dys[i], _F0), res_in)) >> _I3
        cz = I(min(max(oz + t * dzs[i], _F0), res_in)) >> _I3
        cells[i] = I(coff + I(I(I(cx * C) + cy) * C) + cz)


@_jit(**_VECTOR)
def _brick_bases(  # type: ignore[no-untyped-def]  # noqa: PLR0917
    m, ox, oy, oz, res_in, inv_voxel, dxs, dys, dzs, ts, cells, bases, coarse, brick_index, coarse_dist
):
    """Gather each cell's brick and coarse bound; ``bases`` = pool index of corner (0,0,0), or -1.

    ``int(x + 0.5) - 1`` is ``floor(x - 0.5)`` for the non-negative ``x`` seen here; the local
    sample index is the voxel index minus ``8c - 1``, in [0, 8].
    """
    for i in range(m):
        cell = I(cells[i]) & _POSITIVE
        b = brick_index[np.uint32(cell)]
        coarse[i] = coarse_dist[np.uint32(cell)] * inv_voxel
        t = ts[i]
        ux = min(max(ox + t * dxs[i], _F0), res_in)
        uy = min(max(oy + t * dys[i], _F0), res_in)
        uz = min(max(oz + t * dzs[i], _F0), res_in)
        lx = I(I(ux + _HALF) - I(I(ux) & _CELL_MASK))
        ly = I(I(uy + _HALF) - I(I(uy) & _CELL_MASK))
        lz = I(I(uz + _HALF) - I(I(uz) & _CELL_MASK))
        base = I(I(b * _I1000) + I(lx * _I100) + I(ly * _I10) + lz)
        bases[i] = base if b >= _I0 else I(-1)


@intrinsic
def _load_pair_intrinsic(typingctx, samples, k):  # type: ignore[no-untyped-def]
    """Samples ``k`` (low half) and ``k + 1`` (high half) of an int16 array as one int32.

    An unaligned 32-bit load at ``&samples[k]`` (little-endian). Why an intrinsic: numba cannot
    express it, and in a vector loop LLVM turns it into one ``vpgatherdd`` with scale 2, i.e. one
    gather per z-pair of trilinear corners straight from the int16 pool (no widened copy).
    """
    sig = types.int32(samples, k)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        pair_ptr = builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(32).as_pointer())
        return builder.load(pair_ptr, align=2)

    return sig, codegen


_load_pair: Any = _load_pair_intrinsic  # called with (samples, k); the stubs see typingctx too


@_jit(**_VECTOR)
def _gather_corners(m, bases, bricks_sdf, p00, p01, p10, p11):  # type: ignore[no-untyped-def]  # noqa: PLR0917
    """Gather the 8 trilinear corners of each slot as 4 z-pairs (brick-less cells read brick 0).

    The highest sample read is ``base + 111 <= 1000 * brick + 999``: always inside the brick.
    """
    for i in range(m):
        base = max(bases[i], _I0)
        p00[i] = _load_pair(bricks_sdf, base)
        p01[i] = _load_pair(bricks_sdf, I(base + _I10))
        p10[i] = _load_pair(bricks_sdf, I(base + _I100))
        p11[i] = _load_pair(bricks_sdf, I(base + I(110)))


@njit(inline="always")
def _lerp_pair(p, w):  # type: ignore[no-untyped-def]
    """Interpolate along z between the low (z) and high (z + 1) halves of a packed pair."""
    lo = F(I(I(p << _I16) >> _I16))
    return lo + (F(p >> _I16) - lo) * w


@_jit(**_VECTOR)
def _advance(  # type: ignore[no-untyped-def]  # noqa: PLR0917
    m, ox, oy, oz, res, res_in, eps, min_step, t_max, max_steps,
    dxs, dys, dzs, ixs, iys, izs, ts, tps, dps, coarse, status, steps, bases, p00, p01, p10, p11, finished,
):  # fmt: skip
    """Interpolate each marching slot's distance and apply the hit rules (one march iteration).

    Slots that are not marching keep their state. ``status`` becomes HIT (sample below ``eps``
    within ``t_max``; ``t`` moved to the interpolated zero crossing when the sample is past the
    surface) or MISS (outside the cube or past ``t_max``). ``finished`` flags (1) the slots to
    retire: hit, missed, or out of iterations. Returns the number of slots still marching.
    """
    marching_left = _I0
    for i in range(m):
        t = ts[i]
        dx, dy, dz = dxs[i], dys[i], dzs[i]
        ux, uy, uz = ox + t * dx, oy + t * dy, oz + t * dz
        inside = (ux >= _F0) & (uy >= _F0) & (uz >= _F0) & (ux < res) & (uy < res) & (uz < res)
        ux = min(max(ux, _F0), res_in)
        uy = min(max(uy, _F0), res_in)
        uz = min(max(uz, _F0), res_in)
        wx = ux + _HALF - F(I(ux + _HALF))
        wy = uy + _HALF - F(I(uy + _HALF))
        wz = uz + _HALF - F(I(uz + _HALF))
        c0 = _lerp_pair(p00[i], wz)
        c1 = _lerp_pair(p10[i], wz)
        c0 = c0 + (_lerp_pair(p01[i], wz) - c0) * wy
        c1 = c1 + (_lerp_pair(p11[i], wz) - c1) * wy
        empty = bases[i] < _I0
        d = coarse[i] if empty else (c0 + (c1 - c0) * wx) * _INV_QUANTA
        tp, dp = tps[i], dps[i]
        at_surface = d < eps
        crossed = at_surface & (d < _F0) & (dp > _F0)
        t_hit = tp + (t - tp) * dp / (dp - d) if crossed else t
        ex = (F(I(ux) & _CELL_MASK) + (_EIGHT if dx >= _F0 else _F0) - ux) * ixs[i]
        ey = (F(I(uy) & _CELL_MASK) + (_EIGHT if dy >= _F0 else _F0) - uy) * iys[i]
        ez = (F(I(uz) & _CELL_MASK) + (_EIGHT if dz >= _F0 else _F0) - uz) * izs[i]
        t_next = t + (d + max(min(ex, ey, ez), _F0) if empty else max(d, min_step))
        old = status[i]
        marching = old == _MARCHING
        if not inside:
            new = _MISS
        elif at_surface:
            new = _HIT if t_hit <= t_max else _MISS
        else:
            new = _MISS if t_next > t_max else _MARCHING
        moves = marching and inside and not at_surface
        ts[i] = t_next if moves else (t_hit if (marching and inside and at_surface) else t)
        tps[i] = t if moves else tp
        dps[i] = d if moves else dp
        final = new if marching else old
        status[i] = final
        n_steps = I(steps[i] + _I1)
        steps[i] = n_steps
        still = (final == _MARCHING) & (n_steps < max_steps)
        out_of_steps = (final == _MARCHING) & (n_steps >= max_steps)
        finished[i] = _I1 if (final == _HIT) | (final == _MISS) | out_of_steps else _I0
        marching_left = I(marching_left + (_I1 if still else _I0))
    return marching_left


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
    _prepare_rays(n, r_lo, c, sn, dirs_local, ox, oy, oz, shared, F(d0), empty0, F(min_step), t_max, rf, ri)
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


@_jit(**_VECTOR)
def _hit_semantics(  # type: ignore[no-untyped-def]  # noqa: PLR0917
    n, ox, oy, oz, res_in, C, coff, dxs, dys, dzs, ts, hits, sems, cells, brick_index, bricks_sem
):
    """Semantic id of the voxel at each hit point (0 for misses, -1 where the coarse cell decides).

    Why a vector pass: the semantic pool is not touched while marching, so every lookup misses
    the cache; gathering 16 at a time overlaps those misses. The brick sample is the low half of
    an unaligned pair load (its index is at most ``1000 * brick + 888``: the pair stays inside).
    """
    for k in range(n):
        t = ts[k]
        ix = I(min(max(ox + t * dxs[k], _F0), res_in))
        iy = I(min(max(oy + t * dys[k], _F0), res_in))
        iz = I(min(max(oz + t * dzs[k], _F0), res_in))
        cell = I(coff + I(I(I(I(ix >> _I3) * C) + I(iy >> _I3)) * C) + I(iz >> _I3)) & _POSITIVE
        hit = hits[k] != _I0
        b = brick_index[np.uint32(cell if hit else _I0)]
        local = I(I(I(ix & I(7)) + _I1) * _I100) + I(I(I(iy & I(7)) + _I1) * _I10) + I(iz & I(7)) + _I1
        index = I(I(b * _I1000) + local) if hit & (b >= _I0) else _I0
        sem = I(_load_pair(bricks_sem, index)) & I(0xFFFF)
        sems[k] = (sem if b >= _I0 else I(-1)) if hit else _I0
        cells[k] = cell


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

    Same arguments, outputs and rules as :func:`navi_environment.runtime.kernels.trace_sensor`
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
