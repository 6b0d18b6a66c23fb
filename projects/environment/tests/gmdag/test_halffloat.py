"""Half-float distance encoding: zero, subnormals, clamping, NaN rejection, round trip."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from navi_environment.gmdag.halffloat import (
    HALF_DECODE_TABLE,
    HALF_MAX,
    float32_to_half_bits,
    half_bits_are_finite,
    half_bits_to_float32,
)


def test_zero_and_negative_zero_encode_to_zero_never_infinity() -> None:
    bits = float32_to_half_bits(np.array([0.0, -0.0], dtype=np.float32))
    assert bits.tolist() == [0x0000, 0x8000]
    decoded = half_bits_to_float32(bits)
    assert decoded.tolist() == [0.0, 0.0]
    assert np.isfinite(decoded).all()


def test_subnormals_are_kept() -> None:
    smallest = np.float32(2.0**-24)
    largest_subnormal = np.float32(2.0**-14 - 2.0**-24)
    bits = float32_to_half_bits(
        np.array([smallest, largest_subnormal, -smallest, 2.0**-26], dtype=np.float32)
    )
    assert bits.tolist() == [0x0001, 0x03FF, 0x8001, 0x0000]
    assert half_bits_to_float32(bits[:3]).tolist() == [smallest, largest_subnormal, -smallest]


def test_out_of_range_values_clamp_to_largest_finite() -> None:
    values = np.array([1e6, -1e6, np.inf, -np.inf, 65504.0, 65519.0], dtype=np.float32)
    bits = float32_to_half_bits(values)
    assert bits.tolist() == [0x7BFF, 0xFBFF, 0x7BFF, 0xFBFF, 0x7BFF, 0x7BFF]
    assert half_bits_are_finite(bits).all()
    assert half_bits_to_float32(bits).tolist() == [
        HALF_MAX,
        -HALF_MAX,
        HALF_MAX,
        -HALF_MAX,
        HALF_MAX,
        HALF_MAX,
    ]


def test_nan_is_rejected() -> None:
    with pytest.raises(ValueError, match="NaN"):
        float32_to_half_bits(np.array([1.0, np.nan], dtype=np.float32))


def test_known_values_and_rounding_to_nearest_even() -> None:
    bits = float32_to_half_bits(
        np.array([1.0, -2.0, 0.5, 1.0 + 2.0**-11, 1.0 + 3 * 2.0**-11], dtype=np.float32)
    )
    # 1 + 2^-11 is a tie between 1.0 and 1 + 2^-10: even mantissa (1.0) wins; 1 + 3*2^-11 rounds up.
    assert bits.tolist() == [0x3C00, 0xC000, 0x3800, 0x3C00, 0x3C02]


def test_decode_table_matches_decoder_and_flags_specials() -> None:
    every = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    finite = half_bits_are_finite(every)
    np.testing.assert_array_equal(HALF_DECODE_TABLE[finite], half_bits_to_float32(every[finite]))
    assert int((~finite).sum()) == 2 * 1024  # ±inf and the NaN payloads
    assert not half_bits_are_finite(np.array([0x7C00, 0xFC00, 0x7E00], dtype=np.uint16)).any()


@given(st.floats(min_value=-HALF_MAX, max_value=HALF_MAX, allow_nan=False, width=32))
def test_round_trip_error_is_within_half_an_ulp(value: float) -> None:
    decoded = float(half_bits_to_float32(float32_to_half_bits(np.array([value], dtype=np.float32)))[0])
    assert np.isfinite(decoded)
    assert decoded == 0.0 or np.sign(decoded) == np.sign(value)
    # binary16: 11 significant bits; subnormal spacing 2^-24.
    assert abs(decoded - value) <= max(abs(value) * 2.0**-11, 2.0**-25)
