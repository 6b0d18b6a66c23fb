"""IEEE 754 binary16 ("half float") encoding of signed distances for GMDAG leaves.

Why a module of its own: a hand-rolled encoder is an easy place to turn 0.0 into infinity, flush
subnormals or wrap large values. Here the bit pattern comes from numpy's float16 cast (IEEE
round-to-nearest-even, exact for ±0.0 and subnormals); our only additions are the clamp to the
largest finite half (±65504 m, so a leaf is never ±inf) and a hard error on NaN input.
"""

from __future__ import annotations

import numpy as np

HALF_MAX = 65504.0
"""Largest finite half float; distances beyond it are clamped to it (never encoded as inf)."""

_EXPONENT_BITS = 0x7C00


def float32_to_half_bits(values: np.ndarray) -> np.ndarray:
    """Encode float distances as IEEE half-float bit patterns.

    Args:
        values: float array of any shape (metres). Must not contain NaN.

    Returns:
        uint16 array of the same shape: the binary16 bits, round-to-nearest-even; ±0.0 keep their
        IEEE patterns (0x0000 / 0x8000), subnormals are kept, |x| > 65504 (including ±inf) is
        clamped to ±65504.

    Raises:
        ValueError: if ``values`` contains NaN (a distance field with NaN is a compiler bug).
    """
    array = np.asarray(values, dtype=np.float32)
    if np.isnan(array).any():
        raise ValueError("cannot encode NaN as a half-float distance")
    clamped = np.clip(array, np.float32(-HALF_MAX), np.float32(HALF_MAX))
    return clamped.astype(np.float16).view(np.uint16)


def half_bits_to_float32(bits: np.ndarray) -> np.ndarray:
    """Decode binary16 bit patterns (uint16, any shape) to float32 values (same shape)."""
    return np.asarray(bits, dtype=np.uint16).view(np.float16).astype(np.float32)


def half_bits_are_finite(bits: np.ndarray) -> np.ndarray:
    """True where a binary16 bit pattern is finite (exponent field not all ones)."""
    return (np.asarray(bits, dtype=np.uint16) & np.uint16(_EXPONENT_BITS)) != np.uint16(_EXPONENT_BITS)


HALF_DECODE_TABLE: np.ndarray = half_bits_to_float32(np.arange(65536, dtype=np.uint32).astype(np.uint16))
"""float32[65536]: value of every half bit pattern, for compiled kernels that cannot cast float16."""
