"""Encoders: shapes, azimuth wrap awareness, positional encodings."""

from __future__ import annotations

from collections.abc import Callable

import torch

from navi_actor.models import PolicyConfig
from navi_actor.models.encoders import RayViTEncoder, SphericalCNNEncoder, pad_spherical
from navi_actor.models.positional import spherical_positional_encoding


def test_positional_encoding_wraps_in_azimuth() -> None:
    n_az, n_el = 32, 6
    code = spherical_positional_encoding(n_az, n_el, 64).reshape(n_az, n_el, 64)
    seam = (code[0] - code[-1]).norm()
    neighbour = (code[0] - code[1]).norm()
    opposite = (code[0] - code[n_az // 2]).norm()
    torch.testing.assert_close(seam, neighbour)  # bin 0 and bin Az-1 are neighbours
    assert opposite > 2 * neighbour
    assert (code[:, 0] - code[:, -1]).norm() > (code[:, 0] - code[:, 1]).norm()  # elevation does not wrap


def test_rayvit_caches_encoding_and_shapes() -> None:
    encoder = RayViTEncoder(PolicyConfig(visit_input=False, azimuth=64, elevation=16))
    assert encoder.grid == (8, 2)
    assert encoder.positional.shape == (1, 16, 64) and not encoder.positional.requires_grad
    assert encoder(torch.rand(3, 3, 64, 16)).shape == (3, 128)


def test_pad_spherical_wraps_azimuth_and_replicates_elevation() -> None:
    x = torch.arange(12.0).reshape(1, 1, 4, 3)  # [B, C, Az=4, El=3]
    padded = pad_spherical(x, 1)
    assert padded.shape == (1, 1, 6, 5)
    torch.testing.assert_close(padded[0, 0, 0, 1:-1], x[0, 0, -1])  # row before bin 0 is bin Az-1
    torch.testing.assert_close(padded[0, 0, -1, 1:-1], x[0, 0, 0])
    torch.testing.assert_close(padded[0, 0, 1:-1, 0], x[0, 0, :, 0])  # elevation edge replicated


def test_spherical_cnn_is_equivariant_to_azimuth_rolls() -> None:
    """Rolls by the total stride roll the feature map exactly; sector pooling keeps the heading."""
    torch.manual_seed(0)
    encoder = SphericalCNNEncoder(
        PolicyConfig(visit_input=False, encoder_backend="spherical_cnn", azimuth=128, elevation=16)
    )
    obs = torch.rand(2, 3, 128, 16)
    stride = SphericalCNNEncoder.total_stride  # 16 bins = one of the 8 sectors at Az=128
    rolled = torch.roll(obs, shifts=stride, dims=2)
    features, rolled_features = encoder.feature_map(obs), encoder.feature_map(rolled)
    torch.testing.assert_close(torch.roll(features, shifts=1, dims=2), rolled_features)
    sectors = encoder.pool_sectors(features)
    torch.testing.assert_close(torch.roll(sectors, shifts=1, dims=2), encoder.pool_sectors(rolled_features))
    # Heading-aware: an obstacle ahead and the same obstacle behind give different embeddings.
    ahead = torch.zeros(1, 3, 128, 16)
    ahead[:, 0, :16] = 1.0
    behind = torch.roll(ahead, shifts=64, dims=2)
    assert not torch.allclose(encoder(ahead), encoder(behind), atol=1e-3)
    upper = torch.zeros(1, 3, 128, 16)
    upper[:, 0, :, :6] = 1.0  # something above the drone ...
    lower = torch.flip(upper, dims=[3])  # ... versus below it: elevation is not a symmetry
    assert not torch.allclose(encoder(upper), encoder(lower), atol=1e-3)


def test_rayvit_last_layer_shortcut_equals_full_layer() -> None:
    """Computing only the [CLS] row of a layer gives exactly that row of the full layer."""
    torch.manual_seed(0)
    encoder = RayViTEncoder(
        PolicyConfig(visit_input=False, azimuth=64, elevation=16, vit_readout="cls", vit_layers=2)
    )
    tokens = torch.randn(3, 17, 64)
    block = encoder.blocks[-1]
    torch.testing.assert_close(block(tokens, first_only=True), block(tokens)[:, :1], atol=1e-5, rtol=1e-5)


def test_rayvit_sector_readout_shapes_and_has_no_cls_token() -> None:
    encoder = RayViTEncoder(PolicyConfig(visit_input=False, azimuth=64, elevation=16, vit_readout="sectors"))
    assert encoder.cls_token is None
    assert encoder.project.in_features == 64 * 8 * 2  # vit_dim x (8 azimuth sectors x 2 bands)
    assert encoder(torch.rand(3, 3, 64, 16)).shape == (3, 128)


def test_rayvit_sector_readout_keeps_where_things_are() -> None:
    """An obstacle ahead, behind, above or below: four different embeddings, each far apart.

    Why: the sector means exist so that where a wall is reaches the heads from the first step; the
    same wall in another sector must move the embedding by far more than float noise.
    """
    torch.manual_seed(0)
    encoder = RayViTEncoder(PolicyConfig(visit_input=False, azimuth=64, elevation=16, vit_readout="sectors"))
    ahead = torch.zeros(1, 3, 64, 16)
    ahead[:, 0, :8] = 1.0
    behind = torch.roll(ahead, shifts=32, dims=2)
    upper = torch.zeros(1, 3, 64, 16)
    upper[:, 0, :, :8] = 1.0
    lower = torch.flip(upper, dims=[3])
    embeddings = encoder(torch.cat([ahead, behind, upper, lower]))
    gaps = torch.cdist(embeddings, embeddings)
    assert bool((gaps + torch.eye(4) * 1e3 > 0.1).all())


def test_rayvit_sector_readout_pools_the_last_layer_over_the_sector_grid() -> None:
    """The readout is the sector means of the normalised last-layer tokens, projected (no [CLS])."""
    torch.manual_seed(0)
    encoder = RayViTEncoder(PolicyConfig(visit_input=False, azimuth=64, elevation=16, vit_readout="sectors"))
    obs = torch.rand(2, 3, 64, 16)
    tokens = encoder.patch_embed(obs).flatten(2).transpose(1, 2) + encoder.positional
    for block in encoder.blocks:
        tokens = block(tokens)
    grid = encoder.norm_out(tokens).reshape(2, 8, 2, 64)  # row-major (azimuth, elevation) tokens
    sectors = grid.permute(0, 3, 1, 2)  # [B, D, 8 az sectors, 2 bands]: at this size one token each
    expected = encoder.norm_embed(encoder.project(sectors.flatten(1)))
    torch.testing.assert_close(encoder(obs), expected)


def test_rayvit_tokens_enter_the_layers_contiguous_with_the_same_values_and_gradients() -> None:
    """The patch tokens are copied token-major once so the layer norms copy nothing; the encoding
    and every parameter's gradient equal, bit for bit, those of the tokens left transposed."""
    torch.manual_seed(0)
    encoder = RayViTEncoder(PolicyConfig(visit_input=False, azimuth=64, elevation=16, vit_readout="sectors"))
    obs = torch.rand(4, 3, 64, 16)
    layouts: list[bool] = []
    encoder.blocks[0].register_forward_pre_hook(lambda _, args: layouts.append(args[0].is_contiguous()))

    def transposed_reference() -> torch.Tensor:
        tokens = encoder.patch_embed(obs).flatten(2).transpose(1, 2) + encoder.positional
        for block in encoder.blocks:
            tokens = block(tokens)
        grid = encoder.norm_out(tokens).transpose(1, 2).unflatten(2, encoder.grid)
        pooled = torch.nn.functional.adaptive_avg_pool2d(grid, (8, 2)).flatten(1)
        return encoder.norm_embed(encoder.project(pooled))

    def encoding_and_gradients(encode: Callable[[], torch.Tensor]) -> tuple[torch.Tensor, list[torch.Tensor]]:
        encoder.zero_grad(set_to_none=True)
        encoding = encode()
        encoding.square().sum().backward()
        return encoding.detach(), [parameter.grad.clone() for parameter in encoder.parameters()]

    encoding, gradients = encoding_and_gradients(lambda: encoder(obs))
    assert layouts[0] is True
    reference, reference_gradients = encoding_and_gradients(transposed_reference)
    assert layouts[1] is False  # the reference really fed the layers transposed tokens
    assert torch.equal(encoding, reference)
    assert all(torch.equal(a, b) for a, b in zip(gradients, reference_gradients, strict=True))
