"""Episodic memory: loop detection, per-episode clearing, exclusion window, ring capacity."""

from __future__ import annotations

import torch

from navi_actor.memory import EpisodicMemory, EpisodicMemoryConfig

D = 16


def basis(index: int, batch: int = 1) -> torch.Tensor:
    vector = torch.zeros(batch, D)
    vector[:, index] = 3.0  # not unit length: the memory normalises
    return vector


def feed(
    memory: EpisodicMemory, vectors: list[torch.Tensor], starts: list[bool] | None = None
) -> list[float]:
    scores = []
    for index, vector in enumerate(vectors):
        start = torch.tensor([bool(starts and starts[index])])
        scores.append(memory.observe(vector, start).item())
    return scores


def plain(**fields: object) -> EpisodicMemoryConfig:
    """Config without centring, so hand-built unit vectors keep their exact cosines."""
    return EpisodicMemoryConfig(center_momentum=0.0, **fields)


def test_revisit_scores_high_and_new_places_zero() -> None:
    memory = EpisodicMemory(plain(exclusion_window=2, write_every=1, age_decay=1.0), 1, D)
    scores = feed(memory, [basis(i) for i in range(6)] + [basis(1)])
    assert scores[:6] == [0.0] * 6  # orthogonal places: nothing similar
    assert abs(scores[6] - 1.0) < 1e-6  # back at place 1: loop


def test_exclusion_window_ignores_recent_entries() -> None:
    memory = EpisodicMemory(plain(exclusion_window=3, write_every=1, age_decay=1.0), 1, D)
    # place 0 then two others, then place 0 again: place 0 is among the 3 most recent entries.
    assert feed(memory, [basis(0), basis(1), basis(2), basis(0)])[-1] == 0.0
    memory = EpisodicMemory(plain(exclusion_window=3, write_every=1, age_decay=1.0), 1, D)
    assert feed(memory, [basis(0), basis(1), basis(2), basis(3), basis(0)])[-1] > 0.99  # just outside


def test_cleared_at_episode_start_per_drone() -> None:
    cfg = plain(exclusion_window=0, write_every=1, age_decay=1.0)
    memory = EpisodicMemory(cfg, 2, D)
    memory.observe(basis(0, 2), torch.tensor([False, False]))
    memory.observe(basis(1, 2), torch.tensor([False, False]))
    scores = memory.observe(basis(0, 2), torch.tensor([True, False]))  # drone 0 starts a new episode
    assert scores[0].item() == 0.0  # its memory is gone
    assert scores[1].item() > 0.99  # drone 1 remembers


def test_temporal_decay_and_write_every() -> None:
    cfg = plain(exclusion_window=0, write_every=2, age_decay=0.5)
    memory = EpisodicMemory(cfg, 1, D)
    feed(memory, [basis(0), basis(5), basis(1), basis(6), basis(2)])  # writes places 0, 1, 2 only
    assert memory.inserted.item() == 3
    score = memory.observe(basis(0), torch.tensor([False])).item()
    assert abs(score - 0.25) < 1e-6  # entry age 2 -> 0.5**2
    assert memory.observe(basis(5), torch.tensor([False])).item() == 0.0  # never written


def test_ring_overwrites_oldest_when_full() -> None:
    cfg = plain(capacity=3, exclusion_window=0, write_every=1, age_decay=1.0)
    memory = EpisodicMemory(cfg, 1, D)
    feed(memory, [basis(0), basis(1), basis(2), basis(3)])  # place 0 overwritten by place 3
    assert memory.observe(basis(0), torch.tensor([False])).item() == 0.0
    assert memory.observe(basis(2), torch.tensor([False])).item() > 0.99


def test_one_normalisation_for_query_and_insert() -> None:
    memory = EpisodicMemory(plain(exclusion_window=0, write_every=1), 3, D)
    embedding = torch.randn(3, D) * 7.0
    memory.observe(embedding, torch.zeros(3, dtype=torch.bool))
    torch.testing.assert_close(memory.entries[:, 0].norm(dim=-1), torch.ones(3))
    scores = memory.observe(embedding, torch.zeros(3, dtype=torch.bool))
    torch.testing.assert_close(scores, torch.ones(3))  # same vector, newest entry (age 0: no decay)


def test_centring_removes_the_shared_component() -> None:
    """Embeddings with a large common offset: without centring everything looks like a loop."""
    offset = torch.full((1, D), 4.0)
    places = [torch.roll(torch.eye(D)[:4], shifts=i, dims=1) + offset for i in range(4)]
    no_start = torch.zeros(4, dtype=torch.bool)
    scores = {}
    for momentum in (0.0, 0.01):
        memory = EpisodicMemory(
            EpisodicMemoryConfig(exclusion_window=2, write_every=1, center_momentum=momentum), 4, D
        )
        new_place_scores = [memory.observe(place, no_start) for place in places]
        revisit = memory.observe(places[0], no_start)
        scores[momentum] = (torch.stack(new_place_scores[1:]).max().item(), revisit.min().item())
    assert scores[0.0][0] > 0.9  # raw cosine: new places look like loops
    assert scores[0.01][0] < 0.1  # centred: new places are new
    assert scores[0.01][1] > 0.95  # and a real revisit is still a loop
