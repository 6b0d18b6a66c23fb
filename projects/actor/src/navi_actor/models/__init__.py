"""The actor's networks: encoders, temporal cores, heads and the policy that joins them.

Exports load lazily so that the settings groups (``navi_actor.models.config`` and the like) can be
imported by ``navi_actor.config`` without torch: ``--help`` and settings stay light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from navi_common.lazy_exports import lazy_getattr

if TYPE_CHECKING:
    from navi_actor.models.config import ENCODER_BACKENDS, TEMPORAL_CORES, PolicyConfig
    from navi_actor.models.heads import (
        action_entropy,
        action_log_prob,
        gaussian_entropy,
        gaussian_log_prob,
        physics_action,
        raw_action,
    )
    from navi_actor.models.policy import ActOutput, NaviPolicy, SequenceEval

_EXPORTS = {
    "ActOutput": "navi_actor.models.policy",
    "ENCODER_BACKENDS": "navi_actor.models.config",
    "NaviPolicy": "navi_actor.models.policy",
    "PolicyConfig": "navi_actor.models.config",
    "SequenceEval": "navi_actor.models.policy",
    "TEMPORAL_CORES": "navi_actor.models.config",
    "action_entropy": "navi_actor.models.heads",
    "action_log_prob": "navi_actor.models.heads",
    "gaussian_entropy": "navi_actor.models.heads",
    "gaussian_log_prob": "navi_actor.models.heads",
    "physics_action": "navi_actor.models.heads",
    "raw_action": "navi_actor.models.heads",
}
__all__ = [
    "ENCODER_BACKENDS",
    "TEMPORAL_CORES",
    "ActOutput",
    "NaviPolicy",
    "PolicyConfig",
    "SequenceEval",
    "action_entropy",
    "action_log_prob",
    "gaussian_entropy",
    "gaussian_log_prob",
    "physics_action",
    "raw_action",
]


__getattr__ = lazy_getattr(__name__, _EXPORTS)
