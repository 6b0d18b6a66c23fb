"""``BrainSettings``: :class:`~navi_actor.config.ActorSettings` with the service groups.

``serve``, ``infer`` and ``navi-stack`` read the same ``NAVI_ACTOR_`` prefix, device and policy
settings as the trainer, plus ``service``, ``inference`` and ``launcher``. Until ``ActorSettings``
declares these groups itself, a ``NAVI_ACTOR_SERVICE__*`` key in the shared ``.env`` is an unknown key
for ``navi-actor train`` (see docs/service.md); once it does, this class adds nothing.
"""

from __future__ import annotations

from pydantic import Field

from navi_actor.config import ActorSettings
from navi_actor.inference.config import InferenceConfig
from navi_actor.launcher.config import LauncherConfig
from navi_actor.service.config import ServiceConfig


class BrainSettings(ActorSettings):
    """``ActorSettings`` plus the ``service``, ``inference`` and ``launcher`` groups (``NAVI_ACTOR_``)."""

    service: ServiceConfig = Field(default_factory=ServiceConfig)
    inference: InferenceConfig = Field(default_factory=InferenceConfig)
    launcher: LauncherConfig = Field(default_factory=LauncherConfig)
