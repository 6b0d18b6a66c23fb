"""Settings and ``--help`` stay light: neither imports torch (it alone takes seconds to import).

Why: ``navi-actor --help`` took 3.9 s and ``import navi_actor.config`` 6 s because package
``__init__`` files pulled in the networks; settings groups are now leaf modules and the packages
export lazily. Checked in a fresh interpreter, since this test process has torch loaded already.
"""

from __future__ import annotations

import subprocess
import sys

_CHECK_NO_TORCH = "import sys; assert 'torch' not in sys.modules, 'torch was imported'"


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", f"{code}\n{_CHECK_NO_TORCH}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_importing_the_settings_imports_no_torch() -> None:
    result = _run("import navi_actor.config\nimport navi_actor.service.brain_settings")
    assert result.returncode == 0, result.stderr


def test_help_of_every_command_imports_no_torch() -> None:
    code = (
        "from navi_actor.cli import brain_main, main\n"
        "from navi_actor.launcher.command import main as stack_main\n"
        "for args in [[], *([name] for name in main.commands)]:\n"
        "    try:\n"
        "        main([*args, '--help'])\n"
        "    except SystemExit as done:\n"
        "        assert done.code == 0, args\n"
        "for group in (brain_main, stack_main):\n"
        "    try:\n"
        "        group(['--help'])\n"
        "    except SystemExit as done:\n"
        "        assert done.code == 0\n"
    )
    result = _run(code)
    assert result.returncode == 0, result.stderr
    assert "bc-pretrain" in result.stdout and "Train the policy" in result.stdout
