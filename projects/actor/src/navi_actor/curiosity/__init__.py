"""Curiosity: Random Network Distillation, running statistics and the novelty-weight schedule.

Exports load lazily so that the settings groups (``navi_actor.curiosity.config`` and the like) can be
imported by ``navi_actor.config`` without torch: ``--help`` and settings stay light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from navi_common.lazy_exports import lazy_getattr

if TYPE_CHECKING:
    from navi_actor.curiosity.config import RndConfig
    from navi_actor.curiosity.rnd import RandomNetworkDistillation
    from navi_actor.curiosity.running_stats import RunningMeanStd
    from navi_actor.curiosity.schedule import LinearAnneal

_EXPORTS = {
    "LinearAnneal": "navi_actor.curiosity.schedule",
    "RandomNetworkDistillation": "navi_actor.curiosity.rnd",
    "RndConfig": "navi_actor.curiosity.config",
    "RunningMeanStd": "navi_actor.curiosity.running_stats",
}
__all__ = [
    "LinearAnneal",
    "RandomNetworkDistillation",
    "RndConfig",
    "RunningMeanStd",
]

__getattr__ = lazy_getattr(__name__, _EXPORTS)
