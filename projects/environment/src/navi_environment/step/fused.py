"""The fused CPU step: a whole ``SdfDagBackend.step`` as two numba kernels around the sensor trace.

Why: on CPU the torch step is ~230 tiny torch ops whose dispatch costs as much as tracing the
sensor itself; :mod:`navi_environment.step.fused_kernels` does the same work (same float32
arithmetic, same state) in two calls. This module is only the glue: it hands the kernels zero-copy
numpy views of the backend's tensors, which the kernels update in place, so the torch path, the
rare episode resets (still torch) and the tests all see one state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import torch

from navi_environment.config import EnvironmentSettings
from navi_environment.step import fused_kernels
from navi_environment.step.rewards import REWARD_TERMS

if TYPE_CHECKING:
    from navi_environment.backend import SdfDagBackend

# numba dispatchers, typed loosely: their signatures are inferred at call time, not by mypy.
_before: Any = fused_kernels.before_trace
_after: Any = fused_kernels.after_trace


def resolve_step_kernel(choice: str, tracer_kernel: str) -> Literal["numba", "torch"]:
    """``auto`` -> the fused numba step when the tracer runs numba (CPU), else torch ops."""
    if choice == "auto":
        return "numba" if tracer_kernel == "numba" else "torch"
    if choice == "numba" and tracer_kernel != "numba":
        raise ValueError("physics.step_kernel=numba needs the numba tracer (a CPU device)")
    return "torch" if choice == "torch" else "numba"


class FusedStep:
    """Runs the non-trace work of a backend's step in numba (CPU, numba tracer only).

    Args:
        backend: the backend whose tensors are read and updated in place.
    """

    def __init__(self, backend: SdfDagBackend) -> None:
        s = backend.settings
        if backend.tracer.kernel != "numba":
            raise ValueError("the fused step needs the numba tracer")
        self.backend = backend
        self.phys = physics_params(s)
        self.rew = reward_params(s)
        self._forward_rays = backend.forward_rays.numpy()
        self._collided = np.zeros(backend.num_actors, dtype=np.bool_)
        self._impact = np.zeros(backend.num_actors, dtype=np.float32)
        self._ended = torch.zeros(backend.num_actors, dtype=torch.int64)

    def step(self, actions: torch.Tensor) -> torch.Tensor:
        """One step for every drone (``actions`` [B,4] f32 on CPU); returns the ended rows (long [K])."""
        be = self.backend
        B = be.num_actors
        atlas = be.tracer.atlas.kernel_args()
        obs = be.obs.numpy().reshape(B, 3, -1)
        info = be.info_block.numpy()
        position, yaw = be.position.numpy(), be.yaw.numpy()
        ids = be.atlas_ids.numpy()
        _before(
            actions.detach().contiguous().numpy(), obs, self._forward_rays, be.smoothed.numpy(),
            position, yaw, be.clearance.numpy(), ids, self._collided, self._impact,
            info[fused_kernels.I_SPEED], self.phys, atlas, be.tracer.rules,
        )  # fmt: skip
        nearest, hit_share = be.tracer.trace_sensor(
            be.position, be.yaw, be.atlas_ids, be.obs, copy_to=be.final_obs
        )
        memory, episodes = be.rewards, be.episodes
        n = _after(
            obs, self._forward_rays, nearest.numpy(), hit_share.numpy(), position, yaw, be.spawn.numpy(),
            self._collided, self._impact, memory.visited.numpy(), memory.cells.numpy(),
            memory.headings.numpy(),
            memory.best_distance.numpy(), memory.prev_clearance.numpy(), memory.coverage.numpy(),
            memory.prev_slot.numpy(), memory.weights.numpy(), self.rew, ids, be.scenes.bounds.numpy(),
            episodes.length.numpy(), episodes.episode_return.numpy(), be.scene_index.numpy(),
            be.reward.numpy(), be.terminated.numpy(), be.truncated.numpy(), info, self._ended.numpy(),
        )  # fmt: skip
        return self._ended[:n]


def physics_params(settings: EnvironmentSettings) -> np.ndarray:
    """The ``phys`` array of :mod:`~navi_environment.step.fused_kernels` (float64 settings)."""
    p = settings.physics
    out = np.zeros(fused_kernels.PHYS_SIZE, dtype=np.float64)
    out[fused_kernels.P_MAX_SPEED : fused_kernels.P_MAX_SPEED + 4] = (
        p.max_forward_mps, p.max_vertical_mps, p.max_lateral_mps, p.max_yaw_rate,
    )  # fmt: skip
    out[fused_kernels.P_SMOOTHING] = p.smoothing
    out[fused_kernels.P_RADIUS] = p.drone_radius_m
    out[fused_kernels.P_SLOWDOWN] = p.slowdown_distance_m
    out[fused_kernels.P_DT] = p.dt
    out[fused_kernels.P_HORIZON] = settings.sensor.horizon_m
    return out


def reward_params(settings: EnvironmentSettings) -> np.ndarray:
    """The ``rew`` array of :mod:`~navi_environment.step.fused_kernels` (float64 settings)."""
    r, e = settings.reward, settings.episode
    k = fused_kernels
    out = np.zeros(k.REW_SIZE, dtype=np.float64)
    out[k.R_MIN_CLEARANCE] = r.min_clearance_m
    out[k.R_PROXIMITY] = r.proximity_m
    out[k.R_BAND_LOW], out[k.R_BAND_HIGH] = r.band_low_m, r.band_high_m
    out[k.R_INSPECTION] = r.inspection_range_m
    out[k.R_COLLISION_BASE] = r.collision_base
    out[k.R_MAX_FORWARD] = settings.physics.max_forward_mps
    out[k.R_VISIT_CELL] = r.visit_cell_m
    out[k.R_HEADING_BINS] = r.heading_bins
    out[k.R_HORIZON] = settings.sensor.horizon_m
    out[k.R_MAX_STEPS] = e.max_steps
    out[k.R_GRACE] = e.starvation_grace_steps
    out[k.R_STARVATION] = e.starvation_truncate
    out[k.R_NOVELTY_COLUMNS] = float(r.novelty_columns)
    assert len(REWARD_TERMS) == k.N_TERMS, "the kernels compute exactly the REWARD_TERMS"
    return out
