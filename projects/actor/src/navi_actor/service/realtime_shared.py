"""The memory the real-time brain's two processes share: the latest observation and the schedule.

One :class:`multiprocessing.shared_memory.SharedMemory` block holds fixed-size numpy arrays (laid
out by :class:`SharedLayout`, which both processes compute from the same few numbers); a
``multiprocessing`` lock with a condition guards them. The control process writes the newest
observation and notifies; the inference process waits on the condition, copies the observation out,
and writes the merged action schedule back. Nothing on this path is pickled: both sides only copy
between their own buffers and numpy views on the block, holding the lock for that copy alone.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from multiprocessing import shared_memory
from multiprocessing.synchronize import Condition
from typing import Any

import numpy as np

from navi_contracts import ACTION_CHUNK_MAX, DistanceMatrix

_ALIGN = 64
# header slots (int64)
OBS_VERSION, OBS_TICK = 0, 1
SCHEDULE_VERSION, SCHEDULE_START, SCHEDULE_LENGTH, SCHEDULE_ANSWERS, DELAY_TICKS = 2, 3, 4, 5, 6
INFERENCES, SKIPPED_OBSERVATIONS, CONSUMED = 7, 8, 9
_HEADER_SLOTS = 10


@dataclass(frozen=True)
class SharedLayout:
    """Sizes of the shared arrays: B drones, an ``Az x El`` sensor, a schedule of ``capacity`` ticks."""

    drones: int
    azimuth: int
    elevation: int
    action_dim: int = 4
    capacity: int = ACTION_CHUNK_MAX

    def arrays(self) -> list[tuple[str, np.dtype[Any], tuple[int, ...]]]:
        """``(name, dtype, shape)`` of every shared array, in block order."""
        grid = (self.drones, self.azimuth, self.elevation)
        return [
            ("header", np.dtype(np.int64), (_HEADER_SLOTS,)),
            ("arrival", np.dtype(np.float64), (1,)),  # time.monotonic() when the observation came in
            ("depth", np.dtype(np.float32), grid),
            ("semantic", np.dtype(np.int32), grid),
            ("valid", np.dtype(np.bool_), grid),
            ("env_ids", np.dtype(np.int32), (self.drones,)),
            ("episode_ids", np.dtype(np.int64), (self.drones,)),
            ("position", np.dtype(np.float32), (self.drones, 3)),  # poses: zeros if none came
            ("yaw", np.dtype(np.float32), (self.drones,)),
            ("schedule", np.dtype(np.float32), (self.drones, self.capacity, self.action_dim)),
        ]

    def offsets(self) -> tuple[dict[str, int], int]:
        """Byte offset of each array (64-byte aligned) and the block size."""
        offsets, position = {}, 0
        for name, dtype, shape in self.arrays():
            offsets[name] = position
            size = dtype.itemsize * int(np.prod(shape))
            position += -(-size // _ALIGN) * _ALIGN
        return offsets, position

    def fits(self, message: DistanceMatrix) -> bool:
        """Whether ``message`` has this layout's batch size and sensor shape."""
        return (message.batch_size, *message.matrix_shape) == (self.drones, self.azimuth, self.elevation)

    def as_dict(self) -> dict[str, int]:
        """Plain values to hand to the spawned process."""
        return asdict(self)


class SharedState:
    """Numpy views on one shared block, with the condition (and its lock) that guards them.

    Args:
        layout: array sizes.
        condition: a ``multiprocessing`` condition (from the spawn context), shared by both processes.
        name: attach to this existing block; None creates (and owns) a new one.
    """

    def __init__(self, layout: SharedLayout, condition: Condition, name: str | None = None) -> None:
        offsets, size = layout.offsets()
        self.layout, self.condition = layout, condition
        self.owner = name is None
        self.block = shared_memory.SharedMemory(name=name, create=self.owner, size=size)
        self.views: dict[str, np.ndarray] = {
            key: np.ndarray(shape, dtype, buffer=self.block.buf, offset=offsets[key])
            for key, dtype, shape in layout.arrays()
        }
        if self.owner:
            for view in self.views.values():
                view.fill(0)
            self.views["header"][SCHEDULE_START] = -1

    @property
    def name(self) -> str:
        """The block's name (for the other process to attach)."""
        return self.block.name

    @property
    def header(self) -> np.ndarray:
        """The int64 counters (read or written under the lock)."""
        return self.views["header"]

    def write_observation(self, message: DistanceMatrix, arrival: float, *, wait: bool = True) -> bool:
        """Copy ``message`` in as the newest observation and wake the inference process.

        With ``wait=False`` it gives up at once when the other process holds the lock (the control
        process then keeps the message and tries again on its next poll); returns whether it wrote.
        """
        if not self.condition.acquire(wait):
            return False
        try:
            views, header = self.views, self.header
            if header[OBS_VERSION] > header[CONSUMED]:  # the previous one was never read
                header[SKIPPED_OBSERVATIONS] += 1
            views["depth"][...] = message.depth
            views["semantic"][...] = message.semantic
            views["valid"][...] = message.valid_mask
            views["env_ids"][...] = message.env_ids
            views["episode_ids"][...] = message.episode_ids
            if message.poses is not None:
                views["position"][...] = message.poses.position
                views["yaw"][...] = message.poses.yaw
            views["arrival"][0] = arrival
            header[OBS_TICK] = message.step_id
            header[OBS_VERSION] += 1
            self.condition.notify_all()
            return True
        finally:
            self.condition.release()

    def read_schedule(self, out: np.ndarray, *, wait: bool = True) -> tuple[int, int, int, int] | None:
        """Copy the schedule into ``out [B, capacity, A]``; ``(version, start, length, answers)``.

        With ``wait=False``: None at once when the other process holds the lock.
        """
        if not self.condition.acquire(wait):
            return None
        try:
            header = self.header
            length = int(header[SCHEDULE_LENGTH])
            out[:, :length] = self.views["schedule"][:, :length]
            return (int(header[SCHEDULE_VERSION]), int(header[SCHEDULE_START]), length,
                    int(header[SCHEDULE_ANSWERS]))  # fmt: skip
        finally:
            self.condition.release()

    def close(self) -> None:
        """Drop the views and detach; the owner also frees the block.

        A spawned process shares its parent's resource tracker, so the block attached there is
        tracked once and freed once, by the owner.
        """
        self.views.clear()
        self.block.close()
        if self.owner:
            self.block.unlink()
