"""The websocket protocol between the dashboard server and its page.

Server -> page:
  * text ``{"type": "hello", ...}`` once: capabilities (keyboard flight on/off), colour legend.
  * text ``{"type": "status", ...}`` at ``status_hz``: :meth:`DashboardState.status` plus ``charts``
    (points newer than the tab's cursor) and ``server_wall`` (seconds since the epoch).
  * binary frame: ``uint32 little-endian header length | UTF-8 JSON header | PNG``. The header
    names the frame version, source, step, batch size and image size; the PNG is the
    heading-centred panorama (the page crops the forward hemisphere out of it).

Page -> server:
  * text ``{"type": "keys", "down": ["w", "space", ...]}`` whenever the held keys change.

One binary frame is built per new observation and shared by every tab.
"""

from __future__ import annotations

import json
import struct
from typing import Any

FRAME_HEADER_LENGTH = struct.Struct("<I")
KEY_NAMES = frozenset({"w", "a", "s", "d", "q", "e", "space", "shift"})
MAX_CLIENT_MESSAGE_BYTES = 4096


class ProtocolError(ValueError):
    """A page sent something the server does not understand."""


def pack_frame(header: dict[str, Any], png: bytes) -> bytes:
    """Build one binary frame message.

    Args:
        header: JSON-serialisable frame description.
        png: the encoded image.

    Returns:
        ``len(header) | header JSON | png`` as one bytes object.
    """
    header_bytes = json.dumps(header, separators=(",", ":")).encode()
    return FRAME_HEADER_LENGTH.pack(len(header_bytes)) + header_bytes + png


def unpack_frame(message: bytes) -> tuple[dict[str, Any], bytes]:
    """Split a binary frame message (the page does the same in JavaScript; tests use this).

    Args:
        message: bytes produced by :func:`pack_frame`.

    Returns:
        (header dict, PNG bytes).

    Raises:
        ProtocolError: truncated or malformed message.
    """
    if len(message) < FRAME_HEADER_LENGTH.size:
        raise ProtocolError(f"frame of {len(message)} bytes is shorter than its length prefix")
    (length,) = FRAME_HEADER_LENGTH.unpack_from(message)
    end = FRAME_HEADER_LENGTH.size + length
    if end > len(message):
        raise ProtocolError(f"frame header claims {length} bytes but only {len(message) - 4} follow")
    try:
        header = json.loads(message[FRAME_HEADER_LENGTH.size : end])
    except ValueError as exc:
        raise ProtocolError(f"frame header is not JSON: {exc}") from exc
    if not isinstance(header, dict):
        raise ProtocolError("frame header must be a JSON object")
    return header, message[end:]


def parse_client_message(text: str) -> frozenset[str]:
    """Validate a page's message and return the set of held keys.

    Args:
        text: the websocket text payload.

    Returns:
        The held keys (a subset of :data:`KEY_NAMES`).

    Raises:
        ProtocolError: oversized, not JSON, unknown type, or unknown key names.
    """
    if len(text) > MAX_CLIENT_MESSAGE_BYTES:
        raise ProtocolError(f"message of {len(text)} characters exceeds {MAX_CLIENT_MESSAGE_BYTES}")
    try:
        message = json.loads(text)
    except ValueError as exc:
        raise ProtocolError(f"message is not JSON: {exc}") from exc
    if not isinstance(message, dict) or message.get("type") != "keys":
        raise ProtocolError('expected {"type": "keys", "down": [...]}')
    down = message.get("down")
    if not isinstance(down, list) or not all(isinstance(key, str) for key in down):
        raise ProtocolError('"down" must be a list of key names')
    unknown = set(down) - KEY_NAMES
    if unknown:
        raise ProtocolError(f"unknown keys {sorted(unknown)}; known: {sorted(KEY_NAMES)}")
    return frozenset(down)
