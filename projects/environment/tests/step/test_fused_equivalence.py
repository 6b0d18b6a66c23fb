"""The fused numba CPU step against its oracle, the torch step: whole steps and each kernel alone."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch

from navi_environment.backend import INFO_KEYS, SdfDagBackend
from navi_environment.config import EnvironmentSettings, EpisodeSettings, RewardSettings, SensorSettings
from navi_environment.runtime.analytic import RoomSpec, room_scene
from navi_environment.runtime.atlas import pack_scenes
from navi_environment.step import fused_kernels
from navi_environment.step.episodes import EpisodeTracker
from navi_environment.step.fused import physics_params, resolve_step_kernel, reward_params
from navi_environment.step.physics import Kinematics, move_with_collisions
from navi_environment.step.rewards import REWARD_TERMS, RewardInputs, Rewards
from navi_environment.step.rewards.terms import VISIT_SLOTS
from navi_environment.tracer import Tracer

CPU = torch.device("cpu")
KERNELS: Any = fused_kernels  # numba dispatchers: signatures inferred at call time, not by mypy
SPEC = RoomSpec(hi=(6.0, 5.0, 3.0), pillars=((3.0, 3.0, 0.4),))
OTHER = RoomSpec(hi=(5.0, 4.0, 3.0), thin_wall_x=2.5, thin_wall_gap=(1.0, 2.5))
STATE = ("position", "yaw", "smoothed", "clearance", "spawn", "obs", "final_obs", "atlas_ids", "scene_index")
MEMORY = ("visited", "cells", "headings", "best_distance", "prev_clearance", "coverage", "prev_slot")
COUNTERS = ("length", "episode_return", "episodes_in_scene")


@pytest.fixture(scope="module")
def rooms():  # type: ignore[no-untyped-def]
    return [room_scene(SPEC, 64), room_scene(OTHER, 64)]


def settings_for(step_kernel: str, novelty_columns: bool = False, **episode: int) -> EnvironmentSettings:
    base = EnvironmentSettings(
        sensor=SensorSettings(azimuth_bins=32, elevation_bins=8),
        episode=EpisodeSettings(**episode),
        reward=RewardSettings(revisit=0.5, novelty_columns=novelty_columns),  # every term on
    )
    return base.model_copy(update={"physics": base.physics.model_copy(update={"step_kernel": step_kernel})})


def _copy_state(src: SdfDagBackend, dst: SdfDagBackend) -> None:
    """Make ``dst`` continue from exactly ``src``'s state (in place: the fused step's views stay valid)."""
    for name in STATE:
        getattr(dst, name).copy_(getattr(src, name))
    for name in MEMORY:
        getattr(dst.rewards, name).copy_(getattr(src.rewards, name))
    for name in COUNTERS:
        getattr(dst.episodes, name).copy_(getattr(src.episodes, name))
    dst._generator.set_state(src._generator.get_state())


def _actions(step: int, B: int, gen: torch.Generator) -> torch.Tensor:
    """Random actions out of range, some NaN/inf, and every third step full speed ahead (into walls)."""
    actions = torch.rand(B, 4, generator=gen) * 4.0 - 2.0
    if step % 3 == 0:
        actions[:, 0] = 1.0
    actions[torch.rand(B, 4, generator=gen) < 0.1] = float("nan")
    actions[torch.rand(B, 4, generator=gen) < 0.03] = float("inf")
    return actions


def _close(a: torch.Tensor, b: torch.Tensor, what: str, atol: float = 2e-5) -> None:
    assert torch.allclose(a.double(), b.double(), atol=atol, rtol=1e-5), (
        f"{what}: max diff {(a.double() - b.double()).abs().max().item():.3g}"
    )


def test_fused_step_matches_the_torch_step(rooms) -> None:  # type: ignore[no-untyped-def]
    """Whole steps, state copied from the torch backend before each: every output and all memory."""
    B = 4
    ref = SdfDagBackend(settings_for("torch", max_steps=12, episodes_per_scene=1), B, scenes=rooms)
    fused = SdfDagBackend(settings_for("numba", max_steps=12, episodes_per_scene=1), B, scenes=rooms)
    assert ref.step_kernel == "torch" and fused.step_kernel == "numba"
    assert ref.tracer.kernel == fused.tracer.kernel == "numba"
    ref.reset(seed=3)
    fused.reset(seed=3)
    gen = torch.Generator().manual_seed(0)
    collisions = slides = ended = rotations = 0
    for step in range(150):
        _copy_state(ref, fused)
        actions = _actions(step, B, gen)
        scenes_before = ref.scene_index.clone()
        a, b = ref.step(actions.clone()), fused.step(actions.clone())
        for name in ("position", "yaw", "smoothed", "clearance", "spawn", "obs", "final_obs"):
            _close(getattr(ref, name), getattr(fused, name), name)
        for key in INFO_KEYS:
            _close(a.info[key], b.info[key], key)
        _close(a.reward, b.reward, "reward")
        assert torch.equal(a.terminated, b.terminated) and torch.equal(a.truncated, b.truncated)
        assert torch.equal(ref.atlas_ids, fused.atlas_ids)
        for name in MEMORY:
            _close(getattr(ref.rewards, name), getattr(fused.rewards, name), name)
        for name in ("length", "episodes_in_scene"):
            assert torch.equal(getattr(ref.episodes, name), getattr(fused.episodes, name)), name
        _close(ref.episodes.episode_return, fused.episodes.episode_return, "episode_return")
        hit = a.info["collision"] > 0
        collisions += int(hit.sum())
        slides += int((hit & (a.info["speed"] > 0.1)).sum())
        ended += int((a.terminated | a.truncated).sum())
        rotations += int((ref.scene_index != scenes_before).sum())
    assert collisions >= 10 and slides >= 3, (collisions, slides)  # the sweep and the slide both ran
    assert ended >= 20 and rotations >= 10, (ended, rotations)  # auto-resets and scene rotation too


def test_fused_backend_runs_free_like_the_torch_backend(rooms) -> None:  # type: ignore[no-untyped-def]
    """Without state copies the two backends fly the same trajectories (float32 rounding aside)."""
    ref = SdfDagBackend(settings_for("torch"), 2, scenes=rooms[:1])
    fused = SdfDagBackend(settings_for("auto"), 2, scenes=rooms[:1])
    assert fused.step_kernel == "numba"
    ref.reset(seed=1)
    fused.reset(seed=1)
    gen = torch.Generator().manual_seed(1)
    for step in range(25):
        actions = _actions(step, 2, gen)
        a, b = ref.step(actions), fused.step(actions.clone().requires_grad_(step % 2 == 0))
        _close(ref.position, fused.position, "position", atol=1e-4)
        _close(a.reward, b.reward, "reward", atol=1e-4)


def test_step_kernel_setting_resolves() -> None:
    assert resolve_step_kernel("auto", "numba") == "numba"
    assert resolve_step_kernel("auto", "torch") == "torch"
    assert resolve_step_kernel("torch", "numba") == "torch"
    with pytest.raises(ValueError, match="numba tracer"):
        resolve_step_kernel("numba", "torch")


def test_command_kernel_matches_kinematics() -> None:
    settings = settings_for("numba")
    kin = Kinematics(settings.physics, CPU)
    gen = torch.Generator().manual_seed(2)
    B = 64
    actions = torch.rand(B, 4, generator=gen) * 6.0 - 3.0
    actions[::5, 1] = float("nan")
    actions[::7, 2] = float("-inf")
    smoothed = torch.rand(B, 4, generator=gen) * 4.0 - 2.0
    yaw = (torch.rand(B, generator=gen) * 2.0 - 1.0) * math.pi
    yaw[:4] = torch.tensor([math.pi - 1e-6, -math.pi, 0.0, 3.14159])
    clear = torch.rand(B, generator=gen) * 3.0
    want_smoothed, executed = kin.command(actions, smoothed, clear)
    want_disp, want_yaw = kin.displacement(executed, yaw)
    got_smoothed, got_yaw, disp = smoothed.numpy().copy(), yaw.numpy().copy(), np.empty((B, 3), np.float32)
    KERNELS.command(actions.numpy(), got_smoothed, got_yaw, clear.numpy(), physics_params(settings), disp)
    assert torch.equal(torch.from_numpy(got_smoothed), want_smoothed)
    _close(torch.from_numpy(disp), want_disp, "displacement", atol=1e-6)
    _close(torch.from_numpy(got_yaw), want_yaw, "yaw", atol=1e-6)


def test_sweep_kernel_matches_move_with_collisions(rooms) -> None:  # type: ignore[no-untyped-def]
    """Drones near walls and the pillar pushed into them: stop, slide, refuse, impact speed."""
    settings = settings_for("numba")
    tracer = Tracer(pack_scenes(rooms[:1]), settings.sensor, settings.tracer, CPU)
    gen = torch.Generator().manual_seed(4)
    B = 48
    position = torch.stack(
        [torch.rand(B, generator=gen) * 5.0 + 0.5, torch.rand(B, generator=gen) * 4.0 + 0.5,
         torch.rand(B, generator=gen) * 2.0 + 0.5], dim=1,
    )  # fmt: skip
    position[:8, 0] = 0.31  # resting against the x=0 wall
    disp = (torch.rand(B, 3, generator=gen) * 2.0 - 1.0) * 0.6
    disp[:8, 0] = -0.4  # into it
    disp[8] = 0.0
    ids = torch.zeros(B, dtype=torch.int32)
    clearance = tracer.query(position, ids)
    voxel = float(tracer.atlas.scene_f[:, 3].max())
    skin = 2.0 * settings.tracer.hit_epsilon_voxels * voxel
    want = move_with_collisions(
        tracer, position, disp, clearance, ids, radius=settings.physics.drone_radius_m,
        dt=settings.physics.dt, normal_step=voxel, skin=skin,
    )  # fmt: skip
    got_pos, got_clear = position.numpy().copy(), clearance.numpy().copy()
    collided, impact, speed = np.empty(B, np.bool_), np.empty(B, np.float32), np.empty(B, np.float32)
    KERNELS.sweep(
        got_pos, disp.numpy(), got_clear, ids.numpy(), collided, impact, speed, physics_params(settings),
        tracer.atlas.kernel_args(), tracer.rules,
    )  # fmt: skip
    assert want.collided.sum() >= 8
    assert torch.equal(torch.from_numpy(collided), want.collided)
    _close(torch.from_numpy(got_pos), want.position, "position", atol=1e-6)
    _close(torch.from_numpy(got_clear), want.clearance, "clearance", atol=1e-6)
    _close(torch.from_numpy(impact), want.impact_speed, "impact", atol=1e-5)
    _close(torch.from_numpy(speed), (want.position - position).norm(dim=1) / settings.physics.dt, "speed")


@pytest.mark.parametrize("novelty_columns", [False, True])
def test_reward_kernel_matches_rewards_compute(novelty_columns: bool) -> None:
    """Hand-built inputs with partly filled memory: the ten terms, the reward and the memory."""
    settings = settings_for("numba", novelty_columns)
    B, Az, El, H = 16, 16, 4, settings.sensor.horizon_m
    gen = torch.Generator().manual_seed(5)
    oracle = Rewards(settings.reward, settings.physics, B, CPU)
    oracle.reset_rows(torch.arange(B), torch.rand(B, generator=gen) * 3.0)
    oracle.visited[:, : VISIT_SLOTS // 2] = torch.rand(B, VISIT_SLOTS // 2, generator=gen) < 0.3
    oracle.cells[:, VISIT_SLOTS // 4 :] = torch.rand(B, 3 * VISIT_SLOTS // 4, generator=gen) < 0.3
    oracle.headings[:, : VISIT_SLOTS // 2] = torch.randint(0, 256, (B, VISIT_SLOTS // 2), generator=gen)
    oracle.best_distance += torch.rand(B, generator=gen) * 2.0
    obs = torch.rand(B, 3, Az, El, generator=gen)
    obs[:, 2] = (obs[:, 0] < 0.8).float()
    obs[:, 0] = torch.where(obs[:, 2] > 0, obs[:, 0], 1.0)
    position = (torch.rand(B, 3, generator=gen) * 2.0 - 1.0) * 40.0  # negative cells hash too
    yaw = (torch.rand(B, generator=gen) * 2.0 - 1.0) * 4.0
    # revisits: half the drones come from another visited cell, a quarter stay in a visited cell
    slots = oracle.slots(position, columns=novelty_columns)
    oracle.visited[torch.arange(B // 2), slots[: B // 2]] = True
    oracle.prev_slot[: B // 4] = slots[: B // 4]
    oracle.prev_slot[B // 4 : B // 2] = (slots[B // 4 : B // 2] + 1) % VISIT_SLOTS
    nearest = obs[:, 0].reshape(B, -1).amin(dim=1)
    forward = torch.tensor([0, 1, 2, 3, 4, 60, 61, 62, 63])
    inputs = RewardInputs(
        obs, nearest * H, obs[:, 2].reshape(B, -1).mean(dim=1), position, yaw,
        torch.rand(B, 3, generator=gen), torch.rand(B, generator=gen) < 0.5,
        torch.rand(B, generator=gen) * 4.0, forward, H,
    )  # fmt: skip
    memory = {name: getattr(oracle, name).clone() for name in MEMORY}
    want_reward, want_terms, _ = oracle.compute(inputs)
    terms, reward = np.zeros((16, B), np.float32), np.zeros(B, np.float32)
    KERNELS.reward_terms(
        obs.numpy().reshape(B, 3, -1), forward.numpy(), nearest.numpy(), inputs.hit_share.numpy(),
        position.numpy(), yaw.numpy(), inputs.spawn.numpy(), inputs.collided.numpy(),
        inputs.impact_speed.numpy(), *(memory[name].numpy() for name in MEMORY),
        oracle.weights.numpy(), reward_params(settings), terms, reward,
    )  # fmt: skip
    _close(torch.from_numpy(terms[:10]), want_terms, "terms", atol=1e-6)
    _close(torch.from_numpy(reward), want_reward, "reward", atol=1e-6)
    for name in MEMORY:
        _close(memory[name], getattr(oracle, name), name, atol=1e-6)
    assert want_terms[0].abs().sum() > 0 and want_terms[8].abs().sum() > 0  # novelty and collisions seen
    revisits = want_terms[REWARD_TERMS.index("revisit")]
    assert (revisits[B // 4 : B // 2] < 0).all() and (revisits[: B // 4] == 0).all()


def test_episode_kernel_matches_episode_tracker() -> None:
    """Step limit, starvation after the grace period only, outside the cube wins over truncation."""
    settings = settings_for("numba", max_steps=9, starvation_grace_steps=3)
    B = 8
    tracker = EpisodeTracker(settings.episode, B, CPU)
    tracker.length.copy_(torch.tensor([0, 2, 3, 3, 8, 8, 5, 1]))
    tracker.episode_return.copy_(torch.arange(B, dtype=torch.float32))
    hit_share = torch.tensor([0.0, 0.01, 0.01, 0.03, 0.5, 0.5, 0.5, 0.0])
    bounds = torch.tensor([[0.0, 0.0, 0.0, 4.0, 4.0, 4.0], [-2.0, -2.0, -2.0, 2.0, 2.0, 2.0]])
    ids = torch.tensor([0, 0, 0, 0, 0, 1, 1, 1], dtype=torch.int32)
    position = torch.full((B, 3), 1.0)
    position[5, 2] = 2.0  # on the upper face: outside (bounds are half-open)
    position[6, 0] = -2.0  # on the lower face: inside
    position[7, 1] = -2.5
    reward = torch.linspace(-1.0, 1.0, B)
    length, ret = tracker.length.numpy().copy(), tracker.episode_return.numpy().copy()
    terminated, truncated = np.zeros(B, np.bool_), np.zeros(B, np.bool_)
    ended = np.zeros(B, np.int64)
    n = KERNELS.episode_flags(
        reward.numpy(), hit_share.numpy(), position.numpy(), ids.numpy(), bounds.numpy(), length, ret,
        reward_params(settings), terminated, truncated, ended,
    )  # fmt: skip
    tracker.advance(reward)
    rows = bounds[ids.long()]
    outside = ((position < rows[:, :3]) | (position >= rows[:, 3:])).any(dim=1)
    want_terminated, want_truncated = tracker.end_flags(1.0 - hit_share, outside)
    assert want_truncated.tolist() == [False, False, True, False, True, False, False, False]
    assert want_terminated.tolist() == [False] * 5 + [True, False, True]
    assert torch.equal(torch.from_numpy(terminated), want_terminated)
    assert torch.equal(torch.from_numpy(truncated), want_truncated)
    assert torch.equal(torch.from_numpy(length), tracker.length)
    assert torch.equal(torch.from_numpy(ret), tracker.episode_return)
    assert ended[:n].tolist() == (want_terminated | want_truncated).nonzero().squeeze(1).tolist()
