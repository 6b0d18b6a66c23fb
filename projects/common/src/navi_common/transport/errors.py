"""The error types of the ZeroMQ transport.

A ``NaviTransportError`` means *the peer did not answer or refused* (retrying or restarting the peer
may help), unlike :class:`navi_contracts.errors.ContractError` (*the bytes or values are wrong*: never
retry the same message). Callers can therefore catch exactly what they can handle.
"""

from __future__ import annotations


class NaviTransportError(Exception):
    """Base class for ZeroMQ transport failures (timeouts, remote refusals)."""


class PeerTimeoutError(NaviTransportError):
    """The peer did not answer in time, after every retry (or no subscriber showed up)."""


class RemoteError(NaviTransportError):
    """The peer answered a request with an ``ErrorReply``.

    Attributes:
        code: the reply's machine-readable error code (e.g. ``bad_request``).
        remote_message: the human-readable message the peer sent.
        request_id: the request the error refers to, when the peer knew it.
    """

    def __init__(self, code: str, remote_message: str, request_id: int | None = None) -> None:
        super().__init__(f"peer refused request {request_id}: [{code}] {remote_message}")
        self.code = code
        self.remote_message = remote_message
        self.request_id = request_id
