"""Panorama layout (heading centred, left on the left, up on top) and the colour scale."""

from __future__ import annotations

import numpy as np
import pytest

from navi_dashboard.render import (
    DEPTH_LUT,
    INVALID_DARK,
    INVALID_LIGHT,
    depth_to_index,
    legend_ticks,
    render_panorama,
)
from navi_dashboard.synthetic import room_observation

AZ, EL = 16, 6
FAR = 0.9


def _with_near_cell(azimuth_bin: int, elevation_bin: int) -> tuple[np.ndarray, np.ndarray]:
    depth = np.full((AZ, EL), FAR, dtype=np.float32)
    depth[azimuth_bin, elevation_bin] = 0.0
    return depth, np.ones((AZ, EL), dtype=bool)


def _near_pixel(image: np.ndarray) -> tuple[int, int]:
    (rows, cols) = np.nonzero((image == DEPTH_LUT[0]).all(axis=-1))
    assert len(rows) == 1
    return int(rows[0]), int(cols[0])


def test_heading_is_the_centre_column() -> None:
    image = render_panorama(*_with_near_cell(0, EL // 2))
    assert image.shape == (EL, AZ, 3) and image.dtype == np.uint8
    assert _near_pixel(image)[1] == AZ // 2


def test_left_of_the_drone_is_left_in_the_image() -> None:
    # Azimuth grows counter-clockwise: a quarter turn is the drone's left, a quarter of the width left.
    assert _near_pixel(render_panorama(*_with_near_cell(AZ // 4, 2)))[1] == AZ // 2 - AZ // 4
    assert _near_pixel(render_panorama(*_with_near_cell(3 * AZ // 4, 2)))[1] == AZ // 2 + AZ // 4


def test_up_is_on_top_for_the_sensor_layout() -> None:
    # The sensor's elevation bin 0 looks at the nadir, the last bin at the zenith.
    assert _near_pixel(render_panorama(*_with_near_cell(0, EL - 1)))[0] == 0
    assert _near_pixel(render_panorama(*_with_near_cell(0, 0)))[0] == EL - 1
    assert _near_pixel(render_panorama(*_with_near_cell(0, 0), nadir_first=False))[0] == 0


def test_invalid_cells_are_a_checkerboard_no_depth_colour_uses() -> None:
    depth, valid = room_observation(AZ * 4, EL * 4, yaw=0.0)
    assert not valid.all() and valid.any()
    image = render_panorama(depth, valid)
    invalid_pixels = (render_panorama(depth, np.ones_like(valid)) != image).any(axis=-1)
    assert invalid_pixels.sum() == (~valid).sum()
    colours = {tuple(pixel) for pixel in image[invalid_pixels]}
    assert colours == {INVALID_DARK, INVALID_LIGHT}
    lut_colours = {tuple(int(c) for c in entry) for entry in DEPTH_LUT}
    assert not colours & lut_colours


def test_non_finite_depth_counts_as_invalid() -> None:
    depth, valid = _with_near_cell(1, 1)
    depth[2, 2] = np.nan
    image = render_panorama(depth, valid)
    nan_pixel = image[EL - 1 - 2, (AZ // 2 - 2) % AZ]
    assert tuple(nan_pixel) in {INVALID_DARK, INVALID_LIGHT}


def test_colour_index_is_monotonic_from_near_to_far() -> None:
    depths = np.linspace(0.0, 1.0, 1001)
    index = depth_to_index(depths).astype(int)
    assert index[0] == 0 and index[-1] == 255 and (np.diff(index) >= 0).all()
    assert depth_to_index(np.array([np.nan, -1.0, 2.0])).tolist() == [255, 0, 255]
    # Near range gets most colours: the first 10 % of the horizon spans more than half the table.
    assert depth_to_index(np.array(0.1)) > 128


def test_legend_ticks_are_evenly_spaced_on_the_colour_scale() -> None:
    ticks = legend_ticks(5)
    assert ticks[0]["depth"] == 0.0 and ticks[-1]["depth"] == pytest.approx(1.0)
    indices = depth_to_index(np.array([tick["depth"] for tick in ticks])).astype(int)
    np.testing.assert_allclose(np.diff(indices), 255 / 4, atol=1.5)


def test_mismatched_grids_are_rejected() -> None:
    with pytest.raises(ValueError, match="Az, El"):
        render_panorama(np.zeros((4, 3), np.float32), np.zeros((4, 2), bool))
