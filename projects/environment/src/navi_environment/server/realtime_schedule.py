"""Which action each drone executes at a real-time tick: schedules, fallback and action ages.

Pure numpy over the batch (no sockets, no clock, no per-drone Python loop), so the rules can be
checked tick by tick in unit tests. The wire semantics (docs/service.md, "Real-time mode"):

- Every drone holds at most one *schedule*: a start tick ``s``, ``H`` rows of actions and the
  ``step_id`` of the observation they answer. At tick ``t`` the drone executes row ``t - s`` when
  ``0 <= t - s < H``.
- An ``Action`` with a ``chunk`` schedules ``chunk[b]`` from ``start_tick`` (None: ``step_id + 1``);
  a chunk that arrives late is still used from its current row (rows for past ticks are skipped).
  An ``Action`` without a chunk is a one-row schedule from ``max(start_tick or step_id + 1, t)``,
  where ``t`` is the next tick to execute, so a late plain action still runs once.
- A message is *stale* for a drone, and ignored there, when its requested start
  (``start_tick`` or ``step_id + 1``) is earlier than the held schedule's, or equal with a
  ``step_id`` that is not newer (a re-send).
- A tick no schedule covers is a *fallback* tick: ``hold`` repeats the last executed action,
  ``slow`` executes the last action times 0.5 (yaw rate included), so a drone whose brain went
  quiet slows to a stop. Before any action a drone executes zeros (hover).
- The *action age* of an executed action is ``t - step_id`` of the message it came from (a fallback
  action keeps its source's ``step_id``, so its age grows each tick); drones that never received an
  action have no age.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from navi_contracts import Action
from navi_contracts import telemetry_names as names
from navi_contracts.models import ACTION_CHUNK_MAX

Fallback = Literal["hold", "slow"]
SLOW_FACTOR = 0.5
"""``slow`` fallback: each fallback tick executes the previous action times this."""
_NONE = -1  # "no schedule / no source" in the int64 per-drone arrays


@dataclass
class RealtimeStats:
    """Real-time counters: per drone (numpy ``[B]``) plus the loop's own misses.

    Read in-process by tests and the benchmark (:meth:`snapshot`); published as the
    ``environment.realtime.stats`` telemetry event.
    """

    num_drones: int
    control_hz: float = 20.0
    tick: int = 0
    """Newest executed tick (the step_id of the newest observation)."""
    missed_ticks: int = 0
    """Tick deadlines that passed while the loop was still busy (loop overruns)."""
    accepted: int = 0
    """Messages that set at least one drone's schedule."""
    stale: int = 0
    """Drone rows ignored because the held schedule starts later (or is the same re-sent)."""
    rejected: int = 0
    """Messages refused whole (env ids out of range or repeated, not an Action)."""
    ticks: np.ndarray = field(init=False)
    """int64 [B]: ticks executed."""
    fallback_ticks: np.ndarray = field(init=False)
    """int64 [B]: ticks executed without a scheduled action (the fallback ran)."""
    age_sum: np.ndarray = field(init=False)
    """int64 [B]: sum of the action ages of executed actions that had a source."""
    age_count: np.ndarray = field(init=False)
    """int64 [B]: how many executed actions had a source (the mean age's denominator)."""
    age_max: np.ndarray = field(init=False)
    """int64 [B]: largest action age executed (-1: none yet)."""
    guarded_ticks: np.ndarray = field(init=False)
    """int64 [B]: ticks whose action the collision guard changed (``ServerConfig.guard``)."""

    def __post_init__(self) -> None:
        size = self.num_drones
        self.ticks = np.zeros(size, np.int64)
        self.fallback_ticks = np.zeros(size, np.int64)
        self.age_sum = np.zeros(size, np.int64)
        self.age_count = np.zeros(size, np.int64)
        self.age_max = np.full(size, _NONE, np.int64)
        self.guarded_ticks = np.zeros(size, np.int64)

    def record(self, fallback: np.ndarray, ages: np.ndarray) -> None:
        """Count one tick: ``fallback`` bool [B], ``ages`` int64 [B] (-1 = no source)."""
        aged = ages >= 0
        self.ticks += 1
        self.fallback_ticks += fallback
        self.age_sum += np.where(aged, ages, 0)
        self.age_count += aged
        np.maximum(self.age_max, ages, out=self.age_max)

    def per_drone(self) -> dict[str, list[float]]:
        """Per-drone figures (lists of B floats; ages NaN for a drone that never executed an action)."""
        counted = self.age_count > 0
        mean_age = np.divide(
            self.age_sum, self.age_count, out=np.full(self.num_drones, np.nan), where=counted
        )
        return {
            "ticks": self.ticks.astype(float).tolist(),
            names.FALLBACK_TICKS: self.fallback_ticks.astype(float).tolist(),
            names.GUARDED_TICKS: self.guarded_ticks.astype(float).tolist(),
            names.MEAN_ACTION_AGE_TICKS: mean_age.tolist(),
            names.MAX_ACTION_AGE_TICKS: np.where(counted, self.age_max, np.nan).tolist(),
        }

    def snapshot(self) -> dict[str, float]:
        """Aggregates over drones, the telemetry payload (every value a float; ages NaN before any)."""
        counted = int(self.age_count.sum())
        ticks = int(self.ticks.sum())
        return {
            "tick": float(self.tick),
            "control_hz": float(self.control_hz),
            "actors": float(self.num_drones),
            "ticks_executed": float(self.ticks.max(initial=0)),
            names.MISSED_TICKS: float(self.missed_ticks),
            names.FALLBACK_TICKS: float(self.fallback_ticks.sum()),
            "fallback_fraction": float(self.fallback_ticks.sum()) / ticks if ticks else 0.0,
            names.GUARDED_TICKS: float(self.guarded_ticks.sum()),
            names.MEAN_ACTION_AGE_TICKS: float(self.age_sum.sum()) / counted if counted else math.nan,
            names.MAX_ACTION_AGE_TICKS: float(self.age_max.max(initial=_NONE)) if counted else math.nan,
            "accepted_actions": float(self.accepted),
            "stale_actions": float(self.stale),
            "rejected_actions": float(self.rejected),
        }


class ActionScheduler:
    """Holds each drone's schedule and picks the actions of a tick (see the module docstring).

    Args:
        num_drones: B; messages name drones by env id 0..B-1.
        fallback: what a tick without a scheduled action executes.
        stats: counters to update (a fresh :class:`RealtimeStats` by default).
    """

    def __init__(
        self, num_drones: int, fallback: Fallback = "hold", stats: RealtimeStats | None = None
    ) -> None:
        if fallback not in ("hold", "slow"):
            raise ValueError(f"fallback must be 'hold' or 'slow', got {fallback!r}")
        self.num_drones = num_drones
        self.fallback: Fallback = fallback
        self.stats = stats or RealtimeStats(num_drones)
        self._rows = np.zeros((num_drones, ACTION_CHUNK_MAX, 4), np.float32)
        self._start = np.full(num_drones, _NONE, np.int64)  # first tick row 0 is for
        self._requested = np.full(num_drones, _NONE, np.int64)  # start asked for (staleness)
        self._horizon = np.zeros(num_drones, np.int64)
        self._source = np.full(num_drones, _NONE, np.int64)  # step_id of the held schedule
        self.last_action = np.zeros((num_drones, 4), np.float32)
        self._last_source = np.full(num_drones, _NONE, np.int64)
        self._arange = np.arange(num_drones)

    def receive(self, message: Action, next_tick: int) -> int:
        """Take one message's schedule for the drones it names (where not stale).

        Args:
            message: the brain's Action (plain or with a chunk).
            next_tick: the next tick to execute (a plain action never starts before it).

        Returns:
            How many drones took the new schedule.

        Raises:
            ValueError: env ids outside 0..B-1 or repeated (the message is counted as rejected).
        """
        ids = np.asarray(message.env_ids, np.int64)
        if ids.min() < 0 or ids.max() >= self.num_drones or np.unique(ids).size != ids.size:
            self.stats.rejected += 1
            raise ValueError(
                f"env_ids must be distinct ids in 0..{self.num_drones - 1}, got {ids.tolist()[:8]}"
            )
        requested = message.step_id + 1 if message.start_tick is None else message.start_tick
        held_requested, held_source = self._requested[ids], self._source[ids]
        fresh = (requested > held_requested) | (
            (requested == held_requested) & (message.step_id > held_source)
        )
        taken = ids[fresh]
        self.stats.stale += int(ids.size - taken.size)
        if not taken.size:
            return 0
        self.stats.accepted += 1
        if message.chunk is None:
            rows, start = message.actions[fresh][:, None, :], max(requested, next_tick)
        else:
            rows, start = message.chunk[fresh], requested
        self._rows[taken, : rows.shape[1]] = rows
        self._horizon[taken] = rows.shape[1]
        self._start[taken] = start
        self._requested[taken] = requested
        self._source[taken] = message.step_id
        return int(taken.size)

    def tick(self, tick: int) -> np.ndarray:
        """The actions to execute at ``tick``, float32 [B,4] in env-id order; counts the tick.

        Returns:
            A new array (the caller may hand it to the backend).
        """
        offset = tick - self._start
        covered = (self._start >= 0) & (offset >= 0) & (offset < self._horizon)
        scheduled = self._rows[self._arange, np.clip(offset, 0, ACTION_CHUNK_MAX - 1)]
        fallback = self.last_action * SLOW_FACTOR if self.fallback == "slow" else self.last_action
        executed = np.where(covered[:, None], scheduled, fallback).astype(np.float32, copy=False)
        source = np.where(covered, self._source, self._last_source)
        ages = np.where(source >= 0, tick - source, _NONE)
        self.last_action, self._last_source = executed, source
        self.stats.tick = tick
        self.stats.record(~covered, ages)
        return executed.copy()
