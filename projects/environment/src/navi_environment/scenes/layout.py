"""Procedural scene layouts: a scene is a union of solid axis-aligned boxes with semantic classes.

Boxes make the signed distance exact and cheap (see :mod:`navi_environment.scenes.rasterize`) and
export to meshes directly. Metric units throughout: x/y horizontal, z up, floor at z = 0.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

WALL_THICKNESS_M = 0.2
SLAB_THICKNESS_M = 0.25
DOOR_WIDTH_M = 1.0
"""Clear width of a doorway between its frame posts: a 0.3 m-radius drone passes with 0.2 m to spare."""
DOOR_POST_M = 0.08
DOOR_HEIGHT_M = 2.1


class SemanticClass(IntEnum):
    """Semantic id written into GMDAG leaves near surfaces (0 = no surface nearby)."""

    NONE = 0
    WALL = 1
    FLOOR = 2
    CEILING = 3
    DOOR_FRAME = 4
    PILLAR = 5
    SHELF = 6
    STAIRS = 7
    CLUTTER = 8


@dataclass(frozen=True)
class SceneLayout:
    """A generated scene.

    Attributes:
        family: generator name (e.g. ``"apartment"``).
        seed: generator seed.
        boxes: (N, 6) float32 solid boxes ``[x0, y0, z0, x1, y1, z1]`` in metres.
        labels: (N,) uint16 :class:`SemanticClass` of each box.
    """

    family: str
    seed: int
    boxes: np.ndarray
    labels: np.ndarray

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(3,) minimum and (3,) maximum corner of all boxes, metres."""
        return self.boxes[:, :3].min(axis=0), self.boxes[:, 3:].max(axis=0)


@dataclass
class LayoutBuilder:
    """Accumulates boxes; helpers cut door openings and slab holes so generators stay short."""

    family: str
    seed: int
    boxes: list[tuple[float, ...]] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)

    def box(
        self, lo: tuple[float, float, float], hi: tuple[float, float, float], label: SemanticClass
    ) -> None:
        """Add a solid box; zero or negative extents are skipped (openings at wall ends)."""
        if all(h - lo_ > 1e-6 for lo_, h in zip(lo, hi, strict=True)):
            self.boxes.append((*lo, *hi))
            self.labels.append(int(label))

    def wall(
        self,
        axis: int,
        coord: float,
        span: tuple[float, float],
        height: tuple[float, float],
        *,
        doors: tuple[float, ...] = (),
        label: SemanticClass = SemanticClass.WALL,
    ) -> None:
        """A wall of thickness :data:`WALL_THICKNESS_M` centred on ``coord``.

        Args:
            axis: 0 = wall runs along x (fixed y = coord); 1 = runs along y (fixed x = coord).
            coord: wall centre line, metres.
            span: (start, end) along the running axis.
            height: (bottom, top) z.
            doors: centres of door openings along the running axis (clear width :data:`DOOR_WIDTH_M`,
                frame posts of :data:`DOOR_POST_M` on each side).
            label: semantic class of the wall pieces.
        """
        half = WALL_THICKNESS_M / 2
        z0, z1 = height
        lintel_bottom = min(z0 + DOOR_HEIGHT_M, z1)
        start = span[0]
        for centre in sorted(doors):
            # The frame posts stand outside the opening: the clear width is DOOR_WIDTH_M.
            opening = (centre - DOOR_WIDTH_M / 2, centre + DOOR_WIDTH_M / 2)
            posts = ((opening[0] - DOOR_POST_M, opening[0]), (opening[1], opening[1] + DOOR_POST_M))
            self._wall_piece(axis, coord, half, (start, posts[0][0]), (z0, z1), label=label)
            self._wall_piece(
                axis,
                coord,
                half,
                (posts[0][0], posts[1][1]),
                (lintel_bottom, z1),
                label=SemanticClass.DOOR_FRAME,
            )
            for post in posts:  # slightly proud of the wall
                self._wall_piece(
                    axis, coord, half + 0.03, post, (z0, lintel_bottom), label=SemanticClass.DOOR_FRAME
                )
            start = posts[1][1]
        self._wall_piece(axis, coord, half, (start, span[1]), (z0, z1), label=label)

    def _wall_piece(
        self,
        axis: int,
        coord: float,
        half: float,
        run: tuple[float, float],
        height: tuple[float, float],
        *,
        label: SemanticClass,
    ) -> None:
        if axis == 0:
            self.box((run[0], coord - half, height[0]), (run[1], coord + half, height[1]), label)
        else:
            self.box((coord - half, run[0], height[0]), (coord + half, run[1], height[1]), label)

    def slab(
        self,
        footprint: tuple[float, float, float, float],
        z: float,
        label: SemanticClass,
        holes: tuple[tuple[float, float, float, float], ...] = (),
    ) -> None:
        """A horizontal slab over ``footprint`` (x0, y0, x1, y1) from ``z`` to ``z + SLAB_THICKNESS_M``
        with rectangular ``holes`` (x0, y0, x1, y1) cut through it (stairwells, shafts).

        The slab is split on a grid of all hole edges; grid cells outside every hole become boxes.
        """
        x0, y0, x1, y1 = footprint
        xs = sorted({x0, x1, *(h[0] for h in holes), *(h[2] for h in holes)})
        ys = sorted({y0, y1, *(h[1] for h in holes), *(h[3] for h in holes)})
        for ax, bx in itertools.pairwise(xs):
            for ay, by in itertools.pairwise(ys):
                cx, cy = (ax + bx) / 2, (ay + by) / 2
                if any(h[0] <= cx <= h[2] and h[1] <= cy <= h[3] for h in holes):
                    continue
                self.box((ax, ay, z), (bx, by, z + SLAB_THICKNESS_M), label)

    def shell(self, footprint: tuple[float, float, float, float], height: float) -> None:
        """Floor slab, ceiling slab and four closed outer walls around ``footprint``."""
        x0, y0, x1, y1 = footprint
        self.slab(footprint, -SLAB_THICKNESS_M, SemanticClass.FLOOR)
        self.slab(footprint, height, SemanticClass.CEILING)
        self.wall(0, y0, (x0, x1), (0.0, height))
        self.wall(0, y1, (x0, x1), (0.0, height))
        self.wall(1, x0, (y0, y1), (0.0, height))
        self.wall(1, x1, (y0, y1), (0.0, height))

    def build(self) -> SceneLayout:
        """Freeze into a :class:`SceneLayout` (boxes rounded to millimetres for determinism)."""
        if not self.boxes:
            raise ValueError(f"{self.family} seed {self.seed}: layout has no boxes")
        boxes = np.round(np.array(self.boxes, dtype=np.float64), 3).astype(np.float32)
        return SceneLayout(self.family, self.seed, boxes, np.array(self.labels, dtype=np.uint16))
