"""Real-time chunking arithmetic: delay estimate, alignment after a measured delay, continuous blending."""

from __future__ import annotations

import torch

from navi_actor.service.chunk_schedule import (
    DelayEstimator,
    Schedule,
    align_chunk,
    blend_weights,
    covered_delay,
    measured_delay,
    merge_schedules,
    upcoming_tick,
)


def ramp(start: float, step: float, length: int) -> torch.Tensor:
    """``[1, length, 1]`` actions start, start + step, ..."""
    return (start + step * torch.arange(length, dtype=torch.float32))[None, :, None]


def test_delay_estimate_is_the_running_maximum_of_the_window() -> None:
    estimator = DelayEstimator(window=3)
    assert estimator.ticks == 1
    for delay, expected in [(2, 2), (1, 2), (4, 4), (1, 4), (1, 4), (1, 1), (0, 1)]:
        estimator.record(delay)
        assert estimator.ticks == expected
    assert measured_delay(observation_tick=100, upcoming_tick=101) == 1  # answered within the period
    assert measured_delay(observation_tick=100, upcoming_tick=103) == 3
    assert upcoming_tick(100, arrival=10.0, now=10.01, period=0.05) == 101
    assert upcoming_tick(100, arrival=10.0, now=10.12, period=0.05) == 103  # two periods later


def test_chunk_starts_at_the_tick_it_takes_effect_after_the_measured_delay() -> None:
    chunk = torch.arange(8, dtype=torch.float32)[None, :, None]  # entry k is for tick 101 + k
    estimator = DelayEstimator()
    estimator.record(measured_delay(observation_tick=100, upcoming_tick=103))
    schedule = align_chunk(chunk, observation_tick=100, delay=estimator.ticks)
    assert schedule.start == 103 and schedule.actions[0, :, 0].tolist() == [2, 3, 4, 5, 6, 7]
    late = align_chunk(chunk, observation_tick=100, delay=20)  # longer than the chunk: its last entry
    assert late.start == 120 and late.actions[0, :, 0].tolist() == [7]
    assert align_chunk(chunk[:, :1], observation_tick=5, delay=2).start == 7  # H = 1


def test_blend_weights_fall_from_near_one_to_near_zero() -> None:
    weights = blend_weights(4)
    torch.testing.assert_close(weights, torch.tensor([0.8, 0.6, 0.4, 0.2]))
    assert blend_weights(0).shape == (0,)


def executed(schedule: Schedule, first: int, last: int) -> torch.Tensor:
    return schedule.actions[0, first - schedule.start : last - schedule.start, 0]


def test_blending_is_continuous_at_the_chunk_boundary() -> None:
    previous = Schedule(start=100, actions=ramp(-0.5, 0.05, 10))  # ticks 100..109, rising slowly
    new = Schedule(start=104, actions=ramp(0.6, -0.02, 8))  # ticks 104..111: another plan, far away
    merged = merge_schedules(previous, new, upcoming_tick=102)
    assert merged.start == 102 and merged.end == 112
    path = torch.cat([previous.actions[0, :2, 0], executed(merged, 102, 112)])  # ticks 100..111
    steps = path.diff().abs()
    own_step = 0.05  # the larger of the two chunks' own steps
    overlap = previous.end - new.start  # 6 ticks blended
    gap = float((previous.actions[0, 4:, 0] - new.actions[0, :6, 0]).abs().max())
    assert float(steps.max()) <= own_step + gap / (overlap + 1) + 1e-6
    hard = merge_schedules(previous, new, upcoming_tick=102, blend=False)
    hard_path = torch.cat([previous.actions[0, :2, 0], executed(hard, 102, 112)])
    assert float(hard_path.diff().abs().max()) > 3 * float(steps.max())  # without blending: a jump
    # ticks before the new start keep the committed actions; after the overlap the new chunk rules
    assert torch.equal(executed(merged, 102, 104), previous.actions[0, 2:4, 0])
    assert torch.equal(executed(merged, 110, 112), new.actions[0, 6:8, 0])


def test_a_blend_window_hands_over_to_the_new_chunk_early_and_stays_continuous() -> None:
    previous = Schedule(start=100, actions=ramp(-0.5, 0.05, 10))  # ticks 100..109
    new = Schedule(start=102, actions=ramp(0.6, -0.02, 8))  # ticks 102..109 overlap: 8 ticks
    merged = merge_schedules(previous, new, upcoming_tick=101, blend_ticks=3)
    assert merged.start == 101 and merged.end == 110
    weights = torch.tensor([0.75, 0.5, 0.25])
    expected = weights * previous.actions[0, 2:5, 0] + (1 - weights) * new.actions[0, :3, 0]
    torch.testing.assert_close(executed(merged, 102, 105), expected)
    assert torch.equal(executed(merged, 105, 110), new.actions[0, 3:, 0])  # the new plan alone after
    path = torch.cat([previous.actions[0, :1, 0], executed(merged, 101, 110)])
    gap = float((previous.actions[0, 2:, 0] - new.actions[0, :8, 0]).abs().max())
    assert float(path.diff().abs().max()) <= 0.05 + gap / (3 + 1) + 1e-6


def test_identical_plans_blend_to_themselves_and_results_stay_in_range() -> None:
    plan = ramp(0.9, 0.05, 6).clamp(-1, 1)
    merged = merge_schedules(Schedule(10, plan), Schedule(12, plan[:, 2:]), upcoming_tick=11)
    torch.testing.assert_close(merged.actions, plan[:, 1:])
    wild = merge_schedules(Schedule(0, torch.ones(2, 4, 4)), Schedule(1, torch.full((2, 4, 4), -1.0)), 1)
    assert wild.actions.abs().max() <= 1.0


def test_past_entries_are_dropped_and_a_gap_is_left_to_the_environment() -> None:
    previous = Schedule(start=100, actions=ramp(0.0, 0.1, 3))  # ends at 103
    new = Schedule(start=105, actions=ramp(0.5, 0.0, 4))
    merged = merge_schedules(previous, new, upcoming_tick=101)
    assert merged.start == 105 and merged.end == 109  # 103, 104: the environment's fallback
    stale = Schedule(start=90, actions=ramp(0.2, 0.1, 4))  # ticks 90..93, all before tick 101
    held = merge_schedules(None, stale, upcoming_tick=101)
    assert held.start == 101 and torch.equal(held.actions, stale.actions[:, -1:])
    nothing_before = merge_schedules(None, new, upcoming_tick=101)
    assert nothing_before.start == 105 and torch.equal(nothing_before.actions, new.actions)


def test_an_overestimated_delay_never_leaves_ticks_without_a_scheduled_action() -> None:
    """After one slow inference the running maximum (5) exceeds this inference's delay: the chunk for
    tick 100 starts where the previous schedule ends (103), not at 105, so ticks 103 and 104 fly the
    chunk's own entries instead of the fallback; with no previous schedule it starts at the earliest
    tick the environment can still execute."""
    chunk = torch.arange(8, dtype=torch.float32)[None, :, None]  # entry k is for tick 101 + k
    previous = Schedule(start=101, actions=ramp(-1.0, 0.5, 2))  # ticks 101, 102
    delay = covered_delay(5, observation_tick=100, earliest_tick=101, previous=previous)
    assert delay == 3
    merged = merge_schedules(previous, align_chunk(chunk, 100, delay), upcoming_tick=101, blend_ticks=5)
    assert merged.start == 101 and merged.end == 109  # every tick from 101 to 108: no gap
    assert merged.actions[0, :, 0].tolist() == [-1.0, -0.5, 2, 3, 4, 5, 6, 7]
    assert covered_delay(5, observation_tick=100, earliest_tick=102, previous=None) == 2
    ended = Schedule(90, ramp(0, 0, 3))  # ran out before the earliest tick
    assert covered_delay(5, observation_tick=100, earliest_tick=102, previous=ended) == 2
    # a schedule in force that covers the estimated ticks keeps them: the estimate rules
    covering = Schedule(101, ramp(0, 0, 8))
    assert covered_delay(3, observation_tick=100, earliest_tick=101, previous=covering) == 3
    assert covered_delay(1, observation_tick=100, earliest_tick=101, previous=None) == 1
