"""Build the in-process environment the trainer, evaluator and benchmarks step.

``sdfdag`` is the real simulator (``navi_environment.backend.SdfDagBackend``) on one ``.gmdag`` file,
a corpus folder, or the default corpus, which is built first when missing (with progress output).
``point`` is :class:`~navi_actor.runners.point_env.PointGoalEnv`, a toy used by smoke runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from navi_actor.config import EnvironmentChoice
from navi_actor.runners.env_protocol import VectorEnv
from navi_actor.runners.point_env import PointGoalEnv

log = structlog.get_logger()


@dataclass
class BuiltEnvironment:
    """An environment plus a JSON-able summary of what it simulates (stored in checkpoints)."""

    env: VectorEnv
    corpus_summary: dict[str, Any] = field(default_factory=dict)


def _default_corpus() -> Path | None:
    """The default corpus folder, built first if missing; None lets the backend use its own setting."""
    try:
        from navi_environment.corpus import ensure_default_corpus  # type: ignore[attr-defined]
    except ImportError:
        return None
    log.info("actor.env.corpus_check", message="locating the default corpus (built on first use)")
    return Path(ensure_default_corpus())


def _scene_paths(choice: EnvironmentChoice) -> list[Path] | None:
    if choice.gmdag_file is not None:
        if not choice.gmdag_file.is_file():
            raise FileNotFoundError(f"--gmdag-file {choice.gmdag_file} does not exist")
        return [choice.gmdag_file]
    folder = choice.corpus if choice.corpus is not None else _default_corpus()
    if folder is None:
        return None
    scenes = sorted(Path(folder).rglob("*.gmdag"))
    if not scenes:
        raise FileNotFoundError(f"corpus folder {folder} holds no .gmdag scenes")
    return scenes


def build_environment(choice: EnvironmentChoice, num_actors: int, device: str) -> BuiltEnvironment:
    """Create the environment named by ``choice``.

    Args:
        choice: the ``environment`` settings group.
        num_actors: B, drones stepped together.
        device: torch device string.

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
        return BuiltEnvironment(env, {"backend": "point", "scenes": 0})
    from navi_environment.backend import SdfDagBackend
    from navi_environment.config import EnvironmentSettings

    scenes = _scene_paths(choice)
    backend = SdfDagBackend(EnvironmentSettings(), num_actors, device=device, scene_paths=scenes)
    names = (
        [path.name for path in scenes]
        if scenes is not None
        else [str(getattr(p, "name", p)) for p in backend.scenes.corpus]
    )
    summary = {"backend": "sdfdag", "scenes": len(names), "names": names[:64]}
    log.info("actor.env.built", backend="sdfdag", scenes=len(names), actors=num_actors, device=device)
    return BuiltEnvironment(backend, summary)
