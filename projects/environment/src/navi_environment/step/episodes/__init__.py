"""Episode lifecycle: counters, truncation rules, scene rotation."""

from navi_environment.step.episodes.lifecycle import EpisodeTracker
from navi_environment.step.episodes.rotation import scene_rotation, unknown_families

__all__ = ["EpisodeTracker", "scene_rotation", "unknown_families"]
