"""Bounded chart history: one fixed-size ring per metric, addressed by a global sequence number.

Every telemetry event gets the next sequence number. A browser tab remembers the last number it has
seen and asks for everything newer, so the server keeps no per-tab queue at all: a slow or stalled
tab costs one integer, and the rings never grow past ``max_points`` per series.
"""

from __future__ import annotations

import math

import numpy as np


class SeriesRing:
    """Fixed-capacity ring of (sequence, time, value) points for one metric."""

    def __init__(self, capacity: int) -> None:
        """Allocate the ring once.

        Args:
            capacity: most points kept; older points are overwritten.
        """
        if capacity < 1:
            raise ValueError(f"capacity must be positive, got {capacity}")
        self.capacity = capacity
        self._seq = np.zeros(capacity, dtype=np.int64)
        self._time = np.zeros(capacity, dtype=np.float64)
        self._value = np.zeros(capacity, dtype=np.float64)
        self._count = 0  # points ever appended

    def __len__(self) -> int:
        return min(self._count, self.capacity)

    def append(self, seq: int, time_s: float, value: float) -> None:
        """Add one point; sequence numbers must increase.

        Args:
            seq: global sequence number of the event carrying the point.
            time_s: wall-clock time of the point (seconds since the epoch).
            value: the metric value.
        """
        slot = self._count % self.capacity
        self._seq[slot], self._time[slot], self._value[slot] = seq, time_s, value
        self._count += 1

    def since(self, cursor: int) -> tuple[list[float], list[float]]:
        """Points with a sequence number greater than ``cursor``, oldest first.

        Args:
            cursor: last sequence number the caller has; -1 for everything kept.

        Returns:
            (times, values) as plain lists, ready for JSON (only finite values are ever stored).
        """
        kept = len(self)
        start = self._count - kept
        order = (np.arange(start, self._count) % self.capacity) if kept else np.zeros(0, dtype=np.int64)
        first_new = int(np.searchsorted(self._seq[order], cursor, side="right"))
        chosen = order[first_new:]
        return self._time[chosen].tolist(), self._value[chosen].tolist()

    def latest(self) -> float | None:
        """The newest value, or None when empty."""
        if self._count == 0:
            return None
        return float(self._value[(self._count - 1) % self.capacity])


class SeriesStore:
    """Named rings with a cap on how many names exist (payload keys come from the network)."""

    def __init__(self, max_points: int, max_series: int) -> None:
        """Create an empty store.

        Args:
            max_points: capacity of each ring.
            max_series: most distinct names; points for further names are counted and dropped.
        """
        self.max_points = max_points
        self.max_series = max_series
        self._rings: dict[str, SeriesRing] = {}
        self.seq = -1  # last sequence number handed out
        self.dropped_names = 0

    def append_event(self, time_s: float, values: dict[str, float]) -> int:
        """Record every finite value of one event under one new sequence number.

        Args:
            time_s: wall-clock time of the event.
            values: metric name -> value.

        Returns:
            The event's sequence number.
        """
        self.seq += 1
        for name, value in values.items():
            if not math.isfinite(value):
                continue
            ring = self._rings.get(name)
            if ring is None:
                if len(self._rings) >= self.max_series:
                    self.dropped_names += 1
                    continue
                ring = self._rings[name] = SeriesRing(self.max_points)
            ring.append(self.seq, time_s, value)
        return self.seq

    def since(self, cursor: int) -> dict[str, dict[str, list[float]]]:
        """Every series' points newer than ``cursor`` (series without new points are left out).

        Args:
            cursor: last sequence number the caller has; -1 for the whole history.

        Returns:
            name -> {"t": times, "v": values}.
        """
        delta: dict[str, dict[str, list[float]]] = {}
        for name, ring in self._rings.items():
            times, values = ring.since(cursor)
            if times:
                delta[name] = {"t": times, "v": values}
        return delta

    def names(self) -> list[str]:
        """Known series names, in first-seen order."""
        return list(self._rings)
