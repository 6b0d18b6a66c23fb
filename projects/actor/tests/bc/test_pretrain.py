"""Behaviour cloning end to end: the loss falls, the policy imitates a teacher on held-out episodes
far better than the mean-action baseline, windowed evaluation equals step-by-step acting, and the
checkpoint (training_source=bc, lineage) is promoted and continued by RL training."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from navi_actor.bc import BCConfig, freeze_log_std, load_demonstrations, sequence_mse
from navi_actor.bc.command import bc_pretrain, imitation_report
from navi_actor.bc.pretrain import run_pretrain
from navi_actor.bc.trainer import BCHistory
from navi_actor.checkpoints import load_checkpoint
from navi_actor.config import ActorSettings
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_actor.registry import ModelRegistry
from navi_actor.runners.env_factory import build_environment
from navi_actor.runners.on_policy_runner import OnPolicyRunner

AZ, EL = 16, 8
TINY = PolicyConfig(
    visit_input=False,
    azimuth=AZ, elevation=EL, temporal_core="gru", embed_dim=32, vit_dim=32, vit_layers=1, ssm_head_dim=16
)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def teacher(obs: np.ndarray) -> np.ndarray:
    """A deterministic pilot reading the depth channel: [N,3,Az,El] -> [N,4] in [-1, 1]."""
    depth = obs[:, 0]
    ahead = depth[:, [0, 1, AZ - 1]].mean(axis=(1, 2))
    left, right = depth[:, 2:6].mean(axis=(1, 2)), depth[:, AZ - 6 : AZ - 2].mean(axis=(1, 2))
    up, down = depth[:, :, -2:].mean(axis=(1, 2)), depth[:, :, :2].mean(axis=(1, 2))
    action = np.stack(
        [2 * ahead - 1, 2 * (up - down), np.tanh(3 * (left - right)), 3 * (left - right)], axis=1
    )
    return np.clip(action, -1, 1).astype(np.float32)


def write_teacher_demo(path: Path, frames: int, seed: int) -> Path:
    """Episodes of smoothly drifting sector depths, labelled by :func:`teacher`."""
    rng = np.random.default_rng(seed)
    sectors = rng.random((frames, 8, 4)).astype(np.float32)
    sectors = np.cumsum(sectors - 0.5, axis=0) * 0.25 + 0.5  # a random walk: consecutive frames are alike
    sectors = np.clip(sectors, 0.0, 1.0)
    depth = sectors.repeat(AZ // 8, axis=1).repeat(EL // 4, axis=2)  # [N, Az, El]
    obs = np.stack([depth, np.zeros_like(depth), (depth < 1).astype(np.float32)], axis=1)
    np.savez(
        path,
        observations=obs,
        actions=teacher(obs),
        episode_starts=np.arange(frames) % 40 == 0,
        segment_scenes=np.array(["synthetic"]),
        metadata=np.array(json.dumps({"schema_version": 1, "matrix_shape": [AZ, EL], "pilot": "teacher"})),
    )
    return path


@pytest.fixture(scope="module")
def demo_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("demos")
    for seed in range(2):
        write_teacher_demo(folder / f"teacher-{seed}.npz", 800, seed)
    return folder


@pytest.fixture(scope="module")
def pretrained(demo_folder, tmp_path_factory):
    config = BCConfig(epochs=20, sequence_length=16, streams=16, learning_rate=3e-3, holdout_fraction=0.2)
    artifacts = tmp_path_factory.mktemp("artifacts")
    with torch.random.fork_rng():
        torch.set_num_threads(1)
        result = run_pretrain(config, TINY, demonstrations=demo_folder, runs_root=artifacts / "runs", seed=1)
    return result, artifacts


def test_loss_falls_and_imitation_beats_the_mean_action_baseline(pretrained) -> None:
    result, _ = pretrained
    history = result.history
    assert result.frames + result.holdout_frames == 1600 and result.holdout_frames == 320
    assert history.train_nll[-1] < history.train_nll[0]
    assert history.train_mse[-1] < 0.5 * history.train_mse[0]
    assert history.holdout_mse[-1] < 0.25 * history.baseline_mse, (history.holdout_mse, history.baseline_mse)


def test_checkpoint_is_bc_with_frozen_log_std_and_provenance(pretrained) -> None:
    result, _ = pretrained
    checkpoint = load_checkpoint(result.checkpoint)
    assert checkpoint.training_source == "bc" and checkpoint.parent_checkpoint is None
    assert checkpoint.policy_config == TINY
    assert torch.equal(checkpoint.model["actor.log_std_param"], torch.full((4,), TINY.init_log_std))
    assert [source["pilot"] for source in checkpoint.corpus_summary["demonstrations"]] == [
        "teacher",
        "teacher",
    ]
    assert json.loads(checkpoint.settings_json)["bc"]["epochs"] == 20
    manifest = json.loads((result.checkpoint.parents[1] / "manifest.json").read_text())
    assert manifest["settings"]["bc"]["streams"] == 16 and "git_revision" in manifest
    assert len((result.checkpoint.parents[1] / "metrics.jsonl").read_text().splitlines()) == 20
    log_lines = (result.checkpoint.parents[1] / "logs" / "events.jsonl").read_text().splitlines()
    events = [json.loads(line)["event"] for line in log_lines]
    assert events[0] == "actor.bc.started" and events.count("actor.bc.epoch") == 20
    assert events[-1] == "actor.bc.checkpoint_written"


def test_windowed_evaluation_equals_step_by_step_acting(pretrained, demo_folder) -> None:
    """The held-out score uses the state the policy carries when it acts (no reset per window)."""
    result, _ = pretrained
    policy = NaviPolicy(TINY)
    policy.load_state_dict(load_checkpoint(result.checkpoint).model)
    data = load_demonstrations([demo_folder / "teacher-1.npz"]).select_episodes(torch.tensor([2, 3]))
    state, starts, errors = policy.initial_state(1), data.episode_starts, []
    for t in range(len(data)):
        out = policy.act(data.observations[t : t + 1].float(), state, starts[t : t + 1], deterministic=True)
        state = out.state
        errors.append((out.action - data.actions[t]).square().mean())
    stepwise = float(torch.stack(errors).mean())
    assert sequence_mse(policy, data, streams=1, length=7) == pytest.approx(stepwise, rel=1e-4)


def test_freeze_log_std_sets_and_excludes_it_from_gradients() -> None:
    policy = NaviPolicy(TINY)
    freeze_log_std(policy, -1.25)
    assert not policy.actor.log_std_param.requires_grad
    assert torch.equal(policy.actor.log_std_param, torch.full((4,), -1.25))
    gated = NaviPolicy(TINY.model_copy(update={"log_std_mode": "state"}))
    freeze_log_std(gated, None)  # the state gate is part of the std: cloning leaves it alone too
    assert gated.actor.log_std_layer is not None
    assert not any(p.requires_grad for p in gated.actor.log_std_layer.parameters())


def test_cli_continues_a_parent_then_promote_and_rl_training_resume(
    pretrained, demo_folder, tmp_path
) -> None:
    result, _ = pretrained
    out = tmp_path / "child.pt"
    cli = CliRunner().invoke(
        bc_pretrain,
        ["--demonstrations", str(demo_folder), "--checkpoint", str(result.checkpoint), "--epochs", "1",
         "--sequence-length", "8", "--streams", "4", "--out", str(out), "--torch-threads", "1",
         "--artifacts-dir", str(tmp_path), "--promote"],
    )  # fmt: skip
    assert cli.exit_code == 0, cli.output
    assert "held-out action MSE" in cli.output and " as v001 -> " in cli.output
    child = load_checkpoint(out)
    assert child.training_source == "bc" and child.parent_checkpoint == str(result.checkpoint.resolve())
    registry = ModelRegistry(tmp_path / "models")
    assert registry.latest() is not None and registry.latest().training_source == "bc"  # type: ignore[union-attr]
    settings = ActorSettings(
        temporal_core="gru",
        policy=TINY.model_dump(),
        environment={"backend": "point", "point_azimuth": AZ, "point_elevation": EL},
        rollout={"num_actors": 2, "rollout_length": 16, "sequence_length": 8},
        ppo={"epochs": 1, "num_minibatches": 2},
        telemetry={"enabled": False},
        train={"total_steps": 32},
        checkpoint={"every_steps": 10_000, "auto_promote": False},
    )
    built = build_environment(settings.environment, settings.rollout.num_actors, settings.train.device)
    runner = OnPolicyRunner(settings, built, artifacts_dir=tmp_path)  # auto-resumes from latest.pt (bc)
    for key, tensor in child.model.items():
        assert torch.equal(runner.policy.state_dict()[key], tensor)
    summary = runner.run_training()
    assert summary.final_checkpoint is not None
    final = load_checkpoint(summary.final_checkpoint)
    assert final.training_source == "rl" and final.parent_checkpoint is not None
    assert final.parent_checkpoint.endswith("v001.pt")


def test_cli_reports_missing_demonstrations(tmp_path) -> None:
    cli = CliRunner().invoke(
        bc_pretrain, ["--demonstrations", str(tmp_path / "nothing"), "--artifacts-dir", str(tmp_path)]
    )
    assert cli.exit_code != 0 and "does not exist" in cli.output


def test_cli_rejects_bad_settings_with_the_field_name(tmp_path) -> None:
    cli = CliRunner().invoke(bc_pretrain, ["--epochs", "0", "--artifacts-dir", str(tmp_path)])
    assert cli.exit_code != 0 and "bc.epochs" in cli.output


def test_cli_on_one_episode_says_nothing_is_held_out_instead_of_nan(pretrained, tmp_path) -> None:
    result, _ = pretrained
    folder = tmp_path / "one"
    folder.mkdir()
    write_teacher_demo(folder / "single.npz", 30, seed=5)  # 30 frames: one episode
    cli = CliRunner().invoke(
        bc_pretrain,
        ["--demonstrations", str(folder), "--checkpoint", str(result.checkpoint), "--epochs", "1",
         "--sequence-length", "8", "--streams", "2", "--torch-threads", "1",
         "--artifacts-dir", str(tmp_path)],
    )  # fmt: skip
    assert cli.exit_code == 0, cli.output
    assert "nan" not in cli.output and "no episode held out" in cli.output


def test_imitation_worse_than_the_mean_action_baseline_is_warned() -> None:
    worse = BCHistory(train_nll=[2.0, 1.0], holdout_mse=[0.5, 0.4], baseline_mse=0.3)
    line, warning = imitation_report(worse)
    assert "held-out action MSE 0.4000 vs mean-action baseline 0.3000" in line
    assert warning is not None and "no better than always predicting the mean action" in warning
    better = BCHistory(train_nll=[2.0, 1.0], holdout_mse=[0.5, 0.1], baseline_mse=0.3)
    assert imitation_report(better)[1] is None
