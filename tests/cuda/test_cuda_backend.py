"""``SdfDagBackend(device=accelerator)`` against ``device="cpu"``: same planned starts, same actions.

The CPU backend runs the numba tracer and the fused numba step; the accelerator backend the torch
tracer and the torch step (what ``auto`` picks on CUDA). Tolerances are those of the CPU backend
equivalence test (projects/environment/tests/test_env_backend_contract.py): positions within 1 mm,
rewards within 0.01, the same episode ends.

Before each step the accelerator backend takes the CPU backend's state (as the CPU fused-step test
does), so every step is compared from the same start. Why: flying free, a drone touching a wall
was seen to leave the two paths 0.11 m apart after one step from a 5e-7 m difference (the collision
response is discontinuous there), which says nothing about the device.
"""

from __future__ import annotations

import pytest
import torch

from navi_environment.backend import INFO_KEYS, SdfDagBackend, StepOutput
from navi_environment.config import EnvironmentSettings
from navi_environment.runtime.analytic import RoomSpec, room_scene
from navi_environment.runtime.scene import RuntimeScene

SPEC = RoomSpec(hi=(10.0, 8.0, 3.0), pillars=((3.0, 3.0, 0.4),), thin_wall_x=6.0, thin_wall_gap=(2.0, 4.0))
B, STEPS, MAX_STEPS = 4, 20, 14
STATE = ("position", "yaw", "smoothed", "clearance", "spawn", "obs", "final_obs", "atlas_ids", "scene_index")
MEMORY = ("visited", "headings", "best_distance", "prev_clearance", "coverage")
COUNTERS = ("length", "episode_return", "episodes_in_scene")


@pytest.fixture(scope="module")
def room() -> RuntimeScene:
    return room_scene(SPEC, 64)


def settings(kernel: str = "auto") -> EnvironmentSettings:
    base = EnvironmentSettings(
        sensor={"azimuth_bins": 32, "elevation_bins": 8, "horizon_m": 30.0}, episode={"max_steps": MAX_STEPS}
    )
    return base.model_copy(update={"tracer": base.tracer.model_copy(update={"device_kernel": kernel})})


def accel_backend(room: RuntimeScene, device: str) -> SdfDagBackend:
    """The backend on ``device`` with the CUDA code path named (``auto`` picks it on CUDA)."""
    backend = SdfDagBackend(settings("torch"), B, device=device, scenes=[room])
    assert backend.tracer.kernel == "torch" and backend.step_kernel == "torch"
    return backend


def actions_for(step: int, gen: torch.Generator) -> torch.Tensor:
    """Random actions partly out of range (1.7, -1.7, NaN) and every third step full speed ahead."""
    actions = torch.rand(B, 4, generator=gen) * 2.0 - 1.0
    actions[step % B, step % 4] = 1.7
    actions[(step + 1) % B, (step + 2) % 4] = -1.7
    if step % 3 == 0:
        actions[:, 0] = 1.7  # into walls: collisions and slides
    if step == 5:
        actions[0, 1] = float("nan")
    return actions


def copy_state(src: SdfDagBackend, dst: SdfDagBackend) -> None:
    """Make ``dst`` continue from ``src``'s state (in place, across devices)."""
    for name in STATE:
        getattr(dst, name).copy_(getattr(src, name))
    for name in MEMORY:
        getattr(dst.rewards, name).copy_(getattr(src.rewards, name))
    for name in COUNTERS:
        getattr(dst.episodes, name).copy_(getattr(src.episodes, name))


def assert_state_close(accel: SdfDagBackend, cpu: SdfDagBackend, what: str) -> None:
    """Post-step state and reward memory (what the next step starts from) agree."""
    for name in ("position", "smoothed", "clearance", "spawn"):
        got, want = getattr(accel, name).cpu(), getattr(cpu, name)
        assert torch.allclose(got, want, atol=1e-3), f"{what}: {name} max diff {(got - want).abs().max():.3g}"
    assert torch.allclose(accel.yaw.cpu(), cpu.yaw, atol=1e-4), f"{what}: yaw"
    assert torch.equal(accel.atlas_ids.cpu(), cpu.atlas_ids) and torch.equal(
        accel.scene_index.cpu(), cpu.scene_index
    )
    for name in ("length", "episodes_in_scene"):
        assert torch.equal(getattr(accel.episodes, name).cpu(), getattr(cpu.episodes, name)), (
            f"{what}: {name}"
        )
    assert torch.allclose(accel.episodes.episode_return.cpu(), cpu.episodes.episode_return, atol=2e-2), what
    assert torch.equal(accel.rewards.visited.cpu(), cpu.rewards.visited), f"{what}: visited cells"
    assert torch.allclose(accel.rewards.best_distance.cpu(), cpu.rewards.best_distance, atol=1e-3), what


def place(backend: SdfDagBackend, starts: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    rows = torch.arange(B)
    return backend.start_episodes(rows, torch.zeros(B, dtype=torch.long), *starts)


def assert_on(device: torch.device, out: StepOutput, backend: SdfDagBackend) -> None:
    tensors = {"obs": out.obs, "reward": out.reward, "terminated": out.terminated,
               "truncated": out.truncated, "final_obs": out.final_obs, **out.info}  # fmt: skip
    position, yaw = backend.poses()
    tensors |= {"position": position, "yaw": yaw}
    wrong = {name: str(t.device) for name, t in tensors.items() if t.device.type != device.type}
    assert not wrong, f"tensors off the backend's device {device}: {wrong}"


def assert_obs_close(accel: torch.Tensor, cpu: torch.Tensor, what: str) -> None:
    got = accel.cpu()
    valid_agree = (got[:, 2] == cpu[:, 2]).float().mean()
    assert valid_agree >= 0.99, f"{what}: valid flags agree on {valid_agree:.3f} of rays"
    both = (got[:, 2] > 0) & (cpu[:, 2] > 0)
    depth_m = (got[:, 0] - cpu[:, 0]).abs()[both] * 30.0
    assert float(torch.quantile(depth_m, 0.99)) <= 0.02, f"{what}: depth p99 error {depth_m.max():.4f} m"
    assert (got[:, 1] == cpu[:, 1])[both].float().mean() >= 0.99, f"{what}: semantic"


def test_auto_runs_the_torch_path_on_cuda(room: RuntimeScene, accel_device: str) -> None:
    backend = SdfDagBackend(settings(), B, device=accel_device, scenes=[room])
    on_cpu = torch.device(accel_device).type == "cpu"
    assert backend.tracer.kernel == ("numba" if on_cpu else "torch")
    assert backend.step_kernel == ("numba" if on_cpu else "torch")
    obs = backend.reset(seed=0)
    assert obs.device.type == torch.device(accel_device).type


def test_same_starts_and_actions_give_the_same_steps(room: RuntimeScene, accel_device: str) -> None:
    cpu = SdfDagBackend(settings(), B, device="cpu", scenes=[room])
    accel = accel_backend(room, accel_device)
    dev = accel.device
    cpu.reset(seed=0)
    accel.reset(seed=0)
    starts = cpu.sample_starts(0, B, seed=4)  # the evaluator's planned starts (CPU tensors)
    assert_obs_close(place(accel, starts), place(cpu, starts), "first observation")
    gen = torch.Generator().manual_seed(7)
    collisions = ended = 0
    for step in range(STEPS):
        if step:
            copy_state(cpu, accel)
        actions = actions_for(step, gen)
        a = accel.step(actions.to(dev))
        c = cpu.step(actions)
        assert_on(dev, a, accel)
        what = f"step {step}"
        assert torch.equal(a.terminated.cpu(), c.terminated), what
        assert torch.equal(a.truncated.cpu(), c.truncated), what
        assert torch.allclose(a.reward.cpu(), c.reward, atol=1e-2), what
        for key in INFO_KEYS:
            assert torch.allclose(a.info[key].cpu(), c.info[key], atol=2e-2), f"{what}: {key}"
        collisions += int(c.info["collision"].sum())
        if bool(c.truncated.any()):
            ended += 1
            assert c.truncated.all(), "placed together, the drones reach max_steps together"
            assert_obs_close(a.final_obs, c.final_obs, f"{what} final_obs")
            # auto-reset spawns come from each device's own generator: place both at the same poses
            assert_obs_close(place(accel, starts), place(cpu, starts), "after the re-placement")
        else:
            assert_obs_close(a.obs, c.obs, what)
            assert_state_close(accel, cpu, what)
    assert ended == 1, "the episodes were truncated once (max_steps) and re-placed"
    assert collisions >= 1, "the full-speed steps reached a wall"
    # actions far out of range are clipped: no drone moves faster than the clipped command allows
    assert float(accel.info["speed"].max()) <= float(torch.tensor([5.0, 3.0]).norm()) + 1e-3
