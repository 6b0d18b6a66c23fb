"""VisitMemory: where around it the drone has already been, by direction sector, from its poses."""

from __future__ import annotations

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from navi_actor.memory import VisitMemory, VisitMemoryConfig
from navi_actor.memory.visits import mirror_visit_features

#: every position written and counted at once; one position saturates a feature to 1 - 1/e
EAGER = VisitMemoryConfig(source="positions", write_every=1, exclusion_window=0, saturation=1.0)
ONE = 1.0 - math.exp(-1.0)


def remembered(cfg: VisitMemoryConfig, points: list[tuple[float, float, float]]) -> VisitMemory:
    """A one-drone memory that flew through ``points`` (heading 0), nothing else."""
    memory = VisitMemory(cfg, 1)
    for i, point in enumerate(points):
        memory.observe(torch.tensor([point]), torch.zeros(1), torch.tensor([i == 0]))
    return memory


def test_past_positions_count_in_the_sector_they_lie_in_around_the_heading() -> None:
    memory = remembered(EAGER, [(3.0, 0.0, 0.0), (0.0, 3.0, 0.0), (0.0, 3.5, 0.0)])
    at_origin = torch.zeros(1, 3)
    ahead = memory.features(at_origin, torch.zeros(1))[0]
    assert torch.allclose(ahead[0], torch.tensor(ONE))  # (3, 0) is straight ahead: sector 0
    assert torch.allclose(ahead[2], torch.tensor(1.0 - math.exp(-2.0)))  # +y is 90 degrees: sector 2
    assert float(ahead[[1, 3, 4, 5, 6, 7]].abs().max()) == 0.0
    assert float(ahead[8]) == 0.0  # nothing within 1.5 m: not a revisit
    turned = memory.features(at_origin, torch.tensor([math.pi / 2]))[0]  # facing +y now
    assert torch.allclose(turned[0], ahead[2]) and torch.allclose(turned[6], ahead[0])  # -90: sector 6
    beside = memory.features(torch.tensor([[3.5, 0.5, 0.0]]), torch.zeros(1))[0]
    assert float(beside[8]) > 0.0  # within 1.5 m of (3, 0): here already


def test_far_or_other_floor_or_recent_positions_do_not_count() -> None:
    far = remembered(EAGER, [(7.0, 0.0, 0.0), (3.0, 0.0, 2.0)])  # beyond 6 m; 2 m above
    assert float(far.features(torch.zeros(1, 3), torch.zeros(1)).abs().max()) == 0.0
    recent = remembered(EAGER.model_copy(update={"exclusion_window": 1}), [(3.0, 0.0, 0.0), (0.0, 3.0, 0.0)])
    features = recent.features(torch.zeros(1, 3), torch.zeros(1))[0]
    assert (
        float(features[0]) > 0.0 and float(features[2]) == 0.0
    )  # the newest position is the path just flown


def test_an_episode_start_clears_the_row_and_peek_writes_nothing() -> None:
    memory = VisitMemory(EAGER, 2)
    start = torch.tensor([True, True])
    for x in (1.0, 2.0, 3.0):
        memory.observe(torch.tensor([[x, 0.0, 0.0], [x, 0.0, 0.0]]), torch.zeros(2), start)
        start = torch.tensor([False, False])
    here = torch.zeros(2, 3)
    before = (memory.positions.clone(), memory.entry_index.clone(), memory.steps.clone())
    peeked = memory.peek(here, torch.zeros(2), torch.tensor([False, True]))
    assert float(peeked[0, 0]) > 0.0 and float(peeked[1].abs().max()) == 0.0  # a starting row reads 0
    assert torch.equal(memory.positions, before[0]) and torch.equal(memory.entry_index, before[1])
    assert torch.equal(memory.steps, before[2])
    observed = memory.observe(here, torch.zeros(2), torch.tensor([False, True]))
    torch.testing.assert_close(observed, peeked)
    assert memory.steps.tolist() == [4, 1]  # row 1 started again: only this step is remembered


def test_positions_are_written_every_nth_step_into_a_ring() -> None:
    cfg = VisitMemoryConfig(source="positions", write_every=2, capacity=3, exclusion_window=0)
    memory = remembered(cfg, [(float(x), 0.0, 0.0) for x in range(10)])
    assert int(memory.inserted[0]) == 5  # steps 0, 2, 4, 6, 8
    assert sorted(memory.positions[0, :, 0].tolist()) == [4.0, 6.0, 8.0]  # the 3 newest kept


@settings(max_examples=40, deadline=None)
@given(
    points=st.lists(st.tuples(st.floats(-5, 5), st.floats(-5, 5), st.floats(-1, 1)), min_size=1, max_size=12),
    here=st.tuples(st.floats(-4, 4), st.floats(-4, 4)),
    yaw=st.floats(-3.0, 3.0),
)
def test_the_mirrored_world_reads_the_mirrored_features(
    points: list[tuple[float, float, float]], here: tuple[float, float], yaw: float
) -> None:
    """Mirroring y (and the heading) maps sector k to sector -k, as mirror_visit_features says."""
    world = remembered(EAGER, points)
    mirrored = remembered(EAGER, [(x, -y, z) for x, y, z in points])
    # sector edges are ambiguous under mirroring: skip points that sit on one
    edges = [math.atan2(y - here[1], x - here[0]) - yaw for x, y, _ in points]
    width = 2 * math.pi / 8
    if any(abs(((e / width) % 1.0) - 0.5) < 1e-3 for e in edges):
        return
    features = world.features(torch.tensor([[here[0], here[1], 0.0]]), torch.tensor([yaw]))
    mirrored_features = mirrored.features(torch.tensor([[here[0], -here[1], 0.0]]), torch.tensor([-yaw]))
    torch.testing.assert_close(mirror_visit_features(features, 8), mirrored_features, atol=1e-5, rtol=0)
