"""Grid planning on one drone's occupancy map: safe cells, frontiers, Dijkstra, paths.

Everything works on a numpy ``[H, W]`` int8 grid of :mod:`.occupancy` states (row = y, column = x)
and returns cells as ``(row, column)``. Dijkstra runs on an 8-connected graph of the safe cells
(``scipy.sparse.csgraph``), so one search from the drone gives the path cost to every frontier and
the path to the chosen one. Diagonal moves need both orthogonal neighbours safe (no cutting past a
wall corner).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import ndimage
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from navi_environment.planning.occupancy import FREE, OCCUPIED, UNKNOWN

_MOVES = ((0, 1), (1, 0), (0, -1), (-1, 0), (1, 1), (1, -1), (-1, 1), (-1, -1))
_FOUR = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=bool)


def obstacle_distance(grid: np.ndarray, cell_m: float) -> np.ndarray:
    """[H, W] metres from each cell centre to the nearest OCCUPIED cell centre (inf if none)."""
    occupied = grid == OCCUPIED
    if not occupied.any():
        return np.full(grid.shape, np.inf)
    return np.asarray(ndimage.distance_transform_edt(~occupied)) * cell_m


def safe_cells(grid: np.ndarray, distance_m: np.ndarray, inflate_m: float) -> np.ndarray:
    """FREE cells whose centre is at least ``inflate_m`` from every occupied cell centre."""
    return (grid == FREE) & (distance_m >= inflate_m)


def frontier_cells(grid: np.ndarray, safe: np.ndarray, min_unknown_cells: int = 1) -> np.ndarray:
    """Safe cells with a 4-neighbour in an UNKNOWN region of at least ``min_unknown_cells`` cells.

    Small enclosed unknown regions (the inside of a pillar, a cell between sparse hits) are holes
    no flight can reveal, not frontiers. Cells beyond the grid edge are not unknown.
    """
    unknown = grid == UNKNOWN
    if min_unknown_cells > 1:
        labels, _ = ndimage.label(unknown, structure=ndimage.generate_binary_structure(2, 1))
        sizes = np.bincount(labels.ravel())
        sizes[0] = 0
        unknown = sizes[labels] >= min_unknown_cells
    near_unknown = ndimage.binary_dilation(unknown, structure=_FOUR, border_value=0)
    return safe & near_unknown


def unknown_gain(grid: np.ndarray, radius_cells: int) -> np.ndarray:
    """[H, W] number of UNKNOWN cells in the (2r+1)^2 square around each cell: what reaching it reveals."""
    size = 2 * radius_cells + 1
    share = ndimage.uniform_filter((grid == UNKNOWN).astype(np.float32), size=size, mode="constant")
    return share * size * size


def step_costs(distance_m: np.ndarray, prefer_m: float, weight: float) -> np.ndarray:
    """[H, W] cost multiplier >= 1 of entering a cell: up to ``1 + weight`` right next to obstacles,
    1 from ``prefer_m`` away, so paths keep to the middle of corridors and doorways."""
    closeness = np.clip((prefer_m - distance_m) / prefer_m, 0.0, 1.0)
    return 1.0 + weight * closeness


def grid_graph(safe: np.ndarray, cost: np.ndarray) -> csr_matrix:
    """Directed 8-connected graph over the safe cells of ``safe`` [H, W]; node = row * W + column.

    Edge weight: step length in cells times the mean entry cost of its two cells.
    """
    H, W = safe.shape
    ids = np.arange(H * W).reshape(H, W)
    sources, targets, weights = [], [], []
    for dr, dc in _MOVES:
        src_r = slice(max(0, -dr), H - max(0, dr))
        src_c = slice(max(0, -dc), W - max(0, dc))
        dst_r = slice(max(0, dr), H - max(0, -dr))
        dst_c = slice(max(0, dc), W - max(0, -dc))
        ok = safe[src_r, src_c] & safe[dst_r, dst_c]
        if dr and dc:  # a diagonal needs both orthogonal cells safe
            ok &= safe[dst_r, src_c] & safe[src_r, dst_c]
        length = math.hypot(dr, dc)
        sources.append(ids[src_r, src_c][ok])
        targets.append(ids[dst_r, dst_c][ok])
        weights.append(length * 0.5 * (cost[src_r, src_c][ok] + cost[dst_r, dst_c][ok]))
    return csr_matrix(
        (np.concatenate(weights), (np.concatenate(sources), np.concatenate(targets))), shape=(H * W, H * W)
    )


def shortest_paths(
    safe: np.ndarray, cost: np.ndarray, start: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """Dijkstra from ``start`` over the safe cells.

    Returns:
        ``(cost [H, W] (inf where unreachable), predecessor [H*W] node ids, -9999 where none)``.
    """
    H, W = safe.shape
    reach, pred = dijkstra(grid_graph(safe, cost), directed=True, indices=start[0] * W + start[1],
                           return_predecessors=True)  # fmt: skip
    return np.asarray(reach).reshape(H, W), np.asarray(pred)


def path_to(predecessor: np.ndarray, width: int, target: tuple[int, int]) -> np.ndarray:
    """[K, 2] (row, column) cells from the search start to a *reachable* ``target`` (check its cost)."""
    node = target[0] * width + target[1]
    nodes = [node]
    while predecessor[node] >= 0:
        node = int(predecessor[node])
        nodes.append(node)
    cells = np.array(nodes[::-1], dtype=np.int64)
    return np.stack([cells // width, cells % width], axis=1)


def known_box(grid: np.ndarray, margin: int = 1) -> tuple[slice, slice]:
    """The bounding box of the known (not UNKNOWN) cells, grown by ``margin`` cells."""
    rows = np.flatnonzero((grid != UNKNOWN).any(axis=1))
    cols = np.flatnonzero((grid != UNKNOWN).any(axis=0))
    if rows.size == 0:
        return slice(0, 0), slice(0, 0)
    H, W = grid.shape
    return (
        slice(max(0, rows[0] - margin), min(H, rows[-1] + margin + 1)),
        slice(max(0, cols[0] - margin), min(W, cols[-1] + margin + 1)),
    )


def argmin_cell(score: np.ndarray) -> tuple[int, int] | None:
    """(row, column) of the smallest finite score, or None when none is finite."""
    if not np.isfinite(score).any():
        return None
    r, c = np.unravel_index(int(np.argmin(score)), score.shape)
    return int(r), int(c)


def line_of_sight(
    passable: np.ndarray, corner: np.ndarray, cell_m: float, start: np.ndarray, ends: np.ndarray
) -> np.ndarray:
    """[K] bool: the straight segments from ``start`` [2] to each of ``ends`` [K, 2] (world xy) cross
    only ``passable`` cells of the grid whose (0, 0) cell has its corner at ``corner`` [2].

    Sampled every half cell, so a segment cannot skip a cell corner to corner by more than that.
    """
    if len(ends) == 0:
        return np.zeros(0, dtype=bool)
    longest = float(np.linalg.norm(ends - start, axis=1).max())
    fractions = np.linspace(0.0, 1.0, max(2, math.ceil(2.0 * longest / cell_m) + 1))
    points = start + fractions[None, :, None] * (ends - start)[:, None, :]  # [K, S, 2]
    cells = np.floor((points - corner) / cell_m).astype(np.int64)  # (column, row)
    H, W = passable.shape
    inside = (cells[..., 0] >= 0) & (cells[..., 0] < W) & (cells[..., 1] >= 0) & (cells[..., 1] < H)
    rows, cols = np.clip(cells[..., 1], 0, H - 1), np.clip(cells[..., 0], 0, W - 1)
    return (inside & passable[rows, cols]).all(axis=1)
