"""The one git-revision / package-version lookup every package's manifests use."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from navi_common.provenance import git_revision, package_versions
from navi_contracts import paths


def test_revision_of_this_checkout_is_head() -> None:
    head = subprocess.run(
        ["git", "-C", str(paths.repo_root()), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    revision = git_revision()
    assert revision is not None and re.fullmatch(r"[0-9a-f]{40}(\+dirty)?", revision)
    assert revision.removesuffix("+dirty") == head


def test_revision_outside_git_is_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NAVI_REPO_ROOT", str(tmp_path))
    paths.repo_root.cache_clear()
    try:
        assert git_revision() is None
    finally:
        paths.repo_root.cache_clear()


def test_revision_without_git_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")  # no git executable: OSError, answered with None
    assert git_revision() is None


def test_package_versions_name_missing_packages() -> None:
    versions = package_versions(["navi-contracts", "no-such-distribution-navi"])
    assert versions == {"navi-contracts": "0.1.0", "no-such-distribution-navi": "not installed"}
