"""What produced an artifact: package versions and time, recorded in every manifest.

The git revision and the version lookup are :mod:`navi_contracts.provenance`, shared by every package.
"""

from __future__ import annotations

from datetime import UTC, datetime

from navi_contracts.provenance import package_versions as installed_versions

_PACKAGES = ("navi-environment", "navi-contracts", "numpy", "numba", "trimesh", "scipy")


def package_versions() -> dict[str, str]:
    """Installed versions of the packages that shape compiled output."""
    return installed_versions(_PACKAGES)


def utc_now() -> str:
    """Current time, ISO 8601 UTC with seconds."""
    return datetime.now(UTC).isoformat(timespec="seconds")
