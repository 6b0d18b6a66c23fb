"""Pictures of where each policy flew: every planned path drawn in its policy's panel over the scene."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from navi_actor.evaluation.baselines import RandomPolicy
from navi_actor.evaluation.evaluator import evaluate_policy
from navi_actor.evaluation.paths_png import (
    FREE,
    PALETTE,
    SEPARATOR,
    SOLID,
    prepare_folder,
    render_scene,
    write_path_images,
)
from navi_actor.evaluation.plan import make_plan

pytestmark = pytest.mark.usefixtures("restore_process_state")


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Two tiny procedural halls (32^3), two drones, a small sensor, 40-step episodes."""
    from navi_environment.backend import SdfDagBackend
    from navi_environment.config import EnvironmentSettings
    from navi_environment.corpus.settings import CompileSettings
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import write_gmdag

    folder = tmp_path_factory.mktemp("halls")
    paths = []
    for seed in (0, 1):
        compiled = compile_source(f"procedural:hall:seed={seed}", CompileSettings(), resolution=32)
        path = folder / f"hall_{seed:03d}.gmdag"
        write_gmdag(compiled.asset, path)
        paths.append(path)
    settings = EnvironmentSettings(
        sensor={"azimuth_bins": 32, "elevation_bins": 8}, episode={"max_steps": 40}
    )
    return SdfDagBackend(settings, 2, scene_paths=paths)


class Forward:
    """Full speed ahead, turning a little: a path that leaves its start."""

    def initial_state(self, batch_size: int, device: object = None) -> torch.Tensor:
        return torch.zeros(batch_size, 0)

    def act(self, obs: torch.Tensor, state: torch.Tensor, episode_start: torch.Tensor,
            deterministic: bool = False) -> Any:  # fmt: skip
        from types import SimpleNamespace

        action = torch.tensor([1.0, 0.0, 0.0, 0.3]).expand(obs.shape[0], 4).clone()
        return SimpleNamespace(action=action, state=state)


def _is_shade_of(pixels: np.ndarray, base: tuple[int, int, int]) -> np.ndarray:
    """[N] bool: the pixel is ``base`` times a shade in [0.45, 1] (how episodes are drawn)."""
    share = pixels.astype(np.float64) / np.array(base, dtype=np.float64)
    return (np.ptp(share, axis=1) < 0.05) & (share[:, 0] >= 0.4) & (share[:, 0] <= 1.01)


def test_every_path_is_drawn_in_its_own_panel_over_free_space_and_walls(backend: Any) -> None:
    plan = make_plan(backend, 2, seed=5)
    reports = [
        evaluate_policy(policy, backend, plan=plan, deterministic=True, seed=5, record_paths=True)
        for policy in (Forward(), RandomPolicy())
    ]
    scene = 0
    episodes = (plan.scenes == scene).nonzero().squeeze(1).tolist()
    panels = [[report.paths[i] for i in episodes] for report in reports]  # type: ignore[index]
    image = render_scene(backend.scenes.scene(scene), backend.settings, panels)
    separators = np.nonzero((image == np.array(SEPARATOR)).all(axis=2).all(axis=0))[0]
    assert len(separators) == 6  # two panels, one 6-pixel separator between them
    first, second = image[:, : separators[0]], image[:, separators[-1] + 1 :]
    assert first.shape == second.shape
    for panel, own, other in ((first, PALETTE[0], PALETTE[1]), (second, PALETTE[1], PALETTE[0])):
        pixels = panel.reshape(-1, 3)
        assert _is_shade_of(pixels, own).sum() > 50  # its policy's paths...
        assert not _is_shade_of(pixels, other).any()  # ...and none of the other's
        background = (pixels == np.array(FREE)).all(axis=1) | (pixels == np.array(SOLID)).all(axis=1)
        assert background.mean() > 0.5 and (pixels == np.array(SOLID)).all(axis=1).any()  # walls shown
        assert (pixels == 0).all(axis=1).sum() >= 2 * 16  # a start marker per episode
    # the forward policy flew away from its starts: its path spans more than a start marker
    assert max(float(np.ptp(path[:, :2], axis=0).max()) for path in panels[0]) > 1.0


def test_one_picture_per_scene_and_refusals(backend: Any, tmp_path: Path) -> None:
    from navi_environment.preview.png import decode_png

    plan = make_plan(backend, 1, seed=2)
    flown = evaluate_policy(RandomPolicy(), backend, plan=plan, seed=2, record_paths=True)
    files = write_path_images(tmp_path / "paths", backend, [flown, flown])
    assert [f.name for f in files] == ["hall_000.png", "hall_001.png"]
    assert all(decode_png(f.read_bytes()).ndim == 3 for f in files)
    with pytest.raises(ValueError, match="record_paths"):
        write_path_images(tmp_path, backend, [evaluate_policy(RandomPolicy(), backend, plan=plan, seed=2)])
    other = evaluate_policy(
        RandomPolicy(), backend, plan=make_plan(backend, 1, seed=3), seed=2, record_paths=True
    )
    with pytest.raises(ValueError, match="different plans"):
        write_path_images(tmp_path, backend, [flown, other])


def test_the_command_refuses_paths_without_the_simulator_in_one_line(tmp_path: Path) -> None:
    from navi_actor.cli import main

    result = CliRunner().invoke(
        main,
        ["evaluate", "--policy", "random", "--environment-backend", "point", "--episodes-per-scene", "1",
         "--paths", str(tmp_path)],
    )  # fmt: skip
    assert result.exit_code != 0
    assert result.output.strip().splitlines()[-1] == (
        "Error: --paths draws scenes of the simulator: use --environment-backend sdfdag"
    )


def test_a_folder_that_cannot_be_made_is_one_line_before_anything_flies(tmp_path: Path) -> None:
    (tmp_path / "a_file").write_text("")
    with pytest.raises(ValueError, match=r"^cannot write path pictures to .*a_file/sub: Not a directory$"):
        prepare_folder(tmp_path / "a_file" / "sub")
    prepare_folder(tmp_path / "new" / "deeper")
    assert (tmp_path / "new" / "deeper").is_dir()
