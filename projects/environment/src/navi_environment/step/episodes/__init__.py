"""Episode lifecycle: counters, truncation rules, scene rotation."""

from navi_environment.step.episodes.lifecycle import EpisodeTracker

__all__ = ["EpisodeTracker"]
