"""A bounded, zero-copy msgpack reader for untrusted bytes.

``msgpack.unpackb`` copies every ``bin`` into a new ``bytes`` object, which would cost one full copy
of every observation. This reader walks the same format over a ``memoryview`` and returns each
``bin`` as a slice of the received buffer, so ``np.frombuffer`` can wrap it without copying.

Untrusted input rules: every length is checked against the bytes that remain *before* anything is
sliced or allocated, container counts are capped (each element needs at least one byte, so a
declared count larger than the remaining bytes is rejected at once), nesting depth is capped, map
keys must be unique strings, and ext types are refused. Every failure raises ``ContractError``.
"""

from __future__ import annotations

import struct
from typing import Any

from navi_contracts.errors import ContractError

_U8 = struct.Struct(">B")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")
_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_F32 = struct.Struct(">f")
_F64 = struct.Struct(">d")

# Fixed-width scalars: type byte -> struct to read after it.
_SCALARS: dict[int, struct.Struct] = {
    0xCA: _F32,
    0xCB: _F64,
    0xCC: _U8,
    0xCD: _U16,
    0xCE: _U32,
    0xCF: _U64,
    0xD0: _I8,
    0xD1: _I16,
    0xD2: _I32,
    0xD3: _I64,
}
_LENGTHS = {0: _U8, 1: _U16, 2: _U32}  # width code of str8/16/32, bin8/16/32
_CONSTANTS: dict[int, Any] = {0xC0: None, 0xC2: False, 0xC3: True}


class MsgpackView:
    """Reads one msgpack object from a byte buffer without copying ``bin`` payloads.

    Args:
        buffer: the received bytes (1-D, byte-sized items).
        max_container: largest array or map length accepted.
        max_str_bytes: largest string accepted, in bytes.
        max_depth: deepest nesting of arrays and maps accepted.

    The total number of container entries is capped at ``4 * max_container + 256``.
    """

    __slots__ = ("_buffer", "_end", "_entries_left", "_max_container", "_max_depth", "_max_str", "_pos")

    def __init__(
        self, buffer: memoryview, max_container: int, max_str_bytes: int, max_depth: int = 16
    ) -> None:
        self._buffer = buffer
        self._end = len(buffer)
        self._pos = 0
        self._max_container = max_container
        self._max_str = max_str_bytes
        self._max_depth = max_depth
        # Total entries over all containers: a few bytes per entry can become ~50 bytes of Python
        # objects each, so without a total a large hostile message could multiply its size in RAM.
        self._entries_left = 4 * max_container + 256

    def read_all(self) -> Any:
        """Read exactly one object spanning the whole buffer.

        Returns:
            dict / list / str / int / float / bool / None, with ``bin`` as ``memoryview`` slices.

        Raises:
            ContractError: malformed, truncated, over a limit, or trailing bytes.
        """
        value = self._read(0)
        if self._pos != self._end:
            raise ContractError(
                f"malformed msgpack: {self._end - self._pos} trailing bytes after the message"
            )
        return value

    def _take(self, size: int) -> int:
        start = self._pos
        if size > self._end - start:
            raise ContractError(
                f"truncated msgpack: need {size} bytes at offset {start}, only {self._end - start} left"
            )
        self._pos = start + size
        return start

    def _unpack(self, fmt: struct.Struct) -> Any:
        start = self._take(fmt.size)
        return fmt.unpack_from(self._buffer, start)[0]

    def _read(self, depth: int) -> Any:  # noqa: PLR0911 - one return per msgpack family is clearest
        # Hot path: the families our messages are made of (fixint, fixstr, fixmap) are tested
        # first and read inline; everything else goes through the generic branches below.
        pos = self._pos
        if pos >= self._end:
            raise ContractError(f"truncated msgpack: need 1 byte at offset {pos}, none left")
        code = self._buffer[pos]
        self._pos = pos + 1
        if code <= 0x7F:
            return code
        if 0xA0 <= code <= 0xBF:
            return self._read_str(code & 0x1F)
        if code <= 0x8F:
            return self._read_map(code & 0x0F, depth)
        if code <= 0x9F:
            return self._read_array(code & 0x0F, depth)
        if code >= 0xE0:
            return code - 0x100
        scalar = _SCALARS.get(code)
        if scalar is not None:
            return self._unpack(scalar)
        if code in _CONSTANTS:
            return _CONSTANTS[code]
        if 0xC4 <= code <= 0xC6:
            size = self._unpack(_LENGTHS[code - 0xC4])
            start = self._take(size)
            return self._buffer[start : start + size]
        if 0xD9 <= code <= 0xDB:
            return self._read_str(self._unpack(_LENGTHS[code - 0xD9]))
        if code in (0xDC, 0xDD):
            return self._read_array(self._unpack(_U16 if code == 0xDC else _U32), depth)
        if code in (0xDE, 0xDF):
            return self._read_map(self._unpack(_U16 if code == 0xDE else _U32), depth)
        raise ContractError(f"malformed msgpack: unsupported type byte 0x{code:02x} at offset {pos}")

    def _read_str(self, size: int) -> str:
        if size > self._max_str:
            raise ContractError(f"string of {size} bytes exceeds the limit of {self._max_str}")
        start = self._pos
        end = start + size
        if end > self._end:
            raise ContractError(
                f"truncated msgpack: need {size} bytes at offset {start}, only {self._end - start} left"
            )
        self._pos = end
        return self._decode_utf8(start, end)

    def _check_container(self, count: int, depth: int, min_item_bytes: int) -> None:
        if depth >= self._max_depth:
            raise ContractError(f"msgpack nesting deeper than {self._max_depth}")
        if count > self._max_container:
            raise ContractError(f"container of {count} entries exceeds the limit of {self._max_container}")
        if count * min_item_bytes > self._end - self._pos:
            raise ContractError(f"truncated msgpack: container declares {count} entries, too few bytes left")
        self._entries_left -= count
        if self._entries_left < 0:
            raise ContractError("message holds more container entries in total than any model needs")

    def _read_array(self, count: int, depth: int) -> list[Any]:
        self._check_container(count, depth, 1)
        return [self._read(depth + 1) for _ in range(count)]

    def _read_map(self, count: int, depth: int) -> dict[str, Any]:
        self._check_container(count, depth, 2)
        buffer, end = self._buffer, self._end
        result: dict[str, Any] = {}
        for _ in range(count):
            pos = self._pos
            code = buffer[pos] if pos < end else 0
            if 0xA0 <= code <= 0xBF and pos + 1 + (code & 0x1F) <= end:
                # Inline fixstr key (every key we write): saves a generic dispatch per entry.
                stop = pos + 1 + (code & 0x1F)
                key = self._decode_utf8(pos + 1, stop)
                self._pos = stop
            else:
                key = self._read(depth + 1)
                if not isinstance(key, str):
                    raise ContractError(
                        f"malformed message: map key must be a string, got {type(key).__name__}"
                    )
            if key in result:
                raise ContractError(f"malformed message: duplicate map key {key!r}")
            result[key] = self._read(depth + 1)
        return result

    def _decode_utf8(self, start: int, stop: int) -> str:
        try:
            return str(self._buffer[start:stop], "utf-8")
        except UnicodeDecodeError as exc:
            raise ContractError(
                f"malformed msgpack: string at offset {start} is not UTF-8 ({exc.reason})"
            ) from None
