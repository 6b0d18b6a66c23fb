"""``navi-actor train --backend ray``: the options reach the settings, and a missing Ray is a clear error."""

from __future__ import annotations

import builtins
import sys
from typing import Any

import pytest
from click.testing import CliRunner

from navi_actor.cli import build_settings, main

pytestmark = pytest.mark.usefixtures("restore_process_state")


def test_train_help_documents_the_ray_options() -> None:
    result = CliRunner().invoke(main, ["train", "--help"])
    assert result.exit_code == 0
    assert "--backend [local|ray]" in result.output and "--num-workers" in result.output
    assert "--address" in result.output and "--learners" in result.output


def test_ray_settings_from_kwargs() -> None:
    settings = build_settings(train={"backend": "ray"}, distributed={"num_workers": 3, "address": "auto"})
    assert settings.train.backend == "ray" and settings.distributed.num_workers == 3
    assert settings.distributed.address == "auto"


def test_learners_reach_the_settings_and_must_divide_the_drones() -> None:
    settings = build_settings(distributed={"learners": 2, "learner_cpus": 0.5})
    assert settings.distributed.learners == 2 and settings.distributed.learner_cpus == 0.5
    assert build_settings().distributed.learners == 1  # one learner unless asked
    args = ["train", "--backend", "ray", "--environment-backend", "point", "--no-telemetry"]
    args += ["--total-steps", "8", "--num-workers", "2", "--num-actors", "4", "--learners", "3"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "--learners 3 must divide the 8 drones of one update" in result.output


def test_backend_ray_without_ray_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_ray(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "ray", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_ray)
    result = CliRunner().invoke(
        main,
        [
            "train",
            "--backend",
            "ray",
            "--environment-backend",
            "point",
            "--no-telemetry",
            "--total-steps",
            "8",
        ],
    )
    assert result.exit_code != 0
    assert "uv sync --extra distributed" in result.output
