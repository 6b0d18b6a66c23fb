"""Curiosity: Random Network Distillation, running statistics and the novelty-weight schedule.

Exports load lazily so that the settings groups (``navi_actor.curiosity.config`` and the like) can be
imported by ``navi_actor.config`` without torch: ``--help`` and settings stay light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'navi_actor.curiosity' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
