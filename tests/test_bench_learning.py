"""scripts/bench_learning.py end to end on a two-scene corpus: train, judge, re-judge the checkpoint.

The benchmark's numbers are what the issue's learning targets are judged on, so the script itself is
tested: one JSON line with every policy's results, a checkpoint that ``--checkpoint`` judges again to
the same numbers (same seeds, same drones), and a refusal to call a scene the checkpoint trained on
"held out".
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from tiny_settings import TINY

from navi_common.provenance import git_revision

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "bench_learning.py"
ARGS = ["--split", "tail", "--holdout", "0.5", "--episodes", "1", "--episode-steps", "20", "--threads", "1"]


@pytest.fixture(scope="module", autouse=True)
def bench_temp_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The bench keeps every run's folder in the temporary directory (``--checkpoint`` re-judges it);
    the benches started here keep theirs under pytest's own temporary directory, which pytest prunes,
    not in /tmp, where each suite run left three."""
    previous = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(tmp_path_factory.mktemp("bench_tmp"))
    yield
    if previous is None:
        del os.environ["TMPDIR"]
    else:
        os.environ["TMPDIR"] = previous


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two small procedural halls (32^3): hall_000 trains, hall_001 is held out."""
    from navi_environment.corpus.settings import CompileSettings
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import write_gmdag

    folder = tmp_path_factory.mktemp("corpus")
    for seed in (0, 1):
        asset = compile_source(f"procedural:hall:seed={seed}", CompileSettings(), resolution=32).asset
        write_gmdag(asset, folder / f"hall_{seed:03d}.gmdag")
    return folder


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *ARGS, *args],
        env={**os.environ, **TINY},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def json_line(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr[-3000:]
    (line,) = result.stdout.splitlines()  # stdout is the JSON line alone (logs go to stderr)
    parsed: dict[str, Any] = json.loads(line)
    return parsed


@pytest.fixture(scope="module")
def trained(corpus: Path) -> dict[str, Any]:
    """The JSON line of a 3-second PPO run on hall_000, without the default warm start (tested below)."""
    return json_line(bench("--minutes", "0.05", "--corpus", str(corpus), "--warm-start-steps", "0"))


def test_bench_trains_judges_and_rejudges_its_checkpoint_to_the_same_numbers(
    corpus: Path,
    trained: dict[str, Any],
) -> None:
    assert trained["heldout_scenes"] == ["hall_001"] and trained["train_scenes"] == 1
    assert trained["code"] == git_revision()  # the revision that produced the numbers
    assert trained["train_steps"] > 0 and Path(trained["checkpoint"]).is_file()
    assert 0 < trained["update_epochs_mean"] <= trained["update_epochs_scheduled"]  # read from its metrics
    assert 0 <= trained["kl_early_stop_share"] <= 1
    assert Path(trained["run_dir"]) in Path(trained["checkpoint"]).parents  # the kept folder, named
    policies = {"learned_mean_action", "learned_sampled", "random", "heuristic", "frontier"}
    assert set(trained["results"]) == policies
    for block in trained["results"].values():  # every policy flew the same plan: 1 episode x 1 scene
        assert block["episodes"] == 1 and block["scenes"] == 1
        assert block["coverage_cells"]["ci95_low"] <= block["coverage_cells"]["value"]
    assert set(trained["targets_met"]) == {
        "mean_action_coverage_3x_random",
        "mean_action_collisions_0.3x_random",
        "sampled_coverage_3x_random",
        "mean_action_coverage_0.7x_frontier",
    }
    ratio = trained["ratios"]["frontier_coverage_vs_random"]
    frontier, random = trained["results"]["frontier"], trained["results"]["random"]
    expected = frontier["coverage_cells"]["value"] / random["coverage_cells"]["value"]
    assert ratio["value"] == pytest.approx(expected, rel=1e-4)
    assert trained["results"]["heuristic"]["path_m"]["value"] > 0.0  # it leaves its spawn

    again = json_line(bench("--corpus", str(corpus), "--checkpoint", trained["checkpoint"]))
    assert again["train_minutes"] is None and again["train_steps"] == trained["train_steps"]
    assert again["results"] == trained["results"]
    assert again["targets_met"] == trained["targets_met"]


def test_select_checkpoint_chooses_among_the_runs_step_checkpoints_on_its_training_scenes(
    corpus: Path,
    trained: dict[str, Any],
) -> None:
    """The default path (no --confirm-episodes-per-scene given): every step checkpoint beside the given
    one is flown on the training scene (never the held-out hall_001), one of them is judged."""
    chosen = bench("--corpus", str(corpus), "--checkpoint", trained["checkpoint"], "--select-checkpoint")
    line = json_line(chosen)
    selection = line["selection"]
    folder = Path(trained["checkpoint"]).parent
    assert [c["path"] for c in selection["candidates"]] == sorted(str(p) for p in folder.glob("step_*.pt"))
    assert selection["chosen"] in selection["candidates"] and selection["scenes"] == ["hall_000.gmdag"]
    assert selection["episodes_per_scene"] == 4 and selection["seed"] == 2000  # seed + 2000, one plan
    assert selection["drones"] == 4  # one drone per planned episode: the plan flies in one wave
    assert line["results"]["random"] == trained["results"]["random"]  # the held-out verdict, same plan


def test_bench_refuses_to_judge_a_checkpoint_on_a_scene_it_trained_on(
    corpus: Path,
    trained: dict[str, Any],
    tmp_path: Path,
) -> None:
    leaky = tmp_path / "leaky"
    leaky.mkdir()
    shutil.copy(corpus / "hall_001.gmdag", leaky / "aaa_000.gmdag")
    shutil.copy(corpus / "hall_000.gmdag", leaky / "hall_000.gmdag")  # the training scene, now held out
    result = bench("--corpus", str(leaky), "--checkpoint", trained["checkpoint"])
    assert result.returncode != 0
    assert "trained on held-out scenes ['hall_000.gmdag']" in result.stderr


def test_named_held_out_scenes_judge_the_same_scenes_as_the_split(
    corpus: Path, trained: dict[str, Any], tmp_path: Path
) -> None:
    """--heldout-scenes names the held-out scenes (a grown corpus keeps them): here the tail split's
    own scene, so the re-judged numbers equal the run's (drawing the paths changes none of them); a
    name the corpus lacks is one line."""
    from navi_environment.preview.png import decode_png

    named = json_line(
        bench("--corpus", str(corpus), "--checkpoint", trained["checkpoint"], "--heldout-scenes", "hall_001",
              "--paths", str(tmp_path / "paths"))
    )  # fmt: skip
    assert named["split"] == "named" and named["heldout_scenes"] == ["hall_001"]
    assert named["results"] == trained["results"]
    image = decode_png((tmp_path / "paths" / "hall_001.png").read_bytes())
    separator_columns = (image == 0).all(axis=2).all(axis=0).sum()
    assert separator_columns == 4 * 6  # five policies, five panels
    judge = ("--corpus", str(corpus), "--checkpoint", trained["checkpoint"])
    missing = bench(*judge, "--heldout-scenes", "maze_9")
    assert missing.returncode != 0 and "Error: the corpus has no scene named maze_9" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_a_heldout_corpus_adds_its_scenes_to_the_judged_ones_and_a_repeated_name_is_one_line(
    corpus: Path, trained: dict[str, Any], tmp_path: Path
) -> None:
    """--heldout-corpus: every scene of a second folder is judged with the split's held-out ones (the
    issue's mesh scenes), never trained on; a scene name both folders hold is refused in one line."""
    extra = tmp_path / "extra"
    extra.mkdir()
    shutil.copy(corpus / "hall_001.gmdag", extra / "mesh_hall_007.gmdag")
    judge = ("--corpus", str(corpus), "--checkpoint", trained["checkpoint"])
    both = json_line(bench(*judge, "--heldout-corpus", str(extra)))
    assert both["heldout_scenes"] == ["hall_001", "mesh_hall_007"] and both["train_scenes"] == 1
    for block in both["results"].values():  # one planned episode on each of the two scenes
        assert block["episodes"] == 2 and block["scenes"] == 2
    assert set(both["coverage_by_scene"]) == {"hall_001", "mesh_hall_007"}
    for policy, block in both["results"].items():  # the pooled mean is the two scenes' episodes' mean
        per_scene = [both["coverage_by_scene"][scene][policy] for scene in ("hall_001", "mesh_hall_007")]
        assert block["coverage_cells"]["value"] == pytest.approx(sum(per_scene) / 2, abs=0.01)
    shutil.copy(corpus / "hall_001.gmdag", extra / "hall_001.gmdag")
    repeated = bench(*judge, "--heldout-corpus", str(extra))
    assert repeated.returncode != 0 and "Traceback" not in repeated.stderr
    assert "repeats scene names of the corpus (hall_001)" in repeated.stderr.strip().splitlines()[-1]


def test_a_paths_folder_that_cannot_be_made_stops_the_bench_before_training(
    corpus: Path, tmp_path: Path
) -> None:
    (tmp_path / "a_file").write_text("")
    result = bench("--corpus", str(corpus), "--steps", "64", "--paths", str(tmp_path / "a_file" / "sub"))
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].endswith("a_file/sub: Not a directory")
    assert "training" not in result.stderr.lower()


def test_a_confirmation_without_a_selection_is_one_line_before_training(corpus: Path) -> None:
    result = bench("--corpus", str(corpus), "--steps", "64", "--confirm-episodes-per-scene", "8")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last == "Error: --confirm-episodes-per-scene needs --select-checkpoint"
    assert "training" not in result.stderr.lower()


@pytest.mark.parametrize(
    ("variable", "field"),
    [
        ("NAVI_ACTOR_WARM_START__EPOCHS", "warm_start.epochs"),
        ("NAVI_ENV_EPISODE__MAX_STEPS", "episode.max_steps"),
    ],
)
def test_a_bad_setting_in_the_environment_is_one_line(corpus: Path, variable: str, field: str) -> None:
    """The bench reads the trainer's and the environment's settings from NAVI_*: a bad value names the
    field in one line, before anything trains (no pydantic traceback)."""
    result = subprocess.run(
        [sys.executable, str(SCRIPT), *ARGS, "--corpus", str(corpus), "--steps", "64",
         "--warm-start-steps", "64"],
        env={**os.environ, **TINY, variable: "abc"}, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(f"Error: invalid settings: {field}: ")
    assert "warm start:" not in result.stderr


WARM_STEPS = 256  # 64 per drone (rollout.num_actors = 4)


@pytest.fixture(scope="module")
def warm(corpus: Path) -> dict[str, Any]:
    """The JSON line of a run that behaviour-clones the frontier planner first, then trains 128 PPO steps.

    The epochs come from ``NAVI_ACTOR_WARM_START__EPOCHS``: the bench passes its ``--warm-start-*``
    options only when given, so it clones with ``navi-actor train``'s settings and defaults (it once
    cloned 10 epochs where train cloned 20).

    192 training frames (one of the four episodes is held out): 100 epochs at a learning rate of 3e-3
    fit them visibly; 10 epochs at 3e-4 barely move the mean. Some seeds' flights (start poses drawn
    per scene) are not fitted by these 100 epochs: with the planner braking at every goal seed 0's
    (train MSE 0.25 -> 0.24) while seeds 1 and 2 fit; with the faster planner (2026-11-29) seed 1's
    (sequence MSE 0.29 -> 0.29) while seeds 2 and 3 fit (0.33 -> 0.24, 0.32 -> 0.19, measured).
    Measured with a policy that reads no visit memory, the default then, and kept so: the frontier map
    made this fixture 54 s instead of 11 s, and cloning with the map is tested beside the BC code.
    The clone keeps its last epoch (``bc.keep_best`` off): one held-out episode picks an epoch by
    noise (with keep_best the kept clone's MSE on these flights read 0.32 against a fresh 0.34), and
    this fixture checks that 100 epochs fit the flights; keep_best is tested beside the BC code.
    """
    result = subprocess.run(
        [sys.executable, str(SCRIPT), *ARGS, "--corpus", str(corpus), "--steps", "128", "--seed", "3",
         "--warm-start-steps", str(WARM_STEPS)],
        env={**os.environ, **TINY, "NAVI_ACTOR_WARM_START__EPOCHS": "100", "NAVI_ACTOR_BC__STREAMS": "4",
             "NAVI_ACTOR_BC__SEQUENCE_LENGTH": "16", "NAVI_ACTOR_POLICY__VISIT_INPUT": "false",
             "NAVI_ACTOR_BC__LEARNING_RATE": "3e-3", "NAVI_ACTOR_PPO__REFERENCE_KL_COEF": "0.1",
             "NAVI_ACTOR_BC__KEEP_BEST": "false"},
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    return json_line(result)


def test_no_warm_start_keeps_the_plain_path(trained: dict[str, Any]) -> None:
    assert "warm_start" not in trained  # --warm-start-steps 0: PPO from a fresh policy


def test_warm_start_flies_the_planner_on_training_scenes_only_with_its_executed_actions(
    corpus: Path, warm: dict[str, Any]
) -> None:
    """Every recorded frame was flown in hall_000 (hall_001 is held out), and every label is exactly
    the action a frontier planner returns for the recorded observation and pose: in [-1, 1]."""
    from navi_actor.evaluation.baselines import FrontierPolicy
    from navi_auditor.demos import load_demonstration
    from navi_environment.config import EnvironmentSettings

    facts = warm["warm_start"]
    assert facts["steps"] == WARM_STEPS and facts["drones"] == 4 and facts["files"] == 4
    assert facts["scenes"] == ["hall_000.gmdag"]
    demos = [load_demonstration(p) for p in sorted(Path(facts["demonstrations"]).glob("*.npz"))]
    assert len(demos) == 4 and all(len(d) == WARM_STEPS // 4 for d in demos)
    scenes = {str(scene) for d in demos for scene in d.segment_scenes}
    assert scenes == {str(corpus / "hall_000.gmdag")}
    assert all(d.metadata["pilot"] == "frontier" for d in demos)

    settings = EnvironmentSettings.model_validate_json(demos[0].metadata["environment_settings"])
    planner = FrontierPolicy(settings, len(demos))
    state = planner.initial_state(len(demos))
    for t in range(WARM_STEPS // 4):
        frame = {key: torch.from_numpy(np.stack([d.frames[key][t] for d in demos]))
                 for key in ("observations", "episode_starts", "positions", "yaw", "actions")}  # fmt: skip
        expected = planner.act(
            frame["observations"], state, frame["episode_starts"], pose=(frame["positions"], frame["yaw"])
        ).action
        assert frame["actions"].abs().max() <= 1.0
        torch.testing.assert_close(frame["actions"], expected.float(), atol=0.0, rtol=0.0)
    moving = np.concatenate([d.actions[:, 0] for d in demos])
    assert np.abs(moving).max() > 0.1  # the planner flew (a hovering teacher would teach nothing)


def test_warm_start_clones_the_planner_and_ppo_starts_from_the_clone(warm: dict[str, Any]) -> None:
    """The cloned policy's mean action is nearer the labels than a fresh policy's; PPO continued from
    the BC checkpoint (critic warm-up, KL anchored to the clone when a KL weight is asked for); --steps
    counted PPO steps only; the JSON reports BC's losses and seconds."""
    from navi_actor.bc import load_demonstrations, sequence_mse
    from navi_actor.checkpoints import load_checkpoint
    from navi_actor.models import NaviPolicy

    facts = warm["warm_start"]
    assert (
        facts["epochs"] == 100
        and facts["bc_optimizer_steps"] == 100 * 3
        and facts["seconds"] >= facts["bc_seconds"] > 0.0
    )
    assert facts["bc_train_nll"][1] < facts["bc_train_nll"][0]
    assert facts["bc_epochs_run"] == facts["bc_kept_epoch"] == 100  # NAVI_ACTOR_BC__KEEP_BEST reached train
    assert warm["train_steps"] == 128  # two rollouts of 16 steps x 4 drones; the warm start not counted
    data = load_demonstrations(sorted(Path(facts["demonstrations"]).glob("*.npz")))
    cloned = load_checkpoint(Path(facts["checkpoint"]))
    assert cloned.training_source == "bc"
    torch.manual_seed(0)
    fresh = NaviPolicy(cloned.policy_config)
    policy = NaviPolicy(cloned.policy_config)
    policy.load_state_dict(cloned.model)
    before, after = sequence_mse(fresh, data, 4, 16), sequence_mse(policy, data, 4, 16)
    assert after < 0.8 * before, (before, after)
    final = load_checkpoint(Path(warm["checkpoint"]))
    assert final.parent_checkpoint is not None
    assert Path(final.parent_checkpoint).resolve() == Path(facts["checkpoint"]).resolve()
    assert facts["reference_checkpoint"] == facts["checkpoint"] and facts["reference_kl_coef"] == 0.1
    ppo = json.loads(final.settings_json)["ppo"]  # what the PPO run really used
    assert ppo["value_warmup_updates"] == 10 and ppo["reference_checkpoint"] == facts["checkpoint"]
    # the clone before PPO flew the same plan with its mean action: what PPO added is a paired ratio
    policies = {"learned_mean_action", "learned_sampled", "random", "heuristic", "frontier"}
    assert set(warm["results"]) == policies | {"warm_start_mean_action"}
    assert warm["results"]["warm_start_mean_action"]["episodes"] == 1
    assert {"warm_start_mean_action_coverage_vs_random", "mean_action_coverage_vs_warm_start"} <= set(
        warm["ratios"]
    )
