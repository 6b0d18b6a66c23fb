"""Layout plans (encoder) and direct decoders (decoder) give exactly what the generic code gives.

* A plan's payload is byte for byte the generic writer's, for every model and for later models of
  the same layout with other values; models a plan cannot serve fall back and still round-trip.
* A direct decoder (compiled once a layout decoded twice through its template) accepts and refuses
  exactly what the slow path does, with the value-check kernel ready and while it is not.
* The kernel's rules only accept values the array specs accept.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from navi_contracts import DistanceMatrix, WireModel, codec_template, decode, encode, fast_checks
from navi_contracts import testing as strategies
from navi_contracts.codec_common import default_limits, write_model
from navi_contracts.codec_pieces import PieceWriter
from navi_contracts.codec_template import Bin, Map, Node, Number
from navi_contracts.codec_testing import assert_paths_agree
from navi_contracts.fast_encode import encode_by_plan
from navi_contracts.samples import sample_action, sample_distance_matrix, sample_step_result

FLOAT_VALUES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.0000001, -1.0000001, 2.0, 1e-45, -1e-45, 3e38,
                math.nan, -math.nan, math.inf, -math.inf]  # fmt: skip
LARGE_BASES: list[WireModel] = [
    sample_distance_matrix(batch=2, azimuth=16, elevation=32, seed=5),
    sample_distance_matrix(batch=3, azimuth=16, elevation=24, seed=7, with_delta=False),
    sample_step_result(batch=2, azimuth=16, elevation=32, seed=6),
]


def _generic(model: WireModel) -> bytes:
    writer = PieceWriter()
    write_model(writer, model)
    return writer.finish()


# --------------------------------------------------------------------------- plans


@settings(max_examples=80, deadline=None)
@given(strategies.wire_models())
def test_plan_payload_equals_the_generic_writer(model: WireModel) -> None:
    expected = _generic(model)
    assert encode(model) == expected
    assert encode(model) == expected  # the second one comes from the recorded plan
    assert decode(expected) == model


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**63 - 1), st.floats(allow_nan=False, allow_infinity=False), st.integers(0, 2**31))
def test_plan_serves_new_values_of_one_layout(step_id: int, timestamp: float, seed: int) -> None:
    base = sample_distance_matrix(batch=2, azimuth=16, elevation=8, seed=1)
    encode(base)  # records the plan of this layout
    other = sample_distance_matrix(batch=2, azimuth=16, elevation=8, seed=seed % 1000)
    model = other.model_copy(update={"step_id": step_id, "timestamp": timestamp})
    assert encode_by_plan(model) == _generic(model)
    assert len(encode(model)) == len(encode(base))  # numbers always take 9 bytes: one layout
    assert decode(encode(model)) == model


def test_models_a_plan_cannot_serve_fall_back() -> None:
    base = sample_distance_matrix(batch=2, azimuth=16, elevation=8, seed=2)
    encode(base)
    strided = np.zeros((2, 16, 16), dtype=np.float32)[:, :, ::2]  # same dtype and shape, not contiguous
    model = base.model_copy(update={"depth": strided})
    assert encode_by_plan(model) is None
    assert decode(encode(model)) == model
    huge = base.model_copy(update={"step_id": 2**64 - 1})  # past int64: the generic writer packs uint64
    assert encode_by_plan(huge) is None
    assert decode(encode(huge)).step_id == 2**64 - 1


# --------------------------------------------------------------------------- direct decoders


@contextmanager
def _kernel(ready: bool) -> Iterator[None]:
    """Run with the value-check kernel ready, or as if it were still compiling."""
    if ready:
        assert fast_checks.wait_ready(timeout=120.0)
        yield
        return
    saved = fast_checks._kernel[0]
    fast_checks._kernel[0] = None
    try:
        yield
    finally:
        fast_checks._kernel[0] = saved


def _learned(payload: bytes) -> codec_template.Template:
    """The payload's template with its direct decoder compiled (as after a few messages)."""
    codec_template.forget()
    for _ in range(3):
        decode(payload)
    hit = codec_template.match(memoryview(payload), default_limits())
    assert hit is not None and hit[0].direct is not None
    return hit[0]


def _leaves(node: Node, path: str = "") -> Iterator[tuple[str, Node]]:
    if isinstance(node, Map):
        for _, key, child in node.entries:
            yield from _leaves(child, f"{path}.{key}" if path else key)
    else:
        yield path, node


def _array_slots(template: codec_template.Template) -> list[tuple[str, Bin, np.dtype[Any]]]:
    """(path, bytes, dtype) of every array of the layout."""
    slots = []
    for path, node in _leaves(template.tree):
        if isinstance(node, Bin) and path.endswith(".data") and node.stop > node.start:
            owner = path[: -len(".data")]
            dtype_node = dict(_leaves(template.tree))[owner + ".dtype"]
            dtype = np.dtype(template.constants[dtype_node.index])  # type: ignore[union-attr]
            slots.append((owner, node, dtype))
    return slots


def _number_offset(template: codec_template.Template, index: int) -> tuple[int, str]:
    """Byte offset and struct code of field ``index`` of the template's unpacked tuple."""
    import re

    offset, item = 0, 0
    for size, code in re.findall(r"(\d*)([a-zA-Z])", template.layout.format.lstrip(">")):
        width = int(size or 1) if code in "sx" else np.dtype(">" + code).itemsize
        if code != "x":
            if item == index:
                return offset, code
            item += 1
        offset += width
    raise AssertionError("no such field")


@pytest.mark.parametrize("ready", [True, False], ids=["kernel", "numpy"])
@settings(max_examples=150, deadline=None)
@given(which=st.sampled_from(range(len(LARGE_BASES))), data=st.data())
def test_direct_decoder_agrees_with_the_slow_path(ready: bool, which: int, data: st.DataObject) -> None:
    payload = encode(LARGE_BASES[which])
    template = _learned(payload)
    calls = []
    compiled = template.direct
    assert compiled is not None
    template.direct = lambda t, v: calls.append(1) or compiled(t, v)
    changed = bytearray(payload)
    for _ in range(data.draw(st.integers(1, 3))):
        if data.draw(st.booleans()):  # an array element
            _, where, dtype = data.draw(st.sampled_from(_array_slots(template)))
            count = (where.stop - where.start) // dtype.itemsize
            values = np.frombuffer(changed, dtype=dtype, count=count, offset=where.start)
            index = data.draw(st.integers(0, count - 1))
            if dtype.kind == "f":
                values[index] = data.draw(st.sampled_from(FLOAT_VALUES))
            elif dtype.kind == "b":
                values.view(np.uint8)[index] = data.draw(st.sampled_from([0, 1, 2, 128, 255]))
            else:
                values[index] = data.draw(
                    st.sampled_from([-1, 0, 7, np.iinfo(dtype).max, np.iinfo(dtype).min])
                )
        else:  # a number in a map (step_id, timestamp, ...): any 8 bytes
            numbers = [node.index for _, node in _leaves(template.tree) if isinstance(node, Number)]
            offset, code = _number_offset(template, data.draw(st.sampled_from(numbers)))
            width = np.dtype(">" + code).itemsize
            changed[offset : offset + width] = data.draw(st.binary(min_size=width, max_size=width))
    candidate = bytes(changed)
    with _kernel(ready):
        outcome = assert_paths_agree(lambda: decode(candidate))
        assert_paths_agree(lambda: decode(bytearray(candidate)))  # writable input: arrays still read-only
    assert calls, "the direct decoder was not used"
    assert outcome in ("ok", "error")


def test_direct_decoder_serves_a_stream_and_refuses_bad_values() -> None:
    base = sample_distance_matrix(batch=4, azimuth=256, elevation=48, seed=1)
    template = _learned(encode(base))
    with _kernel(True):
        for seed in range(3):
            model = sample_distance_matrix(batch=4, azimuth=256, elevation=48, seed=seed + 10)
            model = model.model_copy(update={"step_id": 10**6 + seed})
            assert template.direct is not None
            assert (
                template.direct(template.layout.unpack_from(encode(model)), memoryview(encode(model)))
                == model
            )
            assert decode(encode(model)) == model
        bad = bytearray(encode(base))
        depth = next(where for path, where, _ in _array_slots(template) if path == "depth")
        bad[depth.start : depth.start + 4] = np.float32(1.5).tobytes()
        with pytest.raises(Exception, match="depth"):
            decode(bytes(bad))


def test_other_kinds_are_refused_through_a_direct_decoder() -> None:
    payload = encode(LARGE_BASES[0])
    _learned(payload)
    from navi_contracts import Action, ContractError

    with pytest.raises(ContractError, match="expected kind"):
        decode(payload, expected=Action)
    assert decode(payload, expected=DistanceMatrix) == LARGE_BASES[0]
    assert sample_action(batch=2) == decode(encode(sample_action(batch=2)))


# --------------------------------------------------------------------------- the kernel


@pytest.fixture(scope="module")
def kernel() -> fast_checks.CheckKernel:
    assert fast_checks.wait_ready(timeout=120.0)
    found = fast_checks.kernel()
    assert found is not None
    return found


def _run(kernel: fast_checks.CheckKernel, raw: bytes, start: int, count: int, rule: tuple[int, int]) -> bool:
    payload = np.frombuffer(raw, dtype=np.uint8)
    rule_code, bound = rule
    tables = [np.array([value], dtype=np.int64) for value in (start, count, rule_code)]
    return kernel(payload, *tables, np.array([bound], dtype=np.uint32)) == -1


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(FLOAT_VALUES) | st.floats(width=32), min_size=1, max_size=40),
    st.integers(0, 7),
    st.sampled_from([(0.0, 1.0), (-1.0, 1.0), (None, None)]),
)
def test_float_rules_accept_only_what_the_spec_accepts(
    kernel: fast_checks.CheckKernel, values: list[float], pad: int, bounds: tuple[float | None, float | None]
) -> None:
    array = np.array(values, dtype=np.float32)
    low, high = bounds
    with np.errstate(invalid="ignore"):
        finite = bool(np.isfinite(array).all())
        spec_accepts = (
            finite
            and (low is None or bool((array >= low).all()))
            and (high is None or bool((array <= high).all()))
        )
    if low is None:
        rule, bound = fast_checks.MAGNITUDE_AT_MOST, fast_checks.LARGEST_FINITE_FLOAT32_BITS
    elif low == 0.0:
        rule, bound = fast_checks.BITS_AT_MOST, fast_checks.float32_bits(1.0)
    else:
        rule, bound = fast_checks.MAGNITUDE_AT_MOST, fast_checks.float32_bits(1.0)
    accepted = _run(kernel, bytes(pad) + array.tobytes() + bytes(3), pad, array.size, (rule, bound))
    negative_zero = bool((array.view(np.uint32) == 0x80000000).any())
    assert accepted == (spec_accepts and not (rule == fast_checks.BITS_AT_MOST and negative_zero))


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=70), st.integers(0, 9))
def test_bool_rule_accepts_only_bytes_zero_and_one(
    kernel: fast_checks.CheckKernel, raw: bytes, pad: int
) -> None:
    cleaned = bytes(byte & 1 for byte in raw)
    for data in (raw, cleaned):
        accepted = _run(kernel, bytes(pad) + data + bytes(5), pad, len(data), (fast_checks.BYTES_ZERO_ONE, 0))
        assert accepted == all(byte <= 1 for byte in data)
