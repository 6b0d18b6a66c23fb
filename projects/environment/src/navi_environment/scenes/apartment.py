"""Multi-room apartment: a closed shell split into 3-8 m rooms by walls with 1 m doors, plus furniture."""

from __future__ import annotations

import numpy as np

from navi_environment.scenes.layout import (
    DOOR_POST_M,
    DOOR_WIDTH_M,
    WALL_THICKNESS_M,
    LayoutBuilder,
    SceneLayout,
    SemanticClass,
)

_MIN_ROOM_M = 3.0
_MAX_ROOM_M = 7.0


def _clear_of_doors(
    cut: float, axis: int, span: tuple[float, float], doors: list[tuple[float, float]]
) -> bool:
    """True when a wall at ``cut`` (x for axis 1, y for axis 0) over ``span`` meets no existing door."""
    keep_out = DOOR_WIDTH_M / 2 + DOOR_POST_M + WALL_THICKNESS_M + 0.2
    for door_x, door_y in doors:
        along, across = (door_x, door_y) if axis == 1 else (door_y, door_x)
        if abs(along - cut) < keep_out and span[0] - 0.3 <= across <= span[1] + 0.3:
            return False
    return True


def _pick_cut(
    rng: np.random.Generator,
    lo: float,
    hi: float,
    axis: int,
    span: tuple[float, float],
    *,
    doors: list[tuple[float, float]],
) -> float | None:
    """A cut position leaving rooms >= 3 m on both sides and not ending in an existing doorway."""
    for _ in range(12):
        cut = lo + max(_MIN_ROOM_M, min(hi - lo - _MIN_ROOM_M, (hi - lo) * rng.uniform(0.35, 0.65)))
        if _clear_of_doors(cut, axis, span, doors):
            return float(cut)
    return None


def _split_rooms(
    rng: np.random.Generator,
    builder: LayoutBuilder,
    footprint: tuple[float, float, float, float],
    height: float,
) -> tuple[list[tuple[float, float, float, float]], list[tuple[float, float]]]:
    """Binary space partition; every split wall gets one door, so all rooms stay connected.

    Returns the rooms and the door centres (x, y).

    A new wall never ends inside an existing doorway (that could halve or block the door).
    """
    rooms = [footprint]
    done: list[tuple[float, float, float, float]] = []
    doors: list[tuple[float, float]] = []
    while rooms:
        x0, y0, x1, y1 = rooms.pop(0)
        width, depth = x1 - x0, y1 - y0
        longest = max(width, depth)
        if longest <= _MAX_ROOM_M and (longest < 2 * _MIN_ROOM_M or rng.random() < 0.5):
            done.append((x0, y0, x1, y1))
            continue
        if width >= depth:
            cut = _pick_cut(rng, x0, x1, 1, (y0, y1), doors=doors)
            if cut is None:
                done.append((x0, y0, x1, y1))
                continue
            door = float(rng.uniform(y0 + 0.8, y1 - 0.8))
            builder.wall(1, cut, (y0, y1), (0.0, height), doors=(door,))
            doors.append((cut, door))
            rooms += [(x0, y0, cut, y1), (cut, y0, x1, y1)]
        else:
            cut = _pick_cut(rng, y0, y1, 0, (x0, x1), doors=doors)
            if cut is None:
                done.append((x0, y0, x1, y1))
                continue
            door = float(rng.uniform(x0 + 0.8, x1 - 0.8))
            builder.wall(0, cut, (x0, x1), (0.0, height), doors=(door,))
            doors.append((door, cut))
            rooms += [(x0, y0, x1, cut), (x0, cut, x1, y1)]
    return done, doors


def _furnish(
    rng: np.random.Generator,
    builder: LayoutBuilder,
    room: tuple[float, float, float, float],
    doors: list[tuple[float, float]],
) -> None:
    """One to three pieces of furniture (tables, cabinets, sofas) against the room's walls, never
    within 0.7 m of a doorway (a blocked door would cut the apartment in two)."""
    x0, y0, x1, y1 = room
    for _ in range(int(rng.integers(1, 4))):
        size_x, size_y = rng.uniform(0.5, 1.8), rng.uniform(0.5, 1.0)
        tall = rng.uniform(0.45, 2.0)
        if rng.random() < 0.5:
            px = rng.uniform(x0 + 0.2, max(x0 + 0.2, x1 - 0.2 - size_x))
            py = y0 + 0.15 if rng.random() < 0.5 else y1 - 0.15 - size_y
        else:
            size_x, size_y = size_y, size_x
            py = rng.uniform(y0 + 0.2, max(y0 + 0.2, y1 - 0.2 - size_y))
            px = x0 + 0.15 if rng.random() < 0.5 else x1 - 0.15 - size_x
        margin = DOOR_WIDTH_M / 2 + DOOR_POST_M + 0.7
        blocks_door = any(
            px - margin <= dx <= px + size_x + margin and py - margin <= dy <= py + size_y + margin
            for dx, dy in doors
        )
        if not blocks_door:
            builder.box((px, py, 0.0), (px + size_x, py + size_y, tall), SemanticClass.CLUTTER)


def generate_apartment(seed: int) -> SceneLayout:
    """A 10-16 m x 8-12 m apartment, ceiling 2.5-3.0 m, rooms 3-7 m, doors 1 m wide."""
    rng = np.random.default_rng([1, seed])
    width, depth, height = rng.uniform(10.0, 16.0), rng.uniform(8.0, 12.0), rng.uniform(2.5, 3.0)
    builder = LayoutBuilder("apartment", seed)
    footprint = (0.0, 0.0, float(width), float(depth))
    builder.shell(footprint, float(height))
    rooms, doors = _split_rooms(rng, builder, footprint, float(height))
    for room in rooms:
        _furnish(rng, builder, room, doors)
    return builder.build()
