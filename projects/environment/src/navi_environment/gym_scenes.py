"""Which ``.gmdag`` files a registered Gymnasium environment (``Navi/Explore-v0``) simulates.

``scene=`` names one scene: a ``.gmdag`` file as it is, a mesh file (.glb/.gltf/.obj/.ply/.stl), or a
procedural spec ``procedural:<family>[:seed=<n>]``. Meshes and procedural specs are compiled on first
use into ``artifacts/gmdag/cache/`` and reused after that: the cache file's name holds a hash of the
source (the mesh file's bytes, or the canonical spec) and of the compile settings that shape the
asset, so editing the mesh or changing the resolution compiles again, and nothing else does.

``corpus=`` names a corpus folder (its manifest's qualified scenes, else every ``*.gmdag`` in it).
With neither, the default corpus is used, built first when missing (as ``navi-actor train`` does).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

if TYPE_CHECKING:
    from navi_environment.config import EnvironmentSettings

log = structlog.get_logger()

CACHE_DIR = "gmdag/cache"
"""Compiled ``scene=`` sources, relative to the repository's ``artifacts/``."""

_CACHE_FORMAT = "gmdag-cache-2"  # 2: exact distances near surfaces, 1 m clear doorways
"""Part of every cache key: bump it when the compiler's output changes for the same inputs."""


def resolve_scene_paths(
    scene: str | Path | None, corpus: str | Path | None, settings: EnvironmentSettings
) -> list[Path]:
    """The scenes named by ``scene=`` / ``corpus=``, or the default corpus.

    Args:
        scene: a ``.gmdag`` file, a mesh file, or ``procedural:<family>[:seed=<n>]``.
        corpus: a corpus folder.
        settings: environment settings (the compile group shapes compiled scenes).

    Returns:
        One or more ``.gmdag`` paths.

    Raises:
        ValueError: both given, a bad procedural spec, or a mesh that does not import.
        FileNotFoundError: a named file or folder that does not exist or holds no scene.
    """
    from navi_environment.corpus.manifest import corpus_scene_files

    if scene is not None and corpus is not None:
        raise ValueError("pass scene= or corpus=, not both")
    if scene is not None:
        return [scene_file(str(scene), settings)]
    if corpus is not None:
        return corpus_scene_files(Path(corpus))
    from navi_environment.corpus.prepare import ensure_default_corpus

    log.info("gym.scenes.default_corpus", message="locating the default corpus (built on first use)")
    return corpus_scene_files(ensure_default_corpus(env_settings=settings, progress=True))


def scene_file(scene: str, settings: EnvironmentSettings) -> Path:
    """One ``.gmdag`` file for ``scene``: the file itself, or a compiled and cached mesh / spec."""
    from navi_environment.scenes.registry import is_procedural, parse_procedural

    if is_procedural(scene):
        canonical = str(parse_procedural(scene))
        return _compiled(canonical, canonical.encode(), settings)
    path = Path(scene).expanduser()
    if not path.is_file():
        raise FileNotFoundError(
            f"scene {scene!r} is neither an existing file nor 'procedural:<family>[:seed=<n>]'"
        )
    if path.suffix.lower() == ".gmdag":
        return path
    return _compiled(str(path.resolve()), _file_digest(path), settings)


def cache_path(source_key: bytes, label: str, settings: EnvironmentSettings) -> Path:
    """Where the compiled ``.gmdag`` for these source bytes and compile settings is cached."""
    from navi_contracts.paths import artifacts_root

    shaping = settings.compile.model_dump_json(
        include={
            "resolution",
            "far_tolerance_voxels",
            "exact_clearance_m",
            "cutoff_m",
            "min_solid_voxels",
            "max_mesh_extent_m",
        }
    )
    digest = hashlib.sha256(b"\0".join((_CACHE_FORMAT.encode(), source_key, shaping.encode()))).hexdigest()
    stem = "".join(c if c.isalnum() else "_" for c in label)[-40:].strip("_")
    return artifacts_root() / CACHE_DIR / f"{stem}-r{settings.compile.resolution}-{digest[:16]}.gmdag"


def _compiled(source: str, source_key: bytes, settings: EnvironmentSettings) -> Path:
    """Compile ``source`` into the cache unless it is there already; return the cached file."""
    label = source if source.startswith("procedural:") else Path(source).stem
    target = cache_path(source_key, label, settings)
    if target.is_file():
        return target
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import encode_gmdag, write_atomic

    log.info("gym.scenes.compiling", source=source, resolution=settings.compile.resolution)
    compiled = compile_source(source, settings.compile)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, encode_gmdag(compiled.asset))
    log.info("gym.scenes.cached", source=source, path=str(target), seconds=round(compiled.seconds, 2))
    return target


def _file_digest(path: Path) -> bytes:
    """sha256 of a file's bytes, read in 1 MiB blocks (meshes can be hundreds of MiB)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.digest()
