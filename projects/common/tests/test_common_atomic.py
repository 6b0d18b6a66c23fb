"""Atomic writes: the old file survives any failure, no temporary file is left behind."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import BinaryIO

import pytest

from navi_common.atomic import atomic_write, atomic_write_bytes, atomic_write_json


def test_writes_creates_parents_and_uses_normal_modes(tmp_path: Path) -> None:
    path = atomic_write_bytes(tmp_path / "a" / "b.bin", b"payload")
    assert path.read_bytes() == b"payload"
    assert stat.S_IMODE(path.stat().st_mode) & 0o044  # readable by others unless the umask forbids
    atomic_write_json(tmp_path / "m.json", {"b": 1, "a": Path("x")})
    assert json.loads((tmp_path / "m.json").read_text()) == {"a": "x", "b": 1}


def test_a_failing_writer_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = atomic_write_bytes(tmp_path / "f.bin", b"old")

    def broken(stream: BinaryIO) -> None:
        stream.write(b"half")
        raise RuntimeError("crash mid-write")

    with pytest.raises(RuntimeError):
        atomic_write(path, broken)
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.bin"]


def test_a_failing_rename_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = atomic_write_bytes(tmp_path / "f.bin", b"old")

    def no_rename(*_: object) -> None:
        raise OSError("power cut")

    monkeypatch.setattr(os, "replace", no_rename)
    with pytest.raises(OSError, match="power cut"):
        atomic_write_bytes(path, b"new")
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.bin"]
