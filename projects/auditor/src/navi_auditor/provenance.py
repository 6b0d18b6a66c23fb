"""What produced an artifact: package versions, git revision, time (stored in every file we write)."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from importlib import metadata
from typing import Any

from navi_contracts.paths import repo_root

_PACKAGES = ("navi-auditor", "navi-contracts", "navi-environment", "numpy", "torch")


def package_versions() -> dict[str, str]:
    """Installed versions of the packages that shape a recording."""
    versions = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def git_revision() -> str | None:
    """``HEAD`` of the repository (``+dirty`` with uncommitted changes), or None outside git."""
    root = str(repo_root())
    try:
        head = subprocess.run(
            ["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+dirty" if dirty else head


def provenance() -> dict[str, Any]:
    """``{"created_at", "versions", "git_revision"}`` for artifact metadata."""
    return {
        "created_at": datetime.now(UTC).isoformat(),
        "versions": package_versions(),
        "git_revision": git_revision(),
    }
