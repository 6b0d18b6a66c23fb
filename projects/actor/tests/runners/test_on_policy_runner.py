"""The trainer end to end on the point environment: run folder, checkpoints, resume, Ctrl+C, promote."""

from __future__ import annotations

import json
import math
import os
import signal
from pathlib import Path
from typing import Any

import pytest
import torch
from point_runner import TINY_POLICY, interrupt_at_update, point_settings

from navi_actor.checkpoints import CheckpointError, load_checkpoint
from navi_actor.config import ActorSettings
from navi_actor.memory.frontiers import ray_gap_m
from navi_actor.models.config import PolicyConfig
from navi_actor.registry import ModelRegistry
from navi_actor.runners.env_factory import build_environment
from navi_actor.runners.on_policy_runner import OnPolicyRunner
from navi_common.signals import on_termination, raise_interrupt

pytestmark = pytest.mark.usefixtures("one_torch_thread")

settings = point_settings


def runner(config: ActorSettings, artifacts: Path, checkpoint: Path | None = None) -> OnPolicyRunner:
    built = build_environment(config.environment, config.rollout.num_actors, config.train.device)
    return OnPolicyRunner(config, built, artifacts_dir=artifacts, checkpoint=checkpoint)


def test_run_writes_manifest_metrics_checkpoint_and_promotes(tmp_path: Path) -> None:
    summary = runner(settings(), tmp_path).run_training()
    assert summary.steps_this_run == 64 and summary.updates_this_run == 2 and not summary.interrupted
    manifest = json.loads((summary.run_dir / "manifest.json").read_text())
    assert manifest["settings"]["rollout"]["num_actors"] == 2
    assert {"navi-actor", "torch"} <= set(manifest["versions"])
    assert "git_revision" in manifest and manifest["policy_config"]["temporal_core"] == "gru"
    lines = (summary.run_dir / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 2
    assert all("NaN" not in line for line in lines)  # strict JSON: undefined values are null
    record = json.loads(lines[-1])
    assert record["charts/step_id"] == 64
    assert {"losses/policy_loss", "losses/value_loss", "time/update_policy_eval", "charts/sps"} <= set(record)
    assert any(key.startswith("reward/shaping/") for key in record)
    assert summary.final_checkpoint is not None
    final = load_checkpoint(summary.final_checkpoint)
    assert final.step_id == 64 and final.update_index == 2 and final.training_source == "rl"
    assert set(final.auxiliary) == {"rnd", "rnd_optimizer"}
    assert json.loads(final.settings_json)["train"]["total_steps"] == 64
    assert summary.reward_ema is not None and final.episode_count >= 4
    events = [json.loads(line)["event"] for line in (summary.run_dir / "logs" / "events.jsonl").open()]
    assert "actor.checkpoint.saved" in events and events[-1] == "actor.train.finished"
    assert [entry.version for entry in summary.promoted] == [1]
    assert load_checkpoint(ModelRegistry(tmp_path / "models").latest_path).step_id == 64


def test_auto_resume_continues_the_same_counters_optimizer_and_rng(tmp_path: Path) -> None:
    first = runner(settings(checkpoint={"auto_promote": False}), tmp_path).run_training()
    assert first.final_checkpoint is not None
    ModelRegistry(tmp_path / "models").promote(first.final_checkpoint)
    saved = load_checkpoint(first.final_checkpoint)
    resumed = runner(settings(checkpoint={"auto_promote": False}), tmp_path)
    assert resumed.counters.step_id == 64 and resumed.counters.episode_count == saved.episode_count
    assert resumed.learner.update_index == 2
    assert torch.equal(torch.get_rng_state(), saved.rng["torch"])
    assert torch.equal(resumed.shuffle.get_state(), saved.rng["shuffle"])
    steps = {int(state["step"].item()) for state in resumed.learner.optimizer.state.values()}
    epochs = [json.loads(line)["charts/epochs"] for line in (first.run_dir / "metrics.jsonl").open()]
    assert len(epochs) == 2 and steps == {2 * sum(epochs)}  # 2 minibatches an epoch (a KL stop cuts epochs)
    for key, tensor in saved.model.items():
        assert torch.equal(resumed.policy.state_dict()[key], tensor)
    assert resumed.shaping.hook is not None and resumed.shaping.hook.global_step == 64
    second = resumed.run_training()
    assert second.step_id == 128 and second.steps_this_run == 64
    final = load_checkpoint(second.final_checkpoint) if second.final_checkpoint else None
    assert final is not None and final.update_index == 4
    assert final.parent_checkpoint is not None and final.parent_checkpoint.endswith("v001.pt")


def test_no_auto_resume_and_incompatible_requests(tmp_path: Path) -> None:
    first = runner(settings(), tmp_path).run_training()
    ModelRegistry(tmp_path / "models").promote(first.final_checkpoint)  # type: ignore[arg-type]
    fresh = runner(settings(checkpoint={"auto_resume": False}), tmp_path)
    assert fresh.counters.step_id == 0
    other_core = runner(settings(temporal_core="mambapy"), tmp_path)  # latest is gru: skipped
    assert other_core.counters.step_id == 0 and other_core.policy.cfg.temporal_core == "mambapy"
    with pytest.raises(CheckpointError, match="temporal_core='gru' but 'mambapy'"):
        runner(settings(temporal_core="mambapy"), tmp_path, checkpoint=first.final_checkpoint)


def test_ctrl_c_saves_a_final_checkpoint(tmp_path: Path) -> None:
    train = runner(settings(train={"total_steps": None}), tmp_path)
    interrupt_at_update(train, 2)
    summary = train.run_training()
    assert summary.interrupted and summary.updates_this_run == 1
    assert summary.final_checkpoint is not None and summary.final_checkpoint.is_file()
    assert load_checkpoint(summary.final_checkpoint).step_id == 32


def test_ctrl_c_while_a_metrics_line_is_written_keeps_checkpoint_and_metrics_in_step(tmp_path: Path) -> None:
    """The race CI once hit: Ctrl+C after the step was counted, before its metrics line was written."""
    train = runner(settings(train={"total_steps": None}), tmp_path)
    original = train.run.append_metrics
    calls = {"n": 0}

    def interrupt_while_writing(record: dict[str, Any]) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            os.kill(os.getpid(), signal.SIGINT)  # lands right here, between counting and writing
        original(record)

    train.run.append_metrics = interrupt_while_writing  # type: ignore[method-assign]
    with on_termination(raise_interrupt):
        summary = train.run_training()
    assert summary.interrupted and summary.updates_this_run == 2
    lines = (summary.run_dir / "metrics.jsonl").read_text().splitlines()
    assert summary.final_checkpoint is not None
    assert load_checkpoint(summary.final_checkpoint).step_id == json.loads(lines[-1])["charts/step_id"] == 64


def test_checkpoint_cadence_keeps_the_last_n(tmp_path: Path) -> None:
    config = settings(
        train={"total_steps": 128}, checkpoint={"every_steps": 32, "keep": 2, "auto_promote": False}
    )
    summary = runner(config, tmp_path).run_training()
    names = sorted(p.name for p in (summary.run_dir / "checkpoints").iterdir())
    assert names == ["step_000000000096.pt", "step_000000000128.pt"]
    assert not (tmp_path / "models").exists()


def test_a_time_bounded_run_anneals_its_learning_rate(tmp_path: Path) -> None:
    config = settings(train={"total_steps": None, "max_minutes": 0.1}, ppo={"learning_rate": 1e-3})
    summary = runner(config, tmp_path).run_training()
    assert summary.updates_this_run >= 2
    lines = (summary.run_dir / "metrics.jsonl").read_text().splitlines()
    rates = [json.loads(line)["charts/learning_rate"] for line in lines]
    # the last update may start after the budget ran out during its collection: rate 0, not negative
    assert 0.0 < rates[0] < 1e-3 and all(0.0 <= rate < 1e-3 for rate in rates)
    assert rates == sorted(rates, reverse=True) and rates[-1] < rates[0]


def test_a_memory_reading_policy_trains_its_memory_projection_and_resumes(tmp_path: Path) -> None:
    eager = {"exclusion_window": 0, "write_every": 1}
    config = settings(policy={"memory_input": True}, shaping={"memory": eager})
    summary = runner(config, tmp_path).run_training()
    loaded = load_checkpoint(summary.final_checkpoint)
    assert loaded.policy_config.memory_input and loaded.policy_config.memory.write_every == 1
    weight = loaded.model["memory_projection.weight"]
    assert torch.count_nonzero(weight) > 0  # PPO learned from the stored loop scores
    resumed = runner(config, tmp_path).run_training()  # auto-resume: the projection comes back
    assert load_checkpoint(resumed.final_checkpoint).step_id == 128


@pytest.mark.parametrize("source", ["positions", "frontiers"])
def test_a_visit_reading_policy_trains_its_projection_and_resumes(tmp_path: Path, source: str) -> None:
    visits = {"write_every": 1, "exclusion_window": 0, "source": source}
    config = settings(policy={"visit_input": True, "visits": visits})
    summary = runner(config, tmp_path).run_training()
    loaded = load_checkpoint(summary.final_checkpoint)
    assert loaded.policy_config.visit_input and loaded.policy_config.visits.write_every == 1
    assert loaded.policy_config.visits.source == source
    assert torch.count_nonzero(loaded.model["visit_projection.weight"]) > 0  # PPO read the stored features
    resumed = runner(config, tmp_path).run_training()
    assert load_checkpoint(resumed.final_checkpoint).step_id == 128


def test_a_visit_predicting_policy_trains_its_head_logs_the_loss_and_resumes(tmp_path: Path) -> None:
    visits = {"source": "positions", "write_every": 1, "exclusion_window": 0}
    config = settings(policy={"visit_input": False, "visit_prediction": True, "visits": visits})
    summary = runner(config, tmp_path).run_training()
    loaded = load_checkpoint(summary.final_checkpoint)
    assert loaded.policy_config.visit_prediction and not loaded.policy_config.visit_input
    assert tuple(loaded.model["visit_head.weight"].shape) == (9, TINY_POLICY["embed_dim"])
    records = [json.loads(line) for line in (summary.run_dir / "metrics.jsonl").read_text().splitlines()]
    losses = [record["losses/visit_prediction_loss"] for record in records if "losses/policy_loss" in record]
    assert len(losses) == 2 and min(losses) > 0.0  # every update trained the head on the poses' features
    resumed = runner(config, tmp_path).run_training()
    assert load_checkpoint(resumed.final_checkpoint).step_id == 128


def test_a_policy_reading_its_previous_action_trains_the_projection_and_resumes(tmp_path: Path) -> None:
    config = settings(policy={"previous_action_input": True})
    summary = runner(config, tmp_path).run_training()
    loaded = load_checkpoint(summary.final_checkpoint)
    assert loaded.policy_config.previous_action_input
    assert torch.count_nonzero(loaded.model["action_projection.weight"]) > 0  # PPO trained it
    resumed = runner(config, tmp_path).run_training()  # auto-resume: the projection comes back
    assert load_checkpoint(resumed.final_checkpoint).step_id == 128


def test_quiet_drones_reach_the_collector_from_the_settings(tmp_path: Path) -> None:
    trainer = runner(settings(rollout={"quiet_drones": 1, "quiet_noise_scale": 0.25}), tmp_path)
    summary = trainer.run_training()
    assert summary.steps_this_run == 64
    scales = trainer.storage.noise_log_scales  # the last rollout: drone 1 of 2 quiet
    assert (scales[:, 0] == 0).all() and torch.allclose(scales[:, 1], torch.tensor(math.log(0.25)))


def test_total_steps_short_of_a_whole_rollout_says_how_many_it_trains(tmp_path: Path) -> None:
    def trained(total_steps: int, artifacts: Path) -> tuple[int, list[str]]:
        notes: list[str] = []
        config = settings(train={"total_steps": total_steps})  # rollouts: 16 steps x 2 drones = 32
        built = build_environment(config.environment, 2, config.train.device)
        summary = OnPolicyRunner(config, built, artifacts_dir=artifacts, progress=notes.append).run_training()
        return summary.steps_this_run, notes

    steps, notes = trained(40, tmp_path / "a")
    assert steps == 64
    assert (
        "--total-steps 40 is not a whole number of rollouts (16 steps x 2 drones = 32): "
        "training stops after 64 steps"
    ) in notes
    steps, notes = trained(64, tmp_path / "b")
    assert steps == 64 and not any("whole number of rollouts" in note for note in notes)


@pytest.mark.parametrize(("cell_m", "warned"), [(0.25, True), (2.0, False)])
def test_a_frontier_map_finer_than_the_gap_between_rays_is_warned_about(
    tmp_path: Path, cell_m: float, warned: bool
) -> None:
    visits = {"source": "frontiers", "frontier_cell_m": cell_m}  # 16 azimuth rays: 1.18 m apart at 3 m
    summary = runner(settings(policy={"visit_input": True, "visits": visits}), tmp_path).run_training()
    lines = (summary.run_dir / "logs" / "events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    found = [event for event in events if event["event"] == "actor.train.frontier_map_finer_than_rays"]
    assert events[0]["event"] == "actor.train.started"
    if warned:
        assert len(found) == 1 and found[0]["ray_gap_m"] == pytest.approx(2 * math.pi * 3.0 / 16, abs=1e-3)
        assert found[0]["frontier_cell_m"] == cell_m and found[0]["azimuth_bins"] == 16
    else:
        assert not found
    defaults = PolicyConfig()  # the real sensor on the default map: no warning
    assert ray_gap_m(defaults.visits.frontier_sight_m, defaults.azimuth) <= defaults.visits.frontier_cell_m
