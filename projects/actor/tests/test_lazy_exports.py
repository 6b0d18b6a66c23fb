"""The shared lazy ``__getattr__`` of the actor packages: exports resolve to the defining module's
object, and any other name is a plain ``AttributeError`` (so ``hasattr`` and imports behave)."""

from __future__ import annotations

import pytest

import navi_actor.memory
from navi_actor.memory.episodic import EpisodicMemory
from navi_common.lazy_exports import lazy_getattr


def test_export_is_the_defining_modules_object() -> None:
    assert navi_actor.memory.EpisodicMemory is EpisodicMemory
    getattr_ = lazy_getattr("pkg", {"OrderedDict": "collections"})
    from collections import OrderedDict

    assert getattr_("OrderedDict") is OrderedDict


def test_unknown_name_is_an_attribute_error_naming_the_package() -> None:
    with pytest.raises(AttributeError, match=r"module 'navi_actor\.memory' has no attribute 'Nope'"):
        _ = navi_actor.memory.Nope  # type: ignore[attr-defined]
    assert not hasattr(navi_actor.memory, "Nope")
    with pytest.raises(AttributeError, match="module 'pkg' has no attribute 'deque'"):
        lazy_getattr("pkg", {"OrderedDict": "collections"})("deque")
