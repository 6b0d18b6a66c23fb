"""The arithmetic of real-time chunked inference: delay estimate, chunk alignment, blending.

Ticks follow the environment's real-time numbering: an observation with ``step_id = s`` describes
the world after tick ``s``; an action answering it takes effect at tick ``s + 1`` at the earliest
(``Action.start_tick`` defaults to ``step_id + 1``). The policy's chunk for observation ``s`` is
therefore meant for ticks ``s + 1 .. s + H``: entry ``k`` for tick ``s + 1 + k``.

Inference takes time. If the new chunk can only take effect at tick ``s + d`` (``d >= 1`` ticks of
delay), its first ``d - 1`` entries are for ticks already committed and are dropped. ``d`` is
estimated with a running maximum over the last few inferences (:class:`DelayEstimator`), so one
slow inference makes the next chunks start late enough too, though never so late that ticks the
previous schedule no longer covers are left to the fallback (:func:`covered_delay`). Schedules are
trimmed from ``latest_tick + 1`` (the newest observation's tick plus one), never from the
time-extrapolated :func:`upcoming_tick`: the environment's next tick is never earlier than that,
and rows for ticks it has already run are skipped by the environment. Where the new chunk overlaps the ticks
still covered by the previous schedule, the two are blended over the first few ticks (the delay
estimate: about one inference) with weights falling from 1 (the committed previous actions) to 0
(the new ones), as real-time chunking does, so the executed actions do not jump when a new chunk
arrives (:func:`merge_schedules`).

Pure tensor functions without processes or sockets; ``[B, K, A]`` schedules (B drones, K ticks).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import torch


class DelayEstimator:
    """Running maximum of the measured inference delay (in ticks) over the last ``window`` inferences.

    Args:
        window: how many measurements the maximum covers.
        initial: the estimate before the first measurement (1: the next tick).
    """

    def __init__(self, window: int = 10, initial: int = 1) -> None:
        if window < 1 or initial < 1:
            raise ValueError(f"window and initial must be >= 1, got {window} and {initial}")
        self._recent: deque[int] = deque(maxlen=window)
        self._initial = initial

    def record(self, ticks: int) -> None:
        """Add one measured delay (clamped to at least 1 tick)."""
        self._recent.append(max(1, int(ticks)))

    @property
    def ticks(self) -> int:
        """The current estimate: the largest delay of the window (``initial`` while empty)."""
        return max(self._recent) if self._recent else self._initial


def upcoming_tick(latest_tick: int, arrival: float, now: float, period: float) -> int:
    """An *estimate* of the next tick the environment executes, seen from ``now``.

    The observation of ``latest_tick`` arrived at ``arrival`` (right after the environment ran that
    tick); the environment runs one tick per ``period`` seconds, so every whole period since then is
    probably one more tick already run. Only probably: the observation arrives a step and a transfer
    after the tick's deadline, so a period after ``arrival`` the environment may not have started the
    next tick yet (a few ms late is enough), and a tick it misses takes no tick number. The estimate
    measures delays and ages; what the brain *schedules* starts from ``latest_tick + 1``, the
    earliest tick the environment can still execute (:func:`covered_delay`, and the control loop's
    ``start_tick``), because a schedule starting after the environment's next tick replaces the one
    that covered it and leaves that tick to the fallback.
    """
    return latest_tick + 1 + max(0, math.floor((now - arrival) / period))


def measured_delay(observation_tick: int, upcoming_tick: int) -> int:
    """Delay in ticks of a chunk for ``observation_tick`` that is ready before ``upcoming_tick`` runs."""
    return max(1, upcoming_tick - observation_tick)


@dataclass(frozen=True)
class Schedule:
    """Actions for consecutive ticks: ``actions[:, k]`` is for tick ``start + k``."""

    start: int
    actions: torch.Tensor  #: [B, K, A]

    @property
    def end(self) -> int:
        """First tick after the schedule."""
        return self.start + int(self.actions.shape[1])

    def from_tick(self, tick: int) -> torch.Tensor:
        """The entries for ``tick`` onwards ``[B, K', A]`` (empty when the schedule has run out)."""
        return self.actions[:, max(0, tick - self.start) :]


def covered_delay(estimate: int, observation_tick: int, earliest_tick: int, previous: Schedule | None) -> int:
    """The delay to align a new chunk with: the estimate, unless nothing would cover the ticks before it.

    The estimate (a running maximum) can exceed this inference's delay, e.g. right after one slow
    inference; starting the new chunk at ``observation_tick + estimate`` keeps the previous schedule's
    committed actions for the ticks before it. Where the previous schedule ends earlier (or there is
    none), those ticks would go to the environment's fallback although the new chunk has entries for
    them: the chunk then starts where the previous schedule ends, never before ``earliest_tick``
    (the earliest tick the environment can still execute).
    """
    end = earliest_tick if previous is None else max(previous.end, earliest_tick)
    return max(1, min(estimate, end - observation_tick))


def align_chunk(chunk: torch.Tensor, observation_tick: int, delay: int) -> Schedule:
    """Place the policy's chunk ``[B, H, A]`` for ``observation_tick`` at the tick it takes effect.

    Entry ``k`` is for tick ``observation_tick + 1 + k``; with ``delay`` d the chunk starts at
    ``observation_tick + d`` and its first ``d - 1`` entries are dropped. When the delay is longer
    than the chunk, its last entry (the furthest-looking prediction) is kept for that tick.
    """
    delay = max(1, delay)
    drop = min(delay - 1, chunk.shape[1] - 1)
    return Schedule(start=observation_tick + delay, actions=chunk[:, drop:])


def blend_weights(overlap: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """Weights ``[overlap]`` of the previous schedule over an overlap: linear from near 1 down to near 0.

    ``w_j = (n - j) / (n + 1)``: the first overlapping tick keeps almost the committed action, the
    last almost the new one, and the difference between the two schedules is spread evenly over the
    overlap (each tick moves by at most ``1 / (n + 1)`` of it).
    """
    steps = torch.arange(overlap, device=device, dtype=torch.float32)
    return (overlap - steps) / (overlap + 1)


def merge_schedules(
    previous: Schedule | None,
    new: Schedule,
    upcoming_tick: int,
    blend: bool = True,
    blend_ticks: int | None = None,
) -> Schedule:
    """The schedule to execute from ``upcoming_tick`` on: the previous one until the new one starts,
    then the new one, blended with the previous over the first ticks both cover.

    Args:
        previous: the schedule in force (None: nothing scheduled yet).
        new: the aligned new chunk.
        upcoming_tick: the earliest tick the environment can still execute (the brain passes the
            newest observation's tick + 1); earlier entries are dropped.
        blend: False switches to the new chunk abruptly (for comparison).
        blend_ticks: blend over at most this many ticks, then follow the new chunk alone (None:
            the whole overlap). A long blend keeps executing old plans long after newer ones came;
            the brain blends over its delay estimate, about one inference's worth of ticks.

    Returns:
        A contiguous schedule starting at ``max(upcoming_tick, ...)``; when the previous schedule
        ends before the new one starts, the gap is left to the environment's fallback (the merged
        schedule then starts at the new chunk; the brain aligns with :func:`covered_delay`, which
        leaves no such gap); a previous schedule that starts after the new one
        (older information about later ticks) is replaced.
    """
    start = max(new.start, upcoming_tick)
    actions = new.from_tick(start)
    if actions.shape[1] == 0:  # the whole new chunk is in the past: keep its last entry for now
        actions, start = new.actions[:, -1:], upcoming_tick
    if previous is None or not previous.start <= start <= previous.end or previous.end <= upcoming_tick:
        return Schedule(start, actions)
    overlap = min(previous.end, start + actions.shape[1]) - start
    if blend_ticks is not None:
        overlap = min(overlap, max(1, blend_ticks))
    if blend and overlap > 0:
        weights = blend_weights(overlap, actions.device)[None, :, None]
        old = previous.actions[:, start - previous.start : start - previous.start + overlap]
        # both schedules hold physics actions (the stepper's physics_action: clip or tanh), so the
        # convex blend stays in [-1, 1]; the clamp only guards against rounding
        mixed = (weights * old + (1.0 - weights) * actions[:, :overlap]).clamp(-1.0, 1.0)
        actions = torch.cat([mixed, actions[:, overlap:]], dim=1)
    kept_from = max(upcoming_tick, previous.start)
    prefix = previous.actions[:, kept_from - previous.start : start - previous.start]
    return Schedule(kept_from if prefix.shape[1] else start, torch.cat([prefix, actions], dim=1))
