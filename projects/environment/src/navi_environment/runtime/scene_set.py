"""The scenes a batch of drones is flying in: corpus entries, the packed atlas and spawn tables.

Drones carry a *corpus index*; the tracer wants an *atlas id*. This object owns the mapping and
repacks the atlas only when the set of corpus entries in use changes (scene rotation), loading
scenes through the LRU cache and qualifying each scene's spawns once.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import structlog
import torch

from navi_environment.config import EnvironmentSettings
from navi_environment.runtime.atlas import SceneAtlas, pack_scenes
from navi_environment.runtime.loader import SceneCache
from navi_environment.runtime.scene import RuntimeScene
from navi_environment.runtime.spawn import QualificationReport, qualify_scene

log = structlog.get_logger()

CorpusEntry = Path | RuntimeScene


class SceneSet:
    """Corpus entries, the atlas of those in use, and per-atlas-scene spawn tables on ``device``.

    Args:
        corpus: scene files or in-memory runtime scenes (at least one).
        settings: environment settings.
        device: where spawn tables and the corpus->atlas map live.
    """

    def __init__(
        self, corpus: Sequence[CorpusEntry], settings: EnvironmentSettings, device: torch.device
    ) -> None:
        if not corpus:
            raise ValueError("the environment needs at least one scene")
        self.corpus = list(corpus)
        self.settings = settings
        self.device = device
        self._cache = SceneCache(settings)
        self._reports: dict[int, QualificationReport] = {}
        self.packed: tuple[int, ...] = ()
        self.atlas: SceneAtlas | None = None

    def __len__(self) -> int:
        return len(self.corpus)

    def scene(self, index: int) -> RuntimeScene:
        """Runtime scene of corpus entry ``index`` (loaded through the LRU cache)."""
        entry = self.corpus[index]
        scene = entry if isinstance(entry, RuntimeScene) else self._cache.get(entry)
        radius = self.settings.physics.drone_radius_m
        if scene.band_m < radius:
            raise ValueError(
                f"{scene.name}: brick band {scene.band_m:.3f} m is narrower than the drone radius "
                f"{radius} m; build it with scene_from_asset or room_scene(min_band_m=...) "
                "so collisions are exact"
            )
        return scene

    def hold(self, count: int) -> None:
        """Keep at least ``count`` decoded scenes loaded (:meth:`SceneCache.hold`)."""
        self._cache.hold(count)

    def report(self, index: int) -> QualificationReport:
        """Spawn qualification of corpus entry ``index`` (computed once, deterministic).

        The same call as ``qualify-gmdag`` (seed 0, default candidates), so a scene's spawns here
        are the ones that command reports. Raises :class:`SceneRejectedError` for a scene that
        cannot host drones.
        """
        if index not in self._reports:
            report = qualify_scene(self.scene(index), self.settings, seed=0).require_pass()
            log.info(
                "runtime.scene.spawns",
                scene=report.scene,
                distinct_spawns=len(report.positions),
                sky=report.sky,
            )
            self._reports[index] = report
        return self._reports[index]

    def ensure(self, needed: Sequence[int]) -> bool:
        """Pack exactly the corpus entries ``needed`` (sorted, unique). Returns True if repacked."""
        wanted = tuple(sorted({int(i) for i in needed}))
        if wanted == self.packed and self.atlas is not None:
            return False
        scenes = [self.scene(i) for i in wanted]
        reports = [self.report(i) for i in wanted]
        self.atlas = pack_scenes(scenes)
        self.packed = wanted
        mapping = np.full(len(self.corpus), -1, dtype=np.int32)
        mapping[list(wanted)] = np.arange(len(wanted), dtype=np.int32)
        self.corpus_to_atlas = torch.from_numpy(mapping).to(self.device)
        counts = np.array([len(r.positions) for r in reports], dtype=np.int64)
        self.spawn_count = torch.from_numpy(counts).to(self.device)
        self.spawn_offset = torch.from_numpy(np.concatenate([[0], np.cumsum(counts)[:-1]])).to(self.device)
        self.spawn_table = torch.from_numpy(np.concatenate([r.positions for r in reports])).to(self.device)
        bounds = np.stack([np.concatenate([s.bmin, s.bmax]) for s in scenes]).astype(np.float32)
        self.bounds = torch.from_numpy(bounds).to(self.device)  # [S, 6] bmin xyz, bmax xyz
        log.info("runtime.atlas.packed", scenes=list(wanted), bytes=sum(s.nbytes for s in scenes))
        return True

    def sample_spawns(self, atlas_ids: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """[K,3] spawn positions from each drone's scene's qualified spawns, distinct within a call.

        Each scene draws a uniform random start in its spawn table; the drones of that scene take
        consecutive entries from there (wrapping), so every drone's spawn is uniform over the table
        and drones reset together never share a start while the scene has enough spawns.
        """
        ids = atlas_ids.long()
        order = torch.argsort(ids, stable=True)
        ordered = ids[order]
        rank = torch.empty_like(ids)
        rank[order] = torch.arange(ids.shape[0], device=ids.device) - torch.searchsorted(ordered, ordered)
        count = self.spawn_count[ids]
        start = torch.rand(self.spawn_count.shape[0], device=self.device, generator=generator)
        first = (start * self.spawn_count).long().clamp(max=self.spawn_count - 1)
        pick = self.spawn_offset[ids] + (first[ids] + rank) % count
        return self.spawn_table[pick]
