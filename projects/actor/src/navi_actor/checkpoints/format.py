"""Checkpoint format v3: a flat dict of tensors and primitives, written atomically, loaded safely.

Loading uses ``torch.load(weights_only=True)``, which refuses anything but tensors and primitive
containers, so a checkpoint can never run code. That is why settings, the policy architecture and the
corpus summary are stored as JSON strings rather than objects. Any other format version fails fast
with a message naming the file, the version found and the one supported.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import torch

from navi_actor.models import PolicyConfig
from navi_common.atomic import atomic_write

FORMAT_NAME = "navi-actor-checkpoint"
FORMAT_VERSION = 3
TrainingSource = Literal["rl", "bc"]


class CheckpointError(ValueError):
    """A checkpoint file is missing, unreadable, of another version or incomplete."""


@dataclass
class Checkpoint:
    """Everything needed to rebuild the policy and continue its learning curve."""

    model: dict[str, torch.Tensor]
    policy_config: PolicyConfig
    step_id: int = 0
    episode_count: int = 0
    update_index: int = 0
    reward_ema: float | None = None
    wall_time_hours: float = 0.0
    parent_checkpoint: str | None = None
    training_source: TrainingSource = "rl"
    corpus_summary: dict[str, Any] = field(default_factory=dict)
    settings_json: str = "{}"
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    optimizer: dict[str, Any] | None = None
    auxiliary: dict[str, Any] = field(default_factory=dict)  # e.g. {"rnd": state_dict}
    rng: dict[str, Any] = field(default_factory=dict)

    @property
    def temporal_core(self) -> str:
        """The policy's temporal core name."""
        return self.policy_config.temporal_core

    @property
    def encoder_backend(self) -> str:
        """The policy's encoder name."""
        return self.policy_config.encoder_backend

    def to_payload(self) -> dict[str, Any]:
        """The plain dict written to disk (tensors, numbers, strings, lists, dicts only)."""
        return {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "step_id": self.step_id,
            "episode_count": self.episode_count,
            "update_index": self.update_index,
            "reward_ema": self.reward_ema,
            "wall_time_hours": self.wall_time_hours,
            "parent_checkpoint": self.parent_checkpoint,
            "training_source": self.training_source,
            "temporal_core": self.temporal_core,
            "encoder_backend": self.encoder_backend,
            "corpus_summary": json.dumps(self.corpus_summary, sort_keys=True),
            "created_at": self.created_at,
            "settings": self.settings_json,
            "policy_config": self.policy_config.model_dump_json(),
            "model": self.model,
            "optimizer": self.optimizer,
            "auxiliary": self.auxiliary,
            "rng": self.rng,
        }


def save_checkpoint(checkpoint: Checkpoint, path: Path) -> Path:
    """Write ``checkpoint`` to ``path`` atomically (temporary file in the same folder + ``os.replace``).

    A crash at any point leaves either the previous file or the new one, never a torn file.

    Args:
        checkpoint: what to write.
        path: destination ``.pt`` file; parent folders are created.

    Returns:
        ``path``.
    """
    payload = checkpoint.to_payload()
    atomic_write(path, lambda stream: torch.save(payload, stream))
    return path


def load_checkpoint(path: Path, map_location: str | torch.device = "cpu") -> Checkpoint:
    """Read a v3 checkpoint without unpickling arbitrary objects.

    Args:
        path: the ``.pt`` file.
        map_location: device for the loaded tensors.

    Returns:
        The :class:`Checkpoint`.

    Raises:
        CheckpointError: missing or unreadable file, another format or version, or missing fields.
    """
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist")
    try:
        payload = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as error:  # torch raises several types for corrupt or unsafe files
        raise CheckpointError(
            f"checkpoint {path} cannot be read safely ({unreadable_reason(error)}): not a torch file, a "
            "corrupt one, or one holding objects beyond tensors and plain values"
        ) from error
    if not isinstance(payload, dict) or payload.get("format") != FORMAT_NAME:
        raise CheckpointError(f"{path} is not a Navi actor checkpoint (no '{FORMAT_NAME}' marker)")
    version = payload.get("version")
    if version != FORMAT_VERSION:
        raise CheckpointError(
            f"checkpoint {path} has format version {version!r}; this navi-actor reads only version "
            f"{FORMAT_VERSION}. Retrain, or convert it with the navi-actor release that wrote it."
        )
    try:
        return Checkpoint(
            model=payload["model"],
            policy_config=stored_policy_config(payload["policy_config"]),
            step_id=int(payload["step_id"]),
            episode_count=int(payload["episode_count"]),
            update_index=int(payload["update_index"]),
            reward_ema=payload["reward_ema"],
            wall_time_hours=float(payload["wall_time_hours"]),
            parent_checkpoint=payload["parent_checkpoint"],
            training_source=payload["training_source"],
            corpus_summary=json.loads(payload["corpus_summary"]),
            settings_json=payload["settings"],
            created_at=payload["created_at"],
            optimizer=payload["optimizer"],
            auxiliary=payload["auxiliary"],
            rng=payload["rng"],
        )
    except (KeyError, TypeError, ValueError) as error:
        raise CheckpointError(f"checkpoint {path} is incomplete or malformed: {error!r}") from error


def stored_policy_config(text: str) -> PolicyConfig:
    """The policy config saved in a checkpoint, as the policy that was trained with it behaves.

    Checkpoints written before ``input_transform`` existed fed raw observations to the encoder:
    they read as ``none`` (not the new default), so a resumed or evaluated policy computes exactly
    the function it was trained as. Likewise those written before ``action_squash`` clipped their
    actions: they read as ``clip`` whatever the default becomes, and those written before
    ``action_chunk_mode`` had a chunk head of absolute later actions: they read as ``absolute``; and
    those written before ``vit_readout`` had a [CLS] token: they read as ``cls`` (the default became
    ``sectors`` on 2026-11-30; their weights would not fit a sector readout). Those written before
    ``visit_input`` read nothing of a visit memory (``false``; the default became the frontier map
    on 2026-12-02), those before ``visits.source`` read past positions, and those before
    ``visits.frontier_distance`` measured straight lines, those before ``visits.frontier_reading``
    read each sector's distance alone.
    """
    values = json.loads(text)
    if isinstance(values, dict):
        values.setdefault("input_transform", "none")
        values.setdefault("action_squash", "clip")
        values.setdefault("action_chunk_mode", "absolute")
        values.setdefault("vit_readout", "cls")
        values.setdefault("visit_input", False)
        visits = values.setdefault("visits", {})
        if isinstance(visits, dict):
            visits.setdefault("source", "positions")
            visits.setdefault("frontier_distance", "straight")
            visits.setdefault("frontier_reading", "absolute")
    return PolicyConfig.model_validate(values)


def unreadable_reason(error: Exception) -> str:
    """The one sentence of torch's load error that says what is wrong: its weights-only message spans
    six lines of advice (re-run with ``weights_only=False``) that a user of a checkpoint must not
    follow, and a CLI error is one line."""
    text = str(error)
    marker = "WeightsUnpickler error:"
    if marker in text:
        text = text.split(marker, 1)[1]
    line = next((line.strip() for line in text.splitlines() if line.strip()), type(error).__name__)
    return line.split(". ")[0].rstrip(".")
