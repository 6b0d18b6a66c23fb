"""Terminal depth view: the forward hemisphere mapping and both renderers."""

from __future__ import annotations

import re

import numpy as np

from navi_auditor.explorer.view import (
    ASCII_RAMP,
    UPPER_HALF,
    forward_hemisphere,
    render_depth,
    shade_rgb,
    status_line,
)

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_columns_sweep_left_to_right_and_rows_zenith_to_nadir() -> None:
    Az, El = 64, 16
    depth = np.zeros((Az, El), dtype=np.float32)
    depth += np.arange(Az, dtype=np.float32)[:, None]  # value = azimuth bin
    image, _ = forward_hemisphere(depth, np.ones((Az, El), bool), width=5, height=4)
    # left edge = 90 deg left (bin Az/4), centre = heading (bin 0), right edge = 90 deg right (bin 3Az/4)
    assert image[0].tolist() == [16, 8, 0, 56, 48]
    elevation = np.tile(np.arange(El, dtype=np.float32), (Az, 1))
    image, _ = forward_hemisphere(elevation, np.ones((Az, El), bool), width=3, height=4)
    assert image[:, 0].tolist() == [14, 10, 6, 2]  # row centres, top row = highest elevations


def test_near_is_brighter_and_misses_are_dark_blue() -> None:
    rgb = shade_rgb(np.array([0.0, 0.1, 0.9, 0.5]), np.array([True, True, True, False]))
    assert rgb[0].sum() > rgb[1].sum() > rgb[2].sum()
    assert rgb[3].tolist() == [10, 20, 60]


def test_colour_render_has_one_half_block_per_column() -> None:
    rng = np.random.default_rng(0)
    depth = rng.random((32, 8)).astype(np.float32)
    lines = render_depth(depth, depth < 0.8, width=20, rows=6, color=True)
    assert len(lines) == 6
    for line in lines:
        assert line.endswith("\x1b[0m")
        assert ANSI.sub("", line) == UPPER_HALF * 20


def test_ascii_render_shades_near_dark_to_dense() -> None:
    depth = np.ones((32, 8), dtype=np.float32)
    depth[0, :] = 0.0  # a surface touching the drone straight ahead
    valid = depth < 1.0
    lines = render_depth(depth, valid, width=9, rows=4, color=False)
    assert all(len(line) == 9 for line in lines)
    assert {line[4] for line in lines} == {ASCII_RAMP[-1]}
    assert {line[0] for line in lines} == {" "}


def test_status_line_shows_scene_step_and_signed_action() -> None:
    line = status_line(
        "room.gmdag",
        scene_number=2,
        step=5,
        max_steps=10,
        action=np.array([1, -0.5, 0, 0.25]),
        pilot="keyboard",
    )
    assert "scene 2 room.gmdag" in line and "step 5/10" in line and "fwd +1.00 up -0.50" in line
