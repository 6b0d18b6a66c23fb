"""Actor-side reward shaping: existential tax, velocity, RND novelty and loop penalty."""

from navi_actor.shaping.reward_shaper import SHAPING_TERMS, RewardShaper, ShapingConfig, shaping_terms

__all__ = ["SHAPING_TERMS", "RewardShaper", "ShapingConfig", "shaping_terms"]
