"""One episode length for every path: in-process training, ``navi-environment serve`` and ``explore``.

Why: the trainer truncated its in-process episodes at 500 steps through an actor-side override
while the served and explored simulator used 2000, so one policy saw different episodes in-process
and as a service. The length now lives once, in ``EnvironmentSettings.episode.max_steps``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from navi_actor.config import ActorSettings, EnvironmentChoice
from navi_actor.runners import env_factory
from navi_environment.cli_settings import environment_settings
from navi_environment.config import EnvironmentSettings


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith("NAVI_ENV_EPISODE"):
            monkeypatch.delenv(name)
    yield
    structlog.reset_defaults()  # environment_settings() configures logging for its process


def _in_process_max_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """Build the trainer's in-process environment with the simulator replaced by a recorder."""
    import navi_environment.backend as backend_module

    seen: dict[str, Any] = {}

    class Recorder:
        def __init__(self, settings: EnvironmentSettings, *args: Any, **kwargs: Any) -> None:
            seen["settings"] = settings

    monkeypatch.setattr(backend_module, "SdfDagBackend", Recorder)
    scene = tmp_path / "scene.gmdag"
    scene.write_bytes(b"")
    choice = ActorSettings(environment={"gmdag_file": scene}).environment
    env_factory.build_environment(choice, 2, "cpu")
    return int(seen["settings"].episode.max_steps)


def test_the_default_is_500_and_the_actor_has_no_override_of_its_own() -> None:
    assert EnvironmentSettings().episode.max_steps == 500
    assert not any("episode" in name for name in EnvironmentChoice.model_fields)


def test_training_serve_and_explore_truncate_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _in_process_max_steps(tmp_path, monkeypatch) == 500
    assert environment_settings().episode.max_steps == 500  # navi-environment serve / step
    monkeypatch.setenv("NAVI_ENV_EPISODE__MAX_STEPS", "40")
    assert _in_process_max_steps(tmp_path, monkeypatch) == 40
    assert environment_settings().episode.max_steps == 40
    assert EnvironmentSettings().episode.max_steps == 40  # what explore builds its backend from
