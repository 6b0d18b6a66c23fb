"""Episodic memory: per-drone cosine-similarity ring buffer and loop score.

Exports load lazily so that the settings groups (``navi_actor.memory.config`` and the like) can be
imported by ``navi_actor.config`` without torch: ``--help`` and settings stay light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'navi_actor.memory' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
