"""Grid planning on tiny hand-drawn maps: safe cells, frontiers (holes excluded), Dijkstra paths."""

from __future__ import annotations

import math

import numpy as np

from navi_environment.planning import grid_search
from navi_environment.planning.occupancy import FREE, OCCUPIED, UNKNOWN

LEGEND = {".": FREE, "#": OCCUPIED, " ": UNKNOWN}


def draw(*rows: str) -> np.ndarray:
    """A grid from text rows (row 0 first): '.' free, '#' occupied, ' ' unknown."""
    return np.array([[LEGEND[ch] for ch in row] for row in rows], dtype=np.int8)


WALL_WITH_DOOR = draw(
    ".......",
    "...#...",
    "...#...",
    ".......",
    "...#...",
    "...#...",
    "...#...",
)


def test_dijkstra_goes_through_the_door_with_exact_costs() -> None:
    safe = WALL_WITH_DOOR == FREE
    cost = np.ones(safe.shape)
    reach, predecessor = grid_search.shortest_paths(safe, cost, (5, 1))
    path = grid_search.path_to(predecessor, safe.shape[1], (5, 5))
    assert path[0].tolist() == [5, 1] and path[-1].tolist() == [5, 5]
    assert [3, 3] in path.tolist()  # through the door (row 3), not through the wall
    steps = np.diff(path, axis=0)
    assert math.isclose(reach[5, 5], float(np.hypot(steps[:, 0], steps[:, 1]).sum()))
    assert math.isclose(reach[5, 5], 4.0 + 2.0 * math.sqrt(2.0))  # no diagonal past the door posts
    assert math.isclose(reach[5, 2], 1.0) and math.isinf(reach[1, 3])  # a wall cell is never entered


def test_no_diagonal_past_a_wall_corner_and_unreachable_is_inf() -> None:
    grid = draw(
        "..#",
        ".#.",
        "#..",
    )
    safe = grid == FREE
    reach, _ = grid_search.shortest_paths(safe, np.ones(safe.shape), (0, 0))
    assert math.isinf(reach[1, 2]) and math.isinf(reach[2, 2])  # only reachable by cutting corners
    assert math.isclose(reach[1, 0], 1.0)


def test_cost_near_obstacles_bends_the_path_to_the_middle() -> None:
    grid = draw(*(["#########"] + ["........."] * 5 + ["#########"]))
    distance = grid_search.obstacle_distance(grid, 0.5)
    assert math.isclose(distance[3, 4], 1.5) and math.isclose(distance[1, 4], 0.5)
    cost = grid_search.step_costs(distance, prefer_m=1.5, weight=2.0)
    assert cost[3, 4] == 1.0 and cost[1, 4] > 2.0
    safe = grid_search.safe_cells(grid, distance, inflate_m=0.5)
    _, predecessor = grid_search.shortest_paths(safe, cost, (1, 0))
    path = grid_search.path_to(predecessor, grid.shape[1], (1, 8))
    assert path[:, 0].max() >= 2  # leaves the wall side rather than skimming it
    assert not safe[0].any() and safe[1].all()


def test_frontiers_border_large_unknown_regions_not_holes() -> None:
    grid = draw(
        "..........   ",
        "..........   ",
        "...##.....   ",
        "...# .....   ",
        "...##.....   ",
        "..........   ",
    )
    safe = grid == FREE
    every = grid_search.frontier_cells(grid, safe)
    assert every[3, 5] and every[0, 9]  # beside the hole in the pillar, and the open side
    frontier = grid_search.frontier_cells(grid, safe, min_unknown_cells=4)
    assert not frontier[3, 5] and frontier[:, 9].all() and frontier.sum() == 6
    gain = grid_search.unknown_gain(grid, 1)
    assert gain[2, 9] == 3.0 and gain[2, 2] == 0.0


def test_known_box_and_argmin_cell() -> None:
    grid = np.zeros((8, 8), dtype=np.int8)
    grid[2:4, 3:6] = FREE
    rows, cols = grid_search.known_box(grid, margin=1)
    assert (rows.start, rows.stop, cols.start, cols.stop) == (1, 5, 2, 7)
    assert grid_search.argmin_cell(np.full((2, 2), np.inf)) is None
    assert grid_search.argmin_cell(np.array([[3.0, 1.0], [np.inf, 2.0]])) == (0, 1)
