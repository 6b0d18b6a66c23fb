"""Realtime mode as a real process: ``navi-environment serve --mode realtime --control-hz 20`` keeps
its rate while a scripted slow brain (this test) answers with action chunks after 120 ms.

The environment is a child process; the fake brain is this test, on real sockets. Rates are checked
with a tolerance that holds on a loaded 2-core machine.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from realtime_env import assert_keeps_its_rate_while_the_slow_brain_answers, run_realtime_server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 32^3 procedural scene."""
    from navi_environment.corpus.settings import CompileSettings
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import write_gmdag

    path = tmp_path_factory.mktemp("realtime") / "hall.gmdag"
    write_gmdag(compile_source("procedural:hall:seed=1", CompileSettings(), resolution=32).asset, path)
    return path


def test_realtime_server_keeps_its_rate_while_a_slow_brain_answers(
    scene: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    payload, answered = run_realtime_server(scene, processes)
    assert_keeps_its_rate_while_the_slow_brain_answers(payload, answered)
