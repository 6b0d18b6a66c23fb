"""The vector passes of the wavefront sensor kernel (:mod:`navi_environment.tracer.wavefront`).

Each pass is one branch-free loop over a job's ray slots (structure-of-arrays rows) that
numba/LLVM compiles into 16-lane AVX-512 code (8-lane AVX2 on CPUs without AVX-512), with gathers
for the atlas lookups. What it takes to get there:

* ``noalias``: LLVM only vectorises a gather loop when it knows the loop's stores cannot hit the
  gathered arrays, so these passes are compiled with numba's ``noalias`` flag (exposed as the
  ``no_alias`` jit option by :func:`_enable_no_alias_option`). Their array arguments are distinct
  scratch rows or read-only atlas arrays, which is what that flag promises.
* int32 index arithmetic (numba widens integer math to int64, which halves the lanes), indices
  masked non-negative (so LLVM emits 32-bit-index gathers) and float32 state in voxel units.
* Brick samples are int16 and x86 has no 16-bit gather, but the two z-neighbours of a trilinear
  corner are adjacent: one unaligned 32-bit load (:func:`_load_pair`) reads both, so the 8
  corners cost 4 scale-2 dword gathers straight from the int16 pool (no widened copy).

Rules as :mod:`navi_environment.tracer.scalar` (see there); float32 instead of float64 moves
results by rounding only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir
from numba import njit
from numba.core import cpu, types
from numba.core.options import TargetOptions
from numba.extending import intrinsic

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


@_jit(**_VECTOR)
def _prepare_rays(  # type: ignore[no-untyped-def]  # noqa: PLR0917
    n, r_lo, c, sn, dirs_local, ox, oy, oz, shared, d0, empty0, min_step, t_max,
    dxs, dys, dzs, ixs, iys, izs, t0s, st0s,
):  # fmt: skip
    """World directions (drone frame rotated by yaw), inverse directions and the first step.

    Why: every ray of a drone starts at the same point, so its first sample ``d0`` (taken once
    by the caller) bounds the first step of all of them; ``shared`` is False when the origin is
    outside the cube or on a surface, and then rays start at t = 0.
    """
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
