"""Episodic memory (per-drone cosine-similarity ring buffer and loop score) and visit memory.

Exports load lazily so that the settings groups (``navi_actor.memory.config`` and the like) can be
imported by ``navi_actor.config`` without torch: ``--help`` and settings stay light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from navi_common.lazy_exports import lazy_getattr

if TYPE_CHECKING:
    from navi_actor.memory.config import EpisodicMemoryConfig, VisitMemoryConfig
    from navi_actor.memory.episodic import EpisodicMemory
    from navi_actor.memory.visits import VisitMemory

_EXPORTS = {
    "EpisodicMemory": "navi_actor.memory.episodic",
    "EpisodicMemoryConfig": "navi_actor.memory.config",
    "VisitMemory": "navi_actor.memory.visits",
    "VisitMemoryConfig": "navi_actor.memory.config",
}
__all__ = [
    "EpisodicMemory",
    "EpisodicMemoryConfig",
    "VisitMemory",
    "VisitMemoryConfig",
]

__getattr__ = lazy_getattr(__name__, _EXPORTS)
