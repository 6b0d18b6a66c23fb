"""Request/reply helpers: a REQ client that never waits forever and a REP loop that never dies.

``ReqClient`` follows ZeroMQ's "lazy pirate" pattern: a REQ socket whose reply did not come in time is
stuck in its send/receive state machine, so it is closed (linger 0) and replaced before the request
is re-sent. After the last retry the caller gets :class:`PeerTimeoutError`, never a hang.

``RepServer`` answers *every* request, because a REP socket that skips a reply deadlocks its peer:
undecodable bytes, a wrong message kind and a handler exception all become an ``ErrorReply`` and the
loop goes on. ``serve`` polls with a timeout so it notices its stop event.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import structlog
import zmq

from navi_common.transport.errors import PeerTimeoutError, RemoteError
from navi_common.transport.sockets import ClosableSocket, attach, new_socket
from navi_contracts.codec import decode_frames, default_limits, encode_frames
from navi_contracts.errors import ContractError
from navi_contracts.limits import ContractLimits
from navi_contracts.model_base import WireModel
from navi_contracts.models import ErrorReply

if TYPE_CHECKING:
    from navi_common.transport.curve import CurveKeys

log = structlog.get_logger()

M = TypeVar("M", bound=WireModel)
Handler = Callable[[WireModel], WireModel]

_MESSAGE_MAX = 4000  # error text sent back; the full detail stays in the server log
REP_RECV_HWM = 16
"""Requests a REP server queues per peer: a REQ peer has at most one in flight, so this bounds only
what a misbehaving (DEALER) peer can make the server hold."""


class ReqClient(ClosableSocket):
    """Sends one request at a time and waits for its reply, with timeout, retries and socket reset.

    Args:
        endpoint: the REP server, e.g. ``tcp://127.0.0.1:5560``.
        timeout_ms: wait per attempt, in milliseconds.
        retries: extra attempts after the first one times out.
        limits: decoding limits for replies; default: :func:`navi_contracts.codec.default_limits`.
        multipart: send the request's arrays without copying them (zero copy).
        curve: CURVE keys (secure mode): the client key pair and the server's public key.
    """

    def __init__(
        self,
        endpoint: str,
        timeout_ms: int = 2000,
        retries: int = 2,
        limits: ContractLimits | None = None,
        multipart: bool = False,
        *,
        curve: CurveKeys | None = None,
    ) -> None:
        if timeout_ms <= 0:
            raise ValueError(f"timeout_ms must be > 0, got {timeout_ms}")
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        self.endpoint = endpoint
        self.timeout_ms = timeout_ms
        self.retries = retries
        self.multipart = multipart
        self._limits = limits or default_limits()
        self._curve = curve
        self._socket = self._new_socket()

    def _new_socket(self) -> zmq.Socket[Any]:
        sock = new_socket(zmq.REQ, max_message_bytes=self._limits.max_message_bytes)
        try:
            attach(sock, self.endpoint, bind=False, curve=self._curve)
        except BaseException:
            sock.close(linger=0)
            raise
        return sock

    def _reset_socket(self) -> None:
        self._socket.close(linger=0)
        self._socket = self._new_socket()

    def request(self, model: WireModel, expected: type[M] | None = None) -> M:
        """Send ``model`` and return the decoded reply.

        Args:
            model: the request.
            expected: the reply class required (e.g. ``StepResult``); None accepts any model.

        Returns:
            The reply model.

        Raises:
            PeerTimeoutError: no reply after ``1 + retries`` attempts of ``timeout_ms`` each.
            RemoteError: the server answered with an ``ErrorReply``.
            ContractError: the reply was malformed, of the wrong kind or for another request.
        """
        frames = encode_frames(model, copy=not self.multipart)
        attempts = 1 + self.retries
        for attempt in range(1, attempts + 1):
            reply = self._attempt(frames)
            if reply is not None:
                decoded = decode_frames(reply, limits=self._limits)
                return self._check_reply(model, decoded, expected)  # type: ignore[return-value]
            log.warning("contracts.req.timeout", endpoint=self.endpoint, attempt=attempt, attempts=attempts)
            self._reset_socket()
        raise PeerTimeoutError(
            f"no reply from {self.endpoint} after {attempts} attempts of {self.timeout_ms} ms each"
        )

    def _attempt(self, frames: list[Any]) -> list[memoryview] | None:
        try:
            self._socket.send_multipart(frames, zmq.NOBLOCK, copy=False)
        except zmq.Again:
            return None
        if not self._socket.poll(self.timeout_ms, zmq.POLLIN):
            return None
        return [frame.buffer for frame in self._socket.recv_multipart(zmq.NOBLOCK, copy=False)]

    @staticmethod
    def _check_reply(request: WireModel, reply: WireModel, expected: type[WireModel] | None) -> WireModel:
        if isinstance(reply, ErrorReply):
            raise RemoteError(reply.code, reply.message, reply.request_id)
        if expected is not None and not isinstance(reply, expected):
            raise ContractError(f"expected a {expected.__name__} reply, got {type(reply).__name__}")
        sent_id, got_id = getattr(request, "request_id", None), getattr(reply, "request_id", None)
        if sent_id is not None and got_id is not None and sent_id != got_id:
            raise ContractError(f"reply is for request {got_id}, expected {sent_id}")
        return reply


class RepServer(ClosableSocket):
    """Answers requests with ``handler``; every failure becomes an ``ErrorReply``.

    Args:
        endpoint: where to bind (or connect, with ``bind=False``), e.g. ``tcp://127.0.0.1:5560``.
        handler: request model -> reply model. Exceptions it raises are answered, not propagated.
        bind: bind (default) or connect.
        accepts: request classes the handler understands; others get ``wrong_kind``.
        limits: decoding limits; default: :func:`navi_contracts.codec.default_limits`.
        curve: CURVE keys (secure mode): only allowlisted clients are served.
    """

    def __init__(
        self,
        endpoint: str,
        handler: Handler,
        bind: bool = True,
        accepts: tuple[type[WireModel], ...] | None = None,
        limits: ContractLimits | None = None,
        *,
        curve: CurveKeys | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.handler = handler
        self.accepts = accepts
        self.served = 0
        self.refused = 0
        self._limits = limits or default_limits()
        self._socket = new_socket(
            zmq.REP, max_message_bytes=self._limits.max_message_bytes, recv_hwm=REP_RECV_HWM
        )
        try:
            attach(self._socket, endpoint, bind=bind, curve=curve)
        except BaseException:
            self.close()
            raise

    def serve(self, stop: threading.Event, poll_ms: int = 100) -> None:
        """Serve until ``stop`` is set (checked at least every ``poll_ms``).

        Args:
            stop: set it from another thread to end the loop.
            poll_ms: poll timeout, i.e. the longest delay before noticing ``stop``.
        """
        log.info("contracts.rep.serving", endpoint=self.endpoint)
        while not stop.is_set():
            self.serve_once(poll_ms)
        log.info("contracts.rep.stopped", endpoint=self.endpoint, served=self.served, refused=self.refused)

    def serve_once(self, timeout_ms: int) -> bool:
        """Answer at most one request, waiting up to ``timeout_ms`` for it.

        Args:
            timeout_ms: longest wait for a request, in milliseconds.

        Returns:
            True when a request arrived and was answered.
        """
        if not self._socket.poll(timeout_ms, zmq.POLLIN):
            return False
        started = time.perf_counter()
        frames = self._socket.recv_multipart(zmq.NOBLOCK, copy=False)
        reply = self._answer(frames)
        try:  # zero copy: the client's next request can only come after the reply went out
            payload = encode_frames(reply)
        except ContractError as exc:
            reply = self._refuse("handler_error", f"reply could not be encoded: {exc}", None)
            payload = encode_frames(reply)
        try:
            self._socket.send_multipart(payload, zmq.NOBLOCK, copy=False)
        except zmq.Again:
            log.warning("contracts.rep.reply_dropped", endpoint=self.endpoint)
        self.served += 1
        log.debug(
            "contracts.rep.answered", kind=type(reply).WIRE_KIND, ms=(time.perf_counter() - started) * 1e3
        )
        return True

    def _answer(self, frames: list[Any]) -> WireModel:
        try:
            request = decode_frames([frame.buffer for frame in frames], limits=self._limits)
        except ContractError as exc:
            return self._refuse("bad_request", str(exc), None)
        request_id = getattr(request, "request_id", None)
        if self.accepts is not None and not isinstance(request, self.accepts):
            names = ", ".join(cls.__name__ for cls in self.accepts)
            return self._refuse("wrong_kind", f"expected {names}, got {type(request).__name__}", request_id)
        try:
            reply = self.handler(request)
        except Exception as exc:  # the loop must survive any handler bug; the client gets the reason
            log.exception("contracts.rep.handler_failed", endpoint=self.endpoint, kind=request.WIRE_KIND)
            return self._refuse("handler_error", f"{type(exc).__name__}: {exc}", request_id)
        if not isinstance(reply, WireModel):
            return self._refuse("handler_error", f"handler returned {type(reply).__name__}", request_id)
        return reply

    def _refuse(self, code: str, message: str, request_id: int | None) -> ErrorReply:
        self.refused += 1
        log.warning("contracts.rep.request_refused", endpoint=self.endpoint, code=code, reason=message)
        return ErrorReply(code=code, message=message[:_MESSAGE_MAX], request_id=request_id)
