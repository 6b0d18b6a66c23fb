"""Spawn qualification: where in a scene may a drone start?

Candidates are drawn uniformly in the scene cube and probed with a coarse spherical sensor traced
by the same tracer the drones use. A candidate is free when the probe's nearest hit is at least
``scene.spawn_clearance_m`` away (and the conservative field bound proves no contact); its
starvation is the share of probe rays that see nothing within the horizon. A
spawn is viable below ``scene.spawn_max_starvation`` and within ``scene.spawn_starvation_margin`` of
the least-starved candidate: in an enclosed scene (best starvation ~0) that rejects points outside
the building, on its roof or beside it, whose probes see open sky, while an open scene (best
starvation 0.5, say) still gets spawns. A scene passes when it has a viable spawn and
its best starvation is below 0.7 (the verdict used by corpus qualification).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import structlog
import torch

from navi_environment.config import EnvironmentSettings
from navi_environment.gmdag.format import GmdagAsset
from navi_environment.runtime.atlas import pack_scenes
from navi_environment.runtime.scene import RuntimeScene
from navi_environment.runtime.tracer import Tracer, fibonacci_directions

log = structlog.get_logger()

FAIL_STARVATION = 0.7  # best spawn starving at or above this -> the scene FAILs


@dataclass(frozen=True)
class QualificationReport:
    """Result of :func:`qualify_scene`.

    Attributes:
        scene: name of the scene (path or generator).
        positions: [N,3] float32 viable spawn positions, best (least starved) first.
        starvation: [N] float32 share of probe rays that see nothing, per spawn.
        clearance: [N] float32 distance to the nearest surface, per spawn (metres).
        candidates: candidates tried. free: candidates with enough clearance.
        verdict: ``"PASS"`` or ``"FAIL"``. reason: one line explaining the verdict.
    """

    scene: str
    positions: np.ndarray
    starvation: np.ndarray
    clearance: np.ndarray
    candidates: int
    free: int
    verdict: Literal["PASS", "FAIL"]
    reason: str

    @property
    def passed(self) -> bool:
        """True when the verdict is PASS."""
        return self.verdict == "PASS"

    def summary(self) -> dict[str, object]:
        """A JSON-friendly summary (no arrays)."""
        best = float(self.starvation[0]) if len(self.starvation) else None
        return {
            "scene": self.scene, "verdict": self.verdict, "reason": self.reason,
            "viable": len(self.positions), "candidates": self.candidates, "free": self.free,
            "best_starvation": best,
        }  # fmt: skip


def qualify_scene(
    scene_or_asset: RuntimeScene | GmdagAsset,
    settings: EnvironmentSettings | None = None,
    *,
    seed: int = 0,
    candidates: int | None = None,
    probe_rays: int = 256,
) -> QualificationReport:
    """Find viable spawn positions in a scene.

    Args:
        scene_or_asset: a runtime scene, or a GMDAG asset (decoded first).
        settings: environment settings (defaults from the environment / ``.env``).
        seed: candidate sampling seed (same seed -> same report).
        candidates: candidates to try (default ``scene.spawn_candidates``).
        probe_rays: rays of the coarse spherical probe per candidate.

    Returns:
        The :class:`QualificationReport`.
    """
    settings = settings or EnvironmentSettings()
    if isinstance(scene_or_asset, GmdagAsset):
        from navi_environment.runtime.loader import scene_from_asset

        scene = scene_from_asset(scene_or_asset, settings)
    else:
        scene = scene_or_asset
    count = int(candidates or settings.scene.spawn_candidates)
    tracer = Tracer(
        pack_scenes([scene]), settings.sensor, settings.tracer.model_copy(update={"device_kernel": "numba"})
    )
    free_points, free_clear, starvation, tried = _free_candidates(
        tracer, scene, settings, count, seed=seed, probe_rays=probe_rays
    )
    viable = _viable(starvation, settings)
    order = np.lexsort((-free_clear[viable], starvation[viable]))[: settings.scene.spawn_max]
    report_positions = free_points[viable][order]
    report_starvation = starvation[viable][order].astype(np.float32)
    verdict, reason = _verdict(len(free_points), report_starvation, settings)
    report = QualificationReport(
        scene=scene.name, positions=report_positions, starvation=report_starvation,
        clearance=free_clear[viable][order].astype(np.float32), candidates=tried, free=len(free_points),
        verdict=verdict, reason=reason,
    )  # fmt: skip
    log.info("runtime.spawn.qualified", **report.summary())
    return report


MAX_CANDIDATE_ROUNDS = 8  # small rooms in big cubes: keep drawing until enough free candidates


def _free_candidates(
    tracer: Tracer,
    scene: RuntimeScene,
    settings: EnvironmentSettings,
    count: int,
    *,
    seed: int,
    probe_rays: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Uniform candidates with clearance >= spawn_clearance_m.

    Clearance is the nearest probe-ray hit: the field query away from surfaces is only a coarse lower
    bound (a room's centre can read 0.6 m where the truth is 1.5 m), which would reject the inside of
    every building and leave only the open space around it. The query still vetoes any point it
    cannot prove is clear of contact (below the drone radius).

    Returns:
        (points [K,3], clearance [K], starvation [K], candidates tried).
    """
    rng = np.random.default_rng(seed)
    contact = np.float32(settings.physics.drone_radius_m)
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    tried = 0
    for _ in range(MAX_CANDIDATE_ROUNDS):
        points = rng.uniform(scene.bmin, scene.bmax, size=(count, 3)).astype(np.float32)
        bound = tracer.query(torch.from_numpy(points), torch.zeros(count, dtype=torch.int32)).numpy()
        points = points[bound >= contact]
        starvation, nearest = _probe(tracer, points, probe_rays)
        keep = nearest >= settings.scene.spawn_clearance_m
        found.append((points[keep], nearest[keep], starvation[keep]))
        tried += count
        if _viable(np.concatenate([f[2] for f in found]), settings).sum() >= settings.scene.spawn_max:
            break  # enough spawns as good as the best found so far (not merely free ones outside)
    points, clearance, starvation = (np.concatenate([f[i] for f in found]) for i in range(3))
    return points, clearance, starvation, tried


def _probe(tracer: Tracer, points: np.ndarray, probe_rays: int) -> tuple[np.ndarray, np.ndarray]:
    """([K] share of probe rays that miss within the horizon, [K] nearest hit distance in metres)."""
    if len(points) == 0:
        return np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.float32)
    dirs = fibonacci_directions(probe_rays)
    K = len(points)
    origins = torch.from_numpy(np.repeat(points, probe_rays, axis=0))
    rays = torch.from_numpy(np.tile(dirs, (K, 1)))
    t_max = torch.full((K * probe_rays,), tracer.horizon)
    t, hit = tracer.cast(
        origins, rays, t_max, torch.zeros_like(t_max), torch.zeros(K * probe_rays, dtype=torch.int32)
    )
    starvation = 1.0 - hit.numpy().reshape(K, probe_rays).mean(axis=1)
    nearest = t.numpy().reshape(K, probe_rays).min(axis=1)
    return starvation.astype(np.float32), nearest.astype(np.float32)


def _viable(starvation: np.ndarray, settings: EnvironmentSettings) -> np.ndarray:
    """[K] bool: below the absolute limit and within the margin of the best candidate."""
    if len(starvation) == 0:
        return np.zeros(0, dtype=bool)
    limit = min(
        settings.scene.spawn_max_starvation, float(starvation.min()) + settings.scene.spawn_starvation_margin
    )
    return (starvation < settings.scene.spawn_max_starvation) & (starvation <= limit)


def _verdict(
    free: int, starvation: np.ndarray, settings: EnvironmentSettings
) -> tuple[Literal["PASS", "FAIL"], str]:
    """PASS/FAIL with a one-line reason."""
    if free == 0:
        return "FAIL", f"no free-space candidate with clearance >= {settings.scene.spawn_clearance_m} m"
    if len(starvation) == 0:
        return (
            "FAIL",
            f"no viable spawn: every free candidate starves >= {settings.scene.spawn_max_starvation}",
        )
    if starvation[0] >= FAIL_STARVATION:
        return "FAIL", f"best spawn starvation {starvation[0]:.2f} >= {FAIL_STARVATION}"
    return "PASS", f"{len(starvation)} viable spawns, best starvation {starvation[0]:.2f}"
