"""Value ranges of large float32 arrays: the integer-maximum proof refuses exactly what it must.

Arrays of more than 64 elements are range-checked by integer maxima over their float32 bit patterns
(``ArraySpec._bit_bounds``), and only a flagged array pays for the exact float pass that names the bad
value. These tests put every kind of bad value (NaN of either sign, infinities, the nearest float past
a bound) into every ranged float array of every model, through the decoder, and compare random bit
patterns against a plain numpy reference.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from navi_contracts import Action, ContractError, WireModel, decode_frames, encode_frames
from navi_contracts.arrays import ArraySpec
from navi_contracts.model_base import array_specs, nested_models
from navi_contracts.models import MODELS
from navi_contracts.samples import sample_action, sample_distance_matrix, sample_pose, sample_step_result

_ACTION = sample_action(batch=20)
# Messages whose ranged float arrays all hold more than 64 values (the bit-pattern path).
LARGE: list[WireModel] = [
    sample_distance_matrix(batch=2, azimuth=8, elevation=8, seed=5),  # depth, delta_depth: 128 values
    sample_pose(batch=80),  # position 240, yaw 80
    Action(**{**_ACTION.__dict__, "chunk": np.repeat(_ACTION.actions[:, None], 8, axis=1)}),  # 80, 640
    sample_step_result(batch=80, azimuth=2, elevation=2),  # reward, episode_return: 80 values
]
F32 = np.float32


def _is_ranged_float(spec: ArraySpec) -> bool:
    return spec.np_dtype == np.float32 and (spec.finite or spec.low is not None or spec.high is not None)


def _arrays(model: WireModel, prefix: str = "") -> list[tuple[str, ArraySpec, str, int]]:
    """(dotted path, spec, owning model's name, size) of every array of ``model``, in frame order."""
    found: list[tuple[str, ArraySpec, str, int]] = []
    specs, nested = array_specs(type(model)), nested_models(type(model))
    for name in type(model).model_fields:
        value = getattr(model, name)
        if value is not None and name in specs:
            found.append((prefix + name, specs[name], type(model).__name__, value.size))
        elif value is not None and name in nested:
            found.extend(_arrays(value, f"{prefix}{name}."))
    return found


def _ranged(model: WireModel) -> list[tuple[int, str, ArraySpec]]:
    """(frame index, dotted path, spec) of the ranged float arrays of ``model`` with > 64 values."""
    slots = enumerate(_arrays(model), start=1)  # frame 0 is the header
    return [
        (index, path, spec) for index, (path, spec, _, size) in slots if _is_ranged_float(spec) and size > 64
    ]


def _bad_values(spec: ArraySpec) -> list[tuple[float, str]]:
    """Values ``spec`` must refuse, with the start of the message naming why."""
    bad = [(math.nan, "must be finite"), (-math.nan, "must be finite"), (math.inf, "must be"),
           (-math.inf, "must be")]  # fmt: skip
    if spec.high is not None:
        bad.append((float(np.nextafter(F32(spec.high), F32(np.inf))), f"must be <= {spec.high}"))
    if spec.low is not None:
        bad.append((float(np.nextafter(F32(spec.low), F32(-np.inf))), f"must be >= {spec.low}"))
    return bad


CASES = [
    pytest.param(model, index, path, value, message, id=f"{type(model).__name__}.{path}={value}")
    for model in LARGE
    for index, path, spec in _ranged(model)
    for value, message in _bad_values(spec)
]


def test_every_ranged_float_array_of_every_model_is_covered_and_takes_the_integer_proof() -> None:
    covered = {
        (owner, path.split(".")[-1])
        for model in LARGE
        for path, _, owner, size in _arrays(model)
        if size > 64
    }
    for cls in MODELS:
        for name, spec in array_specs(cls).items():
            if _is_ranged_float(spec):
                assert (cls.__name__, name) in covered, f"{cls.__name__}.{name} has no large test message"
                assert spec._bit_bounds is not None, f"{cls.__name__}.{name} would skip the integer proof"


@pytest.mark.parametrize(("model", "index", "path", "value", "message"), CASES)
def test_a_bad_value_in_any_ranged_array_is_refused_naming_its_field(
    model: WireModel, index: int, path: str, value: float, message: str
) -> None:
    _refused_with_middle_value(model, index, path, value, message, few=False)


@pytest.mark.parametrize("model", LARGE, ids=lambda model: type(model).__name__)
def test_values_on_the_bounds_are_accepted(model: WireModel) -> None:
    frames: list[Any] = [bytes(frame) for frame in encode_frames(model)]
    for index, path, spec in _ranged(model):
        if path == "actions":
            continue  # chunk[:, 0] must equal actions; the chunk's last rows take the bounds instead
        values = np.frombuffer(frames[index], dtype=np.float32).copy()
        low = -3.0e38 if spec.low is None else spec.low
        high = 3.0e38 if spec.high is None else spec.high
        values[-4:] = [low, high, -0.0, 1e-45]
        frames[index] = values.tobytes()
    decoded = decode_frames(frames)
    assert isinstance(decoded, type(model))
    assert decoded != model  # the edited values did arrive


SPECS = [ArraySpec(F32, ("B",), low=0.0, high=1.0), ArraySpec(F32, ("B",), low=-1.0, high=1.0),
         ArraySpec(F32, ("B",), finite=True), ArraySpec(F32, ("B",), low=-2.0, high=0.5)]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(SPECS), st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=4), st.data())
def test_random_bit_patterns_agree_with_a_plain_reference(
    spec: ArraySpec, patterns: list[int], data: st.DataObject
) -> None:
    low = -np.inf if spec.low is None else spec.low
    high = np.inf if spec.high is None else spec.high
    values = np.linspace(max(low, -1.0), min(high, 1.0), 100, dtype=np.float32)
    at = data.draw(st.lists(st.integers(0, 99), min_size=len(patterns), max_size=len(patterns)))
    values.view(np.uint32)[at] = patterns
    expected = bool(np.all(np.isfinite(values) & (values >= low) & (values <= high)))
    try:
        spec.validate(values)
    except ValueError as exc:
        assert not expected, f"refused a valid array: {exc}"
        assert str(exc).startswith("must be"), exc
    else:
        assert expected, f"accepted {values[at]} for [{low}, {high}]"


# Messages whose ranged float arrays all hold at most 64 values: the few-values path (Python floats).
_FEW_ACTION = sample_action(batch=3)
FEW: list[WireModel] = [
    sample_distance_matrix(batch=2, azimuth=2, elevation=2, seed=5),  # depth, delta 8; poses 6 and 2
    Action(**{**_FEW_ACTION.__dict__, "chunk": np.repeat(_FEW_ACTION.actions[:, None], 2, axis=1)}),
    sample_step_result(batch=2, azimuth=2, elevation=2),  # reward, episode_return: 2 values
]
FEW_CASES = [
    pytest.param(model, index, path, value, message, id=f"{type(model).__name__}.{path}={value}")
    for model in FEW
    for index, (path, spec, _, size) in enumerate(_arrays(model), start=1)
    if _is_ranged_float(spec) and size <= 64
    for value, message in _bad_values(spec)
]


def test_every_ranged_float_array_of_every_model_is_covered_with_few_values() -> None:
    covered = {(owner, path.split(".")[-1]) for model in FEW for path, _, owner, size in _arrays(model)}
    for cls in MODELS:
        for name, spec in array_specs(cls).items():
            assert not _is_ranged_float(spec) or (cls.__name__, name) in covered, f"{cls.__name__}.{name}"


@pytest.mark.parametrize(("model", "index", "path", "value", "message"), FEW_CASES)
def test_a_bad_value_in_a_small_ranged_array_is_refused_naming_its_field(
    model: WireModel, index: int, path: str, value: float, message: str
) -> None:
    """A pose, an action or a reward with one bad value (NaN of either sign, an infinity, the nearest
    float past a bound) is refused through the decoder, the message naming the nested field."""
    _refused_with_middle_value(model, index, path, value, message, few=True)


@pytest.mark.parametrize("model", FEW, ids=lambda model: type(model).__name__)
def test_few_values_on_the_bounds_are_accepted(model: WireModel) -> None:
    frames: list[Any] = [bytes(frame) for frame in encode_frames(model)]
    for index, (path, spec, _, _) in enumerate(_arrays(model), start=1):
        if not _is_ranged_float(spec) or path in ("actions", "chunk"):
            continue  # chunk[:, 0] must equal actions; Action's bounds are covered by the large test
        values = np.frombuffer(frames[index], dtype=np.float32).copy()
        values[:2] = [-3.0e38 if spec.low is None else spec.low, 3.0e38 if spec.high is None else spec.high]
        frames[index] = values.tobytes()
    assert isinstance(decode_frames(frames), type(model))


def _refused_with_middle_value(
    model: WireModel, index: int, path: str, value: float, message: str, *, few: bool
) -> None:
    """Frame ``index`` with ``value`` in its middle is refused, naming ``path``; ``few`` says which
    check path the array takes (64 values or fewer: the few-values loop; more: the integer maxima)."""
    frames: list[Any] = [bytes(frame) for frame in encode_frames(model)]
    values = np.frombuffer(frames[index], dtype=np.float32).copy()
    assert (values.size <= 64) == few
    values[values.size // 2] = value
    frames[index] = values.tobytes()
    with pytest.raises(ContractError, match=rf"^{type(model).__name__}\.{path}: {message}"):
        decode_frames(frames)
