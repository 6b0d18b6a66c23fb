"""What produced an artifact: package versions, git revision, time (stored in every file we write).

The revision and versions come from :mod:`navi_common.provenance`, shared by every package.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from navi_common.provenance import git_revision, package_versions

_PACKAGES = ("navi-auditor", "navi-contracts", "navi-common", "navi-environment", "numpy", "torch")


def provenance() -> dict[str, Any]:
    """``{"created_at", "versions", "git_revision"}`` for artifact metadata."""
    return {
        "created_at": datetime.now(UTC).isoformat(),
        "versions": package_versions(_PACKAGES),
        "git_revision": git_revision(),
    }
