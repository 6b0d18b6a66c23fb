"""Corridor maze: a perfect maze carved on a grid of 2-3 m cells (one path between any two cells)."""

from __future__ import annotations

import numpy as np

from navi_environment.scenes.layout import LayoutBuilder, SceneLayout


def _carve(rng: np.random.Generator, cols: int, rows: int) -> set[tuple[int, int, int, int]]:
    """Depth-first maze carving; returns the set of opened passages between neighbouring cells."""
    visited = np.zeros((cols, rows), dtype=bool)
    stack = [(int(rng.integers(cols)), int(rng.integers(rows)))]
    visited[stack[0]] = True
    passages: set[tuple[int, int, int, int]] = set()
    while stack:
        cx, cy = stack[-1]
        options = [
            (cx + dx, cy + dy)
            for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1))
            if 0 <= cx + dx < cols and 0 <= cy + dy < rows and not visited[cx + dx, cy + dy]
        ]
        if not options:
            stack.pop()
            continue
        nx, ny = options[int(rng.integers(len(options)))]
        visited[nx, ny] = True
        passages.add((min(cx, nx), min(cy, ny), max(cx, nx), max(cy, ny)))
        stack.append((nx, ny))
    return passages


def generate_maze(seed: int) -> SceneLayout:
    """A 5-8 x 5-8 cell maze of 2-3 m corridors, ceiling 2.5-3.2 m."""
    rng = np.random.default_rng([2, seed])
    cols, rows = int(rng.integers(5, 9)), int(rng.integers(5, 9))
    cell, height = float(rng.uniform(2.0, 3.0)), float(rng.uniform(2.5, 3.2))
    passages = _carve(rng, cols, rows)
    builder = LayoutBuilder("maze", seed)
    builder.shell((0.0, 0.0, cols * cell, rows * cell), height)
    for x in range(cols):
        for y in range(rows):
            if x + 1 < cols and (x, y, x + 1, y) not in passages:
                builder.wall(1, (x + 1) * cell, (y * cell, (y + 1) * cell), (0.0, height))
            if y + 1 < rows and (x, y, x, y + 1) not in passages:
                builder.wall(0, (y + 1) * cell, (x * cell, (x + 1) * cell), (0.0, height))
    return builder.build()
