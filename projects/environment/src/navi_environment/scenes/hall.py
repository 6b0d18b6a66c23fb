"""Cluttered hall: a large room full of crates, stacks, columns, low partitions and hanging beams."""

from __future__ import annotations

import numpy as np

from navi_environment.scenes.layout import LayoutBuilder, SceneLayout, SemanticClass


def _clutter_piece(
    rng: np.random.Generator, builder: LayoutBuilder, width: float, depth: float, height: float
) -> None:
    kind = rng.choice(["crate", "stack", "column", "partition", "beam"], p=[0.35, 0.2, 0.15, 0.15, 0.15])
    px, py = float(rng.uniform(1.0, width - 1.0)), float(rng.uniform(1.0, depth - 1.0))
    if kind in ("crate", "stack"):
        size = float(rng.uniform(0.6, 2.0))
        builder.box((px, py, 0.0), (px + size, py + size, size), SemanticClass.CLUTTER)
        if kind == "stack":
            top = float(rng.uniform(0.4, size))
            builder.box(
                (px + 0.1, py + 0.1, size),
                (px + 0.1 + top, py + 0.1 + top, size + top),
                SemanticClass.CLUTTER,
            )
    elif kind == "column":
        size = float(rng.uniform(0.4, 0.8))
        builder.box((px, py, 0.0), (px + size, py + size, height), SemanticClass.PILLAR)
    elif kind == "partition":
        length = float(rng.uniform(2.0, 5.0))
        along_x = rng.random() < 0.5
        hi = (px + length, py + 0.2) if along_x else (px + 0.2, py + length)
        builder.box((px, py, 0.0), (min(hi[0], width), min(hi[1], depth), 1.2), SemanticClass.WALL)
    else:
        drop = float(rng.uniform(0.5, 1.5))
        builder.box((0.0, py, height - drop), (width, py + 0.4, height), SemanticClass.CEILING)


def generate_hall(seed: int) -> SceneLayout:
    """A 16-26 m x 12-20 m hall, 4-7 m tall, with 25-50 pieces of clutter."""
    rng = np.random.default_rng([5, seed])
    width, depth, height = (
        float(rng.uniform(16.0, 26.0)),
        float(rng.uniform(12.0, 20.0)),
        float(rng.uniform(4.0, 7.0)),
    )
    builder = LayoutBuilder("hall", seed)
    builder.shell((0.0, 0.0, width, depth), height)
    for _ in range(int(rng.integers(25, 51))):
        _clutter_piece(rng, builder, width, depth, height)
    return builder.build()
