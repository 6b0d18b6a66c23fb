"""One compiled pass over a payload's arrays: the value checks of a learned layout.

numpy needs two reductions for a range like [-1, 1] (min and max), and every reduction is a call;
for a 4x256x48 observation the value checks cost as much as its one copy. A layout's direct decoder
(:mod:`navi_contracts.codec_direct`) instead hands the whole payload to one numba kernel that reads
each checked array once, on its raw bits:

- ``BITS_AT_MOST``: float32 in [0, high]: the largest bit pattern is at most high's (negative
  numbers, -0.0, NaN and infinities all have larger patterns);
- ``MAGNITUDE_AT_MOST``: float32 in [-a, a], or only finite: the largest pattern with the sign bit
  cleared is at most a's (or the largest finite float's); NaN and infinities are larger;
- ``BYTES_ZERO_ONE``: bool: the OR of all bytes is at most 1.

Each rule only *accepts* values the spec's own check accepts (it may refuse a few it would accept,
such as -0.0 in [0, 1]); a refusal sends the payload down the full decode, which decides. numba
is imported and the kernel compiled (or loaded from its cache) on a background thread the first
time a layout asks for it, so no decode waits for a compiler; until it is ready the direct decoder
runs the spec's numpy checks.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

BITS_AT_MOST, MAGNITUDE_AT_MOST, BYTES_ZERO_ONE = 0, 1, 2
LARGEST_FINITE_FLOAT32_BITS = 0x7F7FFFFF

CheckKernel = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray], int]
"""``kernel(payload uint8, starts int64, counts int64, rules int64, bounds uint32) -> int``: the index
of the first array that fails its rule, or -1."""

_kernel: list[CheckKernel | None] = [None]
_started = threading.Event()
_ready = threading.Event()


def kernel() -> CheckKernel | None:
    """The compiled kernel, or None while it is being prepared (the first call starts that)."""
    found = _kernel[0]
    if found is None and not _started.is_set():
        _started.set()
        threading.Thread(target=_prepare, name="navi-contracts-checks", daemon=True).start()
    return found


def wait_ready(timeout: float) -> bool:
    """Start preparing the kernel if needed and wait for it (tests, benchmarks); True when ready."""
    kernel()
    return _ready.wait(timeout) and _kernel[0] is not None


def _prepare() -> None:
    try:
        _kernel[0] = _compile()
    except Exception:
        _kernel[0] = None
    finally:
        _ready.set()


def _compile() -> CheckKernel:
    import numba  # heavy: imported only when a layout first asks for the kernel

    @numba.njit(cache=True, nogil=True, boundscheck=False)
    def largest(words: Any) -> Any:  # pragma: no cover - compiled
        found = np.uint32(0)
        for i in range(words.shape[0]):
            word = words[i]
            found = max(found, word)
        return found

    @numba.njit(cache=True, nogil=True, boundscheck=False)
    def largest_magnitude(words: Any) -> Any:  # pragma: no cover - compiled
        found = np.uint32(0)
        for i in range(words.shape[0]):
            word = words[i] & np.uint32(0x7FFFFFFF)
            found = max(found, word)
        return found

    @numba.njit(cache=True, nogil=True, boundscheck=False)
    def bytes_zero_one(payload: Any, start: Any, count: Any) -> bool:  # pragma: no cover - compiled
        head = min(count, (-start) % 8)  # bytes before the first 8-byte aligned one
        bits = np.uint64(0)
        for i in range(start, start + head):
            bits |= np.uint64(payload[i])
        body = (count - head) // 8
        words = payload[start + head : start + head + 8 * body].view(np.uint64)
        for i in range(body):
            bits |= words[i]
        for i in range(start + head + 8 * body, start + count):
            bits |= np.uint64(payload[i])
        return (bits & np.uint64(0xFEFEFEFEFEFEFEFE)) == 0

    @numba.njit(cache=True, nogil=True, boundscheck=False)
    def check_arrays(
        payload: Any, starts: Any, counts: Any, rules: Any, bounds: Any
    ) -> int:  # pragma: no cover - compiled
        for j in range(starts.shape[0]):
            start, count, rule = starts[j], counts[j], rules[j]
            if rule == BYTES_ZERO_ONE:
                if not bytes_zero_one(payload, start, count):
                    return j
                continue
            words = payload[start : start + 4 * count].view(np.uint32)
            found = largest(words) if rule == BITS_AT_MOST else largest_magnitude(words)
            if found > bounds[j]:
                return j
        return -1

    # Compile (or load from the cache) here, for the argument types the direct decoder passes: a
    # read-only payload (decoded payloads always are) and writable int64/uint32 tables.
    payload = np.zeros(8, dtype=np.uint8)
    payload.flags.writeable = False
    tables = [np.zeros(1, dtype=np.int64) for _ in range(3)]
    compiled: Any = check_arrays
    if compiled(payload, *tables, np.zeros(1, dtype=np.uint32)) != -1:
        raise RuntimeError("value-check kernel failed its self-test")
    return check_arrays  # type: ignore[no-any-return]


def float32_bits(value: float) -> int:
    """The bit pattern of ``value`` as float32."""
    return int(np.array(value, dtype=np.float32).view(np.uint32))
