"""Episodic memory: per-drone cosine-similarity ring buffer and loop score."""

from navi_actor.memory.episodic import EpisodicMemory, EpisodicMemoryConfig

__all__ = ["EpisodicMemory", "EpisodicMemoryConfig"]
