"""Environments the trainer steps in-process, and the protocol they share.

:class:`VectorEnv` / :class:`VectorStep` (:mod:`~navi_actor.envs.protocol`) are the shape of a
batched environment: ``navi_environment.backend.SdfDagBackend`` satisfies them, and so does
:class:`PointGoalEnv` (:mod:`~navi_actor.envs.point`), a tiny learnable toy for tests, smoke runs
and benchmarks. Which one a command builds is decided in :mod:`navi_actor.runners.env_factory`.
"""

from navi_actor.envs.point import PointGoalEnv, PointStep
from navi_actor.envs.protocol import VectorEnv, VectorStep

__all__ = ["PointGoalEnv", "PointStep", "VectorEnv", "VectorStep"]
