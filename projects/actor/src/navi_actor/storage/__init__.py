"""Rollout storage: preallocated on-device buffers and BPTT minibatches."""

from navi_actor.storage.rollout_storage import RolloutStorage, SequenceBatch

__all__ = ["RolloutStorage", "SequenceBatch"]
