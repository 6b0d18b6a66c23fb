"""``--device cuda`` without CUDA: one clear line from every command that takes ``--device``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
import torch
from click.testing import CliRunner

from navi_actor.cli import main
from navi_actor.devices import DeviceUnavailableError, check_device


@pytest.fixture(autouse=True)
def no_cuda(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    yield
    structlog.reset_defaults()


@pytest.mark.parametrize("command", ["train", "evaluate", "compare", "bc-pretrain", "serve", "infer"])
def test_every_device_command_says_no_cuda_in_one_line(command: str, tmp_path: Path) -> None:
    checkpoint = tmp_path / "some.pt"
    checkpoint.write_bytes(b"")
    positional = {"evaluate": [str(checkpoint)], "compare": [str(checkpoint)] * 2}.get(command, [])
    env = {"NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(tmp_path)}
    result = CliRunner().invoke(main, [command, *positional, "--device", "cuda"], env=env)
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.output.strip() == (
        "Error: --device cuda: no CUDA device is available on this machine; use --device cpu"
    )


def test_check_device_accepts_cpu_and_names_a_bad_device() -> None:
    check_device("cpu")
    with pytest.raises(DeviceUnavailableError, match="not a torch device"):
        check_device("toaster")
