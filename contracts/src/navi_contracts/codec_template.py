"""Layout templates: parse a single payload that repeats an earlier payload's layout in one C call.

A stream of observations repeats one byte layout: the same keys, dtypes, shapes and header widths;
only numbers and array bytes change. Walking ~100 msgpack objects in Python cost ~45 us per message,
more than the one copy the encoder makes. Once payloads of one length (at least
:data:`MIN_TEMPLATE_BYTES`) have been decoded the ordinary way twice, :func:`learn` records the
layout as

- one ``struct`` format covering the whole payload: framing as fixed byte strings (``"12s"``),
  numbers that are map values as their big-endian fields, array bytes skipped (``"196608x"``);
- the framing bytes themselves, to compare;
- generated code that rebuilds the decoded map from the unpacked tuple.

:func:`parse` then decodes a payload of the same length with one ``unpack_from``, one tuple
comparison of all framing bytes, and the rebuild. The result is exactly what
:class:`~navi_contracts.msgpack_view.MsgpackView` would return: every byte outside the numbers and
array data is identical to a payload that reader accepted under the same limits, so it would take
the same path through the same checks; numbers are read with the same ``struct`` codes; fixints
are range-checked so a changed type byte cannot pass as a number. Anything else returns None and
the caller walks the payload as before.
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from navi_contracts.settings import ContractLimits

MIN_TEMPLATE_BYTES = 4096
"""Smaller payloads are cheap to walk and more likely to vary in layout: no template."""
MAX_TEMPLATES = 16
"""Templates kept (one per payload length); the cache is cleared when full."""

# Number type byte -> struct code of the value that follows it (big-endian, see MsgpackView).
_NUMBER_CODES = {0xCA: "f", 0xCB: "d", 0xCC: "B", 0xCD: "H", 0xCE: "I", 0xCF: "Q",
                 0xD0: "b", 0xD1: "h", 0xD2: "i", 0xD3: "q"}  # fmt: skip
_WIDTHS = {"f": 4, "d": 8, "B": 1, "H": 2, "I": 4, "Q": 8, "b": 1, "h": 2, "i": 4, "q": 8}
_UNFIXED_KEYS = frozenset(("schema_version",))
"""Numbers that stay part of the framing (a change means another layout, or an error)."""


@dataclass(frozen=True)
class Number:
    """A number that varies between payloads: field ``index`` of the unpacked tuple ``t``."""

    index: int

    def expression(self) -> str:
        return f"t[{self.index}]"


@dataclass(frozen=True)
class Constant:
    """A value fixed by the framing (strings, None, booleans, numbers outside maps): ``C[index]``."""

    index: int

    def expression(self) -> str:
        return f"C[{self.index}]"


@dataclass(frozen=True)
class Bin:
    """Array bytes ``[start, stop)`` of the payload ``v`` (never unpacked, sliced on demand)."""

    start: int
    stop: int

    def expression(self) -> str:
        return f"v[{self.start}:{self.stop}]"


@dataclass(frozen=True)
class List:
    """A msgpack array; its length is framing."""

    items: tuple[Node, ...]

    def expression(self) -> str:
        return "[" + "".join(item.expression() + ", " for item in self.items) + "]"


@dataclass(frozen=True)
class Map:
    """A msgpack map with string keys: (key node, key, value node) per entry, in payload order."""

    entries: tuple[tuple[Constant, str, Node], ...]

    def expression(self) -> str:
        return "{" + ", ".join(f"{k.expression()}: {v.expression()}" for k, _, v in self.entries) + "}"

    def get(self, key: str) -> Node | None:
        """The value node of ``key``, or None when the map has no such key."""
        return next((node for _, name, node in self.entries if name == key), None)


Node = Number | Constant | Bin | List | Map
"""Where each part of a learned layout's decoded value comes from."""


@dataclass(eq=False)
class Template:
    """One learned layout (see the module doc).

    ``direct`` is filled in by the codec once a payload of this layout decoded successfully: a
    decoder straight from the unpacked tuple to the model (:mod:`navi_contracts.codec_direct`).
    """

    length: int
    limits: ContractLimits
    layout: struct.Struct
    framing: Callable[[tuple[Any, ...]], Any]
    expected_framing: Any
    positive_fixints: tuple[int, ...]
    negative_fixints: tuple[int, ...]
    rebuild: Callable[[tuple[Any, ...], memoryview], Any]
    tree: Node
    constants: tuple[Any, ...]
    direct: Callable[[tuple[Any, ...], memoryview], Any] | None = None
    direct_tried: bool = False


_TEMPLATES: dict[int, Template] = {}
_SEEN: dict[int, bool] = {}
MAX_SEEN = 256


def match(view: memoryview, limits: ContractLimits) -> tuple[Template, tuple[Any, ...]] | None:
    """The learned layout ``view`` repeats and its unpacked numbers, or None.

    Args:
        view: the whole payload.
        limits: the limits the caller decodes with (a template only serves the same limits).

    Returns:
        ``(template, fields)``: every framing byte of ``view`` equals the template's, so
        ``template.rebuild(fields, view)`` is what the reader would return.
    """
    template = _TEMPLATES.get(len(view))
    if template is None or (template.limits is not limits and template.limits != limits):
        return None
    try:
        fields = template.layout.unpack_from(view)
        if template.framing(fields) != template.expected_framing:
            return None
        for index in template.positive_fixints:
            if fields[index] > 0x7F:
                return None
        for index in template.negative_fixints:
            if not -32 <= fields[index] <= -1:
                return None
    except Exception:  # cannot happen for a matching layout; the reader decides otherwise
        return None
    return template, fields


def parse(view: memoryview, limits: ContractLimits) -> Any | None:
    """The decoded map of ``view`` when it matches a learned layout, else None.

    Returns:
        What ``MsgpackView(view, ...).read_all()`` returns, or None (see :func:`match`).
    """
    hit = match(view, limits)
    return None if hit is None else rebuild(*hit, view)


def rebuild(template: Template, fields: tuple[Any, ...], view: memoryview) -> Any | None:
    """The decoded map of ``view``, which :func:`match` matched to ``template`` with ``fields``."""
    try:
        return template.rebuild(fields, view)
    except Exception:  # cannot happen for a matching layout; the reader decides otherwise
        return None


def learn(view: memoryview, limits: ContractLimits) -> None:
    """Record the layout of ``view``, a payload the ordinary reader accepted under ``limits``.

    Learning costs a few walks (generating and compiling the rebuild code, ~0.4 ms), so a length
    is learned the second time it is seen: a steady stream pays once, one-off payloads never.
    """
    length = len(view)
    if length < MIN_TEMPLATE_BYTES:
        return
    if len(_SEEN) >= MAX_SEEN:
        _SEEN.clear()
    if _SEEN.setdefault(length, False) is False:
        _SEEN[length] = True
        return
    try:
        record(view, limits)
    except Exception:  # a template is only a shortcut: it must never fail a decode that succeeded
        _TEMPLATES.pop(length, None)


def record(view: memoryview, limits: ContractLimits) -> None:
    """Learn the layout of ``view`` now (see :func:`learn`)."""
    builder = _LayoutBuilder(view)
    try:
        tree = builder.value(None)
    except (IndexError, KeyError, ValueError, struct.error):  # not a layout this module handles
        return
    if builder.pos != len(view):
        return
    builder.close_framing(len(view))
    layout = struct.Struct(">" + "".join(builder.codes))
    if layout.size != len(view):
        return
    namespace: dict[str, Any] = {"C": tuple(builder.constants)}
    exec(f"def rebuild(t, v):\n    return {tree.expression()}\n", namespace)
    framing_indices = builder.framing_indices
    getter = operator.itemgetter(*framing_indices) if len(framing_indices) > 1 else _as_tuple(framing_indices)
    fields = layout.unpack_from(view)
    if len(_TEMPLATES) >= MAX_TEMPLATES:
        _TEMPLATES.clear()
    _TEMPLATES[len(view)] = Template(
        length=len(view),
        limits=limits,
        layout=layout,
        framing=getter,
        expected_framing=getter(fields),
        positive_fixints=tuple(builder.positive_fixints),
        negative_fixints=tuple(builder.negative_fixints),
        rebuild=namespace["rebuild"],
        tree=tree,
        constants=tuple(builder.constants),
    )


def forget() -> None:
    """Drop every learned layout (tests)."""
    _TEMPLATES.clear()
    _SEEN.clear()


def _as_tuple(indices: list[int]) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    return lambda fields: tuple(fields[index] for index in indices)


class _LayoutBuilder:
    """Walks an already validated payload once, emitting struct codes and rebuild code."""

    def __init__(self, view: memoryview) -> None:
        self.view = view
        self.pos = 0
        self.framing_start = 0  # first byte not yet covered by a struct code
        self.codes: list[str] = []
        self.items = 0  # values the struct yields so far ("Nx" padding yields none)
        self.framing_indices: list[int] = []
        self.positive_fixints: list[int] = []
        self.negative_fixints: list[int] = []
        self.constants: list[Any] = []

    def close_framing(self, end: int) -> None:
        """Cover bytes [framing_start, end) with one fixed byte string field."""
        if end > self.framing_start:
            self.framing_indices.append(self.items)
            self.items += 1
            self.codes.append(f"{end - self.framing_start}s")
        self.framing_start = end

    def _field(self, start: int, code: str) -> int:
        """A number field at ``start``; returns its index in the unpacked tuple."""
        self.close_framing(start)
        self.codes.append(code)
        self.framing_start = start + _WIDTHS[code]
        self.items += 1
        return self.items - 1

    def _skip(self, start: int, size: int) -> None:
        """Array bytes at ``start``: not unpacked (sliced from the buffer instead)."""
        self.close_framing(start)
        self.codes.append(f"{size}x")
        self.framing_start = start + size

    def _constant(self, value: Any) -> Constant:
        self.constants.append(value)
        return Constant(len(self.constants) - 1)

    def value(self, key: str | None) -> Node:  # noqa: PLR0911, PLR0912 - one branch per msgpack family
        """The node of the object at ``pos``; ``key``: its map key (None elsewhere)."""
        view, start = self.view, self.pos
        code = view[start]
        self.pos = start + 1
        if code <= 0x7F or code >= 0xE0:  # fixint: the type byte is the value
            if key is None or key in _UNFIXED_KEYS:
                return self._constant(code if code <= 0x7F else code - 0x100)
            index = self._field(start, "B" if code <= 0x7F else "b")
            (self.positive_fixints if code <= 0x7F else self.negative_fixints).append(index)
            return Number(index)
        if 0x80 <= code <= 0x8F:
            return self._map(code & 0x0F)
        if 0x90 <= code <= 0x9F:
            return self._array(code & 0x0F)
        if 0xA0 <= code <= 0xBF:
            return self._string(code & 0x1F)
        if code in _NUMBER_CODES:
            struct_code = _NUMBER_CODES[code]
            self.pos = start + 1 + _WIDTHS[struct_code]
            if key is None or key in _UNFIXED_KEYS:
                return self._constant(struct.unpack_from(">" + struct_code, view, start + 1)[0])
            return Number(self._field(start + 1, struct_code))  # the type byte stays in the framing
        if code in (0xC0, 0xC2, 0xC3):
            return self._constant({0xC0: None, 0xC2: False, 0xC3: True}[code])
        if 0xC4 <= code <= 0xC6:  # bin: header in the framing, the bytes skipped and sliced
            width = 1 << (code - 0xC4)
            size = int.from_bytes(view[start + 1 : start + 1 + width], "big")
            data_start = start + 1 + width
            self.pos = data_start + size
            if size:
                self._skip(data_start, size)
            return Bin(data_start, data_start + size)
        if 0xD9 <= code <= 0xDB:
            width = 1 << (code - 0xD9)
            self.pos = start + 1 + width
            return self._string(int.from_bytes(view[start + 1 : start + 1 + width], "big"))
        if code in (0xDC, 0xDD):
            width = 2 if code == 0xDC else 4
            self.pos = start + 1 + width
            return self._array(int.from_bytes(view[start + 1 : start + 1 + width], "big"))
        if code in (0xDE, 0xDF):
            width = 2 if code == 0xDE else 4
            self.pos = start + 1 + width
            return self._map(int.from_bytes(view[start + 1 : start + 1 + width], "big"))
        raise ValueError(f"type byte 0x{code:02x} has no template form")

    def _string(self, size: int) -> Constant:
        start = self.pos
        self.pos = start + size
        return self._constant(str(self.view[start : start + size], "utf-8"))

    def _array(self, count: int) -> List:
        return List(tuple(self.value(None) for _ in range(count)))

    def _map(self, count: int) -> Map:
        entries = []
        for _ in range(count):
            key_code = self.view[self.pos]
            key_node = self.value(None)
            if not 0xA0 <= key_code <= 0xBF and key_code not in (0xD9, 0xDA, 0xDB):
                raise ValueError("map key is not a string")
            assert isinstance(key_node, Constant)
            key = self.constants[key_node.index]
            entries.append((key_node, key, self.value(key)))
        return Map(tuple(entries))
