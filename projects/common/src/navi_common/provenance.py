"""What produced an artifact: the git revision and installed package versions (for manifests).

One implementation for every package, so a run folder, a corpus manifest and a recording say the
same thing the same way: ``None`` where there is no git checkout (or no git), ``"not installed"``
for a package that is missing.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from importlib import metadata

from navi_contracts.paths import repo_root


def git_revision() -> str | None:
    """``HEAD`` of the repository (``+dirty`` when tracked files changed), or None outside git."""
    root = str(repo_root())
    try:
        head = subprocess.run(
            ["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+dirty" if dirty else head


def package_versions(names: Iterable[str]) -> dict[str, str]:
    """Installed version of each distribution in ``names`` (``"not installed"`` when missing)."""
    versions: dict[str, str] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions
