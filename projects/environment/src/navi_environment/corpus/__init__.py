"""Scene corpus: compile sources, qualify spawns, write and read ``manifest.json``.

Public API (imported lazily: ``navi_environment.config`` imports this package's settings, and the
corpus builder imports the runtime's spawn qualification, which imports the config):

* :func:`ensure_default_corpus` -> Path of the default corpus, built when missing.
* :func:`load_manifest` -> validated :class:`~navi_environment.corpus.manifest.CorpusManifest`.
* :func:`prepare_corpus` -> build a corpus folder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from navi_common.lazy_exports import lazy_getattr

if TYPE_CHECKING:
    from navi_environment.corpus.manifest import CorpusManifest, load_manifest
    from navi_environment.corpus.prepare import ensure_default_corpus, prepare_corpus

__all__ = ["CorpusManifest", "ensure_default_corpus", "load_manifest", "prepare_corpus"]

_LAZY = {
    "CorpusManifest": "navi_environment.corpus.manifest",
    "load_manifest": "navi_environment.corpus.manifest",
    "ensure_default_corpus": "navi_environment.corpus.prepare",
    "prepare_corpus": "navi_environment.corpus.prepare",
}


__getattr__ = lazy_getattr(__name__, _LAZY)
