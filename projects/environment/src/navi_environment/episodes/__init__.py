"""Episode lifecycle: counters, truncation rules, scene rotation."""

from navi_environment.episodes.lifecycle import EpisodeTracker

__all__ = ["EpisodeTracker"]
