"""Shortest 8-connected paths over a batch of grids: the torch relaxation and its CPU kernel.

Why two: the frontier memory's read (:mod:`navi_actor.memory.frontiers`) spends most of its time
finding, for every cell of each drone's window, the shortest path to the nearest frontier. The torch
relaxation does it in as many rounds of 17 small tensor operations as the longest path has cells
(40-90 in a 10 m window), which on a CPU is dominated by the cost of each operation; on a GPU it is
the right shape. :func:`shortest_path_lengths` runs the same search as Dijkstra's algorithm in a
numba kernel on CPU tensors and as the relaxation on others. Both compute, in float32, the least
sum of step costs along any path from a start (each addition in path order from the start), so they
agree to the bit; ``test_grid_paths.py`` binds them.
"""

from __future__ import annotations

import heapq
import math

import numpy as np
import torch
import torch.nn.functional as nnf
from numba import njit

GRID_STEPS = tuple((dy, dx, math.hypot(dy, dx)) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if dy or dx)
_DY = np.array([step[0] for step in GRID_STEPS], dtype=np.int64)
_DX = np.array([step[1] for step in GRID_STEPS], dtype=np.int64)
_COST = np.array([step[2] for step in GRID_STEPS], dtype=np.float32)


def grid_path_lengths(start: torch.Tensor, passable: torch.Tensor, max_steps: int) -> torch.Tensor:
    """``[B, H, W]`` shortest 8-connected path length, in cells (1 per side step, sqrt 2 per diagonal),
    over ``passable`` cells from the cells where ``start`` is finite (starting with that length),
    relaxing at most ``max_steps`` times (paths of more cells stay inf); inf where no path reaches.
    Stops early once nothing changes."""
    height, width = passable.shape[-2:]
    length = torch.where(passable, start, math.inf)
    for step in range(max_steps):
        padded = nnf.pad(length, (1, 1, 1, 1), value=math.inf)
        best = length
        for dy, dx, cost in GRID_STEPS:
            best = torch.minimum(best, padded[:, 1 + dy : 1 + dy + height, 1 + dx : 1 + dx + width] + cost)
        best = torch.where(passable, best, math.inf)
        if step % 8 == 7 and torch.equal(best, length):
            return best
        length = best
    return length


def shortest_path_lengths(start: torch.Tensor, passable: torch.Tensor) -> torch.Tensor:
    """:func:`grid_path_lengths` run until nothing changes (every path, however many cells): by
    Dijkstra's algorithm in a numba kernel for CPU tensors, by the relaxation elsewhere."""
    if start.device.type != "cpu":
        return grid_path_lengths(start, passable, passable.shape[-2] * passable.shape[-1])
    start_np = start.detach().to(torch.float32).contiguous().numpy()
    passable_np = passable.contiguous().numpy()
    out = np.empty_like(start_np)
    _dijkstra(start_np, passable_np, out)
    return torch.from_numpy(out)


@njit(cache=True, nogil=True)
def _dijkstra(start: np.ndarray, passable: np.ndarray, out: np.ndarray) -> None:  # bound by test_grid_paths
    """``out[b]`` = shortest path lengths over ``passable[b]`` from the finite cells of ``start[b]``."""
    batch, height, width = start.shape
    inf = np.float32(np.inf)
    for b in range(batch):
        dist = out[b]
        heap = [(np.float32(0.0), np.int64(0))]  # typed by its first element, popped at once
        heapq.heappop(heap)
        for r in range(height):
            for c in range(width):
                value = start[b, r, c] if passable[b, r, c] else inf
                dist[r, c] = value
                if value < inf:
                    heapq.heappush(heap, (value, np.int64(r * width + c)))
        while heap:
            length, cell = heapq.heappop(heap)
            r, c = cell // width, cell % width
            if length > dist[r, c]:
                continue  # a stale entry: the cell was reached shorter since
            for k in range(_DY.shape[0]):  # numba reads the global arrays as constants
                nr, nc = r + _DY[k], c + _DX[k]
                if nr < 0 or nr >= height or nc < 0 or nc >= width or not passable[b, nr, nc]:
                    continue
                candidate = length + _COST[k]
                if candidate < dist[nr, nc]:
                    dist[nr, nc] = candidate
                    heapq.heappush(heap, (candidate, np.int64(nr * width + nc)))
