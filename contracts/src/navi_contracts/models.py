"""The wire models every Navi service exchanges.

Shapes use ``B`` for the batch (drones), ``Az``/``El`` for the spherical matrix (azimuth bins,
elevation bins). Every model checks on construction that its arrays have the promised dtype, rank and
range and that ``B`` (and ``Az``/``El``) agree across fields, so a receiver never has to.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Self

import numpy as np
from pydantic import Field, field_validator, model_validator

from navi_contracts.arrays import ArraySpec
from navi_contracts.model_base import WireModel

_EVENT_TYPE = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_]+)*$")
_NAME_MAX = 256
_MESSAGE_MAX = 16384

BatchInt32 = Annotated[np.ndarray, ArraySpec(np.int32, ("B",))]
BatchInt64 = Annotated[np.ndarray, ArraySpec(np.int64, ("B",))]
BatchBool = Annotated[np.ndarray, ArraySpec(np.bool_, ("B",))]
BatchFloat32 = Annotated[np.ndarray, ArraySpec(np.float32, ("B",), finite=True)]


def _finite_timestamp(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError(f"timestamp must be finite, got {value}")
    return value


def _no_drones(owner: str, batch: int) -> ValueError:
    return ValueError(f"{owner} needs at least one drone (B >= 1), got B={batch}")


class RobotPose(WireModel):
    """Batched drone poses in world coordinates."""

    WIRE_KIND = "robot_pose"

    position: Annotated[np.ndarray, ArraySpec(np.float32, ("B", 3), finite=True)] = Field(
        description="float32 [B,3]: x, y, z in metres."
    )
    yaw: Annotated[np.ndarray, ArraySpec(np.float32, ("B",), finite=True)] = Field(
        description="float32 [B]: heading in radians."
    )

    @model_validator(mode="after")
    def _check_consistency(self) -> Self:
        batch = self.yaw.shape[0]
        if self.position.shape[0] != batch:
            self.check_dims()  # raises, naming the field that disagrees
        if batch < 1:
            raise _no_drones("RobotPose", batch)
        return self

    @property
    def batch_size(self) -> int:
        """B, the number of drones."""
        return int(self.yaw.shape[0])


class DistanceMatrix(WireModel):
    """Batched spherical observation: depth, semantic id and hit mask per ray."""

    WIRE_KIND = "distance_matrix"

    env_ids: BatchInt32 = Field(description="int32 [B]: environment (drone) index of each row.")
    matrix_shape: tuple[int, int] = Field(description="(Az, El): azimuth and elevation bins.")
    depth: Annotated[np.ndarray, ArraySpec(np.float32, ("B", "Az", "El"), low=0.0, high=1.0)] = Field(
        description="float32 [B,Az,El]: distance normalised by the horizon, in [0, 1]."
    )
    semantic: Annotated[np.ndarray, ArraySpec(np.int32, ("B", "Az", "El"))] = Field(
        description="int32 [B,Az,El]: semantic id of the surface hit (0 = none)."
    )
    valid_mask: Annotated[np.ndarray, ArraySpec(np.bool_, ("B", "Az", "El"))] = Field(
        description="bool [B,Az,El]: ray hit a surface within the horizon."
    )
    delta_depth: (
        Annotated[np.ndarray, ArraySpec(np.float32, ("B", "Az", "El"), low=-1.0, high=1.0)] | None
    ) = Field(
        default=None, description="float32 [B,Az,El]: depth change since the previous step, in [-1, 1]."
    )
    poses: RobotPose | None = Field(default=None, description="Pose of each row's drone (B rows).")
    step_id: int = Field(ge=0, description="Environment step counter.")
    episode_ids: BatchInt64 = Field(description="int64 [B]: episode counter of each row.")
    timestamp: float = Field(description="Wall-clock seconds since the epoch when produced.")

    _timestamp = field_validator("timestamp")(_finite_timestamp)

    @field_validator("matrix_shape")
    @classmethod
    def _check_matrix_shape(cls, value: tuple[int, int]) -> tuple[int, int]:
        if value[0] < 1 or value[1] < 1:
            raise ValueError(f"(Az, El) must both be >= 1, got {value}")
        return value

    @model_validator(mode="after")
    def _check_consistency(self) -> Self:
        batch = self.env_ids.shape[0]
        grid = (batch, *self.matrix_shape)
        # Every decoded observation passes here: plain shape compares, check_dims only for its message.
        delta = self.delta_depth
        same = self.depth.shape == self.semantic.shape == self.valid_mask.shape == grid
        if not same or (delta is not None and delta.shape != grid) or self.episode_ids.shape[0] != batch:
            self.check_dims({"Az": grid[1], "El": grid[2]})  # raises, naming the field that disagrees
        if batch < 1:
            raise _no_drones("DistanceMatrix", batch)
        poses = self.poses
        if poses is not None and poses.yaw.shape[0] != batch:
            raise ValueError(f"poses has B={poses.batch_size} rows but the arrays have B={batch}")
        return self

    @property
    def batch_size(self) -> int:
        """B, the number of drones."""
        return int(self.env_ids.shape[0])


ACTION_CHUNK_MAX = 64
"""Longest action chunk (H) an Action may carry: 64 ticks is 3.2 s at 20 Hz, more than any brain
plans ahead, and it bounds what one message can make the environment hold per drone."""


class Action(WireModel):
    """Batched commands: forward, vertical, lateral, yaw rate, each in [-1, 1].

    In the environment's real-time mode an Action may also schedule the future: ``chunk[:, k]`` is
    meant for tick ``start_tick + k``. ``step_id`` always names the observation tick the actions
    answer, so an action executed at tick ``t`` is ``t - step_id`` ticks old.
    """

    WIRE_KIND = "action"

    env_ids: BatchInt32 = Field(description="int32 [B]: environment (drone) index of each row.")
    actions: Annotated[np.ndarray, ArraySpec(np.float32, ("B", 4), low=-1.0, high=1.0)] = Field(
        description="float32 [B,4]: forward, vertical, lateral, yaw rate; finite, in [-1, 1]."
    )
    policy_id: str = Field(max_length=_NAME_MAX, description="Which policy (checkpoint) produced it.")
    step_id: int = Field(ge=0, description="Step (observation tick) the actions answer.")
    timestamp: float = Field(description="Wall-clock seconds since the epoch when produced.")
    start_tick: int | None = Field(
        default=None,
        ge=0,
        description="Real-time mode: the tick at which actions (chunk[:, 0]) take effect; "
        "None means the tick after step_id.",
    )
    chunk: Annotated[np.ndarray, ArraySpec(np.float32, ("B", "H", 4), low=-1.0, high=1.0)] | None = Field(
        default=None,
        description="float32 [B,H,4], 1 <= H <= 64: the actions for ticks start_tick .. start_tick+H-1; "
        "chunk[:, 0] equals actions.",
    )

    _timestamp = field_validator("timestamp")(_finite_timestamp)

    @model_validator(mode="after")
    def _check_consistency(self) -> Self:
        dims = self.check_dims()
        if dims["B"] < 1:
            raise _no_drones("Action", dims["B"])
        if self.chunk is not None:
            horizon = dims["H"]
            if not 1 <= horizon <= ACTION_CHUNK_MAX:
                raise ValueError(f"chunk: H must be in [1, {ACTION_CHUNK_MAX}], got H={horizon}")
            if not np.array_equal(self.chunk[:, 0], self.actions):
                raise ValueError("chunk[:, 0] must equal actions (the action for start_tick)")
        return self

    @property
    def horizon(self) -> int:
        """H, the ticks this message covers (1 without a chunk)."""
        return 1 if self.chunk is None else int(self.chunk.shape[1])

    @property
    def batch_size(self) -> int:
        """B, the number of drones."""
        return int(self.env_ids.shape[0])


class StepRequest(WireModel):
    """Ask the environment server to step (with actions) or reset (optionally seeded)."""

    WIRE_KIND = "step_request"

    request_id: int = Field(ge=0, description="Echoed in the StepResult or ErrorReply.")
    actions: Action | None = Field(default=None, description="The actions to apply (step).")
    reset: bool = Field(default=False, description="Reset every drone instead of stepping.")
    seed: int | None = Field(default=None, ge=0, description="Reset seed (only with reset=True).")

    @model_validator(mode="after")
    def _check_mode(self) -> Self:
        if self.reset == (self.actions is not None):
            raise ValueError("exactly one of actions (step) or reset=True must be given")
        if self.seed is not None and not self.reset:
            raise ValueError("seed is only allowed with reset=True")
        return self


class StepResult(WireModel):
    """The environment's answer to a StepRequest: per-drone outcome plus the new observation."""

    WIRE_KIND = "step_result"

    request_id: int = Field(ge=0, description="The StepRequest this answers.")
    reward: BatchFloat32 = Field(description="float32 [B]: reward of this step.")
    terminated: BatchBool = Field(description="bool [B]: episode ended by the task (no bootstrap).")
    truncated: BatchBool = Field(description="bool [B]: episode cut by the time limit (bootstrap).")
    episode_return: BatchFloat32 = Field(description="float32 [B]: return so far in the episode.")
    episode_length: Annotated[np.ndarray, ArraySpec(np.int32, ("B",), low=0)] = Field(
        description="int32 [B]: steps so far in the episode."
    )
    observation: DistanceMatrix = Field(description="Observation after the step (same B).")
    info: dict[str, float] | None = Field(default=None, description="Batch means of reward terms etc.")

    @model_validator(mode="after")
    def _check_consistency(self) -> Self:
        self.check_dims({"B": self.observation.batch_size})
        return self


class TelemetryEvent(WireModel):
    """One coarse metrics event (training update, episode summary, service status...)."""

    WIRE_KIND = "telemetry_event"

    event_type: str = Field(max_length=_NAME_MAX, description="Dotted name, e.g. actor.training.ppo.update.")
    source: str = Field(min_length=1, max_length=_NAME_MAX, description="Producing service, e.g. actor.")
    step_id: int = Field(ge=0, description="Step (or update) counter of the source.")
    payload: dict[str, float] = Field(default_factory=dict, description="Metric name -> value.")
    timestamp: float = Field(description="Wall-clock seconds since the epoch when produced.")

    _timestamp = field_validator("timestamp")(_finite_timestamp)

    @field_validator("event_type")
    @classmethod
    def _check_event_type(cls, value: str) -> str:
        if not _EVENT_TYPE.match(value):
            raise ValueError(f"must be dotted lower-case words like actor.training.ppo.update, got {value!r}")
        return value

    @field_validator("payload")
    @classmethod
    def _check_payload_keys(cls, value: dict[str, float]) -> dict[str, float]:
        too_long = [key for key in value if len(key) > _NAME_MAX]
        if too_long:
            raise ValueError(f"payload key longer than {_NAME_MAX} characters: {too_long[0][:40]!r}...")
        return value


class ErrorReply(WireModel):
    """A server's refusal: the request was malformed or handling it failed."""

    WIRE_KIND = "error_reply"

    code: str = Field(
        min_length=1, max_length=_NAME_MAX, description="bad_request, wrong_kind, handler_error..."
    )
    message: str = Field(max_length=_MESSAGE_MAX, description="Human-readable reason.")
    request_id: int | None = Field(default=None, ge=0, description="The request it refers to, if known.")


MODELS: tuple[type[WireModel], ...] = (
    RobotPose,
    DistanceMatrix,
    Action,
    StepRequest,
    StepResult,
    TelemetryEvent,
    ErrorReply,
)
MODELS_BY_KIND: dict[str, type[WireModel]] = {model.WIRE_KIND: model for model in MODELS}
