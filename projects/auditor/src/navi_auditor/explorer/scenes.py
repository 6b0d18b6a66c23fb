"""Which scenes the explorer flies: one file, a corpus folder, or the default corpus."""

from __future__ import annotations

from pathlib import Path

from navi_environment.backend import corpus_paths
from navi_environment.config import EnvironmentSettings


class SceneSourceError(ValueError):
    """No usable scene: a missing file, a wrong suffix or an empty folder."""


def resolve_scene_files(
    gmdag_file: Path | None, corpus: Path | None, env_settings: EnvironmentSettings
) -> list[Path]:
    """The ``.gmdag`` files to fly, in order.

    Args:
        gmdag_file: one scene file (exclusive with ``corpus``).
        corpus: a folder of ``.gmdag`` files.
        env_settings: for the default corpus folder (``compile.corpus_dir`` under artifacts/).

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
        files = sorted(corpus.glob("*.gmdag"))
        if not files:
            raise SceneSourceError(f"corpus folder {corpus} holds no .gmdag scenes")
        return [path.resolve() for path in files]
    try:
        return corpus_paths(env_settings)
    except FileNotFoundError as error:
        raise SceneSourceError(str(error)) from error
