"""``Navi/Explore-v0``: registered with Gymnasium, built from scene keywords, rendered as the panorama."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pydantic import ValidationError

from navi_common.panorama import render_panorama
from navi_contracts import paths
from navi_environment import gym_scenes
from navi_environment.gym_adapter import NaviGymEnv, NaviVectorEnv
from navi_environment.gym_registration import EXPLORE_ID, make_explore_env, register_when_gymnasium_loads

SMALL = {
    "compile": {"resolution": 64},
    "sensor": {"azimuth_bins": 16, "elevation_bins": 8},
    "episode": {"max_steps": 5},
}
SCENE = "procedural:apartment:seed=1"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A throw-away repository root, so the scene cache lands in a temporary artifacts/."""
    root = tmp_path_factory.mktemp("repo")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NAVI_REPO_ROOT", str(root))
        paths.repo_root.cache_clear()
        yield root
    paths.repo_root.cache_clear()


def test_import_is_light_and_gymnasium_knows_the_id_without_our_import() -> None:
    """A fresh interpreter: navi_environment (imported by its .pth) loads no numpy/torch/numba/gymnasium,
    and a plain ``import gymnasium`` then knows ``Navi/Explore-v0``."""
    code = (
        "import sys\n"
        "import navi_environment\n"
        "heavy = [m for m in ('numpy', 'torch', 'numba', 'gymnasium', 'pydantic') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "import gymnasium\n"
        f"assert {EXPLORE_ID!r} in gymnasium.registry\n"
        "spec = gymnasium.spec('Navi/Explore-v0')\n"
        "assert spec.vector_entry_point.endswith('make_explore_vector_env'), spec\n"
    )
    without_our_import = "import gymnasium\nassert 'Navi/Explore-v0' in gymnasium.registry\n"
    for program in (code, without_our_import):
        done = subprocess.run(
            [sys.executable, "-c", program], check=False, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr


def test_registration_after_gymnasium_is_imported_is_immediate() -> None:
    spec = gym.registry.pop(EXPLORE_ID)
    try:
        register_when_gymnasium_loads()
        assert gym.spec(EXPLORE_ID).entry_point == spec.entry_point
    finally:
        gym.registry[EXPLORE_ID] = spec


def test_procedural_scene_compiles_once_into_the_artifacts_cache(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = gym.make(EXPLORE_ID, scene=SCENE, **SMALL)
    assert isinstance(env.unwrapped, NaviGymEnv)
    cached = sorted((repo / "artifacts" / gym_scenes.CACHE_DIR).glob("*.gmdag"))
    assert len(cached) == 1 and "r64" in cached[0].name
    obs, _ = env.reset(seed=0)
    assert obs.shape == (3, 16, 8) and env.observation_space.contains(obs)

    def no_compile(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a cached scene was compiled again")

    monkeypatch.setattr("navi_environment.corpus.sources.compile_source", no_compile)
    settings = env.unwrapped.backend.settings
    assert gym_scenes.scene_file(SCENE, settings) == cached[0]
    other = settings.model_copy(update={"compile": settings.compile.model_copy(update={"resolution": 32})})
    assert gym_scenes.cache_path(SCENE.encode(), SCENE, other) != cached[0]


def test_gmdag_file_and_corpus_folder_are_used_as_they_are(repo: Path) -> None:
    settings_env = gym.make(EXPLORE_ID, scene=SCENE, **SMALL).unwrapped
    cached = gym_scenes.scene_file(SCENE, settings_env.backend.settings)
    by_file = gym.make(EXPLORE_ID, scene=str(cached), **SMALL).unwrapped
    assert by_file.backend.scenes.corpus == [cached]
    by_corpus = gym.make(EXPLORE_ID, corpus=cached.parent, **SMALL)
    assert by_corpus.unwrapped.backend.scenes.corpus == sorted(cached.parent.glob("*.gmdag"))
    obs, _ = by_corpus.reset(seed=0)
    assert obs.shape == (3, 16, 8)


def test_rgb_array_render_is_the_dashboard_panorama_and_check_env_passes(repo: Path) -> None:
    env = gym.make(EXPLORE_ID, scene=SCENE, render_mode="rgb_array", **SMALL)
    check_env(env.unwrapped)
    obs, _ = env.reset(seed=2)
    obs, *_ = env.step(env.action_space.sample())
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.shape == (8, 16, 3)
    assert np.array_equal(frame, render_panorama(obs[0], obs[2]))
    assert env.metadata["render_fps"] == 10


def test_make_vec_uses_the_batched_vector_entry_point(repo: Path) -> None:
    envs = gym.make_vec(EXPLORE_ID, num_envs=3, scene=SCENE, render_mode="rgb_array", **SMALL)
    assert isinstance(envs, NaviVectorEnv) and envs.num_envs == 3
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (3, 3, 16, 8)
    for _ in range(5):
        obs, reward, _terminated, truncated, infos = envs.step(envs.action_space.sample())
    assert reward.shape == (3,) and truncated.all() and infos["_final_obs"].all()
    frames = envs.render()
    assert len(frames) == 3
    for frame, observation in zip(frames, obs, strict=True):
        assert np.array_equal(frame, render_panorama(observation[0], observation[2]))


def test_bad_keywords_fail_with_one_clear_error(repo: Path) -> None:
    with pytest.raises(ValidationError, match="sensr"):
        gym.make(EXPLORE_ID, scene=SCENE, sensr={"azimuth_bins": 8})
    with pytest.raises(ValueError, match="not both"):
        gym.make(EXPLORE_ID, scene=SCENE, corpus=repo, **SMALL)
    with pytest.raises(FileNotFoundError, match="neither an existing file"):
        gym.make(EXPLORE_ID, scene=str(repo / "missing.glb"), **SMALL)
    with pytest.raises(ValueError, match="unknown scene family"):
        gym.make(EXPLORE_ID, scene="procedural:castle", **SMALL)
    with pytest.raises(ValueError, match="render_mode 'ansi' is not supported"):
        make_explore_env(scene=SCENE, render_mode="ansi", **SMALL)


@pytest.mark.slow
def test_record_video_records_the_panorama(repo: Path, tmp_path: Path) -> None:
    """gymnasium's RecordVideo (moviepy, a dev dependency) writes one frame per reset and step."""
    pytest.importorskip("moviepy")
    from gymnasium.wrappers import RecordVideo
    from moviepy import VideoFileClip

    sensor = {"azimuth_bins": 64, "elevation_bins": 16}  # even sizes, as H.264 wants
    env = gym.make(EXPLORE_ID, scene=SCENE, render_mode="rgb_array", **(SMALL | {"sensor": sensor}))
    folder = tmp_path / "videos"
    recorded = RecordVideo(env, str(folder), episode_trigger=lambda _episode: True, disable_logger=True)
    recorded.reset(seed=0)
    truncated = False
    while not truncated:
        *_, truncated, _info = recorded.step(recorded.action_space.sample())
    recorded.close()
    videos = list(folder.glob("*.mp4"))
    assert len(videos) == 1
    with VideoFileClip(str(videos[0])) as clip:
        assert tuple(clip.size) == (64, 16)
        assert round(clip.duration * clip.fps) == 1 + SMALL["episode"]["max_steps"]


@pytest.mark.slow  # rasterising a mesh (the mesh SDF kernels' first compile) takes ~20 s here
def test_mesh_scene_compiles_into_the_cache_keyed_by_its_bytes(repo: Path, tmp_path: Path) -> None:
    from navi_environment.scenes.export import export_layout
    from navi_environment.scenes.registry import generate

    mesh = export_layout(generate("apartment", 1), tmp_path / "flat.obj")
    env = gym.make(EXPLORE_ID, scene=str(mesh), **SMALL)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (3, 16, 8)
    (compiled,) = env.unwrapped.backend.scenes.corpus
    assert compiled.parent == repo / "artifacts" / gym_scenes.CACHE_DIR and compiled.name.startswith(
        "flat-r64-"
    )
    mesh.write_bytes(mesh.read_bytes() + b"\n# edited\n")
    assert (
        gym_scenes.cache_path(gym_scenes._file_digest(mesh), "flat", env.unwrapped.backend.settings)
        != compiled
    )
