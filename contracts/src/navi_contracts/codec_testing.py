"""Assertions that the codec's fast paths decide exactly as its slow path does (for tests).

The fast paths (generated decoders, layout templates, direct decoders, the value-check kernel) only
ever accept; everything they refuse goes down the slow path, which ends in pydantic. Decoding the
same bytes with :data:`navi_contracts.fast_build.FAST_PATH` on and off must give the same model (same
fields set, value types, read-only arrays) or the same error message.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from navi_contracts import fast_build
from navi_contracts.errors import ContractError
from navi_contracts.model_base import WireModel

_ADDRESS = re.compile(r"0x[0-9a-f]+")


@contextmanager
def _fast_path(enabled: bool) -> Iterator[None]:
    saved = fast_build.FAST_PATH.enabled
    fast_build.FAST_PATH.enabled = enabled
    try:
        yield
    finally:
        fast_build.FAST_PATH.enabled = saved


def _outcome(decoder: Callable[[], WireModel], enabled: bool) -> tuple[str, Any]:
    with _fast_path(enabled):
        try:
            return "ok", decoder()
        except ContractError as exc:
            return "error", str(exc)


def _assert_same_model(fast: WireModel, slow: WireModel) -> None:
    assert type(fast) is type(slow)
    assert fast == slow
    assert fast.model_fields_set == slow.model_fields_set
    assert list(fast.__dict__) == list(slow.__dict__)
    for name, value in slow.__dict__.items():
        other = fast.__dict__[name]
        assert type(other) is type(value), name
        if isinstance(value, np.ndarray):
            assert other.dtype == value.dtype and other.shape == value.shape
            assert not other.flags.writeable and not value.flags.writeable
        elif isinstance(value, WireModel):
            _assert_same_model(other, value)


def assert_paths_agree(decoder: Callable[[], WireModel]) -> str:
    """Decode with and without the fast path; both must agree. Returns "ok" or "error"."""
    fast, slow = _outcome(decoder, True), _outcome(decoder, False)
    assert fast[0] == slow[0], (fast, slow)
    if fast[0] == "error":  # memory addresses (reprs of received memoryviews) may differ
        assert _ADDRESS.sub("0x?", fast[1]) == _ADDRESS.sub("0x?", slow[1])
    else:
        _assert_same_model(fast[1], slow[1])
    return str(fast[0])
