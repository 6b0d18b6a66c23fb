"""Curiosity: Random Network Distillation, running statistics and the novelty-weight schedule."""

from navi_actor.curiosity.rnd import RandomNetworkDistillation, RndConfig
from navi_actor.curiosity.running_stats import RunningMeanStd
from navi_actor.curiosity.schedule import LinearAnneal

__all__ = ["LinearAnneal", "RandomNetworkDistillation", "RndConfig", "RunningMeanStd"]
