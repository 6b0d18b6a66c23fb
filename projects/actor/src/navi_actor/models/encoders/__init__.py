"""Observation encoders: ``[B, C, Az, El]`` -> ``[B, embed_dim]``."""

from __future__ import annotations

from torch import nn

from navi_actor.models.config import PolicyConfig
from navi_actor.models.encoders.rayvit import RayViTEncoder
from navi_actor.models.encoders.spherical_cnn import SphericalCNNEncoder, pad_spherical


def build_encoder(cfg: PolicyConfig) -> nn.Module:
    """Return the encoder selected by ``cfg.encoder_backend``."""
    if cfg.encoder_backend == "rayvit":
        return RayViTEncoder(cfg)
    return SphericalCNNEncoder(cfg)


__all__ = ["RayViTEncoder", "SphericalCNNEncoder", "build_encoder", "pad_spherical"]
