"""Per-stage wall-clock accounting for the update loop (CUDA events when asked, else perf_counter).

CUDA work is asynchronous, so host timers around a kernel launch measure the launch, not the work.
With ``use_cuda_events`` each stage records a pair of events and the elapsed times are resolved once,
in :meth:`StageTimer.totals`, with a single synchronisation at the end of the update.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

import torch


class StageTimer:
    """Accumulates seconds per named stage.

    Args:
        use_cuda_events: time with ``torch.cuda.Event`` pairs (only meaningful on a CUDA device).
    """

    def __init__(self, use_cuda_events: bool = False) -> None:
        self.use_cuda_events = use_cuda_events and torch.cuda.is_available()
        self._seconds: dict[str, float] = defaultdict(float)
        self._pending: list[tuple[str, torch.cuda.Event, torch.cuda.Event]] = []

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the enclosed block under ``name`` (nesting different names is allowed)."""
        if self.use_cuda_events:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            try:
                yield
            finally:
                end.record()
                self._pending.append((name, start, end))
            return
        began = time.perf_counter()
        try:
            yield
        finally:
            self._seconds[name] += time.perf_counter() - began

    def totals(self) -> dict[str, float]:
        """Seconds per stage so far (synchronises once if CUDA events are pending)."""
        if self._pending:
            torch.cuda.synchronize()
            for name, start, end in self._pending:
                self._seconds[name] += start.elapsed_time(end) / 1000.0
            self._pending.clear()
        return dict(self._seconds)
