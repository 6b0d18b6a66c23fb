"""Bounded chart history against a plain-list reference model."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from navi_dashboard.series import SeriesRing, SeriesStore


def test_ring_keeps_only_the_newest_points() -> None:
    ring = SeriesRing(3)
    for seq in range(5):
        ring.append(seq, 100.0 + seq, seq * 10.0)
    assert len(ring) == 3 and ring.latest() == 40.0
    assert ring.since(-1) == ([102.0, 103.0, 104.0], [20.0, 30.0, 40.0])
    assert ring.since(3) == ([104.0], [40.0])
    assert ring.since(4) == ([], [])


def test_empty_ring() -> None:
    ring = SeriesRing(2)
    assert ring.latest() is None and ring.since(-1) == ([], [])
    with pytest.raises(ValueError, match="positive"):
        SeriesRing(0)


@given(
    capacity=st.integers(1, 8),
    events=st.lists(st.dictionaries(st.sampled_from("abc"), st.floats(-1e6, 1e6), max_size=3), max_size=40),
    cursor=st.integers(-1, 45),
)
def test_store_matches_a_list_model(capacity: int, events: list[dict[str, float]], cursor: int) -> None:
    store = SeriesStore(max_points=capacity, max_series=10)
    model: dict[str, list[tuple[int, float, float]]] = {}
    for seq, values in enumerate(events):
        assert store.append_event(float(seq), values) == seq
        for name, value in values.items():
            model.setdefault(name, []).append((seq, float(seq), value))
    expected = {}
    for name, points in model.items():
        kept = [p for p in points[-capacity:] if p[0] > cursor]
        if kept:
            expected[name] = {"t": [p[1] for p in kept], "v": [p[2] for p in kept]}
    assert store.since(cursor) == expected


def test_non_finite_values_and_excess_names_are_dropped() -> None:
    store = SeriesStore(max_points=4, max_series=2)
    store.append_event(1.0, {"a": 1.0, "b": math.nan, "c": 3.0})
    store.append_event(2.0, {"d": 4.0, "b": math.inf})
    assert store.names() == ["a", "c"]
    assert store.dropped_names == 1  # "d"; non-finite "b" values are skipped before any ring exists
    assert store.since(-1) == {"a": {"t": [1.0], "v": [1.0]}, "c": {"t": [1.0], "v": [3.0]}}
