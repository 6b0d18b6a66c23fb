"""Atomic file writes shared by every package: nothing half-written survives a crash.

Every artifact (scenes, manifests, checkpoints, registries, demonstrations, run manifests) is
written to a temporary file in the destination folder, flushed and fsynced, then renamed into
place with ``os.replace``. A crash at any point leaves either the previous file or the new one.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    # os.umask can only be read by setting it; the lock keeps two writers from racing on it.
    with _UMASK_LOCK:
        mask = os.umask(0)
        os.umask(mask)
    return mask


def atomic_write(path: str | Path, write: Callable[[BinaryIO], object]) -> Path:
    """Write ``path`` through ``write(stream)`` on a temporary file, then rename it into place.

    Args:
        path: destination; parent folders are created.
        write: fills the binary stream (e.g. ``lambda s: torch.save(obj, s)``).

    Returns:
        ``path`` as a :class:`~pathlib.Path`.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp creates 0600; artifacts get normal modes
        with os.fdopen(handle, "wb") as stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_write`)."""
    return atomic_write(path, lambda stream: stream.write(data))


def atomic_write_json(path: str | Path, payload: Any) -> Path:
    """Write ``payload`` as indented, key-sorted JSON atomically (non-JSON values via ``str``)."""
    data = json.dumps(payload, indent=2, sort_keys=True, default=str).encode("utf-8")
    return atomic_write_bytes(path, data)
