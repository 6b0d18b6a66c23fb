"""The model registry: ``artifacts/models/{registry.json, latest.pt, vNNN.pt}``.

Promoting copies a checkpoint to the next ``vNNN.pt``, refreshes ``latest.pt`` and appends an entry
to ``registry.json``; every file is written to a temporary name in the same folder and renamed into
place, so readers never see a half-written model. "Best" is the entry with the highest reward EMA,
among the entries comparable with a run when one is named: reward EMAs are comparable only between
models trained on the same corpus summary (scenes, episode length, reward settings).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from navi_actor.checkpoints.format import Checkpoint, load_checkpoint
from navi_common.atomic import atomic_write

log = structlog.get_logger()

REGISTRY_SCHEMA_VERSION = 1


class RegistryError(ValueError):
    """The registry cannot be read or written; the message is one line a command can print as is.

    A ``ValueError`` so that callers which already refuse bad checkpoints and settings refuse this too.
    """


class RegistryEntry(BaseModel):
    """One promoted model."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = Field(gt=0)
    file: str
    source: str
    step_id: int
    reward_ema: float | None
    temporal_core: str
    encoder_backend: str
    training_source: str
    created_at: str
    promoted_at: str
    notes: str = ""
    tags: list[str] = Field(default_factory=list)
    comparison_key: str | None = None  #: :func:`comparison_key` of its corpus summary (None: older entry)


def comparison_key(corpus_summary: dict[str, Any]) -> str:
    """A short digest of a corpus summary: equal keys mean reward EMAs measured on the same task.

    Why: a 3-minute run on one easy scene (reward EMA -31.8) outranked corpus runs (-125) and became
    the model every later run resumed from; returns on different scenes or episode lengths do not
    compare.
    """
    canonical = json.dumps(corpus_summary, sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


class RegistryFile(BaseModel):
    """The whole ``registry.json``."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = REGISTRY_SCHEMA_VERSION
    models: list[RegistryEntry] = Field(default_factory=list)


def _atomic_copy(source: Path, destination: Path) -> None:
    with source.open("rb") as origin:
        atomic_write(destination, lambda stream: shutil.copyfileobj(origin, stream))


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock so two trainers cannot both claim the same version number."""
    with lock_path.open("a") as handle:
        _lock(handle.fileno())
        try:
            yield
        finally:
            _unlock(handle.fileno())


if sys.platform == "win32":  # the registry must work wherever the trainer does
    import msvcrt

    def _lock(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_LOCK, 1)

    def _unlock(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


class ModelRegistry:
    """Read and update the registry folder.

    Args:
        folder: the registry folder (normally ``artifacts_root() / "models"``).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.index_path = folder / "registry.json"
        self.latest_path = folder / "latest.pt"

    def _read(self) -> RegistryFile:
        if not self.index_path.is_file():
            return RegistryFile()
        try:
            registry = RegistryFile.model_validate_json(self.index_path.read_text(encoding="utf-8"))
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            reason = f"{where}: {first['msg']}" if where else first["msg"]
            raise RegistryError(
                f"model registry {self.index_path} is malformed ({reason}); fix it or move it aside"
            ) from error
        except (OSError, UnicodeDecodeError) as error:
            raise RegistryError(f"cannot read the model registry {self.index_path}: {error}") from error
        if registry.schema_version != REGISTRY_SCHEMA_VERSION:
            raise RegistryError(
                f"model registry {self.index_path} has schema {registry.schema_version}; "
                f"expected {REGISTRY_SCHEMA_VERSION}"
            )
        return registry

    def entries(self) -> list[RegistryEntry]:
        """Every promoted model, oldest first."""
        return list(self._read().models)

    def latest(self, comparable_to: str | None = None) -> RegistryEntry | None:
        """The most recently promoted model, if any (only those with key ``comparable_to`` when given)."""
        models = [
            e for e in self._read().models if comparable_to is None or e.comparison_key == comparable_to
        ]
        return models[-1] if models else None

    def best(self, comparable_to: str | None = None) -> RegistryEntry | None:
        """The model with the highest reward EMA (entries without one are ignored), among the entries
        with comparison key ``comparable_to`` when it is given."""
        scored = [
            entry
            for entry in self._read().models
            if entry.reward_ema is not None
            and (comparable_to is None or entry.comparison_key == comparable_to)
        ]
        return max(scored, key=lambda entry: entry.reward_ema or 0.0) if scored else None

    def path_of(self, entry: RegistryEntry) -> Path:
        """The ``vNNN.pt`` file of ``entry``."""
        return self.folder / entry.file

    def promote(self, checkpoint: Path, notes: str = "", tags: list[str] | None = None) -> RegistryEntry:
        """Copy ``checkpoint`` in as the next version and make it ``latest.pt``.

        Args:
            checkpoint: a v3 checkpoint file (validated by loading it first).
            notes: free text stored with the entry.
            tags: labels stored with the entry.

        Returns:
            The new :class:`RegistryEntry`.

        Raises:
            navi_actor.checkpoints.CheckpointError: ``checkpoint`` cannot be read.
            RegistryError: the registry is malformed or its folder cannot be written.
        """
        loaded = load_checkpoint(checkpoint)  # refuse to register anything unreadable
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with _exclusive(self.folder / ".registry.lock"):
                return self._append(checkpoint, loaded, notes, tags)
        except OSError as error:
            raise RegistryError(f"cannot write the model registry in {self.folder}: {error}") from error

    def _append(
        self, checkpoint: Path, loaded: Checkpoint, notes: str, tags: list[str] | None
    ) -> RegistryEntry:
        registry = self._read()
        version = max((entry.version for entry in registry.models), default=0) + 1
        entry = RegistryEntry(
            version=version,
            file=f"v{version:03d}.pt",
            source=str(checkpoint.resolve()),
            step_id=loaded.step_id,
            reward_ema=loaded.reward_ema,
            temporal_core=loaded.temporal_core,
            encoder_backend=loaded.encoder_backend,
            training_source=loaded.training_source,
            created_at=loaded.created_at,
            promoted_at=datetime.now(UTC).isoformat(),
            notes=notes,
            tags=list(tags or []),
            comparison_key=comparison_key(loaded.corpus_summary) if loaded.corpus_summary else None,
        )
        _atomic_copy(checkpoint, self.folder / entry.file)
        _atomic_copy(checkpoint, self.latest_path)
        registry.models.append(entry)
        payload = json.dumps(registry.model_dump(mode="json"), indent=2).encode("utf-8")
        atomic_write(self.index_path, lambda stream: stream.write(payload))
        log.info(
            "actor.registry.promoted", version=version, step_id=entry.step_id, reward_ema=entry.reward_ema
        )
        return entry
