"""Build the in-process environment the trainer, evaluator and benchmarks step.

``sdfdag`` is the real simulator (``navi_environment.backend.SdfDagBackend``) on one ``.gmdag`` file,
a corpus folder, or the default corpus, which is built first when missing (with progress output).
``point`` is :class:`~navi_actor.envs.point.PointGoalEnv`, a toy used by smoke runs.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from navi_actor.config import EnvironmentChoice
from navi_actor.envs.point import PointGoalEnv
from navi_actor.envs.protocol import VectorEnv

if TYPE_CHECKING:
    from navi_environment.config import EnvironmentSettings

log = structlog.get_logger()

#: The most drones an evaluation flies at once when it gives each planned episode its own drone
#: (``build_environment(..., drones_per_scene=K)``): a big corpus's plan flies in waves, not all at once.
MAX_EVALUATION_DRONES = 128


@dataclass
class BuiltEnvironment:
    """An environment plus a JSON-able summary of what it simulates (stored in checkpoints)."""

    env: VectorEnv
    corpus_summary: dict[str, Any] = field(default_factory=dict)


def corpus_scenes(folder: Path) -> list[Path]:
    """Scenes of a corpus folder (``navi_environment.corpus.manifest.corpus_scene_files``).

    Raises:
        FileNotFoundError: the folder holds no usable scene.
    """
    from navi_environment.corpus.manifest import corpus_scene_files

    return corpus_scene_files(folder)


def scene_paths(choice: EnvironmentChoice, env_settings: EnvironmentSettings) -> list[Path]:
    """The scenes named by ``--gmdag-file`` / ``--corpus``, or the default corpus (built if missing)."""
    if choice.gmdag_file is not None:
        if not choice.gmdag_file.is_file():
            raise FileNotFoundError(f"--gmdag-file {choice.gmdag_file} does not exist")
        return [choice.gmdag_file]
    if choice.corpus is not None:
        return corpus_scenes(choice.corpus)
    from navi_environment.corpus.prepare import ensure_default_corpus

    log.info("actor.env.corpus_check", message="locating the default corpus (built on first use)")
    return corpus_scenes(ensure_default_corpus(env_settings=env_settings, progress=True))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def build_environment(
    choice: EnvironmentChoice,
    num_actors: int,
    device: str,
    env_settings: EnvironmentSettings | None = None,
    *,
    drones_per_scene: int | None = None,
) -> BuiltEnvironment:
    """Create the environment named by ``choice``.

    Args:
        choice: the ``environment`` settings group.
        num_actors: B, drones stepped together.
        device: torch device string.
        env_settings: simulator settings (default: ``EnvironmentSettings()``, i.e. ``NAVI_ENV_*``).
        drones_per_scene: K, to give each of an evaluation plan's K starts per scene its own drone:
            the simulator then steps K x scenes drones (at most :data:`MAX_EVALUATION_DRONES`) instead
            of ``num_actors``, so the plan flies in one wave (one step of 120 drones costs far less
            than 30 steps of 4). The toy ``point`` backend keeps ``num_actors``.

    Returns:
        :class:`BuiltEnvironment`.
    """
    if choice.backend == "point":
        env = PointGoalEnv(
            num_actors,
            azimuth=choice.point_azimuth,
            elevation=choice.point_elevation,
            max_steps=choice.point_max_steps,
            device=device,
        )
        return BuiltEnvironment(
            env, {"backend": "point", "scenes": 0, "episode_max_steps": choice.point_max_steps}
        )
    from navi_environment.backend import SdfDagBackend
    from navi_environment.config import EnvironmentSettings
    from navi_environment.tracer import configure_numba

    env_settings = env_settings or EnvironmentSettings()  # episode length: episode.max_steps, one place
    # Before anything numba-parallel runs (building the default corpus does): numba fixes its
    # threading layer at the first parallel launch, and OpenMP's spinning pool starves torch's.
    configure_numba(env_settings.tracer)
    scenes = scene_paths(choice, env_settings)
    if drones_per_scene is not None:
        num_actors = max(1, min(MAX_EVALUATION_DRONES, drones_per_scene * len(scenes)))
    backend = SdfDagBackend(env_settings, num_actors, device=device, scene_paths=scenes)
    names = [path.name for path in scenes]
    summary = {
        "backend": "sdfdag",
        "scenes": len(names),
        "names": names[:64],
        # What makes two runs' returns comparable beyond the scenes (registry promotion, resume):
        "episode_max_steps": env_settings.episode.max_steps,
        # (the rotation's weights are named on their own, and only when set, so that an unweighted
        # run keeps the registry comparison key it had before the setting existed)
        "reward_settings": _digest(
            env_settings.reward.model_dump_json()
            + env_settings.episode.model_dump_json(exclude={"family_weights"})
        ),
    }
    if env_settings.episode.family_weights:  # a reward EMA of another mix of scenes
        summary["family_weights"] = dict(env_settings.episode.family_weights)
    log.info("actor.env.built", backend="sdfdag", scenes=len(names), actors=num_actors, device=device)
    return BuiltEnvironment(backend, summary)
