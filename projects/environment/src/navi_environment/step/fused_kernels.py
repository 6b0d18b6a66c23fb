"""numba kernels for everything in a CPU step except the sensor trace (the fused step).

Why: on CPU the torch step is ~230 tiny torch ops (a few microseconds each), which for 4 drones
cost as much as the trace itself. These kernels do the same work in two calls around the trace:

* :func:`before_trace`: forward-cone clearance from the previous observation, kinematics
  (:func:`command`) and the collision sweep with its slide (:func:`sweep`, calling the tracer's
  own ``cast_rays`` / ``query_points`` kernels, so hit rules are the sensor's).
* :func:`after_trace`: the ten reward terms with the hashed visit memory (:func:`reward_terms`), the
  episode counters, the end flags, the outside check and the info rows (:func:`episode_flags`).

They mirror the torch reference beside them (``physics/``, ``rewards/terms.py``,
``episodes/lifecycle.py``), which stays the CUDA path and the oracle: same float32 arithmetic in
the same order, and every Python scalar setting rounded to float32 where torch would round it
(settings arrive as float64 arrays ``phys`` / ``rew`` indexed by the ``P_*`` / ``R_*``
constants). No ``fastmath``: contracted multiply-adds would move results off the torch oracle.
Serial and ``nogil``: B is 1-64 drones, far too little work to wake a thread pool.

Like ``tracer/wavefront.py`` (which calls ``scalar._sample_vox``), these cached kernels link the
tracer's kernels in at compile time, and numba's cache only checks each kernel's own file: after
editing ``tracer/scalar.py``, delete the ``fused_kernels`` ``*.nbi``/``*.nbc`` cache files in
``step/__pycache__`` (the parity tests compare with the torch step, which uses the fresh ones).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from navi_environment.step.rewards.terms import _HASH, HEADING_NOVELTY, VISIT_SLOTS
from navi_environment.tracer.scalar import cast_rays, query_points

# phys [float64]: physics settings in the order :func:`physics_params` writes them
P_MAX_SPEED, P_SMOOTHING, P_RADIUS, P_SLOWDOWN, P_DT, P_HORIZON = 0, 4, 5, 6, 7, 8
PHYS_SIZE = 9
# rew [float64]: reward and episode settings in the order :func:`reward_params` writes them
(R_MIN_CLEARANCE, R_PROXIMITY, R_BAND_LOW, R_BAND_HIGH, R_INSPECTION, R_COLLISION_BASE, R_MAX_FORWARD,
 R_VISIT_CELL, R_HEADING_BINS, R_HORIZON, R_MAX_STEPS, R_GRACE, R_STARVATION,
 R_NOVELTY_COLUMNS) = range(14)  # fmt: skip
REW_SIZE = 14
# rows of the info block after the ten weighted reward terms (backend.INFO_KEYS order)
N_TERMS = 10
I_COLLISION, I_SPEED, I_COVERAGE, I_RETURN, I_LENGTH, I_SCENE = 10, 11, 12, 13, 14, 15

_TINY = np.float32(1e-9)  # the torch code's clamp(min=1e-9) before dividing by a length
_PI = np.float32(math.pi)
_TWO_PI = np.float32(2.0 * math.pi)
_H0, _H1, _H2 = _HASH
_kernel = njit(cache=True, nogil=True, boundscheck=False)


@_kernel
def _wrap(angle):  # type: ignore[no-untyped-def]
    """``wrap_angle``: torch.remainder is Python's float modulo (fmod, then shifted by the divisor)."""
    return (angle + _PI) % _TWO_PI - _PI


@_kernel
def _norm3(x, y, z):  # type: ignore[no-untyped-def]
    return math.sqrt(x * x + y * y + z * z)


@_kernel
def forward_clearance(obs, forward_rays, horizon, out):  # type: ignore[no-untyped-def]
    """``out [B]``: nearest normalised depth over the forward cone of ``obs [B,3,R]``, in metres."""
    h = np.float32(horizon)
    for b in range(obs.shape[0]):
        near = np.float32(np.inf)
        for r in forward_rays:
            near = min(near, obs[b, 0, r])
        out[b] = near * h


@_kernel
def command(actions, smoothed, yaw, forward_clear, phys, disp):  # type: ignore[no-untyped-def]  # noqa: PLR0917
    """``Kinematics.command`` then ``displacement``: updates ``smoothed [B,4]`` and ``yaw [B]`` in
    place and writes this step's world move ``disp [B,3]`` (metres)."""
    smoothing = np.float32(phys[P_SMOOTHING])
    radius = np.float32(phys[P_RADIUS])
    slowdown = np.float32(phys[P_SLOWDOWN])
    dt = np.float32(phys[P_DT])
    lo, hi = np.float32(-1.0), np.float32(1.0)
    for b in range(actions.shape[0]):
        for k in range(4):
            a = actions[b, k]
            a = np.float32(0.0) if math.isnan(a) else min(max(a, lo), hi)  # NaN -> 0, then clip
            target = a * np.float32(phys[P_MAX_SPEED + k])
            smoothed[b, k] = smoothed[b, k] + smoothing * (target - smoothed[b, k])
        factor = min(max((forward_clear[b] - radius) / slowdown, np.float32(0.0)), hi)
        forward = smoothed[b, 0]
        if forward > 0:
            forward = forward * factor
        lateral = smoothed[b, 2]
        c = math.cos(yaw[b])
        s = math.sin(yaw[b])
        disp[b, 0] = (forward * c - lateral * s) * dt
        disp[b, 1] = (forward * s + lateral * c) * dt
        disp[b, 2] = smoothed[b, 1] * dt
        yaw[b] = _wrap(yaw[b] + smoothed[b, 3] * dt)


@_kernel
def _cast(origins, dirs, t_max, offsets, ids, atlas, rules):  # type: ignore[no-untyped-def]  # noqa: PLR0917
    """``Tracer.cast`` through the tracer's own kernel: ``(t [N] f32, hit [N] bool)``."""
    n = origins.shape[0]
    t = np.empty(n, np.float32)
    hit = np.empty(n, np.bool_)
    sem = np.empty(n, np.uint16)
    cast_rays(
        origins, dirs, t_max, offsets, ids, t, hit, sem,
        atlas[0], atlas[1], atlas[2], atlas[3], atlas[4], atlas[5], atlas[6],
        rules[0], rules[1], rules[2],
    )  # fmt: skip
    return t, hit


@_kernel
def _query(points, ids, atlas):  # type: ignore[no-untyped-def]
    """``Tracer.query``: distance [N] f32 at ``points [N,3]``."""
    out = np.empty(points.shape[0], np.float32)
    query_points(points, ids, out, atlas[0], atlas[1], atlas[2], atlas[4], atlas[5])
    return out


@_kernel
def _normals(points, ids, h, atlas):  # type: ignore[no-untyped-def]
    """``surface_normals``: central differences over six axis probes, normalised."""
    B = points.shape[0]
    probes = np.empty((B * 6, 3), np.float32)
    probe_ids = np.empty(B * 6, ids.dtype)
    for b in range(B):
        for k in range(6):
            for j in range(3):
                probes[b * 6 + k, j] = points[b, j]
            axis = k // 2
            probes[b * 6 + k, axis] = points[b, axis] + (h if k % 2 == 0 else -h)
            probe_ids[b * 6 + k] = ids[b]
    d = _query(probes, probe_ids, atlas)
    normal = np.empty((B, 3), np.float32)
    for b in range(B):
        gx = d[b * 6] - d[b * 6 + 1]
        gy = d[b * 6 + 2] - d[b * 6 + 3]
        gz = d[b * 6 + 4] - d[b * 6 + 5]
        inv = max(_norm3(gx, gy, gz), _TINY)
        normal[b, 0] = gx / inv
        normal[b, 1] = gy / inv
        normal[b, 2] = gz / inv
    return normal


@_kernel
def _first_leg(position, disp, clearance, ids, radius, skin, atlas, rules):  # type: ignore[no-untyped-def]  # noqa: PLR0917
    """The straight sweep: ``(direction, offset, t, collided, contact)`` of every drone."""
    B = position.shape[0]
    direction = np.empty((B, 3), np.float32)
    length = np.empty(B, np.float32)
    offset = np.empty(B, np.float32)
    for b in range(B):
        length[b] = _norm3(disp[b, 0], disp[b, 1], disp[b, 2])
        inv = max(length[b], _TINY)
        for j in range(3):
            direction[b, j] = disp[b, j] / inv
        offset[b] = max(min(clearance[b], radius) - skin, np.float32(0.0))
    t, hit = _cast(position, direction, length, offset, ids, atlas, rules)
    contact = np.empty((B, 3), np.float32)
    collided = np.empty(B, np.bool_)
    for b in range(B):
        collided[b] = hit[b] and length[b] > 0
        for j in range(3):
            contact[b, j] = position[b, j] + direction[b, j] * t[b]
    return direction, offset, t, collided, contact


@_kernel
def sweep(position, disp, clearance, ids, collided, impact_speed, speed, phys, atlas, rules):  # type: ignore[no-untyped-def]  # noqa: PLR0917
    """``move_with_collisions``: move ``position [B,3]`` and ``clearance [B]`` in place, stopping at
    surfaces and sliding along them; writes ``collided``, ``impact_speed`` and ``speed`` [B].

    ``rules`` is the tracer's ``(eps_vox, min_step_vox, max_steps)``; the normal step is the
    atlas' largest voxel and the skin two hit epsilons of it, as in the backend's torch path.
    """
    B = position.shape[0]
    voxel = atlas[0][:, 3].max()
    skin64 = 2.0 * rules[0] * float(voxel)
    radius, skin = np.float32(phys[P_RADIUS]), np.float32(skin64)
    refuse_below = np.float32(phys[P_RADIUS] - 2.0 * skin64)
    dt = np.float32(phys[P_DT])
    zero = np.float32(0.0)
    direction, offset, t, touched, contact = _first_leg(
        position, disp, clearance, ids, radius, skin, atlas, rules
    )
    normal = _normals(contact, ids, voxel, atlas)
    slide_dir = np.empty((B, 3), np.float32)
    slide_len = np.empty(B, np.float32)
    slide_off = np.empty(B, np.float32)
    for b in range(B):
        into = -(
            (disp[b, 0] / dt) * normal[b, 0]
            + (disp[b, 1] / dt) * normal[b, 1]
            + (disp[b, 2] / dt) * normal[b, 2]
        )
        impact_speed[b] = max(into, zero) if touched[b] else zero
        collided[b] = touched[b]
        rx = disp[b, 0] - direction[b, 0] * t[b]
        ry = disp[b, 1] - direction[b, 1] * t[b]
        rz = disp[b, 2] - direction[b, 2] * t[b]
        along = min(rx * normal[b, 0] + ry * normal[b, 1] + rz * normal[b, 2], zero)
        tx = rx - along * normal[b, 0]
        ty = ry - along * normal[b, 1]
        tz = rz - along * normal[b, 2]
        tn = _norm3(tx, ty, tz)
        slide_len[b] = tn if touched[b] else zero
        inv = max(tn, _TINY)
        slide_dir[b, 0], slide_dir[b, 1], slide_dir[b, 2] = tx / inv, ty / inv, tz / inv
        slide_off[b] = max(offset[b] - skin, zero)
    t_slide, _ = _cast(contact, slide_dir, slide_len, slide_off, ids, atlas, rules)
    final = np.empty((B, 3), np.float32)
    for b in range(B):
        for j in range(3):
            final[b, j] = contact[b, j] + slide_dir[b, j] * t_slide[b]
    final_clearance = _query(final, ids, atlas)
    for b in range(B):
        fc = final_clearance[b]
        if not (fc < refuse_below and fc < clearance[b]):  # refused moves keep the old pose
            dx = final[b, 0] - position[b, 0]
            dy = final[b, 1] - position[b, 1]
            dz = final[b, 2] - position[b, 2]
            position[b, 0], position[b, 1], position[b, 2] = final[b, 0], final[b, 1], final[b, 2]
            clearance[b] = fc
            speed[b] = _norm3(dx, dy, dz) / dt
        else:
            speed[b] = zero


@_kernel
def before_trace(  # type: ignore[no-untyped-def]  # noqa: PLR0917
    actions, obs, forward_rays, smoothed, position, yaw, clearance, ids,
    collided, impact_speed, speed, phys, atlas, rules,
):  # fmt: skip
    """Everything a step does before tracing the sensor at the new poses (state updated in place)."""
    B = position.shape[0]
    forward_clear = np.empty(B, np.float32)
    forward_clearance(obs, forward_rays, phys[P_HORIZON], forward_clear)
    disp = np.empty((B, 3), np.float32)
    command(actions, smoothed, yaw, forward_clear, phys, disp)
    sweep(position, disp, clearance, ids, collided, impact_speed, speed, phys, atlas, rules)


@_kernel
def _visit(visited, cells, headings, coverage, prev_slot, b, x, y, z, yaw, cell_m, bins, columns):  # type: ignore[no-untyped-def]  # noqa: PLR0917
    """``Rewards._visit`` for drone ``b``: mark the 3D cell (coverage), the novelty cell and heading
    sector; ``(new_cell, new_heading, revisit)`` of the novelty cell."""
    cx, cy, cz = math.floor(x / cell_m), math.floor(y / cell_m), math.floor(z / cell_m)
    cell = (cx * _H0 + cy * _H1 + cz * _H2) % VISIT_SLOTS
    if not cells[b, cell]:
        coverage[b] += np.float32(1.0)
    cells[b, cell] = True
    slot = (cx * _H0 + cy * _H1) % VISIT_SLOTS if columns else cell
    sector = int(yaw % _TWO_PI / _TWO_PI * np.float32(bins))
    bit = np.int64(1) << min(max(sector, 0), bins - 1)
    seen_cell = visited[b, slot]
    seen_bits = headings[b, slot]
    visited[b, slot] = True
    headings[b, slot] = seen_bits | bit
    new_cell = np.float32(0.0) if seen_cell else np.float32(1.0)
    revisit = np.float32(1.0) if seen_cell and slot != prev_slot[b] else np.float32(0.0)
    prev_slot[b] = slot
    return new_cell, np.float32(1.0) if (seen_bits & bit) == 0 else np.float32(0.0), revisit


@_kernel
def _cone_shares(obs, b, forward_rays, rew):  # type: ignore[no-untyped-def]
    """Shares of the forward cone that are open, within the band's top, and inspected."""
    h = np.float32(rew[R_HORIZON])
    open_from = np.float32(0.5 * rew[R_HORIZON])
    band_high, inspect = np.float32(rew[R_BAND_HIGH]), np.float32(rew[R_INSPECTION])
    n_open = n_band = n_near = 0
    for r in forward_rays:
        ahead = obs[b, 0, r] * h
        n_open += ahead >= open_from
        n_band += ahead <= band_high
        n_near += ahead <= inspect
    count = np.float32(forward_rays.shape[0])
    return np.float32(n_open) / count, np.float32(n_band) / count, np.float32(n_near) / count


@_kernel
def reward_terms(  # type: ignore[no-untyped-def]  # noqa: PLR0917
    obs, forward_rays, nearest, hit_share, position, yaw, spawn, collided, impact_speed,
    visited, cells, headings, best_distance, prev_clearance, coverage, prev_slot, weights, rew, terms, reward,
):  # fmt: skip
    """``Rewards.compute``: weighted ``terms [>=10,B]`` (rows 0-9), ``reward [B]``, memory in place.

    ``nearest`` is the tracer's normalised nearest depth (``nearest_m = nearest * horizon``).
    """
    zero, one = np.float32(0.0), np.float32(1.0)
    h = np.float32(rew[R_HORIZON])
    prox = np.float32(rew[R_PROXIMITY])
    band_low, band_high = np.float32(rew[R_BAND_LOW]), np.float32(rew[R_BAND_HIGH])
    cell_m, bins = np.float32(rew[R_VISIT_CELL]), int(rew[R_HEADING_BINS])
    columns = rew[R_NOVELTY_COLUMNS] != 0.0
    value = np.empty(N_TERMS, np.float32)
    for b in range(position.shape[0]):
        clear = nearest[b] * h
        new_cell, new_heading, revisit = _visit(
            visited,
            cells,
            headings,
            coverage,
            prev_slot,
            b,
            position[b, 0],
            position[b, 1],
            position[b, 2],
            yaw[b],
            cell_m,
            bins,
            columns,
        )
        frontier, band_share, near = _cone_shares(obs, b, forward_rays, rew)
        gate = one if clear >= np.float32(rew[R_MIN_CLEARANCE]) else zero
        value[0] = gate * (
            new_cell * (one + np.float32(0.25) * frontier) + np.float32(HEADING_NOVELTY) * new_heading
        )
        distance = _norm3(
            position[b, 0] - spawn[b, 0], position[b, 1] - spawn[b, 1], position[b, 2] - spawn[b, 2]
        )
        gain = max(distance - best_distance[b], zero)
        best_distance[b] = max(best_distance[b], distance)
        value[1] = gain * min(max(clear / prox, zero), one)
        value[2] = min(max(clear - prev_clearance[b], -one), one)
        prev_clearance[b] = clear
        value[3] = hit_share[b] - one
        value[4] = -min(max(one - clear / prox, zero), one)
        value[5] = (one if band_low <= clear <= band_high else zero) * new_cell
        value[6] = band_share * new_heading
        value[7] = near * new_heading
        hit = one if collided[b] else zero
        value[8] = (
            -(np.float32(rew[R_COLLISION_BASE]) + impact_speed[b] / np.float32(rew[R_MAX_FORWARD])) * hit
        )
        value[9] = -revisit
        total = zero
        for i in range(N_TERMS):
            terms[i, b] = value[i] * weights[i]
            total = total + terms[i, b]
        reward[b] = total


@_kernel
def episode_flags(  # type: ignore[no-untyped-def]  # noqa: PLR0917
    reward, hit_share, position, ids, bounds, length, episode_return, rew, terminated, truncated, ended,
):  # fmt: skip
    """``EpisodeTracker.advance`` + ``end_flags`` + the outside check; returns how many rows ended
    (their indices in ``ended[:n]``)."""
    max_steps, grace = int(rew[R_MAX_STEPS]), int(rew[R_GRACE])
    starve_at = np.float32(rew[R_STARVATION])
    n = 0
    for b in range(reward.shape[0]):
        length[b] += 1
        episode_return[b] += reward[b]
        s = ids[b]
        outside = False
        for j in range(3):
            outside |= position[b, j] < bounds[s, j] or position[b, j] >= bounds[s, 3 + j]
        starved = length[b] > grace and (np.float32(1.0) - hit_share[b]) >= starve_at
        terminated[b] = outside
        truncated[b] = (length[b] >= max_steps or starved) and not outside
        if outside or truncated[b]:
            ended[n] = b
            n += 1
    return n


@_kernel
def after_trace(  # type: ignore[no-untyped-def]  # noqa: PLR0917
    obs, forward_rays, nearest, hit_share, position, yaw, spawn, collided, impact_speed,
    visited, cells, headings, best_distance, prev_clearance, coverage, prev_slot, weights, rew,
    ids, bounds, length, episode_return, scene_index, reward, terminated, truncated, info, ended,
):  # fmt: skip
    """Everything a step does after the trace: reward, memory, counters, flags and the info block
    ``info [16,B]`` (``backend.INFO_KEYS`` order; the speed row is already written). Returns the
    number of rows that ended (``ended[:n]``)."""
    reward_terms(
        obs, forward_rays, nearest, hit_share, position, yaw, spawn, collided, impact_speed,
        visited, cells, headings, best_distance, prev_clearance, coverage, prev_slot, weights, rew, info,
        reward,
    )  # fmt: skip
    n = episode_flags(
        reward, hit_share, position, ids, bounds, length, episode_return, rew, terminated, truncated, ended
    )
    for b in range(reward.shape[0]):
        info[I_COLLISION, b] = np.float32(1.0) if collided[b] else np.float32(0.0)
        info[I_COVERAGE, b] = coverage[b]
        info[I_RETURN, b] = episode_return[b]
        info[I_LENGTH, b] = np.float32(length[b])
        info[I_SCENE, b] = np.float32(scene_index[b])
    return n
