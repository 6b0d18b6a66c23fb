"""`navi-actor train` and `evaluate` on the real simulator with a tiny compiled scene."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from navi_actor.cli import main

pytestmark = pytest.mark.usefixtures("restore_process_state")


@pytest.mark.slow
def test_train_then_evaluate_on_a_real_scene(tmp_path: Path, tiny_scene: Path) -> None:
    env = {
        "NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(tmp_path),
        "NAVI_ENV_SENSOR__AZIMUTH_BINS": "32",
        "NAVI_ENV_SENSOR__ELEVATION_BINS": "8",
        "NAVI_ENV_EPISODE__MAX_STEPS": "12",
        "NAVI_ACTOR_POLICY__EMBED_DIM": "32",
        "NAVI_ACTOR_POLICY__VIT_DIM": "32",
        "NAVI_ACTOR_POLICY__VIT_LAYERS": "1",
        "NAVI_ACTOR_POLICY__SSM_HEAD_DIM": "16",
        "NAVI_ACTOR_ROLLOUT__SEQUENCE_LENGTH": "8",
        "NAVI_ACTOR_PPO__NUM_MINIBATCHES": "2",
    }
    common = ["--gmdag-file", str(tiny_scene), "--num-actors", "2", "--torch-threads", "1"]
    # PPO alone: the default warm start (16,384 planner steps) is tested in test_cli_warm_start.py
    arguments = ["train", *common, "--total-steps", "32", "--rollout-length", "16", "--no-telemetry",
                 "--warm-start-steps", "0"]  # fmt: skip
    runner = CliRunner()
    trained = runner.invoke(
        main,
        arguments,
        env=env,
        catch_exceptions=False,
    )
    assert trained.exit_code == 0, trained.output
    checkpoint = next(tmp_path.glob("runs/*/checkpoints/step_*.pt"))
    manifest = json.loads(next(tmp_path.glob("runs/*/manifest.json")).read_text())
    assert manifest["observation_shape"] == [3, 32, 8]
    assert manifest["corpus_summary"]["backend"] == "sdfdag"
    record = json.loads(next(tmp_path.glob("runs/*/metrics.jsonl")).read_text().splitlines()[-1])
    assert {"reward/env/exploration", "reward/env/collision", "reward/shaping/novelty"} <= set(record)
    evaluated = runner.invoke(
        main,
        ["evaluate", str(checkpoint), *common, "--episodes-per-scene", "2", "--mode", "sample", "--json"],
        env=env,
        catch_exceptions=False,
    )
    assert evaluated.exit_code == 0, evaluated.output
    (report,) = json.loads(evaluated.output.strip().splitlines()[-1])["results"]
    assert report["episodes"] == 2 and report["length"]["value"] <= 12
    assert 0.0 <= report["collisions_per_step"]["value"] <= 1.0 and report["path_m"]["value"] >= 0.0
    assert 0.0 < report["coverage_share"]["value"] <= 1.0
