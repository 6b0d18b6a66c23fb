"""What the dashboard knows: the latest observations, telemetry history, the detected mode.

Subscriber threads write here and the web server reads; one lock guards everything, and every
method holds it only for a few dictionary operations. The state holds plain frames and samples
(see :mod:`navi_dashboard.ingest` for the conversion from wire messages), so it is tested without
sockets. Times are ``time.monotonic()`` seconds unless named ``wall``.
"""

from __future__ import annotations

import enum
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from navi_contracts import telemetry_names
from navi_dashboard.series import SeriesStore
from navi_dashboard.settings import HistorySettings, StreamSettings

TRAINING_PREFIX = telemetry_names.TRAINING_PREFIX
REWARD_TERM_PREFIX = telemetry_names.REWARD_TERM_PREFIX
TIMING_PREFIX = telemetry_names.TIMING_PREFIX
SOURCE_ACTOR = "actor"
SOURCE_ENVIRONMENT = "environment"
SOURCE_CONTROL = "control"


class Mode(enum.StrEnum):
    """What the watched system is doing, as far as the sockets tell."""

    TRAINING = "TRAINING"
    INFERENCE = "INFERENCE"
    OBSERVER = "OBSERVER"
    WAITING = "WAITING"


@dataclass(frozen=True)
class ObservationFrame:
    """One drone's observation as received, ready to render.

    Attributes:
        source: which feed it came from (``actor``, ``environment`` or ``control``).
        depth: (Az, El) depth normalised by the horizon to [0, 1].
        valid: (Az, El) hit mask.
        batch_size: drones in the message it was taken from (row 0 is shown).
        step_id: the producer's step counter, when the message has one.
        received_at: monotonic receive time.
        scene: scene name, when the message carries one.
        position: drone 0's (x, y, z) in metres, when the message carries poses.
        yaw: drone 0's heading in radians, when the message carries poses.
    """

    source: str
    depth: np.ndarray
    valid: np.ndarray
    batch_size: int
    received_at: float
    step_id: int | None = None
    scene: str | None = None
    position: tuple[float, float, float] | None = None
    yaw: float | None = None


@dataclass(frozen=True)
class TelemetrySample:
    """One telemetry event: its type, its metric payload, and when it arrived."""

    event_type: str
    payload: Mapping[str, float]
    received_at: float
    wall_time: float
    scene: str | None = None


@dataclass
class _StepRateMeter:
    """Smoothed steps per second from successive step counters (robust to dropped frames)."""

    smoothing: float = 0.3
    last_step: int | None = None
    last_time: float = 0.0
    rate: float | None = None

    def update(self, step_id: int, now: float) -> None:
        if self.last_step is None or step_id <= self.last_step or now <= self.last_time:
            if self.last_step is not None and step_id < self.last_step:
                self.rate = None  # the producer restarted: its counter went back
        else:
            sample = (step_id - self.last_step) / (now - self.last_time)
            self.rate = sample if self.rate is None else self.rate + self.smoothing * (sample - self.rate)
        self.last_step, self.last_time = step_id, now


@dataclass
class _Counters:
    observations: int = 0
    telemetry: int = 0
    errors: int = 0
    last_error: str | None = None
    error_sources: dict[str, int] = field(default_factory=dict)


class DashboardState:
    """Thread-safe aggregate of everything received."""

    def __init__(
        self,
        stream: StreamSettings,
        history: HistorySettings,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Create an empty state.

        Args:
            stream: liveness and source-preference settings.
            history: chart history bounds.
            clock: monotonic clock (injected by tests).
        """
        self._stream = stream
        self._clock = clock
        self._lock = threading.Lock()
        self._frames: dict[str, ObservationFrame] = {}
        self.frame_version = 0  # bumped on every stored frame; readers poll it cheaply
        self._series = SeriesStore(history.max_points, history.max_series)
        self._latest: dict[str, float] = {}
        self._last_seen: dict[str, float] = {}  # "training" / "inference" / "telemetry" -> time
        self._scene: str | None = None
        self._env_rate = _StepRateMeter()
        self._counters = _Counters()

    def add_observation(self, frame: ObservationFrame) -> None:
        """Store a frame as the newest of its source.

        Args:
            frame: the received observation.
        """
        with self._lock:
            self._frames[frame.source] = frame
            self.frame_version += 1
            self._counters.observations += 1
            if frame.scene:
                self._scene = frame.scene
            if frame.source == SOURCE_ENVIRONMENT and frame.step_id is not None:
                self._env_rate.update(frame.step_id, frame.received_at)

    def add_telemetry(self, sample: TelemetrySample) -> None:
        """Fold one telemetry event into the latest values and the chart history.

        Args:
            sample: the received event.
        """
        with self._lock:
            self._counters.telemetry += 1
            self._last_seen["telemetry"] = sample.received_at
            if sample.event_type.startswith(TRAINING_PREFIX):
                self._last_seen["training"] = sample.received_at
            elif telemetry_names.is_acting_event(sample.event_type):  # infer, or the brain service
                self._last_seen["inference"] = sample.received_at
            elif sample.event_type == telemetry_names.ENVIRONMENT_REALTIME_STATS:
                self._last_seen["realtime"] = sample.received_at
            if sample.scene:
                self._scene = sample.scene
            self._latest.update(sample.payload)
            self._series.append_event(sample.wall_time, dict(sample.payload))

    def add_error(self, source: str, message: str) -> None:
        """Count a message that could not be decoded (the feed keeps running).

        Args:
            source: the feed it came from.
            message: the decoder's explanation.
        """
        with self._lock:
            self._counters.errors += 1
            self._counters.error_sources[source] = self._counters.error_sources.get(source, 0) + 1
            self._counters.last_error = f"{source}: {message}"[:300]

    def _fresh(self, seen_at: float | None, now: float, window: float | None = None) -> bool:
        limit = self._stream.mode_timeout_s if window is None else window
        return seen_at is not None and now - seen_at < limit

    def _mode(self, now: float) -> Mode:
        training, inference = self._last_seen.get("training"), self._last_seen.get("inference")
        fresh_training, fresh_inference = self._fresh(training, now), self._fresh(inference, now)
        if fresh_training and fresh_inference:
            return Mode.TRAINING if (training or 0.0) >= (inference or 0.0) else Mode.INFERENCE
        if fresh_training:
            return Mode.TRAINING
        if fresh_inference:
            return Mode.INFERENCE
        observed = any(self._fresh(f.received_at, now) for f in self._frames.values())
        if observed or self._fresh(self._last_seen.get("telemetry"), now):
            return Mode.OBSERVER
        return Mode.WAITING

    def mode(self) -> Mode:
        """The mode right now (see :class:`Mode`)."""
        with self._lock:
            return self._mode(self._clock())

    def _display_frame(self, now: float) -> ObservationFrame | None:
        """The frame to show: keyboard flight, then the actor's feed while fresh, then the newest."""
        for source in (SOURCE_CONTROL, SOURCE_ACTOR):
            frame = self._frames.get(source)
            if frame is not None and self._fresh(frame.received_at, now, self._stream.prefer_actor_within_s):
                return frame
        if not self._frames:
            return None
        return max(self._frames.values(), key=lambda f: f.received_at)

    def display_frame(self) -> tuple[ObservationFrame | None, int]:
        """The frame the page should show and the current frame version.

        Returns:
            (frame or None, frame_version); the version lets callers skip unchanged frames.
        """
        with self._lock:
            return self._display_frame(self._clock()), self.frame_version

    def _steps_per_second(self, now: float) -> tuple[float | None, str]:
        sps = self._latest.get(telemetry_names.SPS)
        if sps is not None and self._fresh(self._last_seen.get("telemetry"), now):
            return sps, "telemetry"
        env_frame = self._frames.get(SOURCE_ENVIRONMENT)
        if (
            env_frame is not None
            and self._env_rate.rate is not None
            and self._fresh(env_frame.received_at, now)
        ):
            return self._env_rate.rate * env_frame.batch_size, "environment"
        return None, "none"

    def _active_actors(self, now: float) -> float | None:
        """The actor's count while its telemetry is fresh, else the environment's batch size."""
        reported = self._latest.get(telemetry_names.ACTIVE_ACTORS)
        if reported is not None and self._fresh(self._last_seen.get("telemetry"), now):
            return reported
        env_frame = self._frames.get(SOURCE_ENVIRONMENT)
        return float(env_frame.batch_size) if env_frame is not None else reported

    def _realtime(self, now: float) -> dict[str, float | None] | None:
        """The real-time control figures while ``environment.realtime.stats`` events are fresh."""
        if not self._fresh(self._last_seen.get("realtime"), now):
            return None
        return {name: _optional_finite(self._latest.get(name)) for name in _REALTIME_FIGURES}

    def status(self) -> dict[str, object]:
        """A JSON-ready summary for the status bar and the breakdown panels.

        Returns:
            mode, observation freshness (ms), steps/s, active actors, scene, reward terms, stage
            timings, the real-time control figures (None unless a realtime environment reports),
            every latest scalar, counters, and the newest chart sequence number.
        """
        with self._lock:
            now = self._clock()
            frame = self._display_frame(now)
            sps, sps_source = self._steps_per_second(now)
            return {
                "mode": self._mode(now).value,
                "obs_age_ms": None if frame is None else round((now - frame.received_at) * 1000.0, 1),
                "obs_source": None if frame is None else frame.source,
                "obs_step": None if frame is None else frame.step_id,
                "obs_shape": None if frame is None else list(frame.depth.shape),
                "obs_pose": _pose(frame),
                "sps": _optional_finite(sps),
                "sps_source": sps_source,
                "active_actors": _optional_finite(self._active_actors(now)),
                "scene": self._scene if self._scene is not None else _scene_from(self._latest),
                "reward_terms": _with_prefix(self._latest, REWARD_TERM_PREFIX),
                "timings": _with_prefix(self._latest, TIMING_PREFIX),
                "realtime": self._realtime(now),
                "latest": {name: _finite_or_none(value) for name, value in self._latest.items()},
                "counts": {
                    "observations": self._counters.observations,
                    "telemetry": self._counters.telemetry,
                    "errors": self._counters.errors,
                    "last_error": self._counters.last_error,
                    "dropped_series": self._series.dropped_names,
                },
                "seq": self._series.seq,
            }

    def chart_delta(self, cursor: int) -> tuple[dict[str, dict[str, list[float]]], int]:
        """Chart points newer than ``cursor`` and the cursor to use next time.

        Args:
            cursor: the last sequence number a page has; -1 for the whole history.

        Returns:
            (name -> {"t": wall times, "v": values}, newest sequence number).
        """
        with self._lock:
            return self._series.since(cursor), self._series.seq


_REALTIME_FIGURES = (
    telemetry_names.MEAN_ACTION_AGE_TICKS,
    telemetry_names.MAX_ACTION_AGE_TICKS,
    telemetry_names.MISSED_TICKS,
    telemetry_names.FALLBACK_TICKS,
    "fallback_fraction",
    "control_hz",
)
"""What the status bar shows of ``environment.realtime.stats`` (the charts take the rest)."""


def _pose(frame: ObservationFrame | None) -> dict[str, object] | None:
    if frame is None or frame.position is None or frame.yaw is None:
        return None
    return {
        "position": [round(coordinate, 3) for coordinate in frame.position],
        "yaw_deg": round(math.degrees(frame.yaw), 1),
    }


def _finite_or_none(value: float) -> float | None:
    """JSON has no NaN or infinity; a diverged loss shows as a gap, not a broken page."""
    return value if math.isfinite(value) else None


def _optional_finite(value: float | None) -> float | None:
    return None if value is None else _finite_or_none(value)


def _with_prefix(values: Mapping[str, float], prefix: str) -> dict[str, float | None]:
    return {
        name[len(prefix) :]: _finite_or_none(value)
        for name, value in values.items()
        if name.startswith(prefix)
    }


def _scene_from(values: Mapping[str, float]) -> str | None:
    """Telemetry payloads are name -> float, so a scene may only arrive as an index."""
    scene = values.get("scene")
    return None if scene is None else f"#{int(scene)}"
