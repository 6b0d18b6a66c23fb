"""Behaviour cloning: demonstrations -> the PPO policy, pre-trained (``navi-actor bc-pretrain``)."""

from navi_actor.bc.config import BCConfig
from navi_actor.bc.dataset import (
    DemoData,
    DemonstrationError,
    load_demonstrations,
    split_episodes,
    stream_indices,
)
from navi_actor.bc.trainer import BCHistory, baseline_mse, freeze_log_std, sequence_mse, train_bc

__all__ = [
    "BCConfig",
    "BCHistory",
    "DemoData",
    "DemonstrationError",
    "baseline_mse",
    "freeze_log_std",
    "load_demonstrations",
    "sequence_mse",
    "split_episodes",
    "stream_indices",
    "train_bc",
]
