"""Warehouse: a tall hall with a pillar grid and rows of shelving units separated by aisles."""

from __future__ import annotations

import numpy as np

from navi_environment.scenes.layout import LayoutBuilder, SceneLayout, SemanticClass

_SHELF_DEPTH_M = 1.0
_BOARD_M = 0.15
_UPRIGHT_M = 0.12


def _shelf_row(
    builder: LayoutBuilder, x_range: tuple[float, float], y0: float, levels: int, top: float
) -> None:
    """Uprights every ~2.7 m and ``levels`` boards from 0.15 m to ``top``."""
    x0, x1 = x_range
    bays = max(1, round((x1 - x0) / 2.7))
    for i in range(bays + 1):
        ux = x0 + (x1 - x0 - _UPRIGHT_M) * i / bays
        builder.box((ux, y0, 0.0), (ux + _UPRIGHT_M, y0 + _SHELF_DEPTH_M, top), SemanticClass.SHELF)
    for level in range(levels):
        z = 0.15 + (top - 0.15 - _BOARD_M) * level / max(levels - 1, 1)
        builder.box((x0, y0, z), (x1, y0 + _SHELF_DEPTH_M, z + _BOARD_M), SemanticClass.SHELF)


def generate_warehouse(seed: int) -> SceneLayout:
    """A 20-32 m x 16-24 m hall, 6-9 m tall; 0.5 m pillars; shelf rows 2.5-4.5 m high, aisles ~3 m."""
    rng = np.random.default_rng([3, seed])
    width, depth, height = rng.uniform(20.0, 32.0), rng.uniform(16.0, 24.0), rng.uniform(6.0, 9.0)
    builder = LayoutBuilder("warehouse", seed)
    builder.shell((0.0, 0.0, float(width), float(depth)), float(height))
    aisle = float(rng.uniform(2.8, 3.6))
    shelf_x = (3.5, float(width) - 3.5)
    rows: list[tuple[float, float]] = []
    y = 3.0
    while y + _SHELF_DEPTH_M + 3.0 <= depth:
        levels, top = int(rng.integers(3, 6)), float(rng.uniform(2.5, 4.5))
        _shelf_row(builder, shelf_x, y, levels, top)
        rows.append((y, y + _SHELF_DEPTH_M))
        y += _SHELF_DEPTH_M + aisle
    spacing = float(rng.uniform(5.5, 8.0))
    for px in np.arange(spacing, width - 1.0, spacing):
        for py in np.arange(spacing * 0.75, depth - 1.0, spacing):
            in_shelf = shelf_x[0] - 0.5 <= px <= shelf_x[1] + 0.5 and any(
                lo - 0.6 <= py <= hi + 0.6 for lo, hi in rows
            )
            if not in_shelf:
                builder.box(
                    (px - 0.25, py - 0.25, 0.0), (px + 0.25, py + 0.25, float(height)), SemanticClass.PILLAR
                )
    return builder.build()
