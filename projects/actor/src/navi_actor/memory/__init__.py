"""Episodic memory: per-drone cosine-similarity ring buffer and loop score.

Exports load lazily so that the settings groups (``navi_actor.memory.config`` and the like) can be
imported by ``navi_actor.config`` without torch: ``--help`` and settings stay light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from navi_common.lazy_exports import lazy_getattr

if TYPE_CHECKING:
    from navi_actor.memory.config import EpisodicMemoryConfig
    from navi_actor.memory.episodic import EpisodicMemory

_EXPORTS = {
    "EpisodicMemory": "navi_actor.memory.episodic",
    "EpisodicMemoryConfig": "navi_actor.memory.config",
}
__all__ = [
    "EpisodicMemory",
    "EpisodicMemoryConfig",
]

__getattr__ = lazy_getattr(__name__, _EXPORTS)
