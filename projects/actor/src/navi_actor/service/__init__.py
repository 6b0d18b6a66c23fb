"""The brain service: the policy behind ZeroMQ sockets (``navi-actor serve``, bare ``brain``).

Exports load lazily so that ``navi_actor.service.config`` (a plain settings group) can be imported by
``navi_actor.config`` without pulling in the service. See ``docs/service.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from navi_common.lazy_exports import lazy_getattr

if TYPE_CHECKING:
    from navi_actor.service.brain import run_brain
    from navi_actor.service.brain_core import BrainCore
    from navi_actor.service.brain_settings import BrainSettings
    from navi_actor.service.config import ServiceConfig

_EXPORTS = {
    "BrainCore": "navi_actor.service.brain_core",
    "BrainSettings": "navi_actor.service.brain_settings",
    "ServiceConfig": "navi_actor.service.config",
    "run_brain": "navi_actor.service.brain",
}
__all__ = ["BrainCore", "BrainSettings", "ServiceConfig", "run_brain"]


__getattr__ = lazy_getattr(__name__, _EXPORTS)
