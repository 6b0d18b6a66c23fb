"""Decoders specialised to one learned payload layout: from the unpacked numbers straight to the model.

A layout template (:mod:`navi_contracts.codec_template`) proves that a payload repeats, byte for
byte, the framing of a payload the codec decoded before: the same keys, kinds, versions, dtype
strings, shapes, bin sizes and fixed values; only numbers in maps and array bytes differ. Most of the
fast path's checks (:mod:`navi_contracts.fast_codegen`) read only those framing bytes (and the
limits, which a template is also bound to), so once one payload of the layout passed them, every
payload of the layout passes them. Rebuilding the decoded map and running those checks again cost
more than a third of a 4x256x48 observation's decode.

The decoder generated here keeps every check whose input can change between payloads of one layout
and nothing else:

- each array is wrapped at its known offset with its known shape (no copy), then gets the value
  checks (bool bytes 0/1, the spec's range) and the field's validators;
- each scalar field goes through its fast-path check, fed the same value the map would hold
  (numbers from the unpacked tuple, fixed values rebuilt fresh so no mutable object is shared);
- defaults, the fields set, nested models and every model validator run as in the fast path.

It is generated only after the fast path accepted a payload of the layout for that class (so the
framing checks are known to pass) and raises on anything else; the caller then falls back to the
full decode, which decides and words the error. ``test_contracts_codec_direct.py`` checks that it
agrees with the slow path on streams of one layout with values pushed past every check.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from navi_contracts import fast_checks
from navi_contracts.arrays import ArraySpec
from navi_contracts.codec_template import Bin, Constant, List, Map, Node, Template
from navi_contracts.fast_arrays import SlowPathNeededError
from navi_contracts.fast_build import REQUIRED, ROLE_ARRAY, ROLE_NESTED, FastBuilder, builder_for
from navi_contracts.model_base import WireModel

DirectDecoder = Callable[[tuple[Any, ...], memoryview], WireModel]

_ARRAY = """\
    a = ndarray({shape!r}, {dtype}, v, {offset})
{bool_check}{range_check}{validators}    {target}[{name!r}] = a
"""


class _Generator:
    """Emits the straight-line code of one direct decoder (see the module doc)."""

    def __init__(self, template: Template) -> None:
        self.constants = template.constants
        self.namespace: dict[str, Any] = {
            "E": SlowPathNeededError,
            "C": template.constants,
            "ndarray": np.ndarray,
            "maximum": np.maximum.reduce,
            "uint8": np.dtype(np.uint8),
        }
        self.lines: list[str] = []
        self.count = 0
        self.kernel_rows: list[tuple[int, int, int, int]] = []  # (start, count, rule, bound) per array

    def _name(self, prefix: str, value: Any) -> str:
        self.count += 1
        name = f"{prefix}{self.count}"
        self.namespace[name] = value
        return name

    def model(self, cls: type[WireModel], node: Node, target: str) -> None:
        """Code that builds ``cls`` from ``node`` into the local variable ``target``."""
        builder = builder_for(cls)
        if builder is None or not isinstance(node, Map):
            raise ValueError(f"{cls.__name__} has no fast builder or is not a map here")
        values = f"values{self.count}"
        self.count += 1
        self.lines.append(f"    {values} = {{}}")
        for name, role, decoder, check, default in builder.decode_fields:
            child = node.get(name)
            if child is None:
                self._default(values, name, default)
            elif isinstance(child, Constant) and self.constants[child.index] is None:
                self._scalar(values, name, check, child)
            elif role == ROLE_ARRAY:
                self._array(builder, name, child, values)
            elif role == ROLE_NESTED:
                nested = f"nested{self.count}"
                self.model(decoder.cls, child, nested)
                self.lines.append(f"    {values}[{name!r}] = {nested}")
            else:
                self._scalar(values, name, check, child)
        fields_set = frozenset(key for _, key, _ in node.entries if key != "kind")
        construct = self._name("CONSTRUCT", builder.construct)
        self.lines.append(f"    {target} = {construct}({values}, set({self._name('FIELDS', fields_set)}))")

    def _scalar(self, values: str, name: str, check: Callable[[Any], Any], node: Node) -> None:
        """A scalar field: checked per payload, or once here when the layout fixes its value.

        A fixed input gives a fixed result (checks are pure); it is bound as a constant only when
        immutable, so no decoded model shares a mutable object with another.
        """
        if _fixed(node):
            result = check(eval(node.expression(), {"C": self.constants}))
            if _immutable(result):
                self.lines.append(f"    {values}[{name!r}] = {self._name('FIXED', result)}")
                return
        self.lines.append(f"    {values}[{name!r}] = {self._name('CHECK', check)}({node.expression()})")

    def _default(self, values: str, name: str, default: Any) -> None:
        if default is REQUIRED:
            raise ValueError(f"required field {name} is missing from the layout")
        factory = self._name("DEFAULT", default)
        self.lines.append(
            f"    {values}[{name!r}] = "
            f"{factory}.get_default(call_default_factory=True, validated_data={values})"
        )

    def _array(self, builder: FastBuilder, name: str, node: Node, values: str) -> None:
        spec, validators = builder.array_fields[name]
        data = node.get("data") if isinstance(node, Map) else None
        shape_node = node.get("shape") if isinstance(node, Map) else None
        if not isinstance(data, Bin):
            raise ValueError(f"array {name} has no inline data in this layout")
        if not isinstance(shape_node, List) or not all(
            isinstance(item, Constant) for item in shape_node.items
        ):
            raise ValueError(f"array {name} has no fixed shape in this layout")
        shape = tuple(self.constants[item.index] for item in shape_node.items if isinstance(item, Constant))
        count = math.prod(shape)
        bool_check = range_check = ""
        if count and spec.np_dtype.kind == "b":
            bool_check = "    if maximum(a.view(uint8), axis=None) > 1:\n        raise E\n"
        if count and (spec.finite or spec.low is not None or spec.high is not None):
            range_check = f"    {self._name('RANGE', spec._check_range)}(a)\n"
        rule = _kernel_rule(spec) if count else None
        if rule is not None:  # the kernel checks it; the numpy check only runs while it is not ready
            self.kernel_rows.append((data.start, count, *rule))
            bool_check = bool_check.replace("    if maximum", "    if K is None and maximum")
            range_check = range_check.replace("    RANGE", "    if K is None:\n        RANGE")
        code = _ARRAY.format(
            shape=shape, dtype=self._name("DTYPE", spec.np_dtype), offset=data.start, bool_check=bool_check,
            range_check=range_check, target=values, name=name,
            validators="".join(f"    a = {self._name('V', validator)}(a)\n" for validator in validators),
        )  # fmt: skip
        self.lines.extend(code.rstrip("\n").split("\n"))


def _kernel_rule(spec: ArraySpec) -> tuple[int, int] | None:  # noqa: PLR0911 - one return per rule
    """(rule, bound) of :mod:`navi_contracts.fast_checks` that accepts only what ``spec`` accepts."""
    if spec.np_dtype.kind == "b":
        return fast_checks.BYTES_ZERO_ONE, 0
    if spec.np_dtype != np.dtype(np.float32):
        return None
    low, high = spec.low, spec.high
    if low is None and high is None:
        return (
            (fast_checks.MAGNITUDE_AT_MOST, fast_checks.LARGEST_FINITE_FLOAT32_BITS) if spec.finite else None
        )
    if high is None or not math.isfinite(high) or float(np.float32(high)) != high or high < 0:
        return None  # not a bound the float32 bit patterns can express exactly
    if low == 0.0:
        return fast_checks.BITS_AT_MOST, fast_checks.float32_bits(high)
    if low == -high:
        return fast_checks.MAGNITUDE_AT_MOST, fast_checks.float32_bits(high)
    return None


def _fixed(node: Node) -> bool:
    """The node's value is the same in every payload of the layout."""
    if isinstance(node, Constant):
        return True
    if isinstance(node, List):
        return all(_fixed(item) for item in node.items)
    if isinstance(node, Map):
        return all(_fixed(value) for _, _, value in node.entries)
    return False


def _immutable(value: Any) -> bool:
    if value is None or type(value) in (int, float, str, bool, bytes):
        return True
    return type(value) is tuple and all(_immutable(item) for item in value)


def compile_direct(template: Template, cls: type[WireModel]) -> DirectDecoder | None:
    """The direct decoder of ``cls`` for payloads of ``template``'s layout, or None if unsupported.

    Call only after the fast path accepted a payload of this layout as ``cls`` (see the module doc).
    """
    generator = _Generator(template)
    try:
        generator.model(cls, template.tree, "model")
    except ValueError:
        return None
    rows = generator.kernel_rows
    head = [
        "    if not v.readonly:",
        "        v = v.toreadonly()  # every array below is then read-only, as decoded arrays are",
        "    K = KERNEL()",
    ]
    if rows:
        generator.namespace.update(
            KERNEL=fast_checks.kernel,
            frombuffer=np.frombuffer,
            STARTS=np.array([row[0] for row in rows], dtype=np.int64),
            COUNTS=np.array([row[1] for row in rows], dtype=np.int64),
            RULES=np.array([row[2] for row in rows], dtype=np.int64),
            BOUNDS=np.array([row[3] for row in rows], dtype=np.uint32),
        )
        head += [
            "    if K is not None and K(frombuffer(v, uint8), STARTS, COUNTS, RULES, BOUNDS) >= 0:",
            "        raise E",
        ]
    else:
        generator.namespace["KERNEL"] = lambda: None
    body = "\n".join(head + generator.lines)
    exec(f"def direct(t, v):\n{body}\n    return model\n", generator.namespace)  # generated from the layout
    return generator.namespace["direct"]  # type: ignore[no-any-return]


__all__ = ["DirectDecoder", "compile_direct"]
