"""Terminal view of what the drone sees: the forward hemisphere of the distance matrix.

Columns sweep azimuth from 90 degrees left of the heading to 90 degrees right (so the picture is
the view out of the front window), rows go from zenith (top) to nadir (bottom). Each text cell
shows two pixels with the upper-half block ``▀`` (foreground = upper pixel, background = lower
pixel) in 24-bit colour, or one character of an ASCII ramp when colour is off (dumb terminals,
logs). Near surfaces are bright; misses (nothing within the horizon) are dark blue.
"""

from __future__ import annotations

import numpy as np

ASCII_RAMP = " .:-=+*#%@"
"""Far (or miss) to near."""
UPPER_HALF = "\u2580"
RESET = "\x1b[0m"
_MISS_RGB = (10, 20, 60)


def forward_hemisphere(
    depth: np.ndarray, valid: np.ndarray, width: int, height: int
) -> tuple[np.ndarray, np.ndarray]:
    """Resample the forward half of a spherical matrix onto a ``height x width`` image.

    Args:
        depth: [Az, El] depth / horizon in [0, 1]; azimuth bin 0 is the heading, counter-clockwise.
        valid: [Az, El] bool, ray hit within the horizon.
        width: image columns (left = 90 degrees left of the heading).
        height: image rows (top = zenith).

    Returns:
        ``(depth [height, width], valid [height, width])`` by nearest-neighbour sampling.
    """
    azimuth_bins, elevation_bins = depth.shape
    angles = np.linspace(0.5 * np.pi, -0.5 * np.pi, width)  # left to right
    columns = np.rint(angles / (2.0 * np.pi) * azimuth_bins).astype(np.int64) % azimuth_bins
    rows = np.floor((1.0 - (np.arange(height) + 0.5) / height) * elevation_bins).astype(np.int64)
    rows = rows.clip(0, elevation_bins - 1)  # top = highest elevation bin
    return depth[columns][:, rows].T, valid[columns][:, rows].T


def shade_rgb(depth: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """[..., 3] uint8 colours: bright warm when near, dark blue for misses.

    ``sqrt`` spreads the near range (a few metres out of a 30 m horizon) over most of the scale.
    """
    near = 1.0 - np.sqrt(np.clip(depth, 0.0, 1.0))
    rgb = np.stack([255 * near, 230 * near**1.3, 160 * near**2.0], axis=-1)
    rgb = np.where(valid[..., None], rgb, np.asarray(_MISS_RGB, dtype=np.float64))
    return rgb.round().astype(np.uint8)


def render_depth(
    depth: np.ndarray, valid: np.ndarray, width: int, rows: int, color: bool = True
) -> list[str]:
    """Text lines showing the forward hemisphere.

    Args:
        depth: [Az, El] depth / horizon. valid: [Az, El] bool.
        width: characters per line.
        rows: lines (2 pixels each in colour mode, 1 in ASCII mode).
        color: 24-bit ANSI half-blocks (True) or an ASCII ramp (False).

    Returns:
        ``rows`` strings; colour lines end with an attribute reset.
    """
    if not color:
        image, hits = forward_hemisphere(depth, valid, width, rows)
        near = np.where(hits, 1.0 - np.sqrt(np.clip(image, 0.0, 1.0)), 0.0)
        index = np.minimum((near * len(ASCII_RAMP)).astype(np.int64), len(ASCII_RAMP) - 1)
        return ["".join(ASCII_RAMP[i] for i in line) for line in index]
    image, hits = forward_hemisphere(depth, valid, width, 2 * rows)
    rgb = shade_rgb(image, hits)  # [2*rows, width, 3]
    lines = []
    for upper, lower in zip(rgb[0::2], rgb[1::2], strict=True):
        cells = (
            f"\x1b[38;2;{a[0]};{a[1]};{a[2]}m\x1b[48;2;{b[0]};{b[1]};{b[2]}m{UPPER_HALF}"
            for a, b in zip(upper.tolist(), lower.tolist(), strict=True)
        )
        lines.append("".join(cells) + RESET)
    return lines


def status_line(
    scene: str,
    *,
    scene_number: int,
    step: int,
    max_steps: int,
    action: np.ndarray,
    pilot: str,
    extra: str = "",
) -> str:
    """One line of flight state under the view (plain text, no colour)."""
    f, v, lat, yaw = (float(x) for x in action)
    return (
        f"scene {scene_number} {scene} | step {step}/{max_steps} | {pilot} | "
        f"fwd {f:+.2f} up {v:+.2f} left {lat:+.2f} yaw {yaw:+.2f}" + (f" | {extra}" if extra else "")
    )


HELP_LINE = (
    "W/S fwd/back  A/D strafe  Q/E yaw  Space/R up  C/Z/F down  X stop  T autopilot  "
    "Esc next scene  Ctrl+C quit"
)
