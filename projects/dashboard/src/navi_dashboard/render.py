"""Panorama colouring for the page, and the colour-bar legend.

The colouring itself (:func:`render_panorama`, the turbo table, the logarithmic depth scale) lives in
:mod:`navi_common.panorama`, because the environment's Gymnasium ``render()`` draws the same image;
it is re-exported here for the dashboard's modules.
"""

from __future__ import annotations

import numpy as np

from navi_common.panorama import (
    DEPTH_LOG_GAIN,
    DEPTH_LUT,
    INVALID_DARK,
    INVALID_LIGHT,
    depth_to_index,
    render_panorama,
)

__all__ = [
    "DEPTH_LOG_GAIN",
    "DEPTH_LUT",
    "INVALID_DARK",
    "INVALID_LIGHT",
    "depth_to_index",
    "legend_ticks",
    "render_panorama",
]


def legend_ticks(count: int = 6) -> list[dict[str, object]]:
    """Colour-bar ticks for the page: normalised depth and its colour, evenly spaced on the scale.

    Args:
        count: number of ticks (at least 2).

    Returns:
        One dict per tick: ``depth`` (fraction of the horizon) and ``rgb`` ([r, g, b]).
    """
    positions = np.linspace(0.0, 1.0, max(2, count))
    depths = np.expm1(positions * np.log1p(DEPTH_LOG_GAIN)) / DEPTH_LOG_GAIN  # inverse of the scale
    return [
        {"depth": round(float(d), 4), "rgb": [int(c) for c in DEPTH_LUT[depth_to_index(np.array(d))]]}
        for d in depths
    ]
