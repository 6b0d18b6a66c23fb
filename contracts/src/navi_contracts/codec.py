"""msgpack codec for wire models, with zero-copy array decoding.

Wire format: one msgpack map ``{"kind", "schema_version", <fields>...}``; nested models are nested maps
of the same form; every numpy array is ``{"dtype": "<f4", "shape": [..], "data": bin}`` (little-endian,
C order).

Encoding copies each large array exactly once: the msgpack framing is produced in small pieces and
joined with the raw array buffers by one ``bytes.join``. Decoding copies nothing: :class:`MsgpackView`
hands out ``bin`` payloads as slices of the received buffer and ``np.frombuffer`` wraps them, so
decoded arrays are read-only and keep the buffer alive. The model walk and all validation are shared
with the multipart form in :mod:`navi_contracts.codec_frames`.
"""

from __future__ import annotations

from typing import Any, TypeVar, overload

from navi_contracts import codec_template
from navi_contracts.codec_common import (
    UNEXPECTED_DECODE_ERRORS,
    as_byte_view,
    as_contract_error,
    decode_model,
    default_limits,
    model_class_for,
    write_model,
)
from navi_contracts.codec_direct import compile_direct
from navi_contracts.codec_pieces import PieceWriter
from navi_contracts.errors import ContractError
from navi_contracts.fast_arrays import inline_data
from navi_contracts.fast_build import FAST_PATH, fast_decode
from navi_contracts.fast_encode import encode_by_plan
from navi_contracts.model_base import WireModel
from navi_contracts.msgpack_view import MsgpackView
from navi_contracts.settings import ContractLimits

M = TypeVar("M", bound=WireModel)


def _decode_direct(
    template: codec_template.Template,
    fields: tuple[Any, ...],
    view: memoryview,
    expected: type[WireModel] | None,
) -> WireModel | None:
    """The model from the layout's direct decoder, or None where the full decode must decide."""
    direct = template.direct
    if direct is None:
        return None
    try:
        model = direct(fields, view)
    except Exception:  # a failed check: the full decode below words the error
        return None
    if expected is not None and type(model) is not expected:
        return None
    return model


def encode(model: WireModel) -> bytes:
    """Serialise a wire model to msgpack bytes.

    Args:
        model: any :class:`WireModel` instance (already validated by construction).

    Returns:
        The payload bytes (one copy of each array's data).
    """
    payload = encode_by_plan(model)
    if payload is not None:
        return payload
    writer = PieceWriter()
    write_model(writer, model)
    return writer.finish()


_INLINE_KEYS = frozenset(("dtype", "shape", "data"))


def _inline_data(where: str, name: str, raw: dict[str, Any]) -> Any:
    if raw.keys() != _INLINE_KEYS:
        raise ContractError(f"{where}.{name}: an array must be a map with keys dtype, shape, data")
    data = raw["data"]
    if type(data) is not memoryview:
        raise ContractError(f"{where}.{name}: data must be msgpack bin")
    return data


@overload
def decode(
    data: bytes | bytearray | memoryview, expected: type[M], limits: ContractLimits | None = None
) -> M: ...
@overload
def decode(
    data: bytes | bytearray | memoryview, expected: None = None, limits: ContractLimits | None = None
) -> WireModel: ...
def decode(
    data: bytes | bytearray | memoryview,
    expected: type[WireModel] | None = None,
    limits: ContractLimits | None = None,
) -> WireModel:
    """Decode untrusted bytes into a validated wire model.

    Args:
        data: the payload. Decoded arrays are read-only views into it (zero copy).
        expected: the model class the caller needs; any other kind is refused.
        limits: size limits; default: :func:`default_limits`.

    Returns:
        The model, validated exactly as on construction.

    Raises:
        ContractError: for any malformed, truncated, oversized, wrongly typed, wrong-shape,
            wrong-kind or wrong-version payload (and only this error).
    """
    limits = limits or default_limits()
    view = as_byte_view(data)
    if len(view) > limits.max_message_bytes:
        raise ContractError(f"message of {len(view)} bytes exceeds the limit of {limits.max_message_bytes}")
    try:
        hit = codec_template.match(view, limits) if FAST_PATH.enabled else None
        raw = None
        if hit is not None:
            model = _decode_direct(*hit, view, expected)
            if model is not None:
                return model
            raw = codec_template.rebuild(*hit, view)  # the map the full decode below words errors from
        learn = raw is None
        if learn:
            reader = MsgpackView(
                view, max_container=max(limits.max_payload_entries, 64), max_str_bytes=limits.max_string_bytes
            )
            raw = reader.read_all()
        cls = model_class_for(raw, expected)
        model = fast_decode(cls, raw, limits, inline_data)
        if model is None:
            return decode_model(raw, cls, limits, cls.__name__, _inline_data)
        if learn:  # a layout the fast path accepts: later payloads like it skip the walk
            codec_template.learn(view, limits)
        elif hit is not None and not hit[0].direct_tried:  # the fast path accepted this layout
            hit[0].direct_tried = True
            hit[0].direct = compile_direct(hit[0], cls)
        return model
    except ContractError:
        raise
    except UNEXPECTED_DECODE_ERRORS as exc:
        raise as_contract_error(exc) from exc
