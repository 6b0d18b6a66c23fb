"""The in-process delayed brain: which chunk entry runs at which tick, and how chunks are blended."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from navi_actor.service.chunk_schedule import blend_weights
from navi_actor.service.delayed_brain import DelayedBrain, delayed_actions


@dataclass
class _Acted:
    action: torch.Tensor
    action_chunk: torch.Tensor
    state: torch.Tensor


class _TickPolicy:
    """Answers observation ``obs`` (its value is the tick) with entry k = ``scale * tick + k``."""

    def __init__(self, horizon: int = 12, scale: float = 100.0) -> None:
        self.horizon, self.scale = horizon, scale
        self.calls: list[tuple[int, list[bool], float]] = []  # (tick, starts, state in)

    def initial_state(self, drones: int) -> torch.Tensor:
        return torch.zeros(drones, 1)

    def act(self, obs: torch.Tensor, state: torch.Tensor, start: torch.Tensor, deterministic: bool) -> _Acted:
        assert deterministic
        tick = int(obs[0, 0])
        self.calls.append((tick, start.tolist(), float(state[0, 0])))
        entries = self.scale * tick + torch.arange(self.horizon, dtype=torch.float32)
        chunk = entries.view(1, -1, 1).expand(obs.shape[0], -1, 4).clone()
        return _Acted(chunk[:, 0], chunk, state + 1)

    def physics_action(self, action: torch.Tensor) -> torch.Tensor:
        return action


def _fly(brain: DelayedBrain, ticks: int) -> list[float]:
    return [float(brain.action(tick, torch.full((2, 1), float(tick)))[0, 0]) for tick in range(ticks)]


def test_the_entry_of_the_ticks_since_the_answer_runs_or_hold_runs_entry_0() -> None:
    chunk = torch.arange(2 * 3 * 4, dtype=torch.float32).view(2, 3, 4)  # [B=2, H=3, A=4]
    assert torch.equal(delayed_actions(chunk, 10, 12, "chunks"), chunk[:, 2])
    assert torch.equal(delayed_actions(chunk, 10, 19, "chunks"), chunk[:, 2])  # past H: the last
    assert torch.equal(delayed_actions(chunk, 10, 12, "hold"), chunk[:, 0])


def test_an_answer_takes_effect_delay_ticks_after_its_observation_and_runs_from_its_entry_there() -> None:
    policy = _TickPolicy()
    executed = _fly(DelayedBrain(policy, 2, delay=3, variant="chunks"), 12)
    # the first answer (tick 0) at once; then the answer to tick t from tick t + 3, at entry 3
    assert executed == [0, 1, 2, 3, 4, 5, 303, 304, 305, 603, 604, 605]
    # observations consumed every 3 ticks, the recurrent state carried between them, started once
    assert policy.calls == [(0, [True, True], 0.0), (3, [False, False], 1.0), (6, [False, False], 2.0),
                            (9, [False, False], 3.0)]  # fmt: skip


def test_hold_repeats_the_answer_and_delay_0_is_closed_loop() -> None:
    assert _fly(DelayedBrain(_TickPolicy(), 2, delay=3, variant="hold"), 8) == [0, 0, 0, 0, 0, 0, 300, 300]
    assert _fly(DelayedBrain(_TickPolicy(), 2, delay=0, variant="chunks"), 4) == [0, 100, 200, 300]


def test_a_new_chunk_is_blended_into_the_old_one_with_the_brains_weights() -> None:
    executed = _fly(DelayedBrain(_TickPolicy(), 2, delay=3, variant="chunks_blend"), 10)
    weights = blend_weights(3).tolist()
    # tick 6: old chunk (tick 0) entry 6, new chunk (tick 3) entry 3, blended over 3 ticks
    pairs = zip(weights, (6, 7, 8), (303, 304, 305), strict=True)
    blended = [w * old + (1 - w) * new for w, old, new in pairs]
    assert executed[6:9] == pytest.approx(blended)
    assert executed[:6] == [0, 1, 2, 3, 4, 5]


def test_a_plan_that_agrees_with_the_committed_one_is_flown_without_a_jump() -> None:
    """Entry k of the answer to tick t is t + k: every chunk plans the same action for each tick."""
    executed = _fly(DelayedBrain(_TickPolicy(scale=1.0), 2, delay=3, variant="chunks_blend"), 15)
    assert executed == pytest.approx(list(range(15)))


def test_bad_variants_and_delays_are_refused() -> None:
    with pytest.raises(ValueError, match="variant must be one of"):
        DelayedBrain(_TickPolicy(), 2, delay=3, variant="blend")
    with pytest.raises(ValueError, match="delay must be >= 0"):
        DelayedBrain(_TickPolicy(), 2, delay=-1, variant="chunks")


@pytest.mark.parametrize("source", ["positions", "frontiers"])
def test_a_visit_reading_policy_closed_loop_acts_as_the_stepper_with_the_poses(source: str) -> None:
    """At delay 0 the delayed brain is closed loop: with the poses it folds each observation into the
    policy's visit memory as the stepper (infer, the brains) does; without them it refuses."""
    from navi_actor.inference.stepper import MISSING_POSES, PolicyStepper
    from navi_actor.memory import VisitMemoryConfig
    from navi_actor.models import NaviPolicy, PolicyConfig

    torch.manual_seed(0)
    visits = VisitMemoryConfig(source=source, write_every=1, exclusion_window=0)  # type: ignore[arg-type]
    sizes = {"azimuth": 16, "elevation": 8, "embed_dim": 32, "vit_dim": 32, "vit_layers": 1}
    policy = NaviPolicy(PolicyConfig(temporal_core="gru", action_chunk=3, visits=visits, **sizes)).eval()
    assert policy.visit_projection is not None
    with torch.no_grad():
        policy.visit_projection.weight.normal_(0.0, 2.0)  # as after training: the features matter
    brain, stepper = DelayedBrain(policy, 2, delay=0, variant="chunks"), PolicyStepper(policy, 2)
    generator = torch.Generator().manual_seed(1)
    for tick in range(6):
        obs = torch.rand(2, 3, 16, 8, generator=generator)
        poses = (torch.rand(2, 3, generator=generator) * 4.0, torch.rand(2, generator=generator))
        torch.testing.assert_close(brain.action(tick, obs, poses), stepper.act(obs, poses))
    with pytest.raises(ValueError, match="poses"):
        DelayedBrain(policy, 2, delay=0, variant="chunks").action(0, obs)
    assert "poses" in MISSING_POSES
