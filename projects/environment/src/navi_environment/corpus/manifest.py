"""The corpus manifest: one entry per compiled scene plus what produced the corpus.

``manifest.json`` is the contract between ``corpus prepare`` and its readers (the trainer, the
runtime's scene rotation, ``check-sdfdag``). It is validated on load, so a hand-edited or truncated
manifest fails with a message instead of a KeyError deep inside training.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

MANIFEST_NAME = "manifest.json"
MANIFEST_SCHEMA_VERSION = 1


class ManifestError(ValueError):
    """A corpus folder has no usable manifest; the message names the file and the problem."""


class QualificationSummary(BaseModel):
    """Spawn qualification of one scene (see ``runtime.spawn``)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    verdict: Literal["PASS", "FAIL", "SKIPPED"]
    reason: str = ""
    viable: int = 0
    best_starvation: float | None = None
    median_clearance_m: float | None = None


class ManifestEntry(BaseModel):
    """One compiled scene of the corpus."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(description="Stable scene id, e.g. 'apartment_003'.")
    file: str = Field(description="File name of the .gmdag, relative to the corpus folder.")
    family: str = Field(description="Procedural family, or 'mesh' for imported files.")
    seed: int | None = Field(default=None, description="Generator seed (procedural scenes).")
    source: str = Field(description="Canonical source: 'procedural:<family>:seed=<n>' or a mesh path.")
    resolution: int
    voxel_size_m: float
    bmin_m: tuple[float, float, float]
    source_bounds_m: tuple[tuple[float, float, float], tuple[float, float, float]] | None = Field(
        default=None, description="Min/max corner of the source geometry (spawn regions lie inside)."
    )
    node_count: int
    bytes: int
    compression_ratio: float = Field(description="Dense fp16 grid bytes (2 * R^3) / file bytes.")
    sha256: str
    compile_seconds: float
    qualification: QualificationSummary
    mesh_import: dict[str, Any] | None = Field(
        default=None,
        description="Mesh scenes: triangles read and dropped, the up axis used (and why), rotation, scale.",
    )


class CorpusManifest(BaseModel):
    """The whole manifest file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = MANIFEST_SCHEMA_VERSION
    created_utc: str
    git_revision: str | None
    versions: dict[str, str]
    settings: dict[str, Any] = Field(description="Resolved compile settings that produced the corpus.")
    scenes: list[ManifestEntry]
    rejected: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Sources compiled but left out (failed qualification), with reasons.",
    )

    def paths(self, folder: Path) -> list[Path]:
        """Absolute paths of every scene file under ``folder``."""
        return [folder / entry.file for entry in self.scenes]

    def qualified(self) -> list[ManifestEntry]:
        """Entries whose qualification passed (or was skipped)."""
        return [entry for entry in self.scenes if entry.qualification.verdict != "FAIL"]


def load_manifest(folder: str | Path) -> CorpusManifest:
    """Read and validate ``<folder>/manifest.json``.

    Raises:
        ManifestError: missing, unreadable, not JSON, or not matching the schema.
    """
    path = Path(folder) / MANIFEST_NAME
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise ManifestError(f"{path}: no corpus manifest (run 'navi-environment corpus prepare')") from error
    except (OSError, json.JSONDecodeError) as error:
        raise ManifestError(f"{path}: unreadable manifest ({error})") from error
    try:
        manifest = CorpusManifest.model_validate(raw)
    except ValidationError as error:
        raise ManifestError(f"{path}: invalid manifest: {error}") from error
    if manifest.schema_version != MANIFEST_SCHEMA_VERSION:
        raise ManifestError(
            f"{path}: manifest schema {manifest.schema_version}, expected {MANIFEST_SCHEMA_VERSION}"
        )
    return manifest


def manifest_json(manifest: CorpusManifest) -> str:
    """Pretty, stable JSON text of a manifest."""
    return json.dumps(manifest.model_dump(mode="json"), indent=2, sort_keys=False) + "\n"


def corpus_scene_files(folder: str | Path) -> list[Path]:
    """The scenes of a corpus folder: the manifest's scenes that did not FAIL qualification, else every
    ``*.gmdag`` below it (sorted). The one rule every command uses to read a corpus folder.

    Raises:
        FileNotFoundError: the folder does not exist or holds no usable scene.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"corpus folder {folder} does not exist")
    try:
        manifest = load_manifest(folder)
    except ManifestError:
        scenes = sorted(folder.rglob("*.gmdag"))
    else:
        scenes = [folder / e.file for e in manifest.scenes if e.qualification.verdict != "FAIL"]
    if not scenes:
        raise FileNotFoundError(f"corpus folder {folder} holds no usable .gmdag scenes")
    return scenes


_NUMBERED = re.compile(r"^(?P<family>.+?)_\d+$")


def family_of_name(name: str) -> str:
    """A scene's family from its name alone: the name without a trailing ``_<number>``."""
    match = _NUMBERED.match(name)
    return match.group("family") if match else name


def scene_families(scenes: Sequence[Path], folder: Path | None = None) -> list[str]:
    """Family of each scene: its manifest entry's ``family``, else :func:`family_of_name` of its stem.

    Args:
        scenes: scene files.
        folder: the corpus folder whose manifest lists them (default: each scene's own folder).
    """
    by_folder: dict[Path, dict[str, str]] = {}
    families = []
    for path in scenes:
        home = Path(folder) if folder is not None else path.parent
        if home not in by_folder:
            try:
                by_folder[home] = {entry.file: entry.family for entry in load_manifest(home).scenes}
            except ManifestError:
                by_folder[home] = {}
        families.append(by_folder[home].get(path.name) or family_of_name(path.stem))
    return families
