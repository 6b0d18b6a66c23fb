"""Multi-storey building: 2-3 floors joined by a stairwell and an open shaft through the slabs."""

from __future__ import annotations

import math

import numpy as np

from navi_environment.scenes.layout import (
    DOOR_POST_M,
    DOOR_WIDTH_M,
    SLAB_THICKNESS_M,
    LayoutBuilder,
    SceneLayout,
    SemanticClass,
)

_STAIR_WIDTH_M = 1.3
_STAIR_RUN_M = 4.4


def _stairs(builder: LayoutBuilder, x0: float, y0: float, z0: float, rise: float) -> None:
    """A straight flight of solid steps climbing +y from (x0, y0, z0) by ``rise`` metres."""
    steps = math.ceil(rise / 0.2)
    tread = _STAIR_RUN_M / steps
    for i in range(steps):
        top = z0 + rise * (i + 1) / steps
        builder.box(
            (x0, y0 + i * tread, z0), (x0 + _STAIR_WIDTH_M, y0 + (i + 1) * tread, top), SemanticClass.STAIRS
        )


def generate_building(seed: int) -> SceneLayout:
    """A 12-18 m x 10-14 m building, floors 3.0-3.5 m, stairwell + 2 m shaft, partition walls with doors."""
    rng = np.random.default_rng([4, seed])
    floors = int(rng.integers(2, 4))
    width, depth, storey = (
        float(rng.uniform(12.0, 18.0)),
        float(rng.uniform(10.0, 14.0)),
        float(rng.uniform(3.0, 3.5)),
    )
    builder = LayoutBuilder("building", seed)
    stair_x = width - 0.3 - _STAIR_WIDTH_M
    stairwell = (stair_x - 0.2, 0.3, width - 0.1, 0.3 + _STAIR_RUN_M + 0.4)
    shaft_x, shaft_y = float(rng.uniform(2.0, width * 0.4)), float(rng.uniform(2.0, depth - 4.0))
    shaft = (shaft_x, shaft_y, shaft_x + 2.0, shaft_y + 2.0)
    total = floors * storey
    footprint = (0.0, 0.0, width, depth)
    builder.slab(footprint, -SLAB_THICKNESS_M, SemanticClass.FLOOR)
    builder.slab(footprint, total, SemanticClass.CEILING)
    for wall_axis, coord, span in ((0, 0.0, width), (0, depth, width), (1, 0.0, depth), (1, width, depth)):
        builder.wall(wall_axis, coord, (0.0, span), (0.0, total))
    for level in range(floors):
        z0 = level * storey
        if level > 0:
            builder.slab(footprint, z0 - SLAB_THICKNESS_M, SemanticClass.FLOOR, holes=(stairwell, shaft))
        if level + 1 < floors:
            _stairs(builder, stair_x, 0.3, z0, storey)
        # The partition wall stays clear of the stairwell (landing at its far end) by 1 m.
        cut = max(depth * float(rng.uniform(0.5, 0.65)), stairwell[3] + 1.0)
        doors = (float(rng.uniform(1.0, width * 0.45)), float(rng.uniform(width * 0.55, stair_x - 1.0)))
        builder.wall(0, cut, (0.0, width), (z0, z0 + storey - SLAB_THICKNESS_M), doors=doors)
        # The perpendicular wall must not end inside one of those doorways.
        candidates = np.linspace(width * 0.3, width * 0.6, 13)
        clear = [x for x in candidates if min(abs(x - d) for d in doors) > DOOR_WIDTH_M + DOOR_POST_M]
        split = float(rng.choice(clear)) if clear else float(width * 0.3)
        builder.wall(
            1,
            split,
            (cut, depth),
            (z0, z0 + storey - SLAB_THICKNESS_M),
            doors=(float(rng.uniform(cut + 1.0, depth - 1.0)),),
        )
    return builder.build()
