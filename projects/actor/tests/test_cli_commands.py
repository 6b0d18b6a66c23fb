"""CLI smoke tests with tiny budgets (CliRunner, point environment, temporary artifacts folder)."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
import torch
from click.testing import CliRunner
from tiny_cli import TINY_POLICY_ENV, TINY_TRAIN

from navi_actor.cli import brain_main, main

TINY = [
    "--environment-backend", "point", "--num-actors", "2", "--torch-threads", "1",
]  # fmt: skip


pytestmark = pytest.mark.usefixtures("restore_process_state")


def invoke(tmp_path: Path, *args: str, group: object = main) -> object:
    env = {
        "NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(tmp_path),
        **TINY_POLICY_ENV,
    }
    return CliRunner().invoke(group, list(args), env=env, catch_exceptions=False)  # type: ignore[arg-type]


def test_train_models_evaluate_compare_promote(tmp_path: Path) -> None:
    result = invoke(
        tmp_path, "train", *TINY, "--temporal-core", "gru", "--total-steps", "32", "--rollout-length", "16",
        "--no-telemetry", "--seed", "3",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "finished: 32 steps" in result.output
    checkpoints = sorted(tmp_path.glob("runs/*/checkpoints/step_*.pt"))
    assert len(checkpoints) == 1
    listing = invoke(tmp_path, "models", "--json")
    entries = json.loads(listing.output)
    assert [entry["version"] for entry in entries] == [1] and entries[0]["temporal_core"] == "gru"
    assert "latest best" in invoke(tmp_path, "models").output
    evaluated = invoke(
        tmp_path, "evaluate", str(checkpoints[0]), *TINY, "--episodes-per-scene", "3", "--policy", "random",
        "--json",
    )  # fmt: skip
    report = json.loads(evaluated.output.strip().splitlines()[-1])
    assert report["plan"]["episodes"] == 3
    # one block per policy and acting mode (--mode both by default; a baseline acts its own way)
    assert [(b["policy"], b["mode"]) for b in report["results"]] == [
        (str(checkpoints[0]), "mean"), (str(checkpoints[0]), "sample"), ("random", "own"),
    ]  # fmt: skip
    block = report["results"][0]
    assert block["episodes"] == 3
    assert {"coverage_cells", "coverage_share", "collisions_per_step", "collisions_per_100m", "path_m",
            "mean_speed_mps", "return", "steps_to_half_coverage"} <= set(block)  # fmt: skip
    assert block["coverage_cells"]["ci95_low"] <= block["coverage_cells"]["value"]
    sampled = invoke(
        tmp_path, "evaluate", str(checkpoints[0]), *TINY, "--episodes-per-scene", "3", "--mode", "sample",
        "--json",
    )  # fmt: skip
    assert [b["mode"] for b in json.loads(sampled.output.strip().splitlines()[-1])["results"]] == ["sample"]
    text = invoke(tmp_path, "evaluate", "--policy", "random", *TINY, "--episodes-per-scene", "2")
    assert text.exit_code == 0 and "random (own): coverage" in text.output and "[" in text.output
    compared = invoke(
        tmp_path, "compare", str(checkpoints[0]), str(tmp_path / "models" / "latest.pt"), *TINY,
        "--episodes-per-scene", "2", "--mode", "mean", "--json",
    )  # fmt: skip
    paired = json.loads(compared.output.strip().splitlines()[-1])["paired"]["mean vs mean"]
    # the same weights on the same plan with the mean action: every paired difference is exactly 0
    differences = [m["difference"]["value"] for name, m in paired.items() if name != "coverage_share"]
    assert differences == [0.0] * len(differences)
    nothing = invoke(tmp_path, "evaluate", *TINY)
    assert nothing.exit_code != 0 and "name a policy" in nothing.output
    unknown = invoke(tmp_path, "evaluate", "--policy", "genius", *TINY)
    assert unknown.exit_code != 0 and "neither a checkpoint file nor one of" in unknown.output
    promoted = invoke(tmp_path, "promote", str(checkpoints[0]), "--notes", "by hand", "--tags", "a, b")
    assert "as v002" in promoted.output
    second = json.loads(invoke(tmp_path, "models", "--json").output)[1]
    assert second["notes"] == "by hand" and second["tags"] == ["a", "b"]


def test_train_auto_resumes_from_the_registry(tmp_path: Path) -> None:
    assert invoke(tmp_path, *TINY_TRAIN).exit_code == 0
    assert invoke(tmp_path, *TINY_TRAIN).exit_code == 0
    manifests = [json.loads(p.read_text()) for p in sorted(tmp_path.glob("runs/*/manifest.json"))]
    assert sorted(m["start_step_id"] for m in manifests) == [0, 32]
    fresh = invoke(tmp_path, *TINY_TRAIN, "--no-auto-resume")
    assert fresh.exit_code == 0


def test_brain_reaches_the_same_commands_and_bare_brain_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert set(main.commands) <= set(brain_main.commands)
    assert {"train", "evaluate", "compare", "promote", "models", "serve", "infer", "bc-pretrain"} <= set(
        main.commands
    )
    assert invoke(tmp_path, "models", group=brain_main).exit_code == 0
    served: list[bool] = []

    @click.command("serve")
    def fake_serve() -> None:
        served.append(True)

    monkeypatch.setitem(main.commands, "serve", fake_serve)
    bare = CliRunner().invoke(brain_main, [])
    assert bare.exit_code == 0, bare.output
    assert served == [True]


def test_bad_input_gives_clear_errors(tmp_path: Path) -> None:
    bad_core = invoke(tmp_path, "train", *TINY, "--temporal-core", "lstm", "--total-steps", "8")
    assert bad_core.exit_code != 0 and "valid choices: mamba2, gru, mambapy" in bad_core.output
    geometry = invoke(tmp_path, "train", *TINY, "--rollout-length", "12", "--total-steps", "8")
    assert geometry.exit_code != 0 and "multiple of" in geometry.output
    foreign = tmp_path / "old.pt"
    torch.save({"format": "navi-actor-checkpoint", "version": 2}, foreign)
    refused = invoke(tmp_path, "evaluate", str(foreign), *TINY)
    assert refused.exit_code != 0 and "reads only version 3" in refused.output
    assert invoke(tmp_path, "promote", str(foreign)).exit_code != 0


def test_a_broken_registry_is_refused_in_one_line(tmp_path: Path) -> None:
    """`promote` and `models` print one line, not a traceback, when the registry is malformed or its
    folder cannot be written (CliRunner would re-raise any other exception here)."""
    from navi_actor.checkpoints import Checkpoint, save_checkpoint
    from navi_actor.models import NaviPolicy, PolicyConfig

    config = PolicyConfig(visit_input=False, temporal_core="gru", azimuth=16, elevation=8)
    checkpoint = save_checkpoint(
        Checkpoint(model=NaviPolicy(config).state_dict(), policy_config=config, step_id=1),
        tmp_path / "model.pt",
    )
    (tmp_path / "models").write_text("a file where the registry folder should be")
    unwritable = invoke(tmp_path, "promote", str(checkpoint))
    assert unwritable.exit_code == 1 and "cannot write the model registry" in unwritable.output
    (tmp_path / "models").unlink()
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "registry.json").write_text("{not json")
    for args in (("promote", str(checkpoint)), ("models",)):
        malformed = invoke(tmp_path, *args)
        assert malformed.exit_code == 1 and "is malformed" in malformed.output
        assert len(malformed.output.strip().splitlines()) == 1, malformed.output


def test_help_explains_the_train_options(tmp_path: Path) -> None:
    text = invoke(tmp_path, "train", "--help").output
    for option in (
        "--total-steps",
        "--num-actors",
        "--rollout-length",
        "--device",
        "--encoder-backend",
        "--temporal-core",
        "--checkpoint",
        "--no-auto-resume",
        "--checkpoint-every-steps",
        "--checkpoint-keep",
        "--seed",
        "--gmdag-file",
        "--corpus",
        "--telemetry-endpoint",
        "--action-squash",
    ):
        assert option in text
