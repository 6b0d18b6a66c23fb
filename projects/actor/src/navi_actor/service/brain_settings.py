"""``BrainSettings``: the settings ``serve``, ``infer`` and ``navi-stack`` resolve.

They are :class:`~navi_actor.config.ActorSettings` itself (same ``NAVI_ACTOR_`` prefix, device and
policy settings as the trainer, plus the ``service``, ``inference`` and ``launcher`` groups it
declares), named for the service code that reads them.
"""

from __future__ import annotations

from navi_actor.config import ActorSettings


class BrainSettings(ActorSettings):
    """``ActorSettings`` as read by the brain service, inference and the launcher (``NAVI_ACTOR_``)."""
