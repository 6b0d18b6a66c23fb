"""Crash-safe demonstration writer: numbered part files while flying, one ``.npz`` at the end.

Why parts: holding a long flight in memory and writing it once would lose everything on a crash
and cost N x 3 x Az x El x 4 bytes of RAM (2.9 GB for 20k frames at 256x48). Instead every
``part_frames`` frames go to ``<name>.parts/part_NNNNNN.npz`` (temporary name + ``os.replace``),
and :meth:`DemoWriter.close` streams the parts into ``<name>.npz`` (again through a temporary name)
one part at a time, so memory stays bounded by one part. A crash leaves the parts folder, which
:func:`navi_auditor.demos.reader.load_demonstration` reads and ``navi-auditor demo-merge`` finishes.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import structlog

from navi_auditor.demos.schema import DEMO_SCHEMA_VERSION, FRAME_FIELDS, frame_shape
from navi_contracts.atomic import atomic_write

log = structlog.get_logger()

PARTS_SUFFIX = ".parts"
METADATA_FILE = "metadata.json"
SEGMENTS_FILE = "segments.json"


def parts_folder(path: Path) -> Path:
    """``<name>.parts`` next to ``<name>.npz``."""
    return path.with_suffix(PARTS_SUFFIX)


def _write_json(path: Path, payload: Any) -> None:
    data = json.dumps(payload, indent=2, sort_keys=True, default=str).encode("utf-8")

    def write(stream: BinaryIO) -> None:
        stream.write(data)

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
        self._filled += 1
        self.frames += 1
        if self._filled == self.part_frames:
            self.flush()

    def flush(self) -> None:
        """Write the buffered frames as the next part file (atomically)."""
        if not self._filled:
            return
        count = self._filled
        part = self.parts / f"part_{self._part_index:06d}.npz"
        arrays = {name: buffer[:count] for name, buffer in self._buffers.items()}

        def write(stream: BinaryIO) -> None:
            np.savez(stream, **arrays)  # type: ignore[arg-type]  # numpy's stub types the first kwarg as bool

        atomic_write(part, write)
        self._part_index += 1
        self._filled = 0
        log.debug("auditor.demo.part_written", part=str(part), frames=count, total=self.frames)

    def close(self) -> Path:
        """Flush, merge the parts into the final ``.npz`` and remove the parts folder.

        Returns:
            The ``.npz`` path.
        """
        self.flush()
        merge_parts(self.parts, self.path)
        log.info("auditor.demo.written", path=str(self.path), frames=self.frames, segments=len(self.segments))
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
        with zipfile.ZipFile(stream, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
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
