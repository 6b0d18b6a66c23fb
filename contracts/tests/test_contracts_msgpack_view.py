"""The zero-copy msgpack reader agrees with the reference msgpack library (oracle test)."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from navi_contracts import ContractError
from navi_contracts.msgpack_view import MsgpackView

_leaves = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=300)
    | st.binary(max_size=300)
)
documents = st.recursive(
    _leaves,
    lambda inner: st.lists(inner, max_size=20) | st.dictionaries(st.text(max_size=10), inner, max_size=20),
    max_leaves=40,
)


def _bins_to_bytes(value: Any) -> Any:
    if isinstance(value, memoryview):
        return value.tobytes()
    if isinstance(value, list):
        return [_bins_to_bytes(item) for item in value]
    if isinstance(value, dict):
        return {key: _bins_to_bytes(item) for key, item in value.items()}
    return value


def _read(payload: bytes) -> Any:
    return MsgpackView(memoryview(payload), max_container=1000, max_str_bytes=10_000).read_all()


@settings(max_examples=150)
@given(documents)
def test_reader_matches_reference_unpacker(document: Any) -> None:
    payload = msgpack.packb(document, use_bin_type=True)
    assert _bins_to_bytes(_read(payload)) == msgpack.unpackb(payload, raw=False, strict_map_key=False)


@given(st.floats(width=32, allow_nan=False))
@settings(max_examples=30)
def test_float32_encoding_is_read(value: float) -> None:
    payload = msgpack.packb(value, use_single_float=True)
    assert _read(payload) == value


def test_bins_are_views_of_the_input() -> None:
    payload = bytearray(msgpack.packb({"data": b"abcdef"}))
    view = _read(bytes(payload))["data"]
    assert isinstance(view, memoryview)
    source = memoryview(payload)
    result = MsgpackView(source, 10, 10).read_all()["data"]
    payload[-1] = ord("z")  # mutate the underlying buffer: the view sees it, so nothing was copied
    assert result.tobytes() == b"abcdez"


def test_container_limit() -> None:
    with pytest.raises(ContractError, match="container of 5 entries exceeds the limit of 4"):
        MsgpackView(memoryview(msgpack.packb([1, 2, 3, 4, 5])), max_container=4, max_str_bytes=10).read_all()
