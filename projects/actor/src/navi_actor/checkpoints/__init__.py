"""Checkpoints v3: atomic writes, safe loads, per-run retention."""

from navi_actor.checkpoints.format import (
    FORMAT_VERSION,
    Checkpoint,
    CheckpointError,
    load_checkpoint,
    save_checkpoint,
)
from navi_actor.checkpoints.policy import load_policy
from navi_actor.checkpoints.retention import checkpoint_path, prune_checkpoints

__all__ = [
    "FORMAT_VERSION",
    "Checkpoint",
    "CheckpointError",
    "checkpoint_path",
    "load_checkpoint",
    "load_policy",
    "prune_checkpoints",
    "save_checkpoint",
]
