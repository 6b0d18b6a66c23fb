"""Workspace-level guarantees: every console script answers --help, README and CI agree, paths resolve."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from click.testing import CliRunner

from navi_contracts.paths import artifacts_root, repo_root

ROOT = Path(__file__).resolve().parents[1]
CONSOLE_SCRIPTS = (
    "navi-environment",
    "navi-actor",
    "brain",
    "navi-auditor",
    "explore",
    "navi-dashboard",
    "navi-keys",
)
MEMBERS = (
    "contracts",
    "projects/common",
    "projects/environment",
    "projects/actor",
    "projects/auditor",
    "projects/dashboard",
)


@pytest.mark.parametrize("name", CONSOLE_SCRIPTS)
def test_console_script_answers_help(name: str) -> None:
    (script,) = [ep for ep in entry_points(group="console_scripts") if ep.name == name]
    result = CliRunner().invoke(script.load(), ["--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output


def test_every_member_is_a_versioned_src_package_with_tests() -> None:
    root = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert set(root["tool"]["uv"]["workspace"]["members"]) == {"contracts", "projects/*"}
    for member in MEMBERS:
        project = tomllib.loads((ROOT / member / "pyproject.toml").read_text())["project"]
        assert project["version"]
        assert project["requires-python"] == ">=3.11"
        package = project["name"].replace("-", "_")
        assert (ROOT / member / "src" / package / "py.typed").is_file()
        assert (ROOT / member / "tests").is_dir()
        root_dependencies = {dep.split("[")[0] for dep in root["project"]["dependencies"]}  # drop extras
        assert project["name"] in root_dependencies


def test_readme_test_command_is_what_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "uv run navi-actor train" in readme
    assert "uv run pytest" in readme
    ci_commands = [line.strip() for line in ci.splitlines() if line.strip().startswith("uv run pytest")]
    assert ci_commands == ["uv run pytest"]


def test_artifacts_resolve_from_repo_root_not_cwd(tmp_path: Path) -> None:
    assert repo_root() == ROOT
    assert artifacts_root() == ROOT / "artifacts"
    code = "from navi_contracts.paths import artifacts_root; print(artifacts_root())"
    env = {k: v for k, v in os.environ.items() if k != "NAVI_REPO_ROOT"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    assert Path(out.stdout.strip()) == ROOT / "artifacts"
