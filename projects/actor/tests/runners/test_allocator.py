"""``keep_freed_memory``: a freed block comes back without page faults, and every trainer sets it.

Why it matters: the PPO update frees and reallocates the same few-megabyte buffers every minibatch;
with glibc's defaults each reuse of an unmapped block pays a page fault per 4 KiB page on first touch.
"""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest
from point_runner import point_settings

from navi_actor.runners import allocator, learner_state
from navi_actor.runners.env_factory import build_environment
from navi_actor.runners.on_policy_runner import OnPolicyRunner

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"

#: In a fresh process: optionally keep freed memory, then malloc + touch + free 16 MiB twice and print
#: the minor page faults of the second round (glibc's default serves the first block with mmap and
#: unmaps it on free, so the second comes from a heap grown anew: about 4,096 faults).
SECOND_ROUND_FAULTS = """
import ctypes, resource, sys
from navi_actor.runners.allocator import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
size = 16 * 2**20
def round_trip():
    block = libc.malloc(size)
    ctypes.memset(block, 1, size)
    libc.free(block)
round_trip()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
round_trip()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def second_round_faults(mode: str) -> int:
    command = [sys.executable, "-c", SECOND_ROUND_FAULTS, mode]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    return int(result.stdout.strip())


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc thresholds; other C libraries have none")
def test_a_freed_block_comes_back_without_page_faults() -> None:
    pages = 16 * 2**20 // 4096
    assert second_round_faults("default") > pages // 2  # the control: the page faults are real
    assert second_round_faults("keep") < pages // 16


@pytest.mark.parametrize("keep", [True, False])
def test_every_trainer_build_keeps_freed_memory_unless_told_not_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep: bool
) -> None:
    calls: list[bool] = []
    monkeypatch.setattr(learner_state, "keep_freed_memory", lambda: calls.append(True) or True)
    config = point_settings(train={"keep_freed_memory": keep})
    built = build_environment(config.environment, config.rollout.num_actors, config.train.device)
    OnPolicyRunner(config, built, artifacts_dir=tmp_path)
    assert calls == ([True] if keep else [])


@pytest.mark.parametrize("platform_name", ["darwin", "win32"])
def test_off_linux_nothing_is_set_and_it_says_so(monkeypatch: pytest.MonkeyPatch, platform_name: str) -> None:
    """Where there is no glibc the call changes nothing and reports False instead of failing."""
    loaded: list[str] = []
    monkeypatch.setattr(allocator.sys, "platform", platform_name)
    monkeypatch.setattr(allocator.ctypes, "CDLL", loaded.append)
    assert allocator.keep_freed_memory() is False and loaded == []


def test_a_linux_without_glibc_reports_false(monkeypatch: pytest.MonkeyPatch) -> None:
    """musl and other C libraries have no ``libc.so.6``: False, no exception."""

    def missing(name: str) -> None:
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(allocator.sys, "platform", "linux")
    monkeypatch.setattr(allocator.ctypes, "CDLL", missing)
    assert allocator.keep_freed_memory() is False
