"""Means of the Ray-ViT's patch tokens over the sector grid, without a pooling layer's copies.

Why: the sector readout averaged the tokens with ``adaptive_avg_pool2d`` on their transposed view
(``[B, D, Az/p, El/p]``, channels-last in memory). Its backward zero-filled an input-sized gradient,
converted layouts and left a gradient the final layer norm's backward copied again: 3-4 passes
over the ``[B, L, D]`` tokens and 60-90 ms of a default PPO update's 3 s of operators. When the
token grid splits evenly into the sectors (the default: 32 x 6 tokens, 8 x 2 sectors of 4 x 3),
:func:`token_sector_means` sums each sector's tokens in the pooling kernel's order (azimuth outer,
elevation inner) and divides once, as that kernel does for this layout; its backward spreads the
gradient divided by each window side in turn, as the pooling backward does. Forward and gradients
are equal to the CPU pooling's bit for bit (``test_sector_means.py``), so trained checkpoints and
recorded results keep their values. Other grids (a sector wider than the grid, or uneven windows)
use the pooling itself.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as nnf


class _EvenSectorMeans(torch.autograd.Function):
    """``[B, sA*wA*sE*wE, D]`` row-major (azimuth, elevation) tokens -> ``[B, sA, sE, D]`` means."""

    @staticmethod
    def forward(
        ctx: Any, tokens: torch.Tensor, sectors: tuple[int, int], window: tuple[int, int]
    ) -> torch.Tensor:
        (sectors_az, sectors_el), (window_az, window_el) = sectors, window
        ctx.shape, ctx.sectors, ctx.window = tokens.shape, sectors, window
        grid = tokens.unflatten(1, (sectors_az, window_az, sectors_el, window_el))
        total = grid[:, :, 0, :, 0].clone()
        for az in range(window_az):  # the pooling kernel's order: azimuth outer, elevation inner
            for el in range(window_el):
                if az or el:
                    total += grid[:, :, az, :, el]
        return total.div_(window_az * window_el)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        (sectors_az, sectors_el), (window_az, window_el) = ctx.sectors, ctx.window
        spread = (grad / window_az / window_el)[:, :, None, :, None]  # [B, sA, 1, sE, 1, D]
        batch, _, dim = ctx.shape
        expanded = spread.expand(batch, sectors_az, window_az, sectors_el, window_el, dim)
        return expanded.reshape(ctx.shape), None, None


def token_sector_means(tokens: torch.Tensor, grid: tuple[int, int], sectors: tuple[int, int]) -> torch.Tensor:
    """Sector means of ``tokens [B, gA*gE, D]`` (row-major over the ``grid`` (gA, gE)) as
    ``[B, D * sA * sE]``, flattened channel-major like ``adaptive_avg_pool2d(...).flatten(1)``.

    Args:
        tokens: the patch tokens, contiguous, row-major (azimuth, elevation).
        grid: (azimuth, elevation) tokens.
        sectors: (azimuth sectors, elevation bands).
    """
    (grid_az, grid_el), (sectors_az, sectors_el) = grid, sectors
    if grid_az % sectors_az or grid_el % sectors_el or not tokens.is_contiguous():
        pooled = nnf.adaptive_avg_pool2d(tokens.transpose(1, 2).unflatten(2, grid), sectors)
        return pooled.flatten(1)
    window = (grid_az // sectors_az, grid_el // sectors_el)
    means = _EvenSectorMeans.apply(tokens, sectors, window)  # [B, sA, sE, D]
    return means.permute(0, 3, 1, 2).flatten(1)
