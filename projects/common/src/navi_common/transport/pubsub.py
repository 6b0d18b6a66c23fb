"""Publish/subscribe helpers: a never-blocking publisher and a per-topic conflating subscriber.

Messages are ``[topic, header, array frames...]`` (:mod:`navi_contracts.codec`; the subscriber
wraps the received array frames without copying them). ZeroMQ's own
``CONFLATE`` option cannot serve live views: it breaks multipart messages and keeps one message over
*all* topics, so a burst of telemetry would hide the latest observation. ``Subscriber(latest_only=True)``
instead drains what has arrived and keeps the newest message of each topic.

The publisher is an XPUB socket so it can see subscription notices: ``wait_for_subscribers`` is the
readiness handshake that replaces "sleep and hope" (a PUB drops everything sent before a subscriber's
subscription has arrived).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import structlog
import zmq

from navi_common.transport.errors import PeerTimeoutError
from navi_common.transport.sockets import ClosableSocket, attach, new_socket, remaining_ms
from navi_contracts.codec import decode_frames, default_limits, encode_frames, join_frames, split_frames
from navi_contracts.errors import ContractError
from navi_contracts.limits import ContractLimits
from navi_contracts.model_base import WireModel
from navi_contracts.topics import TOPIC_MODELS

if TYPE_CHECKING:
    from navi_common.transport.curve import CurveKeys

log = structlog.get_logger()

_SUBSCRIBE, _UNSUBSCRIBE = 1, 0
_DRAIN_CAP = 10_000
_ORDERED_HWM, _LATEST_ONLY_HWM = (
    1000,
    32,
)  # messages drained per recv call in latest-only mode, so a flood cannot starve us


class Publisher(ClosableSocket):
    """Publishes wire models on topics; never blocks the caller.

    Args:
        endpoint: ZeroMQ endpoint, e.g. ``tcp://127.0.0.1:5559``.
        bind: bind (servers) or connect (e.g. to a forwarding proxy).
        send_hwm: messages queued per subscriber before ZeroMQ drops new ones for it.
        multipart: send the model's arrays without copying them (zero copy). ZeroMQ then
            reads the model's arrays after ``publish`` returns: never write into an array you
            handed to a published model (models normally view, not copy, your arrays).
        curve: CURVE keys (secure mode): only allowlisted subscribers receive anything.
    """

    def __init__(
        self,
        endpoint: str,
        bind: bool = True,
        send_hwm: int = 100,
        multipart: bool = False,
        *,
        curve: CurveKeys | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.multipart = multipart
        self._socket = new_socket(zmq.XPUB, send_hwm=send_hwm)
        self._socket.setsockopt(zmq.XPUB_VERBOSE, 1)  # pass every subscription notice, not only the first
        self._subscriptions: Counter[bytes] = Counter()
        try:
            attach(self._socket, endpoint, bind=bind, curve=curve)
        except BaseException:
            self.close()
            raise

    def publish(self, topic: str, model: WireModel) -> bool:
        """Encode and publish ``model`` on ``topic``.

        Args:
            topic: one of :mod:`navi_contracts.topics`; a known topic must carry its own model.
            model: the message.

        Returns:
            True when handed to ZeroMQ (which silently drops it for subscribers over their HWM).

        Raises:
            ContractError: the model does not belong on this topic.
        """
        expected = TOPIC_MODELS.get(topic)
        if expected is not None and type(model) is not expected:
            raise ContractError(f"topic {topic!r} carries {expected.__name__}, not {type(model).__name__}")
        return self._send([topic.encode(), *encode_frames(model, copy=not self.multipart)])

    def publish_raw(self, topic: str, payload: bytes | memoryview) -> bool:
        """Publish already-encoded bytes (stream replay).

        Args:
            topic: topic name.
            payload: bytes from :func:`~navi_contracts.codec.encode` or :meth:`Subscriber.recv_raw`;
                anything else goes out as one frame, as is, for the receivers to refuse.

        Returns:
            True when handed to ZeroMQ, False when it refused without blocking.
        """
        try:
            frames: list[Any] = split_frames(payload)
        except ContractError:
            frames = [payload]
        return self._send([topic.encode(), *frames])

    def _send(self, frames: list[Any]) -> bool:
        self._drain_notices(0)
        try:
            self._socket.send_multipart(frames, flags=zmq.NOBLOCK, copy=False)
        except zmq.Again:
            log.debug("contracts.publisher.message_dropped", endpoint=self.endpoint, topic=frames[0])
            return False
        return True

    def wait_for_subscribers(self, topic: str = "", count: int = 1, timeout_ms: int = 5000) -> None:
        """Block until ``count`` subscription notices covering ``topic`` have arrived.

        A subscriber (re)sends its subscriptions when its pipe attaches, which ZeroMQ does inside
        the subscriber's own socket calls. After a *reconnect*, the subscriber's owner must
        therefore keep calling ``recv`` while this waits (another thread or process normally does;
        in one thread, alternate short ``recv`` and short waits).

        Args:
            topic: the topic that must be covered (a subscription to a prefix of it counts);
                ``""`` counts every subscription notice.
            count: how many notices (one per subscriber and topic) to wait for.
            timeout_ms: give up after this long.

        Raises:
            PeerTimeoutError: not enough subscribers within ``timeout_ms``.
        """
        wanted = topic.encode()
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            seen = sum(
                n for prefix, n in self._subscriptions.items() if not wanted or wanted.startswith(prefix)
            )
            if seen >= count:
                return
            left = remaining_ms(deadline)
            if left <= 0:
                raise PeerTimeoutError(
                    f"{self.endpoint}: {seen} of {count} subscribers for topic {topic!r} "
                    f"after {timeout_ms} ms"
                )
            self._drain_notices(left)

    def _drain_notices(self, timeout_ms: int) -> None:
        if timeout_ms > 0 and not self._socket.poll(timeout_ms, zmq.POLLIN):
            return
        while int(self._socket.getsockopt(zmq.EVENTS)) & zmq.POLLIN:
            notice = self._socket.recv(zmq.NOBLOCK)
            if not notice:
                continue
            prefix = bytes(notice[1:])
            if notice[0] == _SUBSCRIBE:
                self._subscriptions[prefix] += 1
            elif notice[0] == _UNSUBSCRIBE and self._subscriptions[prefix] > 0:
                self._subscriptions[prefix] -= 1


class Subscriber(ClosableSocket):
    """Receives wire models from one or more publishers.

    Args:
        endpoints: endpoint or endpoints to connect to (or bind, with ``bind=True``).
        topics: topics to subscribe to; None subscribes to everything.
        latest_only: keep only the newest message per topic (live views); False delivers every
            message in arrival order (recorders).
        bind: bind instead of connect.
        limits: decoding limits; default: :func:`navi_contracts.codec.default_limits`.
        recv_hwm: messages ZeroMQ buffers before dropping; default 1000 in order, 32 latest-only
            (a live view needs no backlog, and 1000 observations would be ~640 MB).
        curve: CURVE keys (secure mode), as a client (or as the server with ``bind=True``).
    """

    def __init__(
        self,
        endpoints: str | Sequence[str],
        topics: Sequence[str] | None = None,
        *,
        latest_only: bool = False,
        bind: bool = False,
        limits: ContractLimits | None = None,
        recv_hwm: int | None = None,
        curve: CurveKeys | None = None,
    ) -> None:
        self.endpoints = [endpoints] if isinstance(endpoints, str) else list(endpoints)
        self.latest_only = latest_only
        self.dropped = 0
        self._limits = limits or default_limits()
        self._pending: dict[str, Any] = {}
        self._socket = new_socket(
            zmq.SUB,
            max_message_bytes=self._limits.max_message_bytes,
            recv_hwm=recv_hwm or (_LATEST_ONLY_HWM if latest_only else _ORDERED_HWM),
        )
        for topic in [""] if topics is None else topics:
            self._socket.setsockopt(zmq.SUBSCRIBE, topic.encode())
        try:
            attach(self._socket, self.endpoints, bind=bind, curve=curve)
        except BaseException:
            self.close()
            raise

    def recv(self, timeout_ms: int) -> tuple[str, WireModel] | None:
        """The next decoded message, skipping (and logging) malformed ones.

        Args:
            timeout_ms: longest wait in milliseconds (0 = only what has already arrived).

        Returns:
            ``(topic, model)``, or None when nothing valid arrived in time.
        """
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            item = self._next(remaining_ms(deadline))
            if item is None:
                return None
            topic, frames = item
            try:
                model = decode_frames(
                    [frame.buffer for frame in frames], expected=TOPIC_MODELS.get(topic), limits=self._limits
                )
            except ContractError as exc:
                self._drop(topic, str(exc))
                continue
            return topic, model

    def recv_raw(self, timeout_ms: int) -> tuple[str, bytes] | None:
        """The next message's topic and payload bytes (for recorders).

        The frames come back joined into one buffer as :func:`~navi_contracts.codec.encode` makes
        it, not decoded (:func:`~navi_contracts.codec.decode` reads it).

        Args:
            timeout_ms: longest wait in milliseconds.

        Returns:
            ``(topic, payload)``, or None when nothing arrived in time.
        """
        item = self._next(timeout_ms)
        if item is None:
            return None
        topic, frames = item
        return topic, join_frames([frame.buffer for frame in frames])

    def _next(self, timeout_ms: int) -> tuple[str, Any] | None:
        deadline = time.monotonic() + timeout_ms / 1000
        if self.latest_only:
            while True:
                self._drain()
                if self._pending:
                    topic = next(iter(self._pending))
                    return topic, self._pending.pop(topic)
                left = remaining_ms(deadline)
                if left <= 0 or not self._socket.poll(left, zmq.POLLIN):
                    return None
        while self._socket.poll(remaining_ms(deadline), zmq.POLLIN):
            item = self._read_one()
            if item is not None:
                return item
        return None

    def _drain(self) -> None:
        for _ in range(_DRAIN_CAP):
            if not int(self._socket.getsockopt(zmq.EVENTS)) & zmq.POLLIN:
                return
            item = self._read_one()
            if item is not None:
                # Re-insert so the dict stays ordered by arrival of each topic's newest message.
                self._pending.pop(item[0], None)
                self._pending[item[0]] = item[1]

    def _read_one(self) -> tuple[str, Any] | None:
        try:
            frames = self._socket.recv_multipart(zmq.NOBLOCK, copy=False)
        except zmq.Again:
            return None
        if len(frames) < 2:
            self._drop("?", f"expected [topic, payload...], got {len(frames)} frame")
            return None
        try:
            topic = frames[0].bytes.decode("utf-8")
        except UnicodeDecodeError:
            self._drop("?", "topic frame is not UTF-8")
            return None
        return topic, frames[1:]

    def _drop(self, topic: str, reason: str) -> None:
        self.dropped += 1
        log.warning("contracts.subscriber.message_dropped", topic=topic, reason=reason, dropped=self.dropped)
