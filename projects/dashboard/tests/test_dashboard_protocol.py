"""Websocket framing and the validation of what pages send."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from navi_dashboard.protocol import (
    KEY_NAMES,
    MAX_CLIENT_MESSAGE_BYTES,
    ProtocolError,
    pack_frame,
    parse_client_message,
    unpack_frame,
)

headers = st.dictionaries(
    st.text(max_size=8), st.one_of(st.integers(), st.text(max_size=8), st.none()), max_size=5
)


@given(headers, st.binary(max_size=256))
def test_frame_round_trip(header: dict, png: bytes) -> None:
    assert unpack_frame(pack_frame(header, png)) == (header, png)


@given(st.binary(max_size=64))
def test_arbitrary_bytes_either_unpack_or_raise_protocol_error(data: bytes) -> None:
    try:
        header, _ = unpack_frame(data)
    except ProtocolError:
        return
    assert isinstance(header, dict)


def test_truncated_frames_are_rejected() -> None:
    message = pack_frame({"version": 1}, b"png")
    with pytest.raises(ProtocolError, match="claims"):
        unpack_frame(message[:6])
    with pytest.raises(ProtocolError, match="shorter"):
        unpack_frame(b"\x01")


@given(st.sets(st.sampled_from(sorted(KEY_NAMES))))
def test_valid_key_messages(keys: set[str]) -> None:
    assert parse_client_message(json.dumps({"type": "keys", "down": sorted(keys)})) == frozenset(keys)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nope", "not JSON"),
        ("[1]", "expected"),
        ('{"type": "fly"}', "expected"),
        ('{"type": "keys", "down": "w"}', "list"),
        ('{"type": "keys", "down": [1]}', "list"),
        ('{"type": "keys", "down": ["w", "x"]}', "unknown keys"),
        ("x" * (MAX_CLIENT_MESSAGE_BYTES + 1), "exceeds"),
    ],
)
def test_invalid_key_messages(text: str, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        parse_client_message(text)
