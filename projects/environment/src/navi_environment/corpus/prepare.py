"""Build a corpus folder: compile, qualify, write the manifest, swap in atomically.

Everything is written into a staging folder next to the target and renamed into place only when
every scene compiled and the manifest is written, so readers never see a half-built corpus and a
failed run leaves the previous corpus untouched.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog
from tqdm import tqdm

from navi_common.provenance import git_revision
from navi_environment.corpus.manifest import (
    MANIFEST_NAME,
    CorpusManifest,
    ManifestEntry,
    ManifestError,
    QualificationSummary,
    load_manifest,
    manifest_json,
)
from navi_environment.corpus.provenance import package_versions, utc_now
from navi_environment.corpus.settings import CompileSettings
from navi_environment.corpus.sources import CompiledScene, compile_source
from navi_environment.gmdag.writer import encode_gmdag, write_atomic
from navi_environment.scenes.registry import FAMILIES

if TYPE_CHECKING:
    from navi_environment.config import EnvironmentSettings

log = structlog.get_logger()

SEED_ATTEMPTS_PER_SCENE = 3
"""A family may try this many seeds per requested scene before the corpus build gives up."""


def _entry(
    scene_id: str, compiled: CompiledScene, data: bytes, qualification: dict[str, Any]
) -> ManifestEntry:
    asset = compiled.asset
    return ManifestEntry(
        id=scene_id,
        file=f"{scene_id}.gmdag",
        family=compiled.family,
        seed=compiled.seed,
        source=compiled.source,
        resolution=asset.resolution,
        voxel_size_m=float(asset.voxel_size),
        bmin_m=(float(asset.bmin[0]), float(asset.bmin[1]), float(asset.bmin[2])),
        source_bounds_m=compiled.source_bounds,
        node_count=int(asset.nodes.shape[0]),
        bytes=len(data),
        compression_ratio=round(2 * asset.resolution**3 / len(data), 2),
        sha256=hashlib.sha256(data).hexdigest(),
        compile_seconds=round(compiled.seconds, 3),
        qualification=QualificationSummary.model_validate(qualification),
        mesh_import=compiled.mesh_import,
    )


def _swap_into_place(staging: Path, target: Path) -> None:
    """Rename ``staging`` to ``target``; an existing ``target`` is moved aside first and deleted after."""
    backup = None
    if target.exists():
        backup = target.parent / f".{target.name}.old-{os.getpid()}"
        os.replace(target, backup)
    try:
        os.replace(staging, target)
    except OSError:
        if backup is not None:
            os.replace(backup, target)
        raise
    if backup is not None:
        shutil.rmtree(backup, ignore_errors=True)


def _qualify(
    compiled: CompiledScene, env_settings: EnvironmentSettings | None, enabled: bool
) -> dict[str, Any]:
    if not enabled:
        return {"verdict": "SKIPPED", "reason": "qualification disabled"}
    from navi_environment.corpus.qualify import qualify_asset

    return qualify_asset(
        compiled.asset, env_settings, seed=compiled.seed or 0, source_bounds=compiled.source_bounds
    )


def _store(
    compiled: CompiledScene,
    qualification: dict[str, Any],
    staging: Path,
    entries: list[ManifestEntry],
    scene_id: str | None = None,
) -> str:
    """Write one accepted scene into the staging folder and record its manifest entry."""
    data = encode_gmdag(compiled.asset)
    scene_id = scene_id or f"{compiled.family}_{compiled.seed or 0:03d}"
    write_atomic(staging / f"{scene_id}.gmdag", data)
    entries.append(_entry(scene_id, compiled, data, qualification))
    return scene_id


def _build_family(  # noqa: PLR0917 - private step of prepare_corpus
    family: str,
    per_family: int,
    staging: Path,
    settings: CompileSettings,
    resolution: int | None,
    env_settings: EnvironmentSettings | None,
    entries: list[ManifestEntry],
    rejected: list[dict[str, Any]],
    bar: tqdm,  # type: ignore[type-arg]
) -> None:
    """Compile seeds 0, 1, ... of one family until ``per_family`` qualify (appends to the lists).

    Scenes with a viable spawn inside the building are taken first; scenes the runtime passes
    with outside spawns only are kept as fallbacks and used (with a warning) only when the seed
    budget runs out, so a family never fails because of them.
    """
    accepted = 0
    fallbacks: list[tuple[CompiledScene, dict[str, Any]]] = []
    for seed in range(per_family * SEED_ATTEMPTS_PER_SCENE):
        if accepted == per_family:
            break
        compiled = compile_source(f"procedural:{family}:seed={seed}", settings, resolution=resolution)
        qualification = _qualify(compiled, env_settings, settings.qualify)
        if qualification["verdict"] == "FAIL":
            rejected.append({"source": compiled.source, "reason": qualification.get("reason", "")})
            log.warning("corpus.scene.rejected", source=compiled.source, reason=qualification.get("reason"))
            continue
        if qualification.get("viable_inside") == 0:
            fallbacks.append((compiled, qualification))
            continue
        bar.set_postfix_str(_store(compiled, qualification, staging, entries))
        bar.update(1)
        accepted += 1
    for compiled, qualification in fallbacks:
        if accepted < per_family:
            log.warning("corpus.scene.outside_spawns_only", source=compiled.source)
            bar.set_postfix_str(_store(compiled, qualification, staging, entries))
            bar.update(1)
            accepted += 1
        else:
            reason = f"spare: {qualification.get('warning', 'no viable spawn inside the source bounds')}"
            rejected.append({"source": compiled.source, "reason": reason})
    if accepted < per_family:
        raise ValueError(
            f"family {family!r}: only {accepted} of {per_family} scenes qualified "
            f"after {per_family * SEED_ATTEMPTS_PER_SCENE} seeds"
        )


@dataclass(frozen=True)
class MeshSources:
    """User mesh files for a corpus and how to import them (the same for every file).

    Attributes:
        files: mesh files, in corpus order.
        up_axis: ``auto`` or the files' up direction (see :mod:`navi_environment.mesh.orient`).
        scale: coordinate multiplier, file units -> metres.
        repair: repair every mesh before rasterising.
    """

    files: tuple[Path, ...] = ()
    up_axis: str = "auto"
    scale: float = 1.0
    repair: bool = False

    def record(self) -> dict[str, Any]:
        """JSON-friendly record for the manifest's settings."""
        return {
            "meshes": [str(path) for path in self.files],
            "up_axis": self.up_axis,
            "scale": self.scale,
            "repair": self.repair,
        }


def mesh_files(folder: str | Path) -> list[Path]:
    """Every supported mesh file below ``folder`` (recursively, sorted by path).

    Raises:
        ValueError: not a folder, or no supported mesh file in it.
    """
    from navi_environment.mesh.load import SUPPORTED_SUFFIXES

    root = Path(folder)
    if not root.is_dir():
        raise ValueError(f"{root}: not a folder")
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in SUPPORTED_SUFFIXES)
    if not files:
        raise ValueError(f"{root}: no mesh file ({', '.join(SUPPORTED_SUFFIXES)}) in it")
    return files


def _mesh_id(path: Path, taken: set[str]) -> str:
    stem = "".join(c if c.isalnum() or c in "-_" else "_" for c in path.stem) or "mesh"
    scene_id, number = f"mesh_{stem}", 2
    while scene_id in taken:
        scene_id, number = f"mesh_{stem}_{number}", number + 1
    taken.add(scene_id)
    return scene_id


def _build_meshes(  # noqa: PLR0917 - private step of prepare_corpus
    meshes: MeshSources,
    staging: Path,
    settings: CompileSettings,
    resolution: int | None,
    env_settings: EnvironmentSettings | None,
    entries: list[ManifestEntry],
    rejected: list[dict[str, Any]],
    bar: tqdm,  # type: ignore[type-arg]
) -> None:
    """Compile and qualify every mesh file; a file that cannot be imported or cannot host drones is
    recorded under ``rejected`` with its one-line reason and the others go on."""
    from navi_environment.mesh.load import MeshImportError

    taken = {entry.id for entry in entries}
    for path in meshes.files:
        try:
            compiled = compile_source(
                str(path), settings, resolution=resolution, repair=meshes.repair,
                up_axis=meshes.up_axis, scale=meshes.scale,
            )  # fmt: skip
        except MeshImportError as error:
            rejected.append({"source": str(path), "reason": str(error)})
            log.warning("corpus.mesh.rejected", source=str(path), reason=str(error))
            bar.update(1)
            continue
        qualification = _qualify(compiled, env_settings, settings.qualify)
        if qualification["verdict"] == "FAIL":
            rejected.append({"source": compiled.source, "reason": qualification.get("reason", "")})
            log.warning("corpus.scene.rejected", source=compiled.source, reason=qualification.get("reason"))
        else:
            bar.set_postfix_str(_store(compiled, qualification, staging, entries, _mesh_id(path, taken)))
        bar.update(1)


def prepare_corpus(
    output: str | Path,
    settings: CompileSettings,
    *,
    families: Sequence[str] | None = None,
    count: int | None = None,
    resolution: int | None = None,
    env_settings: EnvironmentSettings | None = None,
    progress: bool = True,
    meshes: MeshSources | None = None,
) -> CorpusManifest:
    """Compile ``count`` qualified scenes per family, and every given mesh, into ``output``
    (replaced atomically).

    Seeds 0, 1, 2, ... are tried per family; a scene that fails qualification is recorded under
    ``rejected`` and the next seed is tried, up to :data:`SEED_ATTEMPTS_PER_SCENE` x ``count``.
    Mesh files are compiled once each; one that cannot be imported or fails qualification is
    recorded under ``rejected``. With meshes and no ``families``, no procedural scene is built.

    Args:
        output: corpus folder to create or replace.
        settings: compile settings (defaults for families, count, resolution, qualify).
        families: procedural families (default ``settings.families``).
        count: scenes per family (default ``settings.count_per_family``).
        resolution: voxels per axis (default ``settings.resolution``).
        env_settings: environment settings used by spawn qualification.
        progress: show a tqdm progress bar on stderr.
        meshes: user mesh files and their import options.

    Returns:
        The manifest written to ``output/manifest.json``.

    Raises:
        ValueError: unknown family, a family that cannot produce enough qualified scenes, or mesh
            files of which none qualified.
    """
    meshes = meshes or MeshSources()
    chosen = tuple(families) if families is not None else (() if meshes.files else settings.families)
    unknown = [family for family in chosen if family not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown scene families {unknown}; known: {', '.join(FAMILIES)}")
    per_family = int(count or settings.count_per_family)
    target = Path(output)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.staging-", dir=target.parent))
    staging.chmod(0o755)  # mkdtemp creates 0700; the corpus is shared with other users and tools
    entries: list[ManifestEntry] = []
    rejected: list[dict[str, Any]] = []
    try:
        total = len(chosen) * per_family + len(meshes.files)
        with tqdm(total=total, desc="corpus", unit="scene", disable=not progress) as bar:
            for family in chosen:
                _build_family(
                    family, per_family, staging, settings, resolution, env_settings, entries, rejected, bar
                )
            _build_meshes(meshes, staging, settings, resolution, env_settings, entries, rejected, bar)
        if not entries:
            reasons = "; ".join(f"{r['source']}: {r['reason']}" for r in rejected[:3])
            raise ValueError(f"no scene qualified ({reasons})")
        manifest = CorpusManifest(
            created_utc=utc_now(),
            git_revision=git_revision(),
            versions=package_versions(),
            settings=settings.model_dump(mode="json")
            | {
                "families": list(chosen),
                "count_per_family": per_family,
                "resolution": resolution or settings.resolution,
            }
            | ({"mesh_sources": meshes.record()} if meshes.files else {}),
            scenes=entries,
            rejected=rejected,
        )
        write_atomic(staging / MANIFEST_NAME, manifest_json(manifest).encode("utf-8"))
        _swap_into_place(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    log.info("corpus.prepared", folder=str(target), scenes=len(entries), rejected=len(rejected))
    return manifest


def corpus_is_complete(
    folder: Path, resolution: int | None = None, exact_clearance_m: float | None = None
) -> bool:
    """True when ``folder`` has a valid manifest whose files all exist with the recorded sizes.

    With ``exact_clearance_m``, a corpus compiled with another value (or before the setting existed,
    when void blocks cut doorways shut) is incomplete too, so the default corpus is rebuilt.
    """
    try:
        manifest = load_manifest(folder)
    except ManifestError:
        return False
    if exact_clearance_m is not None and manifest.settings.get("exact_clearance_m") != exact_clearance_m:
        return False
    for entry in manifest.scenes:
        path = folder / entry.file
        if not path.is_file() or path.stat().st_size != entry.bytes:
            return False
        if resolution is not None and entry.resolution != resolution:
            return False
    return bool(manifest.scenes)


def ensure_default_corpus(
    folder: str | Path | None = None,
    *,
    env_settings: EnvironmentSettings | None = None,
    progress: bool = True,
) -> Path:
    """Return the default corpus folder, building it first when missing or incomplete.

    Args:
        folder: corpus folder (default ``artifacts/<compile.corpus_dir>``).
        env_settings: environment settings (compile group and qualification thresholds);
            default: read from the environment / ``.env``.
        progress: show progress while building.

    Returns:
        The folder holding ``manifest.json`` and the scenes.
    """
    from navi_contracts.paths import artifacts_root
    from navi_environment.config import EnvironmentSettings

    settings = env_settings or EnvironmentSettings()
    target = Path(folder) if folder is not None else artifacts_root() / settings.compile.corpus_dir
    if corpus_is_complete(target, settings.compile.resolution, settings.compile.exact_clearance_m):
        return target
    log.info("corpus.default.building", folder=str(target))
    prepare_corpus(target, settings.compile, env_settings=settings, progress=progress)
    return target
