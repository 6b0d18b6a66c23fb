"""DAgger during PPO (``ppo.dagger_every_steps``): the policy flies its mean action in the real
simulator, the frontier planner labels every step, and the label loss pulls the mean toward them."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

TINY_POLICY = {"embed_dim": 32, "vit_dim": 32, "vit_layers": 1, "ssm_head_dim": 16, "ssm_chunk": 8}

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def scenes(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    from navi_environment.corpus.settings import CompileSettings
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import write_gmdag

    folder = tmp_path_factory.mktemp("scenes")
    paths = []
    for seed in (0, 1):
        asset = compile_source(f"procedural:maze:seed={seed}", CompileSettings(), resolution=32).asset
        write_gmdag(asset, folder / f"maze_{seed:03d}.gmdag")
        paths.append(folder / f"maze_{seed:03d}.gmdag")
    return paths


def _settings(**overrides: Any) -> Any:
    from navi_actor.config import ActorSettings

    values: dict[str, Any] = {
        "temporal_core": "gru",
        "policy": TINY_POLICY,
        "rollout": {"num_actors": 2, "rollout_length": 16, "sequence_length": 8},
        "ppo": {"epochs": 2, "num_minibatches": 2},
        "telemetry": {"enabled": False},
        "checkpoint": {"every_steps": 10_000},
        **overrides,
    }
    return ActorSettings(**values)


def _env(scenes: list[Path], max_steps: int = 12) -> Any:
    from navi_environment.backend import SdfDagBackend
    from navi_environment.config import EnvironmentSettings

    sensor = EnvironmentSettings(
        sensor={"azimuth_bins": 32, "elevation_bins": 8}, episode={"max_steps": max_steps}
    )
    return SdfDagBackend(sensor, 2, scene_paths=scenes)


def test_the_label_loss_fits_the_mean_action_to_the_planners_labels_on_its_own_flights(
    tmp_path: Path, scenes: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from navi_actor.bc.own_flights import LABELLER, LabelledFlights
    from navi_actor.bc.trainer import sequence_mse
    from navi_actor.evaluation import baselines
    from navi_actor.models import NaviPolicy

    labellers: list[dict[str, Any]] = []
    planner = baselines.FrontierPolicy

    def labeller(settings: Any, drones: int, **options: Any) -> Any:
        labellers.append(options)
        return planner(settings, drones, **options)

    monkeypatch.setattr(baselines, "FrontierPolicy", labeller)

    torch.manual_seed(0)
    env = _env(scenes)
    policy = NaviPolicy(_settings().policy_config(tuple(env.observation_shape)))
    flights = LabelledFlights(tmp_path / "dagger", window=8, streams=4, device=torch.device("cpu"), seed=1)
    assert float(flights.loss(policy)) == 0.0  # nothing flown yet: no term
    recording = flights.fly(env, policy, 48, seed=3)
    assert recording.steps == 48 and flights.rounds == 1 and flights.data is not None
    assert len(flights.data) == 48 and all(path.name.startswith("ppo1-") for path in recording.files)
    meta = json.loads(str(np.load(recording.files[0])["metadata"]))
    assert meta["labels"] == "frontier_on_pilot_flight"  # the planner labelled the policy's flight
    # at the drone's height, replanning every step
    assert labellers == [LABELLER] and LABELLER["follow_height"] and LABELLER["replan_steps"] == 1
    before = sequence_mse(policy, flights.data, 2, 8)
    optimizer = torch.optim.Adam(policy.parameters(), lr=3e-3)
    for _ in range(60):
        loss = flights.loss(policy)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    after = sequence_mse(policy, flights.data, 2, 8)
    assert after < 0.5 * before, (before, after)  # the mean action moved to the planner's labels
    flights.fly(env, policy, 24, seed=4)  # a second round aggregates with the first
    assert flights.rounds == 2 and len(flights.data) == 72
    assert len(list((tmp_path / "dagger").glob("ppo2-*.npz"))) == 2


def _count_overlapping_calls(env: Any, methods: tuple[str, ...]) -> dict[str, int]:
    """Wrap ``env``'s ``methods`` to count calls, and those made while another was still running."""
    counts, busy = {"calls": 0, "overlapping": 0}, [0]

    def wrapped(original: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            counts["calls"] += 1
            counts["overlapping"] += busy[0] > 0
            busy[0] += 1
            try:
                time.sleep(0.001)  # widen the window a second thread would need
                return original(*args, **kwargs)
            finally:
                busy[0] -= 1

        return call

    for name in methods:
        setattr(env, name, wrapped(getattr(env, name)))
    return counts


@pytest.mark.parametrize("collect_ahead", [False, True])  # ahead: the rollout in flight ends first
def test_training_flies_labelled_rounds_on_schedule_and_adds_the_loss(
    tmp_path: Path, scenes: list[Path], collect_ahead: bool
) -> None:
    from navi_actor.runners.env_factory import BuiltEnvironment
    from navi_actor.runners.on_policy_runner import OnPolicyRunner

    # rollouts of 32 steps; flights every 64: after updates 2 and 4 (at step 64 and 128), none at 192
    # (a quarter of the interval, 16, is more than the 0 steps left of the budget)
    config = _settings(
        ppo={"epochs": 2, "num_minibatches": 2, "dagger_every_steps": 64, "dagger_steps": 16},
        train={"total_steps": 192},
        rollout={"num_actors": 2, "rollout_length": 16, "sequence_length": 8, "collect_ahead": collect_ahead},
    )
    built = BuiltEnvironment(_env(scenes))
    runner = OnPolicyRunner(config, built, artifacts_dir=tmp_path)
    restarts: list[int] = []
    restart = runner.collector.restart

    def counted(seed: int) -> None:
        restarts.append(seed)
        restart(seed)

    runner.collector.restart = counted
    overlaps = _count_overlapping_calls(built.env, ("step", "reset"))
    summary = runner.run_training()
    assert summary.steps_this_run == 192
    assert overlaps["calls"] > 0 and overlaps["overlapping"] == 0  # one thread at a time steps the simulator
    folder = summary.run_dir / "dagger"
    assert sorted({path.name.split("-")[0] for path in folder.glob("*.npz")}) == ["ppo1", "ppo2"]
    assert len(restarts) == 2  # the rollouts' drones restart after each flight reset the simulator
    records = [json.loads(line) for line in (summary.run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [record["charts/step_id"] for record in records] == [32, 64, 96, 128, 160, 192]
    with_loss = ["losses/dagger_loss" in record for record in records]
    assert with_loss == [False, False, True, True, True, True]  # from the update after the first flight
    assert all(record["losses/dagger_loss"] > 0 for record in records[2:])
    events = [json.loads(line)["event"] for line in (summary.run_dir / "logs" / "events.jsonl").open()]
    assert events.count("actor.train.dagger_round") == 2


def test_the_label_loss_needs_the_real_simulator_in_process() -> None:
    from navi_actor.config import ActorSettings

    with pytest.raises(ValueError, match=r"ppo\.dagger_every_steps needs the sdfdag environment"):
        ActorSettings(ppo={"dagger_every_steps": 1024}, environment={"backend": "point"})
    with pytest.raises(ValueError, match=r"train\.backend=local"):
        ActorSettings(ppo={"dagger_every_steps": 1024}, train={"backend": "ray"})
