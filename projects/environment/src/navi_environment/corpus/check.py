"""``check-sdfdag``: validate .gmdag files (every format rule) and cross-check a corpus manifest."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from navi_environment.corpus.manifest import MANIFEST_NAME, ManifestError, load_manifest
from navi_environment.gmdag.format import GmdagFormatError
from navi_environment.gmdag.reader import decode_gmdag


def check_file(path: Path, expected: dict[str, Any] | None = None) -> dict[str, Any]:
    """Validate one file.

    Args:
        path: the .gmdag file.
        expected: manifest fields to cross-check (``sha256``, ``node_count``, ``resolution``).

    Returns:
        A report: ``file``, ``ok``, ``error`` (None when ok) and, when readable, ``resolution``,
        ``voxel_size_m``, ``node_count``, ``bytes``, ``sha256``.
    """
    report: dict[str, Any] = {"file": str(path), "ok": False, "error": None}
    try:
        data = path.read_bytes()
    except OSError as error:
        report["error"] = f"{path}: cannot read ({error.strerror or error})"
        return report
    digest = hashlib.sha256(data).hexdigest()
    report.update(bytes=len(data), sha256=digest)
    try:
        asset = decode_gmdag(data, source=str(path))
    except GmdagFormatError as error:
        report["error"] = str(error)
        return report
    report.update(
        resolution=asset.resolution, voxel_size_m=asset.voxel_size, node_count=int(asset.nodes.shape[0])
    )
    for key in ("sha256", "node_count", "resolution"):
        if expected is not None and expected.get(key) != report[key]:
            report["error"] = (
                f"{path}: {key} {report[key]!r} differs from the manifest's {expected.get(key)!r}"
            )
            return report
    report["ok"] = True
    return report


def check_root(root: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Validate every .gmdag under ``root`` and, when present, the manifest's entries.

    Returns:
        (one report per file, problems that belong to no single file, e.g. manifest errors or
        files the manifest lists but the folder lacks).
    """
    problems: list[str] = []
    expected: dict[str, dict[str, Any]] = {}
    if (root / MANIFEST_NAME).is_file():
        try:
            manifest = load_manifest(root)
        except ManifestError as error:
            problems.append(str(error))
        else:
            for entry in manifest.scenes:
                expected[str((root / entry.file).resolve())] = entry.model_dump()
                if not (root / entry.file).is_file():
                    problems.append(f"{root / entry.file}: listed in {MANIFEST_NAME} but missing")
    files = sorted(root.rglob("*.gmdag"))
    if not files and not problems:
        problems.append(f"{root}: no .gmdag files found")
    reports = [check_file(path, expected.get(str(path.resolve()))) for path in files]
    return reports, problems
