"""The policy on the accelerator against the same weights on the CPU, and acting against learning there.

Default topology (rayvit + mamba2), the GRU core, the default topology with the recommended
recipe's std ceiling and a 4-tick chunk head (the real-time brain's), with the per-state std gate
(``log_std_mode=state``) and with the tanh-squashed mean, on a small sensor with the default widths.
TF32 is off (``exact_float32``), so the accelerator must match the CPU to float32 tolerances.
"""

from __future__ import annotations

import copy

import pytest
import torch

from navi_actor.models import NaviPolicy, PolicyConfig

AZ, EL, T, B = 32, 8, 12, 3
TOL = {"atol": 5e-4, "rtol": 5e-4}

pytestmark = pytest.mark.usefixtures("exact_float32")


CONFIGS: dict[str, dict[str, object]] = {
    "mamba2": {"temporal_core": "mamba2"},
    "gru": {"temporal_core": "gru"},
    "mamba2-chunk4-stdmax": {"temporal_core": "mamba2", "action_chunk": 4, "log_std_max": -0.5},
    "mamba2-state-std": {"temporal_core": "mamba2", "log_std_mode": "state"},
    "mamba2-tanh": {"temporal_core": "mamba2", "action_squash": "tanh"},
}


def policies(core: str, device: str) -> tuple[NaviPolicy, NaviPolicy]:
    """(CPU policy of ``CONFIGS[core]``, the same weights on ``device``), both in eval mode."""
    torch.manual_seed(0)
    config = PolicyConfig(visit_input=False, **CONFIGS[core], azimuth=AZ, elevation=EL, ssm_chunk=8)  # type: ignore[arg-type]
    cpu = NaviPolicy(config).eval()
    return cpu, copy.deepcopy(cpu).to(device)


def window(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Observations [T,B,3,Az,El], actions [T,B,4] and episode starts [T,B] with resets mid-window."""
    gen = torch.Generator().manual_seed(seed)
    obs = torch.rand(T, B, 3, AZ, EL, generator=gen)
    actions = torch.randn(T, B, 4, generator=gen)
    starts = torch.zeros(T, B, dtype=torch.bool)
    starts[0, 0] = starts[5, 1] = starts[8, 2] = starts[11, 0] = True  # one at the chunk edge (8)
    return obs, actions, starts


def step_through(policy: NaviPolicy, obs: torch.Tensor, starts: torch.Tensor, state: torch.Tensor) -> dict:  # type: ignore[type-arg]
    """The acting path: ``act`` (mean action) T times, carrying the state."""
    means, log_probs, values, chunks = [], [], [], []
    for t in range(obs.shape[0]):
        out = policy.act(obs[t], state, starts[t], deterministic=True)
        assert out.state.device == state.device, "the recurrent state left the device"
        state = out.state
        if out.action_chunk is not None:
            chunks.append(out.action_chunk)
        means.append(out.action_mean)
        log_probs.append(out.log_prob)
        values.append(out.value)
    stepped = {"mean": torch.stack(means), "log_prob": torch.stack(log_probs), "value": torch.stack(values),
               "state": state}  # fmt: skip
    if chunks:
        stepped["chunk"] = torch.stack(chunks)
    return stepped


@pytest.mark.parametrize("core", list(CONFIGS))
def test_acting_on_the_accelerator_matches_the_cpu(core: str, accel_device: str) -> None:
    cpu, accel = policies(core, accel_device)
    dev = torch.device(accel_device)
    state = accel.initial_state(B)
    assert state.device.type == dev.type
    obs, _, starts = window(1)
    warm = step_through(cpu, obs, torch.zeros_like(starts), cpu.initial_state(B))["state"]
    assert warm.abs().sum() > 0  # a carried state, not zeros
    ref = step_through(cpu, obs, starts, warm)
    got = step_through(accel, obs.to(dev), starts.to(dev), warm.to(dev))
    assert ("chunk" in ref) == ("action_chunk" in CONFIGS[core]) and ref.keys() == got.keys()
    for key in ref:
        assert got[key].device.type == dev.type
        torch.testing.assert_close(got[key].cpu(), ref[key], **TOL, msg=f"{core}: {key}")


@pytest.mark.parametrize("core", list(CONFIGS))
def test_learning_on_the_accelerator_matches_the_cpu_and_its_own_acting(core: str, accel_device: str) -> None:
    cpu, accel = policies(core, accel_device)
    dev = torch.device(accel_device)
    obs, actions, starts = window(2)
    state0 = step_through(cpu, obs[:4], torch.zeros_like(starts[:4]), cpu.initial_state(B))["state"]
    ref = cpu.evaluate_sequences(obs, actions, state0, starts)
    got = accel.evaluate_sequences(obs.to(dev), actions.to(dev), state0.to(dev), starts.to(dev))
    assert (ref.later_means is None) == ("action_chunk" not in CONFIGS[core])
    keys = ("log_prob", "entropy", "value", "action_mean", "final_state")
    for key in (*keys, "later_means") if ref.later_means is not None else keys:
        value = getattr(got, key)
        assert value.device.type == dev.type
        torch.testing.assert_close(
            value.detach().cpu(), getattr(ref, key).detach(), **TOL, msg=f"{core}: {key}"
        )
    # the learner's gradients on the device are the CPU's
    for evaluation in (ref, got):
        loss = evaluation.log_prob.mean() + evaluation.value.square().mean()
        if evaluation.later_means is not None:  # the chunk head's gradients too
            loss = loss + evaluation.later_means.square().mean()
        loss.backward()
    for (name, p_cpu), p_dev in zip(cpu.named_parameters(), accel.parameters(), strict=True):
        if p_cpu.grad is None:
            assert p_dev.grad is None, name
            continue
        assert p_dev.grad is not None and torch.isfinite(p_dev.grad).all(), name
        torch.testing.assert_close(
            p_dev.grad.cpu(), p_cpu.grad, atol=1e-4, rtol=2e-3, msg=f"{core}: grad {name}"
        )
    # on the device, stepping `act` gives what `evaluate_sequences` re-evaluates (PPO ratio 1)
    dev_obs, dev_starts, dev_state0 = obs.to(dev), starts.to(dev), state0.to(dev)
    acted = step_through(accel, dev_obs, dev_starts, dev_state0)
    again = accel.evaluate_sequences(dev_obs, acted["mean"], dev_state0, dev_starts)
    ratio = torch.exp(again.log_prob.detach() - acted["log_prob"])
    assert float((ratio - 1).abs().max()) < 1e-3, f"{core}: PPO ratio before any update"
    torch.testing.assert_close(again.value.detach(), acted["value"], **TOL)
    torch.testing.assert_close(again.final_state.detach(), acted["state"], **TOL)
