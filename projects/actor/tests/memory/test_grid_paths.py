"""The CPU kernel of the shortest grid paths (Dijkstra, numba) against the torch relaxation it stands
in for: the same lengths to the bit on random maps with walls, several starts and start lengths."""

from __future__ import annotations

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from navi_actor.memory.grid_paths import grid_path_lengths, shortest_path_lengths


def random_maps(seed: int, size: tuple[int, int, int], wall: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``(start, passable)``: walls at random, a few starts (0 or a fraction of a cell), the rest inf."""
    generator = torch.Generator().manual_seed(seed)
    passable = torch.rand(size, generator=generator) >= wall
    start = torch.full(size, math.inf)
    picks = torch.rand(size, generator=generator) < 0.02
    start[picks] = torch.rand(int(picks.sum()), generator=generator) * 1.5
    start[:, 0, 0] = 0.0  # at least one start per map (it may be a wall: then it does not count)
    return start, passable


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    height=st.integers(1, 40),
    width=st.integers(1, 40),
    wall_share=st.sampled_from([0.0, 0.2, 0.4, 0.6]),
)
def test_the_kernel_finds_the_relaxations_lengths_to_the_bit(
    seed: int, height: int, width: int, wall_share: float
) -> None:
    start, passable = random_maps(seed, (3, height, width), wall_share)
    expected = grid_path_lengths(start, passable, height * width)  # every path: no hop limit
    found = shortest_path_lengths(start, passable)
    assert found.dtype == torch.float32 and found.shape == expected.shape
    assert torch.equal(found, expected)


def test_a_serpentine_hundreds_of_cells_long_and_an_unreachable_pocket() -> None:
    """Ten corridors joined at alternate ends (paths of hundreds of cells) and a cut-off pocket: the
    kernel follows the whole serpentine and leaves the pocket inf, as the relaxation run to the end."""
    height, width = 19, 30
    passable = torch.zeros(1, height, width, dtype=torch.bool)
    passable[0, ::2, :] = True  # corridors on even rows
    for row in range(1, height, 2):  # joined at alternate ends
        passable[0, row, width - 1 if row % 4 == 1 else 0] = True
    passable[0, 18, 10] = False  # cut the last corridor (entered at column 29): columns 0-9 a pocket
    start = torch.full((1, height, width), math.inf)
    start[0, 0, 0] = 0.0
    expected = grid_path_lengths(start, passable, height * width)
    found = shortest_path_lengths(start, passable)
    assert torch.equal(found, expected)
    assert float(found[0, 16, 0]) > 200.0 and math.isinf(float(found[0, 18, 5]))
