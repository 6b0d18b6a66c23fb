"""navi-contracts: the wire layer every Navi package speaks.

Models (:mod:`~navi_contracts.models`), the codec (:mod:`~navi_contracts.codec`: a msgpack header
frame plus raw array frames), topics and ports (:mod:`~navi_contracts.topics`), ZeroMQ helpers, the
shared settings base and logging setup.
See ``docs/contracts.md``.
"""

from navi_contracts import topics
from navi_contracts.codec import decode, decode_frames, default_limits, encode, encode_frames
from navi_contracts.errors import ContractError, NaviTransportError, PeerTimeoutError, RemoteError
from navi_contracts.logging import configure_logging
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
from navi_contracts.settings import ContractLimits, NaviSettings, SettingsGroup
from navi_contracts.topics import TOPIC_MODELS
from navi_contracts.zmq_pubsub import Publisher, Subscriber
from navi_contracts.zmq_reqrep import RepServer, ReqClient
from navi_contracts.zmq_util import free_tcp_endpoint

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
    "NaviSettings",
    "NaviTransportError",
    "PeerTimeoutError",
    "Publisher",
    "RemoteError",
    "RepServer",
    "ReqClient",
    "RobotPose",
    "SettingsGroup",
    "StepRequest",
    "StepResult",
    "Subscriber",
    "TelemetryEvent",
    "WireModel",
    "artifacts_root",
    "configure_logging",
    "decode",
    "decode_frames",
    "default_limits",
    "encode",
    "encode_frames",
    "free_tcp_endpoint",
    "repo_root",
    "topics",
]
__version__ = "0.1.0"
