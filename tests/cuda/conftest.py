"""Fixtures of the accelerator tests: which device is the "accelerator", and float32 kept exact there.

Every test in this folder compares a CUDA code path with the CPU path or runs a command on CUDA.
``accel_device`` is ``"cuda"`` when torch sees a GPU and skips the test otherwise, so CI (no GPU)
collects and skips them. ``NAVI_TEST_ACCEL_DEVICE`` (test-only) names another device instead, e.g.
``NAVI_TEST_ACCEL_DEVICE=cpu`` to run the same logic on a machine without a GPU: then the
"accelerator" side still takes the CUDA code path where the code picks it by setting (the torch
tracer and the torch step), so the comparisons are not CPU against itself.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

ACCEL_ENV = "NAVI_TEST_ACCEL_DEVICE"


def _accel_device() -> str | None:
    """The device named by ``NAVI_TEST_ACCEL_DEVICE``, else ``cuda`` when available, else None."""
    named = os.environ.get(ACCEL_ENV, "").strip()
    if named:
        return named
    import torch

    return "cuda" if torch.cuda.is_available() else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test of this folder ``gpu`` (``pytest -m gpu`` selects them, ``-m 'not gpu'`` drops)."""
    folder = os.path.dirname(__file__)
    for item in items:
        if str(item.path).startswith(folder + os.sep):
            item.add_marker(pytest.mark.gpu)


@pytest.fixture(scope="session")
def accel_device() -> str:
    """The accelerator's torch device string (``cuda``), or skip: no GPU and no override.

    Session-scoped, and so set up before any module fixture of a test that asks for it: a test that
    is skipped builds no scene or policy first.
    """
    device = _accel_device()
    if device is None:
        pytest.skip(f"no CUDA device (set {ACCEL_ENV}=cpu to run the logic on the CPU)")
    return device


@pytest.fixture
def exact_float32() -> Iterator[None]:
    """TF32 off for cuBLAS and cuDNN during the test, restored after.

    Why: comparisons against the CPU use float32 tolerances; TF32 (on by default for cuDNN
    convolutions) rounds inputs to 10 mantissa bits and would need tolerances that hide real bugs.
    """
    import torch

    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn


@pytest.fixture(scope="session")
def tiny_scene(accel_device: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A procedural apartment compiled at 32^3 into a ``.gmdag`` file (a few seconds, once)."""
    from navi_environment.corpus.settings import CompileSettings
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import write_gmdag

    compiled = compile_source("procedural:apartment:seed=3", CompileSettings(), resolution=32)
    path = tmp_path_factory.mktemp("scene") / "apartment.gmdag"
    write_gmdag(compiled.asset, path)
    return path
