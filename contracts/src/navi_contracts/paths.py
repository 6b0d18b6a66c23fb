"""Repository-root path resolution.

Artifacts must land in the same place whatever directory a command is started from, so every path
to ``artifacts/`` is resolved from the repository root (the folder holding the workspace
``pyproject.toml`` and ``uv.lock``), never from the working directory.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

_ENV_OVERRIDE = "NAVI_REPO_ROOT"


def _find_root(start: Path) -> Path | None:
    for candidate in (start, *start.parents):
        if (candidate / "uv.lock").exists() and (candidate / "pyproject.toml").is_file():
            return candidate
    return None


@cache
def repo_root() -> Path:
    """The Navi repository root.

    ``NAVI_REPO_ROOT`` wins when set. Otherwise the root is found by walking up from this source
    file (editable workspace installs), then from the working directory. Falls back to the working
    directory for a wheel installed outside any checkout.
    """
    override = os.environ.get(_ENV_OVERRIDE)
    if override:
        return Path(override).resolve()
    for start in (Path(__file__).resolve().parent, Path.cwd().resolve()):
        found = _find_root(start)
        if found is not None:
            return found
    return Path.cwd().resolve()


def artifacts_root() -> Path:
    """``<repo>/artifacts``: the one place generated output goes."""
    return repo_root() / "artifacts"


def dotenv_path() -> Path:
    """The shared root ``.env`` read by every package's settings."""
    return repo_root() / ".env"
