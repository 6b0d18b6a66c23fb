"""Multi-room apartment: a closed shell split into 3-8 m rooms by walls with 1 m doors, plus furniture."""

from __future__ import annotations

import numpy as np

from navi_environment.scenes.layout import LayoutBuilder, SceneLayout, SemanticClass

_MIN_ROOM_M = 3.0
_MAX_ROOM_M = 7.0


def _split_rooms(
    rng: np.random.Generator,
    builder: LayoutBuilder,
    footprint: tuple[float, float, float, float],
    height: float,
) -> list[tuple[float, float, float, float]]:
    """Binary space partition; every split wall gets one door, so all rooms stay connected."""
    rooms = [footprint]
    done: list[tuple[float, float, float, float]] = []
    while rooms:
        x0, y0, x1, y1 = rooms.pop(0)
        width, depth = x1 - x0, y1 - y0
        longest = max(width, depth)
        if longest <= _MAX_ROOM_M and (longest < 2 * _MIN_ROOM_M or rng.random() < 0.5):
            done.append((x0, y0, x1, y1))
            continue
        fraction = rng.uniform(0.35, 0.65)
        if width >= depth:
            cut = x0 + max(_MIN_ROOM_M, min(width - _MIN_ROOM_M, width * fraction))
            door = rng.uniform(y0 + 0.8, y1 - 0.8)
            builder.wall(1, cut, (y0, y1), (0.0, height), doors=(door,))
            rooms += [(x0, y0, cut, y1), (cut, y0, x1, y1)]
        else:
            cut = y0 + max(_MIN_ROOM_M, min(depth - _MIN_ROOM_M, depth * fraction))
            door = rng.uniform(x0 + 0.8, x1 - 0.8)
            builder.wall(0, cut, (x0, x1), (0.0, height), doors=(door,))
            rooms += [(x0, y0, x1, cut), (x0, cut, x1, y1)]
    return done


def _furnish(
    rng: np.random.Generator, builder: LayoutBuilder, room: tuple[float, float, float, float]
) -> None:
    """One to three pieces of furniture (tables, cabinets, sofas) standing against the room's walls."""
    x0, y0, x1, y1 = room
    for _ in range(int(rng.integers(1, 4))):
        size_x, size_y = rng.uniform(0.5, 1.8), rng.uniform(0.5, 1.0)
        tall = rng.uniform(0.45, 2.0)
        along_x = rng.random() < 0.5
        if along_x:
            px = rng.uniform(x0 + 0.2, max(x0 + 0.2, x1 - 0.2 - size_x))
            py = y0 + 0.15 if rng.random() < 0.5 else y1 - 0.15 - size_y
        else:
            size_x, size_y = size_y, size_x
            py = rng.uniform(y0 + 0.2, max(y0 + 0.2, y1 - 0.2 - size_y))
            px = x0 + 0.15 if rng.random() < 0.5 else x1 - 0.15 - size_x
        builder.box((px, py, 0.0), (px + size_x, py + size_y, tall), SemanticClass.CLUTTER)


def generate_apartment(seed: int) -> SceneLayout:
    """A 10-16 m x 8-12 m apartment, ceiling 2.5-3.0 m, rooms 3-7 m, doors 1 m wide."""
    rng = np.random.default_rng([1, seed])
    width, depth, height = rng.uniform(10.0, 16.0), rng.uniform(8.0, 12.0), rng.uniform(2.5, 3.0)
    builder = LayoutBuilder("apartment", seed)
    footprint = (0.0, 0.0, float(width), float(depth))
    builder.shell(footprint, float(height))
    for room in _split_rooms(rng, builder, footprint, float(height)):
        _furnish(rng, builder, room)
    return builder.build()
