"""navi-contracts: the wire layer every Navi package speaks.

Models (:mod:`~navi_contracts.models`), the codec (:mod:`~navi_contracts.codec`: a msgpack header
frame plus raw array frames) and its limits (:mod:`~navi_contracts.limits`), topics and ports
(:mod:`~navi_contracts.topics`), telemetry names and example messages. The repository root
(:mod:`~navi_contracts.paths`) is here because the limits read its ``.env``. Sockets, settings, logging
and the other shared plumbing are in ``navi_common``. See ``docs/contracts.md``.
"""

from navi_contracts import topics
from navi_contracts.codec import decode, decode_frames, default_limits, encode, encode_frames
from navi_contracts.errors import ContractError
from navi_contracts.limits import ContractLimits
from navi_contracts.model_base import SCHEMA_VERSION, WireModel
from navi_contracts.models import (
    ACTION_CHUNK_MAX,
    MODELS,
    Action,
    DistanceMatrix,
    ErrorReply,
    RobotPose,
    StepRequest,
    StepResult,
    TelemetryEvent,
)
from navi_contracts.paths import artifacts_root, repo_root
from navi_contracts.topics import TOPIC_MODELS

__all__ = [
    "ACTION_CHUNK_MAX",
    "MODELS",
    "SCHEMA_VERSION",
    "TOPIC_MODELS",
    "Action",
    "ContractError",
    "ContractLimits",
    "DistanceMatrix",
    "ErrorReply",
    "RobotPose",
    "StepRequest",
    "StepResult",
    "TelemetryEvent",
    "WireModel",
    "artifacts_root",
    "decode",
    "decode_frames",
    "default_limits",
    "encode",
    "encode_frames",
    "repo_root",
    "topics",
]
__version__ = "0.1.0"
