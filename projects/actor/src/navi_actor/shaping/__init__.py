"""Actor-side reward shaping: existential tax, velocity, RND novelty and loop penalty.

Exports load lazily so that the settings groups (``navi_actor.shaping.config`` and the like) can be
imported by ``navi_actor.config`` without torch: ``--help`` and settings stay light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from navi_common.lazy_exports import lazy_getattr

if TYPE_CHECKING:
    from navi_actor.shaping.config import ShapingConfig
    from navi_actor.shaping.reward_shaper import SHAPING_TERMS, RewardShaper, shaping_terms

_EXPORTS = {
    "RewardShaper": "navi_actor.shaping.reward_shaper",
    "SHAPING_TERMS": "navi_actor.shaping.reward_shaper",
    "ShapingConfig": "navi_actor.shaping.config",
    "shaping_terms": "navi_actor.shaping.reward_shaper",
}
__all__ = [
    "SHAPING_TERMS",
    "RewardShaper",
    "ShapingConfig",
    "shaping_terms",
]

__getattr__ = lazy_getattr(__name__, _EXPORTS)
