"""Load demonstrations: finished ``.npz`` files, or the parts folder a crashed session left."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from navi_auditor.demos.writer import METADATA_FILE, PARTS_SUFFIX, SEGMENTS_FILE
from navi_common.demonstrations import FRAME_FIELDS, DemoFormatError, Demonstration, validate_demonstration


def load_demonstration(path: Path) -> Demonstration:
    """Read and validate one demonstration.

    Args:
        path: a ``.npz`` file, or a ``<name>.parts`` folder left by an interrupted recording
            (everything flushed before the crash is returned).

    Returns:
        The validated :class:`Demonstration`.

    Raises:
        DemoFormatError: missing file, unreadable archive or schema violation (naming the file).
    """
    path = Path(path)
    if path.is_dir():
        return validate_demonstration(_load_parts(path), str(path))
    if not path.is_file():
        raise DemoFormatError(f"demonstration {path} does not exist")
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (OSError, ValueError) as error:
        raise DemoFormatError(f"{path} is not a readable .npz: {error}") from error
    try:
        metadata = json.loads(str(arrays.pop("metadata")))
        demo = Demonstration(
            frames={name: arrays.pop(name) for name in FRAME_FIELDS},
            segment_scenes=arrays.pop("segment_scenes"),
            segment_seeds=arrays.pop("segment_seeds"),
            metadata=metadata,
        )
    except KeyError as error:
        raise DemoFormatError(f"{path}: missing array {error}") from error
    return validate_demonstration(demo, str(path))


def _load_parts(folder: Path) -> Demonstration:
    try:
        metadata = json.loads((folder / METADATA_FILE).read_text(encoding="utf-8"))
        segments_file = folder / SEGMENTS_FILE
        segments = json.loads(segments_file.read_text(encoding="utf-8")) if segments_file.is_file() else []
    except (OSError, ValueError) as error:
        raise DemoFormatError(f"{folder}: unreadable parts metadata: {error}") from error
    parts = [np.load(file) for file in sorted(folder.glob("part_*.npz"))]
    shape = tuple(metadata["matrix_shape"])
    frames = {}
    for name, (dtype, trailing) in FRAME_FIELDS.items():
        empty = np.empty((0, *((3, *shape) if trailing is None else trailing)), dtype=dtype)
        frames[name] = np.concatenate([part[name] for part in parts] or [empty])
    return Demonstration(
        frames=frames,
        segment_scenes=np.array([scene for scene, _ in segments], dtype=np.str_),
        segment_seeds=np.array([seed for _, seed in segments], dtype=np.int64),
        metadata=metadata,
    )


def find_demonstrations(folder: Path) -> list[Path]:
    """The ``.npz`` demonstrations of ``folder`` (sorted; unfinished ``.parts`` folders excluded)."""
    if not folder.is_dir():
        raise DemoFormatError(f"demonstration folder {folder} does not exist")
    return sorted(p for p in folder.glob("*.npz") if not p.name.endswith(PARTS_SUFFIX))
