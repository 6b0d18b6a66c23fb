"""`navi-actor train --warm-start-steps`: the frontier planner cloned before PPO, on two tiny scenes.

One artifacts folder lives through three commands, in order: a warm start cut short by Ctrl+C while
cloning, a complete warm-started run (which must not trust the cut-short folder), and a second
`train` that auto-resumes the promoted model (which must not warm-start again).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from click.testing import CliRunner, Result
from tiny_cli import TINY_POLICY_ENV

from navi_actor.cli import main

pytestmark = pytest.mark.usefixtures("restore_process_state")

ENV = {
    **TINY_POLICY_ENV,
    "NAVI_ENV_SENSOR__AZIMUTH_BINS": "32",
    "NAVI_ENV_SENSOR__ELEVATION_BINS": "8",
    "NAVI_ENV_EPISODE__MAX_STEPS": "8",  # episodes end inside a scene's share: drones start again there
    "NAVI_ACTOR_BC__STREAMS": "2",
    "NAVI_ACTOR_BC__SEQUENCE_LENGTH": "8",
}
WARM = ["--warm-start-steps", "64", "--warm-start-epochs", "2", "--warm-start-value-updates", "2"]
"""64 steps: one round of 32 steps, a drone in each scene; the 32-step run's one PPO update is critic-only."""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two 32^3 procedural scenes of different families."""
    from navi_environment.corpus.settings import CompileSettings
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import write_gmdag

    folder = tmp_path_factory.mktemp("corpus")
    for name in ("apartment", "hall"):
        asset = compile_source(f"procedural:{name}:seed=3", CompileSettings(), resolution=32).asset
        write_gmdag(asset, folder / f"{name}_003.gmdag")
    return folder


def train(artifacts: Path, corpus: Path, *extra: str, env: dict[str, str] | None = None) -> Result:
    args = ["train", "--corpus", str(corpus), "--num-actors", "2", "--torch-threads", "1", "--temporal-core",
            "gru", "--total-steps", "32", "--rollout-length", "16", "--no-telemetry"]  # fmt: skip
    return CliRunner().invoke(
        main, [*args, *extra], env={**ENV, **(env or {}), "NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(artifacts)},
        catch_exceptions=False,
    )  # fmt: skip


def manifest(run: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((run / "manifest.json").read_text())
    return loaded


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, corpus: Path) -> dict[str, Any]:
    """The three commands' results and run folders (oldest first)."""
    from navi_actor.bc import pretrain

    artifacts = tmp_path_factory.mktemp("artifacts")

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pretrain, "run_pretrain", interrupted)
        cut = train(artifacts, corpus, *WARM)
    (cut_run,) = list((artifacts / "runs").iterdir())
    warm = train(artifacts, corpus, *WARM)
    warm_run = next(run for run in (artifacts / "runs").iterdir() if run != cut_run)
    resumed = train(artifacts, corpus, *WARM)
    resumed_run = next(run for run in (artifacts / "runs").iterdir() if run not in (cut_run, warm_run))
    return {"cut": (cut, cut_run), "warm": (warm, warm_run), "resumed": (resumed, resumed_run)}


def test_ctrl_c_during_the_warm_start_leaves_nothing_a_later_run_trusts(runs: dict[str, Any]) -> None:
    result, run = runs["cut"]
    assert result.exit_code == 0, result.output
    assert "stopped before training started" in result.output
    assert any((run / "warm_start" / "demonstrations").glob("*.npz"))  # recorded, then cut while cloning
    assert not (run / "warm_start" / "warm_start.json").exists()
    assert not (run / "warm_start" / "clone.pt").exists()
    assert not list(run.glob("checkpoints/step_*.pt")) and not (run / "manifest.json").exists()
    warm, _ = runs["warm"]
    assert "warm start: skipped" not in warm.output  # the next run warm-started afresh


def test_the_warm_start_flies_every_training_scene_and_ppo_starts_from_its_clone(
    runs: dict[str, Any], corpus: Path
) -> None:
    result, run = runs["warm"]
    assert result.exit_code == 0, result.output
    recording = "recording 64 steps on 2 scenes with the frontier planner (1 round of 32 steps x 2 drones)"
    assert recording in result.output
    assert "warm start: round 1/1: apartment_003.gmdag, hall_003.gmdag" in result.output
    assert "cloning 2 epochs over 64 frames" in result.output
    assert "warm start: cloning, epoch 2/2, " in result.output  # minutes of cloning are not silent
    facts = json.loads((run / "warm_start" / "warm_start.json").read_text())
    clone = run / "warm_start" / "clone.pt"
    assert facts["checkpoint"] == str(clone) and facts["scenes"] == ["apartment_003.gmdag", "hall_003.gmdag"]
    assert facts["bc_epochs_run"] == 2 and facts["bc_kept_epoch"] in (1, 2)  # the lower held-out epoch
    assert f"kept epoch {facts['bc_kept_epoch']} of 2" in result.output
    flown: dict[str, int] = {}
    for path in (run / "warm_start" / "demonstrations").glob("*.npz"):
        with np.load(path, allow_pickle=False) as demo:
            (scene,) = demo["segment_scenes"].tolist()
            flown[Path(scene).name] = flown.get(Path(scene).name, 0) + len(demo["actions"])
            assert demo["episode_starts"].sum() >= 2  # 8-step episodes: each drone started again
            assert np.abs(demo["actions"]).max() <= 1.0
    assert flown == {"apartment_003.gmdag": 32, "hall_003.gmdag": 32}
    described = manifest(run)
    assert described["resumed_from"] == str(clone) and described["warm_start"]["checkpoint"] == str(clone)
    assert described["settings"]["ppo"]["value_warmup_updates"] == 2

    from navi_actor.checkpoints import load_checkpoint

    cloned = load_checkpoint(clone)
    (final_path,) = run.glob("checkpoints/step_*.pt")
    final = load_checkpoint(final_path)
    assert cloned.training_source == "bc" and final.parent_checkpoint == str(clone)
    assert final.update_index == 1 and final.step_id == 32
    # the PPO update trained only the critic: the actor head is the clone's (its log-std aside, which
    # ppo.final_log_std_max caps on schedule); the critic learned
    actor = [key for key in cloned.model if key.startswith("actor.") and "log_std" not in key]
    assert actor and all(torch.equal(cloned.model[key], final.model[key]) for key in actor)
    critic = [key for key in cloned.model if key.startswith("critic.")]
    assert not all(torch.equal(cloned.model[key], final.model[key]) for key in critic)


def test_a_resumed_run_does_not_warm_start_again(runs: dict[str, Any]) -> None:
    result, run = runs["resumed"]
    assert result.exit_code == 0, result.output
    skipped = "warm start: skipped, this run continues a trained policy (resuming from model v001"
    assert skipped in result.output
    assert "warm start: recording" not in result.output and not (run / "warm_start").exists()
    described = manifest(run)  # it continued the warm-started run's promoted model, step 32
    assert described["resumed_from"].endswith("v001.pt") and described["start_step_id"] == 32
    assert "warm_start" not in described
    # the first run did 1 of its 2 critic-only updates: the resumed run does the second one
    assert "critic-only updates continue: 1 of 2 done before the resume" in result.output
    assert described["settings"]["ppo"]["value_warmup_updates"] == 2

    from navi_actor.checkpoints import load_checkpoint

    _, warm_run = runs["warm"]
    cloned = load_checkpoint(warm_run / "warm_start" / "clone.pt")
    (final_path,) = run.glob("checkpoints/step_*.pt")
    final = load_checkpoint(final_path)
    assert final.update_index == 2
    actor = [key for key in cloned.model if key.startswith("actor.") and "log_std" not in key]
    assert all(torch.equal(cloned.model[key], final.model[key]) for key in actor)


def test_ppo_steps_the_environment_the_planner_flew_with_the_torch_step_within_the_budget(
    tmp_path: Path, corpus: Path
) -> None:
    """The torch step kernel (CUDA's path, here on the CPU) after the warm start: PPO resets and steps
    the environment the planner flew. Recorded under ``torch.inference_mode``, its state tensors could
    not be updated in place again, and ``train --device cuda`` with a warm start failed at PPO's reset.
    The warm start's minutes count in ``--max-minutes``: PPO gets what is left."""
    result = train(
        tmp_path, corpus, *WARM, "--max-minutes", "10", env={"NAVI_ENV_PHYSICS__STEP_KERNEL": "torch"}
    )
    assert result.exit_code == 0, result.output
    assert "cloning 2 epochs over 64 frames" in result.output and "finished: 32 steps" in result.output
    (run,) = list((tmp_path / "runs").iterdir())
    seconds = json.loads((run / "warm_start" / "warm_start.json").read_text())["seconds"]
    assert (
        f"warm start: {seconds / 60:.1f} of the 10-minute budget; PPO trains for the remaining"
        in result.output
    )
    assert manifest(run)["settings"]["train"]["max_minutes"] == pytest.approx(10 - seconds / 60)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--warm-start-steps", "-1"], "warm_start.steps: Input should be greater than or equal to 0"),
        (["--warm-start-epochs", "0"], "warm_start.epochs: Input should be greater than 0"),
        (["--warm-start-steps", "8", "--environment-backend", "point"], "needs the sdfdag environment"),
    ],
)
def test_bad_warm_start_values_are_one_line(
    tmp_path: Path, corpus: Path, args: list[str], message: str
) -> None:
    result = train(tmp_path, corpus, *args)
    assert result.exit_code != 0
    errors = [line for line in result.output.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and message in result.output, result.output
    assert "Traceback" not in result.output


def test_the_default_warm_start_is_off_on_the_point_environment_and_says_so(tmp_path: Path) -> None:
    """The warm start is on by default (16,384 planner steps); the point environment has no planner to
    fly, so a run that did not ask for it trains PPO alone, with one line saying why."""
    args = ["train", "--environment-backend", "point", "--num-actors", "2", "--torch-threads", "1",
            "--temporal-core", "gru", "--total-steps", "32", "--rollout-length", "16",
            "--no-telemetry"]  # fmt: skip
    env = {**TINY_POLICY_ENV, "NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(tmp_path)}
    result = CliRunner().invoke(main, args, env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    notices = [line for line in result.output.splitlines() if line.startswith("warm start:")]
    assert notices == [
        "warm start: off, it needs the sdfdag environment (the frontier planner flies the real simulator), "
        "not environment.backend=point"
    ]
    (run,) = list((tmp_path / "runs").iterdir())
    assert manifest(run)["settings"]["warm_start"]["steps"] == 0 and not (run / "warm_start").exists()
