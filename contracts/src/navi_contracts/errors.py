"""The error types of the wire layer.

Two families, kept apart on purpose: a ``ContractError`` means *the bytes or values are wrong* (never
retry the same message), a ``NaviTransportError`` means *the peer did not answer or refused* (retrying
or restarting the peer may help). Callers can therefore catch exactly what they can handle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


class ContractError(ValueError):
    """Invalid wire model or undecodable bytes: the one error every decoder and model raises."""


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


def format_validation_error(owner: str, exc: ValidationError) -> str:
    """One readable line for a pydantic error: ``Owner.field.sub: message`` per problem, ``; ``-joined.

    The wire models (owner: the model's name) and every command's settings (owner ``""``) report
    problems this way, so a bad message and a bad option read alike.
    """
    lines = []
    for error in exc.errors(include_url=False):
        location = ".".join(str(part) for part in (owner, *error["loc"]) if part != "")
        message = str(error["msg"]).removeprefix("Value error, ")
        lines.append(f"{location}: {message}" if location else message)
    return "; ".join(lines)
