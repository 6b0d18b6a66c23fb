"""``SdfDagBackend``: B drones in .gmdag scenes, stepped as one batch of tensors.

The canonical in-process environment of Navi (the trainer, the auditor and the server all drive
it). On CUDA everything on the step path is a batched tensor op or one kernel launch; the only host
syncs are "did any episode end?" (to re-trace just those rows) and scene rotation (rare). On CPU
(numba tracer) the same step runs as two numba kernels around the sensor trace
(:mod:`navi_environment.step.fused`), the torch ops being its oracle (``physics.step_kernel``).

Contract (also in ``docs/environment.md``)::

    backend = SdfDagBackend(settings, num_actors, device="cpu", scene_paths=None)
    obs = backend.reset(seed)            # [B,3,Az,El] f32
    out = backend.step(actions)          # actions [B,4], clipped to [-1, 1] inside
    out.obs, out.reward, out.terminated, out.truncated, out.final_obs, out.info
    pos, yaw = backend.poses()

Output tensors are preallocated and overwritten by the next ``step``: copy what you keep.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import structlog
import torch

from navi_contracts.paths import artifacts_root
from navi_environment.config import EnvironmentSettings
from navi_environment.corpus.manifest import family_of_name, scene_families
from navi_environment.runtime.scene import RuntimeScene
from navi_environment.runtime.scene_set import SceneSet
from navi_environment.step.episodes import EpisodeTracker, scene_rotation, unknown_families
from navi_environment.step.fused import FusedStep, resolve_step_kernel
from navi_environment.step.physics import Kinematics, move_with_collisions
from navi_environment.step.rewards import REWARD_TERMS, RewardInputs, Rewards
from navi_environment.tracer import Tracer, configure_numba

log = structlog.get_logger()

INFO_KEYS = (
    *(f"reward/{t}" for t in REWARD_TERMS),
    "collision", "speed", "coverage", "episode_return", "episode_length", "scene_index",
)  # fmt: skip


@dataclass(frozen=True)
class StepOutput:
    """One batched step. All tensors live on the backend's device and are reused by the next step.

    Attributes:
        obs: [B,3,Az,El] observation (after auto-reset for rows that ended).
        reward: [B] f32. terminated: [B] bool. truncated: [B] bool.
        final_obs: [B,3,Az,El] last observation of rows that ended this step; equals ``obs`` elsewhere.
        info: [B] tensors: ``reward/<term>`` (weighted), ``collision`` (0/1), ``speed`` (m/s),
            ``coverage`` (visit cells this episode), ``episode_return``, ``episode_length``
            (meaningful where an episode ended), ``scene_index`` (corpus index).
    """

    obs: torch.Tensor
    reward: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor
    final_obs: torch.Tensor
    info: dict[str, torch.Tensor]


def corpus_paths(settings: EnvironmentSettings) -> list[Path]:
    """The ``.gmdag`` files of the configured corpus folder (sorted), or a clear error."""
    folder = artifacts_root() / settings.compile.corpus_dir
    paths = sorted(folder.glob("*.gmdag"))
    if not paths:
        raise FileNotFoundError(
            f"no .gmdag scenes in {folder}; build the corpus (navi-environment corpus ...) "
            "or pass scene_paths"
        )
    return paths


def spread_start_scenes(num_actors: int, num_scenes: int, max_cached: int) -> torch.Tensor:
    """[B] first scene of each drone (its position in the scene rotation): evenly spaced over it.

    A corpus manifest lists scenes family by family, so starting drones in scenes 0, 1, 2, ...
    would keep a short run inside the first family (in 30 minutes 4 drones saw only apartments
    and mazes of the default corpus). Spacing the starts over the corpus puts every family in the
    batch from the first rollout; at most ``max_cached`` distinct scenes are in use so the runtime
    scene cache never thrashes.
    """
    slots = max(1, min(num_actors, num_scenes, max_cached))
    slot = torch.arange(num_actors) % slots
    return (slot * num_scenes) // slots


class SdfDagBackend:
    """Batched drone environment over sphere-traced SDF scenes.

    Args:
        settings: environment settings.
        num_actors: B, the number of drones.
        device: ``"cpu"`` (numba kernels) or a CUDA device (torch kernels).
        scene_paths: ``.gmdag`` files; None -> every file of ``settings.compile.corpus_dir``.
        scenes: in-memory runtime scenes instead of files (tests, analytic scenes).
    """

    def __init__(
        self,
        settings: EnvironmentSettings,
        num_actors: int,
        device: str | torch.device = "cpu",
        scene_paths: list[Path] | None = None,
        *,
        scenes: Sequence[RuntimeScene] | None = None,
    ) -> None:
        if num_actors < 1:
            raise ValueError(f"num_actors must be >= 1, got {num_actors}")
        self.settings = settings
        self.num_actors = num_actors
        self.device = torch.device(device)
        # Before any scene is decoded: the compiler's parallel kernels would fix the layer first.
        configure_numba(settings.tracer)
        corpus: list[Path | RuntimeScene] = (
            list(scenes) if scenes else list(scene_paths or corpus_paths(settings))
        )
        self.scenes = SceneSet(corpus, settings, self.device)
        B, sensor = num_actors, settings.sensor
        self.observation_shape = (3, sensor.azimuth_bins, sensor.elevation_bins)
        self.rotation = self._rotation(corpus)
        max_cached = settings.scene.max_cached_scenes
        self._initial_position = spread_start_scenes(B, len(self.rotation), max_cached).to(self.device)
        self.rotation_position = self._initial_position.clone()
        self.scene_index = self.rotation[self.rotation_position]
        self.scenes.ensure(self.scene_index.tolist())
        assert self.scenes.atlas is not None
        self.tracer = Tracer(self.scenes.atlas, sensor, settings.tracer, self.device)
        self.kinematics = Kinematics(settings.physics, self.device)
        self.rewards = Rewards(settings.reward, settings.physics, B, self.device)
        self.episodes = EpisodeTracker(settings.episode, B, self.device)
        self._allocate(B)
        cone = math.cos(math.radians(settings.physics.forward_cone_deg))
        ahead = self.tracer.dirs_local[:, 0] >= cone
        self.forward_rays = ahead.nonzero().squeeze(1)
        self._generator = torch.Generator(device=self.device)
        self._reachable: dict[int, int] = {}
        self._needs_reset = True
        self.step_kernel = resolve_step_kernel(settings.physics.step_kernel, self.tracer.kernel)
        self._fused = FusedStep(self) if self.step_kernel == "numba" else None

    def _allocate(self, B: int) -> None:
        """Preallocate state and outputs (sentinel-filled until the first reset)."""
        dev = self.device
        self.position = torch.zeros(B, 3, device=dev)
        self.yaw = torch.zeros(B, device=dev)
        self.spawn = torch.zeros(B, 3, device=dev)
        self.smoothed = torch.zeros(B, 4, device=dev)
        self.clearance = torch.zeros(B, device=dev)
        self.atlas_ids = torch.zeros(B, dtype=torch.int32, device=dev)
        self.obs = torch.full((B, *self.observation_shape), -1.0, device=dev)
        self.final_obs = torch.full_like(self.obs, -1.0)
        self.reward = torch.zeros(B, device=dev)
        self.terminated = torch.zeros(B, dtype=torch.bool, device=dev)
        self.truncated = torch.zeros(B, dtype=torch.bool, device=dev)
        self.info_block = torch.zeros(len(INFO_KEYS), B, device=dev)  # one array for the fused step
        self.info = dict(zip(INFO_KEYS, self.info_block.unbind(0), strict=True))
        self._output = StepOutput(
            self.obs, self.reward, self.terminated, self.truncated, self.final_obs, self.info
        )

    def reset(self, seed: int | None = None) -> torch.Tensor:
        """Start a new episode for every drone and return the first observation [B,3,Az,El].

        Args:
            seed: seeds spawn and heading sampling (None -> ``settings.seed``); same seed, same run.
        """
        self._generator.manual_seed(int(self.settings.seed if seed is None else seed))
        self.episodes.reset_all()
        self.rotation_position.copy_(self._initial_position)
        self.scene_index.copy_(self.rotation[self.rotation_position])
        self._sync_atlas()
        self._respawn(torch.arange(self.num_actors, device=self.device))
        self._needs_reset = False
        return self.obs

    def step(self, actions: torch.Tensor) -> StepOutput:
        """Advance every drone by one step.

        Args:
            actions: [B,4] forward, vertical, lateral, yaw rate (clipped to [-1, 1]; NaN -> 0).

        Returns:
            The :class:`StepOutput` (buffers reused by the next call).
        """
        if self._needs_reset:
            raise RuntimeError("call reset() before step()")
        actions = self._check_actions(actions)
        ended = self._fused.step(actions) if self._fused is not None else self._torch_step(actions)
        if ended.numel():
            self._end_episodes(ended)
        return self._output

    def _torch_step(self, actions: torch.Tensor) -> torch.Tensor:
        """The step as torch ops (CUDA, and the oracle of the fused CPU step); returns ended rows."""
        forward_clear = self.obs[:, 0].reshape(self.num_actors, -1)[:, self.forward_rays].amin(dim=1)
        forward_clear = forward_clear * self.settings.sensor.horizon_m
        self.smoothed, executed = self.kinematics.command(actions, self.smoothed, forward_clear)
        displacement, new_yaw = self.kinematics.displacement(executed, self.yaw)
        voxel = self._normal_step()
        moved = move_with_collisions(
            self.tracer, self.position, displacement, self.clearance, self.atlas_ids,
            radius=self.settings.physics.drone_radius_m, dt=self.kinematics.dt,
            normal_step=voxel, skin=2.0 * self.settings.tracer.hit_epsilon_voxels * voxel,
        )  # fmt: skip
        speed = (moved.position - self.position).norm(dim=1) / self.kinematics.dt
        self.position, self.yaw, self.clearance = moved.position, new_yaw, moved.clearance
        horizon = self.settings.sensor.horizon_m
        nearest, hit_share = self.tracer.trace_sensor(
            self.position, self.yaw, self.atlas_ids, self.obs, copy_to=self.final_obs
        )
        reward, terms, _ = self.rewards.compute(
            RewardInputs(self.obs, nearest * horizon, hit_share, self.position, self.yaw, self.spawn,
                         moved.collided, moved.impact_speed, self.forward_rays, horizon)
        )  # fmt: skip
        self.reward.copy_(reward)
        self.episodes.advance(reward)
        terminated, truncated = self.episodes.end_flags(1.0 - hit_share, self._outside())
        self.terminated.copy_(terminated)
        self.truncated.copy_(truncated)
        self._fill_info(terms, moved.collided, speed)
        return (terminated | truncated).nonzero().squeeze(1)

    def poses(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Copies of the drone positions [B,3] and headings [B] (rad)."""
        return self.position.clone(), self.yaw.clone()

    def close(self) -> None:
        """Release nothing (kept for symmetry with other environments)."""

    # --- planned episodes (paired evaluation) -----------------------------------------------------

    @property
    def num_scenes(self) -> int:
        """Scenes in the corpus (planned episodes name them by corpus index)."""
        return len(self.scenes)

    @property
    def dt(self) -> float:
        """Seconds per step."""
        return float(self.settings.physics.dt)

    def sample_starts(self, scene: int, count: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``count`` start poses in corpus scene ``scene``, drawn from its qualified spawns.

        Distinct spawns while the scene has enough of them; the same ``seed`` gives the same poses.

        Returns:
            ``(positions [count,3], yaws [count])`` on the CPU.
        """
        spawns = torch.from_numpy(self.scenes.report(scene).positions)
        generator = torch.Generator().manual_seed(int(seed))
        if count <= len(spawns):
            pick = torch.randperm(len(spawns), generator=generator)[:count]
        else:
            pick = torch.randint(len(spawns), (count,), generator=generator)
        yaw = (torch.rand(count, generator=generator) * 2.0 - 1.0) * math.pi
        return spawns[pick].float(), yaw

    def start_episodes(
        self, rows: torch.Tensor, scenes: torch.Tensor, positions: torch.Tensor, yaws: torch.Tensor
    ) -> torch.Tensor:
        """Start new episodes for ``rows`` (long [K]) at given poses, replacing any auto-reset.

        Args:
            rows: drones to place. scenes: [K] corpus scene indices.
            positions: [K,3] start positions (metres). yaws: [K] headings (rad).

        Returns:
            The observation buffer [B,3,Az,El] (the same tensor ``step`` returns), now holding the
            first observation of the placed drones.
        """
        if rows.numel() == 0:
            return self.obs
        rows = rows.to(self.device)
        self.scene_index[rows] = scenes.to(self.device, torch.int64)
        self._sync_atlas()
        self._place(rows, positions.to(self.device, torch.float32), yaws.to(self.device, torch.float32))
        return self.obs

    def hold_scenes(self, count: int) -> None:
        """Keep ``count`` scenes decoded from now on (never fewer than ``scene.max_cached_scenes``).

        An evaluation plan visits every scene it names once per policy: it holds them all rather
        than decode each again for the next policy (navi_actor.evaluation.plan.hold_plan_scenes).
        """
        self.scenes.hold(count)

    def reachable_cells(self, scene: int) -> int:
        """Visit cells (``reward.visit_cell_m``) of corpus scene ``scene`` a drone can reach from its spawns.

        The denominator of coverage as a share of the scene (computed once per scene).
        """
        if scene not in self._reachable:
            from navi_environment.runtime.reachable import reachable_cell_count

            self._reachable[scene] = reachable_cell_count(
                self.scenes.scene(scene), self.scenes.report(scene).positions, self.settings
            )
        return self._reachable[scene]

    # --- internals -------------------------------------------------------------------------------

    def _check_actions(self, actions: torch.Tensor) -> torch.Tensor:
        if not isinstance(actions, torch.Tensor):
            actions = torch.as_tensor(np.asarray(actions), dtype=torch.float32)
        if actions.shape != (self.num_actors, 4):
            raise ValueError(f"actions must have shape ({self.num_actors}, 4), got {tuple(actions.shape)}")
        return actions.to(device=self.device, dtype=torch.float32)

    def _normal_step(self) -> float:
        assert self.scenes.atlas is not None
        return float(self.scenes.atlas.scene_f[:, 3].max())

    def _outside(self) -> torch.Tensor:
        bounds = self.scenes.bounds[self.atlas_ids.long()]
        return ((self.position < bounds[:, :3]) | (self.position >= bounds[:, 3:])).any(dim=1)

    def _fill_info(self, terms: torch.Tensor, collided: torch.Tensor, speed: torch.Tensor) -> None:
        for i, name in enumerate(REWARD_TERMS):
            self.info[f"reward/{name}"].copy_(terms[i])
        self.info["collision"].copy_(collided.float())
        self.info["speed"].copy_(speed)
        self.info["coverage"].copy_(self.rewards.coverage)
        self.info["episode_return"].copy_(self.episodes.episode_return)
        self.info["episode_length"].copy_(self.episodes.length.float())
        self.info["scene_index"].copy_(self.scene_index.float())

    def _end_episodes(self, rows: torch.Tensor) -> None:
        """Auto-reset drones ``rows`` (long [K]): rotate scenes where due, respawn, re-trace."""
        rotate = self.episodes.start_episodes(rows)
        if len(self.rotation) > 1 and bool(rotate.any()):
            moving = rows[rotate]
            self.rotation_position[moving] = (self.rotation_position[moving] + 1) % len(self.rotation)
            self.scene_index[moving] = self.rotation[self.rotation_position[moving]]
            self._sync_atlas()
        self._respawn(rows)

    def _rotation(self, corpus: Sequence[Path | RuntimeScene]) -> torch.Tensor:
        """[R] corpus indices in the order drones fly them (``episode.family_weights``)."""
        weights = self.settings.episode.family_weights
        if not weights:
            return torch.arange(len(corpus), device=self.device)
        files = [entry for entry in corpus if isinstance(entry, Path)]
        of_file = dict(zip(files, scene_families(files), strict=True))
        families = [of_file[e] if isinstance(e, Path) else family_of_name(e.name) for e in corpus]
        missing = unknown_families(families, weights)
        if missing:
            log.warning("env.rotation.unknown_family", families=missing, known=sorted(set(families)))
        order = scene_rotation(families, weights)
        log.info("env.rotation.weighted", weights=dict(weights), scenes=len(corpus), rotation=len(order))
        return torch.tensor(order, dtype=torch.int64, device=self.device)

    def _sync_atlas(self) -> None:
        """Repack the atlas if the scenes in use changed, then refresh every drone's atlas id."""
        if self.scenes.ensure(self.scene_index.tolist()) and hasattr(self, "tracer"):
            assert self.scenes.atlas is not None
            self.tracer.set_atlas(self.scenes.atlas)
        self.atlas_ids.copy_(self.scenes.corpus_to_atlas[self.scene_index])

    def _respawn(self, rows: torch.Tensor) -> None:
        """New episode for ``rows``: random qualified spawn and heading, fresh memory, first obs."""
        ids = self.atlas_ids[rows]
        spawn = self.scenes.sample_spawns(ids, self._generator)
        yaw = (torch.rand(rows.shape[0], device=self.device, generator=self._generator) * 2.0 - 1.0) * math.pi
        self._place(rows, spawn, yaw)

    def _place(self, rows: torch.Tensor, spawn: torch.Tensor, yaw: torch.Tensor) -> None:
        """Start an episode for ``rows`` at ``spawn`` [K,3] facing ``yaw`` [K] in their current scenes."""
        ids = self.atlas_ids[rows]
        self.position[rows] = spawn
        self.spawn[rows] = spawn
        self.yaw[rows] = yaw
        self.smoothed[rows] = 0.0
        clearance = self.tracer.query(spawn, ids)
        self.clearance[rows] = clearance
        first = torch.empty((rows.shape[0], *self.observation_shape), device=self.device)
        nearest, _ = self.tracer.trace_sensor(spawn, yaw, ids, first)
        self.obs[rows] = first  # final_obs keeps the ended episode's last observation
        self.rewards.reset_rows(rows, nearest * self.settings.sensor.horizon_m)
        self.episodes.length[rows] = 0
        self.episodes.episode_return[rows] = 0.0
