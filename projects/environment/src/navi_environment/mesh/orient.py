"""Which way is up in a mesh file, and the rotation that makes it Navi's +z.

glTF is +y up by specification. OBJ, PLY and STL have no convention, so ``auto`` reads the geometry:

1. **Open top**: a direction whose low end has a floor or ground under most of the footprint while
   its high end is mostly open (an open room, a site, a stadium) is up.
2. **Axis** (closed or symmetric scenes): the axis across which the largest share of the face area
   is horizontal (floors, ceilings, ground and table tops outweigh the walls of most scenes).
3. **Sign**: down is the end of that axis with clearly more horizontal area (a ground plane, a
   floor without a ceiling); when both ends are alike (a closed room), down is the end that clearly
   more separate objects touch alone (furniture, crates and partitions stand on the floor; beams
   and lamps hang from the ceiling, and there are fewer of them); in one connected surface (a scan),
   down is the side where the horizontal surfaces between the ends sit (table tops and shelves
   stand on floors), else where the rest of the geometry sits.

Whatever the choice, the result is checked: an up axis across which little area is horizontal
(the scene is probably sideways), or a scene whose footprint has little floor or ground in its
lower half, gets a warning that names ``--up-axis``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

UP_AXES = ("auto", "z", "y", "x", "-z", "-y", "-x")
_ROTATIONS = {  # file up direction -> proper rotation taking it to +z
    "z": ((1, 0, 0), (0, 1, 0), (0, 0, 1)),
    "-z": ((1, 0, 0), (0, -1, 0), (0, 0, -1)),
    "y": ((1, 0, 0), (0, 0, -1), (0, 1, 0)),
    "-y": ((1, 0, 0), (0, 0, 1), (0, -1, 0)),
    "x": ((0, 0, -1), (0, 1, 0), (1, 0, 0)),
    "-x": ((0, 0, 1), (0, 1, 0), (-1, 0, 0)),
}
Y_UP_SUFFIXES = (".glb", ".gltf")
HORIZONTAL_COS = float(np.cos(np.radians(15.0)))
END_BAND = 0.1
"""Share of the extent at each end of the up axis where a floor, ground or roof is looked for."""
END_RATIO = 1.5
"""One end is the ground when it holds this many times the other end's horizontal area."""
LEDGE_MARGIN = 0.05
"""Horizontal surfaces between the ends (table tops) decide the sign when their centre is this far
off the middle."""
OBJECT_RATIO = 1.5
"""One end is the floor when this many times as many separate objects touch it alone as touch the
other end alone. Why objects and not heights: in closed halls with hanging beams and apartments with
tall cupboards and door lintels the horizontal surfaces between the ends sit above the middle in
about one procedural scene in five, while the objects standing on the floor outnumber those hanging
from the ceiling 2.4:1 or more in every one (64 apartments and halls, seeds 0-15)."""
OBJECT_WELD = 1e-6
"""Corners closer than this share of the scene's extent are one vertex when objects are told apart
(STL stores every triangle's corners separately)."""
CLUTTER_MARGIN = 0.02
"""The rest of the geometry decides the sign only when its centre is this far off the middle."""
SUPPORT_CELLS = 48
MIN_SUPPORT = 0.5
OPEN_TOP_BAND = 0.5
OPEN_TOP_CONTRAST = 0.15
"""A direction is up at once when its lower half covers this much more of the footprint than its
upper half ...
"""
OPEN_TOP_DOMINANCE = 2.0
"""... and that contrast is this many times any other axis's."""


@dataclass(frozen=True)
class Orientation:
    """The transform applied on import: rotation (file up -> +z), then scale.

    Attributes:
        up_axis: the file's up direction that was used (``z``, ``-y``, ...).
        requested: what was asked for (``auto`` or an axis).
        scale: coordinate multiplier (file units -> metres).
        reason: one line saying why this up axis.
        warning: a doubt about the result naming the option to pass, or None.
    """

    up_axis: str = "z"
    requested: str = "z"
    scale: float = 1.0
    reason: str = "given"
    warning: str | None = None
    horizontal_share: dict[str, float] = field(default_factory=dict)

    @property
    def matrix(self) -> np.ndarray:
        """(3, 3) rotation taking file coordinates to Navi's (z up)."""
        return np.array(_ROTATIONS[self.up_axis], dtype=np.float64)

    def record(self) -> dict[str, object]:
        """JSON-friendly record (manifest and provenance)."""
        return {
            "up_axis": self.up_axis,
            "up_axis_requested": self.requested,
            "up_axis_reason": self.reason,
            "scale": self.scale,
            "rotation": self.matrix.astype(int).tolist(),
            "orientation_warning": self.warning,
        }


def _areas_and_normals(triangles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    cross = np.cross(triangles[:, 1] - triangles[:, 0], triangles[:, 2] - triangles[:, 0])
    doubled = np.linalg.norm(cross, axis=1)
    return 0.5 * doubled, cross / np.maximum(doubled, 1e-300)[:, None]


def horizontal_shares(triangles: np.ndarray) -> np.ndarray:
    """(3,) share of the face area whose normal is within 15 degrees of each axis."""
    area, normal = _areas_and_normals(triangles)
    flat = np.abs(normal) > HORIZONTAL_COS
    return (area[:, None] * flat).sum(axis=0) / max(float(area.sum()), 1e-300)


def _sign_along(triangles: np.ndarray, axis: int) -> tuple[int, str]:
    """(+1 when up is +axis, -1 when -axis, 0 when undecided; why)."""
    area, normal = _areas_and_normals(triangles)
    height = triangles[:, :, axis].mean(axis=1)
    lo, hi = float(triangles[:, :, axis].min()), float(triangles[:, :, axis].max())
    extent = max(hi - lo, 1e-12)
    flat = np.abs(normal[:, axis]) > HORIZONTAL_COS
    low_band, high_band = height <= lo + END_BAND * extent, height >= hi - END_BAND * extent
    low_area, high_area = float(area[flat & low_band].sum()), float(area[flat & high_band].sum())
    if low_area > END_RATIO * high_area:
        return 1, f"the low end holds {low_area:.0f} m2 of horizontal surface, the high end {high_area:.0f}"
    if high_area > END_RATIO * low_area:
        return -1, f"the high end holds {high_area:.0f} m2 of horizontal surface, the low end {low_area:.0f}"
    resting, hanging = objects_at_ends(triangles, axis, END_BAND)
    if max(resting, hanging) > OBJECT_RATIO * min(resting, hanging):
        more, fewer, end = (resting, hanging, "low") if resting > hanging else (hanging, resting, "high")
        why = f"both ends alike; {more} separate objects touch the {end} end alone, {fewer} the other"
        return (1 if end == "low" else -1), why
    ledges = flat & ~(low_band | high_band)  # table tops, shelves, stairs: they stand on the floor
    middle = ~(flat & (low_band | high_band))
    for part, margin, what in ((ledges, LEDGE_MARGIN, "the horizontal surfaces between them sit"),
                               (middle, CLUTTER_MARGIN, "the other geometry sits")):  # fmt: skip
        if area[part].sum() > 0:
            centre = (float(np.average(height[part], weights=area[part])) - lo) / extent
            if abs(centre - 0.5) > margin:
                side = "low" if centre < 0.5 else "high"
                why = f"both ends alike; {what} {side} (centre at {centre:.0%} of the height)"
                return (1 if side == "low" else -1), why
    return 0, "both ends alike and the geometry is symmetric"


def objects_at_ends(triangles: np.ndarray, axis: int, band: float) -> tuple[int, int]:
    """(objects that reach into the low end's band but not the high end's, the reverse).

    An object is a set of triangles joined by shared corners (welded within :data:`OBJECT_WELD` of
    the extent); the bands are the lowest and highest ``band`` of the extent along ``axis``. Walls
    and columns reach both ends and count for neither.
    """
    corners = triangles.reshape(-1, 3)
    origin, extent = corners.min(axis=0), float(np.ptp(corners, axis=0).max())
    grid = np.round((corners - origin) / max(OBJECT_WELD * extent, 1e-12)).astype(np.int64)  # < 2**20
    _, vertex = np.unique((grid[:, 0] << 42) | (grid[:, 1] << 21) | grid[:, 2], return_inverse=True)
    vertex = vertex.reshape(-1, 3)
    edges = np.concatenate([vertex[:, [0, 1]], vertex[:, [1, 2]]])
    size = int(vertex.max()) + 1
    graph = coo_matrix((np.ones(len(edges), dtype=np.int8), (edges[:, 0], edges[:, 1])), shape=(size, size))
    count, label = connected_components(graph, directed=False)
    heights = triangles[:, :, axis]
    lowest, highest = np.full(count, np.inf), np.full(count, -np.inf)
    np.minimum.at(lowest, label[vertex[:, 0]], heights.min(axis=1))
    np.maximum.at(highest, label[vertex[:, 0]], heights.max(axis=1))
    lo, hi = float(heights.min()), float(heights.max())
    depth = band * max(hi - lo, 1e-12)
    low, high = lowest <= lo + depth, highest >= hi - depth
    return int((low & ~high).sum()), int((high & ~low).sum())


def end_coverage(
    triangles: np.ndarray, axis: int, band: float, *, of_bounds: bool = False
) -> tuple[float, float]:
    """Share of the occupied footprint across ``axis`` (of its whole bounding rectangle with
    ``of_bounds``) with a horizontal surface in the low end (lowest ``band`` of the extent) and in
    the high end.

    The footprint is a grid of :data:`SUPPORT_CELLS` squared cells over the two other axes; a
    triangle covers the cells of its bounding box there (walls seen edge-on cover a thin line).
    """
    area, normal = _areas_and_normals(triangles)
    others = [k for k in range(3) if k != axis]
    flat2d = triangles[:, :, others]
    lo, hi = flat2d.min(axis=(0, 1)), flat2d.max(axis=(0, 1))
    cell = np.maximum((hi - lo) / SUPPORT_CELLS, 1e-9)
    cell_lo = np.clip(((flat2d.min(axis=1) - lo) / cell).astype(int), 0, SUPPORT_CELLS - 1)
    cell_hi = np.clip(((flat2d.max(axis=1) - lo) / cell).astype(int), 0, SUPPORT_CELLS - 1)
    height = triangles[:, :, axis].mean(axis=1)
    bottom, top = float(triangles[:, :, axis].min()), float(triangles[:, :, axis].max())
    depth = band * max(top - bottom, 1e-12)
    flat = (np.abs(normal[:, axis]) > HORIZONTAL_COS) & (area > 0)
    occupied = float(SUPPORT_CELLS**2) if of_bounds else float(_cover(cell_lo, cell_hi).sum())
    low, high = flat & (height <= bottom + depth), flat & (height >= top - depth)
    covered_low = float(_cover(cell_lo[low], cell_hi[low]).sum())
    covered_high = float(_cover(cell_lo[high], cell_hi[high]).sum())
    return covered_low / max(occupied, 1.0), covered_high / max(occupied, 1.0)


def _open_top_axis(triangles: np.ndarray) -> tuple[str, str] | None:
    """The direction with a floor or ground under more of the footprint than is covered above it,
    when it stands out from the other axes (an open room, a site, a city block); None for closed
    or symmetric scenes."""
    candidates: list[tuple[float, int, str, str]] = []
    for axis in range(3):
        low, high = end_coverage(triangles, axis, OPEN_TOP_BAND, of_bounds=True)
        for up, under, over in (("xyz"[axis], low, high), (f"-{'xyz'[axis]}", high, low)):
            why = f"floor or ground under {under:.0%} of the bounds below, {over:.0%} covered above"
            candidates.append((under - over, axis, up, why))
    candidates.sort(reverse=True)
    best = candidates[0]
    runner_up = max(contrast for contrast, axis, _, _ in candidates if axis != best[1])
    if best[0] >= OPEN_TOP_CONTRAST and best[0] >= OPEN_TOP_DOMINANCE * max(runner_up, 0.0):
        return best[2], best[3]
    return None


def _cover(cell_lo: np.ndarray, cell_hi: np.ndarray) -> np.ndarray:
    """(N, N) bool: cells inside any of the given inclusive cell rectangles (2-D difference array)."""
    grid = np.zeros((SUPPORT_CELLS + 1, SUPPORT_CELLS + 1), dtype=np.int64)
    i0, j0, i1, j1 = cell_lo[:, 0], cell_lo[:, 1], cell_hi[:, 0] + 1, cell_hi[:, 1] + 1
    np.add.at(grid, (i0, j0), 1)
    np.add.at(grid, (i0, j1), -1)
    np.add.at(grid, (i1, j0), -1)
    np.add.at(grid, (i1, j1), 1)
    return grid.cumsum(axis=0).cumsum(axis=1)[:SUPPORT_CELLS, :SUPPORT_CELLS] > 0


def _auto_axis(triangles: np.ndarray, shares: np.ndarray, suffix: str) -> tuple[str, str, bool]:
    """(up axis, why, undecided sign)."""
    if suffix in Y_UP_SUFFIXES:
        return "y", "glTF is +y up by specification", False
    open_top = _open_top_axis(triangles)
    if open_top is not None:
        return open_top[0], f"open top: {open_top[1]}", False
    axis = int(np.argmax(shares))
    name = "xyz"[axis]
    share_text = ", ".join(f"{'xyz'[k]} {shares[k]:.0%}" for k in range(3))
    sign, why = _sign_along(triangles, axis)
    up = name if sign >= 0 else f"-{name}"
    reason = f"{share_text} of the face area is horizontal across each axis; {why}"
    return up, reason, sign == 0


def _doubts(triangles: np.ndarray, geometry: tuple[str, str, bool], up: str, undecided: bool) -> list[str]:
    """Warnings about an up axis: the geometry (``_auto_axis`` without a file convention) points
    elsewhere, the sign is a guess, or the chosen down has little floor or ground under the scene."""
    warnings = []
    geometric, why, geometric_undecided = geometry
    if geometric != up and not geometric_undecided:
        warnings.append(
            f"the geometry suggests {geometric} up, not {up} ({why}): if the preview shows the scene "
            f"sideways or upside down, pass --up-axis {geometric}"
        )
    if undecided:
        warnings.append(
            f"up or down along {up.lstrip('-')} is a guess (pass --up-axis {up} or -{up.lstrip('-')})"
        )
    rotated = triangles @ np.array(_ROTATIONS[up], dtype=np.float64).T
    support = end_coverage(rotated, 2, 0.5)[0]
    if support < MIN_SUPPORT:
        warnings.append(
            f"only {support:.0%} of the footprint has a floor or ground in the lower half with {up} up: "
            "the scene may be upside down or sideways (pass --up-axis; check with navi-environment preview)"
        )
    return warnings


def choose_orientation(triangles: np.ndarray, suffix: str, requested: str, scale: float) -> Orientation:
    """Decide the up axis of a file's triangles (see the module docstring) and check the result.

    Args:
        triangles: (T, 3, 3) cleaned triangles in file coordinates.
        suffix: file suffix (``.glb`` ... decides the convention for ``auto``).
        requested: ``auto`` or an axis of :data:`UP_AXES`.
        scale: recorded with the rotation.

    Returns:
        The orientation with its reason and, when doubtful, a warning naming ``--up-axis``.
    """
    shares = horizontal_shares(triangles)
    geometry = _auto_axis(triangles, shares, "")  # once: it decides ``auto`` and checks every choice
    undecided = False
    if requested == "auto":
        up, why, undecided = _auto_axis(triangles, shares, suffix) if suffix in Y_UP_SUFFIXES else geometry
        reason = f"auto: {up} up ({why})"
    else:
        up, reason = requested, f"given: {requested} up"
    warnings = _doubts(triangles, geometry, up, undecided)
    return Orientation(
        up_axis=up,
        requested=requested,
        scale=float(scale),
        reason=reason,
        warning="; ".join(warnings) or None,
        horizontal_share={"xyz"[k]: round(float(shares[k]), 4) for k in range(3)},
    )
