"""Behaviour cloning: demonstrations -> the PPO policy, pre-trained (``navi-actor bc-pretrain``).

Exports load lazily so that the settings groups (``navi_actor.bc.config`` and the like) can be
imported by ``navi_actor.config`` without torch: ``--help`` and settings stay light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from navi_common.lazy_exports import lazy_getattr

if TYPE_CHECKING:
    from navi_actor.bc.config import BCConfig
    from navi_actor.bc.dataset import (
        DemoData,
        DemonstrationError,
        load_demonstrations,
        split_episodes,
        stream_indices,
    )
    from navi_actor.bc.trainer import BCHistory, baseline_mse, freeze_log_std, sequence_mse, train_bc

_EXPORTS = {
    "BCConfig": "navi_actor.bc.config",
    "BCHistory": "navi_actor.bc.trainer",
    "DemoData": "navi_actor.bc.dataset",
    "DemonstrationError": "navi_actor.bc.dataset",
    "baseline_mse": "navi_actor.bc.trainer",
    "freeze_log_std": "navi_actor.bc.trainer",
    "load_demonstrations": "navi_actor.bc.dataset",
    "sequence_mse": "navi_actor.bc.trainer",
    "split_episodes": "navi_actor.bc.dataset",
    "stream_indices": "navi_actor.bc.dataset",
    "train_bc": "navi_actor.bc.trainer",
}
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


__getattr__ = lazy_getattr(__name__, _EXPORTS)
