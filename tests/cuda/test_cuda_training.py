"""``navi-actor train``, ``evaluate`` and ``bc-pretrain`` with ``--device`` the accelerator (click CliRunner).

Tiny budgets: the point environment and one 32^3 compiled scene, a 32 x 8 sensor, 32-wide models.
What must hold: training finishes and writes a checkpoint; that checkpoint loads on the CPU, is
evaluated on the accelerator and on the CPU, and a CPU run resumes from it; behaviour cloning runs
on the accelerator and its checkpoint loads on the CPU.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner, Result

from navi_actor.bc.command import bc_pretrain
from navi_actor.checkpoints import load_checkpoint
from navi_actor.cli import main
from navi_actor.models import NaviPolicy

AZ, EL = 32, 8
TINY_ENV = {
    "NAVI_ENV_SENSOR__AZIMUTH_BINS": str(AZ),
    "NAVI_ENV_SENSOR__ELEVATION_BINS": str(EL),
    "NAVI_ENV_EPISODE__MAX_STEPS": "12",
    "NAVI_ACTOR_POLICY__EMBED_DIM": "32",
    "NAVI_ACTOR_POLICY__VIT_DIM": "32",
    "NAVI_ACTOR_POLICY__VIT_LAYERS": "1",
    "NAVI_ACTOR_POLICY__SSM_HEAD_DIM": "16",
    "NAVI_ACTOR_ENVIRONMENT__POINT_AZIMUTH": str(AZ),
    "NAVI_ACTOR_ENVIRONMENT__POINT_ELEVATION": str(EL),
    "NAVI_ACTOR_ENVIRONMENT__POINT_MAX_STEPS": "10",
    "NAVI_ACTOR_ROLLOUT__SEQUENCE_LENGTH": "8",
    "NAVI_ACTOR_PPO__NUM_MINIBATCHES": "2",
}
POINT = ["--environment-backend", "point", "--num-actors", "2", "--torch-threads", "2"]

pytestmark = pytest.mark.usefixtures("restore_process_state")


def invoke(artifacts: Path, *args: str, extra_env: dict[str, str] | None = None) -> Result:
    env = {**TINY_ENV, **(extra_env or {}), "NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(artifacts)}
    result = CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def assert_loads_on_cpu(path: Path) -> NaviPolicy:
    """The checkpoint's tensors load onto the CPU and into a CPU policy."""
    loaded = load_checkpoint(path, map_location="cpu")
    assert all(t.device.type == "cpu" for t in loaded.model.values())
    policy = NaviPolicy(loaded.policy_config)
    policy.load_state_dict(loaded.model)
    assert all(torch.isfinite(p).all() for p in policy.parameters())
    return policy


def evaluate_on(artifacts: Path, checkpoint: Path, device: str, *where: str) -> dict:  # type: ignore[type-arg]
    result = invoke(
        artifacts, "evaluate", str(checkpoint), *where, "--device", device, "--episodes-per-scene", "2",
        "--mode", "mean", "--json",
    )  # fmt: skip
    (block,) = json.loads(result.output.strip().splitlines()[-1])["results"]
    assert block["episodes"] == 2 and np.isfinite(block["return"]["value"])
    return block  # type: ignore[no-any-return]


def test_train_on_the_point_env_then_evaluate_and_resume_on_the_cpu(
    tmp_path: Path, accel_device: str
) -> None:
    """The default core (mamba2) trains on the accelerator; the CPU evaluates and continues it."""
    trained = invoke(tmp_path, "train", *POINT, "--device", accel_device, "--total-steps", "64",
                     "--rollout-length", "16", "--no-telemetry", "--seed", "1")  # fmt: skip
    assert "finished: 64 steps" in trained.output
    checkpoint = max(tmp_path.glob("runs/*/checkpoints/step_*.pt"))
    policy = assert_loads_on_cpu(checkpoint)
    assert policy.cfg.temporal_core == "mamba2"
    for device in (accel_device, "cpu"):
        evaluate_on(tmp_path, checkpoint, device, *POINT)
    # a CPU run continues the accelerator's model (weights, optimiser, RNG from the registry's latest)
    resumed = invoke(tmp_path, "train", *POINT, "--device", "cpu", "--total-steps", "96",
                     "--rollout-length", "16", "--no-telemetry")  # fmt: skip
    assert "finished: 96 steps" in resumed.output
    manifests = [json.loads(p.read_text()) for p in sorted(tmp_path.glob("runs/*/manifest.json"))]
    assert sorted(m["start_step_id"] for m in manifests) == [0, 64]


@pytest.mark.parametrize("core", ["mamba2", "gru"])
def test_train_on_a_real_scene_then_evaluate_on_both(
    tmp_path: Path, tiny_scene: Path, accel_device: str, core: str
) -> None:
    scene = ["--gmdag-file", str(tiny_scene), "--num-actors", "4", "--torch-threads", "2"]
    invoke(tmp_path, "train", *scene, "--device", accel_device, "--temporal-core", core,
           "--total-steps", "128", "--rollout-length", "32", "--no-telemetry",
           "--warm-start-steps", "0")  # fmt: skip
    checkpoint = max(tmp_path.glob("runs/*/checkpoints/step_*.pt"))
    manifest = json.loads(next(tmp_path.glob("runs/*/manifest.json")).read_text())
    assert manifest["observation_shape"] == [3, AZ, EL] and manifest["corpus_summary"]["backend"] == "sdfdag"
    assert assert_loads_on_cpu(checkpoint).cfg.temporal_core == core
    record = json.loads(next(tmp_path.glob("runs/*/metrics.jsonl")).read_text().splitlines()[-1])
    assert any(k.startswith("losses/") for k in record)
    assert all(np.isfinite(v) for k, v in record.items() if k.startswith("losses/") and isinstance(v, float))
    for device in (accel_device, "cpu"):
        block = evaluate_on(tmp_path, checkpoint, device, *scene)
        assert block["length"]["value"] <= 12 and 0.0 <= block["collisions_per_step"]["value"] <= 1.0


RECIPE_ENV = {
    "NAVI_ACTOR_PPO__SYMMETRY_COEF": "0.5",
    "NAVI_ACTOR_POLICY__LOG_STD_MAX": "-0.5",
    "NAVI_ACTOR_POLICY__ACTION_CHUNK": "4",
    "NAVI_ACTOR_BC__STREAMS": "2",
    "NAVI_ACTOR_BC__SEQUENCE_LENGTH": "8",
}
"""The recommended recipe's options (docs/training.md) on top of the tiny settings, with a chunk head."""


def test_train_the_recommended_recipe_on_the_accelerator(
    tmp_path: Path, tiny_scene: Path, accel_device: str
) -> None:
    """Warm start (the frontier planner flies the GPU environment, BC on the GPU), then PPO with the
    mirror-symmetry loss, the std ceiling and the chunk head's auxiliary loss, all on the accelerator."""
    scene = ["--gmdag-file", str(tiny_scene), "--num-actors", "2", "--torch-threads", "2"]
    trained = invoke(
        tmp_path, "train", *scene, "--device", accel_device, "--total-steps", "64", "--rollout-length", "32",
        "--no-telemetry", "--warm-start-steps", "64", "--warm-start-epochs", "2",
        "--warm-start-value-updates", "1", extra_env=RECIPE_ENV,
    )  # fmt: skip
    assert "finished: 64 steps" in trained.output and "cloning 2 epochs over 64 frames" in trained.output
    (run,) = list((tmp_path / "runs").iterdir())
    facts = json.loads((run / "warm_start" / "warm_start.json").read_text())
    assert facts["steps"] == 64 and facts["bc_frames"] + facts["bc_holdout_frames"] == 64
    assert np.isfinite(facts["bc_train_mse"][-1]) and np.isfinite(facts["bc_holdout_mse"])
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    last = records[-1]
    assert "losses/symmetry_loss" in last and "losses/chunk_loss" in last, sorted(last)
    assert all(np.isfinite(v) for k, v in last.items() if k.startswith("losses/") and isinstance(v, float))
    checkpoint = max(run.glob("checkpoints/step_*.pt"))
    policy = assert_loads_on_cpu(checkpoint)
    assert policy.cfg.action_chunk == 4 and policy.cfg.log_std_max == -0.5
    block = evaluate_on(tmp_path, checkpoint, accel_device, *scene)
    assert 0.0 <= block["collisions_per_step"]["value"] <= 1.0


OPTION_SETS: dict[str, dict[str, str]] = {
    "noise-and-std": {
        "NAVI_ACTOR_ROLLOUT__NOISE_CORRELATION": "0.8",
        "NAVI_ACTOR_POLICY__LOG_STD_MODE": "state",
        "NAVI_ACTOR_PPO__REFERENCE_KL_COEF": "0.1",
        "NAVI_ACTOR_PPO__REFERENCE_REFRESH_UPDATES": "1",
        "NAVI_ACTOR_PPO__SELF_IMITATION_COEF": "2.0",
    },
    "inputs-and-visit-head": {
        "NAVI_ACTOR_POLICY__PREVIOUS_ACTION_INPUT": "true",
        "NAVI_ACTOR_POLICY__VISIT_INPUT": "true",
        "NAVI_ACTOR_POLICY__MEMORY_INPUT": "true",
        "NAVI_ACTOR_POLICY__VISIT_PREDICTION": "true",
    },
}
"""Measured options that are off by default (docs/experiments), each set trained on the accelerator:
time-correlated action noise, the per-state std gate, a refreshed KL reference and self-imitation;
the policy's extra inputs (previous action, visits, the episodic memory's score) and the
visit-prediction head."""


@pytest.mark.parametrize("options", list(OPTION_SETS))
def test_train_with_the_measured_options_on_the_accelerator(
    tmp_path: Path, tiny_scene: Path, accel_device: str, options: str
) -> None:
    """Each set trains on the accelerator with finite losses, and its checkpoint loads on the CPU and
    evaluates on the accelerator with the same options."""
    env = OPTION_SETS[options]
    scene = ["--gmdag-file", str(tiny_scene), "--num-actors", "2", "--torch-threads", "2"]
    trained = invoke(tmp_path, "train", *scene, "--device", accel_device, "--total-steps", "128",
                     "--rollout-length", "32", "--no-telemetry", "--warm-start-steps", "0",
                     extra_env=env)  # fmt: skip
    assert "finished: 128 steps" in trained.output
    (run,) = list((tmp_path / "runs").iterdir())
    last = json.loads((run / "metrics.jsonl").read_text().splitlines()[-1])
    losses = {k: v for k, v in last.items() if k.startswith("losses/") and isinstance(v, float)}
    assert losses and all(np.isfinite(v) for v in losses.values()), losses
    if "NAVI_ACTOR_POLICY__VISIT_PREDICTION" in env:
        assert "losses/visit_prediction_loss" in losses, sorted(losses)
    if "NAVI_ACTOR_PPO__REFERENCE_KL_COEF" in env:
        assert losses["losses/reference_kl"] >= 0.0
    if "NAVI_ACTOR_PPO__SELF_IMITATION_COEF" in env:
        assert losses["losses/self_imitation_loss"] >= 0.0
    checkpoint = max(run.glob("checkpoints/step_*.pt"))
    policy = assert_loads_on_cpu(checkpoint)
    if "NAVI_ACTOR_POLICY__LOG_STD_MODE" in env:
        assert policy.cfg.log_std_mode == "state"
    if "NAVI_ACTOR_POLICY__VISIT_INPUT" in env:
        assert policy.cfg.visit_input and policy.cfg.memory_input and policy.cfg.previous_action_input
    evaluated = invoke(tmp_path, "evaluate", str(checkpoint), *scene, "--device", accel_device,
                       "--episodes-per-scene", "2", "--mode", "both", "--json", extra_env=env)  # fmt: skip
    blocks = json.loads(evaluated.output.strip().splitlines()[-1])["results"]
    assert {b["mode"] for b in blocks} == {"mean", "sample"}
    assert all(b["episodes"] == 2 and np.isfinite(b["return"]["value"]) for b in blocks)


def write_recording(path: Path, frames: int, seed: int) -> None:
    """A demonstration file of the recorder's format (random walk depths, a depth-following pilot), with
    the poses the default policy's frontier map reads (a drone walking along x, turning slowly)."""
    rng = np.random.default_rng(seed)
    depth = np.clip(np.cumsum(rng.random((frames, AZ, EL)) - 0.5, axis=0) * 0.1 + 0.5, 0, 1).astype(
        np.float32
    )
    obs = np.stack([depth, np.zeros_like(depth), (depth < 1).astype(np.float32)], axis=1)
    ahead, side = (
        depth[:, :2].mean(axis=(1, 2)),
        depth[:, 2:6].mean(axis=(1, 2)) - depth[:, -6:-2].mean(axis=(1, 2)),
    )
    actions = np.clip(np.stack([2 * ahead - 1, 0 * ahead, side, 3 * side], axis=1), -1, 1).astype(np.float32)
    steps = np.arange(frames, dtype=np.float32)
    positions = np.stack([steps * 0.1, np.zeros_like(steps), np.full_like(steps, 1.5)], axis=1)
    np.savez(
        path, observations=obs, actions=actions, episode_starts=np.arange(frames) % 40 == 0,
        positions=positions, yaw=steps * 0.05, segment_scenes=np.array(["synthetic"]),
        metadata=np.array(json.dumps({"schema_version": 1, "matrix_shape": [AZ, EL], "pilot": "test"})),
    )  # fmt: skip


def test_bc_pretrain_on_the_accelerator(tmp_path: Path, accel_device: str) -> None:
    demos = tmp_path / "demos"
    demos.mkdir()
    for seed in range(2):
        write_recording(demos / f"demo-{seed}.npz", 160, seed)
    out = tmp_path / "bc.pt"
    env = {key: value for key, value in TINY_ENV.items() if key.startswith("NAVI_ACTOR_POLICY")}
    result = CliRunner().invoke(
        bc_pretrain,
        ["--demonstrations", str(demos), "--device", accel_device, "--epochs", "2", "--sequence-length", "8",
         "--streams", "4", "--out", str(out), "--torch-threads", "2", "--artifacts-dir", str(tmp_path)],
        env=env, catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "held-out action MSE" in result.output and "nan" not in result.output
    loaded = load_checkpoint(out, map_location="cpu")
    assert loaded.training_source == "bc"
    assert_loads_on_cpu(out)
