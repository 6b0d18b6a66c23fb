"""Spherical CNN: depthwise-separable convolutions that wrap around in azimuth.

Why circular padding: azimuth bin 0 and bin ``Az-1`` look in neighbouring directions, so a wall
straddling the seam must look the same as anywhere else. Every convolution pads azimuth
circularly and elevation by replication (the poles are not neighbours of each other). With
strides that divide the roll, the feature maps are exactly equivariant to azimuth rolls and the
pooled sector grid rolls with them. No BatchNorm: the function must not depend on the batch.

Pooling: a fully global pool would be invariant to azimuth rolls, i.e. the policy could not tell
an obstacle ahead from one behind, and nearly blind to up versus down. So the "global" pooling is a
global max plus means over a coarse sector grid (8 azimuth sectors x 2 elevation bands, sector 0
centred-ish on the heading): every position contributes, but direction survives.
"""

from __future__ import annotations

import torch
import torch.nn.functional as nnf
from torch import nn

from navi_actor.models.config import PolicyConfig


def pad_spherical(x: torch.Tensor, pad: int) -> torch.Tensor:
    """Pad ``[B, C, Az, El]`` by ``pad`` cells: circular in azimuth, replicate in elevation."""
    if pad == 0:
        return x
    x = nnf.pad(x, (0, 0, pad, pad), mode="circular")  # azimuth (dim -2) wraps around
    return nnf.pad(x, (pad, pad, 0, 0), mode="replicate")  # elevation (dim -1) clamps at the poles


class SphericalSeparableBlock(nn.Module):
    """Depthwise 3x3 (circular azimuth) -> GELU -> pointwise 1x1 -> GELU."""

    def __init__(self, in_channels: int, out_channels: int, stride: int) -> None:
        super().__init__()
        self.depthwise = nn.Conv2d(in_channels, in_channels, 3, stride=stride, groups=in_channels)
        self.pointwise = nn.Conv2d(in_channels, out_channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map ``[B, Cin, Az, El]`` to ``[B, Cout, Az/stride, El/stride]``."""
        x = nnf.gelu(self.depthwise(pad_spherical(x, 1)))
        return nnf.gelu(self.pointwise(x))


class SphericalCNNEncoder(nn.Module):
    """Encode ``[B, C, Az, El]`` into ``[B, embed_dim]`` with mean+max global pooling."""

    #: product of all strides; azimuth rolls by multiples of this are exact symmetries.
    total_stride = 16
    #: pooled sector grid (azimuth sectors, elevation bands).
    sectors = (8, 2)

    def __init__(self, cfg: PolicyConfig) -> None:
        super().__init__()
        width = cfg.cnn_width
        # Patchify stem (4x4, stride 4, no overlap, so no padding needed): the full-resolution stage
        # would dominate CPU time (memory-bound depthwise passes on 256x48 maps) for little gain.
        self.stem = nn.Conv2d(cfg.in_channels, width, kernel_size=4, stride=4)
        self.blocks = nn.Sequential(
            SphericalSeparableBlock(width, width, stride=1),
            SphericalSeparableBlock(width, 2 * width, stride=2),
            SphericalSeparableBlock(2 * width, 4 * width, stride=2),
            SphericalSeparableBlock(4 * width, 4 * width, stride=1),
        )
        channels = 4 * width
        self.project = nn.Linear(channels * (1 + self.sectors[0] * self.sectors[1]), cfg.embed_dim)
        self.norm_embed = nn.LayerNorm(cfg.embed_dim)
        for module in self.modules():
            if isinstance(module, nn.Conv2d):  # He init: keep the signal alive through GELU stacks
                nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
                if module.bias is not None:
                    nn.init.zeros_(module.bias)

    def feature_map(self, obs: torch.Tensor) -> torch.Tensor:
        """Feature map before pooling: ``[B, C, Az, El]`` -> ``[B, 4*width, Az/16, El']``."""
        return self.blocks(nnf.gelu(self.stem(obs)))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Encode a batch of observations.

        Args:
            obs: ``[B, C, Az, El]`` float observations.

        Returns:
            ``[B, embed_dim]`` embeddings.
        """
        features = self.feature_map(obs)  # [B, C', Az', El']
        sector_means = self.pool_sectors(features).flatten(1)  # [B, C'*8*2]
        global_max = features.amax(dim=(-2, -1))  # [B, C']
        return self.norm_embed(self.project(torch.cat([sector_means, global_max], dim=-1)))

    def pool_sectors(self, features: torch.Tensor) -> torch.Tensor:
        """Mean over the sector grid: ``[B, C', Az', El']`` -> ``[B, C', 8, 2]``."""
        return nnf.adaptive_avg_pool2d(features, self.sectors)
