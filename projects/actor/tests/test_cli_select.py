"""``navi-actor select-checkpoint``: a run's checkpoints judged, the chosen one copied, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from tiny_cli import TINY_ARGS, TINY_POLICY_ENV, TINY_TRAIN

from navi_actor.cli import main
from navi_actor.registry import ModelRegistry

pytestmark = pytest.mark.usefixtures("restore_process_state")


def invoke(tmp_path: Path, *args: str, **extra_env: str) -> object:
    env = {"NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(tmp_path), "NAVI_ACTOR_CHECKPOINT__EVERY_STEPS": "16",
           **TINY_POLICY_ENV, **extra_env}  # fmt: skip
    return CliRunner().invoke(main, list(args), env=env)  # type: ignore[arg-type]


def test_select_checkpoint_copies_the_chosen_one_and_writes_its_figures(tmp_path: Path) -> None:
    trained = invoke(tmp_path, *TINY_TRAIN, "--total-steps", "64")  # two rollouts of 2 drones x 16
    assert trained.exit_code == 0, trained.output
    (run,) = tmp_path.glob("runs/*")
    steps = sorted((run / "checkpoints").glob("step_*.pt"))
    assert len(steps) == 2  # a checkpoint after each rollout (every 16 steps)
    text = invoke(tmp_path, "select-checkpoint", str(run), *TINY_ARGS, "--episodes-per-scene", "2")
    assert text.exit_code == 0, text.output
    assert "mean action; random covers" in text.output and "chosen: step" in text.output
    assert "step_000000000032.pt: coverage" in text.output  # progress: a line per checkpoint flown
    figures = json.loads((run / "selection.json").read_text())
    assert [c["path"] for c in figures["candidates"]] == [str(p) for p in steps]
    chosen = Path(figures["chosen"]["path"])
    assert (run / "best.pt").read_bytes() == chosen.read_bytes()
    again = ["select-checkpoint", str(run), *TINY_ARGS, "--episodes-per-scene", "2", "--json"]
    as_json = invoke(tmp_path, *again, "--promote")
    promoted = json.loads(as_json.output.strip().splitlines()[-1])
    assert promoted["chosen"] == figures["chosen"]  # the same plan, the same choice
    registry = ModelRegistry(tmp_path / "models")
    latest = registry.latest()  # what the brain serves
    assert latest is not None and "selected" in latest.tags
    assert f"v{latest.version:03d}" in promoted["promoted"]
    assert registry.path_of(latest).read_bytes() == chosen.read_bytes()
    wider = invoke(tmp_path, *again, NAVI_ACTOR_ENVIRONMENT__POINT_AZIMUTH="32")  # another sensor
    assert wider.exit_code == 1 and "Traceback" not in wider.output
    assert "expects a (16, 8) sensor but the environment gives (32, 8)" in wider.output


def test_select_checkpoint_refuses_a_folder_without_checkpoints_in_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "nothing"
    empty.mkdir()
    result = invoke(tmp_path, "select-checkpoint", str(empty), *TINY_ARGS)
    assert result.exit_code == 1 and "holds no step_*.pt checkpoints" in result.output
    assert "Traceback" not in result.output


def test_the_second_plan_is_printed_beside_the_first() -> None:
    from navi_actor.evaluation.command import format_selection

    def row(step: int, cells: float) -> dict[str, object]:
        return {"path": f"step_{step}.pt", "step_id": step, "coverage": cells, "collision_rate": 0.0,
                "coverage_ratio": cells / 10, "collision_ratio": 0.0, "careful": True}  # fmt: skip

    result = {
        "scenes": ["hall_000.gmdag"], "episodes_per_scene": 4, "seed": 2, "random_coverage": 10.0,
        "random_collision_rate": 0.1, "max_collision_ratio": 0.3,
        "candidates": [row(100, 30.0), row(200, 30.0)], "chosen": row(100, 30.0),
        "rule": "most coverage among the careful, confirmed on a second plan among 2 near-equals",
        "best": "run/best.pt", "drones": 4,
        "confirmation": {"candidates": [row(100, 35.0), row(200, 25.0)], "random_coverage": 10.0,
                         "random_collision_rate": 0.1, "episodes_per_scene": 8, "seed": 3},
    }  # fmt: skip
    lines = format_selection(result).splitlines()
    assert lines[0].startswith("plan: 1 training scenes x 4 starts (seed 2), 4 drones at once, mean action;")
    assert lines[3] == "second plan: the same scenes x 8 starts (seed 3); random covers 10.00 cells"
    assert "3.50x random" in lines[4] and "2.50x random" in lines[5]
    assert lines[-1].startswith("chosen: step 100 (most coverage among the careful, confirmed")


def test_the_second_plan_is_on_by_default_with_the_librarys_starts() -> None:
    """The command and the library share one default (the benchmark imports it): the near-equals fly again."""
    import inspect

    from navi_actor.evaluation.selection import DEFAULT_CONFIRM_EPISODES_PER_SCENE, select_checkpoint

    command = main.commands["select-checkpoint"]  # type: ignore[attr-defined]
    (option,) = [param for param in command.params if param.name == "confirm_episodes_per_scene"]
    library = inspect.signature(select_checkpoint).parameters["confirm_episodes_per_scene"].default
    assert option.default == library == DEFAULT_CONFIRM_EPISODES_PER_SCENE > 0
