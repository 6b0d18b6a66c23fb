"""The evaluate command's sensor check: a checkpoint is refused in one line where its sensor is not
the environment's, so no evaluation silently reads depth in another scale."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import click
import pytest

from navi_actor.evaluation.command import check_sensor
from navi_actor.models.config import PolicyConfig
from navi_environment.config import EnvironmentSettings


def simulator(horizon_m: float, azimuth: int = 256, elevation: int = 48) -> SimpleNamespace:
    """What check_sensor reads of the simulator backend: its observation shape and settings."""
    settings = EnvironmentSettings(
        sensor={"horizon_m": horizon_m, "azimuth_bins": azimuth, "elevation_bins": elevation}
    )
    return SimpleNamespace(observation_shape=(3, azimuth, elevation), settings=settings)


def frontier_policy(horizon_m: float) -> PolicyConfig:
    return PolicyConfig(visit_input=True, visits={"source": "frontiers", "horizon_m": horizon_m})


def test_a_frontier_map_policy_is_refused_where_the_sensor_horizon_differs() -> None:
    check_sensor(Path("p.pt"), frontier_policy(30.0), simulator(30.0))  # the same horizon: accepted
    with pytest.raises(
        click.ClickException, match="maps depth with a 30 m sensor horizon but the environment's is 20 m"
    ):
        check_sensor(Path("p.pt"), frontier_policy(30.0), simulator(20.0))


def test_the_horizon_is_not_asked_of_policies_without_the_map_or_of_backends_without_settings() -> None:
    no_map = PolicyConfig(visit_input=False, visits={"source": "frontiers", "horizon_m": 30.0})
    check_sensor(Path("p.pt"), no_map, simulator(20.0))  # it never turns depth into metres
    remote = SimpleNamespace(observation_shape=(3, 256, 48))  # a backend that carries no horizon
    check_sensor(Path("p.pt"), frontier_policy(30.0), remote)


def test_another_ray_grid_is_refused_first() -> None:
    with pytest.raises(
        click.ClickException, match=r"expects a \(256, 48\) sensor but the environment gives \(128, 48\)"
    ):
        check_sensor(Path("p.pt"), frontier_policy(30.0), simulator(30.0, azimuth=128))
