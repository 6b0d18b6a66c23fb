"""The Ray-ViT's sector means equal ``adaptive_avg_pool2d`` on the tokens' transposed view, bit for
bit, values and gradients: the readout trained checkpoints and recorded results were made with."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as nnf

from navi_actor.models.encoders.sector_means import token_sector_means


def pooled_reference(tokens: torch.Tensor, grid: tuple[int, int], sectors: tuple[int, int]) -> torch.Tensor:
    """The readout as it was: the pooling layer on the channels-last view of the tokens."""
    return nnf.adaptive_avg_pool2d(tokens.transpose(1, 2).unflatten(2, grid), sectors).flatten(1)


def values_and_gradient(read, tokens: torch.Tensor, upstream: torch.Tensor):  # type: ignore[no-untyped-def]
    leaf = tokens.clone().requires_grad_(True)
    out = read(leaf)
    out.backward(upstream)
    return out.detach(), leaf.grad


@pytest.mark.parametrize(
    ("grid", "sectors"),
    [((32, 6), (8, 2)), ((16, 6), (8, 2)), ((24, 9), (8, 3)), ((40, 10), (8, 2)), ((8, 2), (8, 2)),
     ((4, 1), (8, 2)), ((20, 6), (8, 2))],
)  # fmt: skip
@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_sector_means_equal_the_pooling_bit_for_bit(
    grid: tuple[int, int], sectors: tuple[int, int], scale: float
) -> None:
    """Even windows (the default 4 x 3 among them, and 3 x 3, 5 x 5 where dividing once and dividing
    by each side differ) go through the summing path; uneven ones through the pooling itself."""
    generator = torch.Generator().manual_seed(grid[0] * 100 + grid[1])
    tokens = torch.randn(5, grid[0] * grid[1], 16, generator=generator) * scale + 0.3 * scale
    upstream = torch.randn(5, 16 * sectors[0] * sectors[1], generator=generator)
    means, gradient = values_and_gradient(lambda t: token_sector_means(t, grid, sectors), tokens, upstream)
    expected, expected_gradient = values_and_gradient(
        lambda t: pooled_reference(t, grid, sectors), tokens, upstream
    )
    assert torch.equal(means, expected)
    assert torch.equal(gradient, expected_gradient) and gradient.is_contiguous()


def test_sector_means_average_each_sector_and_run_without_gradients() -> None:
    """Known values: sector (a, e) of a 4 x 4 grid in 2 x 2 sectors averages its four tokens; the
    acting path calls it under no_grad."""
    tokens = torch.arange(16.0).reshape(1, 16, 1)  # token (az, el) holds 4 * az + el
    with torch.no_grad():
        means = token_sector_means(tokens, (4, 4), (2, 2))
    assert means.tolist() == [[2.5, 4.5, 10.5, 12.5]]
