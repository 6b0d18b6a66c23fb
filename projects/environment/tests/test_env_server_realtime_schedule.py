"""The real-time scheduler, tick by tick and without a clock: which row runs, fallback, ages, staleness."""

from __future__ import annotations

import numpy as np
import pytest

from navi_contracts import Action
from navi_environment.server.realtime_schedule import ActionScheduler

DRONES = 2


def chunk_action(
    step_id: int, start_tick: int | None, horizon: int, base: float = 0.0, rise: float = 0.1
) -> Action:
    """Row k of drone b: forward ``base + rise * k``, yaw ``-(b + 1) / 10``: easy to read back."""
    chunk = np.zeros((DRONES, horizon, 4), np.float32)
    chunk[:, :, 0] = base + rise * np.arange(horizon, dtype=np.float32)
    chunk[:, :, 3] = -(np.arange(DRONES, dtype=np.float32)[:, None] + 1) / 10
    return Action(
        env_ids=np.arange(DRONES, dtype=np.int32), actions=chunk[:, 0].copy(), policy_id="test",
        step_id=step_id, timestamp=0.0, start_tick=start_tick, chunk=chunk,
    )  # fmt: skip


def plain_action(
    step_id: int, value: float, env_ids: list[int] | None = None, start_tick: int | None = None
) -> Action:
    ids = list(range(DRONES)) if env_ids is None else env_ids
    return Action(
        env_ids=np.array(ids, np.int32), actions=np.full((len(ids), 4), value, np.float32), policy_id="test",
        step_id=step_id, timestamp=0.0, start_tick=start_tick,
    )  # fmt: skip


def forward(executed: np.ndarray) -> list[float]:
    return [round(float(value), 4) for value in executed[:, 0]]


def test_a_chunk_starts_exactly_at_its_start_tick_and_covers_h_ticks() -> None:
    scheduler = ActionScheduler(DRONES)
    scheduler.receive(chunk_action(step_id=5, start_tick=8, horizon=3, base=0.2), next_tick=6)
    assert forward(scheduler.tick(6)) == [0.0, 0.0]  # before the chunk: fallback (hover)
    assert forward(scheduler.tick(7)) == [0.0, 0.0]
    assert forward(scheduler.tick(8)) == [0.2, 0.2]  # chunk[:, 0] exactly at start_tick
    assert forward(scheduler.tick(9)) == [0.3, 0.3]
    executed = scheduler.tick(10)
    assert forward(executed) == [0.4, 0.4]
    assert executed[:, 3].tolist() == pytest.approx([-0.1, -0.2])  # each drone its own row
    assert forward(scheduler.tick(11)) == [0.4, 0.4]  # past the chunk: hold the last action
    stats = scheduler.stats
    assert stats.ticks.tolist() == [6, 6]
    assert stats.fallback_ticks.tolist() == [3, 3]  # ticks 6, 7 and 11
    # ages: ticks 6 and 7 had no source; 8, 9, 10, 11 ran actions answering step 5
    assert stats.age_count.tolist() == [4, 4]
    assert stats.age_sum.tolist() == [3 + 4 + 5 + 6] * 2
    assert stats.age_max.tolist() == [6, 6]
    snapshot = stats.snapshot()
    assert snapshot["mean_action_age_ticks"] == 4.5 and snapshot["max_action_age_ticks"] == 6
    assert snapshot["fallback_ticks"] == 6 and snapshot["fallback_fraction"] == 0.5


def test_a_late_chunk_skips_the_rows_of_past_ticks() -> None:
    scheduler = ActionScheduler(DRONES)
    scheduler.receive(chunk_action(step_id=3, start_tick=4, horizon=4, base=0.0), next_tick=6)
    assert forward(scheduler.tick(6)) == [0.2, 0.2]  # row 6 - 4 = 2
    assert forward(scheduler.tick(7)) == [0.3, 0.3]
    assert scheduler.stats.fallback_ticks.tolist() == [0, 0]
    assert scheduler.stats.age_max.tolist() == [4, 4]


def test_a_chunk_without_start_tick_starts_after_its_observation() -> None:
    scheduler = ActionScheduler(DRONES)
    scheduler.receive(chunk_action(step_id=9, start_tick=None, horizon=2, base=0.5), next_tick=10)
    assert forward(scheduler.tick(10)) == [0.5, 0.5]
    assert forward(scheduler.tick(11)) == [0.6, 0.6]


def test_a_plain_action_runs_from_the_next_tick_even_when_late_then_the_fallback_holds_it() -> None:
    scheduler = ActionScheduler(DRONES)
    scheduler.receive(plain_action(step_id=2, value=0.7), next_tick=5)  # asked for tick 3: runs at 5
    assert forward(scheduler.tick(5)) == [0.7, 0.7]
    assert forward(scheduler.tick(6)) == [0.7, 0.7]
    assert scheduler.stats.fallback_ticks.tolist() == [1, 1]  # tick 6 had no fresh action
    assert scheduler.stats.age_sum.tolist() == [3 + 4] * 2


def test_per_drone_figures_keep_drones_apart() -> None:
    scheduler = ActionScheduler(DRONES)
    scheduler.receive(plain_action(step_id=2, value=0.5, env_ids=[1]), next_tick=3)
    scheduler.tick(3)
    scheduler.tick(4)
    figures = scheduler.stats.per_drone()
    assert figures["ticks"] == [2.0, 2.0]
    assert figures["fallback_ticks"] == [2.0, 1.0]  # drone 0 never got an action
    assert np.isnan(figures["mean_action_age_ticks"][0]) and figures["mean_action_age_ticks"][1] == 1.5
    assert np.isnan(figures["max_action_age_ticks"][0]) and figures["max_action_age_ticks"][1] == 2.0


def test_slow_fallback_halves_the_last_action_each_tick_yaw_included() -> None:
    scheduler = ActionScheduler(DRONES, fallback="slow")
    scheduler.receive(plain_action(step_id=0, value=0.8), next_tick=1)
    assert scheduler.tick(1)[0].tolist() == pytest.approx([0.8] * 4)
    assert scheduler.tick(2)[0].tolist() == pytest.approx([0.4] * 4)
    assert scheduler.tick(3)[1].tolist() == pytest.approx([0.2] * 4)
    assert scheduler.stats.fallback_ticks.tolist() == [2, 2]
    assert scheduler.stats.age_max.tolist() == [3, 3]  # the slowed action still comes from step 0


def test_stale_schedules_are_ignored_per_drone() -> None:
    scheduler = ActionScheduler(DRONES)
    assert scheduler.receive(chunk_action(step_id=10, start_tick=14, horizon=4, base=0.5), next_tick=12) == 2
    # starts earlier than the held schedule: stale, even though it answers a newer observation
    assert scheduler.receive(chunk_action(step_id=11, start_tick=13, horizon=4, base=-0.5), next_tick=12) == 0
    # the same schedule re-sent (same start, same step): stale too
    assert scheduler.receive(chunk_action(step_id=10, start_tick=14, horizon=4, base=-0.5), next_tick=12) == 0
    assert scheduler.stats.stale == 4 and scheduler.stats.accepted == 1
    assert forward(scheduler.tick(14)) == [0.5, 0.5]
    # a newer plan for one drone only: that drone switches, the other keeps its chunk
    assert (
        scheduler.receive(plain_action(step_id=12, value=-0.9, env_ids=[1], start_tick=15), next_tick=15) == 1
    )
    assert forward(scheduler.tick(15)) == [0.6, -0.9]
    # same start, newer observation: replaces
    assert scheduler.receive(plain_action(step_id=13, value=0.1, start_tick=16), next_tick=16) == 2
    assert forward(scheduler.tick(16)) == [0.1, 0.1]


def test_a_plain_resend_does_not_count_as_a_fresh_action() -> None:
    """The async brain re-sends its last action every 500 ms: a re-send is not a fresh action."""
    scheduler = ActionScheduler(DRONES)
    scheduler.receive(plain_action(step_id=4, value=0.3), next_tick=5)
    scheduler.tick(5)
    assert scheduler.receive(plain_action(step_id=4, value=0.3), next_tick=6) == 0
    scheduler.tick(6)
    assert scheduler.stats.fallback_ticks.tolist() == [1, 1]


@pytest.mark.parametrize("env_ids", [[0, 2], [1, 1], [-1, 0]])
def test_unknown_or_repeated_env_ids_are_rejected_whole(env_ids: list[int]) -> None:
    scheduler = ActionScheduler(DRONES)
    with pytest.raises(ValueError, match=r"env_ids must be distinct ids in 0\.\.1"):
        scheduler.receive(plain_action(step_id=1, value=0.5, env_ids=env_ids), next_tick=2)
    assert scheduler.stats.rejected == 1
    assert forward(scheduler.tick(2)) == [0.0, 0.0]


def test_the_longest_chunk_is_fully_used() -> None:
    scheduler = ActionScheduler(DRONES)
    scheduler.receive(chunk_action(step_id=0, start_tick=1, horizon=64, base=-1.0, rise=0.03), next_tick=1)
    rows = [scheduler.tick(tick)[0, 0] for tick in range(1, 66)]
    assert rows[63] == pytest.approx(-1.0 + 63 * 0.03)
    assert rows[64] == rows[63]  # tick 65: fallback
    assert scheduler.stats.fallback_ticks.tolist() == [1, 1]


def test_no_action_ever_means_hover_and_no_age() -> None:
    scheduler = ActionScheduler(DRONES, fallback="slow")
    for tick in range(1, 4):
        assert not scheduler.tick(tick).any()
    snapshot = scheduler.stats.snapshot()
    assert snapshot["fallback_ticks"] == 6 and snapshot["ticks_executed"] == 3
    assert np.isnan(snapshot["mean_action_age_ticks"]) and np.isnan(snapshot["max_action_age_ticks"])


def test_unknown_fallback_is_refused() -> None:
    with pytest.raises(ValueError, match="fallback must be 'hold' or 'slow'"):
        ActionScheduler(DRONES, fallback="brake")  # type: ignore[arg-type]
