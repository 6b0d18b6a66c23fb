"""Fixed spherical positional encodings for azimuth x elevation patch grids.

Azimuth is periodic: bin 0 and bin ``Az-1`` are physical neighbours. Encoding the azimuth angle
with sin/cos of *integer* harmonics makes the code exactly periodic, so the encoding distance
between the first and last column equals the distance between any two adjacent columns.
Elevation spans the sphere minus the poles and is not periodic; it gets sin/cos harmonics of the
polar angle.
"""

from __future__ import annotations

import math

import torch


def spherical_positional_encoding(n_azimuth: int, n_elevation: int, dim: int) -> torch.Tensor:
    """Build the encoding of an ``n_azimuth x n_elevation`` grid of cell centres.

    Args:
        n_azimuth: Number of azimuth cells (wraps around).
        n_elevation: Number of elevation cells (pole to pole, poles excluded).
        dim: Encoding width; a multiple of 4 (half azimuth, half elevation, sin and cos each).

    Returns:
        Tensor ``[n_azimuth * n_elevation, dim]``, row-major over (azimuth, elevation), float32.
    """
    if dim % 4:
        raise ValueError(f"positional encoding width must be a multiple of 4, got {dim}")
    quarter = dim // 4
    # Integer azimuth harmonics keep the code exactly periodic; capping them at a quarter of the grid
    # keeps neighbouring cells close in code space (high harmonics would alias between cells).
    az_harmonics = torch.logspace(0.0, math.log10(max(1.0, n_azimuth / 4)), quarter, dtype=torch.float64)
    az_harmonics = az_harmonics.round()  # [Q]
    el_harmonics = torch.logspace(0.0, math.log10(max(1.0, n_elevation / 2)), quarter, dtype=torch.float64)
    azimuth = 2.0 * math.pi * (torch.arange(n_azimuth, dtype=torch.float64) + 0.5) / n_azimuth  # [A]
    polar = math.pi * (torch.arange(n_elevation, dtype=torch.float64) + 0.5) / n_elevation  # [E]
    az_angles = azimuth[:, None] * az_harmonics[None, :]  # [A, Q]
    el_angles = polar[:, None] * el_harmonics[None, :]  # [E, Q]
    az_code = torch.cat([az_angles.sin(), az_angles.cos()], dim=-1)  # [A, 2Q]
    el_code = torch.cat([el_angles.sin(), el_angles.cos()], dim=-1)  # [E, 2Q]
    grid = torch.cat(
        [
            az_code[:, None, :].expand(n_azimuth, n_elevation, 2 * quarter),
            el_code[None, :, :].expand(n_azimuth, n_elevation, 2 * quarter),
        ],
        dim=-1,
    )  # [A, E, dim]
    return grid.reshape(n_azimuth * n_elevation, dim).to(torch.float32)
