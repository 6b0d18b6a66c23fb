"""policy.memory_input: the episodic loop score enters the core, acting and learning agree on it."""

from __future__ import annotations

import copy

import pytest
import torch

from navi_actor.memory import EpisodicMemory, EpisodicMemoryConfig
from navi_actor.models import NaviPolicy, PolicyConfig

AZ, EL, B = 32, 8, 3
#: every step written and eligible at once, so short test flights already score their revisits
EAGER = EpisodicMemoryConfig(exclusion_window=0, write_every=1, age_decay=1.0)


def config(core: str = "gru", **extra: object) -> PolicyConfig:
    sizes = {"azimuth": AZ, "elevation": EL, "embed_dim": 32, "vit_dim": 32, "vit_layers": 1}
    return PolicyConfig(visit_input=False, temporal_core=core, ssm_head_dim=16, ssm_chunk=8, **sizes, **extra)  # type: ignore[arg-type]


def reading_policy(core: str = "gru") -> NaviPolicy:
    """A memory-reading policy whose projection is no longer zero (as after some PPO updates)."""
    torch.manual_seed(0)
    policy = NaviPolicy(config(core, memory_input=True, memory=EAGER)).eval()
    assert policy.memory_projection is not None
    with torch.no_grad():
        policy.memory_projection.weight.normal_(0.0, 2.0)
    return policy


def revisiting_flight(steps: int) -> torch.Tensor:
    """``[T, B, 3, Az, El]`` observations cycling through 3 places: every drone keeps coming back."""
    places = torch.rand(3, B, 3, AZ, EL, generator=torch.Generator().manual_seed(1))
    return torch.stack([places[t % 3] for t in range(steps)])


def test_a_reading_policy_starts_as_the_same_function_as_one_without_memory() -> None:
    torch.manual_seed(0)
    plain = NaviPolicy(config()).eval()
    torch.manual_seed(0)
    reading = NaviPolicy(config(memory_input=True, memory=EAGER)).eval()
    assert reading.memory_projection is not None
    assert torch.count_nonzero(reading.memory_projection.weight) == 0
    memory = reading.new_memory(B)
    state_p, state_r = plain.initial_state(B), reading.initial_state(B)
    start = torch.ones(B, dtype=torch.bool)
    for obs in revisiting_flight(6):
        a, b = (
            plain.act(obs, state_p, start, deterministic=True),
            reading.act(obs, state_r, start, deterministic=True, memory=memory),
        )
        torch.testing.assert_close(a.action, b.action)
        torch.testing.assert_close(a.value, b.value)
        state_p, state_r, start = a.state, b.state, torch.zeros_like(start)
    assert b.loop_score is not None and float(b.loop_score.min()) > 0.9  # it did see its revisits


def test_acting_or_learning_without_the_memory_is_refused() -> None:
    policy = reading_policy()
    obs, start = torch.rand(B, 3, AZ, EL), torch.ones(B, dtype=torch.bool)
    with pytest.raises(ValueError, match="memory_input"):
        policy.act(obs, policy.initial_state(B), start)
    with pytest.raises(ValueError, match="memory_input"):
        policy.evaluate_sequences(obs[None], torch.zeros(1, B, 4), policy.initial_state(B), start[None])
    assert NaviPolicy(config()).new_memory(B) is None  # a policy without the input needs none


@pytest.mark.parametrize("core", ["gru", "mamba2"])
def test_replaying_the_stored_loop_scores_gives_the_acting_log_probs(core: str) -> None:
    """The PPO ratio invariant with the memory: ratios are exactly 1 before the first update."""
    policy = reading_policy(core)
    T = 12
    obs = revisiting_flight(T)
    starts = torch.zeros(T, B, dtype=torch.bool)
    starts[0] = starts[7, 1] = True  # drone 1 starts a new episode: its memory is cleared there
    memory, state = policy.new_memory(B), policy.initial_state(B)
    actions, log_probs, values, scores = [], [], [], []
    for t in range(T):
        out = policy.act(obs[t], state, starts[t], memory=memory)
        assert out.loop_score is not None
        actions.append(out.action), log_probs.append(out.log_prob), values.append(out.value)
        scores.append(out.loop_score)
        state = out.state
    loop_scores = torch.stack(scores)
    assert float(loop_scores[7, 1]) == 0.0 and float(loop_scores[8, 1]) == 0.0  # cleared, then new
    assert float(loop_scores[9:, 0].min()) > 0.9  # drone 0 keeps revisiting
    zero = policy.initial_state(B)
    replay = policy.evaluate_sequences(obs, torch.stack(actions), zero, starts, loop_scores=loop_scores)
    torch.testing.assert_close(replay.log_prob, torch.stack(log_probs), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(replay.value, torch.stack(values), atol=1e-4, rtol=1e-4)
    blind = policy.evaluate_sequences(
        obs, torch.stack(actions), zero, starts, loop_scores=torch.zeros_like(loop_scores)
    )
    assert (blind.value - replay.value).abs().max() > 1e-3  # the scores really reach the core


def test_a_bootstrap_value_peeks_at_the_memory_without_writing_it() -> None:
    policy = reading_policy()
    memory = policy.new_memory(B)
    assert memory is not None
    state, start = policy.initial_state(B), torch.ones(B, dtype=torch.bool)
    for obs in revisiting_flight(5):
        out = policy.act(obs, state, start, memory=memory)
        state, start = out.state, torch.zeros_like(start)
    before = copy.deepcopy(memory)
    next_obs = revisiting_flight(6)[5]
    value = policy.value(next_obs, state, start, memory=memory)
    for name in ("entries", "entry_index", "inserted", "steps", "center"):
        assert torch.equal(getattr(memory, name), getattr(before, name)), name
    acted = policy.act(next_obs, state, start, memory=before)  # what the next step will see
    # the same up to the centre's one-step shift that observe makes first (momentum 0.01)
    torch.testing.assert_close(value, acted.value, atol=1e-3, rtol=0.0)


def test_peek_scores_as_observe_and_changes_nothing() -> None:
    memory = EpisodicMemory(EpisodicMemoryConfig(exclusion_window=1, write_every=1), 2, 8)
    vectors = torch.randn(6, 2, 8, generator=torch.Generator().manual_seed(2))
    start = torch.tensor([True, True])
    for vector in vectors[:5]:
        memory.observe(vector, start)
        start = torch.tensor([False, False])
    mixed = torch.tensor([False, True])
    before = copy.deepcopy(memory)
    peeked = memory.peek(vectors[1], mixed)
    assert torch.equal(memory.entries, before.entries) and torch.equal(memory.center, before.center)
    observed = before.observe(vectors[1], mixed)
    assert float(peeked[1]) == 0.0  # a drone starting a new episode has no memory yet
    # observe folds this embedding into the centre first: the same score up to that small shift
    torch.testing.assert_close(peeked, observed, atol=0.05, rtol=0.0)
    assert float(peeked[0]) > 0.5  # a revisit of step 1
