"""Shared fixtures of the navi-actor tests (each was copied into several test modules before).

The process fixtures (``one_torch_thread``, ``restore_process_state``) are in the repository's root
``conftest.py``, since the cross-package tests use them too. torch is imported inside the fixtures:
collecting a light test module does not pay for it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from navi_actor.models import NaviPolicy, PolicyConfig


@pytest.fixture
def small_config() -> PolicyConfig:
    """A GRU policy on a 16 x 8 sensor with 32-wide embeddings and one ViT layer (fast to train), without
    the visit input (acting would need poses)."""
    from navi_actor.models.config import PolicyConfig

    sizes = {"azimuth": 16, "elevation": 8, "embed_dim": 32, "vit_dim": 32, "vit_layers": 1}
    return PolicyConfig(visit_input=False, temporal_core="gru", **sizes)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def small_policy() -> Callable[..., NaviPolicy]:
    """Builds a small policy: ``small_policy(core="gru", seed=0, **config)``.

    Seeded with ``seed`` just before it is built, in eval mode, on a 32 x 8 sensor with 32-wide
    embeddings and one ViT layer, without the visit input (on by default: acting would need poses);
    ``config`` overrides any ``PolicyConfig`` field (e.g. the sensor, or ``visit_input=True``).
    """
    import torch

    from navi_actor.models import NaviPolicy, PolicyConfig

    def build(core: str = "gru", seed: int = 0, **config: Any) -> NaviPolicy:
        torch.manual_seed(seed)
        sizes = {"azimuth": 32, "elevation": 8, "embed_dim": 32, "vit_dim": 32, "vit_layers": 1}
        return NaviPolicy(
            PolicyConfig(temporal_core=core, **{**sizes, "visit_input": False, **config})
        ).eval()

    return build


@pytest.fixture
def uncached_loggers() -> None:
    """capture_logs only sees loggers that are not cached; an entry point run earlier in this
    process (production logging) may have turned caching on."""
    import structlog

    structlog.configure(cache_logger_on_first_use=False)


@pytest.fixture(scope="session")
def tiny_scene(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small apartment compiled at 32^3 (a few seconds): a real scene for CLI tests of the simulator."""
    from navi_environment.corpus.settings import CompileSettings
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import write_gmdag

    compiled = compile_source("procedural:apartment:seed=3", CompileSettings(), resolution=32)
    path = tmp_path_factory.mktemp("scene") / "apartment.gmdag"
    write_gmdag(compiled.asset, path)
    return path
