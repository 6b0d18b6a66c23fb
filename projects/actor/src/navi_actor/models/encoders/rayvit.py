"""RayViT: a small pre-norm vision transformer over spherical depth patches.

Why this shape: an 8x8 patch projection turns the 256x48 distance matrix into 32x6 = 192 tokens,
few enough for full attention on two CPU cores. Attention lets a distant opening on one side of
the sphere influence the embedding directly. There is no dropout and no batch statistics, so the
function is identical in train and eval mode (acting and learning see the same network).

Two readouts (``vit_readout``): the patch tokens averaged over the spherical CNN's sector grid (8
azimuth sectors x 2 elevation bands; the default since 2026-11-30, with one layer), or a learned
[CLS] token (the default before, with two layers). Why the sectors exist:
at initialisation attention is nearly uniform, so the [CLS] token sees the average of 192 tokens and
the frames of a flight move its embedding by about a tenth of what they move the CNN's; in behaviour
cloning it could then sit at the constant action or grow until the frames moved it by 1e-4, a
constant embedding no gradient revived (docs/experiments/2026-11-faster-frontier-planner.md). Sector
means keep where things are from the first step.
"""

from __future__ import annotations

import torch
import torch.nn.functional as nnf
from torch import nn

from navi_actor.models.config import PolicyConfig
from navi_actor.models.encoders.sector_means import token_sector_means
from navi_actor.models.encoders.spherical_cnn import SphericalCNNEncoder
from navi_actor.models.positional import spherical_positional_encoding

#: the sector readout's grid (azimuth sectors, elevation bands): the spherical CNN's, one rule.
SECTORS = SphericalCNNEncoder.sectors


class PreNormBlock(nn.Module):
    """One transformer layer: ``x + MHA(LN(x))`` then ``x + MLP(LN(x))``."""

    def __init__(self, dim: int, heads: int, mlp_ratio: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm_attn = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.attn_out = nn.Linear(dim, dim)
        self.norm_mlp = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp_ratio * dim), nn.GELU(), nn.Linear(mlp_ratio * dim, dim))

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        """``[B, L, dim]`` -> ``[B, H, L, dh]``."""
        return x.unflatten(-1, (self.heads, -1)).transpose(1, 2)

    def forward(self, tokens: torch.Tensor, first_only: bool = False) -> torch.Tensor:
        """Apply the layer.

        Args:
            tokens: ``[B, L, dim]``.
            first_only: Compute only the output of token 0 ([CLS]); it attends to all tokens as
                usual. Used for the last layer, whose other outputs nobody reads: same function,
                a fraction of the cost (one query instead of L, one MLP row instead of L).

        Returns:
            ``[B, L, dim]``, or ``[B, 1, dim]`` when ``first_only``.
        """
        dim = tokens.shape[-1]
        normed = self.norm_attn(tokens)
        weight, bias = self.qkv.weight, self.qkv.bias
        queries = normed[:, :1] if first_only else normed
        query = nnf.linear(queries, weight[:dim], bias[:dim])  # [B, Lq, dim]
        key, value = nnf.linear(normed, weight[dim:], bias[dim:]).chunk(2, dim=-1)  # [B, L, dim] each
        attended = nnf.scaled_dot_product_attention(self._heads(query), self._heads(key), self._heads(value))
        attended = attended.transpose(1, 2).flatten(2)  # [B, H, Lq, dh] -> [B, Lq, dim]
        tokens = (tokens[:, :1] if first_only else tokens) + self.attn_out(attended)
        return tokens + self.mlp(self.norm_mlp(tokens))


class RayViTEncoder(nn.Module):
    """Encode ``[B, C, Az, El]`` spherical observations into ``[B, embed_dim]``.

    Read from a [CLS] token (``vit_readout="cls"``) or from the patch tokens' sector means
    (``"sectors"``, the grid of :class:`~navi_actor.models.encoders.SphericalCNNEncoder`).
    """

    def __init__(self, cfg: PolicyConfig) -> None:
        super().__init__()
        patch = cfg.patch_size
        self.grid = (cfg.azimuth // patch, cfg.elevation // patch)
        self.patch_embed = nn.Conv2d(cfg.in_channels, cfg.vit_dim, kernel_size=patch, stride=patch)
        self.cls_token: nn.Parameter | None = None
        if cfg.vit_readout == "cls":
            self.cls_token = nn.Parameter(torch.zeros(1, 1, cfg.vit_dim))
            nn.init.normal_(self.cls_token, std=0.02)
        # Cached once: fixed sin/cos codes, moved with the module by .to(device), not trained.
        self.register_buffer(
            "positional", spherical_positional_encoding(*self.grid, cfg.vit_dim)[None], persistent=False
        )
        self.blocks = nn.ModuleList(
            PreNormBlock(cfg.vit_dim, cfg.vit_heads, cfg.vit_mlp_ratio) for _ in range(cfg.vit_layers)
        )
        self.norm_out = nn.LayerNorm(cfg.vit_dim)
        readout = cfg.vit_dim if self.cls_token is not None else cfg.vit_dim * SECTORS[0] * SECTORS[1]
        self.project = nn.Linear(readout, cfg.embed_dim)
        self.norm_embed = nn.LayerNorm(cfg.embed_dim)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Encode a batch of observations.

        Args:
            obs: ``[B, C, Az, El]`` float observations.

        Returns:
            ``[B, embed_dim]`` embeddings.
        """
        patches = self.patch_embed(obs)  # [B, D, Az/p, El/p]
        tokens = patches.flatten(2).transpose(1, 2)  # -> [B, (Az/p)*(El/p), D], row-major (az, el)
        # One copy to a token-major layout here: left transposed, every layer norm (and its backward)
        # copied the tokens to contiguous memory again; the values are the same bit for bit.
        tokens = tokens.contiguous() + self.positional
        if self.cls_token is None:  # sector readout: every layer in full, then the sector grid's means
            for block in self.blocks:
                tokens = block(tokens)
            sector_means = token_sector_means(self.norm_out(tokens), self.grid, SECTORS)  # [B, D*8*2]
            return self.norm_embed(self.project(sector_means))
        cls = self.cls_token.expand(tokens.shape[0], -1, -1)
        tokens = torch.cat([cls, tokens], dim=1)  # [B, 1 + L, D]
        last = len(self.blocks) - 1
        for index, block in enumerate(self.blocks):
            tokens = block(tokens, first_only=index == last)  # last layer: [CLS] row only
        return self.norm_embed(self.project(self.norm_out(tokens[:, 0])))
