"""Turn one drone's spherical observation into a panorama image (shared by the dashboard and Gymnasium).

The panorama is equirectangular: columns are azimuth, rows are elevation. It is rolled so that the
drone's heading (azimuth bin 0) sits in the centre column; the forward hemisphere is then simply the
middle half of the columns, which the page crops and enlarges without a second image.

Depth arrives normalised by the horizon to [0, 1]. Indoor scenes live in the first few percent of a
100 m horizon, so the colour index uses a logarithmic scale (``DEPTH_LOG_GAIN``) that spends most
colours on near range. Near is hot (red), far is cold (blue). Cells without a hit inside the horizon
(valid mask 0, or a non-finite depth) are drawn as a grey checkerboard no colour map entry uses.

Why here, in navi-common: the dashboard draws it, and ``navi_environment``'s Gymnasium adapter returns the
same image from ``render()`` (``render_mode="rgb_array"``); the environment must not import the
dashboard. numpy only.
"""

from __future__ import annotations

import numpy as np

DEPTH_LOG_GAIN = 200.0
INVALID_DARK = (38, 38, 42)
INVALID_LIGHT = (78, 78, 86)

# Turbo colour map, polynomial fit by A. Mikhailov (Google, 2019), coefficients low order first.
_TURBO_R = (0.13572138, 4.61539260, -42.66032258, 132.13108234, -152.94239396, 59.28637943)
_TURBO_G = (0.09140261, 2.19418839, 4.84296658, -14.18503333, 4.27729857, 2.82956604)
_TURBO_B = (0.10667330, 12.64194608, -60.58204836, 110.36276771, -89.90310912, 27.34824973)


def _turbo_lut() -> np.ndarray:
    """256-entry uint8 turbo table, index 0 = near (red) ... 255 = far (blue); shape (256, 3)."""
    x = np.linspace(1.0, 0.0, 256)  # reversed: near depth maps to the hot end
    channels = [np.polynomial.polynomial.polyval(x, coeffs) for coeffs in (_TURBO_R, _TURBO_G, _TURBO_B)]
    return (np.clip(np.stack(channels, axis=1), 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)


DEPTH_LUT = _turbo_lut()


def depth_to_index(depth: np.ndarray) -> np.ndarray:
    """Map normalised depth to a colour-table index on the logarithmic display scale.

    Args:
        depth: float array of any shape, values in [0, 1] (clipped; NaN maps to 255).

    Returns:
        uint8 array of the same shape, 0 = touching, 255 = at the horizon.
    """
    clipped = np.clip(np.nan_to_num(depth, nan=1.0, posinf=1.0, neginf=0.0), 0.0, 1.0)
    scaled = np.log1p(DEPTH_LOG_GAIN * clipped) / np.log1p(DEPTH_LOG_GAIN)
    return (scaled * 255.0 + 0.5).astype(np.uint8)


def render_panorama(depth: np.ndarray, valid: np.ndarray, nadir_first: bool = True) -> np.ndarray:
    """Render one drone's depth and valid mask as a heading-centred RGB panorama.

    Args:
        depth: (Az, El) normalised depth in [0, 1]; azimuth bin 0 along the heading, bins increasing
            counter-clockwise seen from above (towards the drone's left), as the environment's
            sensor lays them out.
        valid: (Az, El) hit mask (bool, or numbers where non-zero means a hit).
        nadir_first: True when elevation bin 0 is the lowest ring (the sensor's layout: bin ``e``
            at ``-pi/2 + pi*(e+0.5)/El``); False when bin 0 looks up.

    Returns:
        uint8 image of shape (El, Az, 3): heading in column Az // 2, the drone's left on the image
        left, up at the top.

    Raises:
        ValueError: the two arrays are not matching 2-D grids.
    """
    if depth.ndim != 2 or depth.shape != valid.shape:
        raise ValueError(f"depth {depth.shape} and valid {valid.shape} must be equal (Az, El) grids")
    azimuth_bins, elevation_bins = depth.shape
    # Columns run left -> right, i.e. decreasing azimuth; the centre column is azimuth bin 0.
    columns = (azimuth_bins // 2 - np.arange(azimuth_bins)) % azimuth_bins
    rows = np.arange(elevation_bins)[::-1] if nadir_first else np.arange(elevation_bins)  # top row = up
    depth_image = depth[columns][:, rows].T  # [Az, El] -> [El, Az]
    valid_image = (valid[columns][:, rows].T != 0) & np.isfinite(depth_image)
    image = DEPTH_LUT[depth_to_index(depth_image)]  # [El, Az, 3]
    checker = (np.add.outer(np.arange(elevation_bins), np.arange(azimuth_bins)) & 1).astype(bool)
    invalid_colours = np.where(checker[..., None], INVALID_LIGHT, INVALID_DARK).astype(np.uint8)
    return np.where(valid_image[..., None], image, invalid_colours)
