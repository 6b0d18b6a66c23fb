"""Crash-safe demonstration writer: numbered part files while flying, one ``.npz`` at the end.

Why parts: holding a long flight in memory and writing it once would lose everything on a crash
and cost N x 3 x Az x El x 4 bytes of RAM (2.9 GB for 20k frames at 256x48). Instead every
``part_frames`` frames go to ``<name>.parts/part_NNNNNN.npz`` (temporary name + ``os.replace``),
and :meth:`DemoWriter.close` streams the parts into ``<name>.npz`` (again through a temporary name)
one part at a time, so memory stays bounded by one part. A crash leaves the parts folder, which
:func:`navi_auditor.demos.reader.load_demonstration` reads and ``navi-auditor demo-merge`` finishes.

Why compressed: a raw frame is 3 x Az x El float32 (147 KB at 256x48; the README's recording
command wrote ~5.9 GB). Every ``.npy`` member of parts and final file is deflated (zlib, lossless,
so replay stays bit-exact); an apartment flight measured 16-18 KB per frame. Plain npz members
keep every reader (``numpy.load``, the BC loader) unchanged. Deflating a part costs about a second,
so parts are written by one background thread while the pilot keeps flying (at most one part in
flight, so memory stays bounded by two parts); ``close`` waits for it.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import structlog

from navi_common.atomic import atomic_write
from navi_common.demonstrations import DEMO_SCHEMA_VERSION, FRAME_FIELDS, frame_shape

log = structlog.get_logger()

PARTS_SUFFIX = ".parts"
METADATA_FILE = "metadata.json"
SEGMENTS_FILE = "segments.json"
COMPRESSION_LEVEL = 1
"""zlib level of every member: level 6 saved only ~10% more at ~1.6x the time (measured)."""
STATIONARY_M, STATIONARY_RAD = 0.01, 0.01
"""A frame is stationary when the drone moved less than this since the previous frame."""
MOSTLY_STATIONARY = 0.5
"""Warn when more than this share of a recording is stationary (a hovering pilot teaches nothing)."""


def parts_folder(path: Path) -> Path:
    """``<name>.parts`` next to ``<name>.npz``."""
    return path.with_suffix(PARTS_SUFFIX)


def _write_json(path: Path, payload: Any) -> None:
    data = json.dumps(payload, indent=2, sort_keys=True, default=str).encode("utf-8")

    def write(stream: BinaryIO) -> None:
        stream.write(data)

    atomic_write(path, write)


def _write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """``arrays`` as a deflated ``.npz`` at ``path`` (atomically)."""

    def write(stream: BinaryIO) -> None:
        with zipfile.ZipFile(
            stream, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=COMPRESSION_LEVEL, allowZip64=True
        ) as archive:
            for name, array in arrays.items():
                with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, array, allow_pickle=False)

    atomic_write(path, write)


class DemoWriter:
    """Appends frames of one drone to a demonstration.

    Args:
        path: the final ``.npz`` (refused if it exists).
        matrix_shape: ``(Az, El)`` of the observations.
        metadata: JSON-serialisable provenance (settings, pilot, versions, ...); the writer adds
            ``schema_version`` and ``matrix_shape``.
        part_frames: frames per part file.
    """

    def __init__(
        self, path: Path, matrix_shape: tuple[int, int], metadata: dict[str, Any], part_frames: int = 256
    ) -> None:
        self.path = Path(path)
        if self.path.exists():
            raise FileExistsError(f"{self.path} exists; demonstrations are never overwritten")
        self.parts = parts_folder(self.path)
        self.parts.mkdir(parents=True, exist_ok=False)
        self.matrix_shape = (int(matrix_shape[0]), int(matrix_shape[1]))
        self.part_frames = part_frames
        self.metadata = {**metadata, "schema_version": DEMO_SCHEMA_VERSION, "matrix_shape": self.matrix_shape}
        self.segments: list[tuple[str, int]] = []
        self.frames = 0
        self._episode = -1
        self._part_index = 0
        self._buffers = {
            name: np.empty((part_frames, *frame_shape(name, self.matrix_shape)), dtype=dtype)
            for name, (dtype, _) in FRAME_FIELDS.items()
        }
        self._filled = 0
        self.stationary = 0  # frames in which the drone did not move since the previous frame
        self._last_pose: tuple[np.ndarray, float] | None = None
        self._flusher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="demo-parts")
        self._in_flight: Future[None] | None = None
        _write_json(self.parts / METADATA_FILE, self.metadata)

    def begin_segment(self, scene: str, seed: int) -> int:
        """Start a scene visit (``reset(seed)`` on ``scene``); the next frame starts an episode.

        Returns:
            The segment id.
        """
        self.segments.append((str(scene), int(seed)))
        _write_json(self.parts / SEGMENTS_FILE, self.segments)
        return len(self.segments) - 1

    def add(
        self,
        observation: np.ndarray,
        action: np.ndarray,
        *,
        episode_start: bool,
        reward: float,
        terminated: bool,
        truncated: bool,
        collision: bool,
        position: np.ndarray,
        yaw: float,
        timestamp: float,
    ) -> None:
        """Append one frame.

        Args:
            observation: (3, Az, El) what the pilot saw before acting.
            action: (4,) the clipped action passed to ``backend.step``.
            episode_start: ``observation`` is the first of an episode.
            reward, terminated, truncated, collision: what the step returned.
            position: (3,) drone position when ``observation`` was taken. yaw: heading (rad).
            timestamp: seconds since the epoch.
        """
        if not self.segments:
            raise RuntimeError("call begin_segment() before add()")
        action = np.asarray(action, dtype=np.float32)
        if action.shape != (4,) or not np.isfinite(action).all() or np.abs(action).max() > 1.0:
            raise ValueError(f"action must be 4 finite values in [-1, 1] (the executed action), got {action}")
        self._episode += int(bool(episode_start) or self.frames == 0)
        values = {
            "observations": observation, "actions": action, "episode_ids": self._episode,
            "episode_starts": bool(episode_start) or self.frames == 0, "segment_ids": len(self.segments) - 1,
            "rewards": reward, "terminated": terminated, "truncated": truncated, "collisions": collision,
            "positions": position, "yaw": yaw, "timestamps": timestamp,
        }  # fmt: skip
        for name, value in values.items():
            self._buffers[name][self._filled] = value
        self._count_stationary(np.asarray(position, dtype=np.float32), float(yaw), bool(episode_start))
        self._filled += 1
        self.frames += 1
        if self._filled == self.part_frames:
            self.flush()

    def _count_stationary(self, position: np.ndarray, yaw: float, episode_start: bool) -> None:
        last = self._last_pose
        if last is not None and not episode_start:
            turned = abs((yaw - last[1] + np.pi) % (2 * np.pi) - np.pi)
            moved = float(np.linalg.norm(position - last[0]))
            self.stationary += int(moved < STATIONARY_M and turned < STATIONARY_RAD)
        self._last_pose = (position.copy(), yaw)

    @property
    def stationary_share(self) -> float:
        """Share of frames in which the drone had not moved since the previous frame."""
        return self.stationary / self.frames if self.frames else 0.0

    def stationary_warning(self) -> str | None:
        """One line for the user when the drone stood still in most frames, else None."""
        if self.stationary_share <= MOSTLY_STATIONARY:
            return None
        return (
            f"warning: the drone stood still in {self.stationary_share:.0%} of the {self.frames} recorded "
            "frames; a hovering pilot teaches a policy nothing"
        )

    def flush(self) -> None:
        """Hand the buffered frames to the background thread as the next part file (atomic write).

        Waits for the previous part first, so at most one part is in flight (and its error, if any,
        surfaces here).
        """
        if not self._filled:
            return
        count = self._filled
        part = self.parts / f"part_{self._part_index:06d}.npz"
        arrays = {name: buffer[:count] for name, buffer in self._buffers.items()}
        self.sync()
        self._in_flight = self._flusher.submit(_write_npz, part, arrays)
        self._buffers = {name: np.empty_like(buffer) for name, buffer in self._buffers.items()}
        self._part_index += 1
        self._filled = 0
        log.debug("auditor.demo.part_queued", part=str(part), frames=count, total=self.frames)

    def sync(self) -> None:
        """Wait until every part handed to the background thread is on disk (re-raising its error)."""
        if self._in_flight is not None:
            self._in_flight.result()
            self._in_flight = None

    def close(self) -> Path:
        """Flush, merge the parts into the final ``.npz`` and remove the parts folder.

        Warns (``auditor.demo.mostly_stationary``) when the drone stood still in most frames.

        Returns:
            The ``.npz`` path.
        """
        self.flush()
        self.sync()
        self._flusher.shutdown()
        merge_parts(self.parts, self.path)
        log.info(
            "auditor.demo.written", path=str(self.path), frames=self.frames, segments=len(self.segments),
            bytes_per_frame=round(self.path.stat().st_size / max(1, self.frames)),
        )  # fmt: skip
        if self.stationary_warning() is not None:
            log.warning(
                "auditor.demo.mostly_stationary", path=str(self.path), frames=self.frames,
                stationary_share=round(self.stationary_share, 3),
            )  # fmt: skip
        return self.path


def _part_files(parts: Path) -> list[Path]:
    return sorted(parts.glob("part_*.npz"))


def merge_parts(parts: Path, out: Path) -> Path:
    """Stream the part files of ``parts`` into one ``.npz`` at ``out`` and delete ``parts``.

    Memory stays bounded by one part: each array is written as a zip member whose ``.npy`` header
    states the final length, followed by every part's rows in order.

    Args:
        parts: a ``<name>.parts`` folder (complete parts only; temporaries are ignored).
        out: the merged file (written atomically).

    Returns:
        ``out``.
    """
    metadata = json.loads((parts / METADATA_FILE).read_text(encoding="utf-8"))
    segments_path = parts / SEGMENTS_FILE
    segments = json.loads(segments_path.read_text(encoding="utf-8")) if segments_path.is_file() else []
    files = _part_files(parts)
    counts = [int(np.load(file)["actions"].shape[0]) for file in files]
    matrix_shape = tuple(metadata["matrix_shape"])

    def write(stream: BinaryIO) -> None:
        with zipfile.ZipFile(
            stream, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=COMPRESSION_LEVEL, allowZip64=True
        ) as archive:
            for name, (dtype, _) in FRAME_FIELDS.items():
                shape = (sum(counts), *frame_shape(name, matrix_shape))  # type: ignore[arg-type]
                with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                    header = {
                        "descr": np.lib.format.dtype_to_descr(dtype),
                        "fortran_order": False,
                        "shape": shape,
                    }
                    np.lib.format.write_array_header_1_0(member, header)
                    for file in files:
                        member.write(np.ascontiguousarray(np.load(file)[name], dtype=dtype).data)
            small = {
                "segment_scenes": np.array([scene for scene, _ in segments], dtype=np.str_),
                "segment_seeds": np.array([seed for _, seed in segments], dtype=np.int64),
                "metadata": np.array(json.dumps(metadata, sort_keys=True, default=str)),
            }
            for name, array in small.items():
                with archive.open(f"{name}.npy", "w") as member:
                    np.lib.format.write_array(member, array, allow_pickle=False)

    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(out, write)
    shutil.rmtree(parts)
    return out
