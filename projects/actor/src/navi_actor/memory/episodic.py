"""Episodic memory: a per-drone ring buffer of unit embeddings, queried by cosine similarity.

Why: a drone that circles back to where it already was this episode is wasting time; the loop
score (the highest similarity between the current embedding and earlier ones) lets the shaper
penalise that. Everything is batched over drones as ``[B, capacity, D]`` tensors on the device.

Rules, each a deliberate choice:

* **Cleared per episode**: rows whose ``episode_start`` is True are emptied before the query.
* **Exclusion window**: the ``exclusion_window`` most recent *entries* are ignored when querying;
  consecutive frames always look alike and are not loops.
* **Amortised capacity**: an entry is written every ``write_every``-th step of the episode
  (the first step included), so the buffer spans ``capacity * write_every`` steps; when it is full
  the oldest entry is overwritten (ring). Cost per step is one ``[B, C, D] x [B, D]`` product.
* **Temporal decay**: the similarity to an entry is scaled by ``age_decay ** age`` (age in
  entries, newest = 0) so revisiting a place seen long ago costs less than dithering back and forth.
* **Centring**: embeddings share a large common component (at initialisation the cosine between
  two unrelated scenes is ~0.98), which would make every step look like a loop. The memory keeps
  an exponential moving average of all drones' embeddings (momentum ``center_momentum``; 0 turns
  centring off) and compares ``embedding - mean``: unrelated places then score ~0 and revisits ~1.
* **One normalisation**: the embedding is centred and L2-normalised once; the same tensor is used
  for the query and for the insert of that step.
"""

from __future__ import annotations

import torch
import torch.nn.functional as nnf

from navi_actor.memory.config import EpisodicMemoryConfig
from navi_actor.memory.ring import EpisodeRing


class EpisodicMemory(EpisodeRing):
    """Batched cosine-similarity memory of ``num_drones`` drones (not trained, not checkpointed)."""

    def __init__(
        self, cfg: EpisodicMemoryConfig, num_drones: int, dim: int, device: torch.device | str = "cpu"
    ) -> None:
        super().__init__(num_drones, cfg.capacity, cfg.write_every, device)
        self.cfg = cfg
        self.entries = torch.zeros(num_drones, cfg.capacity, dim, device=device)  # unit vectors
        self.center = torch.zeros(dim, device=device)  # EMA of embeddings (see module docstring)
        self._center_ready = False

    def query(self, unit: torch.Tensor) -> torch.Tensor:
        """Decayed max cosine similarity of ``unit [B, D]`` (L2-normalised) to eligible entries.

        Returns:
            ``[B]`` loop score in ``[0, 1]``; 0 when no entry is eligible.
        """
        similarity = torch.einsum("bcd,bd->bc", self.entries, unit)  # [B, C]
        eligible, age = self.eligible(self.cfg.exclusion_window)
        decayed = similarity * self.cfg.age_decay ** age.clamp_min(0).to(similarity.dtype)
        return torch.where(eligible, decayed, 0.0).amax(dim=1).clamp_min(0.0)

    def insert(self, unit: torch.Tensor) -> None:
        """Write ``unit [B, D]`` for rows at a write step (every ``write_every``-th); advance the step."""
        self.write(self.entries, unit)

    def normalise(self, embedding: torch.Tensor) -> torch.Tensor:
        """Fold ``embedding [B, D]`` into the running centre, then centre and L2-normalise it."""
        momentum = self.cfg.center_momentum
        if momentum > 0:
            batch_mean = embedding.mean(dim=0)
            if self._center_ready:
                self.center.lerp_(batch_mean, momentum)
            else:  # first batch: start from its mean rather than from zero
                self.center.copy_(batch_mean)
                self._center_ready = True
            embedding = embedding - self.center
        return nnf.normalize(embedding, dim=-1)

    @torch.no_grad()
    def peek(self, embedding: torch.Tensor, episode_start: torch.Tensor) -> torch.Tensor:
        """The loop score :meth:`observe` would give ``embedding [B, D]``, changing nothing.

        Why: a bootstrap value of a policy that reads its memory (``policy.memory_input``) needs the
        score of an observation that the next :meth:`observe` will score and remember (or of a
        truncated episode's last observation, never acted on); scoring it there must not write it
        twice or move the centre. Rows starting a new episode score 0 (their memory is cleared).
        """
        embedding = embedding.detach().to(self.entries.dtype)
        if self.cfg.center_momentum > 0 and self._center_ready:
            embedding = embedding - self.center
        score = self.query(nnf.normalize(embedding, dim=-1))
        return torch.where(episode_start.bool(), 0.0, score)

    @torch.no_grad()
    def observe(self, embedding: torch.Tensor, episode_start: torch.Tensor) -> torch.Tensor:
        """Clear new episodes, score the step against memory, then remember it.

        Args:
            embedding: ``[B, D]`` embeddings of this step's observations.
            episode_start: ``[B]`` bool; True rows start a new episode (memory cleared first).

        Returns:
            ``[B]`` loop score (decayed max cosine similarity, 0 if nothing eligible).
        """
        self.reset(episode_start)
        unit = self.normalise(embedding.detach().to(self.entries.dtype))  # the ONE normalisation
        score = self.query(unit)
        self.insert(unit)
        return score
