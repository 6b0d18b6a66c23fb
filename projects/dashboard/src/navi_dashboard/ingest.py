"""Socket feeds: background threads that turn wire messages into dashboard state.

Three subscribers, one thread each (ZeroMQ sockets belong to one thread):

* the environment's observations (``--matrix-sub``), latest-only: only the newest batch matters;
* the actor's observation of drone 0 (``--actor-sub``), latest-only;
* telemetry from both endpoints, in order (every point belongs on a chart).

SUB sockets never block a publisher (a PUB drops for a slow subscriber at its high-water mark), and
ZeroMQ reconnects by itself, so the dashboard may start before or after the producers and survives
their restarts. Every receive has a poll timeout so ``stop()`` returns promptly. A message that does
not decode is counted on the page and skipped (the subscriber logs why); nothing a producer sends
can end a feed. Observations are decoded at most ``stream.max_frame_hz`` times per second.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

import numpy as np
import structlog

from navi_common import Subscriber
from navi_common.transport.curve import CurveKeys, load_keys
from navi_contracts import ContractError, DistanceMatrix, TelemetryEvent, decode, topics
from navi_dashboard.metric_names import canonical_payload
from navi_dashboard.settings import DashboardSettings
from navi_dashboard.state import (
    SOURCE_ACTOR,
    SOURCE_ENVIRONMENT,
    DashboardState,
    ObservationFrame,
    TelemetrySample,
)

log = structlog.get_logger()

JOIN_TIMEOUT_S = 5.0


def frame_from_matrix(matrix: DistanceMatrix, source: str, received_at: float) -> ObservationFrame:
    """Take drone 0 (row 0) out of a batch, copying it so the large receive buffer can be freed.

    Args:
        matrix: the decoded batch, depth and valid_mask of shape (B, Az, El).
        source: feed name stored on the frame.
        received_at: monotonic receive time.

    Returns:
        The frame to render.
    """
    poses = matrix.poses
    return ObservationFrame(
        source=source,
        depth=np.array(matrix.depth[0], dtype=np.float32),  # [B, Az, El] -> [Az, El], owned copy
        valid=np.array(matrix.valid_mask[0], dtype=bool),
        batch_size=matrix.batch_size,
        received_at=received_at,
        step_id=matrix.step_id,
        position=None if poses is None else tuple(float(c) for c in poses.position[0]),  # type: ignore[arg-type]
        yaw=None if poses is None else float(poses.yaw[0]),
    )


def sample_from_event(event: TelemetryEvent, received_at: float) -> TelemetrySample:
    """Wrap a telemetry event for the state (canonical metric names; chart time is the producer's).

    Args:
        event: the decoded event.
        received_at: monotonic receive time.

    Returns:
        The sample to fold into the state.
    """
    return TelemetrySample(
        event_type=event.event_type,
        payload=canonical_payload(event.payload),
        received_at=received_at,
        wall_time=event.timestamp,
    )


class SubscriberFeed:
    """One subscriber socket served by one daemon thread until :meth:`stop`.

    A latest-only feed keeps draining its socket (cheap: no decoding) but decodes at most one
    message per ``min_interval_s``: a large batch published at hundreds of hertz costs the dashboard
    only as many decodes as it can show, which keeps its CPU share, on cores a trainer shares, small.
    """

    def __init__(
        self,
        name: str,
        endpoints: Sequence[str],
        topic: str,
        *,
        latest_only: bool,
        handle: Callable[[bytes, float], None],
        on_error: Callable[[str, str], None],
        poll_timeout_ms: int,
        min_interval_s: float = 0.0,
        curve: CurveKeys | None = None,
    ) -> None:
        """Describe the feed; nothing connects until :meth:`start`.

        Args:
            name: feed name for logs and error counts.
            endpoints: PUB endpoints to connect to.
            topic: the one topic to subscribe.
            latest_only: keep only the newest message (observations) or every one (telemetry).
            handle: decodes and stores one payload, given with its monotonic receive time, in the
                feed's thread; raises ContractError for bytes that are not a valid message.
            on_error: called with (feed name, message) for each message that could not be used.
            poll_timeout_ms: longest single wait; bounds how long :meth:`stop` takes.
            min_interval_s: least time between two handled messages (latest-only feeds only).
            curve: CURVE keys (secure mode), or None for plain sockets.
        """
        self.name = name
        self._endpoints = list(endpoints)
        self._topic = topic
        self._latest_only = latest_only
        self._handle = handle
        self._on_error = on_error
        self._poll_timeout_ms = poll_timeout_ms
        self._min_interval_s = min_interval_s if latest_only else 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._curve = curve
        self._wake: Callable[[], None] = lambda: None
        self.received = 0
        self.handled = 0
        self._dropped_seen = 0

    def start(self, wake: Callable[[], None]) -> None:
        """Start the thread.

        Args:
            wake: called after each handled message (wakes the render pump).
        """
        self._wake = wake
        self._thread = threading.Thread(target=self._run, name=f"navi-dashboard-{self.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Ask the thread to finish and wait for it (at most a few poll timeouts)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(JOIN_TIMEOUT_S)
            if self._thread.is_alive():
                log.warning("dashboard.feed.stop_timeout", feed=self.name)

    def _run(self) -> None:
        pending: bytes | None = None  # newest payload not handled yet (latest-only, rate-limited)
        pending_at = next_due = 0.0
        with Subscriber(
            self._endpoints, topics=[self._topic], latest_only=self._latest_only, curve=self._curve
        ) as subscriber:
            log.info("dashboard.feed.started", feed=self.name, endpoints=self._endpoints, topic=self._topic)
            while not self._stop.is_set():
                wait_ms = self._poll_timeout_ms
                if pending is not None:
                    wait_ms = min(wait_ms, max(0, int((next_due - time.monotonic()) * 1000)))
                received = subscriber.recv_raw(wait_ms)
                self._count_dropped(subscriber.dropped)
                if received is not None:
                    self.received += 1
                    pending, pending_at = received[1], time.monotonic()
                if pending is not None and time.monotonic() >= next_due:
                    self._handle_one(pending, pending_at)
                    pending = None
                    next_due = time.monotonic() + self._min_interval_s
        log.info("dashboard.feed.stopped", feed=self.name, received=self.received, handled=self.handled)

    def _handle_one(self, payload: bytes, received_at: float) -> None:
        try:
            self._handle(payload, received_at)
        except ContractError as exc:
            self._on_error(self.name, str(exc))
            log.warning("dashboard.feed.message_rejected", feed=self.name, error=str(exc))
            return
        except Exception as exc:  # a dashboard bug must not silence the feed for good
            self._on_error(self.name, f"{type(exc).__name__}: {exc}")
            log.exception("dashboard.feed.handler_failed", feed=self.name)
            return
        self.handled += 1
        self._wake()

    def _count_dropped(self, dropped: int) -> None:
        """The subscriber skips (and logs) malformed multipart messages; the page counts them."""
        while self._dropped_seen < dropped:
            self._dropped_seen += 1
            self._on_error(self.name, "malformed message dropped (details in the log)")


def build_feeds(settings: DashboardSettings, state: DashboardState) -> list[SubscriberFeed]:
    """The three standard feeds, writing into ``state``.

    Args:
        settings: endpoints and poll timeout.
        state: where decoded messages go.

    Returns:
        Feeds for the environment observations, the actor observation and telemetry.
    """

    def observation_handler(source: str) -> Callable[[bytes, float], None]:
        def handle(payload: bytes, received_at: float) -> None:
            matrix = decode(payload, expected=DistanceMatrix)
            state.add_observation(frame_from_matrix(matrix, source, received_at))

        return handle

    def handle_telemetry(payload: bytes, received_at: float) -> None:
        state.add_telemetry(sample_from_event(decode(payload, expected=TelemetryEvent), received_at))

    curve = load_keys(settings.keys)

    def feed(
        name: str, endpoints: list[str], topic: str, latest_only: bool, handle: Callable[[bytes, float], None]
    ) -> SubscriberFeed:
        return SubscriberFeed(
            name,
            endpoints,
            topic,
            latest_only=latest_only,
            handle=handle,
            on_error=state.add_error,
            poll_timeout_ms=settings.stream.poll_timeout_ms,
            min_interval_s=1.0 / settings.stream.max_frame_hz,
            curve=curve,
        )

    telemetry_endpoints = list(dict.fromkeys([settings.actor_sub, settings.matrix_sub]))
    return [
        feed(
            SOURCE_ENVIRONMENT,
            [settings.matrix_sub],
            topics.DISTANCE_MATRIX,
            True,
            observation_handler(SOURCE_ENVIRONMENT),
        ),
        feed(
            SOURCE_ACTOR,
            [settings.actor_sub],
            topics.DISTANCE_MATRIX,
            True,
            observation_handler(SOURCE_ACTOR),
        ),
        feed("telemetry", telemetry_endpoints, topics.TELEMETRY_EVENT, False, handle_telemetry),
    ]
