"""Top-down pictures of where each policy flew: one PNG per scene, one panel per policy and mode.

Why: the coverage numbers say how much a policy explored, not how. A drone that circles in the room
it starts in, one that orbits the pillars of a hall and one that sweeps it lane by lane can score
alike; the picture tells them apart at a glance (docs/evaluation.md). Every panel shows the same
planned episodes (same starts), so the panels of one picture compare policies start by start.

A panel is the scene's free space (light) and solid (dark) on a horizontal slice at the median
height flown in that scene, seen from above with +y up; each planned episode is one line in its own
shade of the panel's colour, from a black square at its start. Panels sit left to right in the order
the policies were flown (the command prints that order).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

PANEL_PIXELS = 600  #: longest side of a panel
FINEST_PIXEL_M = 0.02  #: a small flown area is not magnified beyond this
MARGIN_M = 2.0  #: scene around the flown area that is drawn
PALETTE = ((214, 39, 40), (31, 119, 180), (44, 160, 44), (255, 127, 14), (148, 103, 189), (140, 86, 75))
FREE, SOLID, SEPARATOR = (236, 236, 236), (70, 70, 70), (0, 0, 0)


def _free_slice(
    scene: Any, settings: Any, origin: np.ndarray, shape: tuple[int, int], *, pixel: float, height: float
) -> np.ndarray:
    """[H, W] bool: the pixel's centre (at ``height``) is farther than the drone radius from a surface."""
    from navi_environment.runtime.reachable import scene_distances

    rows, cols = shape
    xs = origin[0] + (np.arange(cols) + 0.5) * pixel
    ys = origin[1] + (np.arange(rows) + 0.5) * pixel
    gx, gy = np.meshgrid(xs, ys)
    points = np.stack([gx.ravel(), gy.ravel(), np.full(gx.size, height)], axis=1)
    return scene_distances(scene, settings, points).reshape(rows, cols) > settings.physics.drone_radius_m


def _draw_path(
    image: np.ndarray, origin: np.ndarray, pixel: float, path: np.ndarray, colour: np.ndarray
) -> None:
    """Draw ``path`` ([T,3] metres) into ``image`` (row 0 = lowest y) as a 3-pixel line, start marked."""
    if len(path) == 0:
        return
    rows, cols = image.shape[:2]
    segments = np.stack([path[:-1, :2], path[1:, :2]], axis=1) if len(path) > 1 else path[None, :1, :2]
    steps = int(np.ceil(np.abs(np.diff(segments, axis=1)).max(initial=0.0) / pixel)) + 1
    share = np.linspace(0.0, 1.0, steps)[None, :, None]
    points = (segments[:, :1] + share * (segments[:, -1:] - segments[:, :1])).reshape(-1, 2)
    c = ((points[:, 0] - origin[0]) / pixel).astype(np.int64)
    r = ((points[:, 1] - origin[1]) / pixel).astype(np.int64)
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            image[np.clip(r + dr, 0, rows - 1), np.clip(c + dc, 0, cols - 1)] = colour
    r0, c0 = int((path[0, 1] - origin[1]) / pixel), int((path[0, 0] - origin[0]) / pixel)
    image[max(r0 - 3, 0) : r0 + 4, max(c0 - 3, 0) : c0 + 4] = 0


def render_scene(scene: Any, settings: Any, panels: Sequence[Sequence[np.ndarray]]) -> np.ndarray:
    """[H, W, 3] uint8: one panel per entry of ``panels`` (that policy's paths in this scene)."""
    flown = [path for paths in panels for path in paths if len(path)]
    if not flown:
        raise ValueError("no path to draw: every episode of this scene is empty")
    points = np.concatenate(flown)
    low, high = points[:, :2].min(axis=0) - MARGIN_M, points[:, :2].max(axis=0) + MARGIN_M
    pixel = max(FINEST_PIXEL_M, float((high - low).max()) / PANEL_PIXELS)
    shape = (int(np.ceil((high[1] - low[1]) / pixel)), int(np.ceil((high[0] - low[0]) / pixel)))
    free = _free_slice(scene, settings, low, shape, pixel=pixel, height=float(np.median(points[:, 2])))
    background = np.where(free[..., None], np.array(FREE, np.uint8), np.array(SOLID, np.uint8))
    drawn = []
    for index, paths in enumerate(panels):
        image = background.copy()
        base = np.array(PALETTE[index % len(PALETTE)], dtype=np.float64)
        for k, path in enumerate(paths):
            shade = 0.45 + 0.55 * (k + 1) / max(len(paths), 1)  # later episodes brighter
            _draw_path(image, low, pixel, path, (base * shade).astype(np.uint8))
        drawn.append(image[::-1])  # +y up
    separator = np.full((shape[0], 6, 3), SEPARATOR, np.uint8)
    return np.concatenate([part for image in drawn for part in (image, separator)][:-1], axis=1)


def prepare_folder(folder: Path) -> None:
    """Create ``folder`` before anything is flown, so that a bad one fails first, in one line.

    Raises:
        ValueError: the folder cannot be created (a file in the way, no permission).
    """
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValueError(f"cannot write path pictures to {folder}: {error.strerror}") from error


def write_path_images(folder: Path, env: Any, reports: Sequence[Any]) -> list[Path]:
    """One PNG per scene of the plan in ``folder`` (``<scene>.png``), a panel per report, in order.

    Args:
        folder: created if missing; existing pictures of the same scenes are replaced (atomically).
        env: the :class:`navi_environment.backend.SdfDagBackend` the reports were flown in.
        reports: :class:`~navi_actor.evaluation.evaluator.EvaluationReport` of one plan, each flown
            with ``record_paths``.

    Raises:
        ValueError: a report without paths, or reports of different plans.
    """
    from navi_environment.preview.png import write_png

    if any(report.paths is None for report in reports):
        raise ValueError("path pictures need reports flown with record_paths=True")
    plan = reports[0].plan
    if not all(plan.same_starts(report.plan) for report in reports):
        raise ValueError("path pictures compare policies on one plan; these reports flew different plans")
    prepare_folder(folder)
    written = []
    for scene_index in plan.scenes.unique().tolist():
        episodes = (plan.scenes == scene_index).nonzero().squeeze(1).tolist()
        panels = [[report.paths[i] for i in episodes] for report in reports]
        entry = env.scenes.corpus[scene_index]
        name = Path(entry).stem if isinstance(entry, (str, Path)) else Path(str(entry.name)).stem
        image = render_scene(env.scenes.scene(scene_index), env.settings, panels)
        written.append(write_png(folder / f"{name}.png", image))
    return written
