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

A scene open to the sky (a site, a stadium, a roofless ruin) starves every probe that looks up: it
is reported as ``sky="open"`` when its best spawn starves at least ``OPEN_SKY_STARVATION``, and
judged a second way when the first finds nothing: by its *ground starvation*, the share of the
probe's downward rays that see nothing. Spawns whose downward rays see the ground pass it as
``sky="open"``; a scene with neither kind of spawn cannot host drones.

This is the one spawn qualification in Navi: ``qualify-gmdag``, corpus building and the runtime
backend all call :func:`qualify_scene` with the same defaults, so they find the same spawns.
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
from navi_environment.tracer import Tracer, fibonacci_directions

log = structlog.get_logger()

FAIL_STARVATION = 0.7  # best spawn starving at or above this -> the scene FAILs
MIN_CANDIDATES = 2048
"""Candidates per round at least (``scene.spawn_candidates`` when larger): a small building in a big
padded cube needs this many to be sampled at all."""
OPEN_SKY_STARVATION = 0.25
"""A scene whose best spawn sees nothing in this share of directions is open to the sky."""
DOWN_RAY_Z = -0.2
"""Probe rays pointing at least this far down count for the ground starvation."""


class SceneRejectedError(ValueError):
    """A scene cannot host drones; the message names the scene and the reason in one line."""


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
        sky: ``"enclosed"`` (spawns see surfaces all around) or ``"open"`` (open to the sky:
            spawns see the ground below and nothing above).
    """

    scene: str
    positions: np.ndarray
    starvation: np.ndarray
    clearance: np.ndarray
    candidates: int
    free: int
    verdict: Literal["PASS", "FAIL"]
    reason: str
    sky: Literal["enclosed", "open"] = "enclosed"

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
            "best_starvation": best, "sky": self.sky,
        }  # fmt: skip

    def require_pass(self) -> QualificationReport:
        """This report when it passed; else :class:`SceneRejectedError` naming the scene and reason."""
        if not self.passed:
            raise SceneRejectedError(f"{self.scene}: {self.reason}")
        return self


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
    count = int(candidates or max(settings.scene.spawn_candidates, MIN_CANDIDATES))
    tracer = Tracer(
        pack_scenes([scene]), settings.sensor, settings.tracer.model_copy(update={"device_kernel": "numba"})
    )
    free = _free_candidates(tracer, scene, settings, count, seed=seed, probe_rays=probe_rays)
    report = _judge(scene.name, free, settings)
    log.info("runtime.spawn.qualified", **report.summary())
    return report


def _judge(name: str, free: _Candidates, settings: EnvironmentSettings) -> QualificationReport:
    """Enclosed verdict first; when it fails with free space, the open-sky verdict."""
    verdict, reason = _verdict(
        len(free.points), free.starvation[_viable(free.starvation, settings)], settings
    )
    sky: Literal["enclosed", "open"] = "enclosed"
    score = free.starvation
    if verdict == "PASS" and float(score.min()) >= OPEN_SKY_STARVATION:
        sky, reason = "open", f"open to the sky: {reason}"
    if verdict == "FAIL" and len(free.points):
        open_verdict, open_reason = _open_verdict(free.ground, settings)
        if open_verdict == "PASS":
            verdict, reason, sky, score = open_verdict, open_reason, "open", free.ground
    viable = _viable(score, settings) if verdict == "PASS" else np.zeros(len(score), dtype=bool)
    # enclosed: least starved, then most clearance; open: least ground starvation, then nearest
    # to a surface (spawns near the ground and the buildings on it, not high in the sky)
    tie = -free.clearance[viable] if sky == "enclosed" else free.clearance[viable]
    order = np.lexsort((tie, score[viable]))[: settings.scene.spawn_max]
    return QualificationReport(
        scene=name, positions=free.points[viable][order],
        starvation=free.starvation[viable][order].astype(np.float32),
        clearance=free.clearance[viable][order].astype(np.float32), candidates=free.tried,
        free=len(free.points), verdict=verdict, reason=reason, sky=sky,
    )  # fmt: skip


@dataclass(frozen=True)
class _Candidates:
    """Free candidates: points [K,3], clearance, starvation and ground starvation [K]; tried."""

    points: np.ndarray
    clearance: np.ndarray
    starvation: np.ndarray
    ground: np.ndarray
    tried: int


MAX_CANDIDATE_ROUNDS = 8  # small rooms in big cubes: keep drawing until enough free candidates


def _free_candidates(
    tracer: Tracer,
    scene: RuntimeScene,
    settings: EnvironmentSettings,
    count: int,
    *,
    seed: int,
    probe_rays: int,
) -> _Candidates:
    """Uniform candidates with clearance >= spawn_clearance_m.

    Clearance is the nearest probe-ray hit: the field query away from surfaces is only a coarse lower
    bound (a room's centre can read 0.6 m where the truth is 1.5 m), which would reject the inside of
    every building and leave only the open space around it. The query still vetoes any point it
    cannot prove is clear of contact (below the drone radius).
    """
    rng = np.random.default_rng(seed)
    contact = np.float32(settings.physics.drone_radius_m)
    found: list[tuple[np.ndarray, ...]] = []
    tried = 0
    for _ in range(MAX_CANDIDATE_ROUNDS):
        points = rng.uniform(scene.bmin, scene.bmax, size=(count, 3)).astype(np.float32)
        bound = tracer.query(torch.from_numpy(points), torch.zeros(count, dtype=torch.int32)).numpy()
        points = points[bound >= contact]
        starvation, ground, nearest = _probe(tracer, points, probe_rays)
        keep = nearest >= settings.scene.spawn_clearance_m
        found.append((points[keep], nearest[keep], starvation[keep], ground[keep]))
        tried += count
        if _enough(np.concatenate([f[2] for f in found]), np.concatenate([f[3] for f in found]), settings):
            break
    points, clearance, starvation, ground = (np.concatenate([f[i] for f in found]) for i in range(4))
    return _Candidates(points, clearance, starvation, ground, tried)


def _enough(starvation: np.ndarray, ground: np.ndarray, settings: EnvironmentSettings) -> bool:
    """Enough spawns as good as the best found so far (not merely free ones outside)."""
    wanted = settings.scene.spawn_max
    if _viable(starvation, settings).sum() >= wanted:
        return True
    open_sky = len(starvation) > 0 and float(starvation.min()) >= FAIL_STARVATION
    return bool(open_sky and _viable(ground, settings).sum() >= wanted)


def _probe(tracer: Tracer, points: np.ndarray, probe_rays: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """([K] share of probe rays that miss within the horizon, [K] share of the downward ones that
    miss, [K] nearest hit distance in metres)."""
    if len(points) == 0:
        empty = np.zeros(0, dtype=np.float32)
        return empty, empty, empty
    dirs = fibonacci_directions(probe_rays)
    K = len(points)
    origins = torch.from_numpy(np.repeat(points, probe_rays, axis=0))
    rays = torch.from_numpy(np.tile(dirs, (K, 1)))
    t_max = torch.full((K * probe_rays,), tracer.horizon)
    t, hit = tracer.cast(
        origins, rays, t_max, torch.zeros_like(t_max), torch.zeros(K * probe_rays, dtype=torch.int32)
    )
    hits = hit.numpy().reshape(K, probe_rays)
    starvation = 1.0 - hits.mean(axis=1)
    down = np.asarray(dirs)[:, 2] <= DOWN_RAY_Z
    ground = 1.0 - hits[:, down].mean(axis=1)
    nearest = t.numpy().reshape(K, probe_rays).min(axis=1)
    return starvation.astype(np.float32), ground.astype(np.float32), nearest.astype(np.float32)


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
    """PASS/FAIL with a one-line reason (``starvation``: the viable spawns' values)."""
    if free == 0:
        return (
            "FAIL",
            "cannot host drones: no free-space candidate with clearance >= "
            f"{settings.scene.spawn_clearance_m} m",
        )
    if len(starvation) == 0:
        return (
            "FAIL",
            "cannot host drones: no viable spawn, every free candidate starves >= "
            f"{settings.scene.spawn_max_starvation} and sees no ground below",
        )
    best = float(starvation.min())
    if best >= FAIL_STARVATION:
        return "FAIL", f"cannot host drones: best spawn starvation {best:.2f} >= {FAIL_STARVATION}"
    kept = min(len(starvation), settings.scene.spawn_max)
    return "PASS", f"{len(starvation)} viable spawns ({kept} distinct kept), best starvation {best:.2f}"


def _open_verdict(ground: np.ndarray, settings: EnvironmentSettings) -> tuple[Literal["PASS", "FAIL"], str]:
    """The open-sky verdict: free candidates that see the ground below."""
    viable = ground[_viable(ground, settings)]
    if len(viable) == 0 or float(viable.min()) >= FAIL_STARVATION:
        return "FAIL", "no ground below any free candidate"
    kept = min(len(viable), settings.scene.spawn_max)
    return (
        "PASS",
        f"open to the sky: {len(viable)} viable spawns over ground ({kept} distinct kept), "
        f"best ground starvation {float(viable.min()):.2f}",
    )
