"""Which scenes the explorer flies: one file, a corpus folder, or the default corpus."""

from __future__ import annotations

from pathlib import Path

import structlog

from navi_environment.config import EnvironmentSettings

log = structlog.get_logger()


class SceneSourceError(ValueError):
    """No usable scene: a missing file, a wrong suffix or an empty folder."""


def resolve_scene_files(
    gmdag_file: Path | None, corpus: Path | None, env_settings: EnvironmentSettings
) -> list[Path]:
    """The ``.gmdag`` files to fly, in order.

    Args:
        gmdag_file: one scene file (exclusive with ``corpus``).
        corpus: a folder of ``.gmdag`` files.
        env_settings: for the default corpus (``compile.corpus_dir`` under artifacts/), which is
            built on first use like the trainer's.

    Returns:
        Existing ``.gmdag`` paths (absolute).

    Raises:
        SceneSourceError: with a message saying what is missing and how to make it.
    """
    if gmdag_file is not None and corpus is not None:
        raise SceneSourceError("--gmdag-file and --corpus are exclusive: pick one scene source")
    if gmdag_file is not None:
        if not gmdag_file.is_file():
            raise SceneSourceError(f"scene file {gmdag_file} does not exist")
        if gmdag_file.suffix != ".gmdag":
            raise SceneSourceError(
                f"{gmdag_file} is not a .gmdag file; compile it with navi-environment compile-gmdag"
            )
        return [gmdag_file.resolve()]
    if corpus is not None:
        if not corpus.is_dir():
            raise SceneSourceError(f"corpus folder {corpus} does not exist")
        return corpus_scene_files(corpus)
    from navi_environment.corpus.prepare import ensure_default_corpus

    log.info("auditor.explore.corpus_check", message="locating the default corpus (built on first use)")
    return corpus_scene_files(ensure_default_corpus(env_settings=env_settings, progress=True))


def corpus_scene_files(folder: Path) -> list[Path]:
    """The corpus folder's usable scenes (the one corpus rule of navi-environment), resolved.

    Raises:
        SceneSourceError: no usable scene.
    """
    from navi_environment.corpus.manifest import corpus_scene_files as scenes_of

    try:
        return [path.resolve() for path in scenes_of(folder)]
    except FileNotFoundError as error:
        raise SceneSourceError(str(error)) from error
