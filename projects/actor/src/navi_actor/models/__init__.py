"""The actor's networks: encoders, temporal cores, heads and the policy that joins them."""

from navi_actor.models.config import ENCODER_BACKENDS, TEMPORAL_CORES, PolicyConfig
from navi_actor.models.heads import clip_action, gaussian_entropy, gaussian_log_prob
from navi_actor.models.policy import ActOutput, NaviPolicy, SequenceEval

__all__ = [
    "ENCODER_BACKENDS",
    "TEMPORAL_CORES",
    "ActOutput",
    "NaviPolicy",
    "PolicyConfig",
    "SequenceEval",
    "clip_action",
    "gaussian_entropy",
    "gaussian_log_prob",
]
