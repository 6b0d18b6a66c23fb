"""Temporal cores with a flat ``[B, S]`` recurrent state: mamba2 (default), gru, mambapy."""

from __future__ import annotations

from navi_actor.models.config import PolicyConfig
from navi_actor.models.cores.base import TemporalCore
from navi_actor.models.cores.gru import GRUCore
from navi_actor.models.cores.mamba2 import Mamba2Core
from navi_actor.models.cores.mambapy import MambaSelectiveScanCore


def build_core(cfg: PolicyConfig) -> TemporalCore:
    """Return the temporal core selected by ``cfg.temporal_core``."""
    if cfg.temporal_core == "gru":
        return GRUCore(cfg)
    if cfg.temporal_core == "mambapy":
        return MambaSelectiveScanCore(cfg)
    return Mamba2Core(cfg)


__all__ = ["GRUCore", "Mamba2Core", "MambaSelectiveScanCore", "TemporalCore", "build_core"]
